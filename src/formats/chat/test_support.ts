/**
 * Helpers for the chat codec tests and the openai-chat conformance replay (not used at run
 * time): feed SSE text to a decoder in differently cut pieces, write events as the golden
 * files' JSON lines, and compare a pass-through stream with the upstream's byte for byte but
 * the chunk `id` and `model` values.
 */
import assert from "node:assert/strict";
import type { Event } from "../../events/event.ts";
import type { StreamDecoder } from "../codec.ts";
import { type SseEvent, SseSplitter } from "../sse.ts";

/** How the upstream text is cut before it reaches the splitter. */
export type Cut = "whole" | "lines" | "bytes";

export const CUTS: readonly Cut[] = ["whole", "lines", "bytes"];

/** The text cut into pieces; "bytes" cuts the UTF-8 bytes, decoded as a network reader would. */
export function cutText(text: string, cut: Cut): string[] {
  switch (cut) {
    case "whole":
      return [text];
    case "lines":
      return text.split(/(?<=\n)/);
    case "bytes": {
      const bytes = new TextEncoder().encode(text);
      const dec = new TextDecoder();
      const out: string[] = [];
      for (let i = 0; i < bytes.length; i++) {
        const s = dec.decode(bytes.subarray(i, i + 1), { stream: true });
        if (s !== "") out.push(s);
      }
      const rest = dec.decode();
      if (rest !== "") out.push(rest);
      return out;
    }
  }
}

/** Splits pieces into SSE events. */
export function sseEvents(pieces: string[]): SseEvent[] {
  const s = new SseSplitter();
  const out: SseEvent[] = [];
  for (const p of pieces) s.push(p, (e) => out.push(e));
  s.end((e) => out.push(e));
  return out;
}

/** Runs a whole SSE text through a decoder, cut as asked, and returns every event. */
export function decodeStream(decoder: StreamDecoder, text: string, cut: Cut): Event[] {
  const events: Event[] = [];
  const emit = (e: Event) => events.push(e);
  for (const ev of sseEvents(cutText(text, cut))) decoder.event(ev, emit);
  decoder.end(emit);
  return events;
}

/** An event as a golden line: errors as `{type, status, message}`, undefined fields dropped. */
export function eventJson(e: Event): unknown {
  if (e.type === "error") {
    return { type: "error", status: e.error.status, message: e.error.message };
  }
  return JSON.parse(JSON.stringify(e));
}

export function parseGolden(text: string): unknown[] {
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
}

export function formatGolden(events: Event[]): string {
  return events.map((e) => JSON.stringify(eventJson(e))).join("\n") + "\n";
}

// ---- pass-through comparison ---------------------------------------------------------------

/** The fields the pass-through puts the generation's own values in (spec: id, model). */
const HEAD_FIELDS = ["id", "model"] as const;

/**
 * Where the value of each top-level key of the first JSON object in `text` lies, as
 * [start, end) offsets into `text`. A scanner of its own (not the gateway's edit), so the
 * tests do not take the code under test's word for what "top level" is.
 */
export function topLevelSpans(text: string): Map<string, [number, number]> {
  const spans = new Map<string, [number, number]>();
  let depth = 0;
  let key: string | undefined;
  let wantKey = false;
  let pending = false;
  let start = -1;
  let end = -1;
  const close = () => {
    if (key !== undefined) spans.set(key, [start, end]);
    key = undefined;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    const blank = ch === " " || ch === "\t" || ch === "\n" || ch === "\r";
    if (depth === 1 && pending && !blank) {
      start = i;
      pending = false;
    }
    if (ch === '"') {
      const from = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      if (depth === 1) {
        if (wantKey) {
          key = JSON.parse(text.slice(from, i + 1)) as string;
          wantKey = false;
        } else end = i + 1;
      }
    } else if (ch === "{" || ch === "[") {
      if (depth === 0 && ch === "{") wantKey = true;
      depth++;
    } else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 1) end = i + 1;
      if (depth === 0) {
        close();
        break;
      }
    } else if (depth === 1) {
      if (ch === ":") pending = true;
      else if (ch === ",") {
        close();
        wantKey = true;
      } else if (!blank) end = i + 1;
    }
  }
  return spans;
}

/** An SSE frame with its chunk's top-level `id` and `model` values masked, all else as is. */
export function maskHead(raw: string): string {
  const spans = topLevelSpans(raw);
  let out = raw;
  const edits = HEAD_FIELDS.flatMap((f) => {
    const s = spans.get(f);
    return s ? [{ f, s }] : [];
  }).sort((a, b) => b.s[0] - a.s[0]);
  for (const { f, s } of edits) out = out.slice(0, s[0]) + `"<${f}>"` + out.slice(s[1]);
  return out;
}

/** Every frame of an SSE text with its head masked (`[DONE]` and non-JSON frames as is). */
export function maskHeads(text: string): string {
  return sseEvents([text]).map((e) => maskHead(e.raw)).join("");
}

/**
 * A frame the pass-through forwarded against the upstream's: the same bytes once the
 * top-level `id` and `model` values are masked, and those values the generation's (only where
 * the upstream chunk had the field: a missing one stays missing).
 */
export function assertForwarded(
  out: SseEvent,
  upstream: SseEvent,
  ctx: { id: string; model: string },
): void {
  assert.equal(maskHead(out.raw), maskHead(upstream.raw));
  if (upstream.data === "[DONE]") return assert.equal(out.raw, upstream.raw);
  assertHead(out, ctx);
}

/** A chunk's top-level `id` and `model`, where present, are the generation's. */
export function assertHead(ev: SseEvent, ctx: { id: string; model: string }): void {
  const chunk = JSON.parse(ev.data) as Record<string, unknown>;
  for (const f of HEAD_FIELDS) {
    if (f in chunk) assert.equal(chunk[f], ctx[f], `${f} of ${ev.raw}`);
  }
}

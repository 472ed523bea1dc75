/**
 * Helpers for the chat codec tests and the openai-chat conformance replay (not used at run
 * time): feed SSE text to a decoder in differently cut pieces, and write events as the golden
 * files' JSON lines.
 */
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

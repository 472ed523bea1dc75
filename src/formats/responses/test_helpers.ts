/**
 * Helpers for the responses tests (unit and conformance): run a decoder over SSE text cut in
 * different ways, and write events in the golden files' JSON form.
 */
import type { CostReport, Event } from "../../events/event.ts";
import type { Usage } from "../../events/usage.ts";
import type { StreamDecoder } from "../codec.ts";
import { type SseEvent, SseSplitter } from "../sse.ts";

/** How the bytes of a recording reach the decoder. */
export type Cut = "whole" | "lines" | "bytes";

export const CUTS: Cut[] = ["whole", "lines", "bytes"];

/** Splits bytes the way a network might: all at once, per line, or one byte at a time. */
export function chunks(bytes: Uint8Array, cut: Cut): Uint8Array[] {
  if (cut === "whole") return [bytes];
  if (cut === "bytes") return Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
  const out: Uint8Array[] = [];
  let from = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 10) {
      out.push(bytes.subarray(from, i + 1));
      from = i + 1;
    }
  }
  if (from < bytes.length) out.push(bytes.subarray(from));
  return out;
}

/** SSE events of a byte stream, decoded by hand as the stream stage does. */
export function sseEvents(bytes: Uint8Array, cut: Cut): SseEvent[] {
  const text = new TextDecoder();
  const splitter = new SseSplitter();
  const out: SseEvent[] = [];
  for (const c of chunks(bytes, cut)) {
    splitter.push(text.decode(c, { stream: true }), (e) => out.push(e));
  }
  splitter.push(text.decode(), (e) => out.push(e));
  splitter.end((e) => out.push(e));
  return out;
}

/** All events a decoder draws from a stream. */
export function decodeStream(decoder: StreamDecoder, bytes: Uint8Array, cut: Cut): Event[] {
  const events: Event[] = [];
  const emit = (e: Event) => events.push(e);
  for (const ev of sseEvents(bytes, cut)) decoder.event(ev, emit);
  decoder.end(emit);
  return events;
}

/** An event as it is written in a golden file: errors as `{status, message}`. */
export function goldenForm(e: Event): unknown {
  if (e.type === "error") {
    return { type: "error", error: { status: e.error.status, message: e.error.message } };
  }
  return e;
}

export function toGolden(events: Event[]): unknown[] {
  return events.map(goldenForm);
}

export function readGolden(path: string | URL): unknown[] {
  return Deno.readTextFileSync(path).split("\n").filter((l) => l.trim() !== "").map((l) =>
    JSON.parse(l)
  );
}

export function writeGolden(path: string | URL, events: Event[]): void {
  Deno.writeTextFileSync(path, toGolden(events).map((e) => JSON.stringify(e)).join("\n") + "\n");
}

/** A cost report as the meter would give it. */
export function fakeCost(usage: Usage, cost = 0.012345): CostReport {
  return {
    cost,
    details: { upstream_inference_input_cost: 0.001, upstream_inference_output_cost: 0.009 },
    usage,
  };
}

/** The parsed frames of an SSE text: `[event name, data object]`. */
export function frames(text: string): [string | undefined, Record<string, unknown>][] {
  const out: [string | undefined, Record<string, unknown>][] = [];
  new SseSplitter().push(text, (e) => out.push([e.event, JSON.parse(e.data)]));
  return out;
}

/**
 * Throws unless `events` keep the ordering guarantees of `events/event.ts`: `response_start`
 * first and once, every block started before its deltas and ended once, text and reasoning
 * blocks not interleaved, `finish` once after all blocks ended, nothing but `usage` after
 * `error`, and exactly one terminal (`finish` or `error`).
 */
export function assertWellFormed(events: Event[]): void {
  const fail = (i: number, why: string) => {
    throw new Error(`event ${i} (${JSON.stringify(events[i])}): ${why}`);
  };
  let block: "text" | "reasoning" | undefined;
  const tools = new Map<number, "open" | "ended">();
  let finished = false;
  let errored = false;
  events.forEach((e, i) => {
    if (errored && e.type !== "usage") fail(i, "after error");
    if (e.type === "response_start" && i !== 0) fail(i, "response_start not first");
    if (finished && e.type !== "usage") fail(i, "after finish");
    switch (e.type) {
      case "text_start":
      case "reasoning_start":
        if (block) fail(i, `${block} block still open`);
        block = e.type === "text_start" ? "text" : "reasoning";
        break;
      case "text_delta":
      case "text_end":
        if (block !== "text") fail(i, "no open text block");
        if (e.type === "text_end") block = undefined;
        break;
      case "reasoning_delta":
      case "reasoning_signature":
      case "reasoning_redacted":
      case "reasoning_end":
        if (block !== "reasoning") fail(i, "no open reasoning block");
        if (e.type === "reasoning_end") block = undefined;
        break;
      case "tool_call_start":
        if (tools.has(e.index)) fail(i, "tool index reused");
        tools.set(e.index, "open");
        break;
      case "tool_call_delta":
      case "tool_call_end":
        if (tools.get(e.index) !== "open") fail(i, "tool call not open");
        if (e.type === "tool_call_end") tools.set(e.index, "ended");
        break;
      case "finish":
        if (block || [...tools.values()].includes("open")) fail(i, "finish with a block open");
        finished = true;
        break;
      case "error":
        errored = true;
        break;
      default:
        break;
    }
  });
  if (finished === errored) throw new Error("expected exactly one of finish or error");
}

/**
 * Helpers shared by the messages tests and the Anthropic replay suite: feed SSE text to a
 * decoder whole, line by line or byte by byte, and put events in a JSON-comparable form.
 */
import type { CostReport, Event } from "../../events/event.ts";
import type { StreamDecoder } from "../codec.ts";
import { type SseEvent, SseSplitter } from "../sse.ts";

export type Chunking = "whole" | "lines" | "bytes";

/** Cuts a text the way a network might: in one piece, at every line end, or at every byte. */
export function chunksOf(text: string, how: Chunking): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  if (how === "whole") return [bytes];
  if (how === "bytes") return Array.from(bytes, (b) => Uint8Array.of(b));
  return text.split(/(?<=\n)/).map((line) => new TextEncoder().encode(line));
}

/** Splits SSE bytes into events, decoding UTF-8 across chunk boundaries. */
export function splitSse(chunks: Uint8Array[]): SseEvent[] {
  const decoder = new TextDecoder();
  const splitter = new SseSplitter();
  const out: SseEvent[] = [];
  for (const c of chunks) splitter.push(decoder.decode(c, { stream: true }), (e) => out.push(e));
  splitter.push(decoder.decode(), (e) => out.push(e));
  splitter.end((e) => out.push(e));
  return out;
}

/** Runs a whole SSE text through a fresh decoder, chunked as asked. */
export function decodeSse(decoder: StreamDecoder, text: string, how: Chunking = "whole"): Event[] {
  const events: Event[] = [];
  const emit = (e: Event) => events.push(e);
  for (const ev of splitSse(chunksOf(text, how))) decoder.event(ev, emit);
  decoder.end(emit);
  return events;
}

/** Events as plain JSON: an error becomes its status and message. */
export function normalizeEvents(events: readonly Event[]): unknown[] {
  return events.map((e) =>
    e.type === "error" ? { type: "error", status: e.error.status, message: e.error.message } : e
  );
}

/** Parses a `.events.jsonl` golden file. */
export function parseJsonl(text: string): unknown[] {
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
}

export function toJsonl(values: readonly unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join("\n") + "\n";
}

/** Concatenated text, tool JSON by index and signatures of an event list. */
export function summarize(events: readonly Event[]) {
  let text = "";
  let reasoning = "";
  const signatures: string[] = [];
  const tools = new Map<number, { id: string; name: string; json: string }>();
  for (const e of events) {
    if (e.type === "text_delta") text += e.delta;
    else if (e.type === "reasoning_delta") reasoning += e.delta;
    else if (e.type === "reasoning_signature") signatures.push(e.signature);
    else if (e.type === "tool_call_start") tools.set(e.index, { id: e.id, name: e.name, json: "" });
    else if (e.type === "tool_call_delta") tools.get(e.index)!.json += e.json;
  }
  return { text, reasoning, signatures, tools: [...tools.values()] };
}

/** A cost report for encoder tests. */
export function costOf(usage: CostReport["usage"], cost = 0.012345678): CostReport {
  return {
    cost,
    details: { upstream_inference_input_cost: cost / 3, upstream_inference_output_cost: cost / 2 },
    usage,
  };
}

export const FIXTURES = new URL("../../../tests/fixtures/anthropic-messages/", import.meta.url);

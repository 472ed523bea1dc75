import assert from "node:assert/strict";
import type { Event } from "../events/event.ts";
import { StopScanner } from "./stop_sequences.ts";

/** The events a scanner passes on for `deltas` of one text block, then a finish and usage. */
function scan(stops: string[], deltas: string[]): Event[] {
  const out: Event[] = [];
  const s = new StopScanner(stops);
  const emit = s.wrap((e) => out.push(e));
  emit({ type: "text_start" });
  for (const d of deltas) emit({ type: "text_delta", delta: d });
  emit({ type: "text_end" });
  emit({ type: "finish", reason: "stop" });
  emit({ type: "usage", usage: { output: 9 } });
  s.end((e) => out.push(e));
  return out;
}

const text = (events: Event[]) =>
  events.map((e) => e.type === "text_delta" ? e.delta : "").join("");

Deno.test("stop sequences: a match split across deltas ends the text before it, finished as stop_sequence", () => {
  const out = scan(["END"], ["one tw", "o E", "N", "D three"]);
  assert.equal(text(out), "one two ");
  assert.deepEqual(out.slice(-3), [
    { type: "text_end" },
    { type: "usage", usage: { output: 9 } },
    { type: "finish", reason: "stop_sequence", stopSequence: "END" },
  ]);
  assert.equal(out.filter((e) => e.type === "text_end").length, 1);
  assert.equal(out.filter((e) => e.type === "finish").length, 1);
});

Deno.test("stop sequences: text that only began like one is passed on, and nothing changes without a match", () => {
  const out = scan(["END"], ["the E", "Nx EN"]);
  assert.equal(text(out), "the ENx EN");
  assert.deepEqual(out.at(-2), { type: "finish", reason: "stop" });
  // Held back while it could be a stop, released as soon as it cannot.
  const held: string[] = [];
  const s = new StopScanner(["</answer>"]);
  const emit = s.wrap((e) => e.type === "text_delta" && held.push(e.delta));
  emit({ type: "text_delta", delta: "a </ans" });
  assert.deepEqual(held, ["a "]);
  emit({ type: "text_delta", delta: "wer" });
  assert.deepEqual(held, ["a "]);
  emit({ type: "text_delta", delta: "s!" });
  assert.deepEqual(held, ["a ", "</answers!"]);
});

Deno.test("stop sequences: the earliest of several wins; empty ones are ignored", () => {
  const out = scan(["", "world", "lo"], ["hello world"]);
  assert.equal(text(out), "hel");
  assert.deepEqual(out.at(-1), { type: "finish", reason: "stop_sequence", stopSequence: "lo" });
});

Deno.test("stop sequences: past the stop only usage passes (tool calls, errors dropped)", () => {
  const out: Event[] = [];
  const s = new StopScanner(["X"]);
  const emit = s.wrap((e) => out.push(e));
  emit({ type: "text_start" });
  emit({ type: "text_delta", delta: "aXb" });
  emit({ type: "text_end" });
  emit({ type: "tool_call_start", index: 0, id: "c", name: "f" });
  emit({ type: "usage", usage: { output: 3 } });
  s.end((e) => out.push(e));
  assert.deepEqual(out.map((e) => e.type), [
    "text_start",
    "text_delta",
    "text_end",
    "usage",
    "finish",
  ]);
});

Deno.test("stop sequences: a citation never reaches past the text kept before the stop", () => {
  // A responses upstream's annotation comes mid-text, while the scanner holds "ba" (it may
  // begin "bar!"); the next delta completes the stop: the text kept is "See foo ", 8 long.
  const out: Event[] = [];
  const s = new StopScanner(["bar!"]);
  const emit = s.wrap((e) => out.push(e));
  emit({ type: "text_start" });
  emit({ type: "text_delta", delta: "See foo ba" });
  emit({ type: "citation", url: "https://a.example", start: 0, end: 3 });
  emit({ type: "citation", url: "https://b.example", start: 4, end: 10 });
  emit({ type: "text_delta", delta: "r! more" });
  emit({ type: "text_end" });
  s.end((e) => out.push(e));
  assert.equal(text(out), "See foo ");
  const cites = out.filter((e) => e.type === "citation");
  assert.deepEqual(cites.map((c) => c.url), ["https://a.example"]);
  // Each before the block's end, as event.ts has it.
  const at = (t: string) => out.findIndex((e) => e.type === t);
  assert.ok(at("citation") < at("text_end"));
});

Deno.test("stop sequences: without a match every citation passes, after the text it cites", () => {
  const out: Event[] = [];
  const s = new StopScanner(["bar!"]);
  const emit = s.wrap((e) => out.push(e));
  emit({ type: "text_start" });
  emit({ type: "text_delta", delta: "See foo ba" });
  emit({ type: "citation", url: "https://b.example", start: 4, end: 10 });
  emit({ type: "text_end" });
  assert.deepEqual(out.map((e) => e.type), [
    "text_start",
    "text_delta",
    "text_delta",
    "citation",
    "text_end",
  ]);
  assert.equal(text(out), "See foo ba");
});

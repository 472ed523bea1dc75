import assert from "node:assert/strict";
import { type SseEvent, SseSplitter } from "./sse.ts";

function splitAll(chunks: string[]): SseEvent[] {
  const s = new SseSplitter();
  const out: SseEvent[] = [];
  for (const c of chunks) s.push(c, (e) => out.push(e));
  s.end((e) => out.push(e));
  return out;
}

const STREAM =
  'event: a\ndata: {"x":1}\n\n: comment\n\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';

Deno.test("splitter yields the same events whole, line by line and byte by byte", () => {
  const whole = splitAll([STREAM]);
  assert.deepEqual(whole.map((e) => [e.event, e.data]), [
    ["a", '{"x":1}'],
    [undefined, "line1\nline2"],
    [undefined, "[DONE]"],
  ]);
  assert.deepEqual(splitAll(STREAM.split(/(?<=\n)/)), whole);
  assert.deepEqual(splitAll([...STREAM]), whole);
});

Deno.test("splitter keeps each event's raw text so pass-through is byte-exact", () => {
  const events = splitAll([STREAM]);
  assert.equal(events[0].raw, 'event: a\ndata: {"x":1}\n\n');
  assert.equal(events.at(-1)!.raw, "data: [DONE]\n\n");
});

Deno.test("splitter handles CRLF line ends and a last event without blank line", () => {
  const events = splitAll(["data: 1\r\n\r\ndata: 2"]);
  assert.deepEqual(events.map((e) => e.data), ["1", "2"]);
});

Deno.test("splitter takes a multi-megabyte event in small reads in linear time", () => {
  // An image model's base64 in one event (OpenRouter's chat images, a responses
  // image_generation_call), as TCP delivers it: each read was searched with all held before it.
  const data = JSON.stringify({ result: "A".repeat(3 * 1024 * 1024) });
  const stream = `event: big\ndata: ${data}\n\ndata: [DONE]\n\n`;
  const s = new SseSplitter();
  const out: SseEvent[] = [];
  const started = performance.now();
  for (let i = 0; i < stream.length; i += 1400) {
    s.push(stream.slice(i, i + 1400), (e) => out.push(e));
    assert.ok(s.pending <= stream.length);
  }
  s.end((e) => out.push(e));
  const ms = performance.now() - started;
  assert.deepEqual(out.map((e) => [e.event, e.data.length]), [["big", data.length], [
    undefined,
    6,
  ]]);
  // Quadratic, it took ~28 s; linear, a fraction of one.
  assert.ok(ms < 5000, `${ms.toFixed(0)} ms for a 3 MiB event`);
});

Deno.test("splitter counts text held without a line break as pending, and ends with it", () => {
  const s = new SseSplitter();
  const out: SseEvent[] = [];
  s.push("data: ab", (e) => out.push(e));
  s.push("cd", (e) => out.push(e));
  assert.equal(s.pending, 10);
  s.end((e) => out.push(e));
  assert.deepEqual(out.map((e) => e.data), ["abcd"]);
});

Deno.test("splitter: a last event cut short is no event; a whole one without its blank line is", () => {
  for (
    const [tail, expected] of [
      ["data: [DO", []],
      ["data: [DONE]", ["[DONE]"]],
      ['event: message_stop\ndata: {"type":"message_st', []],
      ['event: message_stop\ndata: {"type":"message_stop"}', ['{"type":"message_stop"}']],
      ["data: plain text", ["plain text"]],
    ] as const
  ) {
    const s = new SseSplitter();
    const out: SseEvent[] = [];
    s.push('data: {"a":1}\n\n' + tail, (e) => out.push(e));
    s.end((e) => out.push(e));
    assert.deepEqual(out.map((e) => e.data), ['{"a":1}', ...expected], tail);
  }
});

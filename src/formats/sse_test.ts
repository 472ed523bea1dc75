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

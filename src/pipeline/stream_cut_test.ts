/**
 * A stream whose connection drops inside its last marker, after the whole answer and its
 * usage, is a completed answer: the marker cut short is no event (sse.ts), not a malformed one.
 */
import assert from "node:assert/strict";
import { CLIENTS, runStage } from "./stream_fuzz_run.ts";

const enc = new TextEncoder();

const CHAT = [
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\n',
  "data: [DONE]\n\n",
].join("");

const MESSAGES = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join("");

for (
  const [protocol, stream, marker] of [
    ["openai-chat", CHAT, "data: [DONE]"],
    ["anthropic-messages", MESSAGES, 'data: {"type":"message_stop"}'],
  ] as const
) {
  Deno.test(`stream cut inside its last marker (${protocol}): completed, and billed as the whole one`, () => {
    const at = stream.lastIndexOf(marker) + marker.length - 3;
    for (const client of CLIENTS) {
      const whole = runStage(client, protocol, [enc.encode(stream)]);
      const cut = runStage(client, protocol, [enc.encode(stream.slice(0, at))]);
      assert.equal(whole.failed, false, `${client}: whole`);
      assert.equal(cut.thrown, undefined);
      assert.equal(cut.failed, false, `${client}: cut inside the marker`);
      assert.equal(cut.cost, whole.cost);
    }
  });
}

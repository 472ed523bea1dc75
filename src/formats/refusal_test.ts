/**
 * A refusal crosses formats as one: the chat format's `refusal` (message field and delta) and
 * the responses format's `refusal` content part are where their clients (and SDKs: the
 * `refusal` of a parsed completion, `response.refusal.delta`) look for it, not the answer's
 * text. The messages format has no place for one: there it is text.
 */
import assert from "node:assert/strict";
import type { Event } from "../events/event.ts";
import type { EncodeContext } from "./codec.ts";
import { createChatDecoder, decodeChatBody } from "./chat/decode.ts";
import { createChatEncoder, encodeChatBody } from "./chat/encode.ts";
import { createResponsesDecoder, decodeResponsesBody } from "./responses/decode.ts";
import { createResponsesEncoder, encodeResponsesBody } from "./responses/encode.ts";
import { createMessagesEncoder } from "./messages/encode.ts";
import { fakeCost, frames } from "./responses/test_helpers.ts";
import { SseSplitter } from "./sse.ts";

const ctx: EncodeContext = { id: "gen_r1", model: "openai/gpt-4o", created: 1767225600 };
const cost = fakeCost({ input: 20, output: 8 });
const REFUSAL = "I can't help with that.";

function run(decoder: ReturnType<typeof createChatDecoder>, sse: string): Event[] {
  const events: Event[] = [];
  const emit = (e: Event) => events.push(e);
  new SseSplitter().push(sse, (ev) => decoder.event(ev, emit));
  decoder.end(emit);
  return events;
}

const chatSse = [
  { role: "assistant", content: null, refusal: "" },
  { refusal: "I can't " },
  { refusal: "help with that." },
].map((delta) =>
  `data: ${
    JSON.stringify({ id: "c1", model: "m", choices: [{ index: 0, delta, finish_reason: null }] })
  }\n\n`
).join("") +
  `data: ${
    JSON.stringify({
      id: "c1",
      model: "m",
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
    })
  }\n\n` +
  "data: [DONE]\n\n";
const chatBody = {
  id: "c1",
  model: "m",
  choices: [{
    index: 0,
    message: { role: "assistant", content: null, refusal: REFUSAL },
    finish_reason: "stop",
  }],
};

const part = { type: "refusal", refusal: REFUSAL };
const message = { id: "msg_1", type: "message", role: "assistant", content: [part] };
const responsesSse = [
  { type: "response.created", response: { id: "r1", model: "m" } },
  { type: "response.output_item.added", output_index: 0, item: { ...message, content: [] } },
  {
    type: "response.content_part.added",
    output_index: 0,
    content_index: 0,
    part: { type: "refusal", refusal: "" },
  },
  { type: "response.refusal.delta", output_index: 0, content_index: 0, delta: "I can't " },
  { type: "response.refusal.delta", output_index: 0, content_index: 0, delta: "help with that." },
  { type: "response.refusal.done", output_index: 0, content_index: 0, refusal: REFUSAL },
  { type: "response.content_part.done", output_index: 0, content_index: 0, part },
  { type: "response.output_item.done", output_index: 0, item: message },
  { type: "response.completed", response: { status: "completed", output: [message] } },
].map((d) => `event: ${d.type}\ndata: ${JSON.stringify(d)}\n\n`).join("");
const responsesBody = { id: "r1", model: "m", status: "completed", output: [message] };

function fromChat(): Event[][] {
  const body: Event[] = [];
  decodeChatBody(chatBody, (e) => body.push(e));
  return [run(createChatDecoder(), chatSse), body];
}

function fromResponses(): Event[][] {
  const body: Event[] = [];
  decodeResponsesBody(responsesBody, (e) => body.push(e));
  return [run(createResponsesDecoder(), responsesSse), body];
}

Deno.test("refusal: a chat upstream's refusal reaches a responses client as a refusal part", () => {
  for (const events of fromChat()) {
    const enc = createResponsesEncoder(ctx);
    let out = "";
    for (const e of events) out += enc.event(e);
    out += enc.event({ type: "cost", cost });
    const fs = frames(out);
    const deltas = fs.filter(([n]) => n === "response.refusal.delta").map(([, d]) => d.delta);
    assert.equal(deltas.join(""), REFUSAL);
    assert.equal(fs.filter(([n]) => n === "response.output_text.delta").length, 0);
    const done = fs.find(([n]) => n === "response.refusal.done");
    assert.equal(done?.[1].refusal, REFUSAL);
    const final = fs.at(-1)![1].response as { output: { content: unknown[] }[] };
    assert.deepEqual(final.output[0].content, [part]);
    const whole = encodeResponsesBody(events, cost, ctx) as { output: { content: unknown[] }[] };
    assert.deepEqual(whole.output[0].content, [part]);
  }
});

Deno.test("refusal: a responses upstream's refusal reaches a chat client in `refusal`, not `content`", () => {
  for (const events of fromResponses()) {
    const enc = createChatEncoder(ctx);
    let out = "";
    for (const e of events) out += enc.event(e);
    out += enc.event({ type: "cost", cost });
    const deltas = out.split("\n").filter((l) => l.startsWith("data: {")).map((l) =>
      JSON.parse(l.slice(6)).choices?.[0]?.delta ?? {}
    );
    assert.equal(deltas.map((d) => d.refusal ?? "").join(""), REFUSAL);
    assert.equal(deltas.map((d) => d.content ?? "").join(""), "");
    const whole = encodeChatBody(events, cost, ctx) as {
      choices: { message: { content: unknown; refusal: unknown } }[];
    };
    assert.equal(whole.choices[0].message.refusal, REFUSAL);
    assert.equal(whole.choices[0].message.content, null);
  }
});

Deno.test("refusal: a messages client reads a refusal as text", () => {
  for (const events of [...fromChat(), ...fromResponses()]) {
    const enc = createMessagesEncoder(ctx);
    let out = "";
    for (const e of events) out += enc.event(e);
    out += enc.event({ type: "cost", cost });
    const text = frames(out).flatMap(([, d]) => {
      const delta = d.delta as { type?: string; text?: string } | undefined;
      return delta?.type === "text_delta" ? [delta.text] : [];
    }).join("");
    assert.equal(text, REFUSAL);
  }
});

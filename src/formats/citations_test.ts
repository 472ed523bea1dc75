/**
 * Web citations cross formats: Anthropic's `web_search_result_location` citations (on the text
 * block they cite), chat's and responses' `url_citation` annotations (a span of the text) reach
 * chat and responses clients as `url_citation` annotations over the same span of their text.
 * The messages format's web citations carry an `encrypted_index` only Anthropic makes, so a
 * messages client gets them through pass-through alone.
 */
import assert from "node:assert/strict";
import type { Event } from "../events/event.ts";
import type { BodyDecoder, EncodeContext, StreamDecoder } from "./codec.ts";
import { createChatDecoder, decodeChatBody } from "./chat/decode.ts";
import { createChatEncoder, encodeChatBody } from "./chat/encode.ts";
import { createResponsesDecoder, decodeResponsesBody } from "./responses/decode.ts";
import { createResponsesEncoder, encodeResponsesBody } from "./responses/encode.ts";
import { createMessagesDecoder, decodeMessagesBody } from "./messages/decode.ts";
import { createMessagesEncoder } from "./messages/encode.ts";
import { assertWellFormed, fakeCost, frames } from "./responses/test_helpers.ts";
import { SseSplitter } from "./sse.ts";

const ctx: EncodeContext = { id: "gen_c1", model: "openai/gpt-4o", created: 1767225600 };
const cost = fakeCost({ input: 20, output: 8 });
const URL_ = "https://deno.com/blog/v2.0";
const TITLE = "Announcing Deno 2";
const TEXT = "Per the blog, Deno 2 came out in October 2024. Yes.";
const CITED = "Deno 2 came out in October 2024";
const AT = TEXT.indexOf(CITED);

/** What a client must see: the text and each citation's URL, title and the text it covers. */
const EXPECTED = { text: TEXT, cites: [{ url: URL_, title: TITLE, span: CITED }] };

type Obj = Record<string, unknown>;
const sseOf = (events: Obj[], named: boolean) =>
  events.map((d) => `${named ? `event: ${d.type}\n` : ""}data: ${JSON.stringify(d)}\n\n`).join("");

const webLocation = {
  type: "web_search_result_location",
  url: URL_,
  title: TITLE,
  cited_text: "Deno 2 was released in October 2024.",
  encrypted_index: "Eo8BCioIAhgBIiQ",
};
const anthropicStream = sseOf([
  { type: "message_start", message: { id: "m1", model: "c", usage: { input_tokens: 20 } } },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: TEXT.slice(0, AT) } },
  { type: "content_block_stop", index: 0 },
  {
    type: "content_block_start",
    index: 1,
    content_block: { type: "text", text: "", citations: [] },
  },
  {
    type: "content_block_delta",
    index: 1,
    delta: { type: "citations_delta", citation: webLocation },
  },
  { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: CITED.slice(0, 7) } },
  { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: CITED.slice(7) } },
  { type: "content_block_stop", index: 1 },
  { type: "content_block_start", index: 2, content_block: { type: "text", text: "" } },
  {
    type: "content_block_delta",
    index: 2,
    delta: { type: "text_delta", text: TEXT.slice(AT + CITED.length) },
  },
  { type: "content_block_stop", index: 2 },
  { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 8 } },
  { type: "message_stop" },
], true);
const anthropicBody = {
  id: "m1",
  model: "c",
  content: [
    { type: "text", text: TEXT.slice(0, AT) },
    { type: "text", text: CITED, citations: [webLocation] },
    { type: "text", text: TEXT.slice(AT + CITED.length) },
  ],
  stop_reason: "end_turn",
  usage: { input_tokens: 20, output_tokens: 8 },
};

const urlCitation = { url: URL_, title: TITLE, start_index: AT, end_index: AT + CITED.length };
const chunk = (delta: Obj, finish: string | null = null) => ({
  id: "c1",
  object: "chat.completion.chunk",
  model: "m",
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const chatStream = sseOf([
  chunk({ role: "assistant", content: "" }),
  chunk({ content: TEXT.slice(0, 20) }),
  chunk({ content: TEXT.slice(20) }),
  chunk({ annotations: [{ type: "url_citation", url_citation: urlCitation }] }),
  chunk({}, "stop"),
], false) + "data: [DONE]\n\n";
const chatBody = {
  id: "c1",
  model: "m",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: TEXT,
      annotations: [{ type: "url_citation", url_citation: urlCitation }],
    },
    finish_reason: "stop",
  }],
};

const annotation = { type: "url_citation", ...urlCitation };
const message = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  content: [{ type: "output_text", text: TEXT, annotations: [annotation] }],
};
const ids = { item_id: "msg_1", output_index: 0, content_index: 0 };
const responsesStream = sseOf([
  { type: "response.created", response: { id: "r1", model: "m" } },
  { type: "response.output_item.added", output_index: 0, item: { ...message, content: [] } },
  {
    type: "response.content_part.added",
    ...ids,
    part: { type: "output_text", text: "", annotations: [] },
  },
  { type: "response.output_text.delta", ...ids, delta: TEXT },
  { type: "response.output_text.annotation.added", ...ids, annotation_index: 0, annotation },
  { type: "response.output_text.done", ...ids, text: TEXT },
  { type: "response.content_part.done", ...ids, part: message.content[0] },
  { type: "response.output_item.done", output_index: 0, item: message },
  { type: "response.completed", response: { status: "completed", output: [message] } },
], true);
const responsesBody = { id: "r1", model: "m", status: "completed", output: [message] };

const UPSTREAMS: [string, () => StreamDecoder, string, BodyDecoder, unknown][] = [
  ["anthropic-messages", createMessagesDecoder, anthropicStream, decodeMessagesBody, anthropicBody],
  ["openai-chat", createChatDecoder, chatStream, decodeChatBody, chatBody],
  ["openai-responses", createResponsesDecoder, responsesStream, decodeResponsesBody, responsesBody],
];

function eventsOf(up: (typeof UPSTREAMS)[number]): Event[][] {
  const [, decoder, sse, body, whole] = up;
  const streamed: Event[] = [];
  const d = decoder();
  new SseSplitter().push(sse, (ev) => d.event(ev, (e) => streamed.push(e)));
  d.end((e) => streamed.push(e));
  const bodied: Event[] = [];
  body(whole, (e) => bodied.push(e));
  return [streamed, bodied];
}

function encodeStream(enc: { event(e: Event): string }, events: Event[]): string {
  let out = "";
  for (const e of events) out += enc.event(e);
  return out + enc.event({ type: "cost", cost });
}

const spans = (text: string, list: { url: string; title?: string; s: number; e: number }[]) => ({
  text,
  cites: list.map((c) => ({ url: c.url, title: c.title, span: text.slice(c.s, c.e) })),
});

/** Text and citations of a chat message (body) or of the chat stream's accumulated deltas. */
function chatView(message: Obj) {
  const anns = (message.annotations ?? []) as { url_citation: typeof urlCitation }[];
  return spans(
    message.content as string,
    anns.map(({ url_citation: u }) => ({ ...u, s: u.start_index, e: u.end_index })),
  );
}

function responsesView(output: Obj[]) {
  const part = (output.find((o) => o.type === "message")!.content as Obj[])[0];
  const anns = part.annotations as (typeof annotation)[];
  return spans(part.text as string, anns.map((a) => ({ ...a, s: a.start_index, e: a.end_index })));
}

for (const up of UPSTREAMS) {
  Deno.test(`citations: ${up[0]} → chat client, streamed and whole`, () => {
    for (const events of eventsOf(up)) {
      assertWellFormed(events);
      let content = "";
      let annotations: unknown[] = [];
      for (const line of encodeStream(createChatEncoder(ctx), events).split("\n")) {
        if (!line.startsWith("data: {")) continue;
        const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta ?? {};
        content += delta.content ?? "";
        annotations = [...annotations, ...(delta.annotations ?? [])];
      }
      assert.deepEqual(chatView({ content, annotations }), EXPECTED);
      const body = encodeChatBody(events, cost, ctx) as { choices: { message: Obj }[] };
      assert.deepEqual(chatView(body.choices[0].message), EXPECTED);
    }
  });

  Deno.test(`citations: ${up[0]} → responses client, streamed and whole`, () => {
    for (const events of eventsOf(up)) {
      const fs = frames(encodeStream(createResponsesEncoder(ctx), events));
      const added = fs.filter(([n]) => n === "response.output_text.annotation.added");
      assert.equal(added.length, 1);
      const final = fs.at(-1)![1].response as { output: Obj[] };
      assert.deepEqual(responsesView(final.output), EXPECTED);
      const body = encodeResponsesBody(events, cost, ctx) as { output: Obj[] };
      assert.deepEqual(responsesView(body.output), EXPECTED);
    }
  });

  Deno.test(`citations: ${up[0]} → messages client: the text is whole`, () => {
    for (const events of eventsOf(up)) {
      const text = frames(encodeStream(createMessagesEncoder(ctx), events)).flatMap(([, d]) => {
        const delta = d.delta as { type?: string; text?: string } | undefined;
        return delta?.type === "text_delta" ? [delta.text] : [];
      }).join("");
      assert.equal(text, TEXT);
    }
  });
}

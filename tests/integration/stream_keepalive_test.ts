/**
 * A stream whose upstream is silent (a reasoning model thinking before its first token, which
 * OpenAI's chat API and OpenRouter do without a byte the client sees) keeps its connection
 * alive: Claude Code cuts a stream that sends no byte for five minutes (its byte watchdog, on
 * by default for a gateway), then asks again — the thinking thrown away and billed twice.
 * Real clients over real HTTP: the `@anthropic-ai/sdk` and `openai` SDKs read the stream whole.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { ALL_VIA_ANTHROPIC, ALL_VIA_CHAT, ALL_VIA_RESPONSES } from "../helpers/providers.ts";
import { parseSse } from "../helpers/sse.ts";

const MODEL = "anthropic/claude-sonnet-4.5";
/** Keep-alives every 200 ms; the model says its first token after 2.5 s (the status line goes
 * out after 1 s). */
const config = { STREAM_KEEPALIVE_MS: "200" };
const SLOW = "[[mock:first=2500,tokens=3]]";

const UPSTREAMS = [
  ["anthropic", ALL_VIA_ANTHROPIC],
  ["chat", ALL_VIA_CHAT],
  ["responses", ALL_VIA_RESPONSES],
] as const;

function postMessages(g: TestGateway, body: unknown) {
  return fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

for (const [name, providers] of UPSTREAMS) {
  Deno.test(`stream keep-alive (messages, ${name} upstream): pings while the model is silent`, () =>
    withGateway(async (g) => {
      const res = await postMessages(g, {
        model: MODEL,
        max_tokens: 100,
        stream: true,
        messages: [{ role: "user", content: `Think hard ${SLOW}` }],
      });
      assert.equal(res.status, 200);
      const text = await res.text();
      const events = parseSse(text);
      // Anthropic's order: message_start first. A transcoded stream sends it only once the
      // upstream says something (it carries the input usage), so a keep-alive before it is an
      // SSE comment, not a ping.
      assert.equal(events[0]?.event, "message_start");
      const firstDelta = events.findIndex((e) => e.event === "content_block_delta");
      assert.ok(firstDelta > 0, "the answer came");
      const pings = events.slice(0, firstDelta).filter((e) => e.event === "ping");
      for (const p of pings) assert.deepEqual(JSON.parse(p.data), { type: "ping" });
      const comments = text.slice(0, text.indexOf("event: message_start")).split("\n")
        .filter((l) => l.startsWith(":")).length;
      // One ping follows message_start as Anthropic sends it; the silence brings more.
      assert.ok(
        pings.length + comments >= 3,
        `${pings.length} pings and ${comments} comments in 1.5 s of silence`,
      );
      assert.equal(events.at(-1)?.event, "message_stop");

      // The SDK reads such a stream as any other.
      const stream = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 }).messages
        .stream({
          model: MODEL,
          max_tokens: 100,
          messages: [{ role: "user", content: `Think again ${SLOW}` }],
        });
      const msg = await stream.finalMessage();
      assert.equal(msg.content[0].type, "text");
      assert.equal((msg.content[0] as { text: string }).text, "tok0 tok1 tok2");
    }, { providers, config }));
}

Deno.test("stream keep-alive (chat and responses): SSE comments while the model is silent", () =>
  withGateway(async (g) => {
    for (const path of ["chat/completions", "responses"]) {
      const body = path === "responses"
        ? { model: MODEL, stream: true, input: `Think hard ${SLOW}` }
        : { model: MODEL, stream: true, messages: [{ role: "user", content: `Think ${SLOW}` }] };
      const res = await fetch(`${g.baseURL}/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      const text = await res.text();
      const comments = text.split("\n").filter((l) => l.startsWith(":"));
      assert.ok(comments.length >= 3, `${path}: ${comments.length} keep-alives`);
    }
    // The SDK skips them.
    const openai = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    let out = "";
    const chat = await openai.chat.completions.create({
      model: MODEL,
      stream: true,
      messages: [{ role: "user", content: `Think again ${SLOW}` }],
    });
    for await (const chunk of chat) out += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(out, "tok0 tok1 tok2");
    const resp = openai.responses.stream({ model: MODEL, input: `Think more ${SLOW}` });
    assert.equal((await resp.finalResponse()).output_text, "tok0 tok1 tok2");
  }, { providers: ALL_VIA_CHAT, config }));

Deno.test("stream keep-alive: STREAM_KEEPALIVE_MS=0 sends none", () =>
  withGateway(async (g) => {
    const res = await postMessages(g, {
      model: MODEL,
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: `Think hard ${SLOW}` }],
    });
    const events = parseSse(await res.text());
    assert.equal(events.filter((e) => e.event === "ping").length, 1, "the one after message_start");
  }, { providers: ALL_VIA_CHAT, config: { STREAM_KEEPALIVE_MS: "0" } }));

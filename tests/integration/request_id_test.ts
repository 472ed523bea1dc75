/**
 * The request id each SDK reads is the generation id: what a client logs from
 * `_request_id` / `withResponse().request_id` is a generation the history knows.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { withGateway } from "../helpers/gateway.ts";

Deno.test("request ids: the SDKs' request id is the generation id, on answers and on errors", async () => {
  await withGateway(async (g) => {
    const openai = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const chat = await openai.chat.completions.create({
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "Hi [[mock:tokens=1]]" }],
    }).withResponse();
    assert.equal(chat.request_id, chat.response.headers.get("x-generation-id"));
    assert.equal(chat.request_id, chat.data.id);
    const history = await fetch(`${g.url}/v1/generations/${chat.request_id}`, {
      headers: { authorization: `Bearer ${g.key}` },
    });
    assert.equal(history.status, 200);
    await history.body?.cancel();

    const anthropic = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const msg = await anthropic.messages.create({
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 16,
      messages: [{ role: "user", content: "Hi [[mock:tokens=1]]" }],
    }).withResponse();
    assert.equal(msg.request_id, msg.response.headers.get("x-generation-id"));
    // Passed through from Anthropic, the message's own id is the generation's too.
    assert.equal(msg.data.id, msg.request_id);
    const streamed = anthropic.messages.stream({
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 16,
      messages: [{ role: "user", content: "Hi [[mock:tokens=1]]" }],
    });
    const final = await streamed.finalMessage();
    assert.equal(final.id, (await streamed.withResponse()).response.headers.get("x-generation-id"));

    // An upstream failure after the hold: the error names the generation too.
    const err = await anthropic.messages.create({
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 16,
      messages: [{ role: "user", content: "Hi [[mock:error=500]]" }],
    }).catch((e) => e);
    assert.ok(err instanceof Anthropic.APIError);
    assert.match(String(err.requestID), /\S/);
    assert.equal(err.requestID, err.headers?.get("x-generation-id"));
  });
});

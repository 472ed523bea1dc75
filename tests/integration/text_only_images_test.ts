/**
 * Claude Code on a model that reads no images (DeepSeek): once an image is in the session's
 * history (a screenshot pasted on an earlier turn, the Read tool's answer for a PNG), every
 * later request carries it again. Refusing each of them (and the `/compact` request that
 * could drop it) left the session stuck on the same 400; the model now reads a note where
 * the image was, and only an image attached to the newest message is still refused.
 * Through the real Anthropic SDK, against the mock upstream.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const TEXT_ONLY = "deepseek/deepseek-v4-pro";
// A 1×1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const image = {
  type: "image" as const,
  source: { type: "base64" as const, media_type: "image/png" as const, data: PNG },
};

const anthropic = (g: TestGateway) =>
  new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });

function sentText(g: TestGateway): string {
  const calls = g.mock.stats.calls;
  assert.equal(calls.length, 1);
  return JSON.stringify(calls[0].body);
}

Deno.test("text-only model: an image earlier in the history is a note, and the session goes on", () =>
  withGateway(async (g) => {
    const res = await anthropic(g).messages.create({
      model: TEXT_ONLY,
      max_tokens: 64,
      messages: [
        { role: "user", content: [{ type: "text", text: "what colour" }, image] },
        { role: "assistant", content: "No response requested." },
        { role: "user", content: "next turn [[mock:tokens=2]]" },
      ],
    });
    assert.equal(res.content[0].type, "text");
    const sent = sentText(g);
    assert.ok(!sent.includes(PNG), "the image is not sent");
    assert.match(sent, /image omitted: model deepseek\/deepseek-v4-pro does not accept image/);
  }));

Deno.test("text-only model: an image in a tool result is a note, so the agent loop goes on", () =>
  withGateway(async (g) => {
    await anthropic(g).messages.create({
      model: TEXT_ONLY,
      max_tokens: 64,
      tools: [{
        name: "Read",
        input_schema: { type: "object", properties: { file_path: { type: "string" } } },
      }],
      messages: [
        { role: "user", content: "read shot.png [[mock:tokens=2]]" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: { file_path: "a" } }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [image] }],
        },
      ],
    });
    const sent = sentText(g);
    assert.ok(!sent.includes(PNG), "the image is not sent");
    assert.match(sent, /image omitted/);
  }));

Deno.test("text-only model: an image attached to the newest message is still a 400 naming image input", () =>
  withGateway(async (g) => {
    const e = await anthropic(g).messages.create({
      model: TEXT_ONLY,
      max_tokens: 64,
      messages: [{ role: "user", content: [{ type: "text", text: "what colour" }, image] }],
    }).then(() => assert.fail("no error"), (e) => e as { status: number; message: string });
    assert.equal(e.status, 400);
    assert.match(e.message, /does not accept image input/);
    assert.equal(g.mock.stats.calls.length, 0);
  }));

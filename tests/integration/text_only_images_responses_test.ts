/**
 * Codex on a model that reads no images: once an image is in the session's input (attached on
 * an earlier turn, or a view_image tool's output), every later request carries it again, and
 * refusing each left the session stuck on the same 400. The model reads a note where the image
 * was, through OpenAI's own responses API as much as through a transcoded route; only an image
 * attached to the newest message is still refused. Through the real OpenAI SDK, against the
 * mock upstream.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { mockProvider } from "../helpers/chat.ts";

// A 1×1 PNG.
const PNG = "data:image/png;base64," +
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const image = { type: "input_image" as const, image_url: PNG, detail: "auto" as const };

const openai = (g: TestGateway) =>
  new OpenAI({ apiKey: g.key, baseURL: `${g.url}/v1`, maxRetries: 0 });

function sent(g: TestGateway): { path: string; body: string } {
  const calls = g.mock.stats.calls;
  assert.equal(calls.length, 1);
  return { path: calls[0].path, body: JSON.stringify(calls[0].body) };
}

/** OpenAI's own models served in the chat format alone: a responses call is transcoded. */
const chatOnly = { providers: { providers: [mockProvider("openai")] } };

for (
  const [path, opts] of [
    ["/v1/responses", {}], // passed through as sent
    ["/v1/chat/completions", chatOnly], // transcoded
  ] as const
) {
  const model = "openai/o3-mini";
  Deno.test(`responses, text-only model via ${path}: an image earlier in the input is a note`, () =>
    withGateway(async (g) => {
      const res = await openai(g).responses.create({
        model,
        input: [
          {
            role: "user",
            content: [{ type: "input_text", text: "what colour" }, image],
          },
          { role: "assistant", content: "I cannot tell." },
          { role: "user", content: "next turn [[mock:tokens=2]]" },
        ],
      });
      assert.equal(res.status, "completed");
      const s = sent(g);
      assert.ok(s.path.endsWith(path), s.path);
      assert.ok(!s.body.includes(PNG), "the image is not sent");
      assert.match(s.body, new RegExp(`image omitted: model ${model} does not accept image`));
    }, opts));
}

Deno.test("responses, text-only model: an image in a tool's output is a note, the loop goes on", () =>
  withGateway(async (g) => {
    await openai(g).responses.create({
      model: "openai/o3-mini",
      tools: [{
        type: "function",
        name: "view_image",
        parameters: { type: "object", properties: { path: { type: "string" } } },
        strict: false,
      }],
      input: [
        { role: "user", content: "look at shot.png [[mock:tokens=2]]" },
        {
          type: "function_call",
          call_id: "call_1",
          name: "view_image",
          arguments: '{"path":"shot.png"}',
        },
        { type: "function_call_output", call_id: "call_1", output: [image] },
      ],
    });
    const s = sent(g);
    assert.ok(!s.body.includes(PNG), "the image is not sent");
    assert.match(s.body, /image omitted/);
  }));

Deno.test("responses, text-only model: an image attached to the newest message is still a 400", () =>
  withGateway(async (g) => {
    const e = await openai(g).responses.create({
      model: "openai/o3-mini",
      input: [{ role: "user", content: [{ type: "input_text", text: "what colour" }, image] }],
    }).then(() => assert.fail("no error"), (e) => e as { status: number; message: string });
    assert.equal(e.status, 400);
    assert.match(e.message, /does not accept image input/);
    assert.equal(g.mock.stats.calls.length, 0);
  }));

/**
 * `openai/…` slugs that name no model of OpenAI's own API: OpenRouter's offers (`o4-mini-high`
 * is o4-mini at high effort, `gpt-5-image` GPT-5 with OpenRouter's image tool, the open-weight
 * gpt-oss models run by other hosts, `gpt-3.5-turbo-instruct` a completions model OpenAI's chat
 * API refuses). OpenAI answers such a name with a 404: each must go straight to the aggregator
 * under its own slug, not to OpenAI first (a wasted round trip per call, and a failure where no
 * aggregator is configured). Slugs OpenAI knows under another name go to OpenAI under that name.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });

const AGGREGATOR_ONLY = [
  "openai/o4-mini-high",
  "openai/o3-mini-high",
  "openai/gpt-oss-120b",
  "openai/gpt-oss-20b",
  "openai/gpt-oss-safeguard-20b",
  "openai/gpt-5-image",
  "openai/gpt-5-image-mini",
  "openai/gpt-5.4-image-2",
  "openai/gpt-3.5-turbo-instruct",
];

/** The protocol and model name of the first upstream call since the mock's reset. */
async function firstCall(g: TestGateway): Promise<{ protocol: string; model: string }> {
  await g.mock.idle();
  const call = g.mock.stats.calls[0];
  return { protocol: call.protocol, model: (call.body as { model: string }).model };
}

Deno.test("OpenRouter-only openai/ slugs: chat reaches the aggregator under the whole slug", async () => {
  await withGateway(async (g) => {
    for (const model of AGGREGATOR_ONLY) {
      g.mock.reset();
      const res = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      });
      assert.equal(res.model, model);
      assert.deepEqual(await firstCall(g), { protocol: "chat", model }, model);
    }
  });
});

Deno.test("OpenRouter-only openai/ image slugs: images come through the aggregator's chat", async () => {
  await withGateway(async (g) => {
    for (const model of ["openai/gpt-5-image", "openai/gpt-5.4-image-2"]) {
      g.mock.reset();
      const res = await openai(g).images.generate({ model, prompt: "a cat" });
      assert.equal(res.data?.length, 1, model);
      assert.deepEqual(await firstCall(g), { protocol: "chat", model }, model);
    }
  });
});

Deno.test("OpenAI's chat aliases reach OpenAI under the names its API gives them", async () => {
  await withGateway(async (g) => {
    // The catalogue's slugs are OpenRouter's; OpenAI's API knows these as `…-chat-latest`
    // and `chat-latest`, and answers the bare slug names 404.
    for (
      const [model, name] of [
        ["openai/gpt-5.2-chat", "gpt-5.2-chat-latest"],
        ["openai/gpt-chat-latest", "chat-latest"],
      ]
    ) {
      g.mock.reset();
      const res = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      });
      assert.equal(res.model, model);
      assert.equal((await firstCall(g)).model, name, model);
    }
  });
});

Deno.test("OpenAI's own models still go to OpenAI under their own names", async () => {
  await withGateway(async (g) => {
    for (const [model, name] of [["openai/o4-mini", "o4-mini"], ["openai/gpt-5", "gpt-5"]]) {
      g.mock.reset();
      await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      });
      assert.equal((await firstCall(g)).model, name, model);
    }
  });
});

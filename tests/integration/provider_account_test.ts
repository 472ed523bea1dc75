/**
 * The gateway's own account at a provider (its key refused, its credit gone) is a 502 the
 * client is told not to retry (`x-should-retry: false`): both SDKs, Claude Code and Codex
 * retry a 5xx otherwise, for as long as their retry budget lasts, and nothing changes meanwhile.
 * So is a model the provider does not know under the name our catalogue gives it (404): nothing
 * changes meanwhile either. A provider's own failure stays retryable.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { mockProvider } from "../helpers/chat.ts";

const CASES: [format: string, model: string][] = [
  ["chat", "openai/gpt-4o-mini"],
  ["responses", "openai/gpt-4o-mini"],
  ["messages", "anthropic/claude-sonnet-4.5"],
  ["messages", "openai/gpt-4o-mini"],
];

/** One non-streaming call through the real SDK with retries on, as clients run them. */
function call(g: TestGateway, format: string, model: string, text: string): Promise<unknown> {
  if (format === "messages") {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 2 });
    return c.messages.create({
      model,
      max_tokens: 16,
      messages: [{ role: "user", content: text }],
    });
  }
  const c = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 2 });
  return format === "chat"
    ? c.chat.completions.create({ model, messages: [{ role: "user", content: text }] })
    : c.responses.create({ model, input: text });
}

for (const [format, model] of CASES) {
  Deno.test(`provider account (${format}, ${model}): a refused gateway key is a 502 the SDK does not retry; a provider failure is retried`, async () => {
    await withGateway(async (g) => {
      // One attempt asks every provider serving the model (each refuses): the SDK's own
      // retries would multiply that.
      let once = 0;
      // 404: the provider does not know the model under the catalogue's name for it.
      for (const status of [401, 402, 404]) {
        g.mock.reset();
        const e = await call(g, format, model, `Hi [[mock:error=${status}]]`).then(
          () => assert.fail("no error"),
          (e) => e as { status: number; headers: Headers },
        );
        assert.equal(e.status, 502);
        assert.equal(e.headers.get("x-should-retry"), "false");
        once ||= g.mock.stats.calls.length;
        assert.equal(g.mock.stats.calls.length, once, `HTTP ${status}: not retried`);
      }
      g.mock.reset();
      const e = await call(g, format, model, "Hi [[mock:error=500]]").then(
        () => assert.fail("no error"),
        (e) => e as { status: number; headers: Headers },
      );
      assert.equal(e.status, 502);
      assert.equal(e.headers.get("x-should-retry"), null);
      assert.equal(
        g.mock.stats.calls.length,
        3 * once,
        "a provider failure: the SDK's two retries",
      );
    });
  });
}

Deno.test("provider account: a 502 whose providers failed otherwise too stays retryable", () =>
  withGateway(async (g) => {
    // The first provider failed on its own (a 5xx), the next refused the gateway's key: a
    // retry may find the first one well again, so the answer must not forbid one.
    const c = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const e = await c.chat.completions.create({
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "Hi" }],
    }).then(() => assert.fail("no error"), (e) => e as { status: number; headers: Headers });
    assert.equal(e.status, 502);
    assert.equal(g.mock.stats.calls.length, 2, "both providers asked");
    assert.equal(e.headers.get("x-should-retry"), null);
  }, {
    providers: {
      providers: [
        mockProvider("flaky", { priority: 1, headers: { "x-mock-error": "500" } }),
        mockProvider("openai", { priority: 10, headers: { "x-mock-error": "401" } }),
      ],
    },
  }));

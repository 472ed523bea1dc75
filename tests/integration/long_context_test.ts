/**
 * Models listed with Anthropic's 1M-token window behind a beta flag (Sonnet 4 and 4.5): a
 * prompt Anthropic refuses as past its 200K default is asked once more with the flag, so the
 * listed window holds; the mock's `[[mock:context=N]]` is a prompt of N tokens, its window
 * 200K, or 1M when the call carries `context-1m-2025-08-07`.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const BETA = "context-1m-2025-08-07";

const anthropic = (g: TestGateway, headers: Record<string, string> = {}) =>
  new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0, defaultHeaders: headers });

const params = (model: string, marker: string) => ({
  model,
  max_tokens: 64,
  messages: [{ role: "user" as const, content: `a long document [[mock:${marker}]]` }],
});

/** The `anthropic-beta` header of each call the mock got, in order ("" for none). */
const betas = (g: TestGateway) => g.mock.stats.calls.map((c) => c.headers["anthropic-beta"] ?? "");

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof Anthropic.BadRequestError, String(e));
    return e.message;
  }
  throw new Error("the call did not fail");
}

Deno.test("long context: a prompt past 200K on Sonnet 4.5 is asked again with the beta flag, and billed once", async () => {
  await withGateway(async (g) => {
    const m = await anthropic(g).messages.create(
      params("anthropic/claude-sonnet-4.5", "context=300000,tokens=3"),
    );
    assert.equal(m.content[0].type === "text" && m.content[0].text, "tok0 tok1 tok2");
    let text = "";
    for await (
      const e of anthropic(g, { "anthropic-beta": "prompt-caching-2024-07-31" }).messages.stream(
        params("anthropic/claude-sonnet-4.5", "context=300000,tokens=2"),
      )
    ) if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
    assert.equal(text, "tok0 tok1");
    // The flag only after the refusal, beside the client's own.
    assert.deepEqual(betas(g), [
      "",
      BETA,
      "prompt-caching-2024-07-31",
      `prompt-caching-2024-07-31,${BETA}`,
    ]);
    await g.settled();
    const gens = await g.store.listGenerations(g.accountId, { limit: 10 });
    assert.equal(gens.length, 2, "one generation a request, not one a call");
    for (const gen of gens) {
      assert.equal(gen.status, "completed");
      assert.ok(gen.cost > 0n);
    }
  });
});

Deno.test("long context: a chat client on Sonnet 4.5 gets the longer window too", async () => {
  await withGateway(async (g) => {
    const openai = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const r = await openai.chat.completions.create({
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: "a long document [[mock:context=300000,tokens=2]]" }],
    });
    assert.equal(r.choices[0].message.content, "tok0 tok1");
    assert.deepEqual(betas(g), ["", BETA]);
  });
});

Deno.test("long context: past the longer window too, the client hears that window's figures", async () => {
  await withGateway(async (g) => {
    const message = await refusal(
      anthropic(g).messages.create(params("anthropic/claude-sonnet-4.5", "context=1200000")),
    );
    assert.match(message, /prompt is too long: 1200000 tokens > 1000000 maximum/);
    assert.deepEqual(betas(g), ["", BETA]);
    // A client that sent the flag itself is not asked again for it.
    const again = await refusal(
      anthropic(g, { "anthropic-beta": BETA }).messages.create(
        params("anthropic/claude-sonnet-4.5", "context=1200000"),
      ),
    );
    assert.match(again, /> 1000000 maximum/);
    assert.equal(g.mock.stats.calls.length, 3);
  });
});

Deno.test("long context: an account without the flag's access hears the first refusal, which Claude Code compacts on", async () => {
  await withGateway(async (g) => {
    const message = await refusal(
      anthropic(g).messages.create(
        params("anthropic/claude-sonnet-4.5", "context=300000,no_long_context"),
      ),
    );
    assert.match(message, /prompt is too long: 300000 tokens > 200000 maximum/);
    assert.doesNotMatch(message, /beta/);
    assert.deepEqual(betas(g), ["", BETA]);
  });
});

Deno.test("long context: a model the flag does not widen is refused once, as before", async () => {
  await withGateway(async (g) => {
    const message = await refusal(
      anthropic(g).messages.create(params("anthropic/claude-haiku-4.5", "context=300000")),
    );
    assert.match(message, /prompt is too long: 300000 tokens > 200000 maximum/);
    assert.deepEqual(betas(g), [""]);
  });
});

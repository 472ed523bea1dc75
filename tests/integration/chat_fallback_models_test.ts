/**
 * Chat's model fallbacks (OpenRouter's `models`), end to end through the `openai` SDK: a model
 * whose upstream fails before the first byte (5xx, 429) hands the call to the next model
 * listed, which answers under its own name and is billed at its own price, once; a refusal
 * (400) is the answer; the hold covers the dearest model of the chain.
 *
 * Two providers on one mock: `flaky` serves OpenAI's models and fails as its `headers` say,
 * `second` serves Anthropic's (spoken to as a chat upstream).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import type { TestGateway } from "../helpers/gateway.ts";
import {
  ANTHROPIC_MODEL,
  client,
  expect400,
  expectGeneric,
  mockProvider,
  MODEL,
  postChat,
  sdkError,
  settledGeneration,
  TEXT_ONLY_MODEL,
  waitFor,
  withGateway,
} from "../helpers/chat.ts";

type Obj = Record<string, unknown>;
type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type StreamParams = OpenAI.Chat.ChatCompletionCreateParamsStreaming;

/** A 1×1 PNG. */
const PIXEL =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8" +
  "BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

const MSGS: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: "user", content: "Hello there [[mock:tokens=4]]" },
];

function providers(flaky: Record<string, string> = {}) {
  return {
    providers: [
      mockProvider("flaky", { headers: flaky }),
      mockProvider("second", { serves: ["anthropic/*"] }),
    ],
  };
}

/** One call through the SDK; its model, text, cost and generation id. */
async function complete(g: TestGateway, body: Obj, stream: boolean) {
  const c = client(g);
  if (!stream) {
    const raw = await c.chat.completions.create({ messages: MSGS, ...body } as Params)
      .withResponse();
    const usage = raw.data.usage as unknown as { cost: number };
    return {
      model: raw.data.model,
      text: raw.data.choices[0].message.content ?? "",
      cost: usage.cost,
      id: raw.response.headers.get("x-generation-id")!,
    };
  }
  const raw = await c.chat.completions.create(
    { messages: MSGS, stream: true, ...body } as StreamParams,
  )
    .withResponse();
  let text = "";
  let model = "";
  let cost = NaN;
  for await (const ch of raw.data) {
    model = ch.model;
    text += ch.choices[0]?.delta?.content ?? "";
    if (ch.usage) cost = (ch.usage as unknown as { cost: number }).cost;
  }
  return { model, text, cost, id: raw.response.headers.get("x-generation-id")! };
}

async function debits(g: TestGateway) {
  return (await g.store.listLedger(g.accountId)).filter((e) => e.kind === "debit");
}

for (const stream of [false, true]) {
  const mode = stream ? "streaming" : "non-streaming";

  for (const status of [500, 429]) {
    Deno.test(`chat models (${mode}): the first model's upstream ${status} → the next serves`, () =>
      withGateway(async (g) => {
        const got = await complete(g, {
          model: MODEL,
          models: [ANTHROPIC_MODEL],
          max_tokens: 50,
        }, stream);
        assert.equal(got.text, "tok0 tok1 tok2 tok3");
        assert.equal(got.model, ANTHROPIC_MODEL, "the answer names the model that served");
        await g.mock.idle();
        const calls = g.mock.stats.calls;
        assert.equal(calls.length, 2);
        assert.equal(calls[0].outcome, "error");
        assert.equal((calls[1].body as Obj).model, "claude-sonnet-4.5");
        assert.equal((calls[1].body as Obj).models, undefined, "the list stays at the gateway");
        const gen = await settledGeneration(g, g.accountId, got.id);
        assert.equal(gen.status, "completed");
        assert.equal(gen.provider, "second");
        assert.equal(gen.model, ANTHROPIC_MODEL, "the history names the model that served");
        const [debit, ...more] = await debits(g);
        assert.deepEqual(more, [], "exactly one debit");
        assert.equal(debit.generationId, got.id);

        // Billed at the served model's price: what the same call to it alone costs.
        const alone = await complete(g, { model: ANTHROPIC_MODEL, max_tokens: 50 }, stream);
        assert.equal(got.cost, alone.cost);
        const aloneGen = await settledGeneration(g, g.accountId, alone.id);
        assert.equal(-debit.amount, aloneGen.cost);
        // Held for the dearer of the two (Claude), whichever serves.
        assert.equal(gen.hold, aloneGen.hold);
      }, { providers: providers({ "x-mock-error": String(status) }) }));
  }

  Deno.test(`chat models (${mode}): a 400 from the first model's upstream is the answer`, () =>
    withGateway(async (g) => {
      const e = await sdkError(complete(g, { model: MODEL, models: [ANTHROPIC_MODEL] }, stream));
      assert.equal(e.status, 400);
      await g.mock.idle();
      assert.equal(g.mock.stats.calls.length, 1, "the fallback was not asked");
      assert.deepEqual(await debits(g), []);
    }, { providers: providers({ "x-mock-error": "400" }) }));

  Deno.test(`chat models (${mode}): a model that answers keeps the call; fallbacks unasked`, () =>
    withGateway(async (g) => {
      const got = await complete(g, { models: [MODEL, ANTHROPIC_MODEL] }, stream);
      assert.equal(got.model, MODEL, "without `model`, the list's first is asked first");
      assert.equal(g.mock.stats.calls.length, 1);
      const gen = await settledGeneration(g, g.accountId, got.id);
      assert.equal(gen.provider, "flaky");
      assert.equal(gen.model, MODEL);
      assert.equal((await debits(g)).length, 1);
    }, { providers: providers() }));
}

for (const stream of [false, true]) {
  Deno.test(`chat models (${stream ? "streaming" : "non-streaming"}): a prompt past the first model's window goes to the next`, () =>
    withGateway(async (g) => {
      // OpenRouter's fallbacks move on for a context overflow too: a longer window may take it.
      const got = await complete(g, { model: MODEL, models: [ANTHROPIC_MODEL] }, stream);
      assert.equal(got.model, ANTHROPIC_MODEL);
      await g.mock.idle();
      assert.deepEqual(g.mock.stats.calls.map((c) => c.outcome === "error"), [true, false]);
      const gen = await settledGeneration(g, g.accountId, got.id);
      assert.equal(gen.model, ANTHROPIC_MODEL);
      assert.equal((await debits(g)).length, 1);
    }, { providers: providers({ "x-mock-overflow": "1" }) }));
}

Deno.test("chat models: a prompt past every model's window is the last one's 400", () =>
  withGateway(async (g) => {
    const e = await sdkError(complete(g, { model: MODEL, models: [ANTHROPIC_MODEL] }, false));
    assert.equal(e.status, 400);
    assert.equal(g.mock.stats.calls.length, 2);
    assert.deepEqual(await debits(g), []);
  }, {
    providers: {
      providers: [
        mockProvider("flaky", { headers: { "x-mock-overflow": "1" } }),
        mockProvider("second", { serves: ["anthropic/*"], headers: { "x-mock-overflow": "1" } }),
      ],
    },
  }));

Deno.test("chat models: a model no provider serves is passed over for a fallback", () =>
  withGateway(async (g) => {
    const got = await complete(g, { model: MODEL, models: [ANTHROPIC_MODEL] }, false);
    assert.equal(got.model, ANTHROPIC_MODEL);
    assert.equal(g.mock.stats.calls.length, 1);
  }, { providers: { providers: [mockProvider("second", { serves: ["anthropic/*"] })] } }));

Deno.test("chat models: a fallback that cannot take the request is passed over", () =>
  withGateway(async (g) => {
    const messages = [{
      role: "user",
      content: [
        { type: "text", text: "What is this? [[mock:tokens=2]]" },
        { type: "image_url", image_url: { url: PIXEL } },
      ],
    }];
    // gpt-3.5-turbo reads no images: between the two, Claude is the one asked.
    const got = await complete(g, {
      model: MODEL,
      models: [TEXT_ONLY_MODEL, ANTHROPIC_MODEL],
      messages,
    }, false);
    assert.equal(got.model, ANTHROPIC_MODEL);
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.length, 2);
  }, { providers: providers({ "x-mock-error": "502" }) }));

Deno.test("chat models: every model failing is the last failure, nothing billed", () =>
  withGateway(async (g) => {
    const res = await postChat(g, { model: MODEL, models: [ANTHROPIC_MODEL], messages: MSGS });
    await expectGeneric(res, 502);
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.length, 2);
    assert.deepEqual(await debits(g), []);
    // Closed in the wallet's next batch: waited for, not read at once.
    const gen = await settledGeneration(g, g.accountId, res.headers.get("x-generation-id")!);
    assert.equal(gen.status, "failed");
    assert.equal(gen.cost, 0n);
  }, {
    providers: {
      providers: [
        mockProvider("flaky", { headers: { "x-mock-error": "500" } }),
        mockProvider("second", { serves: ["anthropic/*"], headers: { "x-mock-error": "503" } }),
      ],
    },
  }));

Deno.test("chat models: the hold of a chain is its dearest model's, so a short balance is 402", () =>
  withGateway(async (g) => {
    // Enough for gpt-4o-mini's hold of 1000 output tokens, not for Claude Sonnet's.
    const poor = await g.account("0.3");
    const body = { model: MODEL, max_tokens: 1000, messages: MSGS };
    const cheap = await postChat(g, body, { key: poor.key });
    assert.equal(cheap.status, 200, await cheap.text());
    const res = await postChat(g, { ...body, models: [ANTHROPIC_MODEL] }, { key: poor.key });
    assert.equal(res.status, 402, await res.text());
  }, { providers: providers() }));

Deno.test("chat models: a list that is not slugs, past three, or names an unknown model is a 400", () =>
  withGateway(async (g) => {
    // A `model` that is no slug is the request's own 400, not a cue to take the list's first.
    await expect400(
      await postChat(g, { model: 123, models: [MODEL], messages: MSGS }),
      "model",
    );
    await expect400(await postChat(g, { model: MODEL, models: "x", messages: MSGS }), "models");
    await expect400(
      await postChat(g, { model: MODEL, models: [MODEL, MODEL, MODEL, MODEL], messages: MSGS }),
      "models",
    );
    await expect400(
      await postChat(g, { model: MODEL, models: ["gpt-4o"], messages: MSGS }),
      "gpt-4o",
    );
    assert.equal(g.mock.stats.calls.length, 0);
  }, { providers: providers() }));

for (const stream of [false, true]) {
  Deno.test(`chat models (${stream ? "streaming" : "non-streaming"}): a failed chain's history names the last model tried with its provider`, () =>
    withGateway(async (g) => {
      const res = await postChat(g, {
        model: MODEL,
        models: [ANTHROPIC_MODEL],
        messages: MSGS,
        stream,
      });
      assert.equal(res.status, 502, await res.text());
      const gen = await settledGeneration(g, g.accountId, res.headers.get("x-generation-id")!);
      assert.equal(gen.status, "failed");
      assert.equal(gen.provider, "second");
      assert.equal(gen.upstreamModel, "claude-sonnet-4.5");
      assert.equal(
        gen.model,
        ANTHROPIC_MODEL,
        "not the first model beside the fallback's provider",
      );
    }, {
      providers: {
        providers: [
          mockProvider("flaky", { headers: { "x-mock-error": "500" } }),
          mockProvider("second", { serves: ["anthropic/*"], headers: { "x-mock-error": "502" } }),
        ],
      },
    }));
}

Deno.test("chat models: a client gone while a fallback is asked is recorded against that model", () =>
  withGateway(async (g) => {
    const left = new AbortController();
    const pending = postChat(g, { model: MODEL, models: [ANTHROPIC_MODEL], messages: MSGS }, {
      signal: left.signal,
    });
    await waitFor("the fallback to be asked", () => g.mock.stats.calls.length === 2 || undefined);
    left.abort();
    await pending.catch(() => {});
    // The gateway hears of the client's leaving a moment later: its generation is waited for.
    const gen = await waitFor("the generation", async () => {
      await g.settled();
      return (await g.store.listGenerations(g.accountId, { limit: 1 }))[0];
    });
    const done = await settledGeneration(g, g.accountId, gen.id);
    assert.equal(done.status, "cancelled");
    assert.equal(done.cost, 0n);
    assert.equal(done.provider, "second");
    assert.equal(done.model, ANTHROPIC_MODEL);
  }, {
    providers: {
      providers: [
        mockProvider("flaky", { headers: { "x-mock-error": "500" } }),
        mockProvider("second", { serves: ["anthropic/*"], headers: { "x-mock-first": "3000" } }),
      ],
    },
  }));

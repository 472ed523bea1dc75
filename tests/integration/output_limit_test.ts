/**
 * A client that sets no output limit is held for the model's whole output cap. When the
 * balance does not cover that, the call runs limited to the most output the balance covers
 * (halving the cap, not below 4 096 tokens) instead of a 402; a limit the client set is never
 * changed, and a balance short of the smallest limit is still refused.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { nanoToRub } from "../../src/billing/money.ts";
import { withGateway } from "../helpers/gateway.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { sdkError } from "../helpers/chat.ts";

type Obj = Record<string, unknown>;

/** Roubles for `usd` at the gateway's rates, markup included. */
function rub(g: TestGateway, usd: number): string {
  const { usdRub, markupFactor } = g.gw.ctx.rates;
  return (usd * Number(usdRub.n) / 10 ** usdRub.scale * Number(markupFactor.n) /
    10 ** markupFactor.scale).toFixed(6);
}

/** USD of `output` tokens and `searches` held searches (each with 20 000 input tokens). */
function usdOf(g: TestGateway, model: string, output: number, searches: number): number {
  const p = g.gw.ctx.catalogue.resolve(model)!.pricing;
  return output * Number(p.completion) +
    searches * (Number(p.web_search ?? 0) + 20_000 * Number(p.prompt));
}

/** A balance (roubles) worth `tokens` of the model's output, at its listed price and markup. */
function worth(g: TestGateway, model: string, tokens: number): string {
  return rub(g, usdOf(g, model, tokens, 0));
}

const sent = (g: TestGateway) => g.mock.stats.calls.at(-1)!.body as Obj;

Deno.test("output limit: chat without max_tokens on a short balance runs limited, not refused", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-4o-mini";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(model)!);
    assert.equal(cap, 16384);
    // Covers 3/4 of the cap: the call is limited to half of it.
    const who = await g.account(worth(g, model, cap * 0.75));
    const c = new OpenAI({ apiKey: who.key, baseURL: g.baseURL, maxRetries: 0 });
    const r = await c.chat.completions.create({
      model,
      messages: [{ role: "user", content: "hi [[mock:tokens=3]]" }],
    });
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.equal(sent(g).max_completion_tokens, cap / 2);
    await g.settled();
    const a = (await g.store.getAccount(who.accountId))!;
    assert.ok(a.balance >= 0n && nanoToRub(a.balance) < Number(worth(g, model, cap * 0.75)));

    // A limit the client set is the client's: not covered, refused.
    const e = await sdkError(c.chat.completions.create({
      model,
      max_tokens: cap,
      messages: [{ role: "user", content: "hi" }],
    }));
    assert.equal(e.status, 402);
  }));

Deno.test("output limit: chat n > 1 without max_tokens is limited per choice, the hold n times over", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-4o-mini";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(model)!);
    // Covers 3/4 of one choice's cap twice over: each of two choices is limited to half the cap.
    const who = await g.account(worth(g, model, cap * 1.5));
    const c = new OpenAI({ apiKey: who.key, baseURL: g.baseURL, maxRetries: 0 });
    const r = await c.chat.completions.create({
      model,
      n: 2,
      messages: [{ role: "user", content: "hi [[mock:tokens=3]]" }],
    }).withResponse();
    assert.equal(r.data.object, "chat.completion");
    assert.equal(sent(g).max_completion_tokens, cap / 2);
    assert.equal(sent(g).n, 2);
    await g.settled();
    const held = (await g.store.getGeneration(
      who.accountId,
      r.response.headers.get("x-generation-id")!,
    ))!.hold;
    // Two choices of half the cap each: more than one choice's half, within the balance.
    const half = BigInt(Math.round(Number(worth(g, model, cap / 2)) * 1e9));
    assert.ok(held > half * 3n / 2n, `held ${held}`);
    assert.ok(held <= BigInt(Math.round(Number(worth(g, model, cap * 1.5)) * 1e9)));

    // Not even the floor for each of three choices: refused.
    const poor = await g.account(worth(g, model, 4096 * 2.5));
    const p = new OpenAI({ apiKey: poor.key, baseURL: g.baseURL, maxRetries: 0 });
    const e = await sdkError(p.chat.completions.create({
      model,
      n: 3,
      messages: [{ role: "user", content: "hi" }],
    }));
    assert.equal(e.status, 402);
  }));

Deno.test("output limit: responses (Codex sends no max_output_tokens) runs limited; below the floor, 402", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-5.1";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(model)!);
    assert.ok(cap >= 32768, `cap ${cap}`);
    const who = await g.account(worth(g, model, 20_000));
    const c = new OpenAI({ apiKey: who.key, baseURL: g.baseURL, maxRetries: 0 });
    const r = await c.responses.create({ model, input: "hi [[mock:tokens=3]]" });
    assert.equal(r.status, "completed");
    const limit = sent(g).max_output_tokens as number;
    assert.ok(limit >= 4096 && limit <= 20_000 && limit * 2 > 20_000 - 4096, `limit ${limit}`);

    const poor = await g.account(worth(g, model, 2_000));
    const p = new OpenAI({ apiKey: poor.key, baseURL: g.baseURL, maxRetries: 0 });
    const calls = g.mock.stats.calls.length;
    const e = await sdkError(p.responses.create({ model, input: "hi" }));
    assert.equal(e.status, 402);
    assert.equal(g.mock.stats.calls.length, calls, "the upstream was not called");
  }));

Deno.test("output limit: the floor itself (4 096) is tried, not only halvings of the cap", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-5.1";
    const who = await g.account(rub(g, usdOf(g, model, 5_000, 0)));
    const c = new OpenAI({ apiKey: who.key, baseURL: g.baseURL, maxRetries: 0 });
    const r = await c.responses.create({ model, input: "hi [[mock:tokens=3]]" });
    assert.equal(r.status, "completed");
    assert.equal(sent(g).max_output_tokens, 4096);
  }));

for (const model of ["openai/gpt-5.1", "anthropic/claude-sonnet-4.5"]) {
  Deno.test(`output limit (${model}): Codex's open web_search is held, and capped, for fewer searches at the floor`, () =>
    withGateway(async (g) => {
      // Covers the floor's output and two searches, not ten.
      const who = await g.account(rub(g, usdOf(g, model, 4096, 2)));
      const c = new OpenAI({ apiKey: who.key, baseURL: g.baseURL, maxRetries: 0 });
      const r = await c.responses.create({
        model,
        input: "news? [[mock:tokens=3]]",
        tools: [{ type: "web_search" }],
      });
      assert.equal(r.status, "completed");
      const body = sent(g);
      if (model.startsWith("anthropic/")) {
        assert.equal(body.max_tokens, 4096);
        const search = (body.tools as Obj[]).find((t) => t.name === "web_search")!;
        assert.equal(search.max_uses, 1);
      } else {
        assert.equal(body.max_output_tokens, 4096);
      }
    }));
}

Deno.test("output limit: OpenAI's responses API, passed Codex's web_search through, is capped at the searches held", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-5.1";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(model)!);
    const ask = async (key: string, extra: Obj = {}) => {
      const c = new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0 });
      const r = await c.responses.create({
        model,
        input: "news? [[mock:tokens=3]]",
        tools: [{ type: "web_search" }],
        ...extra,
      });
      assert.equal(r.status, "completed");
      assert.equal(g.mock.stats.calls.at(-1)!.protocol, "responses", "passed through");
      return sent(g);
    };
    // Held for one search at the floor: without a cap the model may search on, past the hold
    // (function tools do not count against `max_tool_calls`).
    const floor = await g.account(rub(g, usdOf(g, model, 4096, 2)));
    const f = await ask(floor.key);
    assert.equal(f.max_output_tokens, 4096);
    assert.equal(f.max_tool_calls, 1);
    // Held for ten, the default: ten. A smaller cap of the client's own is kept.
    const whole = await g.account(rub(g, usdOf(g, model, cap, 10) * 1.1));
    assert.equal((await ask(whole.key)).max_tool_calls, 10);
    assert.equal((await ask(whole.key, { max_tool_calls: 2 })).max_tool_calls, 2);
  }));

Deno.test("output limit: Codex's cached web_search (no live access) on a Claude model is held for no search: it is left out there", () =>
  // Anthropic alone serves the model (OpenRouter's responses API is sent the search as it is).
  withGateway(async (g) => {
    const model = "anthropic/claude-sonnet-4.5";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(model)!);
    // Codex's default search, as it declares it on every call.
    const tools = [{ type: "web_search", external_web_access: false }] as OpenAI.Responses.Tool[];
    // Covers the floor's output and the prompt (500 tokens' worth more), not one search.
    const floor = await g.account(worth(g, model, 4096 + 500));
    const f = new OpenAI({ apiKey: floor.key, baseURL: g.baseURL, maxRetries: 0 });
    const r = await f.responses.create({ model, input: "hi [[mock:tokens=3]]", tools });
    assert.equal(r.status, "completed");
    assert.equal(sent(g).max_tokens, 4096);
    assert.equal(sent(g).tools, undefined, "the cached search is not sent to Anthropic");

    // Covers the whole output cap: the call is not limited for searches it cannot make.
    const whole = await g.account(worth(g, model, cap + 500));
    const w = new OpenAI({ apiKey: whole.key, baseURL: g.baseURL, maxRetries: 0 });
    // Streamed, as Codex calls (a call that does not stream is sent at most 21 333).
    const stream = await w.responses.create({
      model,
      input: "hi [[mock:tokens=3]]",
      tools,
      stream: true,
    });
    for await (const _ of stream) { /* to its end */ }
    assert.equal(sent(g).max_tokens, cap);
  }, { withoutKeys: ["OPENROUTER_API_KEY"] }));

Deno.test("output limit: a limit above the model's output cap (below its context) is sent at the cap, passed through or transcoded", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-4o-mini";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(model)!);
    const c = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    for (const field of ["max_tokens", "max_completion_tokens"] as const) {
      const r = await c.chat.completions.create({
        model,
        [field]: 100_000,
        messages: [{ role: "user", content: "hi [[mock:tokens=3]]" }],
      });
      assert.equal(r.choices[0].finish_reason, "stop");
      await g.mock.idle();
      assert.equal(g.mock.stats.calls.at(-1)!.protocol, "chat");
      assert.equal(sent(g).max_completion_tokens ?? sent(g).max_tokens, cap, field);
    }
    const r = await c.responses.create({
      model,
      max_output_tokens: 100_000,
      input: "hi [[mock:tokens=3]]",
    });
    assert.equal(r.status, "completed");
    await g.mock.idle();
    assert.equal(sent(g).max_output_tokens, cap);
    // Transcoded to a messages upstream: the same cap, in Anthropic's field.
    const claude = "anthropic/claude-sonnet-4.5";
    const claudeCap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(claude)!);
    await c.chat.completions.create({
      model: claude,
      max_tokens: 150_000,
      messages: [{ role: "user", content: "hi [[mock:tokens=3]]" }],
    });
    await g.mock.idle();
    assert.equal(sent(g).max_tokens, claudeCap);
  }));

Deno.test("output limit: a messages limit above Claude's cap is sent at the cap, a thinking budget shrunk below it", () =>
  withGateway(async (g) => {
    const claude = "anthropic/claude-sonnet-4.5";
    const cap = g.gw.ctx.catalogue.maxOutputTokens(g.gw.ctx.catalogue.resolve(claude)!);
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const ask = (budget: number) =>
      c.messages.stream({
        model: claude,
        max_tokens: cap + 36_000,
        thinking: { type: "enabled", budget_tokens: budget },
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
      }).finalMessage();
    await ask(cap + 10_000);
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.at(-1)!.protocol, "messages");
    assert.equal(sent(g).max_tokens, cap);
    assert.deepEqual(sent(g).thinking, { type: "enabled", budget_tokens: cap - 1 });
    // A budget already below the cap is the client's.
    await ask(2_048);
    await g.mock.idle();
    assert.deepEqual(sent(g).thinking, { type: "enabled", budget_tokens: 2_048 });
  }));

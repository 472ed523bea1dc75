/**
 * Models the upstream prices per request ("-1" in the catalogue: OpenRouter's routers). The
 * hold stands at the catalogue's dearest fixed prices, so a balance that could not pay for
 * the dearest pick is refused; output counted without the upstream's figure is billed at the
 * prices of the model the upstream names, or at that ceiling, never at zero.
 */
import assert from "node:assert/strict";
import { computeCost } from "../../src/billing/cost.ts";
import { nanoToRub } from "../../src/billing/money.ts";
import { Catalogue, isDynamic } from "../../src/catalogue/catalogue.ts";
import { balance, client, sdkError, withGateway } from "../helpers/chat.ts";

const ROUTER = "openrouter/auto";
const catalogue = await Catalogue.load();

interface CostUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

Deno.test("dynamic prices: the router models are the catalogue's dynamic ones", () => {
  const router = catalogue.resolve(ROUTER)!;
  assert.ok(isDynamic(router));
  const charged = catalogue.chargedPrices(router);
  assert.ok(Number(charged.prompt) > 0 && Number(charged.completion) > 0);
  // The ceiling is the dearest fixed price: no fixed-price model costs more.
  for (const m of catalogue.generative()) {
    if (isDynamic(m)) continue;
    assert.ok(Number(m.pricing.completion) <= Number(charged.completion), m.id);
  }
});

Deno.test("dynamic prices: a balance that covers a cheap model's hold is refused on a router", () =>
  withGateway(async (g) => {
    const poor = await g.account("0.5");
    const before = await balance(g, poor.accountId);
    const messages = [{ role: "user" as const, content: "hi [[mock:tokens=2000]]" }];
    // A cheap model of fixed price runs on this balance …
    await client(g, poor.key).chat.completions.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 1000,
      messages,
    });
    await g.settled();
    const calls = g.mock.stats.calls.length;
    // … a router, which may pick the dearest, does not.
    const e = await sdkError(
      client(g, poor.key).chat.completions.create({ model: ROUTER, max_tokens: 1000, messages }),
    );
    assert.equal(e.status, 402);
    assert.equal(g.mock.stats.calls.length, calls, "the upstream was not called");
    assert.ok(await balance(g, poor.accountId) < before);
  }));

for (
  const [named, pricedAs] of [
    ["openai/gpt-4o-2024-08-06", "openai/gpt-4o"],
    ["anthropic/claude-sonnet-4.5", "anthropic/claude-sonnet-4.5"],
    // The permanent slug, as OpenRouter names the model it picked.
    ["anthropic/claude-4.5-sonnet-20250929", "anthropic/claude-sonnet-4.5"],
    ["vendor/unknown-model", undefined],
  ] as const
) {
  Deno.test(`dynamic prices: counted output of a router naming ${named} is billed at ${pricedAs ?? "the ceiling"}`, () =>
    withGateway(async (g) => {
      const before = await balance(g);
      const res = await client(g).chat.completions.create({
        model: ROUTER,
        max_tokens: 100,
        messages: [{ role: "user", content: `hi [[mock:tokens=7,usage=none,model=${named}]]` }],
      });
      const usage = res.usage as unknown as CostUsage;
      assert.ok(usage.completion_tokens >= 7, "output counted from the deltas");
      const prices = pricedAs
        ? catalogue.resolve(pricedAs)!.pricing
        : catalogue.chargedPrices(catalogue.resolve(ROUTER)!);
      const expected = computeCost(
        { input: usage.prompt_tokens, output: usage.completion_tokens },
        prices,
        g.gw.ctx.rates,
      );
      assert.ok(expected.nano > 0n);
      assert.equal(usage.cost, nanoToRub(expected.nano));
      await g.settled();
      assert.equal(before - await balance(g), expected.nano);
      const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
      assert.equal(gen.upstreamModel, named, "the history names the router's pick");
    }));
}

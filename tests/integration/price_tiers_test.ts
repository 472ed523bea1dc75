/**
 * Price tiers end to end: a call past a model's long-context threshold is debited at the
 * tier's prices (the upstream bills it so), one below it at the base prices. The expected
 * debits are worked out here from the catalogue's figures and the rates, not by the cost code.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { add, ceilNano, type Dec, mul, mulInt, parseDec } from "../../src/billing/money.ts";
import { withGateway } from "../helpers/chat.ts";
import type { TestGateway } from "../helpers/gateway.ts";

const MODEL = "anthropic/claude-sonnet-4.5";
/** The catalogue's prices for MODEL (USD per token): base, and above 200 000 prompt tokens. */
const BASE = { prompt: "0.000003", completion: "0.000015", read: "0.0000003" };
const LONG = { prompt: "0.000006", completion: "0.0000225", read: "0.0000006" };

function expectedNano(
  g: TestGateway,
  p: typeof BASE,
  u: { input: number; read: number; output: number },
): bigint {
  const { usdRub, markupFactor } = g.gw.ctx.rates;
  const usd: Dec = [
    mulInt(parseDec(p.prompt), u.input),
    mulInt(parseDec(p.read), u.read),
    mulInt(parseDec(p.completion), u.output),
  ].reduce(add);
  return ceilNano(mul(mul(usd, usdRub), markupFactor));
}

Deno.test("price tiers: past 200 000 prompt tokens Claude is debited at its long-context prices", () =>
  withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    for (const [read, prices] of [[1_000, BASE], [201_000, LONG]] as const) {
      const { data: r, response } = await c.messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: "user", content: `Hi [[mock:tokens=5,cache_read=${read}]]` }],
      }).withResponse();
      const u = r.usage;
      assert.equal(u.cache_read_input_tokens, read);
      const id = response.headers.get("x-generation-id")!;
      await g.settled();
      const gen = (await g.store.getGeneration(g.accountId, id))!;
      assert.equal(gen.status, "completed");
      assert.equal(
        gen.cost,
        expectedNano(g, prices, { input: u.input_tokens, read, output: u.output_tokens }),
        `cache_read ${read}`,
      );
    }
  }));

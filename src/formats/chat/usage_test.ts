import assert from "node:assert/strict";
import { addCost, decimalString, usageFromChat, usageToChat } from "./usage.ts";

Deno.test("usageFromChat: every figure mapped, unreported ones stay undefined", () => {
  assert.deepEqual(
    usageFromChat({
      prompt_tokens: 1200,
      completion_tokens: 310,
      total_tokens: 1510,
      prompt_tokens_details: { cached_tokens: 1024, cache_write_tokens: 64, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 288, audio_tokens: 12 },
      cost: 0.0123,
    }),
    {
      input: 1200,
      output: 310,
      cacheRead: 1024,
      cacheWrite: 64,
      reasoning: 288,
      audioOutput: 12,
      costUsd: "0.0123",
    },
  );
  assert.deepEqual(usageFromChat({ prompt_tokens: 5 }), { input: 5 });
  assert.deepEqual(usageFromChat({ prompt_tokens: null, completion_tokens: "3" }), {});
  assert.equal(usageFromChat(null), undefined);
  assert.equal(usageFromChat([1]), undefined);
});

Deno.test("usageFromChat: a call OpenRouter ran on the operator's own provider key costs its fee and the provider's charge", () => {
  const usage = (u: Record<string, unknown>) =>
    usageFromChat({ prompt_tokens: 194, completion_tokens: 2, ...u })?.costUsd;
  // BYOK: `cost` is OpenRouter's fee; the provider charged the operator's key the rest.
  assert.equal(
    usage({ cost: 0.0001, is_byok: true, cost_details: { upstream_inference_cost: 0.0019 } }),
    "0.002",
  );
  assert.equal(
    usage({ cost: 0, is_byok: true, cost_details: { upstream_inference_cost: 0.02 } }),
    "0.02",
  );
  // Otherwise `cost` is the whole charge (OpenRouter may repeat it as the upstream's).
  assert.equal(
    usage({ cost: 0.002, is_byok: false, cost_details: { upstream_inference_cost: 0.002 } }),
    "0.002",
  );
  assert.equal(usage({ cost: 0.002, cost_details: { upstream_inference_cost: 0.002 } }), "0.002");
  assert.equal(usage({ is_byok: true, cost_details: { upstream_inference_cost: 1 } }), undefined);
});

Deno.test("usageToChat: token figures, totals, cost and cost_details", () => {
  const cost = { cost: 0.5, details: { upstream_inference_input_cost: 0.1 }, usage: {} };
  assert.deepEqual(usageToChat({ ...cost, usage: { input: 10, output: 4, cacheWrite: 2 } }), {
    prompt_tokens: 10,
    completion_tokens: 4,
    total_tokens: 14,
    prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 2 },
    completion_tokens_details: { reasoning_tokens: 0 },
    cost: 0.5,
    cost_details: { upstream_inference_input_cost: 0.1 },
  });
  assert.deepEqual(addCost({ prompt_tokens: 1 }, cost), {
    prompt_tokens: 1,
    cost: 0.5,
    cost_details: { upstream_inference_input_cost: 0.1 },
  });
});

Deno.test("decimalString writes small and large numbers without an exponent", () => {
  const cases: [number, string][] = [
    [0.00000071, "0.00000071"],
    [1e-7, "0.0000001"],
    [1.5e-10, "0.00000000015"],
    [-2.5e-8, "-0.000000025"],
    [0.0123, "0.0123"],
    [12, "12"],
    [1e21, "1000000000000000000000"],
    [1.25e22, "12500000000000000000000"],
  ];
  for (const [x, s] of cases) assert.equal(decimalString(x), s);
});

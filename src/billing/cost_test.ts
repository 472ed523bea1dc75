import assert from "node:assert/strict";
import { computeCost, estimateHold, makeRates, SEARCH_RESULT_TOKENS } from "./cost.ts";

const rates = makeRates("100", "0.1"); // easy numbers: 1 USD = 100 RUB, 10 % markup
const prices = {
  prompt: "0.000001",
  completion: "0.000002",
  input_cache_read: "0.0000001",
  input_cache_write: "0.00000125",
};

Deno.test("cost of plain usage: tokens × price × rate × markup, rounded once", () => {
  const r = computeCost({ input: 1000, output: 500 }, prices, rates);
  // (1000×1e-6 + 500×2e-6) USD = 0.002 USD = 0.2 RUB; ×1.1 = 0.22 RUB
  assert.equal(r.nano, 220_000_000n);
  assert.deepEqual(r.details, {
    upstream_inference_input_cost: 0.1,
    upstream_inference_output_cost: 0.1,
  });
});

Deno.test("a broken count from an upstream is billed as a whole count, rounded up, never thrown on", () => {
  // 1 000 input and 500 output tokens: 0.22 RUB (above). A throw here would leave the call
  // unsettled, billed nothing; a count past any call's would debit what no balance holds.
  const at = (usage: Record<string, unknown>) => computeCost(usage as never, prices, rates).nano;
  assert.equal(at({ input: 999.2, output: 499.1 }), 220_000_000n); // up, as the meter counts
  for (const junk of ["1000", null, -5, Number.NaN]) {
    assert.equal(at({ input: junk, output: 500 }), 110_000_000n, String(junk));
  }
  // 100 million tokens at most: 100 USD of input, 11 000 RUB with the markup.
  assert.equal(at({ input: 1e300 }), at({ input: 100_000_000 }));
  assert.equal(at({ input: 100_000_000 }), 11_000_000_000_000n);
});

Deno.test("cached input is billed at the cache prices and not again at the prompt price", () => {
  const r = computeCost({ input: 1000, cacheRead: 600, cacheWrite: 100, output: 0 }, prices, rates);
  // uncached 300×1e-6 + 600×1e-7 + 100×1.25e-6 = 3e-4+6e-5+1.25e-4 = 4.85e-4 USD → 0.0485 RUB ×1.1
  assert.equal(r.nano, 53_350_000n);
  assert.equal(r.details.upstream_inference_cache_read_cost, 0.006);
  assert.equal(r.details.upstream_inference_cache_write_cost, 0.0125);
});

Deno.test("without a cache price, cached tokens cost the prompt price, never nothing", () => {
  const r = computeCost({ input: 100, cacheRead: 100 }, { prompt: "0.000001" }, rates);
  assert.equal(r.nano, 11_000_000n);
});

Deno.test("a fraction of a nano-rouble is rounded up once for the whole generation", () => {
  const r = computeCost(
    { input: 1, output: 1 },
    { prompt: "0.0000000001", completion: "0" },
    rates,
  );
  // 1e-10 USD ×100 ×1.1 = 1.1e-8 RUB = 11 nano exactly
  assert.equal(r.nano, 11n);
  const r2 = computeCost({ input: 1 }, { prompt: "0.00000000000001" }, rates);
  assert.equal(r2.nano, 1n);
});

Deno.test("the upstream's own reported cost wins over the price table", () => {
  const r = computeCost({ input: 1000, output: 500, costUsd: "0.004" }, prices, rates);
  assert.equal(r.nano, 440_000_000n);
  assert.equal(r.details.upstream_inference_input_cost, 0.2);
  assert.equal(r.details.upstream_inference_output_cost, 0.2);
});

Deno.test("a reported cost past what the ledger can record falls back to the price table", () => {
  // 1e11 USD is 1.1e22 nano-roubles here, past a bigint column: the store would refuse it.
  const r = computeCost({ input: 1000, output: 500, costUsd: "100000000000" }, prices, rates);
  assert.equal(r.nano, computeCost({ input: 1000, output: 500 }, prices, rates).nano);
});

Deno.test("unknown usage costs nothing but the request price", () => {
  assert.equal(computeCost({}, { ...prices, request: "0.01" }, rates).nano, 1_100_000_000n);
});

Deno.test("reasoning tokens use internal_reasoning when priced, else the completion price", () => {
  const withR = computeCost({ output: 100, reasoning: 40 }, {
    completion: "0.000002",
    internal_reasoning: "0.000003",
  }, rates);
  // 60×2e-6 + 40×3e-6 = 2.4e-4 USD → 0.024 RUB ×1.1 = 0.0264
  assert.equal(withR.nano, 26_400_000n);
  const without = computeCost({ output: 100, reasoning: 40 }, { completion: "0.000002" }, rates);
  assert.equal(without.nano, 22_000_000n);
});

Deno.test("the hold covers the prompt estimate and every allowed output token", () => {
  // Input at the dearest input price: any prompt token may be a cache write (1.25e-6 here).
  // (1000×1.25e-6 + 500×2e-6) USD = 0.00225 USD → 0.225 RUB ×1.1
  assert.equal(estimateHold(1000, 500, prices, rates), 247_500_000n);
  assert.equal(
    estimateHold(1000, 500, { prompt: "0.000001", completion: "0.000002" }, rates),
    220_000_000n,
  );
  // A one-hour cache write price is dearer still: 1000×2e-6 + 500×2e-6 = 0.003 USD.
  assert.equal(
    estimateHold(1000, 500, { ...prices, input_cache_write_1h: "0.000002" }, rates),
    330_000_000n,
  );
  assert.equal(
    estimateHold(0, 10, { completion: "0.000001", internal_reasoning: "0.000005" }, rates),
    5_500_000n,
  );
});

Deno.test("one-hour cache writes are billed at their own price; five-minute ones at the write price", () => {
  const table = { ...prices, input_cache_write_1h: "0.000002" };
  // 1000 prompt tokens: 400 uncached, 600 written (200 of them for an hour).
  // 400×1e-6 + 400×1.25e-6 + 200×2e-6 = 0.0004 + 0.0005 + 0.0004 = 0.0013 USD → 0.13 RUB ×1.1
  const r = computeCost({ input: 1000, cacheWrite: 600, cacheWrite1h: 200 }, table, rates);
  assert.equal(r.nano, 143_000_000n);
  assert.equal(r.details.upstream_inference_cache_write_cost, 0.09);
  // Without a listed 1-hour price they count as ordinary writes (the old figure).
  const plain = computeCost({ input: 1000, cacheWrite: 600, cacheWrite1h: 200 }, prices, rates);
  assert.equal(plain.nano, computeCost({ input: 1000, cacheWrite: 600 }, prices, rates).nano);
  // A 1-hour figure above the total written is capped at it.
  const capped = computeCost({ input: 1000, cacheWrite: 600, cacheWrite1h: 900 }, table, rates);
  assert.equal(
    capped.nano,
    computeCost({ input: 1000, cacheWrite: 600, cacheWrite1h: 600 }, table, rates).nano,
  );
});

Deno.test("web searches are billed per search at the web_search price, and held for", () => {
  const table = { ...prices, web_search: "0.01" };
  // 1000×1e-6 + 500×2e-6 + 3×0.01 = 0.032 USD → 3.2 RUB ×1.1
  const r = computeCost({ input: 1000, output: 500, webSearches: 3 }, table, rates);
  assert.equal(r.nano, 3_520_000_000n);
  assert.equal(r.details.upstream_inference_web_search_cost, 3);
  // A model without a search price bills none; no searches show no part.
  assert.equal(
    computeCost({ input: 1000, output: 500, webSearches: 3 }, prices, rates).nano,
    220_000_000n,
  );
  assert.equal(
    "upstream_inference_web_search_cost" in computeCost({ input: 1 }, table, rates).details,
    false,
  );
  // The hold adds the allowed searches and their results as input (SEARCH_RESULT_TOKENS each):
  // (1000 + 2×20 000)×1.25e-6 + 500×2e-6 + 2×0.01 USD = 0.07225 USD = 7.225 RUB ×1.1
  assert.equal(SEARCH_RESULT_TOKENS, 20_000);
  assert.equal(estimateHold(1000, 500, table, rates, 2), 7_947_500_000n);
  assert.equal(estimateHold(1000, 500, table, rates), 247_500_000n);
});

Deno.test("audio tokens are billed at the audio prices of an audio model, and held for", () => {
  // An audio model: text 1e-6 / 2e-6, audio 1e-5 in and 4e-5 out.
  const table = {
    prompt: "0.000001",
    completion: "0.000002",
    audio: "0.00001",
    audio_output: "0.00004",
  };
  // Input: 600 text + 400 audio; output: 100 text + 200 audio.
  // 600×1e-6 + 400×1e-5 + 100×2e-6 + 200×4e-5 = 0.0128 USD → 1.28 RUB ×1.1
  const r = computeCost(
    { input: 1000, output: 300, audioInput: 400, audioOutput: 200 },
    table,
    rates,
  );
  assert.equal(r.nano, 1_408_000_000n);
  assert.equal(r.details.upstream_inference_audio_cost, 1.2);
  // Without audio prices (a text model) audio counts as text; figures past the totals are capped.
  assert.equal(
    computeCost({ input: 1000, output: 300, audioInput: 400, audioOutput: 200 }, {
      prompt: "0.000001",
      completion: "0.000002",
    }, rates).nano,
    computeCost({ input: 1000, output: 300 }, { prompt: "0.000001", completion: "0.000002" }, rates)
      .nano,
  );
  assert.equal(
    computeCost({ input: 10, output: 0, audioInput: 50 }, table, rates).nano,
    computeCost({ input: 10, output: 0, audioInput: 10 }, table, rates).nano,
  );
  // The hold of an audio model is at its audio prices: 1000×1e-5 + 300×4e-5 = 0.022 USD.
  assert.equal(estimateHold(1000, 300, table, rates), 2_420_000_000n);
  // A model with an audio input price only (Gemini's, Voxtral's) is held at its text prices,
  // unless the prompt carries audio: 1000×1e-5 + 300×2e-6 = 0.0106 USD.
  const gemini = { prompt: "0.000001", completion: "0.000002", audio: "0.00001" };
  assert.equal(estimateHold(1000, 300, gemini, rates), 176_000_000n);
  assert.equal(estimateHold(1000, 300, gemini, rates, 0, true), 1_166_000_000n);
});

Deno.test("image output tokens are billed at the image output price, and held for", () => {
  // An image model through chat: text 5e-7 / 3e-6, images 6e-5 out (Gemini's).
  const table = { prompt: "0.0000005", completion: "0.000003", image_output: "0.00006" };
  // Output: 10 text + 1290 image. 100×5e-7 + 10×3e-6 + 1290×6e-5 = 0.07748 USD → 7.748 RUB ×1.1
  const r = computeCost({ input: 100, output: 1300, imageOutput: 1290 }, table, rates);
  assert.equal(r.nano, 8_522_800_000n);
  assert.equal(r.details.upstream_inference_output_cost, 7.743);
  // Without an image price image tokens are output like any other; never more of them than
  // the output.
  const text = { prompt: "0.0000005", completion: "0.000003" };
  assert.equal(
    computeCost({ input: 100, output: 1300, imageOutput: 1290 }, text, rates).nano,
    computeCost({ input: 100, output: 1300 }, text, rates).nano,
  );
  assert.equal(
    computeCost({ input: 100, output: 1300, imageOutput: 5000 }, table, rates).nano,
    computeCost({ input: 100, output: 1300, imageOutput: 1300 }, table, rates).nano,
  );
  // The hold covers every allowed output token at the image price: 100×5e-7 + 1000×6e-5.
  assert.equal(estimateHold(100, 1000, table, rates), 6_605_500_000n);
});

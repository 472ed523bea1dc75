import assert from "node:assert/strict";
import { tieredPrices } from "./tiers.ts";

const BASE = { prompt: "0.000003", completion: "0.000015", input_cache_read: "0.0000003" };
const BY_SIZE = [
  { min_prompt_tokens: 32000, prompt: "0.000004", completion: "0.00002" },
  { min_prompt_tokens: 200000, prompt: "0.000006", completion: "0.0000225" },
];
// DeepSeek's shape: UTC HHMM windows, one wrapping past midnight.
const BY_HOUR = [
  { utc_start: 1000, utc_end: 100, prompt: "0.00000066" },
  { utc_start: 100, utc_end: 400, prompt: "0.00000132" },
  { utc_start: 400, utc_end: 600, prompt: "0.00000066" },
  { utc_start: 600, utc_end: 1000, prompt: "0.00000132" },
];
const at = (hhmm: string) => Date.parse(`2026-11-24T${hhmm}:00Z`);

Deno.test("tiers: by prompt size, the largest tier passed wins; up to the first, the base table", () => {
  const noon = at("12:00");
  assert.equal(tieredPrices(BASE, BY_SIZE, 32_000, noon), BASE);
  assert.deepEqual(tieredPrices(BASE, BY_SIZE, 32_001, noon), {
    ...BASE,
    prompt: "0.000004",
    completion: "0.00002",
  });
  assert.deepEqual(tieredPrices(BASE, BY_SIZE, 250_000, noon), {
    prompt: "0.000006",
    completion: "0.0000225",
    // A key the tier does not name keeps the base price.
    input_cache_read: "0.0000003",
  });
  assert.equal(tieredPrices(BASE, undefined, 250_000, noon), BASE);
  assert.equal(tieredPrices(BASE, [], 250_000, noon), BASE);
});

Deno.test("tiers: by UTC time of day, windows [start, end) and past midnight", () => {
  const promptAt = (hhmm: string) => tieredPrices(BASE, BY_HOUR, 10, at(hhmm)).prompt;
  assert.equal(promptAt("00:59"), "0.00000066"); // 10:00–01:00, wrapped
  assert.equal(promptAt("01:00"), "0.00000132");
  assert.equal(promptAt("03:59"), "0.00000132");
  assert.equal(promptAt("04:00"), "0.00000066");
  assert.equal(promptAt("06:30"), "0.00000132");
  assert.equal(promptAt("10:00"), "0.00000066");
  assert.equal(promptAt("23:59"), "0.00000066");
});

Deno.test("tiers: a tier without a condition, or with an unreadable window, is not applied", () => {
  const odd = [
    { prompt: "1" },
    { utc_start: 2500, utc_end: 100, prompt: "2" },
    { utc_start: "0100", utc_end: 400, prompt: "3" },
    { min_prompt_tokens: 10, prompt: "not a price", completion: "0.00005" },
  ];
  assert.deepEqual(tieredPrices(BASE, odd, 100, at("02:00")), { ...BASE, completion: "0.00005" });
});

import assert from "node:assert/strict";
import { publicPrice, publicPricing, type Rates } from "./pricing.ts";

const rates: Rates = { usdRub: "92.5", markup: "0.05" };

Deno.test("a USD price becomes roubles with markup, exactly", () => {
  // 0.000001 × 92.5 × 1.05 = 0.000097125
  assert.equal(publicPrice("0.000001", rates), "0.000097125");
  assert.equal(publicPrice("0.0000025", rates), "0.0002428125");
  assert.equal(publicPrice("0.04", rates), "3.885");
});

Deno.test("zero stays zero and the dynamic marker stays -1", () => {
  assert.deepEqual(publicPricing({ prompt: "-1", completion: "-1", request: "0" }, rates), {
    prompt: "-1",
    completion: "-1",
    request: "0",
  });
  assert.equal(publicPrice("0.000", rates), "0");
});

Deno.test("prices are plain decimals, never exponents, at most twelve decimals", () => {
  const tiny = publicPrice("0.000000005", rates); // 5e-9 USD
  assert.equal(tiny, "0.000000485625");
  const repeating = publicPrice("0.0000000833333333333333", rates); // …0.00000809374999… rounded
  assert.equal(repeating, "0.00000809375");
  for (const p of [tiny, repeating, publicPrice("1e-7", rates)]) {
    assert.doesNotMatch(p, /e/i);
    assert.ok((p.split(".")[1] ?? "").length <= 12, p);
  }
});

Deno.test("every key is converted and none is added or dropped", () => {
  const out = publicPricing(
    { prompt: "0.000002", completion: "0.000008", image_output: "0.00003" },
    {
      usdRub: "100",
      markup: "0",
    },
  );
  assert.deepEqual(out, { prompt: "0.0002", completion: "0.0008", image_output: "0.003" });
});

Deno.test("a malformed price is an error, not a silent zero", () => {
  assert.throws(() => publicPricing({ prompt: "cheap" }, rates));
});

Deno.test("publicPrice: the listed price is the one debits are computed from, to its last digit", () => {
  // 0.0000000375 USD × 92.5 × 1.05: thirteen decimals, none rounded away.
  assert.equal(publicPrice("0.0000000375", { usdRub: "92.5", markup: "0.05" }), "0.0000036421875");
});

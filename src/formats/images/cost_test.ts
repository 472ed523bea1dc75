import assert from "node:assert/strict";
import { Catalogue } from "../../catalogue/catalogue.ts";
import { makeRates } from "../../billing/cost.ts";
import { nanoToRub } from "../../billing/money.ts";
import { imageCost, imageHold, megapixels, priceShape } from "./cost.ts";
import type { ImageParams } from "./request.ts";

const catalogue = await Catalogue.load();
const rates = makeRates("100", "0"); // 1 USD = 100 RUB, no markup: easy figures
const model = (slug: string) => catalogue.resolve(slug)!;
const params = (p: Partial<ImageParams> = {}): ImageParams => ({
  prompt: "abcdefgh", // 2 counted tokens
  n: 1,
  responseFormat: "b64_json",
  references: [],
  ...p,
});

Deno.test("image prices: the three shapes", () => {
  const recraft = model("recraft/recraft-v4.1");
  assert.deepEqual(priceShape(recraft, recraft.pricing, params()), {
    kind: "per_image",
    usd: "0.035",
  });
  const flux = model("black-forest-labs/flux.2-pro");
  assert.deepEqual(priceShape(flux, flux.pricing, params()), {
    kind: "megapixel",
    usdPerMp: "0.03",
  });
  const gpt = model("openai/gpt-image-1");
  assert.deepEqual(priceShape(gpt, gpt.pricing, params()), {
    kind: "token",
    input: "0.00001",
    output: "0.00004",
  });
  assert.equal(megapixels({ size: "1024x1024" }), "1.048576");
  assert.equal(megapixels({ resolution: "2K" }), "4.194304");
  assert.equal(megapixels({}), "1.048576");
});

Deno.test("image cost: per image × images returned, hold for n", () => {
  const m = model("recraft/recraft-v4.1");
  const bill = imageCost(
    m,
    m.pricing,
    params(),
    { images: 2, inputTokens: 5, outputTokens: 99 },
    rates,
  );
  assert.equal(nanoToRub(bill.cost.nano), 7); // 2 × 0.035 × 100
  assert.deepEqual(bill.tokens, { input: 5, output: 99 });
  assert.equal(bill.source, "upstream");
  assert.equal(nanoToRub(imageHold(m, m.pricing, params(), 3, rates)), 10.5);
});

Deno.test("image cost: per megapixel by size", () => {
  const m = model("black-forest-labs/flux.2-pro");
  const bill = imageCost(m, m.pricing, params({ size: "2000x1000" }), { images: 1 }, rates);
  assert.equal(nanoToRub(bill.cost.nano), 6); // 2 MP × 0.03 × 100
});

Deno.test("image cost: tokens reported, tokens counted, and the provider's own cost", () => {
  const m = model("openai/gpt-image-1");
  const reported = imageCost(m, m.pricing, params(), {
    images: 1,
    inputTokens: 10,
    outputTokens: 272,
  }, rates);
  // 10 × 0.00001 + 272 × 0.00004 = 0.01098 USD
  assert.equal(nanoToRub(reported.cost.nano), 1.098);
  assert.equal(reported.source, "upstream");
  const counted = imageCost(m, m.pricing, params({ quality: "low" }), { images: 2 }, rates);
  assert.deepEqual(counted.tokens, { input: 2, output: 816 });
  assert.equal(counted.source, "counted");
  const own = imageCost(m, m.pricing, params(), { images: 1, costUsd: "0.05" }, rates);
  assert.equal(nanoToRub(own.cost.nano), 5);
  assert.equal(own.source, "upstream");
  // The hold counts every asked image at the dearest estimate the request leaves open (no
  // quality, no size: high quality, oblong), and references.
  const hold = imageHold(m, m.pricing, params({ references: ["https://e/x.png"] }), 2, rates);
  // (2 + 1290) × 0.00001 + 2 × 6240 × 0.00004 = 0.51212 USD
  assert.equal(nanoToRub(hold), 51.212);
});

Deno.test("image hold: the provider's own token table by quality and size covers what it bills", () => {
  const m = model("openai/gpt-image-1");
  const holdTokens = (p: Partial<ImageParams>) =>
    // 1 image, 2 prompt tokens at 0.00001, output at 0.00004 USD, 100 RUB a dollar
    Math.round((nanoToRub(imageHold(m, m.pricing, params(p), 1, rates)) / 100 - 0.00002) / 0.00004);
  // OpenAI's published output tokens of gpt-image-1 (1024², 1024×1536, 1536×1024).
  const billed: Record<string, number[]> = {
    low: [272, 408, 400],
    medium: [1056, 1584, 1568],
    high: [4160, 6240, 6208],
  };
  const sizes = ["1024x1024", "1024x1536", "1536x1024"];
  for (const [quality, tokens] of Object.entries(billed)) {
    sizes.forEach((size, i) => {
      const q = quality as ImageParams["quality"];
      assert.ok(holdTokens({ quality: q, size }) >= tokens[i], `${quality} ${size}`);
      assert.ok(holdTokens({ size }) >= tokens[i], `no quality, ${size}`);
      assert.ok(holdTokens({ quality: "auto", size }) >= tokens[i], `auto, ${size}`);
      assert.ok(holdTokens({ quality: q }) >= tokens[i], `${quality}, no size`);
    });
  }
  // A square low-quality image is held at its own figure, not the dearest.
  assert.equal(holdTokens({ quality: "low", size: "1024x1024" }), 272);
});

Deno.test("image cost: a provider's price table overrides the catalogue's", () => {
  const m = model("openai/gpt-image-1");
  const bill = imageCost(
    m,
    { prompt: "0", image_output: "0.0001" },
    params(),
    { images: 1, inputTokens: 10, outputTokens: 100 },
    rates,
  );
  assert.equal(nanoToRub(bill.cost.nano), 1);
});

Deno.test("image cost: text and image input at their own prices when the provider splits them", () => {
  const m = model("openai/gpt-image-2"); // input_text 0.000005, input_image 0.000008
  const split = imageCost(m, m.pricing, params(), {
    images: 1,
    inputTokens: 514,
    inputImageTokens: 500,
    outputTokens: 272,
  }, rates);
  // 14 × 0.000005 + 500 × 0.000008 + 272 × 0.00003 = 0.01223 USD
  assert.equal(nanoToRub(split.cost.nano), 1.223);
  assert.deepEqual(split.tokens, { input: 514, output: 272 });
  // Not split by the provider: all input at the listing's prompt price.
  const whole = imageCost(m, m.pricing, params(), {
    images: 1,
    inputTokens: 14,
    outputTokens: 272,
  }, rates);
  // 14 × 0.000008 + 272 × 0.00003 = 0.008272 USD
  assert.equal(nanoToRub(whole.cost.nano), 0.8272);
  const textOnly = imageCost(m, m.pricing, params(), {
    images: 1,
    inputTokens: 14,
    inputImageTokens: 0,
    outputTokens: 272,
  }, rates);
  // 14 × 0.000005 + 272 × 0.00003 = 0.00823 USD
  assert.equal(nanoToRub(textOnly.cost.nano), 0.823);
});

/**
 * What an image call costs: the hold before it (from the parameters and the image count)
 * and the debit after (from what the provider reported and the images it returned). Three
 * price shapes occur in the catalogue (design note in ../shared/catalogue/PROVENANCE.md):
 *   - per image, by resolution or quality (`image.prices`, or a unit price per image);
 *   - per megapixel of output (`image.unit_prices`, unit "megapixel");
 *   - per token (`pricing.image_output`, else `completion`; prompt at `prompt`).
 * A cost the upstream reports itself (OpenRouter `usage.cost`) wins, as for text.
 * Everything goes through computeCost, so markup and rounding are the text pipeline's.
 */
import type { CatalogueModel } from "../../catalogue/catalogue.ts";
import { computeCost, type CostResult, type PriceTable, type Rates } from "../../billing/cost.ts";
import { estimateTokens } from "../../billing/count.ts";
import { cmp, formatDec, mul, parseDec } from "../../billing/money.ts";
import type { Usage } from "../../events/usage.ts";
import type { ImageParams } from "./request.ts";

export type PriceShape =
  | { kind: "per_image"; usd: string }
  | { kind: "megapixel"; usdPerMp: string }
  | { kind: "token"; input: string; output: string };

/**
 * Output tokens of one image when the provider does not say (gpt-image and Gemini tables).
 * gpt-image's count grows with quality and size: a square 1024×1024 image is the cheapest,
 * the oblong ones (1024×1536, 1536×1024) the dearest of each quality. Without a quality (or
 * `auto`) the provider may choose high, and without a known size it may choose an oblong one:
 * the hold must cover that, so the estimate is the dearest of what the request leaves open.
 */
export function tokensPerImage(
  p: Pick<ImageParams, "quality" | "resolution" | "size">,
): number {
  const square = p.size === "1024x1024";
  switch (p.quality) {
    case "high":
      return square ? 4160 : 6240;
    case "medium":
      return square ? 1056 : 1584;
    case "low":
      return square ? 272 : 408;
  }
  switch (p.resolution) {
    case "4K":
      return 2520;
    case "2K":
      return 1680;
    case "1K":
      return 1290;
    case "512":
      return 750;
  }
  return square ? 4160 : 6240;
}

/** Input tokens of one reference image when the provider does not say. */
export const referenceTokens = 1290;

const MEGAPIXELS: Record<string, string> = {
  "512": "0.262144",
  "1K": "1.048576",
  "2K": "4.194304",
  "4K": "16.777216",
};

export function megapixels(p: Pick<ImageParams, "size" | "resolution">): string {
  const m = /^(\d+)x(\d+)$/.exec(p.size ?? "");
  if (m) return formatDec({ n: BigInt(Number(m[1]) * Number(m[2])), scale: 6 });
  return MEGAPIXELS[p.resolution ?? ""] ?? MEGAPIXELS["1K"];
}

function valid(v: string | undefined): v is string {
  if (v === undefined || v === "") return false;
  try {
    return parseDec(v).n >= 0n;
  } catch {
    return false;
  }
}

function dearest(values: string[]): string | undefined {
  let best: string | undefined;
  for (const v of values.filter(valid)) {
    if (best === undefined || cmp(parseDec(v), parseDec(best)) > 0) best = v;
  }
  return best;
}

/** The price shape of a model for given parameters; `prices` is the provider's table. */
export function priceShape(
  model: CatalogueModel,
  prices: PriceTable,
  p: Pick<ImageParams, "quality" | "resolution" | "size">,
): PriceShape {
  const caps = model.image;
  const perImage = caps?.prices;
  if (perImage && Object.keys(perImage).length > 0) {
    const usd = (p.resolution && perImage[p.resolution]) ||
      (p.quality && perImage[p.quality]) || perImage["default"] ||
      dearest(Object.values(perImage))!;
    return { kind: "per_image", usd };
  }
  const out = caps?.unit_prices?.find((u) => u.billable === "output_image");
  if (out?.unit === "image") return { kind: "per_image", usd: out.usd };
  if (out?.unit === "megapixel") return { kind: "megapixel", usdPerMp: out.usd };
  const tokenOut = [
    prices.image_output,
    prices.image_token,
    out?.unit === "token" ? out.usd : undefined,
    prices.completion,
  ].find(valid) ?? "0";
  const inText = caps?.unit_prices?.find((u) => u.billable === "input_text" && u.unit === "token");
  const tokenIn = [prices.prompt, inText?.usd].find(valid) ?? "0";
  return { kind: "token", input: tokenIn, output: tokenOut };
}

export interface ImageOutcome {
  /** Images the provider returned. */
  images: number;
  /** Reported by the provider, when it did. */
  inputTokens?: number;
  /** The part of `inputTokens` that was images, when the provider said. */
  inputImageTokens?: number;
  outputTokens?: number;
  costUsd?: string;
}

export interface ImageBill {
  cost: CostResult;
  tokens: { input?: number; output?: number };
  source: "upstream" | "counted";
}

/**
 * The cost of `outcome` (after the call) or of the estimate (before it: `images` = the
 * count asked for, nothing reported).
 */
export function imageCost(
  model: CatalogueModel,
  prices: PriceTable,
  p: ImageParams,
  outcome: ImageOutcome,
  rates: Rates,
): ImageBill {
  const shape = priceShape(model, prices, p);
  const refs = p.references.length;
  const extras: PriceTable = { request: prices.request, image: prices.image };
  let usage: Usage;
  let table: PriceTable;
  let source: ImageBill["source"] = "upstream";
  const tokens = { input: outcome.inputTokens, output: outcome.outputTokens };
  switch (shape.kind) {
    case "per_image":
    case "megapixel": {
      // One "output unit" per image at the per-image price.
      const each = shape.kind === "per_image"
        ? shape.usd
        : formatDec(mul(parseDec(shape.usdPerMp), parseDec(megapixels(p))));
      usage = { input: 0, output: outcome.images, costUsd: outcome.costUsd };
      table = { ...extras, completion: each };
      break;
    }
    case "token": {
      let input = outcome.inputTokens;
      let output = outcome.outputTokens;
      if (input === undefined) {
        input = estimateTokens(p.prompt) + refs * referenceTokens;
        if (outcome.costUsd === undefined) source = "counted";
      }
      if (output === undefined) {
        output = outcome.images * tokensPerImage(p);
        if (outcome.costUsd === undefined) source = "counted";
      }
      tokens.input = input;
      tokens.output = output;
      usage = { input, output, costUsd: outcome.costUsd };
      table = { ...extras, prompt: shape.input, completion: shape.output };
      const split = inputSplit(model, prices, input, outcome.inputImageTokens);
      if (split) {
        // Text and image input at their own prices (gpt-image-2: 5 and 8 USD per million);
        // the image tokens are the generation's input images, at the per-token image price.
        usage.input = split.text;
        table = { ...table, prompt: split.textUsd, image: split.imageUsd };
        return {
          cost: computeCost(usage, table, rates, { images: split.image }),
          tokens,
          source,
        };
      }
      break;
    }
  }
  return { cost: computeCost(usage, table, rates, { images: refs }), tokens, source };
}

/**
 * Input tokens split into text and image where the catalogue prices them apart and the
 * provider reported how many were images; undefined otherwise (all input at one price).
 */
function inputSplit(
  model: CatalogueModel,
  prices: PriceTable,
  input: number,
  imageTokens: number | undefined,
) {
  if (imageTokens === undefined || imageTokens > input) return undefined;
  // A per-image input price would be counted twice; a provider's own price table (one that
  // differs from the catalogue's) is not the catalogue's unit prices.
  if (valid(prices.image) && parseDec(prices.image).n > 0n) return undefined;
  if (prices.prompt !== model.pricing.prompt) return undefined;
  const unit = (billable: string) =>
    model.image?.unit_prices?.find((u) => u.billable === billable && u.unit === "token")?.usd;
  const textUsd = unit("input_text");
  const imageUsd = unit("input_image");
  if (textUsd === undefined || imageUsd === undefined) return undefined;
  return { text: input - imageTokens, image: imageTokens, textUsd, imageUsd };
}

/** The hold: the estimate for `n` images, nothing reported yet. */
export function imageHold(
  model: CatalogueModel,
  prices: PriceTable,
  p: ImageParams,
  n: number,
  rates: Rates,
): bigint {
  return imageCost(model, prices, p, { images: n }, rates).cost.nano;
}

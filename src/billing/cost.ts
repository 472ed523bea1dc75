import type { Usage } from "../events/usage.ts";
import {
  add,
  ceilNano,
  cmp,
  type Dec,
  isZero,
  mul,
  mulInt,
  nanoToRub,
  parseDec,
  pow10,
  roundNano,
  ZERO,
} from "./money.ts";

/**
 * Pure cost arithmetic. Prices are USD decimal strings per token (the catalogue's, or a
 * provider's override); the result is nano-roubles, rounded up once per generation.
 */
export interface Rates {
  usdRub: Dec;
  /** 1 + MARKUP. */
  markupFactor: Dec;
}

export function makeRates(usdRub: string, markup: string): Rates {
  return { usdRub: parseDec(usdRub), markupFactor: add(parseDec("1"), parseDec(markup)) };
}

export type PriceTable = Record<string, string | undefined>;

export interface CostResult {
  /** The debit, nano-roubles, markup included. */
  nano: bigint;
  /** Roubles before markup, by part (only non-zero parts besides input and output). */
  details: Record<string, number>;
}

/** Parsed prices: a catalogue has a few thousand distinct strings, parsed once each. */
const parsed = new Map<string, Dec>();

/** A price key as an exact decimal; missing, malformed or dynamic ("-1") prices count as 0. */
function price(prices: PriceTable, key: string): Dec {
  const v = prices[key];
  if (v === undefined || v === "") return ZERO;
  let d = parsed.get(v);
  if (d === undefined) {
    try {
      d = parseDec(v);
      if (d.n < 0n) d = ZERO;
    } catch {
      d = ZERO;
    }
    if (parsed.size < 100_000) parsed.set(v, d);
  }
  return d;
}

/**
 * The USD parts of a usage at a price table. Cached tokens are billed at the cache price
 * when the model lists one, else at the prompt price: a catalogue entry without a cache
 * price must never make cached input free. Reasoning tokens are part of `output`; they are
 * billed at `internal_reasoning` when the model lists it, else as ordinary output. Cache
 * writes with a one-hour lifetime are billed at `input_cache_write_1h` when listed (Anthropic
 * charges them 2× input against 1.25× for five minutes), else as ordinary writes. Web
 * searches the upstream ran are billed per search at `web_search`. Audio tokens are billed at
 * `audio` (input) and `audio_output` when the model lists them, image output tokens at
 * `image_output` (both as part of the output cost).
 */
export function usdParts(reported: Usage, prices: PriceTable, extra?: { images?: number }) {
  const usage = billable(reported);
  const input = usage.input ?? 0;
  const cacheRead = usage.cacheRead ?? 0;
  const cacheWrite = usage.cacheWrite ?? 0;
  const cacheWrite1h = Math.min(usage.cacheWrite1h ?? 0, cacheWrite);
  const output = usage.output ?? 0;
  const reasoningPrice = price(prices, "internal_reasoning");
  const reasoning = isZero(reasoningPrice) ? 0 : Math.min(usage.reasoning ?? 0, output);
  // Audio at its own prices where the model lists them (else as text), never more of it than
  // the uncached input and the output that are not reasoning.
  const audioInPrice = price(prices, "audio");
  const audioOutPrice = price(prices, "audio_output");
  const audioIn = isZero(audioInPrice)
    ? 0
    : Math.min(usage.audioInput ?? 0, Math.max(0, input - cacheRead - cacheWrite));
  const audioOut = isZero(audioOutPrice) ? 0 : Math.min(usage.audioOutput ?? 0, output - reasoning);
  const imageOutPrice = price(prices, "image_output");
  const imageOut = isZero(imageOutPrice)
    ? 0
    : Math.min(usage.imageOutput ?? 0, Math.max(0, output - reasoning - audioOut));
  const prompt = price(prices, "prompt");
  const readPrice = price(prices, "input_cache_read");
  const listedWrite = price(prices, "input_cache_write");
  const writePrice = isZero(listedWrite) ? prompt : listedWrite;
  const listedWrite1h = price(prices, "input_cache_write_1h");
  const write1hPrice = isZero(listedWrite1h) ? writePrice : listedWrite1h;
  const parts: Record<string, Dec> = {
    upstream_inference_input_cost: mulInt(
      prompt,
      Math.max(0, input - cacheRead - cacheWrite - audioIn),
    ),
    upstream_inference_output_cost: add(
      mulInt(price(prices, "completion"), output - reasoning - audioOut - imageOut),
      mulInt(imageOutPrice, imageOut),
    ),
    upstream_inference_audio_cost: add(
      mulInt(audioInPrice, audioIn),
      mulInt(audioOutPrice, audioOut),
    ),
    upstream_inference_cache_read_cost: mulInt(isZero(readPrice) ? prompt : readPrice, cacheRead),
    upstream_inference_cache_write_cost: add(
      mulInt(writePrice, cacheWrite - cacheWrite1h),
      mulInt(write1hPrice, cacheWrite1h),
    ),
    upstream_inference_reasoning_cost: mulInt(reasoningPrice, reasoning),
    upstream_inference_request_cost: price(prices, "request"),
    upstream_inference_image_cost: mulInt(price(prices, "image"), count(extra?.images)),
    upstream_inference_web_search_cost: mulInt(price(prices, "web_search"), usage.webSearches ?? 0),
  };
  return parts;
}

/** More tokens than any call has (the longest contexts hold a few million): a broken figure. */
const COUNT_MAX = 100_000_000;

/**
 * A reported count as billed: a whole number from 0 to COUNT_MAX, a fraction rounded up (as
 * the meter rounds its own counts). Upstreams are trusted for their counts, but one broken
 * figure (`1.5`, `"x"`, `-5`, `1e300`) must neither throw in the integer arithmetic below —
 * the call would end unsettled, billed nothing — nor make a debit no balance could hold.
 */
function count(v: unknown): number {
  return typeof v === "number" && v > 0 ? Math.min(Math.ceil(v), COUNT_MAX) : 0;
}

/** `usage` with every count billable (above); a figure not reported stays unreported. */
function billable(usage: Usage): Usage {
  const out: Usage = { ...usage };
  for (const k of Object.keys(out) as (keyof Usage)[]) {
    if (k !== "costUsd" && out[k] !== undefined) {
      (out as Record<string, unknown>)[k] = count(out[k]);
    }
  }
  return out;
}

/**
 * The largest debit the ledger can record (its bigint columns). A reported cost past it is
 * unreadable, not a debit: refused by the store, it would fail its settlement batch on every
 * retry, and every settlement queued behind it would never land.
 */
const debitMax = 2n ** 63n - 1n;

/** A USD amount as nano-roubles debited: at the rate, with the markup, rounded up once. */
function debitNano(usd: Dec, rates: Rates): bigint {
  return ceilNano(mul(mul(usd, rates.usdRub), rates.markupFactor));
}

/** The always-present parts of `cost_details`; the others appear when non-zero. */
const ALWAYS = new Set(["upstream_inference_input_cost", "upstream_inference_output_cost"]);

/**
 * Cost of one generation. When the upstream reported its own cost (USD), it wins: the total
 * is that figure, and the itemised parts are the price table's scaled to it (or all input
 * when the table has nothing to scale).
 */
export function computeCost(
  usage: Usage,
  prices: PriceTable,
  rates: Rates,
  extra?: { images?: number },
): CostResult {
  const parts = usdParts(usage, prices, extra);
  let totalUsd = Object.values(parts).reduce(add, ZERO);
  let scale: [Dec, Dec] | undefined;
  if (usage.costUsd !== undefined) {
    let reported: Dec | undefined;
    try {
      reported = parseDec(usage.costUsd);
    } catch { /* an unreadable upstream figure falls back to the price table */ }
    if (reported && reported.n >= 0n && debitNano(reported, rates) <= debitMax) {
      if (isZero(totalUsd)) {
        for (const k of Object.keys(parts)) parts[k] = ZERO;
        parts.upstream_inference_input_cost = reported;
      } else scale = [reported, totalUsd];
      totalUsd = reported;
    }
  }
  const nano = debitNano(totalUsd, rates);
  const details: Record<string, number> = {};
  for (const [k, usd] of Object.entries(parts)) {
    let rubNano = roundNano(mul(usd, rates.usdRub));
    if (scale) {
      // Display-only proportional split; the debit above is exact.
      const [num, den] = scale;
      const n = rubNano * num.n * pow10(den.scale);
      const d = den.n * pow10(num.scale);
      rubNano = d === 0n ? 0n : (n + d / 2n) / d;
    }
    if (rubNano !== 0n || ALWAYS.has(k)) details[k] = nanoToRub(rubNano);
  }
  return { nano, details };
}

/**
 * Input tokens held for the results of one web search: a page of results runs to some
 * thousands of tokens, and each later step of the model reads them again.
 */
export const SEARCH_RESULT_TOKENS = 20_000;

/**
 * The hold for a call before it runs: the prompt estimate at the dearest input price (prompt
 * or a cache write: any prompt token may be written to the cache) plus every allowed output
 * token at the dearest output price (completion, reasoning, audio, image), plus the web
 * searches the request allows. Rounded up; the real cost can only exceed it when the upstream
 * reports more prompt tokens than estimated or runs more searches than allowed (see README,
 * "Spend safety").
 */
export function estimateHold(
  promptTokens: number,
  maxOutputTokens: number,
  prices: PriceTable,
  rates: Rates,
  webSearches = 0,
  audioInput = false,
): bigint {
  // A prompt that carries audio is held at the audio price (Voxtral's is a thousand times
  // its text price), as is every prompt of an audio model (one that lists an audio output
  // price, which may answer in audio too). Other calls are not: every text call to a model
  // that also hears (Gemini) would be held at its audio price.
  const audio = audioInput || !isZero(price(prices, "audio_output"));
  const inKeys = ["prompt", "input_cache_write", "input_cache_write_1h"];
  const inPrice = dearest(prices, audio ? [...inKeys, "audio"] : inKeys);
  const outPrice = dearest(prices, [
    "completion",
    "internal_reasoning",
    "audio_output",
    "image_output",
  ]);
  // Every search's results join the input the upstream bills (Anthropic, and OpenAI's search
  // content tokens), on top of the per-search price.
  const input = promptTokens + webSearches * SEARCH_RESULT_TOKENS;
  const usd = add(
    add(mulInt(inPrice, input), mulInt(outPrice, maxOutputTokens)),
    add(price(prices, "request"), mulInt(price(prices, "web_search"), webSearches)),
  );
  return ceilNano(mul(mul(usd, rates.usdRub), rates.markupFactor));
}

/** The highest of some prices of a table. */
function dearest(prices: PriceTable, keys: string[]): Dec {
  let max = ZERO;
  for (const k of keys) {
    const p = price(prices, k);
    if (cmp(p, max) > 0) max = p;
  }
  return max;
}

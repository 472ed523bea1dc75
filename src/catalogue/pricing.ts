import { DYNAMIC_PRICE } from "./catalogue.ts";
import { add, type Dec, formatDec, isZero, mul, parseDec, roundDec } from "../billing/money.ts";

/**
 * Public prices: the upstream's USD price per token (or request, image, search) in roubles
 * with the service's markup — usd × USD_RUB × (1 + MARKUP) — computed exactly and shown as
 * plain decimal strings (design §4, §5).
 */
export interface Rates {
  /** Roubles per US dollar, e.g. "92.5" (config USD_RUB). */
  usdRub: string;
  /** Fraction added on top, e.g. "0.05" for 5 % (config MARKUP). */
  markup: string;
}

/**
 * Display precision: 18 decimals, so the listing shows the very price a debit is computed
 * from (a customer multiplying it by tokens gets the bill to the nano-rouble), yet cuts the
 * tail a catalogue price written as a repeating decimal ("0.0000000833333333333333") would
 * drag in.
 */
const publicPriceDecimalsMax = 18;

/** usd × USD_RUB × (1 + MARKUP) for every key; "-1" (dynamic) stays "-1", "0" stays "0". */
export function publicPricing(
  pricingUsd: Record<string, string>,
  rates: Rates,
): Record<string, string> {
  const factor = rubFactor(rates);
  const out: Record<string, string> = {};
  for (const [key, usd] of Object.entries(pricingUsd)) out[key] = convert(usd, factor);
  return out;
}

/** One price, as `publicPricing` renders it (for image prices and the like). */
export function publicPrice(usd: string, rates: Rates): string {
  return convert(usd, rubFactor(rates));
}

function rubFactor(rates: Rates): Dec {
  return mul(parseDec(rates.usdRub), add(parseDec("1"), parseDec(rates.markup)));
}

function convert(usd: string, factor: Dec): string {
  if (usd.trim() === DYNAMIC_PRICE) return DYNAMIC_PRICE;
  const price = parseDec(usd);
  if (isZero(price)) return "0";
  return formatDec(roundDec(mul(price, factor), publicPriceDecimalsMax));
}

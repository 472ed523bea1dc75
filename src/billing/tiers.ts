import type { PriceTable } from "./cost.ts";

/**
 * Price tiers: the catalogue's `pricing_overrides`, prices that replace some of a model's base
 * prices above a prompt size (`min_prompt_tokens`: the long-context rates of Anthropic, Google
 * and others) or within a time of day (`utc_start`/`utc_end`, UTC as HHMM: DeepSeek's peak
 * hours). The upstream bills at the tier, so the debit and the hold must too.
 */
export type RawTiers = readonly Record<string, unknown>[];

interface Tier {
  minPromptTokens?: number;
  /** Minutes of the UTC day, [from, to); from > to wraps past midnight. */
  window?: [number, number];
  prices: Record<string, string>;
}

/** Each catalogue entry's list is parsed once. */
const parsed = new WeakMap<RawTiers, Tier[]>();

const PRICE = /^\d+(\.\d+)?$/;

function minutesOfHhmm(v: unknown): number | undefined {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 2400 || v % 100 >= 60) {
    return undefined;
  }
  return Math.floor(v / 100) * 60 + (v % 100);
}

function parse(raw: RawTiers): Tier[] {
  const tiers: Tier[] = [];
  for (const r of raw) {
    const tier: Tier = { prices: {} };
    for (const [k, v] of Object.entries(r)) {
      if (typeof v === "string" && PRICE.test(v)) tier.prices[k] = v;
    }
    if (typeof r.min_prompt_tokens === "number") tier.minPromptTokens = r.min_prompt_tokens;
    if ("utc_start" in r || "utc_end" in r) {
      const from = minutesOfHhmm(r.utc_start);
      const to = minutesOfHhmm(r.utc_end);
      // A window that cannot be read is never in force: its prices cannot be placed in time.
      if (from === undefined || to === undefined) continue;
      tier.window = [from, to];
    }
    // A tier without a condition has no stated meaning; it is not applied.
    if (tier.minPromptTokens === undefined && tier.window === undefined) continue;
    tiers.push(tier);
  }
  return tiers;
}

function inWindow([from, to]: [number, number], minute: number): boolean {
  if (from === to) return true;
  return from < to ? minute >= from && minute < to : minute >= from || minute < to;
}

/**
 * The prices in force for a generation of `promptTokens` (input, cached included) started at
 * `at` (epoch ms): the base prices with every matching tier's prices laid over them in the
 * catalogue's order (tiers by size come smallest first, so the largest that applies wins).
 * The base table itself when no tier applies.
 */
export function tieredPrices(
  base: PriceTable,
  raw: RawTiers | undefined,
  promptTokens: number,
  at: number,
): PriceTable {
  if (!raw || raw.length === 0) return base;
  let tiers = parsed.get(raw);
  if (!tiers) parsed.set(raw, tiers = parse(raw));
  const d = new Date(at);
  const minute = d.getUTCHours() * 60 + d.getUTCMinutes();
  let out: PriceTable | undefined;
  for (const t of tiers) {
    // "Above": Anthropic's long-context price starts past 200 000 input tokens, not at it.
    if (t.minPromptTokens !== undefined && promptTokens <= t.minPromptTokens) continue;
    if (t.window && !inWindow(t.window, minute)) continue;
    out = { ...(out ?? base), ...t.prices };
  }
  return out ?? base;
}

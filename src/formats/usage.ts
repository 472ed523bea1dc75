/**
 * Reading an upstream's usage object into the internal `Usage`, for the formats whose figures
 * map one to one (chat, responses): each format names where each figure sits.
 */
import type { Usage } from "../events/usage.ts";
import { decimalString, num, obj } from "./json.ts";
import { add, formatDec, parseDec } from "../billing/money.ts";

/** The token figures of `Usage`. */
type Figure = Exclude<keyof Usage, "costUsd">;

/** Where each figure sits in a format's usage object, as a path of keys. */
export type UsageFields = { readonly [F in Figure]?: readonly string[] };

/**
 * A usage object → internal usage: the figures at `fields` that are finite numbers, and the
 * USD `cost` OpenRouter adds (as a decimal string, see `reportedCost`); fields not reported
 * stay undefined.
 */
export function readUsage(raw: unknown, fields: UsageFields): Usage | undefined {
  const u = obj(raw);
  if (!u) return undefined;
  const out: Usage = {};
  for (const [figure, path] of Object.entries(fields) as [Figure, readonly string[]][]) {
    let v: unknown = u;
    for (const key of path) v = obj(v)?.[key];
    const n = num(v);
    if (n !== undefined) out[figure] = n;
  }
  const cost = reportedCost(u);
  if (cost !== undefined) out.costUsd = cost;
  return out;
}

/**
 * What a call cost by OpenRouter's usage: its `cost`, what it charged — and, on a call it ran
 * with the operator's own provider key (`is_byok`), what that provider charged the key,
 * `cost_details.upstream_inference_cost`, which `cost` leaves out (it is OpenRouter's fee
 * alone, nothing at all within the free allowance:
 * https://openrouter.ai/docs/use-cases/usage-accounting). The call's price is both. Every
 * endpoint's usage (text, embeddings, images) is read through here.
 */
export function reportedCost(u: Record<string, unknown>): string | undefined {
  const cost = num(u.cost);
  if (cost === undefined) return undefined;
  const upstream = u.is_byok === true
    ? num(obj(u.cost_details)?.upstream_inference_cost)
    : undefined;
  if (upstream === undefined || upstream < 0) return decimalString(cost);
  return formatDec(add(parseDec(decimalString(cost)), parseDec(decimalString(upstream))));
}

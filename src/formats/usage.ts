/**
 * Reading an upstream's usage object into the internal `Usage`, for the formats whose figures
 * map one to one (chat, responses): each format names where each figure sits.
 */
import type { Usage } from "../events/usage.ts";
import { decimalString, num, obj } from "./json.ts";

/** The token figures of `Usage`. */
type Figure = Exclude<keyof Usage, "costUsd">;

/** Where each figure sits in a format's usage object, as a path of keys. */
export type UsageFields = { readonly [F in Figure]?: readonly string[] };

/**
 * A usage object → internal usage: the figures at `fields` that are finite numbers, and the
 * USD `cost` OpenRouter adds (as a decimal string); fields not reported stay undefined.
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
  const cost = num(u.cost);
  if (cost !== undefined) out.costUsd = decimalString(cost);
  return out;
}

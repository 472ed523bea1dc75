/**
 * Responses `usage` ⇄ internal `Usage`. Responses' `input_tokens` already counts the cached
 * tokens (`input_tokens_details.cached_tokens` is a part of it), which is the internal
 * convention, so the figures map one to one:
 *
 * | responses                                  | internal  |
 * |--------------------------------------------|-----------|
 * | input_tokens                               | input     |
 * | input_tokens_details.cached_tokens         | cacheRead |
 * | input_tokens_details.cache_write_tokens    | cacheWrite|
 * | output_tokens                              | output    |
 * | output_tokens_details.reasoning_tokens     | reasoning |
 * | cost (OpenRouter's responses API, USD)     | costUsd   |
 *
 * OpenAI's Response type has `cache_write_tokens` beside `cached_tokens` (required in its
 * SDKs' types: a Python client reads `None` where it is missing), as OpenRouter's does: the
 * gateway writes it always, a write billed (Claude's prompt cache, at its write price) or 0.
 */
import type { CostReport } from "../../events/event.ts";
import type { Usage } from "../../events/usage.ts";
import { type Obj, obj } from "../json.ts";
import { readUsage, type UsageFields } from "../usage.ts";

/** Where responses puts each figure (the table above). */
const RESPONSES_USAGE: UsageFields = {
  input: ["input_tokens"],
  output: ["output_tokens"],
  cacheRead: ["input_tokens_details", "cached_tokens"],
  cacheWrite: ["input_tokens_details", "cache_write_tokens"],
  reasoning: ["output_tokens_details", "reasoning_tokens"],
};

/** An upstream responses usage object → internal usage; fields not reported stay undefined. */
export function usageFromResponses(raw: unknown): Usage | undefined {
  return readUsage(raw, RESPONSES_USAGE);
}

/**
 * The usage of a finished Response: its `usage` figures, and the web searches it ran — one
 * per `web_search_call` output item, each billed per search (the format counts them nowhere
 * else).
 */
export function usageOfResponse(r: Obj | undefined): Usage | undefined {
  const u = usageFromResponses(r?.usage);
  let searches = 0;
  if (Array.isArray(r?.output)) {
    for (const item of r.output) if (obj(item)?.type === "web_search_call") searches++;
  }
  if (searches === 0) return u;
  return { ...u, webSearches: searches };
}

/**
 * The usage object the gateway reports, built from what was billed (`cost.usage`, after the
 * meter's fall-backs). The wire wants integers, so a figure still unknown is written as 0.
 */
export function usageToResponses(cost: CostReport): Obj {
  const u = cost.usage;
  const input = u.input ?? 0;
  const output = u.output ?? 0;
  const inputDetails: Obj = {
    cached_tokens: u.cacheRead ?? 0,
    cache_write_tokens: u.cacheWrite ?? 0,
  };
  return {
    input_tokens: input,
    input_tokens_details: inputDetails,
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: input + output,
    cost: cost.cost,
    cost_details: cost.details,
  };
}

/**
 * An upstream usage object (pass-through) with the gateway's `cost` and `cost_details` added;
 * when the upstream sent none, the billed usage stands in. `cache_write_tokens` is written when
 * the upstream left it out (OpenAI's answers did before the field came), as on every other
 * route: the SDKs' types require it.
 */
export function addCost(usage: unknown, cost: CostReport): Obj {
  const u = obj(usage);
  if (!u) return usageToResponses(cost);
  const out: Obj = { ...u, cost: cost.cost, cost_details: cost.details };
  const details = obj(u.input_tokens_details);
  if (typeof details?.cache_write_tokens !== "number") {
    out.input_tokens_details = { ...details, cache_write_tokens: cost.usage.cacheWrite ?? 0 };
  }
  return out;
}

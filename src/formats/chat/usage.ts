/**
 * Chat `usage` ⇄ internal `Usage`. Chat's `prompt_tokens` already counts cached tokens, which
 * is the internal convention, so the figures map one to one:
 *
 * | chat                                            | internal     |
 * |-------------------------------------------------|--------------|
 * | prompt_tokens                                   | input        |
 * | completion_tokens                               | output       |
 * | prompt_tokens_details.cached_tokens             | cacheRead    |
 * | prompt_tokens_details.cache_write_tokens (OR)   | cacheWrite   |
 * | completion_tokens_details.reasoning_tokens      | reasoning    |
 * | cost (OpenRouter, USD number)                   | costUsd      |
 */
import type { CostReport } from "../../events/event.ts";
import type { Usage } from "../../events/usage.ts";
import { decimalString, num, type Obj, obj } from "../json.ts";

export { decimalString };

/** An upstream chat usage object → internal usage; fields not reported stay undefined. */
export function usageFromChat(raw: unknown): Usage | undefined {
  const u = obj(raw);
  if (!u) return undefined;
  const out: Usage = {};
  const input = num(u.prompt_tokens);
  const output = num(u.completion_tokens);
  if (input !== undefined) out.input = input;
  if (output !== undefined) out.output = output;
  const pd = obj(u.prompt_tokens_details);
  if (pd) {
    const read = num(pd.cached_tokens);
    const write = num(pd.cache_write_tokens);
    if (read !== undefined) out.cacheRead = read;
    if (write !== undefined) out.cacheWrite = write;
  }
  const reasoning = num(obj(u.completion_tokens_details)?.reasoning_tokens);
  if (reasoning !== undefined) out.reasoning = reasoning;
  const cost = num(u.cost);
  if (cost !== undefined) out.costUsd = decimalString(cost);
  return out;
}

/** The chat usage object the gateway reports: token figures plus `cost` and `cost_details`. */
export function usageToChat(cost: CostReport): Obj {
  const u = cost.usage;
  const input = u.input ?? 0;
  const output = u.output ?? 0;
  const promptDetails: Obj = { cached_tokens: u.cacheRead ?? 0 };
  if (u.cacheWrite !== undefined) promptDetails.cache_write_tokens = u.cacheWrite;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: promptDetails,
    completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    cost: cost.cost,
    cost_details: cost.details,
  };
}

/** An upstream usage object with the gateway's `cost` and `cost_details` added (a copy). */
export function addCost(usage: Obj, cost: CostReport): Obj {
  return { ...usage, cost: cost.cost, cost_details: cost.details };
}

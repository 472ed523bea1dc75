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
 * | prompt_tokens_details.audio_tokens              | audioInput   |
 * | completion_tokens_details.audio_tokens          | audioOutput  |
 * | completion_tokens_details.image_tokens          | imageOutput  |
 * | cost (OpenRouter, USD number)                   | costUsd      |
 */
import type { CostReport } from "../../events/event.ts";
import type { Usage } from "../../events/usage.ts";
import { num, type Obj, obj } from "../json.ts";
import { readUsage, type UsageFields } from "../usage.ts";

/** Re-exported from its shared home (json.ts) for existing importers. */
export { decimalString } from "../json.ts";

/** Where chat puts each figure (the table above). */
const CHAT_USAGE: UsageFields = {
  input: ["prompt_tokens"],
  output: ["completion_tokens"],
  cacheRead: ["prompt_tokens_details", "cached_tokens"],
  cacheWrite: ["prompt_tokens_details", "cache_write_tokens"],
  reasoning: ["completion_tokens_details", "reasoning_tokens"],
};

/** An upstream chat usage object → internal usage; fields not reported stay undefined. */
export function usageFromChat(raw: unknown): Usage | undefined {
  const u = readUsage(raw, CHAT_USAGE);
  // Every OpenAI usage reports audio, nearly always 0: only a count that says something is
  // kept, so a text call's usage keeps its shape.
  if (u) {
    const r = raw as Obj;
    const audioIn = num(obj(r.prompt_tokens_details)?.audio_tokens);
    const audioOut = num(obj(r.completion_tokens_details)?.audio_tokens);
    const imageOut = num(obj(r.completion_tokens_details)?.image_tokens);
    if (audioIn) u.audioInput = audioIn;
    if (audioOut) u.audioOutput = audioOut;
    if (imageOut) u.imageOutput = imageOut;
  }
  return u;
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

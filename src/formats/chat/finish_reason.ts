import type { FinishReason } from "../../events/event.ts";

/**
 * Chat `finish_reason` ⇄ internal reason. OpenAI sends stop, length, tool_calls,
 * content_filter and the legacy function_call; OpenRouter adds `error` and passes some
 * vendors' own words through (https://openrouter.ai/docs/api-reference/overview#finish-reason),
 * so those are folded in too. Anything else is a natural stop.
 */
export function finishFromChat(reason: string): FinishReason {
  switch (reason) {
    case "length":
    case "max_tokens":
      return "length";
    case "tool_calls":
    case "function_call":
    case "tool_use":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    case "error":
      return "error";
    default:
      return "stop";
  }
}

/** Chat has no separate stop-sequence reason: the spec folds it into `stop`. */
export function finishToChat(reason: FinishReason): string {
  switch (reason) {
    case "stop":
    case "stop_sequence":
      return "stop";
    case "length":
    case "tool_calls":
    case "content_filter":
    case "error":
      return reason;
    default: {
      const never: never = reason;
      return never;
    }
  }
}

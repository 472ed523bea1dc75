/**
 * `stop_reason` of the messages format and the internal finish reason, both ways
 * (https://docs.anthropic.com/en/api/handling-stop-reasons).
 */
import type { FinishReason } from "../../events/event.ts";

export type MessagesStopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "pause_turn"
  | "refusal"
  | "model_context_window_exceeded";

/**
 * - `pause_turn`: a server tool loop paused; the turn is complete as far as the client of
 *   another format can act on it, so it is a normal stop.
 * - `refusal`: the model's safety classifiers stopped it — chat calls that `content_filter`.
 * - `model_context_window_exceeded`: generation hit the context window, a length stop.
 * - anything unknown (vendors add reasons) or missing: a normal stop.
 */
export function fromMessagesStopReason(reason: unknown): FinishReason {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "stop_sequence":
      return "stop_sequence";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "stop";
  }
}

/** `error` has no stop reason of its own (the stream ends with an error event instead). */
export function toMessagesStopReason(reason: FinishReason): MessagesStopReason {
  switch (reason) {
    case "stop":
    case "error":
      return "end_turn";
    case "stop_sequence":
      return "stop_sequence";
    case "length":
      return "max_tokens";
    case "tool_calls":
      return "tool_use";
    case "content_filter":
      return "refusal";
    default: {
      const never: never = reason;
      return never;
    }
  }
}

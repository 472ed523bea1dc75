/**
 * Responses has no finish reason: a response ends `completed`, `incomplete` (with
 * `incomplete_details.reason`, https://platform.openai.com/docs/api-reference/responses/object)
 * or `failed`. A completed response that asked for a function call is the `tool_calls` finish
 * of the other formats.
 */
import type { FinishReason } from "../../events/event.ts";

/** Upstream status (+ incomplete reason) → internal reason. */
export function finishFromResponses(
  status: string | undefined,
  incompleteReason: string | undefined,
  sawToolCall: boolean,
): FinishReason {
  if (status === "incomplete") {
    return incompleteReason === "content_filter" ? "content_filter" : "length";
  }
  if (status === "failed") return "error";
  return sawToolCall ? "tool_calls" : "stop";
}

/** What the gateway's final response object says for an internal reason. */
export interface ResponsesEnding {
  status: "completed" | "incomplete";
  incomplete_details: { reason: "max_output_tokens" | "content_filter" } | null;
}

export function finishToResponses(reason: FinishReason | undefined): ResponsesEnding {
  switch (reason) {
    case "length":
      return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
    case "content_filter":
      return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
    case undefined:
    case "stop":
    case "stop_sequence":
    case "tool_calls":
    case "error":
      return { status: "completed", incomplete_details: null };
    default: {
      const never: never = reason;
      return never;
    }
  }
}

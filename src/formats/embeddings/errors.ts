import { chatErrorTable } from "../chat/errors.ts";
import type { GatewayError } from "../../http/gateway_error.ts";
import { decodeOpenAIError } from "../upstream_errors.ts";

/**
 * Upstream errors of the OpenAI-style non-chat endpoints, in the statuses of the spec's
 * embeddings table: the chat mapping (credentials and missing models are the gateway's own
 * 502, moderation 403, rate limits 429, timeouts 504), except that a provider's own 408 stays
 * a 408 ("provider-side request timeout").
 */
export function decodeEmbeddingsError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  return decodeOpenAIError(status, body, retryAfter, { ...chatErrorTable, keep408: true });
}

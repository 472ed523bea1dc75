/**
 * Upstream openai-chat errors → `GatewayError`: the OpenAI-style table of upstream_errors.ts,
 * with chat's own readings: only `insufficient_quota` on a 429 is our quota gone, a
 * provider's 408 is a timeout like any other (504), and an error inside a stream is always
 * the provider's failure.
 */
import type { GatewayError } from "../../http/gateway_error.ts";
import {
  decodeOpenAIError,
  type OpenAIErrorTable,
  providerError,
  readUpstreamError,
  UPSTREAM_MESSAGE_CHARS_MAX,
  upstreamMessage,
} from "../upstream_errors.ts";

/** Re-exported from its shared home (upstream_errors.ts) for existing importers. */
export { sanitizeMessage } from "../upstream_errors.ts";

/** Chat's reading of the OpenAI-style error table. */
export const chatErrorTable: OpenAIErrorTable = {
  quota: /insufficient_quota/,
  textCharsMax: UPSTREAM_MESSAGE_CHARS_MAX,
};

/**
 * Maps an upstream error response (status and parsed JSON body, or its text) to the error
 * the client gets. `retryAfter` (seconds, from the upstream's `Retry-After`) is kept on 429.
 */
export function decodeChatError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  return decodeOpenAIError(status, body, retryAfter, chatErrorTable);
}

/** An `error` object inside a stream (OpenRouter) or a 200 body: always a provider error. */
export function decodeChatStreamError(error: unknown): GatewayError {
  return providerError(upstreamMessage(readUpstreamError({ error }), "the model provider failed"));
}

import { decodeChatError } from "../chat/errors.ts";
import { GatewayError } from "../../http/gateway_error.ts";

/**
 * Upstream errors of the OpenAI-style non-chat endpoints, in the statuses of the spec's
 * embeddings table: the chat mapping (credentials and missing models are the gateway's own
 * 502, moderation 403, rate limits 429, timeouts 504), except that a provider's own 408 stays
 * a 408 ("provider-side request timeout").
 */
export function decodeEmbeddingsError(status: number, body: unknown): GatewayError {
  if (status === 408) return new GatewayError(408, "the model provider timed out the request");
  return decodeChatError(status, body);
}

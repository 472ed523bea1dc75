import { chatErrorTable } from "../chat/errors.ts";
import { type GatewayError, reshaped } from "../../http/gateway_error.ts";
import { CONTEXT_LENGTH_EXCEEDED, decodeOpenAIError } from "../upstream_errors.ts";

/**
 * Upstream errors of the OpenAI-style non-chat endpoints, in the statuses of the spec's
 * embeddings table: the chat mapping (credentials and missing models are the gateway's own
 * 502, moderation 403, rate limits 429, timeouts 504), except that a provider's own 408 stays
 * a 408 ("provider-side request timeout"). A context overflow is a plain 400 here: the coded
 * envelope shows an error's own `code` on a 400, and its codes are the gateway's
 * (`INVALID_REQUEST`), not OpenAI's lower-case one that text clients branch on.
 */
export function decodeEmbeddingsError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  const e = decodeOpenAIError(status, body, retryAfter, { ...chatErrorTable, keep408: true });
  return e.code === CONTEXT_LENGTH_EXCEEDED ? reshaped(e, { code: undefined }) : e;
}

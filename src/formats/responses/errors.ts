/**
 * Upstream openai-responses errors → `GatewayError`, by the spec's table for the responses
 * endpoint: the OpenAI-style mapping of upstream_errors.ts, where a provider's 408 stays a 408
 * and billing or credit words on a 429 also mean our quota is gone (→ 502). Every message
 * that does go out is sanitised.
 *
 * The same mapping serves errors that arrive inside a 200 stream (`error` events and
 * `response.failed`), keyed by the error `code` instead of the HTTP status.
 */
import { GatewayError, overloadedAsProviderError, reshaped } from "../../http/gateway_error.ts";
import { errorBody, RETRY_AFTER_DEFAULT_S } from "../../http/envelopes.ts";
import {
  accountError,
  decodeOpenAIError,
  type OpenAIErrorTable,
  providerError,
  readUpstreamError,
  sanitizeMessage,
  upstreamMessage,
} from "../upstream_errors.ts";

const QUOTA = /insufficient_quota|billing|credit/i;

/** The responses endpoint's reading of the OpenAI-style error table (upstream_errors.ts). */
const responsesErrorTable: OpenAIErrorTable = { quota: QUOTA, keep408: true };

/**
 * Maps an upstream error response (status and parsed JSON body, or its text). `retryAfter`
 * (seconds, from the upstream's `Retry-After`) is kept on 429.
 */
export function decodeResponsesError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  return decodeOpenAIError(status, body, retryAfter, responsesErrorTable);
}

/**
 * Codes of errors inside a stream (https://platform.openai.com/docs/api-reference/responses/object,
 * `error.code`) that are the client's to fix or to wait out; anything else is a provider failure.
 */
const STREAM_CODE_STATUS: Record<string, number> = {
  rate_limit_exceeded: 429,
  invalid_prompt: 400,
  context_length_exceeded: 400,
  invalid_image: 400,
  invalid_image_format: 400,
  invalid_base64_image: 400,
  invalid_image_url: 400,
  image_too_large: 400,
  image_too_small: 400,
  image_parse_error: 400,
  image_content_policy_violation: 400,
  invalid_image_mode: 400,
  image_file_too_large: 400,
  unsupported_image_media_type: 400,
  empty_image_file: 400,
  failed_to_download_image: 400,
  image_file_not_found: 400,
};

/** The API's code for an error in `STREAM_CODE_STATUS`, or undefined. */
const streamCode = (code: string | undefined) =>
  code !== undefined && Object.hasOwn(STREAM_CODE_STATUS, code) ? code : undefined;

/**
 * An error object from an `error` event or a `response.failed` response. A code the client
 * can act on is kept for the gateway's own `error` event and `response.failed`: Codex tells a
 * full context window (`context_length_exceeded`) from other refusals only by it.
 */
export function decodeResponsesStreamError(error: unknown): GatewayError {
  const up = readUpstreamError({ error });
  const code = streamCode(up.code) ?? streamCode(up.type);
  const status = code === undefined ? undefined : STREAM_CODE_STATUS[code];
  if (status === 429) {
    return new GatewayError(429, upstreamMessage(up, "rate limited by the model provider"), {
      code,
    });
  }
  if (status === 400) {
    return new GatewayError(400, upstreamMessage(up, "the model provider rejected the request"), {
      code,
    });
  }
  if (QUOTA.test(`${up.code ?? ""} ${up.type ?? ""}`)) {
    return accountError("the model provider's quota for the gateway is exhausted");
  }
  // A server error's text is about the provider's servers, not our account: safe to show.
  if (up.code === "server_error" && up.message) return providerError(sanitizeMessage(up.message));
  return providerError("the model provider failed");
}

/**
 * The string `code` of a response object's `error` for a gateway error, from the values the
 * API documents (clients such as Codex branch on them): the error's own code where it is one
 * of them (an upstream's `context_length_exceeded`), else one for its status.
 */
export function responsesErrorCode(e: GatewayError): string {
  const own = streamCode(e.code);
  if (own !== undefined && STREAM_CODE_STATUS[own] === e.status) return own;
  switch (e.status) {
    case 400:
      return "invalid_prompt";
    case 429:
      return "rate_limit_exceeded";
    default:
      return "server_error";
  }
}

/** OpenAI's words for the wait of a rate limit, the only place Codex reads it in a stream. */
const TRY_AGAIN = /try again in\s*\d/i;

/**
 * A rate limit as a stream tells it: its message says "try again in Ns", where Codex takes the
 * wait of an in-stream rate limit from (without it Codex retries on its own schedule, a few
 * hundred ms, into the same limit). An upstream's own words that say so stay (OpenAI's); else
 * the wait is the upstream's, or what the gateway's HTTP 429 names when it said none (an
 * Anthropic stream's rate_limit_error comes without one).
 */
export function withRetryHint(e: GatewayError): GatewayError {
  if (e.status !== 429 || TRY_AGAIN.test(e.message)) return e;
  const wait = e.retryAfter ?? RETRY_AFTER_DEFAULT_S;
  return reshaped(e, {
    message: `${e.message.replace(/\.$/, "")}. Please try again in ${wait}s.`,
    retryAfter: wait,
  });
}

/**
 * The `error` event: OpenAI's fields at its top level (`code`, `message`, `param`: what typed
 * handlers of the event read), and the generic envelope's `error` object beside them (what
 * the SDKs raise as the APIError).
 */
export function streamError(error: GatewayError): Record<string, unknown> {
  // An overloaded provider is this endpoint's 502, in the stream as in a status line.
  const e = withRetryHint(overloadedAsProviderError(error));
  return {
    code: responsesErrorCode(e),
    message: e.message,
    param: null,
    ...errorBody("generic", e),
  };
}

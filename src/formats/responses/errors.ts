/**
 * Upstream openai-responses errors → `GatewayError`, by the spec's table for the responses
 * endpoint. The status class is kept where the client can act on it (400, 403 moderation,
 * 408, 429); what is the gateway's own problem with its provider (our key rejected, our quota
 * or credit gone, the model missing there, a 5xx) becomes 502 with a message that does not
 * repeat the provider's words about our account. Every message that does go out is sanitised.
 *
 * The same mapping serves errors that arrive inside a 200 stream (`error` events and
 * `response.failed`), keyed by the error `code` instead of the HTTP status.
 */
import { GatewayError } from "../../http/gateway_error.ts";
import { sanitizeMessage } from "../chat/errors.ts";

type Obj = Record<string, unknown>;

interface UpstreamError {
  message?: string;
  code?: string;
  type?: string;
}

const MODERATION = /moderat|flagged|content[ _-]?policy|safety/i;
const QUOTA = /insufficient_quota|billing|credit/i;

const provider = (message: string) => new GatewayError(502, message);

/**
 * Maps an upstream error response (status and parsed JSON body, or its text). `retryAfter`
 * (seconds, from the upstream's `Retry-After`) is kept on 429.
 */
export function decodeResponsesError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  const up = readUpstreamError(body);
  const words = `${up.code ?? ""} ${up.type ?? ""} ${up.message ?? ""}`;
  const msg = (fallback: string) => (up.message ? sanitizeMessage(up.message) : fallback);

  if (status === 401 || status === 402) {
    // Our provider key or credit: never the client's business, never the upstream's text.
    return provider("the model provider rejected the gateway's request");
  }
  if (status === 403) {
    return MODERATION.test(words)
      ? new GatewayError(403, msg("rejected by the provider's moderation"))
      : provider("the model provider denied access to the model");
  }
  if (status === 404) return provider("the model is not available at the provider");
  if (status === 408) return new GatewayError(408, "the model provider timed out the request");
  if (status === 504 || status === 524) {
    return new GatewayError(504, "the model provider did not answer in time");
  }
  if (status === 429) {
    if (QUOTA.test(words)) {
      return provider("the model provider's quota for the gateway is exhausted");
    }
    return new GatewayError(429, msg("rate limited by the model provider"), { retryAfter });
  }
  if (status >= 400 && status < 500) {
    return new GatewayError(400, msg("the model provider rejected the request"));
  }
  return provider(`the model provider failed (HTTP ${status})`);
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

/** An error object from an `error` event or a `response.failed` response. */
export function decodeResponsesStreamError(error: unknown): GatewayError {
  const up = readUpstreamError({ error });
  const status = STREAM_CODE_STATUS[up.code ?? ""] ?? STREAM_CODE_STATUS[up.type ?? ""];
  if (status === 429) {
    return new GatewayError(
      429,
      up.message ? sanitizeMessage(up.message) : "rate limited by the model provider",
    );
  }
  if (status === 400) {
    return new GatewayError(
      400,
      up.message ? sanitizeMessage(up.message) : "the model provider rejected the request",
    );
  }
  if (QUOTA.test(`${up.code ?? ""} ${up.type ?? ""}`)) {
    return provider("the model provider's quota for the gateway is exhausted");
  }
  // A server error's text is about the provider's servers, not our account: safe to show.
  if (up.code === "server_error" && up.message) return provider(sanitizeMessage(up.message));
  return provider("the model provider failed");
}

/**
 * The string `code` of a response object's `error` for a gateway error, from the values the
 * API documents (clients such as Codex branch on them).
 */
export function responsesErrorCode(e: GatewayError): string {
  switch (e.status) {
    case 400:
      return "invalid_prompt";
    case 429:
      return "rate_limit_exceeded";
    default:
      return "server_error";
  }
}

function readUpstreamError(body: unknown): UpstreamError {
  if (typeof body === "string") {
    try {
      return readUpstreamError(JSON.parse(body));
    } catch {
      return { message: body };
    }
  }
  if (body === null || typeof body !== "object") return {};
  const b = body as Obj;
  const e = b.error;
  if (typeof e === "string") return { message: e };
  const o = (e !== null && typeof e === "object" ? e : b) as Obj;
  return {
    message: typeof o.message === "string" ? o.message : undefined,
    code: typeof o.code === "string" ? o.code : undefined,
    type: typeof o.type === "string" ? o.type : undefined,
  };
}

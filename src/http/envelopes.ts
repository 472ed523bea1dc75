import { GatewayError } from "./gateway_error.ts";
import { CONTEXT_LENGTH_EXCEEDED } from "../formats/upstream_errors.ts";

/**
 * The five error bodies of the spec. An endpoint names its family once; every error on that
 * endpoint goes through `renderError`.
 */
export type EnvelopeFamily = "generic" | "coded" | "messages";

const MESSAGES_TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "invalid_request_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  429: "rate_limit_error",
  503: "overloaded_error",
};

export function messagesErrorType(status: number): string {
  return MESSAGES_TYPE_BY_STATUS[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

const CODED_BY_STATUS: Record<number, [type: string, code: string]> = {
  400: ["invalid_request", "INVALID_REQUEST"],
  401: ["authentication_error", "UNAUTHORIZED"],
  402: ["insufficient_balance", "INSUFFICIENT_BALANCE"],
  403: ["permission_denied", "FORBIDDEN"],
  404: ["not_found", "NOT_FOUND"],
  405: ["invalid_request", "METHOD_NOT_ALLOWED"],
  408: ["timeout", "PROVIDER_TIMEOUT"],
  429: ["rate_limit", "UPSTREAM_RATE_LIMITED"],
  500: ["internal_error", "INTERNAL_ERROR"],
  502: ["provider_error", "PROVIDER_ERROR"],
  503: ["service_unavailable", "NO_PROVIDER"],
  504: ["timeout", "PROVIDER_TIMEOUT"],
};

/** The error object of one envelope family, without the HTTP wrapping (also used in-stream). */
export function errorBody(family: EnvelopeFamily, e: GatewayError): Record<string, unknown> {
  switch (family) {
    case "generic":
      return {
        error: {
          code: e.status,
          message: e.message,
          metadata: genericMetadata(e),
          ...e.extra,
        },
      };
    case "coded": {
      const [type, code] = CODED_BY_STATUS[e.status] ?? ["api_error", "UPSTREAM_ERROR"];
      return {
        error: {
          message: e.message,
          type: e.type && e.status === 400 ? e.type : type,
          code: e.code && e.status === 400 ? e.code : (e.code ?? code),
          ...e.extra,
        },
      };
    }
    case "messages":
      return {
        type: "error",
        error: { type: messagesErrorType(e.status), message: e.message, ...e.extra },
      };
    default: {
      const never: never = family;
      throw new Error(`unknown envelope ${never}`);
    }
  }
}

/**
 * The generic envelope's `code` is the HTTP status, so a prompt past the context window is
 * named in `metadata.error_code` by OpenAI's code: LangChain (and others) tell an overflow, on
 * which they summarise the history, only by that code or Anthropic's words, not OpenAI's.
 */
function genericMetadata(e: GatewayError): Record<string, unknown> {
  if (e.code !== CONTEXT_LENGTH_EXCEEDED) return e.metadata ?? {};
  return { ...e.metadata, error_code: CONTEXT_LENGTH_EXCEEDED };
}

const JSON_HEADERS = { "content-type": "application/json" };

/**
 * Every 429 says when to come back (spec: clients take the pause from `Retry-After`); an
 * upstream that limited us without saying gets this many seconds.
 */
export const RETRY_AFTER_DEFAULT_S = 5;

export function renderError(
  family: EnvelopeFamily,
  e: GatewayError,
  headers?: HeadersInit,
): Response {
  const h = new Headers(headers);
  h.set("content-type", JSON_HEADERS["content-type"]);
  const retryAfter = e.retryAfter ?? (e.status === 429 ? RETRY_AFTER_DEFAULT_S : undefined);
  if (retryAfter !== undefined) h.set("retry-after", String(retryAfter));
  if (e.final) h.set("x-should-retry", "false");
  return new Response(JSON.stringify(errorBody(family, e)), { status: e.status, headers: h });
}

/** Our own rate limiter's body: the same on every endpoint, `error` a plain string. */
export function renderRateLimited(retryAfterSeconds: number, message = "rate limit exceeded") {
  const retryAfter = Math.max(1, Math.ceil(retryAfterSeconds));
  return new Response(JSON.stringify({ error: message, code: "RATE_LIMITED", retryAfter }), {
    status: 429,
    headers: { ...JSON_HEADERS, "retry-after": String(retryAfter) },
  });
}

/** Unknown paths and `/v1/messages/count_tokens`: plain text, not JSON. */
export function renderNotFound(): Response {
  return new Response("404 Not Found", {
    status: 404,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

/**
 * Errors of an anthropic-messages upstream, as the gateway's own `GatewayError`s. Whatever
 * concerns OUR account with the vendor (its key, its credit, its rate-limit organisation) is
 * never shown to the client: the client did nothing wrong and must not learn our details.
 * Body shape: `{type:"error", error:{type, message}, request_id?}`
 * (https://docs.anthropic.com/en/api/errors).
 */
import {
  GatewayError,
  PROVIDER_OVERLOADED as OVERLOADED_CODE,
  reshaped,
} from "../../http/gateway_error.ts";
import {
  CONTEXT_LENGTH_EXCEEDED,
  isContextOverflow,
  OUR_CREDIT,
  UPSTREAM_MESSAGE_CHARS_MAX,
} from "../upstream_errors.ts";

const PROVIDER_AUTH = "upstream provider rejected the gateway's credentials";
const PROVIDER_ACCESS_DENIED = "the model provider denied access to the model";
const PROVIDER_RATE_LIMIT = "upstream provider rate limit exceeded, retry later";
const PROVIDER_OVERLOADED = "upstream provider is overloaded, retry later";

/** The `error` object of an Anthropic error body, whatever form it came in. */
function errorObject(body: unknown): { type?: string; message?: string } {
  let b = body;
  if (typeof b === "string") {
    try {
      b = JSON.parse(b);
    } catch {
      return { message: b as string };
    }
  }
  if (typeof b !== "object" || b === null) return {};
  const e = (b as { error?: unknown }).error;
  if (typeof e !== "object" || e === null) return {};
  const { type, message } = e as { type?: unknown; message?: unknown };
  return {
    type: typeof type === "string" ? type : undefined,
    message: typeof message === "string" ? message : undefined,
  };
}

/**
 * Strips what could identify our account or leak a secret from an upstream message: keys,
 * organisation and request ids (UUIDs, `req_…`), then bounds its length.
 */
export function sanitizeUpstreamMessage(message: string): string {
  const clean = message
    .replace(/sk-ant-[\w-]+/g, "[redacted]")
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "[redacted]")
    .replace(/\breq_[A-Za-z0-9]+/g, "[redacted]");
  return clean.length > UPSTREAM_MESSAGE_CHARS_MAX
    ? clean.slice(0, UPSTREAM_MESSAGE_CHARS_MAX) + "…"
    : clean;
}

const PROVIDER_BILLING = "upstream provider billing error";

/**
 * An upstream HTTP error to the gateway's error:
 * - 402, and any error about our credit balance (Anthropic sends it as a 400) → 502, in the
 *   gateway's words;
 * - 400 / 413 / 422 → 400, upstream message sanitised (the client's request is at
 *   fault, the message helps fix it);
 * - 401 → 502: the upstream refused OUR key; never say more;
 * - 403 → 403 `permission_error`, the spec's "model access denied" (tried on every
 *   candidate first), in the gateway's own words;
 * - 404 → 502: the provider does not know the model we mapped the slug to (our catalogue);
 * - 429 → 429 with a fixed message (Anthropic's names our organisation id);
 * - 529 `overloaded_error` (and 503) → 503, which the messages envelope renders as
 *   `overloaded_error`, what Claude clients expect and retry;
 * - other 5xx and anything else → 502.
 */
export function decodeMessagesError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  const { type, message = "" } = errorObject(body);
  const metadata = { upstream_status: status, ...(type ? { upstream_error_type: type } : {}) };
  // Our account's credit at the provider, whatever status carries it: never the provider's
  // words ("Your credit balance is too low to access the Anthropic API").
  if (status === 402 || OUR_CREDIT.test(message)) {
    return accountError(PROVIDER_BILLING, metadata);
  }
  if (status === 400 || status === 413 || status === 422) {
    const text = sanitizeUpstreamMessage(message || "upstream rejected the request");
    return new GatewayError(400, text, {
      code: isContextOverflow(message) ? CONTEXT_LENGTH_EXCEEDED : "INVALID_REQUEST",
      type: "invalid_request",
      metadata,
    });
  }
  if (status === 401) return accountError(PROVIDER_AUTH, metadata);
  if (status === 403) return new GatewayError(403, PROVIDER_ACCESS_DENIED, { metadata });
  if (status === 429 || type === "rate_limit_error") {
    return new GatewayError(429, PROVIDER_RATE_LIMIT, { metadata, retryAfter });
  }
  if (status === 529 || status === 503 || type === "overloaded_error") {
    return new GatewayError(503, PROVIDER_OVERLOADED, {
      metadata,
      code: OVERLOADED_CODE,
      retryAfter,
    });
  }
  const text = message ? `upstream provider error: ${sanitizeUpstreamMessage(message)}` : "";
  // The provider does not know the model we mapped the slug to: a retry cannot help until
  // the catalogue or the provider changes (`x-should-retry: false`).
  if (status === 404) {
    return accountError(text || "the model is not available at the provider", metadata);
  }
  return providerError(text || `upstream provider error (HTTP ${status})`, metadata);
}

/**
 * An `event: error` inside an upstream stream (after HTTP 200): classified by its type, as
 * the body of an HTTP error would be. An in-stream `invalid_request_error` is the
 * provider's failure at that point, not the client's, hence 502.
 */
export function decodeMessagesStreamError(data: unknown): GatewayError {
  const { type, message = "" } = errorObject(data);
  const metadata = type ? { upstream_error_type: type } : undefined;
  switch (type) {
    case "rate_limit_error":
      return new GatewayError(429, PROVIDER_RATE_LIMIT, { metadata });
    case "overloaded_error":
      return new GatewayError(503, PROVIDER_OVERLOADED, { metadata, code: OVERLOADED_CODE });
    case "authentication_error":
    case "permission_error":
      return accountError(PROVIDER_AUTH, metadata);
    default: {
      if (OUR_CREDIT.test(message)) return accountError(PROVIDER_BILLING, metadata);
      const text = message ? `upstream provider error: ${sanitizeUpstreamMessage(message)}` : "";
      return providerError(text || "upstream provider error", metadata);
    }
  }
}

function providerError(message: string, metadata?: Record<string, unknown>): GatewayError {
  return new GatewayError(502, message, { code: "PROVIDER_ERROR", metadata });
}

/**
 * The gateway's own account at the provider (key, credit), or a model the provider does not
 * know under our catalogue's name: a retry cannot help soon.
 */
function accountError(message: string, metadata?: Record<string, unknown>): GatewayError {
  return new GatewayError(502, message, { code: "PROVIDER_ERROR", metadata, final: true });
}

/** A count in a provider's words, digits grouped or not ("128,000"). */
const COUNT = String.raw`(\d[\d,]*)`;
/**
 * The window, as OpenAI and OpenRouter ("maximum context length is N"), GPT-5 ("configured
 * limit of N") or Gemini ("maximum number of tokens allowed (N)") state it.
 */
const LIMIT = new RegExp(
  [
    String.raw`maximum context length is\s*${COUNT}`,
    String.raw`configured limit of\s*${COUNT}`,
    String.raw`maximum number of tokens allowed \(${COUNT}\)`,
  ].join("|"),
  "i",
);
/**
 * What the prompt came to: OpenAI's "resulted in N tokens", OpenRouter's "requested about N
 * tokens", Gemini's "input token count (N)".
 */
const ACTUAL = new RegExp(
  [
    String.raw`(?:resulted in|requested(?: about)?)\s*${COUNT}\s*tokens`,
    String.raw`input token count \(${COUNT}\)`,
  ].join("|"),
  "i",
);

/** The count a pattern found (the first of its alternatives that matched). */
const count = (m: RegExpMatchArray | null) => {
  const n = m?.slice(1).find((g) => g !== undefined);
  return n === undefined ? undefined : Number(n.replaceAll(",", ""));
};

/**
 * A prompt past the context window, in Anthropic's words whatever the provider said: Claude
 * Code compacts the conversation on an error that says "prompt is too long", and reads by how
 * much from "N tokens > M maximum"; OpenAI's or OpenRouter's words ended its turn instead.
 * Counts the provider did not give are left out (the words still say what happened).
 */
export function asPromptTooLong(e: GatewayError): GatewayError {
  if (e.status !== 400 || e.code !== CONTEXT_LENGTH_EXCEEDED) return e;
  // Anthropic's own words, also behind a prefix (OpenRouter's "Provider returned error: …"):
  // they lead, as Claude Code reads them.
  if (/^prompt is too long/i.test(e.message)) return e;
  const own = e.message.match(/prompt is too long.*$/is)?.[0];
  const limit = count(e.message.match(LIMIT));
  const actual = count(e.message.match(ACTUAL));
  const message = own ??
    (limit !== undefined && actual !== undefined && actual > limit
      ? `prompt is too long: ${actual} tokens > ${limit} maximum`
      : `prompt is too long: ${e.message}`);
  return reshaped(e, { message });
}

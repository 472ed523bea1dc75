/**
 * Errors of OpenAI-style upstreams (openai-chat, openai-responses, and the non-chat OpenAI
 * endpoints) → `GatewayError`. The status class is kept where the client can act on it (400,
 * 429) or the spec names it (403: moderation, or access to the model denied — after every
 * candidate said so); what is the gateway's own problem with its provider (our key
 * rejected, our quota or credit gone, the model missing there, a 5xx) becomes 502 with a
 * message that does not repeat the provider's words about our account. Timeouts are 504 (or
 * 408 where the format's table keeps the provider's own 408). Every message that does go out
 * is sanitised: nothing that looks like a credential or an account id survives.
 *
 * Each format's errors.ts keeps what is its own: which words mean "quota", how a 408 reads,
 * and how errors inside a 200 stream are classified.
 */
import { GatewayError } from "../http/gateway_error.ts";
import { type Obj } from "./json.ts";

/** The parts of an upstream error body we read, whatever its shape. */
export interface UpstreamError {
  message?: string;
  code?: string;
  type?: string;
}

/** Longest upstream message relayed to a client: a provider could send a page of HTML. */
export const UPSTREAM_MESSAGE_CHARS_MAX = 1000;

/**
 * An upstream error body (`{error: {message, code, type}}`, `{error: "…"}`, the error object
 * itself, or its JSON text) → its parts. `textCharsMax` cuts a body that is not JSON.
 */
export function readUpstreamError(body: unknown, textCharsMax = Infinity): UpstreamError {
  if (typeof body === "string") {
    try {
      return readUpstreamError(JSON.parse(body), textCharsMax);
    } catch {
      return { message: body.length > textCharsMax ? body.slice(0, textCharsMax) : body };
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

/** The upstream's message, sanitised, or `fallback` when it sent none. */
export function upstreamMessage(up: UpstreamError, fallback: string): string {
  return up.message ? sanitizeMessage(up.message) : fallback;
}

/** A 502: the provider's failure, or ours with the provider, never the client's. */
export function providerError(message: string): GatewayError {
  return new GatewayError(502, message);
}

/**
 * A 502 a retry cannot mend soon, and says so (`x-should-retry: false`): the gateway's own
 * account at the provider (key, credit, quota), or a model the provider does not know under
 * the name our catalogue maps it to.
 */
export function accountError(message: string): GatewayError {
  return new GatewayError(502, message, { final: true });
}

/** The differences between the formats' tables. */
export interface OpenAIErrorTable {
  /** What, in a 429's code, type or message, says our quota or credit is gone (→ 502). */
  quota: RegExp;
  /** The provider's own 408 stays a 408; without this it is a 504 like other timeouts. */
  keep408?: boolean;
  /** A body that is not JSON is read only up to this many characters. */
  textCharsMax?: number;
}

const MODERATION = /moderat|flagged|content[ _-]?policy|safety/i;

/**
 * OpenRouter's 404 for a request none of the model's endpoints takes ("No endpoints found that
 * support tool use", "… the provided 'tool_choice' value", "… image input"): the request's
 * doing, which the client can change (Claude Code on a model without tools, say), so its 400 in
 * OpenRouter's words — not a model missing at the provider, which its "No endpoints found for
 * <model>" is.
 */
const NO_ENDPOINT_TAKES = /no endpoints found that support/i;

/**
 * Words of a provider about the gateway's own credit with it (Anthropic sends "Your credit
 * balance is too low…" as a 400): our problem, never the client's, and another provider may
 * serve.
 */
export const OUR_CREDIT = /credit balance|billing|purchase credits/i;

/**
 * The code of a prompt past the model's context window (OpenAI's, kept on the gateway's
 * error): Codex tells a full context window only by it, and the messages endpoint answers it
 * in Anthropic's words (messages/errors.ts).
 */
export const CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded";

/**
 * How providers refuse a prompt past the context window: OpenAI's code, its chat wording
 * ("This model's maximum context length is…", GPT-5's "Input tokens exceed the configured
 * limit…"), its responses wording ("Your input exceeds the context window…"), OpenRouter's
 * ("This endpoint's maximum context length is…"), Anthropic's ("prompt is too long: …"), Gemini's
 * through OpenRouter ("The input token count (N) exceeds the maximum number of tokens allowed").
 */
const CONTEXT_OVERFLOW =
  /context_length_exceeded|maximum context length|exceeds the context window|input tokens exceed the configured limit|prompt is too long|input token count.{0,40}exceeds the maximum number of tokens/i;

/** Whether an upstream's error (its code, type and message together) is a context overflow. */
export function isContextOverflow(words: string): boolean {
  return CONTEXT_OVERFLOW.test(words);
}

/**
 * Maps an upstream error response (status and parsed JSON body, or its text) to the error
 * the client gets. `retryAfter` (seconds, from the upstream's `Retry-After`) is kept on 429.
 */
export function decodeOpenAIError(
  status: number,
  body: unknown,
  retryAfter: number | undefined,
  table: OpenAIErrorTable,
): GatewayError {
  const up = readUpstreamError(body, table.textCharsMax);
  const words = `${up.code ?? ""} ${up.type ?? ""} ${up.message ?? ""}`;
  const msg = (fallback: string) => upstreamMessage(up, fallback);

  if (status === 401 || status === 402) {
    // Our provider key or credit: never the client's business, never the upstream's text.
    return accountError("the model provider rejected the gateway's request");
  }
  if (status === 403) {
    return MODERATION.test(words)
      ? new GatewayError(403, msg("rejected by the provider's moderation"))
      : new GatewayError(403, "the model provider denied access to the model");
  }
  if (status === 404 && NO_ENDPOINT_TAKES.test(words)) {
    return new GatewayError(400, msg("no provider of the model takes this request"));
  }
  if (status === 404) return accountError("the model is not available at the provider");
  if (status === 408 && table.keep408) {
    return new GatewayError(408, "the model provider timed out the request");
  }
  if (status === 408 || status === 504 || status === 524) {
    return new GatewayError(504, "the model provider did not answer in time");
  }
  if (status === 429) {
    if (table.quota.test(words)) {
      return accountError("the model provider's quota for the gateway is exhausted");
    }
    return new GatewayError(429, msg("rate limited by the model provider"), { retryAfter });
  }
  if (status >= 400 && status < 500) {
    // OpenRouter's bare "Provider returned error" carries the vendor's own words.
    const cause = providerCause(body);
    const overflow = isContextOverflow(cause ? `${words} ${cause}` : words);
    const opts = { code: overflow ? CONTEXT_LENGTH_EXCEEDED : undefined };
    if (cause) return new GatewayError(400, sanitizeMessage(`${up.message}: ${cause}`), opts);
    return new GatewayError(400, msg("the model provider rejected the request"), opts);
  }
  // An overloaded provider (503, 529) that said when to come back: the client hears it too.
  return new GatewayError(502, `the model provider failed (HTTP ${status})`, {
    retryAfter: status === 503 || status === 529 ? retryAfter : undefined,
  });
}

const SECRET_PATTERNS: [RegExp, string][] = [
  [/\bBearer\s+[^\s"',;)\]}]+/gi, "Bearer ***"],
  // Provider key shapes: OpenAI sk-/sk-proj-, Anthropic sk-ant-, OpenRouter sk-or-, xAI,
  // Groq gsk_, Google AIza…, and our own `<prefix>_` keys.
  [/\b(?:sk|rk|pk|xai|gsk|key)[-_][A-Za-z0-9_*.-]{3,}/g, "***"],
  [/\bAIza[A-Za-z0-9_-]{10,}/g, "***"],
  // Account identifiers of the provider (OpenAI organisation and project ids).
  [/\b(?:org|proj)[-_][A-Za-z0-9]{6,}/g, "***"],
  [/\b(?:api[_-]?key|token|secret|password)\s*[=:]\s*[^\s"',;]+/gi, "***"],
  // Anything long and unbroken enough to be a token (JWTs, hex keys).
  [/[A-Za-z0-9_+=-]{40,}/g, "***"],
];

/**
 * What the model's vendor said, where OpenRouter refused a request with its bare "Provider
 * returned error" and put the vendor's own error in `error.metadata.raw` (Gemini's "function
 * call … is missing a thought_signature", a context too long): without it the client learns
 * nothing it could act on. The vendor's message when `raw` holds its error body, else `raw`.
 */
function providerCause(body: unknown): string | undefined {
  if (typeof body === "string") {
    try {
      return providerCause(JSON.parse(body));
    } catch {
      return undefined;
    }
  }
  const e = (body as Obj | null)?.error as Obj | null | undefined;
  const raw = (e?.metadata as Obj | null | undefined)?.raw;
  if (typeof e?.message !== "string" || typeof raw !== "string" || raw.trim() === "") {
    return undefined;
  }
  return readUpstreamError(raw, UPSTREAM_MESSAGE_CHARS_MAX).message ?? raw;
}

/** Removes anything that looks like a credential or account id from an upstream message. */
export function sanitizeMessage(message: string): string {
  let s = message.length > UPSTREAM_MESSAGE_CHARS_MAX
    ? message.slice(0, UPSTREAM_MESSAGE_CHARS_MAX)
    : message;
  for (const [re, by] of SECRET_PATTERNS) s = s.replace(re, by);
  return s;
}

/**
 * Upstream openai-chat errors → `GatewayError`. The status class is kept where the client can
 * act on it (400, 403 moderation, 429); what is the gateway's own problem with its provider
 * (our key rejected, our quota or credit gone, the model missing there, a 5xx) becomes 502
 * with a message that does not repeat the provider's words about our account. Timeouts are
 * 504. Every message that does go out is sanitised: nothing that looks like a credential or
 * an account id survives.
 */
import { GatewayError } from "../../http/gateway_error.ts";

type Obj = Record<string, unknown>;

/** The parts of an upstream error body we read, whatever its shape. */
interface UpstreamError {
  message?: string;
  code?: string;
  type?: string;
}

/**
 * Maps an upstream error response (status and parsed JSON body, or its text) to the error
 * the client gets. `retryAfter` (seconds, from the upstream's `Retry-After`) is kept on 429.
 */
export function decodeChatError(
  status: number,
  body: unknown,
  retryAfter?: number,
): GatewayError {
  const up = readUpstreamError(body);
  const words = `${up.code ?? ""} ${up.type ?? ""} ${up.message ?? ""}`;
  const msg = (fallback: string) => (up.message ? sanitizeMessage(up.message) : fallback);

  if (status === 401 || status === 402) {
    // Our provider key or credit: never the client's business, never the upstream's text.
    return providerError("the model provider rejected the gateway's request");
  }
  if (status === 403) {
    return MODERATION.test(words)
      ? new GatewayError(403, msg("rejected by the provider's moderation"))
      : providerError("the model provider denied access to the model");
  }
  if (status === 404) return providerError("the model is not available at the provider");
  if (status === 408 || status === 504 || status === 524) {
    return new GatewayError(504, "the model provider did not answer in time");
  }
  if (status === 429) {
    if (/insufficient_quota/.test(words)) {
      return providerError("the model provider's quota for the gateway is exhausted");
    }
    return new GatewayError(429, msg("rate limited by the model provider"), { retryAfter });
  }
  if (status >= 400 && status < 500) {
    return new GatewayError(400, msg("the model provider rejected the request"));
  }
  return providerError(`the model provider failed (HTTP ${status})`);
}

/** An `error` object inside a stream (OpenRouter) or a 200 body: always a provider error. */
export function decodeChatStreamError(error: unknown): GatewayError {
  const up = readUpstreamError({ error });
  const message = up.message ? sanitizeMessage(up.message) : "the model provider failed";
  return new GatewayError(502, message);
}

const MODERATION = /moderat|flagged|content[ _-]?policy|safety/i;

function providerError(message: string): GatewayError {
  return new GatewayError(502, message);
}

function readUpstreamError(body: unknown): UpstreamError {
  if (typeof body === "string") {
    try {
      return readUpstreamError(JSON.parse(body));
    } catch {
      return { message: body.slice(0, MESSAGE_CHARS_MAX) };
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

/** Upstream messages are cut: a provider could send a page of HTML as its error. */
const MESSAGE_CHARS_MAX = 1000;

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

/** Removes anything that looks like a credential or account id from an upstream message. */
export function sanitizeMessage(message: string): string {
  let s = message.length > MESSAGE_CHARS_MAX ? message.slice(0, MESSAGE_CHARS_MAX) : message;
  for (const [re, by] of SECRET_PATTERNS) s = s.replace(re, by);
  return s;
}

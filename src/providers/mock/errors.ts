/**
 * Error bodies in each vendor's own shape, as recorded in ../shared/fixtures/upstream:
 * OpenAI `{"error":{"message","type","param","code"}}`, Anthropic
 * `{"type":"error","error":{"type","message"},"request_id"}`.
 */

export type Vendor = "openai" | "anthropic";

const OPENAI: Record<number, [type: string, code: string | null, message: string]> = {
  400: ["invalid_request_error", null, "Mock error: the request was rejected."],
  401: [
    "invalid_request_error",
    "invalid_api_key",
    "Incorrect API key provided: bad-key. You can find your API key at https://platform.openai.com/account/api-keys.",
  ],
  403: [
    "invalid_request_error",
    "unsupported_country_region_territory",
    "Country, region, or territory not supported",
  ],
  404: [
    "invalid_request_error",
    "model_not_found",
    "The model `mock` does not exist or you do not have access to it.",
  ],
  429: [
    "requests",
    "rate_limit_exceeded",
    "Rate limit reached for requests (mock). Please try again in 1s.",
  ],
  500: [
    "server_error",
    null,
    "The server had an error while processing your request. Sorry about that!",
  ],
  503: ["server_error", null, "The engine is currently overloaded, please try again later."],
};

const ANTHROPIC: Record<number, [type: string, message: string]> = {
  400: ["invalid_request_error", "Mock error: the request was rejected."],
  401: ["authentication_error", "invalid x-api-key"],
  402: ["billing_error", "Your credit balance is too low to access the Anthropic API."],
  403: ["permission_error", "Your API key does not have permission to use the specified resource."],
  404: ["not_found_error", "model: mock"],
  413: ["request_too_large", "Request exceeds the maximum allowed number of bytes."],
  429: [
    "rate_limit_error",
    "This request would exceed the rate limit for your organization (mock).",
  ],
  500: ["api_error", "Internal server error"],
  504: ["timeout_error", "Request timed out"],
  529: ["overloaded_error", "Overloaded"],
};

export function openaiError(status: number, message?: string): string {
  const [type, code, text] = OPENAI[status] ??
    (status >= 500
      ? ["server_error", null, "The server had an error processing your request."]
      : ["invalid_request_error", null, `Mock error ${status}.`]);
  return JSON.stringify({ error: { message: message ?? text, type, param: null, code } });
}

export function anthropicError(status: number, message?: string): string {
  const [type, text] = ANTHROPIC[status] ??
    (status >= 500 ? ["api_error", "Internal server error"] : [
      "invalid_request_error",
      `Mock error ${status}.`,
    ]);
  return JSON.stringify({
    type: "error",
    error: { type, message: message ?? text },
    request_id: "req_mock" + status,
  });
}

export function vendorError(vendor: Vendor, status: number, message?: string): string {
  return vendor === "anthropic" ? anthropicError(status, message) : openaiError(status, message);
}

/** Context windows the mock's overflow answers name (Claude's and GPT-4o's). */
const ANTHROPIC_CONTEXT_TOKENS = 200_000;
const OPENAI_CONTEXT_TOKENS = 128_000;
/** Claude's window with the long-context beta flag. */
const ANTHROPIC_LONG_CONTEXT_TOKENS = 1_000_000;
export const ANTHROPIC_LONG_CONTEXT_BETA = "context-1m-2025-08-07";
/** Anthropic's refusal of the flag to an account without access to it. */
export const LONG_CONTEXT_REFUSED =
  "The long context beta is not yet available for this subscription.";

/** The window a call has: the vendor's, Anthropic's longer one when the beta flag was sent. */
export function contextWindow(protocol: string, longContext: boolean): number {
  if (protocol !== "messages") return OPENAI_CONTEXT_TOKENS;
  return longContext ? ANTHROPIC_LONG_CONTEXT_TOKENS : ANTHROPIC_CONTEXT_TOKENS;
}

/** The responses API's words for an input past the context window (no counts). */
export const RESPONSES_CONTEXT_MESSAGE =
  "Your input exceeds the context window of this model. Please adjust your input and try again.";

/**
 * A prompt past the model's context window, as each API refuses it with a 400: Anthropic's
 * "prompt is too long: N tokens > M maximum", OpenAI chat's and responses' code
 * `context_length_exceeded` (with `param`; chat's for any other protocol). `promptTokens` is
 * what the prompt held: the
 * refusal counts it on top of a full window.
 */
export function contextError(
  protocol: string,
  promptTokens: number,
  need?: { tokens: number; window: number },
): string {
  if (protocol === "messages") {
    const n = need?.tokens ?? ANTHROPIC_CONTEXT_TOKENS + promptTokens;
    const max = need?.window ?? ANTHROPIC_CONTEXT_TOKENS;
    return anthropicError(400, `prompt is too long: ${n} tokens > ${max} maximum`);
  }
  const max = need?.window ?? OPENAI_CONTEXT_TOKENS;
  const message = protocol === "responses"
    ? RESPONSES_CONTEXT_MESSAGE
    : `This model's maximum context length is ${max} tokens. However, your ` +
      `messages resulted in ${need?.tokens ?? max + promptTokens} tokens. Please reduce the ` +
      "length of the messages.";
  return JSON.stringify({
    error: {
      message,
      type: "invalid_request_error",
      param: protocol === "responses" ? "input" : "messages",
      code: "context_length_exceeded",
    },
  });
}

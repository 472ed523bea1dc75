/** What an error carries besides its status and message (the fields of the same names). */
export interface ErrorOptions {
  code?: string;
  type?: string;
  metadata?: Record<string, unknown>;
  retryAfter?: number;
  extra?: Record<string, unknown>;
  final?: boolean;
}

/**
 * The one error type of the gateway. Stages throw it; the edge renders it in the envelope of
 * the endpoint being served (see envelopes.ts). `status` decides the envelope's type names;
 * `code` is the coded envelope's machine code where the spec names one.
 */
export class GatewayError extends Error {
  readonly status: number;
  readonly code?: string;
  /** Coded envelope `type`, e.g. `invalid_model`; derived from the status when absent. */
  readonly type?: string;
  readonly metadata?: Record<string, unknown>;
  /** Seconds, for 429 and 503 answers. */
  readonly retryAfter?: number;
  /** Extra fields merged into the error object (e.g. `currentBalance` on images 402). */
  readonly extra?: Record<string, unknown>;
  /**
   * A retry cannot succeed soon (the gateway's own account at the provider: its key refused,
   * its credit or quota gone): the answer says so (`x-should-retry: false`), which both SDKs
   * and Claude Code read (Claude Code gave up after 11 requests and 3 minutes without it,
   * after one with it). Codex retries by status alone.
   */
  readonly final?: boolean;

  constructor(
    status: number,
    message: string,
    options: ErrorOptions = {},
  ) {
    super(message);
    this.name = "GatewayError";
    this.status = status;
    this.code = options.code;
    this.type = options.type;
    this.metadata = options.metadata;
    this.retryAfter = options.retryAfter;
    this.extra = options.extra;
    this.final = options.final;
  }
}

export const badRequest = (message: string, code = "INVALID_REQUEST", type = "invalid_request") =>
  new GatewayError(400, message, { code, type });

/** A slug as an error quotes it: no catalogue slug is this long, and a body may send 100 KB. */
const slugQuotedMax = 200;

/**
 * `suggestion`: the catalogue slug a bare upstream name most likely meant; `listing`: where
 * the endpoint's models are listed.
 */
export const modelNotFound = (slug: string, suggestion?: string, listing = "GET /v1/models") =>
  new GatewayError(
    400,
    `model not found: ${
      slug.length > slugQuotedMax
        ? `${JSON.stringify(slug.slice(0, slugQuotedMax))}… (${slug.length} characters)`
        : JSON.stringify(slug)
    }` + (slug.includes("/") ? "" : (
      `; models are named by catalogue slug (vendor/model, see ${listing})` +
      (suggestion ? `: did you mean ${JSON.stringify(suggestion)}?` : "")
    )),
    { code: "MODEL_NOT_FOUND", type: "invalid_model" },
  );

export const unauthorized = (message = "invalid or missing API key") =>
  new GatewayError(401, message, { code: "UNAUTHORIZED", type: "authentication_error" });

/** The spec wants the insufficient-balance message in Russian on every endpoint. */
/** `detail` says what the request needed, for a caller to act on (in Russian, like the rest). */
export const insufficientBalance = (extra?: Record<string, unknown>, detail?: string) =>
  new GatewayError(402, "Недостаточно средств на балансе" + (detail ? `: ${detail}` : ""), {
    code: "INSUFFICIENT_BALANCE",
    type: "insufficient_balance",
    extra,
  });

/**
 * The key's spend cap, not the balance, refused the hold: a 402 like the balance's (clients
 * detect it by the status), in words that point at the cap, which a top-up cannot lift.
 */
export const keySpendCapReached = (detail: string, extra?: Record<string, unknown>) =>
  new GatewayError(402, "Недостаточно лимита расходов ключа: " + detail, {
    code: "INSUFFICIENT_BALANCE",
    type: "insufficient_balance",
    extra,
  });

/**
 * No provider can serve the model now. `none`: no provider is configured at all (no key set),
 * which the client is told, as the one who started the gateway was at start-up: retries will
 * not help until a key is set.
 */
export const noProvider = (slug: string, none = false) =>
  new GatewayError(
    503,
    `no available provider for model ${JSON.stringify(slug)}` +
      (none
        ? ": the gateway has no provider key set (OPENAI_API_KEY, ANTHROPIC_API_KEY, " +
          "OPENROUTER_API_KEY)"
        : ""),
    {
      code: "NO_PROVIDER",
      type: "service_unavailable",
      retryAfter: 5,
    },
  );

/** The client left before its answer (nginx's 499): nobody reads this error; it names the end. */
export const clientClosed = () => new GatewayError(499, "client closed the request");

export const internalError = (message = "internal gateway error") =>
  new GatewayError(500, message, { code: "INTERNAL_ERROR", type: "api_error" });

/** An upstream that said it is overloaded (Anthropic's 529): Claude clients' 503. */
export const PROVIDER_OVERLOADED = "PROVIDER_OVERLOADED";

/**
 * For chat and responses, whose spec lists name a provider's temporary failure 502 and keep
 * 503 for "no provider available": an overloaded provider is the former.
 */
export function overloadedAsProviderError(e: GatewayError): GatewayError {
  if (e.status !== 503 || e.code !== PROVIDER_OVERLOADED) return e;
  return new GatewayError(502, e.message, { metadata: e.metadata, retryAfter: e.retryAfter });
}

export function isGatewayError(e: unknown): e is GatewayError {
  return e instanceof GatewayError;
}

/** The fields an error is built from: what `reshaped` may change. */
type ErrorShape = { status: number; message: string } & ErrorOptions;

/** `e` with `changes` (a key given as undefined is left out), everything else kept. */
export function reshaped(e: GatewayError, changes: Partial<ErrorShape>): GatewayError {
  const { status, message, ...options }: ErrorShape = {
    status: e.status,
    message: e.message,
    code: e.code,
    type: e.type,
    metadata: e.metadata,
    retryAfter: e.retryAfter,
    extra: e.extra,
    final: e.final,
    ...changes,
  };
  return new GatewayError(status, message, options);
}

/** `e` as an error a retry may get past (without `final`), all else kept. */
export function retryable(e: GatewayError): GatewayError {
  return reshaped(e, { final: undefined });
}

/**
 * For endpoints whose spec list has no timeout status (chat, images): a provider that did not
 * answer in time (504, a provider's 408), or one overloaded, is a 502, "model provider error"
 * / "provider generation failure; retry is sensible". Other errors pass as they are.
 */
export function timeoutAsProviderError(e: GatewayError): GatewayError {
  if (e.status !== 504 && e.status !== 408) return overloadedAsProviderError(e);
  return reshaped(e, { status: 502 });
}

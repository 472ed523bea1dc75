import { clientClosed, GatewayError } from "../http/gateway_error.ts";
import { OUR_CREDIT } from "../formats/upstream_errors.ts";
import type { Candidate } from "../providers/routing.ts";
import type { Breakers } from "../providers/routing.ts";
import type { Level, Logger } from "../lib/log.ts";
import { describeError } from "../lib/describe_error.ts";
import { deadline } from "../lib/deadlines.ts";

/**
 * One HTTP call to one candidate, with the first-byte timeout. Failures are classified with a
 * plain table: those worth another candidate (connect errors, timeouts, 408, 429, 5xx, and
 * our own credentials or credit refused) come back as `{ retry: true }`.
 */
export type UpstreamOutcome =
  | { ok: true; response: Response; abort: AbortController }
  | {
    ok: false;
    retry: boolean;
    status: number;
    body: unknown;
    error?: GatewayError;
    /** Seconds the upstream asked to wait (`retry-after-ms`, `retry-after`), if it said. */
    retryAfter?: number;
  };

const RETRYABLE = new Set([401, 402, 403, 404, 408, 409, 425, 429]);

const clientGone = (): UpstreamOutcome => ({
  ok: false,
  retry: false,
  status: 499,
  body: null,
  error: clientClosed(),
});

/** Longest wait passed on to a client: an upstream's hour-long ban is not the client's wait. */
const retryAfterMaxS = 600;

/**
 * The wait an upstream's answer asks for, in whole seconds (rounded up): `retry-after-ms`
 * (OpenAI's), else `retry-after` as seconds or an HTTP date.
 */
export function retryAfterOf(h: Headers, now = Date.now()): number | undefined {
  let s: number | undefined;
  const ms = h.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) s = Number(ms) / 1000;
  const ra = h.get("retry-after");
  if (s === undefined && ra !== null) {
    const v = ra.trim();
    if (/^\d+(\.\d+)?$/.test(v)) s = Number(v);
    else {
      const at = Date.parse(v);
      if (!Number.isNaN(at)) s = Math.max(0, (at - now) / 1000);
    }
  }
  if (s === undefined || !Number.isFinite(s)) return undefined;
  return Math.min(retryAfterMaxS, Math.max(1, Math.ceil(s)));
}

export async function send(
  c: Candidate,
  url: string,
  headers: Record<string, string>,
  body: string,
  firstByteMs: number,
  clientSignal: AbortSignal,
  log: Logger,
): Promise<UpstreamOutcome> {
  // A signal that fired already fires no listener: the client is gone, nothing is asked.
  if (clientSignal.aborted) return clientGone();
  const abort = new AbortController();
  const onClientAbort = () => abort.abort(new DOMException("client went away", "AbortError"));
  clientSignal.addEventListener("abort", onClientAbort, { once: true });
  const clearDeadline = deadline(
    firstByteMs,
    () => abort.abort(new DOMException("first byte timeout", "TimeoutError")),
  );
  try {
    const response = await fetch(url, { method: "POST", headers, body, signal: abort.signal });
    clearDeadline();
    if (response.ok) return { ok: true, response, abort };
    const text = await response.text().catch(() => "");
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch { /* keep the text */ }
    logRefusal(log, c, response.status, parsed);
    return {
      ok: false,
      retry: response.status >= 500 || RETRYABLE.has(response.status) ||
        (response.status === 400 && OUR_CREDIT.test(text)),
      status: response.status,
      body: parsed,
      retryAfter: retryAfterOf(response.headers),
    };
  } catch (e) {
    clearDeadline();
    if (clientSignal.aborted) return clientGone();
    const timeout = (e as Error)?.name === "TimeoutError" ||
      String(abort.signal.reason?.name) === "TimeoutError";
    log.log("warn", timeout ? "upstream did not answer in time" : "upstream unreachable", {
      provider: c.provider.id,
      upstream_model: c.upstreamModel,
      ...(timeout ? { timeout_ms: firstByteMs } : { cause: describeError(e) }),
    });
    return {
      ok: false,
      retry: true,
      status: timeout ? 504 : 502,
      body: null,
      error: timeout
        ? new GatewayError(504, `provider ${c.provider.id} did not answer in time`, {
          metadata: { provider_name: c.provider.id },
        })
        : new GatewayError(502, `provider ${c.provider.id} could not be reached`, {
          metadata: { provider_name: c.provider.id },
        }),
    };
  } finally {
    clientSignal.removeEventListener("abort", onClientAbort);
  }
}

/**
 * An upstream's refusal, for the operator: our credentials (401/403) are an error, its own
 * failures and a missing model a warning, a request it found wrong (the client's) debug.
 * Only the status and the error's type and code are logged: an upstream's message may quote
 * the request.
 */
function logRefusal(log: Logger, c: Candidate, status: number, body: unknown) {
  const level: Level = status === 401 || status === 403
    ? "error"
    : status >= 500 || status === 404 || status === 408 || status === 429 || status === 402
    ? "warn"
    : "debug";
  const err = (body as { error?: { type?: unknown; code?: unknown } } | null)?.error;
  log.log(level, "upstream refused the request", {
    provider: c.provider.id,
    upstream_model: c.upstreamModel,
    status,
    ...(typeof err?.type === "string" ? { type: err.type } : {}),
    ...(typeof err?.code === "string" ? { code: err.code } : {}),
  });
}

/**
 * Policy `drain` for a call whose answer comes whole: the upstream works on (and bills) after
 * the client left, so the call is kept for `ms` more to learn its usage. The signal aborts
 * that long after the client's.
 */
export function lingering(
  client: AbortSignal,
  ms: number,
): { signal: AbortSignal; dispose(): void } {
  const ctl = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onGone = () => {
    timer = setTimeout(() => ctl.abort(new DOMException("client went away", "AbortError")), ms);
  };
  if (client.aborted) onGone();
  else client.addEventListener("abort", onGone, { once: true });
  return {
    signal: ctl.signal,
    dispose() {
      clearTimeout(timer);
      client.removeEventListener("abort", onGone);
    },
  };
}

export function recordOutcome(breakers: Breakers, c: Candidate, ok: boolean) {
  if (ok) breakers.success(c.provider.id);
  else breakers.failure(c.provider.id);
}

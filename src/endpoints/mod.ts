/**
 * The non-text endpoints — embeddings, images, stored files — mounted by server.ts, and the
 * few things they share: one upstream call per candidate with failover for whole JSON
 * answers, and closing a generation exactly once.
 *
 * Both paid endpoints run the same stages as the text pipeline, without streaming:
 *   auth → limit → validate + route → hold → upstream (fail over before an answer) →
 *   decode → settle once (the cost, or 0 on failure) → answer
 */
import type { Route } from "../app.ts";
import type { AppContext } from "../pipeline/context.ts";
import { clientClosed, GatewayError } from "../http/gateway_error.ts";
import type { Candidate } from "../providers/routing.ts";
import { PROTOCOL } from "../providers/protocols/mod.ts";
import { lingering, recordOutcome, send } from "../pipeline/upstream.ts";
import { atNoCost, settleWithRetry } from "../pipeline/meter.ts";
import { type Hold, shuttingDown } from "../pipeline/quota.ts";
import { shutdownCut } from "../pipeline/respond.ts";
import type { Settlement } from "../store/store.ts";
import { FetchFailedError, readCapped } from "../lib/safe_fetch.ts";
import {
  blobStoreFromConfig,
  blobStoreOf,
  setBlobStore,
  unsharedBlobsWarning,
} from "../blobs/mod.ts";
import type { BlobStore } from "../blobs/store.ts";
import { handleEmbeddings } from "./embeddings.ts";
import { handleImages } from "./images.ts";
import { handleFile } from "./files.ts";

export function nonTextRoutes(ctx: AppContext): Route[] {
  // Built at start so a bad BLOB_URL stops start-up with one line.
  if (!blobStoreOf(ctx)) {
    setBlobStore(ctx, blobStoreFromConfig(ctx.cfg));
    const unshared = unsharedBlobsWarning(ctx.cfg);
    if (unshared) ctx.log.log("warn", unshared);
  }
  return [
    {
      method: "POST",
      path: "/v1/embeddings",
      envelope: "coded",
      handle: (req) => handleEmbeddings(req, ctx),
    },
    {
      method: "POST",
      path: "/v1/images/generations",
      envelope: "coded",
      handle: (req) => handleImages(req, ctx),
    },
    {
      method: "GET",
      path: "/v1/files/",
      envelope: "coded",
      handle: (req, rest) => handleFile(req, rest, ctx),
    },
  ];
}

/** The byte store bound to this gateway (see blobs/mod.ts; tests may swap it). */
export function blobsOf(app: AppContext): BlobStore {
  let b = blobStoreOf(app);
  if (!b) {
    b = blobStoreFromConfig(app.cfg);
    setBlobStore(app, b);
  }
  return b;
}

/** Largest upstream answer read: 10 images at 4K as base64 fit; anything larger is refused. */
export const upstreamAnswerBytesMax = 256 * 1024 * 1024;

export interface Attempt<T> {
  path: (c: Candidate) => string;
  body: (c: Candidate) => string;
  /** The whole call — headers and body — must finish within this. */
  timeoutMs: (c: Candidate) => number;
  decodeError: (status: number, body: unknown, retryAfter?: number) => GatewayError;
  /** Reads a 200 answer; a GatewayError thrown here is a provider failure (5xx → next candidate). */
  read: (json: unknown, c: Candidate) => T | Promise<T>;
}

export type CallResult<T> =
  | { ok: true; value: T; candidate: Candidate }
  | { ok: false; error: GatewayError };

/**
 * Tries the candidates in order. Connect errors, timeouts, 408/429/5xx and unreadable
 * answers move on to the next one (the table in pipeline/upstream.ts); a client error or the
 * client leaving stops at once.
 */
export async function callCandidates<T>(
  app: AppContext,
  candidates: Candidate[],
  req: Request,
  a: Attempt<T>,
): Promise<CallResult<T>> {
  // Policy `drain`: a call the client left is still read to its end for a while (an image
  // the upstream made is billed to the gateway all the same), then settled as made.
  const drained = app.cfg.CANCEL_POLICY === "drain"
    ? lingering(req.signal, app.cfg.DRAIN_DEADLINE_MS)
    : undefined;
  // Shutdown's grace ends it too (an image may take a minute): the client, still there, gets
  // the 503 new calls get while the instance drains.
  const cut = shutdownCut(drained?.signal ?? req.signal);
  try {
    const result = await tryCandidates(app, candidates, req, cut.signal, a);
    return !result.ok && cut.ended && !req.signal.aborted
      ? { ok: false, error: shuttingDown() }
      : result;
  } finally {
    cut.dispose();
    drained?.dispose();
  }
}

async function tryCandidates<T>(
  app: AppContext,
  candidates: Candidate[],
  req: Request,
  signal: AbortSignal,
  a: Attempt<T>,
): Promise<CallResult<T>> {
  let last: GatewayError | undefined;
  for (const c of candidates) {
    const started = performance.now();
    const timeoutMs = a.timeoutMs(c);
    const headers = PROTOCOL["openai-chat"].headers(c.provider, req.headers);
    const outcome = await send(
      c,
      `${c.provider.baseUrl}${a.path(c)}`,
      headers,
      a.body(c),
      timeoutMs,
      signal,
      app.log,
    );
    if (!outcome.ok) {
      last = outcome.error ?? a.decodeError(outcome.status, outcome.body, outcome.retryAfter);
      if (outcome.status === 499 || req.signal.aborted) return { ok: false, error: last };
      // A refused request (4xx other than 429) is not the provider failing (see pipeline.ts).
      if (!outcome.retry) return { ok: false, error: last };
      recordOutcome(app.breakers, c, false);
      continue;
    }
    const remaining = Math.max(1, timeoutMs - (performance.now() - started));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      outcome.abort.abort();
    }, remaining);
    const onClientAbort = () => outcome.abort.abort();
    signal.addEventListener("abort", onClientAbort, { once: true });
    let json: unknown;
    try {
      const bytes = await readCapped(outcome.response, upstreamAnswerBytesMax);
      json = JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      // The client left, or shutdown cut the read: not the provider's failure.
      if (req.signal.aborted || signal.aborted) {
        return { ok: false, error: clientClosed() };
      }
      recordOutcome(app.breakers, c, false);
      last = timedOut
        ? new GatewayError(504, `provider ${c.provider.id} did not answer in time`)
        : e instanceof FetchFailedError
        ? new GatewayError(502, `provider ${c.provider.id} sent an answer that is too large`)
        : new GatewayError(502, "the provider returned an invalid answer");
      continue;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onClientAbort);
    }
    try {
      const value = await a.read(json, c);
      recordOutcome(app.breakers, c, true);
      return { ok: true, value, candidate: c };
    } catch (e) {
      if (!(e instanceof GatewayError)) throw e;
      last = e;
      if ((e.status >= 500 || e.status === 429) && !req.signal.aborted) {
        recordOutcome(app.breakers, c, false);
        continue;
      }
      return { ok: false, error: e };
    }
  }
  return {
    ok: false,
    error: last ?? new GatewayError(503, "no available provider for the model", { retryAfter: 5 }),
  };
}

/**
 * Settles one generation exactly once (a second call is a no-op), off the client's path;
 * the tracker lets shutdown and tests wait for it.
 */
export class Closer {
  #done = false;
  readonly startedAt = performance.now();
  constructor(readonly app: AppContext, readonly hold: Hold) {}

  get done(): boolean {
    return this.#done;
  }

  close(s: Omit<Settlement, "generationId" | "latencyMs" | "ttftMs">): Promise<void> {
    if (this.#done) return Promise.resolve();
    this.#done = true;
    const latencyMs = Math.round(performance.now() - this.startedAt);
    return this.app.tracker.trackSettlement(
      settleWithRetry(this.app, {
        ...s,
        generationId: this.hold.generationId,
        latencyMs,
        ttftMs: null,
      }),
    );
  }

  /** No output, no charge. */
  fail(error: GatewayError, provider: string | null = null): Promise<void> {
    const status = error.status === 499 ? "cancelled" : "failed";
    return this.close(atNoCost(status, error.message.slice(0, 500), provider, "error"));
  }
}

import { GatewayError } from "../http/gateway_error.ts";
import type { ChunkSource } from "./chunk_reader.ts";
import type { Tracker } from "../lib/tracker.ts";
import { deadline } from "../lib/deadlines.ts";
import { type IdleHandle, watchIdle } from "./idle_watch.ts";
import type { Meter } from "./meter.ts";
import type { StreamStage } from "./stream_stage.ts";
import { type KeepAlive, keepAlive } from "./keep_alive.ts";
import { SSE_KEEPALIVE_COMMENT } from "../formats/sse.ts";

/**
 * The client's body: a pull source over the upstream reader, running the fused stage on
 * each chunk. Back-pressure is pull-driven (nothing is read from the upstream until the
 * client can take it) and a client's cancel reaches the upstream fetch (policy `abort`) or
 * reads it to its usage in the background (policy `drain`). Settlement happens once, in
 * whichever of the end paths comes first.
 */
/**
 * Open client streams, and calls still waiting on their upstream, each with a way to end it
 * now: shutdown gives them a deadline, then ends the rest (a stream with an in-stream error, a
 * call with a 503); they still settle.
 */
export const openStreams = new Set<() => void>();

/** Ends every open stream: the upstream read is cut and the client gets the format's error. */
export function endOpenStreams(): void {
  graceOver = true;
  for (const end of [...openStreams]) end();
}

/**
 * Shutdown's grace is over: its sweep runs once, so a call that reaches its upstream only after
 * it (an image still fetching its references, say) is cut as it registers.
 */
let graceOver = false;

/** A call's upstream signal, which shutdown can also fire (see `shutdownCut`). */
export interface ShutdownCut {
  /** Fires with `source`, or when shutdown's grace ends. */
  readonly signal: AbortSignal;
  /** Shutdown fired it (the client may still be there: it gets a 503). */
  readonly ended: boolean;
  dispose(): void;
}

/**
 * Registers a call still waiting on its upstream with the open streams, so that shutdown's
 * grace ends it too: a whole answer (or an image) may take minutes, or its client left without
 * the server noticing, and until it ends the process cannot exit; a supervisor would kill it
 * with the call unsettled. One controller and a listener, not `AbortSignal.any`, which costs
 * ~6 µs a call (weak references for the collector), ten times as much, on every call.
 */
export function shutdownCut(source: AbortSignal): ShutdownCut {
  const cut = new AbortController();
  let ended = false;
  const end = () => {
    ended = true;
    cut.abort();
  };
  const onSource = () => cut.abort(source.reason);
  source.addEventListener("abort", onSource, { once: true });
  // A signal that fired already fires no listener.
  if (source.aborted) onSource();
  openStreams.add(end);
  if (graceOver) end();
  return {
    signal: cut.signal,
    get ended() {
      return ended;
    },
    dispose() {
      openStreams.delete(end);
      source.removeEventListener("abort", onSource);
    },
  };
}

export function streamToClient(o: {
  reader: ChunkSource;
  stage: StreamStage;
  meter: Meter;
  abort: AbortController;
  initial: string;
  idleMs: number;
  policy: "abort" | "drain";
  drainMs: number;
  /**
   * Sent when nothing else was for `keepAliveMs` (0: never): a model may think in silence for
   * minutes before its first token (OpenAI's chat API sends nothing meanwhile, and OpenRouter's
   * keep-alive comments are not relayed), and Claude Code gives up on a stream that sends no
   * byte for five minutes, to ask again from the start.
   */
  keepAlive?: string;
  keepAliveMs?: number;
  tracker: Tracker;
  /** Reports an unexpected exception (a bug) without its message reaching the client. */
  log?: (e: unknown) => void;
}): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  const { reader, stage, meter } = o;
  const idle = watchIdle(o.idleMs, () => {
    stage.fail(new GatewayError(504, "provider stalled mid-stream"));
    reader.cancel().catch(() => {});
  });
  let closed = false;
  let kept: KeepAlive | undefined;
  /**
   * Whether the client has had a byte of the answer. Before that a keep-alive is an SSE
   * comment whatever the format's own: a transcoded `/v1/messages` stream sends its
   * `message_start` only once the upstream says something, and a `ping` before it breaks
   * Anthropic's event order (message_start first).
   */
  let started = o.initial !== "";
  /**
   * The client went away under policy `drain`: the drain owns the reader, the settlement and
   * the end from then on. A pull still waiting on the upstream when the client left must not
   * write to the cancelled body (every such write throws, and was logged as a bug).
   */
  let clientGone = false;
  const endNow = () => {
    stage.fail(new GatewayError(503, "the gateway is shutting down"));
    reader.cancel().catch(() => {});
  };
  openStreams.add(endNow);
  const close = (status: "completed" | "failed" | "cancelled") => {
    if (closed) return;
    closed = true;
    kept?.stop();
    openStreams.delete(endNow);
    idle.stop();
    meter.settle(status);
  };

  return new ReadableStream<Uint8Array>({
    start(ctl) {
      if (o.initial) ctl.enqueue(enc.encode(o.initial));
      const every = o.keepAliveMs ?? 0;
      if (o.keepAlive && every > 0) {
        const frame = enc.encode(o.keepAlive);
        const comment = enc.encode(SSE_KEEPALIVE_COMMENT);
        // Frames are enqueued whole, so one sent between two of them never splits an event.
        kept = keepAlive(every, () => {
          if (closed || clientGone) return;
          try {
            ctl.enqueue(started ? frame : comment);
          } catch { /* the stream ended meanwhile */ }
        });
      }
    },
    async pull(ctl) {
      /** `upstream`: its body ended, is cut, or said its last and is left to end by itself. */
      const end = (upstream: "ended" | "cut" | "said") => {
        // The client may have left while we waited: cancel() has settled (or its drain will),
        // nothing to send.
        if (closed || clientGone) return;
        try {
          const { text } = stage.finish();
          if (text) ctl.enqueue(enc.encode(text));
        } catch (e) {
          o.log?.(e);
        } finally {
          ctl.close();
          if (upstream === "cut") reader.cancel().catch(() => {});
          else if (upstream === "said") o.tracker.track(readToEnd(reader));
          close(stage.failed ? "failed" : "completed");
        }
      };
      for (;;) {
        // The upstream reported an error (in a chunk relayed, or in the first-byte peek's):
        // what it says after that is at most its usage.
        if (stage.failed) {
          return end(
            stage.usageMayFollow && await readUsageTail(reader, stage) ? "ended" : "cut",
          );
        }
        // Its terminal event came (in the peek's chunks, say): the client's answer ends now,
        // not when an upstream that keeps its connection open ends its body.
        if (stage.complete) return end("said");
        let r: ReadableStreamReadResult<Uint8Array>;
        // Before the first token (a stream committed while the model thinks) the first-token
        // deadline governs, not the idle one.
        if (stage.first === undefined) idle.pause();
        else idle.touch();
        try {
          r = await reader.read();
        } catch {
          stage.fail(new GatewayError(502, "provider connection broke mid-stream"));
          r = { done: true, value: undefined };
        }
        // Only silence while waiting on the upstream counts: a slow client is not a stall.
        idle.pause();
        if (r.done || stage.failed) return end(r.done === true ? "ended" : "cut");
        let text: string;
        try {
          text = stage.feed(r.value);
        } catch (e) {
          // A bug in a decoder or encoder must not leave the generation unsettled.
          stage.fail(new GatewayError(502, "could not relay the provider's answer"));
          o.log?.(e);
          return end("cut");
        }
        if (clientGone) return;
        if (text) {
          ctl.enqueue(enc.encode(text));
          started = true;
          kept?.sent();
        }
        if (stage.complete) return end("said");
        if (text) return;
      }
    },
    cancel() {
      if (closed) return;
      kept?.stop();
      if (o.policy === "drain") {
        clientGone = true;
        o.tracker.track(drain({ ...o, idle }, () => close("cancelled")));
        return;
      }
      reader.cancel().catch(() => {});
      o.abort.abort();
      close("cancelled");
    },
  }, { highWaterMark: 0 });
}

/**
 * After an upstream's terminal event, how long its body is left to end by itself (its
 * connection then goes back to the pool) before it is cut.
 */
const lingerMs = 1_000;

/** Reads what follows the terminal event (nothing, as a rule) until the body ends or `lingerMs`. */
async function readToEnd(reader: ChunkSource): Promise<void> {
  const cut = deadline(lingerMs, () => reader.cancel().catch(() => {}));
  try {
    for (;;) if ((await reader.read()).done) return;
  } catch {
    /* cut, or broken: the answer was whole already */
  } finally {
    cut();
  }
}

/**
 * After an upstream's in-stream error, how long its usage is waited for before the stream
 * ends: OpenRouter, say, reports what a failed generation consumed after the error.
 */
const usageTailMs = 2_000;

/**
 * Reads on after an upstream's error until its usage, its end or `usageTailMs`; the stage lets
 * nothing but usage through. True when the upstream ended.
 */
async function readUsageTail(reader: ChunkSource, stage: StreamStage): Promise<boolean> {
  const deadline = setTimeout(() => reader.cancel().catch(() => {}), usageTailMs);
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) return true;
      stage.feed(r.value);
      if (!stage.usageMayFollow) return false;
    }
  } catch {
    return false; // the upstream broke, or the deadline cut it: bill what was seen
  } finally {
    clearTimeout(deadline);
  }
}

/** Policy `drain`: keep reading the upstream (output discarded) until its usage or the deadline. */
async function drain(
  o: {
    reader: ChunkSource;
    stage: StreamStage;
    abort: AbortController;
    drainMs: number;
    idle: IdleHandle;
  },
  done: () => void,
) {
  const deadline = setTimeout(() => {
    o.reader.cancel().catch(() => {});
    o.abort.abort();
  }, o.drainMs);
  try {
    // The client's own last read may have taken the terminal event already; after an
    // upstream error only its usage is still worth reading.
    while (!o.stage.complete && (!o.stage.failed || o.stage.usageMayFollow)) {
      o.idle.touch();
      const r = await o.reader.read();
      if (r.done) break;
      o.stage.feed(r.value);
    }
  } catch {
    /* the deadline cut it, or the upstream broke: settle what was seen */
  } finally {
    clearTimeout(deadline);
  }
  done();
  if (o.stage.complete) await readToEnd(o.reader);
}

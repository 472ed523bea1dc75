/**
 * Plays a plan into a Response, keeping the call's stats current: streams are pull sources
 * that wait `first`/`every` before content frames and inject the planned fault; whole bodies
 * wait as long as the stream would have taken. Every wait is a timer that a client's cancel
 * (or the server closing) clears at once, so nothing outlives the request.
 */
import type { Plan } from "./plan.ts";

export type MockOutcome = "running" | "completed" | "cancelled" | "error" | "cut";

export interface MockCall {
  path: string;
  protocol: string;
  body: unknown;
  headers: Record<string, string>;
  outcome: MockOutcome;
  /** All prompt tokens the upstream charges (cache reads and writes included). */
  inputTokens: number;
  /** Output tokens generated and sent before the stream ended, however it ended. */
  outputTokensSent: number;
  /** Whether the final usage report reached the wire. */
  usageReported: boolean;
}

/** The error a cut stream is failed with; the server's onError keeps it out of the log. */
export class MockCut extends Error {
  constructor() {
    super("mock upstream: connection cut on purpose");
    this.name = "MockCut";
  }
}

/** A stall holds the connection at most this long: past any test's or client's patience. */
export const stallMsMax = 300_000;

/** Something in flight that the server can stop when it closes. */
export interface Active {
  abort(): void;
}

/** The server's set of in-flight requests. */
export interface Life {
  add(a: Active): void;
  delete(a: Active): void;
}

/** A single cancellable timer: `sleep` resolves true when it elapsed, false when woken. */
class Sleeper {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #resolve: ((elapsed: boolean) => void) | undefined;

  sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#resolve = undefined;
        resolve(true);
      }, ms);
    });
  }

  wake(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const r = this.#resolve;
    this.#resolve = undefined;
    r?.(false);
  }
}

function headersOf(plan: Plan): Record<string, string> {
  return { "content-type": plan.contentType, ...plan.headers };
}

/** A body that fails on first read: the client gets the status line, then a network error. */
function cutBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    pull(c) {
      c.error(new MockCut());
    },
  });
}

export function play(
  plan: Plan,
  call: MockCall,
  life: Life,
  signal: () => AbortSignal,
): Response | Promise<Response> {
  call.inputTokens = plan.inputTokens;
  return plan.frames
    ? playStream(plan, plan.frames, call, life)
    : playWhole(plan, call, life, signal);
}

async function playWhole(
  plan: Plan,
  call: MockCall,
  life: Life,
  signal: () => AbortSignal,
): Promise<Response> {
  const wait = plan.fault === "stall"
    ? stallMsMax
    : plan.outcome === "error"
    ? 0
    : plan.firstMs + plan.everyMs * Math.max(0, plan.contentCount - 1);
  if (wait > 0) {
    // The only way to see a client leave before the status line.
    const sig = signal();
    const sleeper = new Sleeper();
    const active = { abort: () => sleeper.wake() };
    life.add(active);
    sig.addEventListener("abort", active.abort);
    const elapsed = await sleeper.sleep(wait);
    sig.removeEventListener("abort", active.abort);
    life.delete(active);
    if (!elapsed) {
      call.outcome = sig.aborted ? "cancelled" : "cut";
      return new Response(cutBody(), { status: 200, headers: headersOf(plan) });
    }
  }
  if (plan.fault === "cut" || plan.fault === "stall") {
    call.outcome = "cut";
    return new Response(cutBody(), { status: 200, headers: headersOf(plan) });
  }
  call.outcome = plan.outcome;
  call.outputTokensSent = plan.outcome === "completed" ? plan.outputTokens : 0;
  call.usageReported = plan.usageReported;
  return new Response(plan.body!, {
    status: plan.status,
    headers: headersOf(plan),
  });
}

function playStream(
  plan: Plan,
  frames: Plan["frames"] & object,
  call: MockCall,
  life: Life,
): Response {
  const sleeper = new Sleeper();
  let ctrl: ReadableStreamDefaultController<Uint8Array>;
  let i = 0;
  let sentContent = 0;
  let done = false;
  const end = (outcome: MockOutcome) => {
    done = true;
    sleeper.wake();
    call.outcome = outcome;
    life.delete(active);
  };
  const active: Active = {
    abort() {
      if (done) return;
      end("cut");
      ctrl.error(new MockCut());
    },
  };
  life.add(active);

  const body = new ReadableStream<Uint8Array>({
    start(c) {
      ctrl = c;
    },
    async pull(c) {
      if (done) return;
      if (i === plan.faultAt && plan.fault !== undefined) {
        if (plan.fault === "stall" && !(await sleeper.sleep(stallMsMax))) return;
        if (plan.fault === "fail") {
          c.enqueue(plan.failBytes!);
          end("error");
          c.close();
        } else {
          end("cut");
          c.error(new MockCut());
        }
        return;
      }
      const f = frames[i];
      if (f.content) {
        const ms = sentContent === 0 ? plan.firstMs : plan.everyMs;
        if (ms > 0 && !(await sleeper.sleep(ms))) return;
        sentContent++;
      }
      c.enqueue(f.bytes);
      call.outputTokensSent += f.weight;
      if (f.usage) call.usageReported = true;
      if (++i === frames.length) {
        end("completed");
        c.close();
      }
    },
    cancel() {
      if (!done) end("cancelled");
    },
  });
  return new Response(body, {
    status: 200,
    headers: { ...headersOf(plan), "cache-control": "no-cache" },
  });
}

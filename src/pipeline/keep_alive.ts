/**
 * Keep-alives for streams a client may give up on while the upstream is silent (a model thinking
 * before its first token), without a timer each: one shared tick looks at every open stream and
 * sends a stream's frame once it has sent nothing for its interval. An interval set and cleared
 * per stream cost measurable CPU per stream at hundreds of streams a second; here a stream's
 * own cost is an increment per chunk it sends. The tick runs only while a stream is watched, so
 * it never outlives the last one (and tests see no stray timer).
 */
interface Kept {
  every: number;
  send: () => void;
  /** Chunks the stream sent: counted by the stream, read by the tick. */
  sends: number;
  seen: number;
  quietSince: number;
}

export interface KeepAlive {
  /** The stream sent something: its silence starts again. */
  sent(): void;
  stop(): void;
}

const kept = new Set<Kept>();
let timer: ReturnType<typeof setInterval> | undefined;
let tickMs = Infinity;

/** Calls `send` whenever the stream has sent nothing (see `sent`) for `everyMs`. */
export function keepAlive(everyMs: number, send: () => void): KeepAlive {
  const k: Kept = { every: everyMs, send, sends: 0, seen: 0, quietSince: performance.now() };
  kept.add(k);
  // A second at most between looks: a frame is late by at most that, against a 15 s interval.
  const tick = Math.min(1000, everyMs);
  if (tick < tickMs) {
    if (timer !== undefined) clearInterval(timer);
    tickMs = tick;
    timer = setInterval(check, tick);
  }
  return {
    sent: () => {
      k.sends++;
    },
    stop: () => {
      if (kept.delete(k) && kept.size === 0) stopTick();
    },
  };
}

function stopTick() {
  if (timer === undefined) return;
  clearInterval(timer);
  timer = undefined;
  tickMs = Infinity;
}

function check() {
  const now = performance.now();
  for (const k of kept) {
    if (k.sends !== k.seen) {
      k.seen = k.sends;
      k.quietSince = now;
    } else if (now - k.quietSince >= k.every) {
      k.quietSince = now;
      k.send();
    }
  }
}

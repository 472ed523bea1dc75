/**
 * Idle timeouts for open upstream streams without a timer per chunk: one shared interval
 * checks every open stream once a second, and runs only while a stream is open (so it
 * never outlives the last stream, and test sanitizers see no stray timer).
 */
interface Watched {
  last: number;
  /** Not waiting on the upstream (a slow client holds the stream back): never idle. */
  paused: boolean;
  idleMs: number;
  onIdle: () => void;
}

const watched = new Set<Watched>();
let timer: ReturnType<typeof setInterval> | undefined;

export interface IdleHandle {
  /** Starts (or restarts) the clock: call right before waiting on the upstream. */
  touch(): void;
  /** Stops the clock: call when the upstream answered and the client's turn begins. */
  pause(): void;
  stop(): void;
}

export function watchIdle(idleMs: number, onIdle: () => void): IdleHandle {
  const w: Watched = { last: Date.now(), idleMs, onIdle, paused: false };
  watched.add(w);
  if (timer === undefined) {
    const t = setInterval(check, Math.min(1000, idleMs));
    Deno.unrefTimer(t);
    timer = t;
  }
  return {
    touch: () => {
      w.last = Date.now();
      w.paused = false;
    },
    pause: () => {
      w.paused = true;
    },
    stop: () => {
      watched.delete(w);
      if (watched.size === 0 && timer !== undefined) {
        clearInterval(timer);
        timer = undefined;
      }
    },
  };
}

function check() {
  const now = Date.now();
  for (const w of watched) {
    if (!w.paused && now - w.last > w.idleMs) {
      watched.delete(w);
      w.onIdle();
    }
  }
  if (watched.size === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
}

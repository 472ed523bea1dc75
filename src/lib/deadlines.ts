/**
 * Deadlines without a timer each: one shared tick checks them all, late by at most `tickMs`.
 * Every upstream call has one, and a timer of its own (a Node-style `Timeout` under Deno, set
 * and cleared per call) cost about 3 % of a non-streaming request's CPU. The tick runs only
 * while a deadline is set, so it never outlives the last call (and tests see no stray timer).
 * The monotonic clock: a wall clock stepped forward would fire every deadline at once.
 */
interface Deadline {
  at: number;
  fire: () => void;
}

/** How late a deadline may fire: nothing here waits for less than a second in production. */
export const tickMs = 25;

const pending = new Set<Deadline>();
let timer: ReturnType<typeof setInterval> | undefined;

/** Calls `fire` once `ms` have passed, unless the returned function is called first. */
export function deadline(ms: number, fire: () => void): () => void {
  const d: Deadline = { at: performance.now() + ms, fire };
  pending.add(d);
  timer ??= setInterval(check, tickMs);
  return () => {
    if (pending.delete(d) && pending.size === 0) stop();
  };
}

function stop() {
  if (timer === undefined) return;
  clearInterval(timer);
  timer = undefined;
}

function check() {
  const now = performance.now();
  for (const d of pending) {
    if (d.at > now) continue;
    pending.delete(d);
    d.fire();
  }
  if (pending.size === 0) stop();
}

/**
 * Waiting in tests without betting on how fast the machine is: poll for the condition itself
 * (a fixed sleep that is long enough on a quiet machine is too short on a loaded one), and
 * keep a test that counts against a rate limit inside one limiter window.
 */

/** Polls `check` until it returns a value other than undefined (or fails after `ms`). */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  ms = 10_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Waits, if needed, so that `needMs` fit before the next one-minute window starts. The rate
 * limiters count in fixed windows of the wall clock's minutes: a test that expects a request
 * to be refused must not let a boundary pass between it and the requests that used the budget
 * up (the next window starts afresh, and the request passes).
 */
export async function roomInWindow(needMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((r) => setTimeout(r, left + 50));
}

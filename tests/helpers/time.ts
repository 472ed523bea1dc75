/**
 * Waiting in tests without betting on how fast the machine is: poll for the condition itself
 * (a fixed sleep that is long enough on a quiet machine is too short on a loaded one).
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

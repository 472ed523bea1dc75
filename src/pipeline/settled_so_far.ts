import type { AppContext } from "./context.ts";

/** Past this a reading goes on without the settlements it waits for (a store that is down). */
const settlementWaitMaxMs = 2_000;

/**
 * Before a reading of what a caller spent: settlements batched in memory are written, and
 * those made in the store itself (a capped key's on a leasing instance, every one on the
 * store quota), which a response does not wait for, have landed. Without this a call
 * answered a moment ago could be missing from the figures read.
 */
export async function settledSoFar(app: AppContext): Promise<void> {
  await app.quota.flush();
  await app.tracker.landed(settlementWaitMaxMs);
}

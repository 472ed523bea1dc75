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

/**
 * Instances sharing PostgreSQL write their settlements in batches (every ~25 ms, batches.ts):
 * a call another instance answered a moment ago may not be in the store yet. A reading of the
 * newest figures (the key's usage, the credits, the history's first page) waits one batch
 * interval for its peers, so a client behind a load balancer that reads through another
 * instance than the one that answered counts the call too.
 */
export const peerBatchWaitMs = 40;

/** `settledSoFar`, and then the peers' batches of calls just answered. */
export async function settledEverywhere(app: AppContext): Promise<void> {
  await settledSoFar(app);
  if (app.quota.peersBatch) await new Promise((r) => setTimeout(r, peerBatchWaitMs));
}

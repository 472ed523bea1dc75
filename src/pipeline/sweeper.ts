import type { AppContext } from "./context.ts";
import { settleWithRetry } from "./meter.ts";
import { checkpointStaleMs } from "../billing/journal.ts";

/**
 * Closes generations left `running` by an instance that died mid-stream, so their holds do
 * not stay on the balance forever, and bills what they consumed: a journaled generation
 * (journal.ts) at its last checkpoint — tokens the upstream reported or the gateway relayed
 * by then — one never journaled (held in the store, never checkpointed) at nothing, since the
 * gateway cannot show a figure for it.
 *
 * Dead: a leasing instance whose leases expired (its rows are settled first, and only then
 * its leases go back: given back before, the balance they held for those rows could be
 * leased and spent again, and the debit would take it below zero); a journaled row whose
 * checkpoints stopped for `checkpointStaleMs`; another row after `olderThanMs`. 0 (the
 * embedded store at start, whose one process just started) closes every running row.
 */
export async function sweep(app: AppContext, olderThanMs: number): Promise<number> {
  // Never this process's own leases: past their expiry it was stalled, not dead (it is running
  // this), and they back generations it still has open; its next renewal revives them.
  const dead = (await app.store.expiredLeaseInstances()).filter((i) => i !== app.quota.instance);
  // A generation this process still has open is alive, however old its row looks: a process
  // that slept (a laptop's lid, a stopped container) wakes with its checkpoints stale and must
  // not bill its own live streams at them. Another instance may still sweep them; the late
  // settlement then replaces the sweep's figures (SqlStore.settle).
  const stale = (await app.store.staleGenerations({
    olderThanMs,
    checkpointStaleMs: olderThanMs === 0 ? 0 : checkpointStaleMs,
    instances: dead,
  })).filter((g) => !app.quota.holds(g.id));
  for (const g of stale) {
    await settleWithRetry(app, {
      generationId: g.id,
      status: "interrupted",
      cost: g.cost,
      costDetails: g.costDetails,
      provider: g.provider,
      upstreamModel: g.upstreamModel,
      finishReason: null,
      tokens: g.tokens,
      usageSource: g.cost > 0n ? "counted" : "none",
      latencyMs: null,
      ttftMs: null,
      error: "interrupted: the gateway instance serving it stopped",
    });
  }
  if (stale.length > 0) {
    app.quota.invalidate(); // balances moved outside the wallet's figures
    app.log.log("warn", "swept interrupted generations", { count: stale.length });
  }
  // The dead instances' leases go back to their accounts' balances.
  const expired = dead.length > 0 ? await app.store.expireLeases(dead) : 0;
  if (expired > 0) app.log.log("warn", "ended expired balance leases", { count: expired });
  return stale.length;
}

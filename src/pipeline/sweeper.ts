import type { AppContext } from "./context.ts";
import { settleWithRetry } from "./meter.ts";

/**
 * Closes generations left `running` by an instance that died mid-stream, so their holds do
 * not stay on the balance forever. Nothing is known of what they consumed (no checkpoint
 * survives the process), so they are marked `interrupted` at no charge: the customer is
 * never billed for a figure the gateway cannot show.
 */
export async function sweep(app: AppContext, olderThanMs: number): Promise<number> {
  // Leases of instances that stopped renewing them go back to their accounts' balances.
  const expired = await app.store.expireLeases();
  if (expired > 0) app.log.log("warn", "ended expired balance leases", { count: expired });
  const stale = await app.store.staleGenerations(new Date(Date.now() - olderThanMs));
  for (const g of stale) {
    await settleWithRetry(app, {
      generationId: g.id,
      status: "interrupted",
      cost: 0n,
      costDetails: {},
      provider: g.provider,
      upstreamModel: g.upstreamModel,
      finishReason: null,
      tokens: {},
      usageSource: "none",
      latencyMs: null,
      ttftMs: null,
      error: "interrupted: the gateway instance serving it stopped",
    });
  }
  if (stale.length > 0) {
    app.log.log("warn", "swept interrupted generations", { count: stale.length });
  }
  return stale.length;
}

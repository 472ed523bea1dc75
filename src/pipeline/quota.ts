import { estimateHold, type PriceTable } from "../billing/cost.ts";
import { GatewayError, insufficientBalance } from "../http/gateway_error.ts";
import { newId } from "../lib/ids.ts";
import type { Caller } from "./auth.ts";
import type { AppContext } from "./context.ts";

export interface Hold {
  generationId: string;
  amount: bigint;
}

/**
 * The quota stage: one statement reserves the estimate on the balance and opens the
 * generation row. Kept behind this small function so it can grow into a leased per-instance
 * wallet (design §10) without touching the other stages.
 */
export async function reserve(
  app: AppContext,
  caller: Caller,
  g: { endpoint: string; model: string; stream: boolean; amount: bigint },
): Promise<Hold> {
  if (app.draining) {
    throw new GatewayError(503, "the gateway is shutting down; retry shortly", { retryAfter: 2 });
  }
  const generationId = newId("gen");
  let ok: boolean;
  try {
    ok = await app.quota.reserve({
      id: generationId,
      accountId: caller.accountId,
      keyId: caller.keyId,
      endpoint: g.endpoint,
      model: g.model,
      stream: g.stream,
      hold: g.amount,
    });
  } catch (e) {
    app.log.log("warn", "reserve failed: store unavailable", { error: (e as Error).message });
    throw new GatewayError(503, "the gateway's store is unavailable; retry shortly", {
      retryAfter: 2,
    });
  }
  if (!ok) throw insufficientBalance();
  return { generationId, amount: g.amount };
}

/** The hold for a text call: the dearest candidate's price for prompt + every output token. */
export function textHold(
  app: AppContext,
  priceTables: PriceTable[],
  promptTokens: number,
  maxOutputTokens: number,
): bigint {
  let max = 0n;
  for (const p of priceTables) {
    const h = estimateHold(promptTokens, maxOutputTokens, p, app.rates);
    if (h > max) max = h;
  }
  return max;
}

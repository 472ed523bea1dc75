import type { GenerationOpen, Settlement, Store } from "../../src/store/store.ts";
import { newId } from "../../src/lib/ids.ts";

/** A settlement as a wallet receives it: completed at `cost`, or failed with `error`. */
export function settlementOf(id: string, cost: bigint, error: string | null = null): Settlement {
  return {
    generationId: id,
    status: error ? "failed" : "completed",
    cost,
    costDetails: { upstream_inference_input_cost: 0.1, upstream_inference_output_cost: 0.2 },
    provider: "p",
    upstreamModel: "m",
    finishReason: error ? "error" : "stop",
    tokens: { input: 10, output: 5 },
    usageSource: "upstream",
    latencyMs: 3,
    ttftMs: 1,
    error,
  };
}

/**
 * An account with `balance` and one key (capped at `spendLimit` if given), and `open`, which
 * makes a generation of that key holding `hold`.
 */
export async function walletAccount(store: Store, balance: bigint, spendLimit?: bigint) {
  const account = await store.createAccount("w", balance);
  const key = await store.createKey(account.id, newId("h", 32), "tg_w", null);
  if (spendLimit !== undefined) await store.setKeyLimits(key.id, { spend: spendLimit });
  const open = (hold: bigint, id = newId("gen")): GenerationOpen => ({
    id,
    accountId: account.id,
    keyId: key.id,
    endpoint: "chat",
    model: "m",
    stream: false,
    hold,
  });
  return { account, key, open };
}

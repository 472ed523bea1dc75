import type { Config } from "../config.ts";
import { rubToNano } from "../billing/money.ts";
import { generateKey } from "../store/keys.ts";
import type { Store } from "../store/store.ts";

const DEMO_NAME = "demo";

/**
 * First start: a demo account with DEMO_BALANCE_RUB and one key, returned so main.ts can
 * print it once. Later starts find the account and return no key (keys are stored hashed
 * and cannot be shown again).
 */
export async function ensureDemoAccount(
  store: Store,
  cfg: Pick<Config, "DEMO_BALANCE_RUB" | "KEY_PREFIX">,
): Promise<{ accountId: string; key?: string }> {
  const existing = await store.findAccountByName(DEMO_NAME);
  if (existing) return { accountId: existing.id };
  const account = await store.createAccount(DEMO_NAME, 0n);
  await store.topup(account.id, rubToNano(cfg.DEMO_BALANCE_RUB), `demo-initial-${account.id}`);
  const k = await generateKey(cfg.KEY_PREFIX);
  await store.createKey(account.id, k.hash, k.display, "demo");
  return { accountId: account.id, key: k.key };
}

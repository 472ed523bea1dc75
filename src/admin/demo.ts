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
  const k = await generateKey(cfg.KEY_PREFIX);
  // Made with its balance and key in one go: instances starting together on a fresh
  // PostgreSQL must not each make (and fund) a demo account of their own.
  const { account, key } = await store.ensureAccountNamed(
    DEMO_NAME,
    rubToNano(cfg.DEMO_BALANCE_RUB),
    { hash: k.hash, prefix: k.display, label: "demo" },
  );
  return key ? { accountId: account.id, key: k.key } : { accountId: account.id };
}

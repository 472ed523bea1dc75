/**
 * `GET /v1/key` and `GET /v1/credits`: what a key's holder may see of its key and account, in
 * OpenRouter's shapes (`data.usage`, `data.limit`, `data.limit_remaining`; `data.total_credits`,
 * `data.total_usage`), in roubles, so a script or tool that checks its credits there works
 * unchanged against the gateway; `balance` and `currency` are ours.
 */
import { nanoToRub as rub } from "../billing/money.ts";
import type { AppContext } from "./context.ts";
import { admit } from "./limit.ts";
import { settledEverywhere } from "./settled_so_far.ts";
import { unauthorized } from "../http/gateway_error.ts";

/** The caller's key and account as the store has them, with settlements in memory written. */
async function callerRecords(req: Request, app: AppContext) {
  const caller = await admit(req, app);
  // A call answered a moment ago counts, through this instance or another.
  await settledEverywhere(app);
  const [keys, account] = await Promise.all([
    app.store.listKeys(caller.accountId),
    app.store.getAccount(caller.accountId),
  ]);
  const key = keys.find((k) => k.id === caller.keyId);
  // Revoked since the key cache read it (it stops working within KEY_CACHE_TTL_MS anyway).
  if (!key || key.revoked || !account) throw unauthorized("invalid or revoked API key");
  return { caller, key, account };
}

export async function keyInfo(req: Request, app: AppContext): Promise<Response> {
  const { caller, key, account } = await callerRecords(req, app);
  const rpm = caller.keyRpm ?? app.cfg.RATE_LIMIT_RPM;
  const limit = key.spendLimit;
  return Response.json({
    data: {
      label: key.label ?? `${key.prefix}…`,
      id: key.id,
      usage: rub(key.spent),
      limit: limit === null ? null : rub(limit),
      limit_remaining: limit === null ? null : rub(limit > key.spent ? limit - key.spent : 0n),
      is_free_tier: false,
      rate_limit: rpm > 0 ? { requests: rpm, interval: "1m" } : null,
      balance: rub(account.balance),
      currency: "RUB",
    },
  });
}

export async function credits(req: Request, app: AppContext): Promise<Response> {
  const { account } = await callerRecords(req, app);
  // Balance and usage of one moment: read apart, a call settling between the two reads made
  // total_credits (their sum) more than the account was ever credited.
  const totals = await app.store.accountTotals(account.id);
  if (!totals) throw unauthorized("invalid or revoked API key");
  return Response.json({
    data: {
      total_credits: rub(totals.balance + totals.debited),
      total_usage: rub(totals.debited),
      balance: rub(totals.balance),
      currency: "RUB",
    },
  });
}

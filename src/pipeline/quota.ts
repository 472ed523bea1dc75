import { formatKopecksUp, nanoToRub } from "../billing/money.ts";
import { GatewayError, insufficientBalance, keySpendCapReached } from "../http/gateway_error.ts";
import { DEFAULT_WEB_SEARCHES } from "../events/text_request.ts";
import { isObject } from "../formats/json.ts";
import { newId } from "../lib/ids.ts";
import type { Caller } from "./auth.ts";
import type { AppContext } from "./context.ts";
import { deadline } from "../lib/deadlines.ts";
import { atNoCost, settleWithRetry } from "./meter.ts";

/**
 * How long a request waits for its hold. A healthy store answers in milliseconds, a store that
 * is down fails within its connect timeout; this bounds one that accepted the statement and
 * went silent.
 */
const reserveWaitMs = 5_000;

export interface Hold {
  generationId: string;
  amount: bigint;
  /** The account that pays. */
  accountId: string;
}

/** What a hold is sized for, and the limit a caller can lower. */
type HoldAsked = { endpoint: string; amount: bigint; floorOutput?: number; limitField?: string };

/**
 * The quota stage: reserves the estimate on the balance through the configured wallet
 * (src/billing/quota.ts: in the store, in memory, or against a lease).
 */
export async function reserve(
  app: AppContext,
  caller: Caller,
  g: {
    endpoint: string;
    model: string;
    stream: boolean;
    amount: bigint;
    floorOutput?: number;
    limitField?: string;
    /** The 402 carries `currentBalance`, what the balance has free for the call (images). */
    withBalance?: boolean;
  },
): Promise<Hold> {
  const hold = await tryReserve(app, caller, g);
  if (hold) return hold;
  throw await refusal(app, caller, g);
}

/**
 * The 402 for a refused hold. Where the key's spend cap refused it and the balance would have
 * covered it, the message says so: "top up the balance" sends a holder whose account has money
 * the wrong way (Claude Code and Codex print the message as it comes), raising the key's cap is
 * what helps. Read only on this failure path, from the store as it stands: holds of the key's
 * other calls in flight are not counted, so a cap they exhaust reads as the general message,
 * which names both limits.
 */
async function refusal(
  app: AppContext,
  caller: Caller,
  g: HoldAsked & { withBalance?: boolean },
): Promise<GatewayError> {
  let free: bigint | undefined;
  /** Why the key's cap refused it, where the balance would have covered it. */
  let cap: string | undefined;
  if (caller.keyCapped) {
    let clear = () => {};
    try {
      // Bounded as the hold is: a store that went silent must not hold the 402 back.
      const late = new Promise<never>((_, reject) => {
        clear = deadline(reserveWaitMs, () => reject(new Error("the store did not answer")));
      });
      const [keys, read] = await Promise.race([
        Promise.all([app.store.listKeys(caller.accountId), freeBalance(app, caller.accountId)]),
        late,
      ]);
      free = read.free;
      const key = keys.find((k) => k.id === caller.keyId);
      const limit = key?.spendLimit ?? null;
      // Where the balance falls short too, "a top-up cannot help" would be false: the general
      // message, which names both limits, stands.
      if (key && limit !== null && free >= g.amount) {
        const left = limit > key.spent ? limit - key.spent : 0n;
        if (left < g.amount) cap = capShortfall(g, left, limit);
      }
    } catch (e) {
      // The general message names the key's cap too: a store that fails this read loses detail.
      app.log.log("warn", "reading the key's cap for a 402 failed", {
        error: (e as Error).message,
      });
    } finally {
      clear();
    }
  }
  let extra: Record<string, unknown> | undefined;
  if (g.withBalance) {
    free ??= await freeBalance(app, caller.accountId).then((r) => r.free, () => 0n);
    extra = { currentBalance: nanoToRub(free > 0n ? free : 0n) };
  }
  return cap !== undefined
    ? keySpendCapReached(cap, extra)
    : insufficientBalance(extra, shortfall(g));
}

/**
 * What an account's balance has free for a call, as a hold counts it: less what other calls
 * hold (in the store, or the embedded wallet's holds and unwritten costs, which are not in the
 * store at all), plus this instance's unused lease (part of `held`, but the account's own money
 * to spend here). The lease is taken before the account is read: a lease top-up committed after
 * that read (another call of the account admitted meanwhile) would be in it and not in the
 * read's `held`, and the money would count twice. 0 for an account the store does not have.
 */
export async function freeBalance(
  app: AppContext,
  accountId: string,
): Promise<{ free: bigint }> {
  const unusedLease = app.quota.unusedLease?.(accountId) ?? 0n;
  const a = await app.store.getAccount(accountId);
  if (!a) return { free: 0n };
  const mem = app.quota.inMemory?.(a.id);
  return { free: a.balance - a.held + unusedLease - (mem ? mem.held + mem.pending : 0n) };
}

/** What a hold of `g` was estimated from, in the 402's words. */
function holdBasis(g: HoldAsked): string {
  const field = g.limitField ?? "max_tokens";
  return g.endpoint === "embeddings"
    ? "(оценка по длине входа)"
    : g.endpoint === "images"
    ? "(оценка по параметрам и числу изображений)"
    : g.floorOutput !== undefined
    ? `(оценка запроса и ${g.floorOutput} токенов вывода: запрос не задаёт ${field}, меньше ` +
      `не резервируется)`
    : `(оценка запроса и ${field} или предел вывода модели)`;
}

/** Why the key's cap refused a hold of `amount`, in the 402's words (as `shortfall`). */
export function capShortfall(g: HoldAsked, left: bigint, limit: bigint): string {
  const field = g.limitField ?? "max_tokens";
  const advice = g.endpoint === "embeddings" || g.endpoint === "images"
    ? "Поднимите лимит ключа"
    : `Поднимите лимит ключа или задайте ${field} меньше`;
  // What is left, rounded down to the kopeck: shown as room, it must not overstate it.
  const kopeck = 10_000_000n;
  const room = formatKopecksUp(left - left % kopeck);
  return `запрос резервирует до ${formatKopecksUp(g.amount)} ₽ ${holdBasis(g)}, а по лимиту ` +
    `ключа осталось ${room} ₽ из ${formatKopecksUp(limit)} ₽. ${advice}; пополнение баланса ` +
    "здесь не поможет.";
}

/**
 * Why a hold of `amount` was refused, in the 402's words. `floorOutput`: the call set no output
 * limit and was already held for the least output the gateway holds for, so lowering a limit
 * the client never sent (Codex has no setting for one) is no advice. `limitField`: the
 * endpoint's output limit as its clients name it (the responses API has no `max_tokens`).
 */
export function shortfall(g: HoldAsked): string {
  const field = g.limitField ?? "max_tokens";
  // A hold, not the price: clients that send no max_tokens are held for the model's whole
  // output cap, which a modest balance may not cover though the answer would cost kopecks.
  const advice = g.endpoint === "embeddings" || g.endpoint === "images"
    ? "Пополните баланс"
    : g.floorOutput !== undefined
    ? `Пополните баланс или задайте ${field} меньше`
    : `Уменьшите ${field} или пополните баланс`;
  return `запрос резервирует до ${formatKopecksUp(g.amount)} ₽ ${holdBasis(g)}. ${advice}; ` +
    "лимит расходов ключа тоже учитывается.";
}

/** A call refused or ended because this instance is stopping: another may take it at once. */
export function shuttingDown(): GatewayError {
  return new GatewayError(503, "the gateway is shutting down; retry shortly", { retryAfter: 2 });
}

/** As `reserve`, but undefined where funds (or the key's cap) fall short. */
export async function tryReserve(
  app: AppContext,
  caller: Caller,
  g: { endpoint: string; model: string; stream: boolean; amount: bigint },
): Promise<Hold | undefined> {
  if (app.draining) {
    throw shuttingDown();
  }
  const generationId = newId("gen");
  let ok: boolean;
  const reserving = app.quota.reserve({
    id: generationId,
    accountId: caller.accountId,
    keyId: caller.keyId,
    endpoint: g.endpoint,
    model: g.model,
    stream: g.stream,
    hold: g.amount,
  }, { keyCapped: caller.keyCapped });
  let cancel = () => {};
  try {
    ok = await Promise.race([
      reserving,
      new Promise<never>((_, reject) => {
        cancel = deadline(reserveWaitMs, () => reject(new Error("store did not answer")));
      }),
    ]);
  } catch (e) {
    // A store that stopped answering (a partition keeps postgres.js waiting for good) must not
    // hold the client: it gets its 503 now. Should the hold still land, it belongs to nobody:
    // it is settled at no cost, or its money would stay held (and the generation open) here.
    app.tracker.track(reserving.then((late) => {
      if (!late) return;
      return app.tracker.trackSettlement(settleWithRetry(app, {
        ...atNoCost("failed", "the store answered after the request gave up", null, null),
        generationId,
        latencyMs: null,
        ttftMs: null,
      }));
    }, () => {}));
    app.log.log("warn", "reserve failed: store unavailable", { error: (e as Error).message });
    throw new GatewayError(503, "the gateway's store is unavailable; retry shortly", {
      retryAfter: 2,
    });
  } finally {
    cancel();
  }
  return ok ? { generationId, amount: g.amount, accountId: caller.accountId } : undefined;
}

/** A `max_uses` past this is held as this: a hold must stay a sane figure. */
const webSearchesMax = 1_000;

/**
 * The web searches a request allows. Anthropic's `web_search_*` server tool may state
 * `max_uses`; responses' `web_search` tools cannot, so they are held at `DEFAULT_WEB_SEARCHES`
 * (and sent to an upstream that takes a cap with that cap).
 */
export function webSearchAllowance(body: Record<string, unknown>): number {
  // Chat's search option: as many as a search tool that names no cap.
  let n = isObject(body.web_search_options) ? DEFAULT_WEB_SEARCHES : 0;
  if (!Array.isArray(body.tools)) return n;
  for (const t of body.tools) {
    const tool = t as { type?: unknown; max_uses?: unknown } | null;
    if (typeof tool?.type !== "string" || !tool.type.startsWith("web_search")) continue;
    const max = tool.max_uses;
    n += typeof max === "number" && Number.isInteger(max) && max >= 0
      ? Math.min(max, webSearchesMax)
      : DEFAULT_WEB_SEARCHES;
  }
  return n;
}

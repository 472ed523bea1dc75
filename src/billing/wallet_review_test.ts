import assert from "node:assert/strict";
import { MemoryQuota } from "./wallet.ts";
import { makeRates } from "./cost.ts";
import { testStores } from "../../tests/helpers/store.ts";
import {
  settlementOf as settlement,
  walletAccount as setup,
} from "../../tests/helpers/settlement.ts";
import { Meter } from "../pipeline/meter.ts";
import { Tracker } from "../lib/tracker.ts";
import { createLogger } from "../lib/log.ts";
import type { Store } from "../store/store.ts";
import { checkInvariants } from "../../tests/helpers/gateway.ts";

/** Resolves to "timeout" if `p` has not settled within `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), ms));
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

for (const { name, open: openStore } of await testStores()) {
  Deno.test(`${name}: review: an upstream usage that is not a whole non-negative count still settles, at a cost >= 0`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 1_000_000_000n);
      const quota = new MemoryQuota(store);
      const tracker = new Tracker();
      const deps = {
        quota,
        tracker,
        log: createLogger("error", () => {}),
        rates: makeRates("100", "0"),
      };
      const cases: Record<string, number>[] = [
        { output: 12.5 },
        { output: -1000, input: 5 },
        { input: 10, cacheRead: -50 },
        { input: 3e9, output: 1 },
      ];
      for (const [i, usage] of cases.entries()) {
        const id = `gen_rv_usage${i}`;
        assert.equal(await quota.reserve(open(1_000_000n, id)), true);
        const meter = new Meter({
          generationId: id,
          prices: { prompt: "0.000001", completion: "0.000002" },
          promptTokensCounted: 10,
          startedAt: performance.now(),
        }, deps);
        meter.observe({ type: "text_delta", delta: "x" });
        meter.observe({ type: "usage", usage } as never);
        const r = meter.report();
        assert.ok(r.nano >= 0n, `cost of ${JSON.stringify(usage)} is ${r.nano}`);
        for (const v of Object.values(r.usage)) {
          if (typeof v === "number") assert.ok(Number.isSafeInteger(v) && v >= 0, `${v}`);
        }
        assert.notEqual(await within(meter.settle("completed"), 5_000), "timeout");
        const g = await store.getGeneration(account.id, id);
        assert.ok(g, `generation ${id} recorded`);
        assert.equal(g.cost, r.nano, "the debit is the cost reported");
      }
      await tracker.idle();
      await quota.flush();
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: review: an error text the database cannot store does not wedge the wallet`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 1_000_000n);
      const quota = new MemoryQuota(store);
      assert.equal(await quota.reserve(open(100n, "gen_rv_nul")), true);
      assert.equal(await quota.reserve(open(100n, "gen_rv_ok")), true);
      const settled = Promise.all([
        quota.settle(settlement("gen_rv_nul", 40n, "upstream said \u0000 oops")),
        quota.settle(settlement("gen_rv_ok", 30n)),
      ]);
      assert.deepEqual(await within(settled, 5_000), [true, true]);
      const a = (await store.getAccount(account.id))!;
      assert.equal(a.balance, 1_000_000n - 70n);
      assert.equal((await store.getGeneration(account.id, "gen_rv_nul"))?.cost, 40n);
      await quota.flush();
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: review: an error text with a lone surrogate does not wedge the wallet`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 1_000_000n);
      const quota = new MemoryQuota(store);
      assert.equal(await quota.reserve(open(100n, "gen_rv_sur")), true);
      assert.equal(await quota.reserve(open(100n, "gen_rv_ok2")), true);
      // An upstream quoting a client's `\ud83d`, or a message cut at its bound inside an emoji:
      // jsonb refused the batch's escape, every retry, and the batch's other rows with it.
      const settled = Promise.all([
        quota.settle(settlement("gen_rv_sur", 40n, "upstream said \ud83d oops")),
        quota.settle(settlement("gen_rv_ok2", 30n)),
      ]);
      assert.deepEqual(await within(settled, 5_000), [true, true]);
      const a = (await store.getAccount(account.id))!;
      assert.equal(a.balance, 1_000_000n - 70n);
      const g = await store.getGeneration(account.id, "gen_rv_sur");
      assert.equal(g?.cost, 40n);
      assert.equal(g?.error, "upstream said \uFFFD oops");
      await quota.flush();
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: review: one row the store refuses a value of does not hold back the others`, async () => {
    const real = await openStore();
    // A value no sanitising foresaw: the store refuses every statement carrying it, as
    // PostgreSQL refuses a value with a data exception (class 22).
    const store = new Proxy(real, {
      get(t, name) {
        if (name !== "recordSettled") {
          const v = Reflect.get(t, name);
          return typeof v === "function" ? v.bind(t) : v;
        }
        return (items: Parameters<Store["recordSettled"]>[0], lease?: string) => {
          if (items.some((i) => i.settlement.finishReason === "poison")) {
            return Promise.reject(Object.assign(new Error("refused value"), { code: "22P05" }));
          }
          return t.recordSettled(items, lease);
        };
      },
    });
    try {
      const { account, open } = await setup(real, 1_000_000n);
      const quota = new MemoryQuota(store);
      const ids = Array.from({ length: 7 }, (_, i) => `gen_rv_bis${i}`);
      for (const id of ids) assert.equal(await quota.reserve(open(100n, id)), true);
      const settled = Promise.all(ids.map((id, i) =>
        quota.settle({
          ...settlement(id, BigInt(10 + i)),
          ...(i === 4 ? { finishReason: "poison" } : {}),
        })
      ));
      assert.deepEqual(await within(settled, 5_000), ids.map(() => true));
      const a = (await real.getAccount(account.id))!;
      assert.equal(a.balance, 1_000_000n - (10n + 11n + 12n + 13n + 14n + 15n + 16n));
      for (const [i, id] of ids.entries()) {
        const g = (await real.getGeneration(account.id, id))!;
        assert.equal(g.cost, BigInt(10 + i));
        // The row at fault keeps its figures and loses what the store refused with them.
        assert.equal(g.finishReason, i === 4 ? null : "stop");
        assert.deepEqual(g.tokens, i === 4 ? {} : { input: 10, output: 5 });
      }
      assert.deepEqual(await checkInvariants(real, [account.id]), []);
      await quota.flush();
    } finally {
      await real.close();
    }
  });

  Deno.test(`${name}: review: invalidate while a re-read is in flight is not lost`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 1_000n);
      let hook: (() => Promise<void>) | undefined;
      // The operator's top-up lands (and invalidates) after the wallet read the account but
      // before the read came back.
      const getAccount = async (id: string) => {
        const acc = await store.getAccount(id);
        const h = hook;
        hook = undefined;
        await h?.();
        return acc;
      };
      const wrapped = new Proxy(store, {
        get(target, prop) {
          if (prop === "getAccount") return getAccount;
          const v = Reflect.get(target, prop, target);
          return typeof v === "function" ? v.bind(target) : v;
        },
      });
      const quota = new MemoryQuota(wrapped);
      hook = async () => {
        await store.topup(account.id, 10_000n, "rv-topup");
        quota.invalidate();
      };
      assert.equal(await quota.reserve(open(100n, "gen_rv_e1")), true);
      // Balance is now 11 000 − 100 held: 5 000 fits.
      assert.equal(await quota.reserve(open(5_000n, "gen_rv_e2")), true);
      await Promise.all([
        quota.settle(settlement("gen_rv_e1", 0n)),
        quota.settle(settlement("gen_rv_e2", 0n)),
      ]);
      await quota.flush();
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: review: a negative cost is refused before it touches the wallet`, async () => {
    const store = await openStore();
    try {
      const { open } = await setup(store, 1_000n);
      const quota = new MemoryQuota(store);
      assert.equal(await quota.reserve(open(100n, "gen_rv_neg")), true);
      await assert.rejects(() => quota.settle(settlement("gen_rv_neg", -5n)), RangeError);
      // The generation is still open and settles properly afterwards.
      assert.equal(await within(quota.settle(settlement("gen_rv_neg", 5n)), 5_000), true);
      await quota.flush();
    } finally {
      await store.close();
    }
  });
}

import assert from "node:assert/strict";
import { MemoryQuota } from "./wallet.ts";
import { testStores } from "../../tests/helpers/store.ts";
import {
  settlementOf as settlement,
  walletAccount as setup,
} from "../../tests/helpers/settlement.ts";
import type { Store } from "../store/store.ts";

/** The store, with `recordSettled` replaced by `wrap` of the real one. */
function withRecordSettled(
  store: Store,
  wrap: (real: Store["recordSettled"]) => Store["recordSettled"],
): Store {
  const replaced = wrap(store.recordSettled.bind(store));
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "recordSettled") return replaced;
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

async function ledgerSum(store: Store, accountId: string) {
  return (await store.listLedger(accountId)).reduce((s, e) => s + e.amount, 0n);
}

for (const { name, open: openStore } of await testStores()) {
  Deno.test(`${name}: wallet admits exactly as many concurrent holds as the balance covers`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 5_000n);
      const q = new MemoryQuota(store);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => q.reserve(open(1_000n, `gen_w${i}`))),
      );
      assert.equal(results.filter(Boolean).length, 5);
      const admitted = results.flatMap((ok, i) => ok ? [`gen_w${i}`] : []);
      const applied = await Promise.all(admitted.map((id) => q.settle(settlement(id, 700n))));
      assert.deepEqual(applied, [true, true, true, true, true]);
      const a = (await store.getAccount(account.id))!;
      assert.equal(a.balance, 5_000n - 5n * 700n);
      assert.equal(a.held, 0n, "holds never touch the store");
      assert.equal(await ledgerSum(store, account.id), a.balance);
      const gens = await store.listGenerations(account.id, { limit: 50 });
      assert.equal(gens.length, 5);
      for (const g of gens) {
        assert.equal(g.status, "completed");
        assert.equal(g.cost, 700n);
        assert.equal(g.hold, 1_000n);
        assert.equal(g.tokens.output, 5);
        assert.deepEqual(g.costDetails, settlement(g.id, 0n).costDetails);
      }
      // What was freed is admitted again: 1 500 left covers one more hold of 1 000.
      assert.equal(await q.reserve(open(1_000n, "gen_wx")), true);
      assert.equal(await q.reserve(open(1_000n, "gen_wy")), false);
      await q.settle(settlement("gen_wx", 0n));
      await q.flush();
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet tells what it keeps in memory: holds in flight, costs not yet written`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 10_000n);
      const q = new MemoryQuota(store);
      assert.deepEqual(q.inMemory(account.id), { held: 0n, pending: 0n });
      assert.equal(await q.reserve(open(1_000n, "gen_m1")), true);
      assert.equal(await q.reserve(open(2_000n, "gen_m2")), true);
      assert.deepEqual(q.inMemory(account.id), { held: 3_000n, pending: 0n });
      // Settled, not yet written: the hold is gone, the cost is pending.
      const landed = q.settle(settlement("gen_m1", 400n));
      assert.deepEqual(q.inMemory(account.id), { held: 2_000n, pending: 400n });
      await landed;
      assert.deepEqual(q.inMemory(account.id), { held: 2_000n, pending: 0n });
      assert.equal((await store.getAccount(account.id))!.balance, 9_600n);
      assert.deepEqual(q.inMemory("acc_other"), { held: 0n, pending: 0n });
      await q.settle(settlement("gen_m2", 0n));
      await q.flush();
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet settles a generation once; a repeat is a no-op`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 10_000n);
      const q = new MemoryQuota(store);
      assert.equal(await q.reserve(open(2_000n, "gen_once")), true);
      const [first, second] = await Promise.all([
        q.settle(settlement("gen_once", 1_234n)),
        q.settle(settlement("gen_once", 1_234n)),
      ]);
      assert.deepEqual([first, second], [true, false]);
      assert.equal((await store.getAccount(account.id))!.balance, 10_000n - 1_234n);
      const debits = (await store.listLedger(account.id)).filter((e) => e.kind === "debit");
      assert.equal(debits.length, 1);
      assert.equal(debits[0].generationId, "gen_once");
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet keeps a key's spend cap, counting holds in flight`, async () => {
    const store = await openStore();
    try {
      const { key, open } = await setup(store, 1_000_000n);
      await store.setKeyLimits(key.id, { spend: 2_500n });
      const q = new MemoryQuota(store);
      assert.equal(await q.reserve(open(1_000n, "gen_c1")), true);
      assert.equal(await q.reserve(open(1_000n, "gen_c2")), true);
      assert.equal(await q.reserve(open(1_000n, "gen_c3")), false, "3 000 in flight > 2 500");
      await q.settle(settlement("gen_c1", 1_000n));
      await q.settle(settlement("gen_c2", 1_000n));
      assert.equal(await q.reserve(open(1_000n, "gen_c4")), false, "2 000 spent + 1 000 > 2 500");
      assert.equal(await q.reserve(open(500n, "gen_c5")), true);
      await q.settle(settlement("gen_c5", 500n));
      const k = (await store.listKeys(key.accountId)).find((x) => x.id === key.id)!;
      assert.equal(k.spent, 2_500n);
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet sees a top-up after invalidate, and a new key at once`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 1_000n);
      const q = new MemoryQuota(store);
      assert.equal(await q.reserve(open(2_000n, "gen_t1")), false);
      await store.topup(account.id, 5_000n, "t-1");
      q.invalidate();
      assert.equal(await q.reserve(open(2_000n, "gen_t2")), true);
      const k2 = await store.createKey(account.id, "e".repeat(64), "tg_w2", null);
      assert.equal(await q.reserve({ ...open(2_000n, "gen_t3"), keyId: k2.id }), true);
      assert.equal(await q.reserve(open(2_001n, "gen_t4")), false, "6 000 − 4 000 held");
      await q.settle(settlement("gen_t2", 100n));
      await q.settle(settlement("gen_t3", 100n));
      assert.equal((await store.getAccount(account.id))!.balance, 6_000n - 200n);
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet retries a batch the store refused, and it lands once`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 10_000n);
      let refusals = 1;
      const flaky = withRecordSettled(
        store,
        (real) => (items: Parameters<Store["recordSettled"]>[0]) =>
          refusals-- > 0 ? Promise.reject(new Error("store down")) : real(items),
      );
      const q = new MemoryQuota(flaky);
      assert.equal(await q.reserve(open(1_000n, "gen_r1")), true);
      // While the write waits, the cost counts against the balance already.
      const settled = q.settle(settlement("gen_r1", 9_000n));
      assert.equal(await q.reserve(open(1_001n, "gen_r2")), false);
      assert.equal(await settled, true);
      assert.equal((await store.getAccount(account.id))!.balance, 1_000n);
      assert.equal(await ledgerSum(store, account.id), 1_000n);
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet counts a batch that committed though its reply was lost`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 10_000n);
      let losses = 1;
      const lossy = withRecordSettled(
        store,
        (real) => async (items: Parameters<Store["recordSettled"]>[0]) => {
          const written = await real(items);
          if (losses-- > 0) throw new Error("connection reset after the commit");
          return written;
        },
      );
      const q = new MemoryQuota(lossy);
      assert.equal(await q.reserve(open(1_000n, "gen_l1")), true);
      // The retry finds the row written: not applied again, yet its debit stands.
      assert.equal(await q.settle(settlement("gen_l1", 9_000n)), false);
      assert.equal((await store.getAccount(account.id))!.balance, 1_000n);
      assert.equal(await q.reserve(open(1_001n, "gen_l2")), false, "1 000 left holds no 1 001");
      assert.equal(await q.reserve(open(1_000n, "gen_l3")), true);
      await q.settle(settlement("gen_l3", 0n));
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet gathers settlements that arrive while a batch is written`, async () => {
    const store = await openStore();
    try {
      const { account, open } = await setup(store, 10n ** 12n);
      const statements: number[] = [];
      // The store on its own thread: settlements keep arriving while a statement runs.
      const slow = withRecordSettled(
        store,
        (real) => async (items: Parameters<Store["recordSettled"]>[0]) => {
          statements.push(items.length);
          await new Promise((r) => setTimeout(r, 10));
          return real(items);
        },
      );
      const q = new MemoryQuota(slow);
      const settled: Promise<boolean>[] = [];
      const started = performance.now();
      for (let i = 0; i < 100; i++) {
        assert.equal(await q.reserve(open(1_000n, `gen_t${i}`)), true);
        settled.push(q.settle(settlement(`gen_t${i}`, 10n)));
        await new Promise((r) => setTimeout(r, 2));
      }
      const elapsed = performance.now() - started;
      assert.ok((await Promise.all(settled)).every(Boolean));
      assert.equal(statements.reduce((a, b) => a + b, 0), 100);
      // One statement per gathering window (25 ms), not one per write's worth of arrivals
      // (every ~10 ms here, a handful of rows each).
      assert.ok(
        statements.length <= Math.ceil(elapsed / 25) + 1,
        `${statements.length} statements in ${elapsed.toFixed(0)} ms: ${statements}`,
      );
      assert.equal(await ledgerSum(store, account.id), 10n ** 12n - 1_000n);
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: wallet: past the backlog, new requests wait for the store, or are turned away while it refuses`, async () => {
    const store = await openStore();
    try {
      const { open } = await setup(store, 10n ** 12n);
      let refuse = false;
      let landed = 0;
      const gated = withRecordSettled(
        store,
        (real) => async (items: Parameters<Store["recordSettled"]>[0]) => {
          await new Promise((r) => setTimeout(r, 30));
          if (refuse) throw new Error("store down");
          const ids = await real(items);
          landed++;
          return ids;
        },
      );
      const q = new MemoryQuota(gated, 4);
      const fill = async (from: number) => {
        const settled: Promise<boolean>[] = [];
        for (let i = from; i < from + 4; i++) {
          assert.equal(await q.reserve(open(1_000n, `gen_b${i}`)), true);
          settled.push(q.settle(settlement(`gen_b${i}`, 10n)));
        }
        return settled;
      };
      // Four settlements wait: the fifth request is admitted only once a write has landed.
      const first = await fill(0);
      assert.equal(await q.reserve(open(1_000n, "gen_b4")), true);
      assert.equal(landed, 1);
      assert.ok((await Promise.all(first)).every(Boolean));
      await q.settle(settlement("gen_b4", 10n));

      // The store refuses: once a write has failed, a request past the backlog gets an error
      // (the pipeline answers 503) instead of waiting for the outage to end.
      refuse = true;
      const second = await fill(10);
      await assert.rejects(q.reserve(open(1_000n, "gen_b20")), /refusing settlements/);
      refuse = false;
      // The retry lands those four, and requests are admitted again.
      assert.ok((await Promise.all(second)).every(Boolean));
      assert.equal(await q.reserve(open(1_000n, "gen_b21")), true);
    } finally {
      await store.close();
    }
  });
}

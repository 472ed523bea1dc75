import assert from "node:assert/strict";
import { sweep } from "./sweeper.ts";
import { testStores } from "../../tests/helpers/store.ts";
import { type Quota, StoreQuota } from "../billing/quota.ts";
import { MemoryQuota } from "../billing/wallet.ts";
import { LeaseQuota } from "../billing/lease.ts";
import type { GenerationOpen, Settlement, Store } from "../store/store.ts";
import { Tracker } from "../lib/tracker.ts";
import { createLogger } from "../lib/log.ts";
import type { AppContext } from "./context.ts";

/** What the sweeper reads of the app: the store, the wallet, a tracker and a silent log. */
function appOf(store: Store, quota: Quota): AppContext {
  return {
    store,
    quota,
    tracker: new Tracker(),
    log: createLogger("error", () => {}),
  } as unknown as AppContext;
}

/** A streamed chat generation holding 300 000 nano-roubles. */
function generation(accountId: string, keyId: string, id: string): GenerationOpen {
  return { id, accountId, keyId, endpoint: "chat", model: "m", stream: true, hold: 300_000n };
}

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: the sweeper closes generations a dead instance left running, holds released`, async () => {
    const store = await open();
    try {
      const account = await store.createAccount("s", 1_000_000n);
      const key = await store.createKey(account.id, "a".repeat(64), "tg_s", null);
      for (const id of ["gen_dead1", "gen_dead2"]) {
        assert.ok(await store.reserve(generation(account.id, key.id, id)));
      }
      assert.equal((await store.getAccount(account.id))!.held, 600_000n);
      const app = appOf(store, new StoreQuota(store));
      // Younger than the threshold: left alone (another instance may still be streaming it).
      assert.equal(await sweep(app, 60_000), 0);
      assert.equal(await sweep(app, 0), 2);
      const a = (await store.getAccount(account.id))!;
      assert.equal(a.held, 0n);
      assert.equal(a.balance, 1_000_000n, "nothing known of their usage: nothing billed");
      for (const id of ["gen_dead1", "gen_dead2"]) {
        const g = await store.getGeneration(account.id, id);
        assert.equal(g?.status, "interrupted");
        assert.equal(g?.cost, 0n);
      }
      assert.equal(await sweep(app, 0), 0, "a second sweep finds nothing");
    } finally {
      await store.close();
    }
  });
}

/** The settlement of a generation that completed at `cost` (a token per 100). */
function completed(generationId: string, cost: bigint): Settlement {
  return {
    generationId,
    status: "completed",
    cost,
    costDetails: {},
    provider: "mock",
    upstreamModel: "mock-1",
    finishReason: "stop",
    tokens: { input: 10, output: Number(cost / 100n) },
    usageSource: "upstream",
    latencyMs: 5,
    ttftMs: 1,
    error: null,
  };
}

/** A generation's cost so far, as its meter would report it (a token per 100). */
function costSoFar(cost: bigint) {
  return () => ({
    cost,
    costDetails: {},
    provider: "mock",
    upstreamModel: "mock-1",
    tokens: { output: Number(cost / 100n) },
  });
}

/** A wallet that holds generations in memory, over `store`. */
type Wallet = (MemoryQuota | LeaseQuota) & { journalNow(now?: number): Promise<void> };
const WALLETS: [string, (s: Store) => Wallet][] = [
  ["embedded wallet", (s) => new MemoryQuota(s)],
  ["leased wallet", (s) => new LeaseQuota(s)],
];

/** An account of 1 000 000 nano-roubles with a key, and a generation to open on it. */
async function openOne(store: Store, id: string) {
  const account = await store.createAccount("s", 1_000_000n);
  const key = await store.createKey(account.id, id.padEnd(64, "0"), "tg_s", null);
  return { account, g: generation(account.id, key.id, id) };
}

for (const { name, open } of await testStores()) {
  for (const [kind, wallet] of WALLETS) {
    Deno.test(`${name}: a ${kind} that dies mid-generation leaves it journaled; the sweeper bills its last checkpoint`, async () => {
      const store = await open();
      const quotas: Wallet[] = [];
      try {
        const { account, g } = await openOne(store, "gen_journaled");
        const dead = wallet(store);
        quotas.push(dead);
        assert.ok(await dead.reserve(g));
        let cost = 1_000n;
        dead.watch(g.id, () => ({
          cost,
          costDetails: { upstream_inference_output_cost: 0.000001 },
          provider: "mock",
          upstreamModel: "mock-1",
          tokens: { input: 10, output: Number(cost / 100n), cacheRead: 900 },
        }));
        // Younger than journalAfterMs: not journaled yet.
        await dead.journalNow(Date.now());
        assert.equal(await store.getGeneration(account.id, g.id), null);
        await dead.journalNow(Date.now() + 1_500);
        cost = 4_200n;
        await dead.journalNow(Date.now() + 7_000);
        const row = (await store.getGeneration(account.id, g.id))!;
        assert.deepEqual([row.status, row.hold, row.cost], ["running", 0n, 4_200n]);
        // The process dies: its wallet is never settled (close writes nothing of it).
        await dead.close();

        const live = wallet(store);
        quotas.push(live);
        const app = appOf(store, live);
        // Checkpointed a moment ago: alive as far as any other instance can tell.
        assert.equal(await sweep(app, 15 * 60_000), 0);
        assert.equal(await sweep(app, 0), 1);
        const swept = (await store.getGeneration(account.id, g.id))!;
        assert.deepEqual([swept.status, swept.cost, swept.tokens.output], [
          "interrupted",
          4_200n,
          42,
        ]);
        assert.equal(swept.tokens.cacheRead, 900, "the cached prompt it was billed for");
        assert.equal(swept.usageSource, "counted");
        await live.close();
        // The dead lease (if any) goes back once expired; the balance pays the checkpoint.
        await store.expireLeases();
        const a = (await store.getAccount(account.id))!;
        assert.equal(a.balance, 1_000_000n - 4_200n);
        const debits = (await store.listLedger(account.id)).filter((e) => e.generationId === g.id);
        assert.deepEqual(debits.map((e) => e.amount), [-4_200n]);
      } finally {
        for (const q of quotas) await q.close().catch(() => {});
        await store.close();
      }
    });

    Deno.test(`${name}: a ${kind}'s journaled generation that finishes is settled once, at its cost`, async () => {
      const store = await open();
      const q = wallet(store);
      try {
        const { account, g } = await openOne(store, "gen_finishes");
        assert.ok(await q.reserve(g));
        await q.journalNow(Date.now() + 1_500);
        assert.equal((await store.getGeneration(account.id, g.id))?.status, "running");
        assert.equal(
          await q.settle(completed(g.id, 7_000n)),
          true,
        );
        // A checkpoint after the settlement is never taken.
        await q.journalNow(Date.now() + 60_000);
        await q.close();
        await store.expireLeases();
        const row = (await store.getGeneration(account.id, g.id))!;
        assert.deepEqual([row.status, row.cost], ["completed", 7_000n]);
        const a = (await store.getAccount(account.id))!;
        assert.equal(a.balance, 1_000_000n - 7_000n);
        assert.equal(
          (await store.listLedger(account.id)).filter((e) => e.kind === "debit").length,
          1,
        );
      } finally {
        await q.close().catch(() => {});
        await store.close();
      }
    });
  }
}

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: a dead leasing instance's journaled rows are billed before its leases go back`, async () => {
    const store = await open();
    const quotas: LeaseQuota[] = [];
    try {
      const account = await store.createAccount("s", 1_000n);
      const key = await store.createKey(account.id, "d".repeat(64), "tg_d", null);
      const dead = new LeaseQuota(store);
      quotas.push(dead);
      const g = { ...generation(account.id, key.id, "gen_leased"), hold: 1_000n };
      assert.ok(await dead.reserve(g), "the whole balance leased and held");
      dead.watch(g.id, costSoFar(600n));
      await dead.journalNow(Date.now() + 1_500);
      await dead.close(); // dies: the generation never settles, its lease stays
      await store.renewLeases(dead.instance, 1);
      await new Promise((r) => setTimeout(r, 20)); // the lease is past its expiry

      const live = new LeaseQuota(store);
      quotas.push(live);
      const app = appOf(store, live);
      // Checkpointed a moment ago, but its instance is dead: billed now, then the lease goes.
      assert.equal(await sweep(app, 15 * 60_000), 1);
      const a = (await store.getAccount(account.id))!;
      assert.deepEqual([a.balance, a.held, await store.leased(account.id)], [400n, 0n, 0n]);
      // What is left is all another instance can commit: the balance never goes below zero.
      const more = (id: string, hold: bigint) => live.reserve({ ...g, id, hold });
      assert.equal(await more("gen_too_much", 401n), false);
      assert.equal(await more("gen_fits", 400n), true);
    } finally {
      for (const q of quotas) await q.close().catch(() => {});
      await store.close();
    }
  });
}

const QUOTAS: [string, (s: Store) => Quota & { journalNow?(now?: number): Promise<void> }][] = [
  ["store-held", (s) => new StoreQuota(s)],
  ...WALLETS,
];

for (const { name, open } of await testStores()) {
  for (const [kind, quota] of QUOTAS) {
    Deno.test(`${name}: a ${kind} generation that outlives the deadline is not swept by its own process; another's sweep is replaced by its settlement`, async () => {
      const store = await open();
      const q = quota(store);
      try {
        const { account, g } = await openOne(store, "gen_stalled");
        assert.ok(await q.reserve(g));
        q.watch?.(g.id, () => ({
          cost: 4_200n,
          costDetails: {},
          provider: "mock",
          upstreamModel: "mock-1",
          tokens: { output: 42 },
        }));
        await q.journalNow?.(Date.now() + 1_500);
        const checkpoint = q.journalNow ? 4_200n : 0n;
        // The process slept past every deadline and woke: its sweeper runs, the stream still open.
        assert.equal(await sweep(appOf(store, q), 0), 0);
        assert.equal((await store.getGeneration(account.id, g.id))?.status, "running");
        // Another instance saw only a stale row and closed it at its checkpoint.
        assert.equal(await sweep(appOf(store, new StoreQuota(store)), 0), 1);
        assert.deepEqual(
          [
            (await store.getGeneration(account.id, g.id))?.status,
            (await store.getAccount(account.id))?.balance,
          ],
          ["interrupted", 1_000_000n - checkpoint],
        );
        // The stream ends and settles what its client was told: that is what is debited.
        assert.ok(
          await q.settle(completed(g.id, 7_000n)),
        );
        await q.close();
        await store.expireLeases();
        const row = (await store.getGeneration(account.id, g.id))!;
        assert.deepEqual([row.status, row.cost], ["completed", 7_000n]);
        const a = (await store.getAccount(account.id))!;
        assert.deepEqual([a.balance, a.held], [1_000_000n - 7_000n, 0n]);
        const debits = (await store.listLedger(account.id)).filter((e) => e.generationId === g.id);
        assert.deepEqual(debits.map((e) => e.amount), [-7_000n]);
      } finally {
        await q.close().catch(() => {});
        await store.close();
      }
    });
  }
}

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: a leasing process stalled past its lease's expiry keeps the lease its open generations hold`, async () => {
    const store = await open();
    const q = new LeaseQuota(store, {
      timing: { ttlMs: 200, safetyMs: 0, renewEveryMs: 1e9, idleMs: 1e9, tickMs: 1e9 },
    });
    const other = new StoreQuota(store);
    try {
      const { account, g: opened } = await openOne(store, "gen_own");
      // A hold of the whole balance: the lease that backs it is all of it.
      const g = { ...opened, hold: 1_000_000n };
      assert.ok(await q.reserve(g), "the whole balance leased");
      q.watch(g.id, costSoFar(4_200n));
      await q.journalNow(Date.now() + 1_500);
      await new Promise((r) => setTimeout(r, 400)); // stalled past the lease's expiry
      // Its own sweep, on waking: neither its open row nor the lease backing it goes.
      assert.equal(await sweep(appOf(store, q), 15 * 60_000), 0);
      const a = (await store.getAccount(account.id))!;
      assert.equal((await store.getGeneration(account.id, g.id))?.status, "running");
      assert.deepEqual([a.held, await store.leased(account.id)], [1_000_000n, 1_000_000n]);
      // So nobody else can spend it, and its settlement is paid out of it.
      assert.equal(await other.reserve({ ...g, id: "gen_other", hold: 1n }), false);
      await q.settle(completed(g.id, 250_000n));
      await q.close();
      const after = (await store.getAccount(account.id))!;
      assert.deepEqual([after.balance, after.held], [750_000n, 0n]);
    } finally {
      await q.close().catch(() => {});
      await store.close();
    }
  });
}

for (const { name, open } of await testStores()) {
  for (
    const [kind, quota, capped] of [
      ["store-held", (s: Store) => new StoreQuota(s), false],
      ["capped key's (leased wallet)", (s: Store) => new LeaseQuota(s), true],
    ] as const
  ) {
    Deno.test(`${name}: a ${kind} generation running past the sweep deadline is checkpointed, so a peer leaves it alone`, async () => {
      const store = await open();
      const q = quota(store);
      try {
        const { account, g } = await openOne(store, "gen_long");
        assert.ok(await q.reserve(g, { keyCapped: capped }));
        q.watch(g.id, costSoFar(900n));
        await new Promise((r) => setTimeout(r, 20));
        await q.journalNow(Date.now() + 1_500);
        const row = (await store.getGeneration(account.id, g.id))!;
        assert.deepEqual([row.status, row.hold, row.cost], ["running", 300_000n, 900n]);
        // A peer whose deadline for unjournaled rows has long passed: the checkpoint is fresh.
        assert.equal(await sweep(appOf(store, new StoreQuota(store)), 1), 0);
        assert.equal((await store.getAccount(account.id))?.held, 300_000n);
        assert.ok(await q.settle(completed(g.id, 7_000n)));
        const a = (await store.getAccount(account.id))!;
        assert.deepEqual([a.balance, a.held], [1_000_000n - 7_000n, 0n]);
      } finally {
        await q.close();
        await store.close();
      }
    });
  }
}

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: a capped key's live generation outlives its instance's leases: no peer sweeps it, the cap holds`, async () => {
    const store = await open();
    const a = new LeaseQuota(store, {
      timing: { ttlMs: 300, renewEveryMs: 3_600_000, safetyMs: 0 },
    });
    const peer = new StoreQuota(store);
    try {
      const x = await openOne(store, "gen_x1");
      assert.ok(await a.reserve({ ...x.g, hold: 1_000n }), "the instance holds a lease");
      const y = await store.createAccount("y", 10_000_000n);
      const ky = await store.createKey(y.id, "y".repeat(64), "tg_y", null);
      await store.setKeyLimits(ky.id, { spend: 400_000n });
      const capped = (id: string) => generation(y.id, ky.id, id);
      const g1 = capped("gen_y1");
      assert.ok(await a.reserve(g1, { keyCapped: true }));
      a.watch(g1.id, costSoFar(900n));
      await new Promise((r) => setTimeout(r, 20));
      await a.journalNow(Date.now() + 1_500);
      assert.equal(await peer.reserve(capped("gen_y_refused"), { keyCapped: true }), false);
      await new Promise((r) => setTimeout(r, 600)); // the instance stalls; its lease expires
      await sweep(appOf(store, peer), 15 * 60_000);
      assert.equal((await store.getGeneration(y.id, g1.id))?.status, "running");
      assert.equal(await peer.reserve(capped("gen_y2"), { keyCapped: true }), false);
      assert.ok(await a.settle(completed(g1.id, 250_000n)));
      const spent = (await store.listKeys(y.id)).find((k) => k.id === ky.id)!.spent;
      assert.equal(spent, 250_000n);
      await a.settle(completed(x.g.id, 0n));
    } finally {
      await a.close();
      await peer.close();
      await store.close();
    }
  });
}

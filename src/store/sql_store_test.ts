import assert from "node:assert/strict";
import { testStores } from "../../tests/helpers/store.ts";
import type { GenerationCheckpoint, GenerationOpen, Settlement, Store } from "./store.ts";
import { NotFoundError } from "./errors.ts";
import { generateKey, hashKey } from "./keys.ts";
import { newId } from "../lib/ids.ts";
import { SqlStore } from "./sql_store.ts";
import { migrations } from "./migrations/index.ts";
import { IDLE_TRANSACTION_TIMEOUT_MS, openPostgres } from "./postgres.ts";
import { openPglite } from "./pglite.ts";
import { scratchDatabase } from "../../tests/helpers/store.ts";

const RUB = 1_000_000_000n;

async function withStore(open: () => Promise<Store>, fn: (s: Store) => Promise<void>) {
  const store = await open();
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

/** An account with `balance` and one key. */
async function seed(store: Store, balance: bigint) {
  const account = await store.createAccount("test", balance);
  const k = await generateKey("tg");
  const key = await store.createKey(account.id, k.hash, k.display, null);
  return { account, key };
}

function open(accountId: string, keyId: string, hold: bigint): GenerationOpen {
  return { id: newId("gen"), accountId, keyId, endpoint: "chat", model: "m", stream: false, hold };
}

function settlement(generationId: string, cost: bigint): Settlement {
  return {
    generationId,
    status: "completed",
    cost,
    costDetails: { upstream_inference_input_cost: 0.5 },
    provider: "mock",
    upstreamModel: "mock-1",
    finishReason: "stop",
    tokens: { input: 10, output: 20 },
    usageSource: "upstream",
    latencyMs: 12,
    ttftMs: 3,
    error: null,
  };
}

async function invariants(store: Store, accountId: string) {
  const account = (await store.getAccount(accountId))!;
  const ledger = await store.listLedger(accountId);
  const gens = await store.listGenerations(accountId, { limit: 10_000 });
  const sum = (xs: bigint[]) => xs.reduce((a, b) => a + b, 0n);
  assert.equal(account.balance, sum(ledger.map((e) => e.amount)), "balance = Σ ledger");
  assert.equal(
    sum(ledger.filter((e) => e.kind === "debit").map((e) => e.amount)),
    -sum(gens.filter((g) => g.status !== "running").map((g) => g.cost)),
    "Σ debits = −Σ settled generation costs (a running row's cost is a checkpoint)",
  );
  assert.equal(
    account.held,
    sum(gens.filter((g) => g.status === "running").map((g) => g.hold)) +
      await store.leased(accountId),
    "held = Σ running holds + Σ leases",
  );
}

/** The ledger entries of generation `g`. */
async function debitsOf(store: Store, accountId: string, g: GenerationOpen) {
  return (await store.listLedger(accountId)).filter((e) => e.generationId === g.id).map((e) =>
    e.amount
  );
}

function settled(g: GenerationOpen, cost: bigint) {
  return { open: g, created: new Date(), settlement: settlement(g.id, cost) };
}

function checkpoint(g: GenerationOpen, cost: bigint): GenerationCheckpoint {
  return {
    open: g,
    created: new Date(),
    cost,
    costDetails: { upstream_inference_output_cost: 0.25 },
    provider: "mock",
    upstreamModel: "mock-1",
    tokens: { input: 10, output: Number(cost), cacheRead: 7, reasoning: 1 },
  };
}

for (const { name, open: openStore } of await testStores()) {
  const test = (title: string, fn: (s: Store) => Promise<void>) =>
    Deno.test(`${name}: ${title}`, () => withStore(openStore, fn));

  test("migrate twice changes nothing", async (store) => {
    assert.ok(store instanceof SqlStore);
    const before = await store.schemaSnapshot();
    await store.migrate();
    await store.migrate();
    assert.deepEqual(await store.schemaSnapshot(), before);
    const applied = (before as { migrations: unknown[] }).migrations;
    assert.deepEqual(applied, [
      { version: 1, name: "001_init" },
      { version: 2, name: "002_lean_indexes" },
      { version: 3, name: "003_leases" },
      { version: 4, name: "004_checkpoints" },
    ]);
  });

  test("account bigints are exact beyond 2^53", async (store) => {
    const balance = 10n ** 16n + 1n;
    const created = await store.createAccount("big", balance);
    assert.match(created.id, /^acc_[0-9A-Za-z]{22,}$/);
    const got = await store.getAccount(created.id);
    assert.equal(got?.balance, balance);
    assert.equal(got?.held, 0n);
    assert.equal(got?.name, "big");
    assert.equal(got?.defaultModel, null);
    assert.ok(got?.created instanceof Date);
    assert.equal(await store.getAccount("acc_missing"), null);
    await invariants(store, created.id);
  });

  test("findAccountByName finds the oldest of that name", async (store) => {
    assert.equal(await store.findAccountByName("demo"), null);
    const first = await store.createAccount("demo", RUB);
    await store.createAccount("demo", 0n);
    const found = await store.findAccountByName("demo");
    assert.equal(found?.id, first.id);
    assert.equal(found?.balance, RUB);
  });

  test("account settings: default model and rpm; unknown account throws", async (store) => {
    const a = await store.createAccount("a", 0n);
    await store.setDefaultModel(a.id, "openai/gpt-4o");
    await store.setAccountRpm(a.id, 60);
    let got = await store.getAccount(a.id);
    assert.equal(got?.defaultModel, "openai/gpt-4o");
    assert.equal(got?.rpmLimit, 60);
    await store.setDefaultModel(a.id, null);
    await store.setAccountRpm(a.id, null);
    got = await store.getAccount(a.id);
    assert.equal(got?.defaultModel, null);
    assert.equal(got?.rpmLimit, null);
    await assert.rejects(store.setDefaultModel("acc_missing", "x"), NotFoundError);
    await assert.rejects(store.setAccountRpm("acc_missing", 1), NotFoundError);
  });

  test("keys: create, find by hash, list, limits, touch, revoke", async (store) => {
    const a = await store.createAccount("a", 5n * RUB);
    const k = await generateKey("tg");
    assert.match(k.key, /^tg_[0-9A-Za-z]{43}$/);
    assert.equal(k.hash, await hashKey(k.key));
    assert.match(k.hash, /^[0-9a-f]{64}$/);
    assert.equal(k.display, k.key.slice(0, 11));
    const rec = await store.createKey(a.id, k.hash, k.display, "ci");
    assert.match(rec.id, /^key_/);
    assert.deepEqual(
      { ...rec, created: null },
      {
        id: rec.id,
        accountId: a.id,
        prefix: k.display,
        label: "ci",
        revoked: false,
        rpmLimit: null,
        spendLimit: null,
        spent: 0n,
        lastUsed: null,
        created: null,
      },
    );

    const found = await store.findKeyByHash(k.hash);
    assert.equal(found?.key.id, rec.id);
    assert.equal(found?.account.id, a.id);
    assert.equal(found?.account.balance, 5n * RUB);
    assert.equal(await store.findKeyByHash(await hashKey("tg_nope")), null);

    await store.setKeyLimits(rec.id, { rpm: 10, spend: 2n ** 60n });
    await store.setKeyLimits(rec.id, { rpm: 20 }); // spend untouched
    let [listed] = await store.listKeys(a.id);
    assert.equal(listed.rpmLimit, 20);
    assert.equal(listed.spendLimit, 2n ** 60n);
    await store.setKeyLimits(rec.id, { spend: null });
    [listed] = await store.listKeys(a.id);
    assert.equal(listed.spendLimit, null);
    assert.equal(listed.rpmLimit, 20);
    await assert.rejects(store.setKeyLimits("key_missing", { rpm: 1 }), NotFoundError);

    const t1 = new Date("2030-01-01T00:00:00Z");
    await store.touchKey(rec.id, t1);
    await store.touchKey(rec.id, new Date("2029-01-01T00:00:00Z")); // older: ignored
    [listed] = await store.listKeys(a.id);
    assert.equal(listed.lastUsed?.getTime(), t1.getTime());

    assert.equal(await store.revokeKey(rec.id), "revoked");
    assert.equal(await store.revokeKey(rec.id), "already revoked");
    assert.equal(await store.revokeKey("key_missing"), false);
    const revoked = await store.findKeyByHash(k.hash);
    assert.equal(revoked?.key.revoked, true);
    await assert.rejects(store.createKey("acc_missing", "00", "tg_x", null), NotFoundError);
  });

  test("topup with the same idempotency key credits once", async (store) => {
    const a = await store.createAccount("a", 0n);
    const first = await store.topup(a.id, 100n * RUB, "pay-1");
    assert.equal(first.applied, true);
    assert.equal(first.entry.kind, "topup");
    assert.equal(first.entry.amount, 100n * RUB);
    assert.equal(first.entry.idempotencyKey, "pay-1");
    const again = await store.topup(a.id, 100n * RUB, "pay-1");
    assert.equal(again.applied, false);
    assert.deepEqual(again.entry, first.entry);
    assert.equal((await store.getAccount(a.id))?.balance, 100n * RUB);
    await assert.rejects(store.topup(a.id, 0n, "pay-0"), RangeError);
    await invariants(store, a.id);
  });

  test("concurrent topups with the same key credit once", async (store) => {
    const a = await store.createAccount("a", 0n);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => store.topup(a.id, 7n * RUB, "pay-race")),
    );
    assert.equal(results.filter((r) => r.applied).length, 1);
    assert.equal(new Set(results.map((r) => r.entry.id)).size, 1);
    assert.equal((await store.getAccount(a.id))?.balance, 7n * RUB);
    await invariants(store, a.id);
  });

  test("reserve admits at most k of N concurrent holds", async (store) => {
    const hold = 3n * RUB;
    const { account, key } = await seed(store, 5n * hold + hold / 2n); // covers k = 5
    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.reserve(open(account.id, key.id, hold))),
    );
    assert.equal(results.filter(Boolean).length, 5);
    const after = await store.getAccount(account.id);
    assert.equal(after?.held, 5n * hold);
    const running = await store.listGenerations(account.id, { limit: 100 });
    assert.equal(running.length, 5);
    assert.ok(running.every((g) => g.status === "running" && g.hold === hold));
    await invariants(store, account.id);
  });

  test("reserve refuses a key of another account or an unknown key", async (store) => {
    const { account } = await seed(store, 10n * RUB);
    const other = await seed(store, 10n * RUB);
    assert.equal(await store.reserve(open(account.id, other.key.id, 1n)), false);
    assert.equal(await store.reserve(open(account.id, "key_missing", 1n)), false);
    assert.equal((await store.getAccount(account.id))?.held, 0n);
  });

  test("settle debits, releases the hold, and a repeat is a no-op", async (store) => {
    const { account, key } = await seed(store, 10n * RUB);
    const g = open(account.id, key.id, 2n * RUB);
    assert.equal(await store.reserve(g), true);
    assert.equal(await store.settle(settlement(g.id, 1_234_567_890n)), true);
    assert.equal(await store.settle(settlement(g.id, 9n * RUB)), false);
    const after = await store.getAccount(account.id);
    assert.equal(after?.balance, 10n * RUB - 1_234_567_890n);
    assert.equal(after?.held, 0n);
    const gen = await store.getGeneration(account.id, g.id);
    assert.equal(gen?.status, "completed");
    assert.equal(gen?.cost, 1_234_567_890n);
    assert.deepEqual(gen?.tokens, { input: 10, output: 20 });
    assert.deepEqual(gen?.costDetails, { upstream_inference_input_cost: 0.5 });
    assert.equal(gen?.usageSource, "upstream");
    assert.equal(gen?.finishReason, "stop");
    assert.equal(gen?.provider, "mock");
    assert.equal(gen?.upstreamModel, "mock-1");
    assert.equal(gen?.latencyMs, 12);
    assert.equal(gen?.ttftMs, 3);
    assert.ok(gen?.finished instanceof Date);
    const [k] = await store.listKeys(account.id);
    assert.equal(k.spent, 1_234_567_890n);
    const debits = (await store.listLedger(account.id)).filter((e) => e.kind === "debit");
    assert.deepEqual(debits.map((e) => [e.amount, e.generationId]), [[-1_234_567_890n, g.id]]);
    await invariants(store, account.id);
  });

  test("a zero-cost settlement releases the hold and writes no debit", async (store) => {
    const { account, key } = await seed(store, RUB);
    const g = open(account.id, key.id, RUB);
    assert.equal(await store.reserve(g), true);
    assert.equal(
      await store.settle({ ...settlement(g.id, 0n), status: "failed", error: "x" }),
      true,
    );
    const after = await store.getAccount(account.id);
    assert.deepEqual([after?.balance, after?.held], [RUB, 0n]);
    assert.equal((await store.listLedger(account.id)).filter((e) => e.kind === "debit").length, 0);
    assert.equal((await store.getGeneration(account.id, g.id))?.error, "x");
    await invariants(store, account.id);
  });

  test("concurrent settlements of one generation: exactly one applies", async (store) => {
    const { account, key } = await seed(store, 10n * RUB);
    const g = open(account.id, key.id, RUB);
    assert.equal(await store.reserve(g), true);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => store.settle(settlement(g.id, BigInt(i + 1) * 1000n))),
    );
    assert.equal(results.filter(Boolean).length, 1);
    const after = await store.getAccount(account.id);
    assert.equal(after?.held, 0n);
    const gen = await store.getGeneration(account.id, g.id);
    assert.equal(after?.balance, 10n * RUB - gen!.cost);
    await invariants(store, account.id);
  });

  /** The sweeper's settlement of `g` at its checkpoint `cost` (pipeline/sweeper.ts). */
  const swept = (g: GenerationOpen, cost: bigint): Settlement => ({
    ...settlement(g.id, cost),
    status: "interrupted",
    finishReason: null,
    usageSource: cost > 0n ? "counted" : "none",
    error: "interrupted: the gateway instance serving it stopped",
  });
  for (const [checkpointed, final] of [[300n, 700n], [500n, 200n], [0n, 400n], [400n, 0n]]) {
    test(`a late settlement (${final}) replaces the sweep's checkpoint (${checkpointed}): one debit, at the cost`, async (store) => {
      const { account, key } = await seed(store, 10_000n);
      const g = open(account.id, key.id, 1_000n);
      assert.equal(await store.reserve(g), true);
      // The instance stalls past the deadline: the sweeper bills the checkpoint, frees the hold.
      assert.equal(await store.settle(swept(g, checkpointed)), true);
      assert.equal(await store.settle(swept(g, 999n)), false, "a second sweep changes nothing");
      // The instance wakes and settles what the client was told it cost.
      assert.equal(await store.settle(settlement(g.id, final)), true);
      assert.equal(await store.settle(settlement(g.id, 9_000n)), false, "a retry is a no-op");
      const gen = (await store.getGeneration(account.id, g.id))!;
      assert.deepEqual([gen.status, gen.cost, gen.error, gen.finishReason], [
        "completed",
        final,
        null,
        "stop",
      ]);
      const a = (await store.getAccount(account.id))!;
      assert.deepEqual([a.balance, a.held], [10_000n - final, 0n]);
      assert.equal((await store.listKeys(account.id))[0].spent, final);
      const debits = await debitsOf(store, account.id, g);
      assert.deepEqual(debits, checkpointed === 0n && final === 0n ? [] : [-final]);
      await invariants(store, account.id);
    });
  }

  test("a batch's row the sweeper interrupted is settled late, in the batch; the others as usual", async (store) => {
    const { account, key } = await seed(store, 10_000n);
    const g1 = open(account.id, key.id, 0n);
    const g2 = open(account.id, key.id, 0n);
    await store.journal([checkpoint(g1, 250n)]);
    assert.equal(await store.settle(swept(g1, 250n)), true);
    assert.deepEqual(
      (await store.recordSettled([settled(g1, 900n), settled(g2, 50n)])).sort(),
      [
        g1.id,
        g2.id,
      ].sort(),
    );
    assert.deepEqual(await store.recordSettled([settled(g1, 900n), settled(g2, 50n)]), []);
    assert.equal((await store.getGeneration(account.id, g1.id))?.cost, 900n);
    assert.equal((await store.getAccount(account.id))?.balance, 10_000n - 950n);
    assert.deepEqual(await debitsOf(store, account.id, g1), [-900n]);
    assert.equal((await store.listKeys(account.id))[0].spent, 950n);
    await invariants(store, account.id);
  });

  test("a generation a fallback model served is recorded as that model, on every settling path", async (store) => {
    const { account, key } = await seed(store, 10_000n);
    const served = { model: "fallback/m2" };
    const modelOf = async (g: GenerationOpen) =>
      (await store.getGeneration(account.id, g.id))?.model;
    // Settled within the wallet's batch, never journaled.
    const fresh = open(account.id, key.id, 0n);
    const { settlement: s1 } = settled(fresh, 10n);
    await store.recordSettled([{ ...settled(fresh, 10n), settlement: { ...s1, ...served } }]);
    assert.equal(await modelOf(fresh), "fallback/m2");
    // Journaled while it ran (its checkpoint already names it), then settled in place.
    const long = open(account.id, key.id, 0n);
    await store.journal([{ ...checkpoint(long, 5n), ...served }]);
    assert.equal(await modelOf(long), "fallback/m2");
    const { settlement: s2 } = settled(long, 7n);
    await store.recordSettled([
      { ...settled(long, 7n), settlement: { ...s2, ...served }, journaled: true },
    ]);
    assert.equal(await modelOf(long), "fallback/m2");
    // Held in the store and settled there.
    const held = open(account.id, key.id, 100n);
    assert.equal(await store.reserve(held), true);
    assert.equal(await store.settle({ ...settlement(held.id, 3n), ...served }), true);
    assert.equal(await modelOf(held), "fallback/m2");
    // Without a fallback the model is the one it opened with.
    const plain = open(account.id, key.id, 100n);
    assert.equal(await store.reserve(plain), true);
    assert.equal(await store.settle(settlement(plain.id, 3n)), true);
    assert.equal(await modelOf(plain), "m");
    await invariants(store, account.id);
  });

  test("a fallback's late settlement names its model, leased or not, as settle and batch", async (store) => {
    const { account, key } = await seed(store, 10_000n);
    const served = { model: "fallback/m2" };
    const modelOf = async (g: GenerationOpen) =>
      (await store.getGeneration(account.id, g.id))?.model;
    // Held in the store, swept while its instance stalled, settled late by `settle`.
    const held = open(account.id, key.id, 1_000n);
    assert.equal(await store.reserve(held), true);
    assert.equal(await store.settle(swept(held, 100n)), true);
    assert.equal(await store.settle({ ...settlement(held.id, 300n), ...served }), true);
    // A wallet's journaled rows swept, then settled late within a batch, with a lease and without.
    const [g1, g2] = [0, 1].map(() => open(account.id, key.id, 0n));
    await store.journal([checkpoint(g1, 50n), checkpoint(g2, 50n)], "ins_a");
    for (const g of [g1, g2]) assert.equal(await store.settle(swept(g, 50n)), true);
    const late = (g: GenerationOpen, cost: bigint) => {
      const item = settled(g, cost);
      return { ...item, settlement: { ...item.settlement, ...served }, journaled: true };
    };
    await store.lease("ins_a", account.id, 500n, 500n, 60_000);
    assert.deepEqual(await store.recordSettled([late(g1, 70n)], "ins_a"), [g1.id]);
    assert.deepEqual(await store.recordSettled([late(g2, 80n)]), [g2.id]);
    for (const g of [held, g1, g2]) assert.equal(await modelOf(g), "fallback/m2");
    assert.deepEqual(await debitsOf(store, account.id, held), [-300n]);
    assert.deepEqual(await debitsOf(store, account.id, g1), [-70n]);
    assert.deepEqual(await debitsOf(store, account.id, g2), [-80n]);
    await store.endLease("ins_a", account.id);
    assert.equal((await store.getAccount(account.id))?.balance, 10_000n - 450n);
    await invariants(store, account.id);
  });

  test("a batch of new rows and one written before: the new written, the old not debited again", async (store) => {
    const { account, key } = await seed(store, 10_000n);
    const [g1, g2, g3] = [0, 1, 2].map(() => open(account.id, key.id, 0n));
    assert.deepEqual(await store.recordSettled([settled(g1, 100n)]), [g1.id]);
    // A retried batch that also carries new rows: the statement that takes every row as new
    // fails on g1, and the batch is written by the one that looks each row up.
    assert.deepEqual(
      (await store.recordSettled([settled(g2, 20n), settled(g1, 100n), settled(g3, 3n)])).sort(),
      [g2.id, g3.id].sort(),
    );
    assert.equal((await store.getAccount(account.id))?.balance, 10_000n - 123n);
    for (const [g, cost] of [[g1, 100n], [g2, 20n], [g3, 3n]] as const) {
      assert.deepEqual(await debitsOf(store, account.id, g), [-cost]);
    }
    assert.equal((await store.listKeys(account.id))[0].spent, 123n);
    await invariants(store, account.id);
  });

  test("a leased instance's late settlement takes the difference out of its lease, where it has one", async (store) => {
    const { account, key } = await seed(store, 10_000n);
    const g1 = open(account.id, key.id, 0n);
    const g2 = open(account.id, key.id, 0n);
    await store.journal([checkpoint(g1, 100n), checkpoint(g2, 100n)], "ins_a");
    for (const g of [g1, g2]) assert.equal(await store.settle(swept(g, 100n)), true);
    // The lease it had is gone (swept); it woke and leased anew.
    await store.lease("ins_a", account.id, 1_000n, 1_000n, 60_000);
    assert.deepEqual(await store.recordSettled([settled(g1, 400n)], "ins_a"), [g1.id]);
    let a = (await store.getAccount(account.id))!;
    // 100 debited by the sweep, 300 more now, out of the lease: the free balance is unchanged.
    assert.deepEqual([a.balance, a.held, await store.leased(account.id)], [9_500n, 700n, 700n]);
    // No lease left: the balance pays the difference.
    await store.endLease("ins_a", account.id);
    assert.deepEqual(await store.recordSettled([settled(g2, 150n)], "ins_a"), [g2.id]);
    a = (await store.getAccount(account.id))!;
    assert.deepEqual([a.balance, a.held], [9_450n, 0n]);
    assert.deepEqual(await debitsOf(store, account.id, g1), [-400n]);
    assert.deepEqual(await debitsOf(store, account.id, g2), [-150n]);
    await invariants(store, account.id);
  });

  test("ledger and generations agree after mixed traffic", async (store) => {
    const { account, key } = await seed(store, 3n * RUB);
    await store.topup(account.id, 2n * RUB, "t1");
    const gens = Array.from({ length: 12 }, () => open(account.id, key.id, RUB / 3n));
    const admitted = await Promise.all(gens.map((g) => store.reserve(g)));
    await Promise.all(
      gens.map((g, i) =>
        admitted[i] && i % 3 !== 0 ? store.settle(settlement(g.id, BigInt(i) * 7_777_777n)) : null
      ),
    );
    await store.topup(account.id, 1n * RUB, "t2");
    await invariants(store, account.id);
  });

  test("listGenerations pages newest first with a cursor", async (store) => {
    const { account, key } = await seed(store, 100n * RUB);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const g = open(account.id, key.id, 1n);
      assert.equal(await store.reserve(g), true);
      ids.push(g.id);
    }
    const newest = [...ids].reverse();
    const page1 = await store.listGenerations(account.id, { limit: 3 });
    const page2 = await store.listGenerations(account.id, { limit: 3, before: page1[2].id });
    const page3 = await store.listGenerations(account.id, { limit: 3, before: page2[2].id });
    assert.deepEqual([...page1, ...page2, ...page3].map((g) => g.id), newest);
    assert.equal(page3.length, 1);
    assert.deepEqual(await store.listGenerations(account.id, { limit: 3, before: "gen_nope" }), []);
  });

  test("an id or cursor holding U+0000 names nothing (PostgreSQL text cannot hold it)", async (store) => {
    const { account, key } = await seed(store, RUB);
    const g = open(account.id, key.id, 1n);
    assert.equal(await store.reserve(g), true);
    assert.equal(await store.getGeneration(account.id, g.id + "\u0000"), null);
    assert.deepEqual(
      await store.listGenerations(account.id, { limit: 10, before: g.id + "\u0000" }),
      [],
    );
  });

  test("counts an integer column cannot hold are stored bounded, by every settlement path", async (store) => {
    // An upstream's usage is any finite JSON number: a fraction, a negative or one past 2^31
    // in an integer column failed the statement, and a wallet batch with it on every retry.
    const { account, key } = await seed(store, RUB);
    const g1 = open(account.id, key.id, 1n);
    const g2 = open(account.id, key.id, 1n);
    const g3 = open(account.id, key.id, 1n);
    assert.equal(await store.reserve(g1), true);
    const odd = {
      tokens: { input: 12.6, output: 3e9, cacheRead: -4, reasoning: 2 ** 31 },
      latencyMs: 1.5,
      ttftMs: -1,
    };
    assert.equal(await store.settle({ ...settlement(g1.id, 5n), ...odd }), true);
    const batch = { ...settled(g2, 7n) };
    batch.settlement = { ...batch.settlement, ...odd };
    assert.deepEqual(await store.recordSettled([batch]), [g2.id]);
    await store.journal([{
      open: g3,
      created: new Date(),
      cost: 2n,
      costDetails: {},
      provider: "p",
      upstreamModel: "m",
      tokens: odd.tokens,
    }]);
    for (const id of [g1.id, g2.id]) {
      const row = (await store.getGeneration(account.id, id))!;
      assert.deepEqual(row.tokens, {
        input: 13,
        output: 2_147_483_647,
        cacheRead: 0,
        reasoning: 2_147_483_647,
      });
      assert.deepEqual([row.latencyMs, row.ttftMs], [2, 0]);
    }
    assert.equal((await store.getGeneration(account.id, g3.id))?.tokens.output, 2_147_483_647);
  });

  test("texts PostgreSQL cannot hold are stored mended, by every settlement path", async (store) => {
    const { account, key } = await seed(store, RUB);
    const g1 = open(account.id, key.id, 1n);
    const g2 = open(account.id, key.id, 1n);
    assert.equal(await store.reserve(g1), true);
    const odd = { upstreamModel: "m\u0000\udc00", error: "cut \ud83d", status: "failed" as const };
    assert.equal(await store.settle({ ...settlement(g1.id, 5n), ...odd }), true);
    const batch = { ...settled(g2, 7n) };
    batch.settlement = { ...batch.settlement, ...odd };
    assert.deepEqual(await store.recordSettled([batch]), [g2.id]);
    for (const id of [g1.id, g2.id]) {
      const row = (await store.getGeneration(account.id, id))!;
      assert.equal(row.upstreamModel, "m\uFFFD\uFFFD");
      assert.equal(row.error, "cut \uFFFD");
    }
    await invariants(store, account.id);
  });

  test("another account's generation is invisible", async (store) => {
    const { account, key } = await seed(store, RUB);
    const other = await store.createAccount("other", RUB);
    const g = open(account.id, key.id, 1n);
    assert.equal(await store.reserve(g), true);
    assert.equal(await store.getGeneration(other.id, g.id), null);
    assert.deepEqual(await store.listGenerations(other.id, { limit: 10 }), []);
    assert.deepEqual(
      await store.listGenerations(other.id, { limit: 10, before: g.id }),
      [],
    );
    assert.equal((await store.getGeneration(account.id, g.id))?.id, g.id);
  });

  test("a key's spend cap blocks reserve, counting spent and holds in flight", async (store) => {
    const { account, key } = await seed(store, 100n * RUB);
    await store.setKeyLimits(key.id, { spend: 5n * RUB });
    const g1 = open(account.id, key.id, 3n * RUB);
    assert.equal(await store.reserve(g1), true);
    assert.equal(await store.reserve(open(account.id, key.id, 3n * RUB)), false); // 3 + 3 > 5
    assert.equal(await store.settle(settlement(g1.id, 4n * RUB)), true);
    assert.equal(await store.reserve(open(account.id, key.id, 2n * RUB)), false); // 4 + 2 > 5
    assert.equal(await store.reserve(open(account.id, key.id, RUB)), true); // 4 + 1 = 5
    await store.setKeyLimits(key.id, { spend: null });
    assert.equal(await store.reserve(open(account.id, key.id, 50n * RUB)), true);
    await invariants(store, account.id);
  });

  test("concurrent reserves on a capped key admit only what the cap covers", async (store) => {
    const { account, key } = await seed(store, 100n * RUB);
    await store.setKeyLimits(key.id, { spend: 5n * RUB });
    // Every pooled connection open first, so that the reserves do run at once.
    await Promise.all(Array.from({ length: 16 }, () => store.getAccount(account.id)));
    const results = await Promise.all(
      Array.from({ length: 24 }, () => store.reserve(open(account.id, key.id, 2n * RUB))),
    );
    assert.equal(results.filter(Boolean).length, 2, "2 × 2 ₽ fit a 5 ₽ cap, 3 do not");
    await invariants(store, account.id);
  });

  test("staleGenerations lists running generations opened before a time", async (store) => {
    const { account, key } = await seed(store, RUB);
    const a = open(account.id, key.id, 1n);
    const b = open(account.id, key.id, 1n);
    assert.equal(await store.reserve(a), true);
    assert.equal(await store.reserve(b), true);
    await store.settle(settlement(b.id, 1n));
    await new Promise((r) => setTimeout(r, 5)); // past the clock's millisecond
    const stale = await store.staleGenerations({ olderThanMs: 0 });
    assert.deepEqual(stale.map((g) => g.id), [a.id]);
    assert.deepEqual(await store.staleGenerations({ olderThanMs: 60_000 }), []);
  });

  for (const lease of [undefined, "ins_a"]) {
    test(`a journaled generation runs with hold 0, is settled in place once (${lease ?? "embedded"})`, async (store) => {
      const { account, key } = await seed(store, 10n);
      if (lease) await store.lease(lease, account.id, 5n, 5n, 60_000);
      const g = open(account.id, key.id, 5n);
      await store.journal([checkpoint(g, 1n)]);
      await store.journal([checkpoint(g, 2n)]);
      let row = (await store.getGeneration(account.id, g.id))!;
      assert.deepEqual([row.status, row.hold, row.cost, row.tokens.output], ["running", 0n, 2n, 2]);
      // Every figure the cost was computed on, not only input and output.
      assert.deepEqual([row.tokens.cacheRead, row.tokens.reasoning], [7, 1]);
      assert.equal(
        (await store.getAccount(account.id))!.balance,
        10n,
        "a checkpoint debits nothing",
      );
      await invariants(store, account.id);

      assert.deepEqual(await store.recordSettled([settled(g, 3n)], lease), [g.id]);
      row = (await store.getGeneration(account.id, g.id))!;
      assert.deepEqual([row.status, row.cost, row.tokens.output], ["completed", 3n, 20]);
      // Neither a late checkpoint nor a retried batch moves anything again.
      await store.journal([checkpoint(g, 4n)]);
      assert.deepEqual(await store.recordSettled([settled(g, 3n)], lease), []);
      row = (await store.getGeneration(account.id, g.id))!;
      assert.deepEqual([row.status, row.cost], ["completed", 3n]);
      const a = (await store.getAccount(account.id))!;
      assert.equal(a.balance, 7n);
      if (lease) assert.equal(await store.leased(account.id), 2n, "the lease paid");
      const debits = (await store.listLedger(account.id)).filter((e) => e.generationId === g.id);
      assert.deepEqual(debits.map((e) => e.amount), [-3n]);
      await invariants(store, account.id);
    });
  }

  test("a journaled row is stale by its last checkpoint, an unjournaled one by its opening", async (store) => {
    const { account, key } = await seed(store, 10n);
    const held = open(account.id, key.id, 1n);
    assert.equal(await store.reserve(held), true);
    const journaled = open(account.id, key.id, 1n);
    await store.journal([{
      ...checkpoint(journaled, 1n),
      created: new Date(Date.now() - 3_600_000),
    }], "ins_a");
    const ids = async (olderThanMs: number, checkpointStaleMs: number, instances?: string[]) =>
      (await store.staleGenerations({ olderThanMs, checkpointStaleMs, instances }))
        .map((g) => g.id).sort();
    // (A negative age: "opened before a minute from now", i.e. every row.)
    // Opened an hour ago but checkpointed just now: alive.
    assert.deepEqual(await ids(-60_000, 60_000), [held.id]);
    assert.deepEqual(await ids(60_000, -60_000), [journaled.id]);
    assert.deepEqual(await ids(-60_000, -60_000), [held.id, journaled.id].sort());
    // Its instance is dead (its leases expired): stale however fresh its checkpoint.
    assert.deepEqual(await ids(60_000, 60_000, ["ins_a"]), [journaled.id]);
    assert.deepEqual(await ids(60_000, 60_000, ["ins_b"]), []);
  });

  test("a lease takes up to want, at least min, beyond that half the free balance, into held", async (store) => {
    const { account, key } = await seed(store, 10n);
    assert.equal(await store.lease("ins_a", account.id, 2n, 4n, 60_000), 4n);
    // 6 free: a lease needing 7 takes nothing.
    assert.equal(await store.lease("ins_a", account.id, 7n, 8n, 60_000), 0n);
    assert.equal((await store.getAccount(account.id))?.held, 4n);
    // Beyond what it needs, at most half what is free (6): 3, then the last 3.
    assert.equal(await store.lease("ins_a", account.id, 3n, 100n, 60_000), 3n);
    assert.equal(await store.lease("ins_a", account.id, 3n, 100n, 60_000), 3n);
    assert.equal(await store.leased(account.id), 10n);
    // All of it leased: neither another instance nor a hold in the store gets any.
    assert.equal(await store.lease("ins_b", account.id, 1n, 1n, 60_000), 0n);
    assert.equal(await store.reserve(open(account.id, key.id, 1n)), false);
    assert.equal(await store.lease("ins_a", "acc_missing", 0n, 5n, 60_000), 0n);
    await assert.rejects(store.lease("ins_a", account.id, 3n, 2n, 60_000), RangeError);
    await invariants(store, account.id);
  });

  test("concurrent leases never grant more than the free balance", async (store) => {
    const { account } = await seed(store, 10n);
    const granted = await Promise.all(
      Array.from({ length: 16 }, (_, i) => store.lease(`ins_${i}`, account.id, 1n, 3n, 60_000)),
    );
    assert.equal(granted.reduce((a, b) => a + b, 0n), 10n);
    assert.equal((await store.getAccount(account.id))?.held, 10n);
    await invariants(store, account.id);
  });

  test("a leased batch debits the balance and the lease, never more than the lease holds", async (store) => {
    const { account, key } = await seed(store, 10n);
    const other = await seed(store, 10n);
    await store.lease("ins_a", account.id, 5n, 5n, 60_000);
    await store.lease("ins_b", account.id, 1n, 1n, 60_000);
    const g1 = open(account.id, key.id, 3n);
    const g2 = open(account.id, key.id, 2n);
    // An account this instance holds no lease on: debited, held untouched.
    const g3 = open(other.account.id, other.key.id, 1n);
    const ids = await store.recordSettled(
      [settled(g1, 2n), settled(g2, 1n), settled(g3, 1n)],
      "ins_a",
    );
    assert.deepEqual(ids.sort(), [g1.id, g2.id, g3.id].sort());
    let a = (await store.getAccount(account.id))!;
    assert.deepEqual([a.balance, a.held, await store.leased(account.id)], [7n, 3n, 3n]);
    assert.deepEqual((await store.getAccount(other.account.id))?.held, 0n);
    // A repeat applies nothing; a cost beyond what the lease holds takes the lease to zero.
    assert.deepEqual(await store.recordSettled([settled(g1, 2n)], "ins_a"), []);
    const g4 = open(account.id, key.id, 5n);
    await store.recordSettled([settled(g4, 4n)], "ins_a");
    a = (await store.getAccount(account.id))!;
    assert.deepEqual([a.balance, a.held, await store.leased(account.id)], [3n, 1n, 1n]);
    assert.equal((await store.listKeys(account.id))[0].spent, 7n);
    await invariants(store, account.id);
    await invariants(store, other.account.id);
  });

  test("leases end, renew and expire", async (store) => {
    const { account } = await seed(store, 100n);
    await store.lease("ins_a", account.id, 10n, 10n, 60_000);
    await store.lease("ins_b", account.id, 20n, 20n, 1);
    await store.lease("ins_c", account.id, 30n, 30n, 1);
    assert.deepEqual(await store.renewLeases("ins_c", 60_000), [account.id]);
    assert.deepEqual(await store.renewLeases("ins_none", 60_000), []);
    await new Promise((r) => setTimeout(r, 20));
    // ins_b's lease expired (not renewed); ins_a's and the renewed ins_c's stay.
    assert.equal(await store.expireLeases(), 1);
    assert.equal(await store.expireLeases(), 0);
    assert.equal((await store.getAccount(account.id))?.held, 40n);
    await store.endLease("ins_a", account.id);
    await store.endLease("ins_a", account.id);
    assert.equal((await store.getAccount(account.id))?.held, 30n);
    assert.equal(await store.leased(account.id), 30n);
    await invariants(store, account.id);
  });

  test("blobs round-trip", async (store) => {
    const a = await store.createAccount("a", 0n);
    const blob = {
      id: newId("blob"),
      accountId: a.id,
      contentType: "image/png",
      size: 1234,
      storageKey: "ab/cd.png",
      created: new Date("2030-01-02T03:04:05.678Z"),
    };
    await store.putBlob(blob);
    assert.deepEqual(await store.getBlob(blob.id), blob);
    assert.equal(await store.getBlob("blob_missing"), null);
  });

  test("ping answers", async (store) => {
    await store.ping();
  });
}

const databaseUrl = Deno.env.get("DATABASE_URL");
Deno.test({
  name: "postgres: instances migrating at once queue on the advisory lock",
  ignore: !databaseUrl,
  async fn() {
    const scratch = await scratchDatabase(databaseUrl!);
    const stores = await Promise.all(
      Array.from({ length: 4 }, async () => new SqlStore(await openPostgres(scratch.url))),
    );
    try {
      await Promise.all(stores.map((s) => s.migrate()));
      const snapshots = await Promise.all(stores.map((s) => s.schemaSnapshot()));
      assert.deepEqual(
        snapshots[0].migrations,
        migrations.map(({ version, name }) => ({ version, name })),
      );
      for (const s of snapshots) assert.deepEqual(s, snapshots[0]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await scratch.drop();
    }
  },
});

Deno.test({
  name: "postgres: a transaction its instance left open is ended by PostgreSQL, not kept for good",
  ignore: !databaseUrl,
  async fn() {
    const scratch = await scratchDatabase(databaseUrl!);
    const db = await openPostgres(scratch.url);
    try {
      const rows = await db.query<{ ms: string }>(
        "SELECT setting AS ms FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'",
      );
      assert.equal(Number(rows[0].ms), IDLE_TRANSACTION_TIMEOUT_MS);
    } finally {
      await db.close();
      await scratch.drop();
    }
  },
});

Deno.test("recordSettled: rows never journaled go in one statement that looks nothing up; a journaled row, or a row there after all, takes the one that does", async () => {
  const db = await openPglite(undefined);
  const statements: string[] = [];
  const store = new SqlStore({
    ...db,
    trustedBatch<T>(name: string, sql: string, arg: string) {
      statements.push(name);
      return db.trustedBatch!<T>(name, sql, arg);
    },
  });
  try {
    await store.migrate();
    const { account, key } = await seed(store, 10_000n);
    const [a, b, c, d, e] = [0, 1, 2, 3, 4].map(() => open(account.id, key.id, 0n));

    assert.deepEqual(
      (await store.recordSettled([settled(a, 1n), settled(b, 2n)])).sort(),
      [a.id, b.id].sort(),
    );
    assert.deepEqual(statements.splice(0), ["record_settled_new"]);

    // c was journaled (its running row is in the store): settled in place, by the full statement.
    await store.journal([checkpoint(c, 4n)]);
    assert.deepEqual(
      (await store.recordSettled([{ ...settled(c, 8n), journaled: true }, settled(d, 16n)])).sort(),
      [c.id, d.id].sort(),
    );
    assert.deepEqual(statements.splice(0), ["record_settled"]);
    assert.equal((await store.getGeneration(account.id, c.id))?.status, "completed");

    // a again, not flagged (a retried batch whose first answer was lost): the first statement
    // fails on a's key and changes nothing; the second writes e alone.
    assert.deepEqual(await store.recordSettled([settled(a, 1n), settled(e, 32n)]), [e.id]);
    assert.deepEqual(statements.splice(0), ["record_settled_new", "record_settled"]);

    assert.equal((await store.getAccount(account.id))?.balance, 10_000n - 59n);
    for (const [g, cost] of [[a, 1n], [b, 2n], [c, 8n], [d, 16n], [e, 32n]] as const) {
      assert.deepEqual(await debitsOf(store, account.id, g), [-cost]);
    }
    await invariants(store, account.id);
  } finally {
    await store.close();
  }
});

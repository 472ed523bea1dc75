import assert from "node:assert/strict";
import { scratchDatabase, testStores } from "../../tests/helpers/store.ts";
import { openStore } from "../store/mod.ts";
import { hashKey } from "../store/keys.ts";
import { ensureDemoAccount } from "./demo.ts";

const cfg = { DEMO_BALANCE_RUB: "1000", KEY_PREFIX: "tg" };
const RUB = 1_000_000_000n;

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: the first start makes the demo account and its key, later ones find it`, async () => {
    const store = await open();
    try {
      const first = await ensureDemoAccount(store, cfg);
      assert.ok(first.key);
      const auth = await store.findKeyByHash(await hashKey(first.key));
      assert.equal(auth?.account.id, first.accountId);
      assert.equal(auth?.account.balance, 1000n * RUB);
      const later = await ensureDemoAccount(store, cfg);
      assert.deepEqual(later, { accountId: first.accountId });
    } finally {
      await store.close();
    }
  });

  Deno.test(`${name}: starts racing on one store make one demo account, one key shown`, async () => {
    const store = await open();
    try {
      const runs = await Promise.all([1, 2, 3].map(() => ensureDemoAccount(store, cfg)));
      assert.equal(new Set(runs.map((r) => r.accountId)).size, 1);
      assert.equal(runs.filter((r) => r.key).length, 1);
      const ledger = await store.listLedger(runs[0].accountId);
      assert.equal(ledger.reduce((sum, e) => sum + e.amount, 0n), 1000n * RUB);
    } finally {
      await store.close();
    }
  });
}

const url = Deno.env.get("DATABASE_URL");
Deno.test({
  name: "postgres: instances starting together on a fresh database make one demo account",
  ignore: !url,
  async fn() {
    const scratch = await scratchDatabase(url!);
    const stores = await Promise.all([1, 2].map(() => openStore({ databaseUrl: scratch.url })));
    try {
      const runs = await Promise.all(stores.map((s) => ensureDemoAccount(s, cfg)));
      assert.equal(runs[0].accountId, runs[1].accountId);
      assert.equal(runs.filter((r) => r.key).length, 1);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await scratch.drop();
    }
  },
});

import assert from "node:assert/strict";
import { sweep } from "./sweeper.ts";
import { testStores } from "../../tests/helpers/store.ts";
import { StoreQuota } from "../billing/quota.ts";
import { Tracker } from "../lib/tracker.ts";
import { createLogger } from "../lib/log.ts";
import type { AppContext } from "./context.ts";

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: the sweeper closes generations a dead instance left running, holds released`, async () => {
    const store = await open();
    try {
      const account = await store.createAccount("s", 1_000_000n);
      const key = await store.createKey(account.id, "a".repeat(64), "tg_s", null);
      for (const id of ["gen_dead1", "gen_dead2"]) {
        assert.ok(
          await store.reserve({
            id,
            accountId: account.id,
            keyId: key.id,
            endpoint: "chat",
            model: "m",
            stream: true,
            hold: 300_000n,
          }),
        );
      }
      assert.equal((await store.getAccount(account.id))!.held, 600_000n);
      const app = {
        store,
        quota: new StoreQuota(store),
        tracker: new Tracker(),
        log: createLogger("error", () => {}),
      } as unknown as AppContext;
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

/**
 * PostgreSQL that stops answering without closing its connections (a network partition, a
 * frozen host): postgres.js then waits for good, with no timeout of its own. A paid request
 * whose hold needs the store (a key with a spend cap; every request on Deno Deploy) must get a
 * 503 with Retry-After within seconds, not hang; and a hold that lands after its request gave
 * up must be given back, not left held.
 */
import assert from "node:assert/strict";
import { startGateway } from "../helpers/gateway.ts";
import { testStores } from "../helpers/store.ts";
import { MODEL } from "../helpers/chat.ts";
import { sleep } from "../helpers/faults.ts";

Deno.test("faults: a stalled store answers a paid request 503 in seconds and frees the late hold", async () => {
  const [embedded] = await testStores();
  const store = await embedded.open();
  const reserve = store.reserve.bind(store);
  let stalled = false;
  const waiting: (() => void)[] = [];
  store.reserve = (g, opts) => {
    if (!stalled) return reserve(g, opts);
    // The statement reaches the store only when the "network" comes back.
    return new Promise<void>((r) => waiting.push(r)).then(() => reserve(g, opts));
  };
  const g = await startGateway({ store, quota: "store" });
  try {
    stalled = true;
    const t0 = performance.now();
    const res = await fetch(`${g.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
      signal: AbortSignal.timeout(15_000),
    });
    const waited = performance.now() - t0;
    await res.body?.cancel();
    assert.equal(res.status, 503);
    assert.ok(res.headers.get("retry-after"));
    assert.ok(waited < 10_000, `answered after ${Math.round(waited)} ms`);

    // The store answers again: the hold it now takes belongs to nobody and must go back.
    stalled = false;
    for (const r of waiting.splice(0)) r();
    let held = -1n;
    for (let i = 0; i < 100 && held !== 0n; i++) {
      await sleep(50);
      await g.settled();
      held = (await store.getAccount(g.accountId))!.held;
    }
    assert.equal(held, 0n, "the late hold is still held");
    const [gen] = await store.listGenerations(g.accountId, { limit: 1 });
    assert.equal(gen.status, "failed");
    assert.equal(gen.cost, 0n);
  } finally {
    await g.close();
    await store.close();
  }
});

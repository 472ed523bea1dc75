/**
 * The store answers reads but refuses writes (a full disk under the embedded store's DATA_DIR,
 * PostgreSQL out of space or read-only): settlements then wait in memory, retried, and a crash
 * would lose them all, up to the backlog's 1 024, not one 25 ms batch. `/readyz` must say so
 * (503) while it lasts, so the operator's health check sees what a `SELECT 1` does not.
 */
import assert from "node:assert/strict";
import { startGateway } from "../helpers/gateway.ts";
import { testStores } from "../helpers/store.ts";
import { MODEL } from "../helpers/chat.ts";
import { sleep } from "../helpers/faults.ts";

Deno.test("faults: /readyz is 503 while the store refuses settlements, ready once they land", async () => {
  const [embedded] = await testStores();
  const store = await embedded.open();
  const record = store.recordSettled.bind(store);
  let full = false;
  store.recordSettled = (...args: Parameters<typeof record>) =>
    full
      ? Promise.reject(new Error("could not extend file: No space left on device"))
      : record(...args);
  const g = await startGateway({ store, quota: "memory" });
  const ready = async () => {
    const res = await fetch(`${g.url}/readyz`);
    await res.body?.cancel();
    return res.status;
  };
  try {
    assert.equal(await ready(), 200);
    full = true;
    const res = await fetch(`${g.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.body?.cancel();
    assert.equal(res.status, 200);
    await sleep(200);
    assert.equal(await ready(), 503, "ready while its settlements are refused");

    full = false;
    let status = 0;
    for (let i = 0; i < 60 && status !== 200; i++) {
      await sleep(100);
      status = await ready();
    }
    assert.equal(status, 200);
    await g.settled();
    assert.equal((await store.listGenerations(g.accountId, { limit: 5 })).length, 1);
  } finally {
    full = false; // or closing would wait for the refused batch for good
    await g.close();
    await store.close();
  }
});

/**
 * The leased wallet (instances sharing PostgreSQL) behind real servers: two gateway instances
 * on one store serve one account, each against the slice of its balance it leased.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  checkInvariants,
  probeHold,
  rubText,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.ts";
import { nanoToRub, rubToNano } from "../../src/billing/money.ts";
import { waitFor } from "../helpers/chat.ts";
import { peerBatchWaitMs } from "../../src/pipeline/settled_so_far.ts";

const MODEL = "openai/gpt-4o-mini";

/** Two instances with leased wallets on one store; the first one's account and key serve both. */
async function withCluster(
  balanceRub: string,
  fn: (a: TestGateway, b: TestGateway) => Promise<void>,
): Promise<void> {
  const a = await startGateway({ quota: "lease", balanceRub });
  let b: TestGateway | undefined;
  try {
    b = await startGateway({ quota: "lease", store: a.store });
    await fn(a, b);
    await Promise.all([a.settled(), b.settled()]);
    assert.deepEqual(await checkInvariants(a.store, [a.accountId]), []);
    // Closing an instance gives its leases back: nothing stays held.
    await b.close();
    b = undefined;
    await a.gw.ctx.quota.close();
    assert.equal((await a.store.getAccount(a.accountId))!.held, 0n);
    assert.equal(await a.store.leased(a.accountId), 0n);
    assert.deepEqual(await checkInvariants(a.store, [a.accountId]), []);
  } finally {
    await b?.close();
    await a.close();
  }
}

function ask(g: TestGateway, key: string, content: string) {
  return fetch(`${g.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content }] }),
  });
}

Deno.test("leased wallet: two instances bill one account exactly what each answer shows", async () => {
  await withCluster("1000", async (a, b) => {
    const clients = [a, b].map((g) =>
      new OpenAI({ apiKey: a.key, baseURL: g.baseURL, maxRetries: 0 })
    );
    const costs = await Promise.all(Array.from({ length: 24 }, async (_, i) => {
      const client = clients[i % 2];
      if (i % 3 === 0) {
        let cost = 0;
        for await (
          const c of await client.chat.completions.create({
            model: MODEL,
            messages: [{ role: "user", content: `n${i} [[mock:tokens=${i + 1}]]` }],
            stream: true,
          })
        ) if (c.usage) cost = (c.usage as unknown as { cost: number }).cost;
        return cost;
      }
      const r = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: `n${i} [[mock:tokens=${i + 1}]]` }],
      });
      return (r.usage as unknown as { cost: number }).cost;
    }));
    assert.equal(a.mock.stats.total + b.mock.stats.total, 24);
    assert.ok(a.mock.stats.total > 0 && b.mock.stats.total > 0, "both instances served");
    await Promise.all([a.settled(), b.settled()]);
    const acct = (await a.store.getAccount(a.accountId))!;
    const debited = rubToNano("1000") - acct.balance;
    const shown = costs.reduce((s, c) => s + rubToNano(String(c)), 0n);
    assert.equal(debited, shown, `debited ${nanoToRub(debited)}, shown ${nanoToRub(shown)}`);
    // Each instance still holds its lease: held is leases only.
    assert.equal(acct.held, await a.store.leased(a.accountId));
    assert.ok(acct.held > 0n);
  });
});

Deno.test("leased wallet: 30 concurrent requests over two instances on a balance of 3 holds admit 3", async () => {
  // Each answer comes 3 s after it was asked, so that the 30 are in flight together: one
  // answered and settled early gives its hold back, and a later request fits in it (on a
  // loaded machine sending the 30 took longer than the 300 ms this test once waited, and 6
  // were admitted, one after another).
  const content = "x [[mock:tokens=5,first=3000]]";
  // One call's hold at max_tokens 100 for this model is found first, on a rich account.
  const hold = await probeHold({
    model: MODEL,
    max_tokens: 100,
    messages: [{ role: "user", content }],
  });
  await withCluster(rubText(hold * 3n + hold / 2n), async (a, b) => {
    const statuses = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
      const res = await ask(i % 2 ? b : a, a.key, content);
      await res.body?.cancel();
      return res.status;
    }));
    assert.equal(statuses.filter((s) => s === 200).length, 3);
    assert.equal(statuses.filter((s) => s === 402).length, 27);
    assert.equal(a.mock.stats.total + b.mock.stats.total, 3);
    await Promise.all([a.settled(), b.settled()]);
    assert.ok((await a.store.getAccount(a.accountId))!.balance >= 0n);
  });
});

Deno.test("leased wallet: a generation one instance answered is found at once through the other", async () => {
  await withCluster("1000", async (a, b) => {
    for (let i = 0; i < 3; i++) {
      const res = await ask(a, a.key, "x [[mock:tokens=3]]");
      await res.json();
      const id = res.headers.get("x-generation-id")!;
      // No waiting for a's settlement batch (written every ~25 ms).
      const got = await fetch(`${b.baseURL}/generations/${id}`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
      assert.equal(got.status, 200, `generation ${i}`);
      assert.equal((await got.json()).status, "completed");
    }
    const missing = await fetch(`${b.baseURL}/generations/gen_none`, {
      headers: { authorization: `Bearer ${a.key}` },
    });
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  });
});

Deno.test("leased wallet: a generation whose peer's batch comes late (a loaded machine) is waited for", async () => {
  await withCluster("1000", async (a, b) => {
    const [key] = await a.store.listKeys(a.accountId);
    const id = "gen_latebatch0000000000000";
    const got = fetch(`${b.baseURL}/generations/${id}`, {
      headers: { authorization: `Bearer ${a.key}` },
    });
    // The peer's batch lands 300 ms after the lookup began: past a few batch intervals.
    await new Promise((r) => setTimeout(r, 300));
    const open = {
      id,
      accountId: a.accountId,
      keyId: key.id,
      endpoint: "chat",
      model: MODEL,
      stream: true,
      hold: 0n,
    };
    await a.store.recordSettled([{
      open,
      created: new Date(),
      settlement: {
        generationId: id,
        status: "completed",
        cost: 0n,
        costDetails: {},
        provider: "mock",
        upstreamModel: "mock-1",
        finishReason: "stop",
        tokens: { input: 1, output: 1 },
        usageSource: "upstream",
        latencyMs: 1,
        ttftMs: 1,
        error: null,
      },
    }]);
    const res = await got;
    assert.equal(res.status, 200);
    assert.equal((await res.json()).status, "completed");
  });
});

Deno.test("leased wallet: a stream running on the instance asked is shown running without waiting for peers", async () => {
  await withCluster("1000", async (a, b) => {
    const res = await fetch(`${b.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        stream: true,
        messages: [{ role: "user", content: "x [[mock:tokens=30,every=100]]" }],
      }),
    });
    const id = res.headers.get("x-generation-id")!;
    // Past its first second the stream is journaled as running.
    await waitFor(
      "the stream journaled as running",
      async () => (await b.store.getGeneration(a.accountId, id))?.status === "running" || undefined,
    );
    // No peer settles a stream this instance serves: one reading is the answer.
    const store = b.gw.ctx.store;
    const read = store.getGeneration;
    let reads = 0;
    store.getGeneration = (...args) => {
      reads++;
      return read.apply(store, args);
    };
    try {
      const got = await fetch(`${b.baseURL}/generations/${id}`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
      assert.equal(got.status, 200);
      assert.equal((await got.json()).status, "running");
      assert.equal(reads, 1);
    } finally {
      store.getGeneration = read;
      await res.body?.cancel();
    }
    // The client gone, the stream is settled for what it used.
    await waitFor(
      "the cancelled stream settled",
      async () => (await b.store.getGeneration(a.accountId, id))?.status !== "running" || undefined,
    );
  });
});

Deno.test("leased wallet: a stream one instance ended is shown ended through the other", async () => {
  await withCluster("1000", async (a, b) => {
    for (let i = 0; i < 3; i++) {
      // Longer than a second: journaled as running, then settled in place by a's next batch.
      const res = await fetch(`${a.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: MODEL,
          stream: true,
          messages: [{ role: "user", content: "x [[mock:tokens=12,every=110]]" }],
        }),
      });
      await res.text();
      const id = res.headers.get("x-generation-id")!;
      const got = await fetch(`${b.baseURL}/generations/${id}`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
      assert.equal(got.status, 200, `generation ${i}`);
      assert.equal((await got.json()).status, "completed", `generation ${i}`);
    }
  });
});

Deno.test("leased wallet: a call one instance answered is listed through the other", async () => {
  await withCluster("1000", async (a, b) => {
    for (let i = 0; i < 3; i++) {
      const res = await ask(a, a.key, "x [[mock:tokens=3]]");
      await res.json();
      const id = res.headers.get("x-generation-id")!;
      // The other instance's listing waits one batch interval for its peers; on a loaded
      // machine the peer's batch may land later, so the newest page is asked again until
      // then. What is checked: the page is read from the shared store, the call complete.
      const newest = await waitFor(`generation ${i} listed through the other`, async () => {
        const page = await fetch(`${b.baseURL}/generations?limit=1`, {
          headers: { authorization: `Bearer ${a.key}` },
        });
        const [row] = (await page.json()).data;
        return row?.id === id ? row : undefined;
      });
      assert.equal(newest.status, "completed");
    }
  });
});

Deno.test("leased wallet: a call one instance answered counts in the other's /v1/credits and /v1/key once its batch is written, which the other waits a batch interval for", async () => {
  await withCluster("1000", async (a, b) => {
    const headers = { authorization: `Bearer ${a.key}` };
    // When each of a's settlement batches was written (its statement answered), by generation;
    // when b's requests arrived and when b began reading their figures from the store.
    const written = new Map<string, number>();
    const recordSettled = a.store.recordSettled.bind(a.store);
    a.store.recordSettled = async (batch, lease) => {
      const ids = await recordSettled(batch, lease);
      for (const s of batch) written.set(s.open.id, performance.now());
      return ids;
    };
    let arrived: number[] = [];
    let reads: number[] = [];
    const handler = b.gw.handler;
    b.gw.handler = (req, info) => {
      arrived.push(performance.now());
      return handler(req, info);
    };
    const listKeys = a.store.listKeys.bind(a.store);
    a.store.listKeys = (accountId) => {
      reads.push(performance.now());
      return listKeys(accountId);
    };
    const read = () =>
      Promise.all(
        ["credits", "key"].map((p) =>
          fetch(`${b.baseURL}/${p}`, { headers }).then((r) => r.json())
        ),
      ).then(([credits, key]) => [
        rubToNano(String(credits.data.total_usage)),
        rubToNano(String(key.data.usage)),
      ]);
    let spent = 0n;
    for (let i = 0; i < 4; i++) {
      const res = await ask(a, a.key, "x [[mock:tokens=3]]");
      spent += rubToNano(String((await res.json()).usage.cost));
      const id = res.headers.get("x-generation-id")!;
      // No waiting for a's settlement batch (written every ~25 ms): a client behind a load
      // balancer reads its credits through whichever instance it reaches next.
      arrived = [];
      reads = [];
      const first = await read();
      // b waits one batch interval for its peers before it reads: on a quiet machine a's
      // batch lands in it. How long a's batch takes on a loaded machine is not b's to know,
      // so what is asserted of the first reading is that a batch written before b read is
      // counted, and of b that it waited.
      const firstRead = Math.min(...reads);
      assert.equal(reads.length, 2, "one reading of the store per request");
      assert.ok(
        firstRead - Math.min(...arrived) >= peerBatchWaitMs - 1,
        `b read ${(firstRead - Math.min(...arrived)).toFixed(1)} ms after the first request came`,
      );
      if ((written.get(id) ?? Infinity) < firstRead) {
        assert.deepEqual(first, [spent, spent], `first reading after call ${i}`);
      }
      const got = await waitFor(`call ${i} counted through the other`, async () => {
        const got = await read();
        return got.every((v) => v === spent) ? got : undefined;
      });
      assert.deepEqual(got, [spent, spent], `credits and key usage after call ${i}`);
    }
  });
});

Deno.test("leased wallet: a spend cap set while the key has requests in flight counts them", async () => {
  // Hold and cost of one call, found on a rich account of a gateway of its own.
  const content = "x [[mock:tokens=100,first=500]]";
  const hold = await probeHold({
    model: MODEL,
    max_tokens: 100,
    messages: [{ role: "user", content }],
  });
  const g = await startGateway({ quota: "lease" });
  try {
    const inFlight = [ask(g, g.key, content), ask(g, g.key, content), ask(g, g.key, content)];
    await waitFor("the three calls upstream", () => g.mock.stats.total === 3 || undefined);
    // A cap above one hold but below the three admitted on the lease before it was set.
    const [key] = await g.store.listKeys(g.accountId);
    await g.store.setKeyLimits(key.id, { spend: hold * 2n });
    g.gw.ctx.keyCache.clear();
    const late = await ask(g, g.key, content);
    assert.equal(late.status, 402, "the requests in flight count against the new cap");
    await late.body?.cancel();
    for (const res of await Promise.all(inFlight)) {
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    await g.settled();
    assert.deepEqual(await checkInvariants(g.store, [g.accountId]), []);
    assert.equal(g.mock.stats.total, 3);
  } finally {
    await g.close();
  }
});

/**
 * The embedded wallet (holds in memory, settlements batched) behind the real server: the
 * same money guarantees as holds in the store.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { probeHold, rubText, type TestGateway, withGateway } from "../helpers/gateway.ts";
import { nanoToRub } from "../../src/billing/money.ts";

const MODEL = "openai/gpt-4o-mini";

function withWallet(fn: (g: TestGateway) => Promise<void>, balanceRub = "1000") {
  return withGateway(fn, { quota: "memory", balanceRub });
}

Deno.test("wallet: streaming and whole completions debit exactly the cost shown", async () => {
  await withWallet(async (g) => {
    const client = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const whole = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "hi [[mock:tokens=7]]" }],
    }).withResponse();
    let streamed: Record<string, unknown> | undefined;
    for await (
      const c of await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "hi [[mock:tokens=7]]" }],
        stream: true,
      })
    ) if (c.usage) streamed = c.usage as unknown as Record<string, unknown>;
    await g.settled();
    const cost = (whole.data.usage as unknown as { cost: number }).cost;
    assert.equal(streamed?.cost, cost);
    const a = (await g.store.getAccount(g.accountId))!;
    assert.equal(nanoToRub(1000_000_000_000n - a.balance), cost * 2);
    assert.equal(a.held, 0n);
    const gen = await g.store.getGeneration(
      g.accountId,
      whole.response.headers.get("x-generation-id")!,
    );
    assert.equal(gen?.status, "completed");
    assert.equal(gen?.usageSource, "upstream");
  });
});

Deno.test("wallet: 30 concurrent requests on a balance of 3 holds admit 3, the rest 402 with no upstream call", async () => {
  // Each answer comes 3 s after it was asked, so that the 30 are in flight together: one
  // answered and settled early gives its hold back, and a later request fits in it (on a
  // loaded machine sending the 30 can take longer than 300 ms).
  const content = "x [[mock:tokens=5,first=3000]]";
  // One call's hold at max_tokens 100 for this model is found first, on a rich account.
  const hold = await probeHold({
    model: MODEL,
    max_tokens: 100,
    messages: [{ role: "user", content }],
  });
  const balanceRub = rubText(hold * 3n + hold / 2n);
  await withWallet(async (g) => {
    const statuses = await Promise.all(Array.from({ length: 30 }, async () => {
      const res = await fetch(`${g.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: MODEL,
          max_tokens: 100,
          messages: [{ role: "user", content }],
        }),
      });
      await res.body?.cancel();
      return res.status;
    }));
    assert.equal(statuses.filter((s) => s === 200).length, 3);
    assert.equal(statuses.filter((s) => s === 402).length, 27);
    assert.equal(g.mock.stats.total, 3);
    await g.settled();
    assert.ok((await g.store.getAccount(g.accountId))!.balance >= 0n);
  }, balanceRub);
});

Deno.test("wallet: a client that leaves mid-stream is settled once from the counted usage", async () => {
  await withWallet(async (g) => {
    const ac = new AbortController();
    const res = await fetch(`${g.baseURL}/chat/completions`, {
      method: "POST",
      signal: ac.signal,
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        stream: true,
        messages: [{ role: "user", content: "x [[mock:tokens=200,every=20]]" }],
      }),
    });
    const id = res.headers.get("x-generation-id")!;
    const reader = res.body!.getReader();
    for (let i = 0; i < 3; i++) await reader.read();
    ac.abort();
    await reader.cancel().catch(() => {});
    await g.mock.idle();
    await g.settled();
    const gen = await g.store.getGeneration(g.accountId, id);
    assert.equal(gen?.status, "cancelled");
    assert.equal(gen?.usageSource, "counted");
    assert.ok(gen!.cost > 0n);
    const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === id);
    assert.equal(debits.length, 1);
  });
});

Deno.test("wallet: a generation is in the history as soon as its answer arrived", async () => {
  await withWallet(async (g) => {
    const res = await fetch(`${g.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: "user", content: "x [[mock:tokens=3]]" }],
      }),
    });
    await res.json();
    const id = res.headers.get("x-generation-id")!;
    // No waiting for the settlement batch: the history endpoint writes pending ones first.
    const got = await fetch(`${g.baseURL}/generations/${id}`, {
      headers: { authorization: `Bearer ${g.key}` },
    });
    assert.equal(got.status, 200);
    assert.equal((await got.json()).status, "completed");
  });
});

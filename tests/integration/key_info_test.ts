/**
 * `GET /v1/key` and `GET /v1/credits`: a key's holder reads what it spent, what its cap leaves
 * and the account's credits, in OpenRouter's shapes and in roubles, up to the call just made.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { rubToNano } from "../../src/billing/money.ts";
import type { QuotaKind } from "../../src/server.ts";
import { withGateway } from "../helpers/gateway.ts";

const nano = (rub: number) => rubToNano(rub.toFixed(9));

for (const quota of ["memory", undefined] as (QuotaKind | undefined)[]) {
  Deno.test(`key info: usage, cap and credits count the call just answered (quota ${quota ?? "default"})`, async () => {
    await withGateway(async (g) => {
      const a = await g.account("10");
      const [key] = await g.store.listKeys(a.accountId);
      await g.store.setKeyLimits(key.id, { spend: rubToNano("5"), rpm: 120 });
      const get = async (path: string) => {
        const r = await fetch(`${g.url}${path}`, { headers: { authorization: `Bearer ${a.key}` } });
        assert.equal(r.status, 200);
        return (await r.json()).data;
      };
      const before = await get("/v1/key");
      assert.deepEqual(before, {
        label: "test",
        id: key.id,
        usage: 0,
        limit: 5,
        limit_remaining: 5,
        is_free_tier: false,
        rate_limit: { requests: 120, interval: "1m" },
        balance: 10,
        currency: "RUB",
      });

      const openai = new OpenAI({ apiKey: a.key, baseURL: g.baseURL, maxRetries: 0 });
      let spent = 0n;
      for (let i = 0; i < 3; i++) {
        const c = await openai.chat.completions.create({
          model: "openai/gpt-4o-mini",
          messages: [{ role: "user", content: `Hi [[mock:tokens=${20 + i * 7}]]` }],
        });
        spent += nano((c.usage as unknown as { cost: number }).cost);
      }
      assert.ok(spent > 0n);
      // Read at once: a settlement still batched in memory counts already.
      const after = await get("/v1/key");
      assert.equal(nano(after.usage), spent);
      assert.equal(nano(after.limit_remaining), rubToNano("5") - spent);
      assert.equal(nano(after.balance), rubToNano("10") - spent);
      const credits = await get("/v1/credits");
      assert.deepEqual(
        [nano(credits.total_credits), nano(credits.total_usage), nano(credits.balance)],
        [rubToNano("10"), spent, rubToNano("10") - spent],
      );
      assert.equal(credits.currency, "RUB");

      // The caller's own account only, and in the generic envelope without a valid key.
      const other = await fetch(`${g.url}/v1/credits`, {
        headers: { authorization: `Bearer ${g.key}` },
      });
      assert.equal(nano((await other.json()).data.total_usage), 0n);
      const bad = await fetch(`${g.url}/v1/key`, { headers: { authorization: "Bearer tg_nope" } });
      assert.equal(bad.status, 401);
      assert.equal(typeof (await bad.json()).error.message, "string");
      const revoked = await g.store.revokeKey(key.id);
      assert.ok(revoked);
      const gone = await fetch(`${g.url}/v1/key`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
      assert.equal(gone.status, 401);
      await gone.body?.cancel();
    }, { quota });
  });
}

for (const quota of ["memory", undefined] as (QuotaKind | undefined)[]) {
  Deno.test(`credits: total_credits stays the sum of top-ups while calls settle (quota ${quota ?? "default"})`, async () => {
    await withGateway(async (g) => {
      const a = await g.account("10");
      const readings: bigint[][] = [];
      let calling = true;
      const call = async (i: number) => {
        const r = await fetch(`${g.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "openai/gpt-4o-mini",
            messages: [{ role: "user", content: `Hi [[mock:tokens=${3 + (i % 5)}]]` }],
            max_tokens: 20,
          }),
        });
        assert.equal(r.status, 200, await r.text());
      };
      const read = async () => {
        while (calling) {
          const r = await fetch(`${g.url}/v1/credits`, {
            headers: { authorization: `Bearer ${a.key}` },
          });
          const d = (await r.json()).data;
          readings.push([nano(d.total_credits), nano(d.total_usage), nano(d.balance)]);
        }
      };
      const readers = [read(), read(), read(), read()];
      // Calls settle while the readers read, until they have read enough (a reading waits
      // for the settlements before it, so how many fit in a round of calls varies).
      const until = Date.now() + 10_000;
      try {
        for (let i = 0; readings.length < 30 && Date.now() < until; i += 8) {
          await Promise.all(Array.from({ length: 8 }, (_, j) => call(i + j)));
        }
      } finally {
        calling = false;
        await Promise.all(readers);
      }
      // Balance and usage read in one snapshot: whatever settles meanwhile moves both or neither.
      const off = readings.filter(([total, used, balance]) =>
        total !== rubToNano("10") || used + balance !== total
      );
      assert.deepEqual(off, [], `${off.length} of ${readings.length} readings off`);
      assert.ok(readings.length >= 5, `${readings.length} readings`);
    }, { quota, config: { RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" } });
  });
}

/**
 * A call refused by the key's spend cap, not by the balance: the 402 must say so. Claude Code
 * and Codex print the message as it comes; "top up the balance" to a holder whose account has
 * hundreds of roubles left sends them the wrong way (a top-up cannot help, raising the key's
 * cap does). Found driving Claude Code and Codex with a capped key on a rich account.
 */
import assert from "node:assert/strict";
import { rubToNano } from "../../src/billing/money.ts";
import { generateKey } from "../../src/store/keys.ts";
import { withGateway } from "../helpers/gateway.ts";
import { waitFor } from "../helpers/time.ts";

const CLIENTS = new URL("../../../shared/fixtures/clients/", import.meta.url);

/** A recorded client request, re-aimed at `model`, or a minimal one where fixtures are absent. */
async function recorded(file: string, model: string, fallback: Record<string, unknown>) {
  try {
    const rec = JSON.parse(await Deno.readTextFile(new URL(file, CLIENTS)));
    return { ...rec.body, model };
  } catch {
    return { ...fallback, model };
  }
}

const cases = [
  {
    client: "Claude Code",
    path: "/v1/messages",
    file: "claude-code/messages-turn1.request.json",
    model: "anthropic/claude-sonnet-4.5",
    fallback: { max_tokens: 32000, stream: true, messages: [{ role: "user", content: "Hi" }] },
    message: (j: { error: { message: string } }) => j.error.message,
  },
  {
    client: "Codex",
    path: "/v1/responses",
    file: "codex/responses-turn1.request.json",
    model: "openai/gpt-5.1-codex",
    fallback: { stream: true, input: "Hi" },
    message: (j: { error: { message: string } }) => j.error.message,
  },
];

for (const c of cases) {
  Deno.test(`key cap: a ${c.client} call refused by the key's spend cap says so, not the balance`, async () => {
    await withGateway(async (g) => {
      const a = await g.account("500");
      const [key] = await g.store.listKeys(a.accountId);
      await g.store.setKeyLimits(key.id, { spend: rubToNano("0.5") });
      const res = await fetch(`${g.url}${c.path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${a.key}`,
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
        },
        body: JSON.stringify(await recorded(c.file, c.model, c.fallback)),
      });
      assert.equal(res.status, 402);
      const text = c.message(await res.json());
      // What refused it, and how much the cap leaves.
      assert.match(text, /^Недостаточно лимита расходов ключа/);
      assert.match(text, /0,50 ₽/);
      // Not the balance's words, nor its advice: 500 RUB are there.
      assert.doesNotMatch(text, /на балансе/);
      assert.doesNotMatch(text, /пополните баланс/i);
      assert.equal(g.mock.stats.calls.length, 0);
    });
  });
}

Deno.test("key cap: a call the balance cannot cover is still refused in the balance's words", async () => {
  await withGateway(async (g) => {
    const a = await g.account("0.01");
    const [key] = await g.store.listKeys(a.accountId);
    await g.store.setKeyLimits(key.id, { spend: rubToNano("100") });
    const res = await fetch(`${g.url}/v1/messages`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${a.key}`,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify({
        model: "anthropic/claude-sonnet-4.5",
        max_tokens: 32000,
        messages: [{ role: "user", content: "Hi" }],
      }),
    });
    assert.equal(res.status, 402);
    const text = (await res.json()).error.message;
    assert.match(text, /^Недостаточно средств на балансе/);
    assert.match(text, /пополните баланс/);
  });
});

Deno.test("key cap: an image call refused by the key's spend cap says so, and keeps its currentBalance", async () => {
  await withGateway(async (g) => {
    const a = await g.account("500");
    const [key] = await g.store.listKeys(a.accountId);
    await g.store.setKeyLimits(key.id, { spend: rubToNano("0.5") });
    const res = await fetch(`${g.url}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
      // A high-quality image is held at some 24 ₽: the balance covers it, the cap does not.
      body: JSON.stringify({ model: "openai/gpt-image-1", prompt: "x", quality: "high" }),
    });
    assert.equal(res.status, 402);
    const error = (await res.json()).error;
    assert.match(error.message, /^Недостаточно лимита расходов ключа/);
    assert.match(error.message, /0,50 ₽/);
    assert.doesNotMatch(error.message, /пополните баланс/i);
    // The images 402 names the balance (the spec's `currentBalance`), whichever limit refused.
    assert.equal(error.currentBalance, 500);
    assert.equal(error.code, "INSUFFICIENT_BALANCE");
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("key cap: where a call in flight leaves the balance short too, the 402 is the balance's", async () => {
  await withGateway(async (g) => {
    const a = await g.account("30");
    const [capped] = await g.store.listKeys(a.accountId);
    await g.store.setKeyLimits(capped.id, { spend: rubToNano("0.5") });
    // A second key of the account, with no cap.
    const second = await generateKey("tg");
    await g.store.createKey(a.accountId, second.hash, second.display, "second");
    const image = (key: string, prompt: string) =>
      fetch(`${g.url}/v1/images/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "openai/gpt-image-1", prompt, quality: "high" }),
      });
    // The second key's slow call holds 24.25 ₽ of the 30 while the capped key asks as much.
    const slow = image(second.key, "slow [[mock:first=1500]]");
    await waitFor("the slow call upstream", () => g.mock.stats.calls.length > 0 || undefined);
    const res = await image(a.key, "now");
    assert.equal(res.status, 402);
    const error = (await res.json()).error;
    // The cap refuses it, and so do the 5.75 ₽ left free: raising the cap alone would not
    // help, and "a top-up cannot help" would be false.
    assert.match(error.message, /^Недостаточно средств на балансе/);
    assert.equal(error.currentBalance, 5.7517725);
    const done = await slow;
    assert.equal(done.status, 200);
    await done.body?.cancel();
  });
});

import assert from "node:assert/strict";
import { testStores } from "../../tests/helpers/store.ts";
import type { Store } from "../store/store.ts";
import { NotFoundError } from "../store/errors.ts";
import { hashKey } from "../store/keys.ts";
import { newId } from "../lib/ids.ts";
import { type AdminReply, CommandError, runAdmin, USAGE } from "./commands.ts";

const cfg = { keyPrefix: "tg" };

async function ok(store: Store, ...argv: string[]) {
  const r = await runAdmin(store, argv, cfg);
  assert.ok(r.ok, `expected success for ${argv.join(" ")}: ${!r.ok && r.error}`);
  // Results are plain JSON: they survive a round trip unchanged.
  assert.deepEqual(JSON.parse(JSON.stringify(r.result)), r.result);
  assert.ok(r.text.length > 0);
  return r.result;
}

async function usage(store: Store, argv: string[], pattern: RegExp) {
  const r: AdminReply = await runAdmin(store, argv, cfg);
  assert.equal(r.ok, false, `expected a usage error for ${JSON.stringify(argv)}`);
  if (r.ok) return;
  assert.match(r.error, pattern);
  assert.equal(r.usage, USAGE);
}

async function newAccount(store: Store, ...extra: string[]) {
  return (await ok(store, "account", "create", "--name", "Ivan", ...extra)).id as string;
}

for (const { name, open } of await testStores()) {
  const test = (title: string, fn: (s: Store) => Promise<void>) =>
    Deno.test(`${name}: admin ${title}`, async () => {
      const store = await open();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    });

  test("account create → {id, balance}", async (store) => {
    const r = await ok(store, "account", "create", "--name", "Ivan", "--balance", "1000.5");
    assert.deepEqual(Object.keys(r).sort(), ["balance", "id"]);
    assert.match(r.id as string, /^acc_/);
    assert.equal(r.balance, "1000.5");
    const a = await store.getAccount(r.id as string);
    assert.equal(a?.balance, 1_000_500_000_000n);
    assert.equal(a?.name, "Ivan");
    const zero = await ok(store, "account", "create", "--name=Petr");
    assert.equal(zero.balance, "0");
  });

  test("account create rejects bad amounts and a missing name", async (store) => {
    await usage(store, ["account", "create"], /--name is required/);
    await usage(store, ["account", "create", "--name", "x", "--balance", "-1"], /negative/);
    await usage(store, ["account", "create", "--name", "x", "--balance", "1.0000000001"], /9 dec/);
    await usage(store, ["account", "create", "--name", "x", "--balance", "abc"], /roubles/);
  });

  test("account show, set-default-model, set-limits", async (store) => {
    const id = await newAccount(store, "--balance", "7");
    const slug = "openai/gpt-4o-mini";
    let r = await ok(store, "account", "set-default-model", "--account", id, "--model", slug);
    assert.deepEqual(r, { id, default_model: slug });
    r = await ok(store, "account", "set-limits", "--account", id, "--rpm", "60");
    assert.deepEqual(r, { id, rpm_limit: 60 });
    r = await ok(store, "account", "show", "--account", id);
    assert.equal(r.id, id);
    assert.equal(r.name, "Ivan");
    assert.equal(r.balance, "7");
    assert.equal(r.held, "0");
    assert.equal(r.default_model, slug);
    assert.equal(r.rpm_limit, 60);
    await ok(store, "account", "set-default-model", "--account", id, "--model", "none");
    await ok(store, "account", "set-limits", "--account", id, "--rpm", "none");
    const a = await store.getAccount(id);
    assert.equal(a?.defaultModel, null);
    assert.equal(a?.rpmLimit, null);
    await usage(store, ["account", "set-limits", "--account", id], /--rpm is required/);
    await usage(store, ["account", "set-limits", "--account", id, "--rpm", "1.5"], /whole/);
    await usage(store, ["account", "set-default-model", "--account", id], /--model/);
    await assert.rejects(
      runAdmin(store, ["account", "set-default-model", "--account", "acc_x", "--model", slug], cfg),
      NotFoundError,
    );
    // What no request could use is refused, and the default stays as it was.
    for (
      const [model, why] of [
        // The slug meant is named, as the API's 400 names it.
        ["gpt-4o", /^gpt-4o is not a catalogue slug \(.*\): did you mean openai\/gpt-4o\?$/],
        ["no-such-model", /^no-such-model is not a catalogue slug \([^)]*\)$/],
        ["openai/gpt-image-1", /does not generate text/],
        ["baai/bge-base-en-v1.5", /does not generate text/],
      ] as const
    ) {
      await assert.rejects(
        runAdmin(store, ["account", "set-default-model", "--account", id, "--model", model], cfg),
        (e) => e instanceof CommandError && why.test(e.message),
      );
    }
    assert.equal((await store.getAccount(id))?.defaultModel, null);
    await assert.rejects(
      runAdmin(store, ["account", "show", "--account", "acc_x"], cfg),
      NotFoundError,
    );
  });

  test("key create → {id, key}, shown once, stored hashed", async (store) => {
    const id = await newAccount(store);
    const r = await ok(store, "key", "create", "--account", id, "--label", "ci");
    assert.deepEqual(Object.keys(r).sort(), ["id", "key"]);
    assert.match(r.key as string, /^tg_[0-9A-Za-z]{43}$/);
    const found = await store.findKeyByHash(await hashKey(r.key as string));
    assert.equal(found?.key.id, r.id);
    assert.equal(found?.key.label, "ci");
    assert.equal(found?.account.id, id);
    const custom = await runAdmin(store, ["key", "create", "--account", id], { keyPrefix: "sk" });
    assert.ok(custom.ok && (custom.result.key as string).startsWith("sk_"));
    await assert.rejects(
      runAdmin(store, ["key", "create", "--account", "acc_x"], cfg),
      NotFoundError,
    );
  });

  test("key list, set-limits, revoke", async (store) => {
    const id = await newAccount(store);
    const { id: keyId, key } = await ok(store, "key", "create", "--account", id);
    let r = await ok(store, "key", "set-limits", keyId as string, "--rpm", "5", "--spend", "10.5");
    assert.deepEqual(r, { id: keyId, rpm: 5, spend_limit: "10.5" });
    r = await ok(store, "key", "list", "--account", id);
    const keys = r.keys as Record<string, unknown>[];
    assert.equal(keys.length, 1);
    const k = keys[0];
    assert.deepEqual(Object.keys(k).sort(), [
      "created",
      "id",
      "label",
      "last_used",
      "prefix",
      "revoked",
      "rpm",
      "spend_limit",
      "spent",
    ]);
    assert.equal(k.id, keyId);
    assert.equal(k.prefix, (key as string).slice(0, 11));
    assert.equal(k.revoked, false);
    assert.equal(k.last_used, null);
    assert.equal(k.rpm, 5);
    assert.equal(k.spend_limit, "10.5");
    assert.ok(!JSON.stringify(r).includes(await hashKey(key as string)), "never the hash");
    assert.ok(!JSON.stringify(r).includes(key as string), "never the key");

    r = await ok(store, "key", "set-limits", keyId as string, "--spend", "none");
    assert.deepEqual(r, { id: keyId, spend_limit: null });
    await usage(store, ["key", "set-limits", keyId as string], /--rpm and\/or --spend/);
    await usage(store, ["key", "set-limits", "--rpm", "1"], /KEY_ID/);
    await usage(store, ["key", "set-limits", keyId as string, "--spend", "-2"], /negative/);

    const first = await runAdmin(store, ["key", "revoke", keyId as string], cfg);
    assert.ok(first.ok);
    assert.deepEqual(first.result, { id: keyId, revoked: true });
    assert.equal(first.text, `revoked key ${keyId}`);
    // Again: still a success (idempotent), but not told as a fresh revocation.
    const again = await runAdmin(store, ["key", "revoke", keyId as string], cfg);
    assert.ok(again.ok);
    assert.deepEqual(again.result, { id: keyId, revoked: true, already: true });
    assert.equal(again.text, `key ${keyId} was already revoked`);
    const listed = await ok(store, "key", "list", "--account", id);
    assert.equal((listed.keys as { revoked: boolean }[])[0].revoked, true);
    await assert.rejects(runAdmin(store, ["key", "revoke", "key_missing"], cfg), NotFoundError);
    await usage(store, ["key", "revoke"], /KEY_ID/);
  });

  test("amounts are plain decimals within bounds; a balance past 64 bits is refused whole", async (store) => {
    const id = await newAccount(store, "--balance", "1");
    for (const amount of ["1e3", "1e30000000", "0x10", "12,5", "1.0000000001", "Infinity"]) {
      await usage(
        store,
        ["topup", "--account", id, "--amount", amount, "--idempotency-key", `u-${amount}`],
        /roubles with at most 9 decimals/,
      );
    }
    await usage(
      store,
      ["topup", "--account", id, "--amount", "1000000000.5", "--idempotency-key", "big"],
      /at most 1000000000 roubles/,
    );
    for (let i = 0; i < 9; i++) {
      await ok(
        store,
        "topup",
        "--account",
        id,
        "--amount",
        "1000000000",
        "--idempotency-key",
        `b${i}`,
      );
    }
    const r = await runAdmin(
      store,
      ["topup", "--account", id, "--amount", "1000000000", "--idempotency-key", "b9"],
      cfg,
    ).then(() => undefined, (e) => e);
    assert.ok(r instanceof CommandError, `a CommandError, not ${r}`);
    assert.match(r.message, /largest the store keeps; nothing was done/);
    assert.equal((await store.getAccount(id))?.balance, 9_000_000_001_000_000_000n);
  });

  test("topup → {applied, balance}; a repeat with the same key is a no-op", async (store) => {
    const id = await newAccount(store, "--balance", "1");
    const argv = ["topup", "--account", id, "--amount", "100.25", "--idempotency-key", "p1"];
    assert.deepEqual(await ok(store, ...argv), { applied: true, balance: "101.25" });
    assert.deepEqual(await ok(store, ...argv), { applied: false, balance: "101.25" });
    await assert.rejects(
      runAdmin(store, ["topup", "--account", id, "--amount", "5", "--idempotency-key", "p1"], cfg),
      CommandError,
    );
    assert.equal((await store.getAccount(id))?.balance, 101_250_000_000n);
    await usage(store, ["topup", "--account", id, "--amount", "5"], /--idempotency-key/);
    await usage(
      store,
      ["topup", "--account", id, "--amount", "0", "--idempotency-key", "z"],
      /more than zero/,
    );
    await usage(
      store,
      ["topup", "--account", id, "--amount", "-3", "--idempotency-key", "z"],
      /negative/,
    );
    await assert.rejects(
      runAdmin(
        store,
        ["topup", "--account", "acc_x", "--amount", "1", "--idempotency-key", "q"],
        cfg,
      ),
      NotFoundError,
    );
  });

  test("balance → {balance, held, leased}; ledger lists entries", async (store) => {
    const id = await newAccount(store, "--balance", "3");
    await ok(store, "topup", "--account", id, "--amount", "0.000000001", "--idempotency-key", "k");
    assert.deepEqual(await ok(store, "balance", "--account", id), {
      balance: "3.000000001",
      held: "0",
      leased: "0",
    });
    // An instance's lease is part of held, and shown apart.
    await store.lease("ins_x", id, 1n, 500_000_000n, 60_000);
    assert.deepEqual(await ok(store, "balance", "--account", id), {
      balance: "3.000000001",
      held: "0.5",
      leased: "0.5",
    });
    await store.endLease("ins_x", id);
    const r = await ok(store, "ledger", "--account", id);
    const entries = r.entries as Record<string, unknown>[];
    assert.deepEqual(entries.map((e) => [e.kind, e.amount, e.idempotency_key]), [
      ["topup", "3", null],
      ["topup", "0.000000001", "k"],
    ]);
    await assert.rejects(runAdmin(store, ["balance", "--account", "acc_x"], cfg), NotFoundError);
  });

  test("ledger shows the last --limit entries, oldest first, and says what it left out", async (store) => {
    const id = await newAccount(store, "--balance", "1");
    for (const k of ["a", "b", "c"]) {
      await ok(store, "topup", "--account", id, "--amount", "1", "--idempotency-key", k);
    }
    const r = await runAdmin(store, ["ledger", "--account", id, "--limit", "2"], cfg);
    assert.ok(r.ok);
    const entries = r.result.entries as Record<string, unknown>[];
    assert.deepEqual(entries.map((e) => e.idempotency_key), ["b", "c"]);
    assert.equal(r.result.has_more, true);
    assert.match(r.text, /earlier entries not shown/);
    const all = await ok(store, "ledger", "--account", id);
    assert.equal((all.entries as unknown[]).length, 4);
    assert.equal(all.has_more, false);
    await usage(store, ["ledger", "--account", id, "--limit", "0"], /--limit/);
  });

  test("generations lists newest first with --limit", async (store) => {
    const id = await newAccount(store, "--balance", "10");
    const keyId = (await ok(store, "key", "create", "--account", id)).id as string;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const g = {
        id: newId("gen"),
        accountId: id,
        keyId,
        endpoint: "chat",
        model: "m",
        stream: true,
        hold: 1_000_000n,
      };
      assert.ok(await store.reserve(g));
      ids.push(g.id);
    }
    await store.settle({
      generationId: ids[0],
      status: "completed",
      cost: 500_000n,
      costDetails: {},
      provider: "mock",
      upstreamModel: null,
      finishReason: "stop",
      tokens: { input: 1, output: 2, cacheRead: 3 },
      usageSource: "upstream",
      latencyMs: 5,
      ttftMs: 1,
      error: null,
    });
    const all = (await ok(store, "generations", "--account", id)).generations as {
      id: string;
      cost: number;
      status: string;
    }[];
    assert.deepEqual(all.map((g) => g.id), [...ids].reverse());
    assert.equal(all[2].cost, "0.0005");
    assert.equal(all[2].status, "completed");
    // The token figures named as the API names them.
    assert.deepEqual((all[2] as unknown as { tokens: unknown }).tokens, {
      input: 1,
      output: 2,
      cache_read: 3,
      cache_write: null,
      reasoning: null,
    });
    const two = await ok(store, "generations", "--account", id, "--limit", "2");
    assert.equal((two.generations as unknown[]).length, 2);
    const after = await ok(store, "generations", "--account", id, "--before", all[1].id);
    assert.deepEqual((after.generations as { id: string }[]).map((g) => g.id), [ids[0]]);
    await usage(store, ["generations", "--account", id, "--limit", "0"], /--limit/);
    assert.deepEqual(await ok(store, "balance", "--account", id), {
      balance: "9.9995",
      held: "0.002",
      leased: "0",
    });
  });

  test("usage errors", async (store) => {
    await usage(store, [], /no command/);
    await usage(store, ["nope"], /unknown command: nope/);
    await usage(store, ["account"], /which one\? \(create, show, set-default-model, set-limits\)/);
    await usage(store, ["account", "delete"], /unknown command: account delete/);
    await usage(store, ["balance"], /--account is required/);
    await usage(store, ["balance", "--account"], /--account needs a value/);
    await usage(store, ["balance", "--account", "a", "--account", "b"], /given twice/);
    await usage(store, ["balance", "--account", "a", "--bogus", "1"], /unknown option --bogus/);
    await usage(store, ["balance", "extra", "--account", "a"], /expected no arguments/);
    await usage(store, ["balance", "--=x"], /bad option/);
  });

  test("options anywhere, --opt=value, --json ignored, help", async (store) => {
    const id = await newAccount(store, "--balance", "2");
    assert.deepEqual(await ok(store, "--account", id, "--json", "balance"), {
      balance: "2",
      held: "0",
      leased: "0",
    });
    assert.deepEqual(await ok(store, "balance", `--account=${id}`), {
      balance: "2",
      held: "0",
      leased: "0",
    });
    for (const argv of [["--help"], ["help"], ["-h"], ["key", "--help"]]) {
      const r = await runAdmin(store, argv, cfg);
      assert.ok(r.ok);
      assert.equal(r.text, USAGE);
    }
  });
}

Deno.test("admin balance, account show, topup: a running gateway's holds and unwritten costs are counted", async () => {
  const store = await (await testStores())[0].open();
  try {
    const a = await store.createAccount("m", 10_000_000_000n);
    const inMemory = (id: string) =>
      id === a.id ? { held: 3_000_000_000n, pending: 1_000_000_000n } : undefined;
    const r = await runAdmin(store, ["balance", "--account", a.id], { keyPrefix: "tg", inMemory });
    assert.ok(r.ok);
    assert.deepEqual(r.result, { balance: "9", held: "3", leased: "0" });
    assert.match(r.text, /available 6/);
    // account show and a top-up's answer tell the same figures.
    const shown = await runAdmin(store, ["account", "show", "--account", a.id], {
      keyPrefix: "tg",
      inMemory,
    });
    assert.ok(shown.ok);
    const account = shown.result as Record<string, unknown>;
    assert.equal(account.balance, "9");
    assert.equal(account.held, "3");
    const topup = await runAdmin(
      store,
      ["topup", "--account", a.id, "--amount", "1", "--idempotency-key", "m1"],
      { keyPrefix: "tg", inMemory },
    );
    assert.ok(topup.ok);
    assert.deepEqual(topup.result, { applied: true, balance: "10" });
  } finally {
    await store.close();
  }
});

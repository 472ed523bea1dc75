import assert from "node:assert/strict";
import { testStores } from "../../tests/helpers/store.ts";
import type { Store } from "../store/store.ts";
import { createOperatorHandler, isLoopback } from "./operator_api.ts";

const TOKEN = "operator-token-0123456789";
const [{ open }] = await testStores(); // PGlite in memory

function run(argv: unknown, opts: { token?: string | null; method?: string } = {}) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const token = opts.token === undefined ? TOKEN : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const method = opts.method ?? "POST";
  return new Request("http://127.0.0.1:8787/admin/v1/run", {
    method,
    headers,
    body: method === "GET" ? undefined : JSON.stringify({ argv }),
  });
}

async function withHandler(
  fn: (h: ReturnType<typeof createOperatorHandler>, store: Store) => Promise<void>,
) {
  const store = await open();
  try {
    await fn(createOperatorHandler(store, { token: TOKEN, keyPrefix: "tg" }), store);
  } finally {
    await store.close();
  }
}

Deno.test("isLoopback accepts 127/8 and ::1 only", () => {
  for (
    const a of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"]
  ) {
    assert.equal(isLoopback(a), true, a);
  }
  for (
    const a of ["10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "localhost", "", "::2", "1127.0.0.1"]
  ) {
    assert.equal(isLoopback(a), false, a);
  }
});

Deno.test("operator API refuses non-loopback callers, even with the token", async () => {
  await withHandler(async (handle) => {
    const res = await handle(run(["balance", "--account", "a"]), "192.168.1.5");
    assert.equal(res.status, 403);
    assert.equal((await res.json()).ok, false);
  });
});

Deno.test("operator API refuses a request a proxy on loopback passed on, even with the token", async () => {
  // A reverse proxy on the same host (nginx, Caddy, Traefik) connects from 127.0.0.1: to the
  // socket every outside caller looks local. What gives the proxy away is what it adds.
  await withHandler(async (handle) => {
    const via: Record<string, string>[] = [
      { "x-forwarded-for": "203.0.113.9" },
      { "x-forwarded-for": "127.0.0.1" }, // spoofed by the caller, kept by the proxy
      { forwarded: "for=203.0.113.9;proto=https" },
      { "x-real-ip": "203.0.113.9" },
      { via: "1.1 caddy" },
      { "x-forwarded-host": "gateway.example.com" },
    ];
    for (const headers of via) {
      const req = run(["balance", "--account", "a"]);
      for (const [k, v] of Object.entries(headers)) req.headers.set(k, v);
      const res = await handle(req, "127.0.0.1");
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.equal((await res.json()).ok, false);
    }
  });
});

Deno.test("operator API refuses missing or wrong tokens", async () => {
  await withHandler(async (handle) => {
    for (const token of [null, "wrong", TOKEN + "x", TOKEN.slice(0, -1), ""]) {
      const res = await handle(run(["--help"], { token }), "127.0.0.1");
      assert.equal(res.status, 401, `token ${token}`);
      assert.equal(res.headers.get("www-authenticate"), "Bearer");
      assert.deepEqual(await res.json(), { ok: false, error: "missing or wrong operator token" });
    }
    const basic = new Request("http://x/admin/v1/run", {
      method: "POST",
      headers: { authorization: `Basic ${TOKEN}` },
      body: "{}",
    });
    assert.equal((await handle(basic, "::1")).status, 401);
  });
});

Deno.test("operator API with an empty configured token refuses everyone", async () => {
  const store = await open();
  try {
    const handle = createOperatorHandler(store, { token: "", keyPrefix: "tg" });
    const res = await handle(run(["--help"], { token: "" }), "127.0.0.1");
    assert.equal(res.status, 401);
    await res.body?.cancel();
  } finally {
    await store.close();
  }
});

Deno.test("operator API runs a command and answers {ok, result, text}", async () => {
  await withHandler(async (handle, store) => {
    const res = await handle(run(["account", "create", "--name", "Ivan", "--balance", "5"]), "::1");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    const body = await res.json();
    assert.equal(body.ok, true);
    assert.deepEqual(Object.keys(body.result).sort(), ["balance", "id"]);
    assert.equal(body.result.balance, "5");
    assert.match(body.text, /created account acc_/);
    assert.equal((await store.getAccount(body.result.id))?.balance, 5_000_000_000n);

    const bal = await handle(run(["balance", "--account", body.result.id]), "127.0.0.1");
    assert.deepEqual((await bal.json()).result, { balance: "5", held: "0", leased: "0" });
  });
});

Deno.test("operator API: usage errors are 400 with usage, failures 404/422", async () => {
  await withHandler(async (handle) => {
    let res = await handle(run(["nope"]), "127.0.0.1");
    assert.equal(res.status, 400);
    let body = await res.json();
    assert.equal(body.ok, false);
    assert.match(body.error, /unknown command/);
    assert.match(body.usage, /^Usage:/);

    res = await handle(run(["balance", "--account", "acc_missing"]), "127.0.0.1");
    assert.equal(res.status, 404);
    body = await res.json();
    assert.deepEqual(body, { ok: false, error: "no such account: acc_missing" });

    const id = (await (await handle(run(["account", "create", "--name", "x"]), "::1")).json())
      .result.id;
    const topup = ["topup", "--account", id, "--amount", "1", "--idempotency-key", "k"];
    assert.equal((await handle(run(topup), "::1")).status, 200);
    topup[4] = "2";
    res = await handle(run(topup), "::1");
    assert.equal(res.status, 422);
    assert.match((await res.json()).error, /already used/);
  });
});

Deno.test("operator API: an argument holding NUL is a usage error (400), not a store failure (500)", async () => {
  await withHandler(async (handle) => {
    for (
      const argv of [
        ["balance", "--account", "acc_\u0000"],
        ["account", "create", "--name", "a\u0000b"],
        ["key", "revoke", "key_\u0000"],
      ]
    ) {
      const res = await handle(run(argv), "127.0.0.1");
      assert.equal(res.status, 400, JSON.stringify(argv));
      const body = await res.json();
      assert.equal(body.ok, false);
      assert.match(body.error, /NUL/);
      assert.match(body.usage, /^Usage:/);
    }
  });
});

Deno.test("operator API: bad bodies and methods", async () => {
  await withHandler(async (handle) => {
    for (const argv of ["balance", [1, 2], null]) {
      const res = await handle(run(argv), "127.0.0.1");
      assert.equal(res.status, 400);
      assert.equal((await res.json()).ok, false);
    }
    const notJson = new Request("http://x/admin/v1/run", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: "argv=balance",
    });
    const res = await handle(notJson, "127.0.0.1");
    assert.equal(res.status, 400);
    await res.body?.cancel();
    const get = await handle(run(null, { method: "GET" }), "127.0.0.1");
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    await get.body?.cancel();
  });
});

Deno.test("operator API: only a command that ran tells the gateway to drop its cached figures", async () => {
  const store = await open();
  try {
    let ran = 0;
    const handle = createOperatorHandler(store, {
      token: TOKEN,
      keyPrefix: "tg",
      ran: () => ran++,
    });
    // Refused callers and requests change nothing, and cost the gateway nothing.
    await handle(run(["account", "create", "--name", "x"]), "10.0.0.1");
    await handle(run(["account", "create", "--name", "x"], { token: "wrong" }), "::1");
    await handle(run("not argv"), "::1");
    await handle(run(["no-such-command"]), "::1");
    await handle(run(["account", "show", "acc_missing"]), "::1");
    assert.equal((await handle(run(["balance", "--account", "acc_missing"]), "::1")).status, 404);
    assert.equal(ran, 0);
    const res = await handle(run(["account", "create", "--name", "x", "--balance", "5"]), "::1");
    assert.equal(res.status, 200);
    assert.equal(ran, 1);
  } finally {
    await store.close();
  }
});

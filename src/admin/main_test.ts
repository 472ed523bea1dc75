import assert from "node:assert/strict";
import { scratchDatabase, testStores } from "../../tests/helpers/store.ts";
import { cli } from "./main.ts";
import { createOperatorHandler } from "./operator_api.ts";
import { acquireDirLock, writeServerFile } from "./server_file.ts";

function io(env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    env,
    out,
    err,
    io: { env, out: (t: string) => out.push(t), err: (t: string) => err.push(t) },
  };
}

async function withDataDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "tollgate_cli_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Exactly one JSON object on stdout. */
function onlyJson(out: string[]): Record<string, unknown> {
  assert.equal(out.length, 1);
  const v = JSON.parse(out[0]);
  assert.equal(typeof v, "object");
  return v;
}

Deno.test("cli embedded without a server: opens DATA_DIR itself; exit 0 / 2 / 1", async () => {
  await withDataDir(async (dir) => {
    const a = io({ DATA_DIR: dir });
    assert.equal(
      await cli(["account", "create", "--json", "--name", "Ivan", "--balance", "2"], a.io),
      0,
    );
    const { id, balance } = onlyJson(a.out);
    assert.equal(balance, "2");
    assert.deepEqual(a.err, []);

    const b = io({ DATA_DIR: dir }); // a second process-like run sees the same data
    assert.equal(await cli(["balance", "--account", String(id)], b.io), 0);
    assert.match(b.out[0], /^balance 2 RUB, held 0 RUB/);

    const c = io({ DATA_DIR: dir });
    assert.equal(await cli(["--json", "topup", "--account", String(id)], c.io), 2);
    assert.deepEqual(c.out.map((l) => JSON.parse(l)), [
      { ok: false, error: "--amount is required" },
    ]);
    assert.match(c.err[0], /^error: --amount is required\n\nUsage:/);

    const d = io({ DATA_DIR: dir });
    assert.equal(await cli(["balance", "--account", "acc_missing"], d.io), 1);
    assert.deepEqual(d.err, ["error: no such account: acc_missing"]);
    assert.deepEqual(d.out, [], "human-readable: nothing on standard output");
    const e = io({ DATA_DIR: dir });
    assert.equal(await cli(["--json", "balance", "--account", "acc_missing"], e.io), 1);
    assert.deepEqual(e.out.map((l) => JSON.parse(l)), [
      { ok: false, error: "no such account: acc_missing" },
    ]);
    // The lock was released each time.
    const release = await acquireDirLock(dir);
    await release();
  });
});

Deno.test("cli embedded: a failure on a directory with no data yet says where it looked", async () => {
  await withDataDir(async (dir) => {
    const a = io({ DATA_DIR: `${dir}/elsewhere` });
    assert.equal(await cli(["balance", "--account", "acc_x"], a.io), 1);
    assert.match(
      a.err[0],
      /no such account: acc_x \(.*elsewhere held no gateway data before this command: is DATA_DIR the gateway's\?\)/,
    );
    await assert.rejects(
      Deno.stat(`${dir}/elsewhere`),
      Deno.errors.NotFound,
      "nothing is left there",
    );
    // A directory that was there (empty of gateway data) keeps what it held, and no store.
    await Deno.mkdir(`${dir}/kept`);
    await Deno.writeTextFile(`${dir}/kept/notes.txt`, "mine");
    const b = io({ DATA_DIR: `${dir}/kept` });
    assert.equal(await cli(["balance", "--account", "acc_x"], b.io), 1);
    assert.deepEqual([...Deno.readDirSync(`${dir}/kept`)].map((e) => e.name), ["notes.txt"]);
  });
});

Deno.test("cli embedded: a directory held by another process is refused", async () => {
  await withDataDir(async (dir) => {
    const release = await acquireDirLock(dir);
    try {
      const a = io({ DATA_DIR: dir });
      assert.equal(await cli(["balance", "--account", "x"], a.io), 1);
      assert.match(a.err[0], /in use by process \d+/);
    } finally {
      await release();
    }
  });
});

Deno.test("cli embedded with a running server: the command runs in the server", async () => {
  const [{ open }] = await testStores();
  const store = await open();
  const token = crypto.randomUUID();
  const handle = createOperatorHandler(store, { token, keyPrefix: "tg" });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req, info) => handle(req, info.remoteAddr.hostname),
  );
  try {
    await withDataDir(async (dir) => {
      const url = `http://127.0.0.1:${server.addr.port}`;
      await writeServerFile(dir, { pid: Deno.pid, url, token });
      const a = io({ DATA_DIR: dir, KEY_PREFIX: "zz" });
      // Holding the lock proves the CLI never tried to open the directory.
      const release = await acquireDirLock(dir);
      try {
        assert.equal(await cli(["--json", "account", "create", "--name", "Ivan"], a.io), 0);
        const { id } = onlyJson(a.out);
        assert.equal((await store.getAccount(String(id)))?.name, "Ivan");

        const b = io({ DATA_DIR: dir });
        assert.equal(await cli(["key", "create", "--account", String(id), "--json"], b.io), 0);
        assert.match(String(onlyJson(b.out).key), /^tg_/); // the server's prefix

        const c = io({ DATA_DIR: dir });
        assert.equal(await cli(["nope"], c.io), 2);
        assert.match(c.err[0], /unknown command: nope\n\nUsage:/);

        const d = io({ DATA_DIR: dir });
        assert.equal(await cli(["balance", "--account", "acc_missing"], d.io), 1);

        await writeServerFile(dir, { pid: Deno.pid, url, token: "stale" });
        const e = io({ DATA_DIR: dir });
        assert.equal(await cli(["balance", "--account", String(id)], e.io), 1);
        assert.match(e.err[0], /operator token .*server\.json is stale/);
      } finally {
        await release();
      }
    });
  } finally {
    await server.shutdown();
    await store.close();
  }
});

Deno.test("cli embedded: a server.json left by a dead server falls back to the directory", async () => {
  await withDataDir(async (dir) => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    listener.close(); // nothing listens there now
    await writeServerFile(dir, { pid: 1, url: `http://127.0.0.1:${port}`, token: "t" });
    const a = io({ DATA_DIR: dir });
    assert.equal(await cli(["--json", "account", "create", "--name", "x"], a.io), 0);
    assert.match(String(onlyJson(a.out).id), /^acc_/);
  });
});

Deno.test("cli with a bad config exits 1 naming the variable", async () => {
  const a = io({ KEY_PREFIX: "Not Valid" });
  assert.equal(await cli(["balance", "--account", "x"], a.io), 1);
  assert.match(a.err[0], /KEY_PREFIX/);
});

const databaseUrl = Deno.env.get("DATABASE_URL");
Deno.test({
  name: "cli with DATABASE_URL talks to PostgreSQL directly",
  ignore: !databaseUrl,
  async fn() {
    const scratch = await scratchDatabase(databaseUrl!);
    try {
      const env = { DATABASE_URL: scratch.url, DATA_DIR: "/nonexistent/never-used" };
      const a = io(env);
      assert.equal(
        await cli(["--json", "account", "create", "--name", "P", "--balance", "9"], a.io),
        0,
      );
      const { id } = onlyJson(a.out);
      const b = io(env);
      assert.equal(await cli(["--json", "balance", "--account", String(id)], b.io), 0);
      assert.deepEqual(onlyJson(b.out), { balance: "9", held: "0", leased: "0" });
    } finally {
      await scratch.drop();
    }
  },
});

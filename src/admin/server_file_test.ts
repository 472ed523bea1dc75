import assert from "node:assert/strict";
import {
  acquireDirLock,
  DirLockedError,
  readServerFile,
  removeServerFile,
  writeServerFile,
} from "./server_file.ts";

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "tollgate_admin_" });
  try {
    await fn(`${dir}/data`); // not created yet: the helpers create it
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("server.json round-trips and is readable by its owner only", async () => {
  await withDir(async (dir) => {
    assert.equal(await readServerFile(dir), null);
    const info = { pid: Deno.pid, url: "http://127.0.0.1:8787", token: "t".repeat(32) };
    await writeServerFile(dir, info);
    assert.deepEqual(await readServerFile(dir), info);
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(`${dir}/server.json`)).mode! & 0o777, 0o600);
    }
    await writeServerFile(dir, { ...info, url: "http://127.0.0.1:9999" });
    assert.equal((await readServerFile(dir))?.url, "http://127.0.0.1:9999");
    await removeServerFile(dir);
    await removeServerFile(dir); // absent: fine
    assert.equal(await readServerFile(dir), null);
  });
});

Deno.test("DATA_DIR, made by the first of the server's steps to need it, is its owner's alone", async () => {
  if (Deno.build.os === "windows") return; // no POSIX modes; the folder's ACL applies
  // It holds the database (key hashes, balances, every generation) and the operator token.
  for (const make of [(d: string) => acquireDirLock(d).then((r) => r()), writeServerFile]) {
    await withDir(async (dir) => {
      await make(dir, { pid: Deno.pid, url: "http://127.0.0.1:1", token: "t".repeat(32) });
      assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
    });
  }
});

Deno.test("a malformed server.json reads as absent", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(dir, { recursive: true });
    for (const text of ["{", "[]", '{"pid": "1", "url": "u", "token": "t"}']) {
      await Deno.writeTextFile(`${dir}/server.json`, text);
      assert.equal(await readServerFile(dir), null, text);
    }
  });
});

Deno.test("pg.lock admits one holder; release lets the next in", async () => {
  await withDir(async (dir) => {
    const release = await acquireDirLock(dir);
    assert.equal((await Deno.readTextFile(`${dir}/pg.lock`)).trim(), String(Deno.pid));
    await assert.rejects(
      acquireDirLock(dir),
      (e: Error) => e instanceof DirLockedError && e.message.includes(`process ${Deno.pid}`),
    );
    await release();
    await release(); // twice: harmless
    const again = await acquireDirLock(dir);
    await again();
  });
});

Deno.test("a pg.lock file left behind without a holder is no obstacle", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/pg.lock`, "999999\n"); // a crashed process's file
    const release = await acquireDirLock(dir);
    assert.equal((await Deno.readTextFile(`${dir}/pg.lock`)).trim(), String(Deno.pid));
    await release();
  });
});

Deno.test("localUrl: wildcards are reached over loopback, a specific HOST at itself", async () => {
  const { localUrl } = await import("./server_file.ts");
  assert.equal(localUrl("0.0.0.0", 8787), "http://127.0.0.1:8787");
  assert.equal(localUrl("localhost", 1), "http://127.0.0.1:1");
  assert.equal(localUrl("::", 2), "http://[::1]:2");
  assert.equal(localUrl("[::]", 2), "http://[::1]:2");
  assert.equal(localUrl("127.0.0.2", 3), "http://127.0.0.2:3");
  assert.equal(localUrl("10.1.2.3", 4), "http://10.1.2.3:4");
  assert.equal(localUrl("::1", 5), "http://[::1]:5");
  assert.equal(localUrl("fe80::1", 6), "http://[fe80::1]:6");
});

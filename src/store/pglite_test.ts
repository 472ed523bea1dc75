import assert from "node:assert/strict";
import { getPriority } from "node:os";
import { openPglite, type PgliteDb } from "./pglite.ts";
import { openPgliteThread } from "./pglite_thread.ts";

/** Both embedded drivers: in this thread, and in a worker (what the gateway runs). */
const drivers: [string, (dir: string | undefined, opts?: { from?: Blob }) => Promise<PgliteDb>][] =
  [
    ["pglite", openPglite],
    ["pglite thread", openPgliteThread],
  ];

const SQL = `INSERT INTO child (id, parent_id) SELECT x.id, x.parent_id
  FROM json_to_recordset($1::text::json) AS x(id text, parent_id text) RETURNING id`;

for (const [driver, openDb] of drivers) {
  const withDb = async (fn: (db: PgliteDb) => Promise<void>) => {
    const db = await openDb(undefined);
    try {
      await db.exec(`CREATE TABLE parent (id text PRIMARY KEY);
      CREATE TABLE child (id text PRIMARY KEY, parent_id text NOT NULL REFERENCES parent (id));
      INSERT INTO parent VALUES ('p1');`);
      await fn(db);
    } finally {
      await db.close();
    }
  };

  Deno.test(`${driver} trustedBatch: runs prepared, returns rows, quotes its argument`, async () => {
    await withDb(async (db) => {
      for (const id of ["a'1", "b\\2"]) {
        const rows = await db.trustedBatch!<{ id: string }>(
          "ins_child",
          SQL,
          JSON.stringify([{ id, parent_id: "p1" }]),
        );
        assert.deepEqual(rows, [{ id }]);
      }
      const all = await db.query<{ id: string }>("SELECT id FROM child ORDER BY id");
      assert.deepEqual(all.map((r) => r.id), ["a'1", "b\\2"]);
    });
  });

  Deno.test(`${driver} trustedBatch: foreign-key triggers are off for that statement only`, async () => {
    await withDb(async (db) => {
      // The caller vouches for the reference, so the trigger does not run …
      await db.trustedBatch!("ins_child", SQL, JSON.stringify([{ id: "c1", parent_id: "nope" }]));
      // … but the session's role is back to normal: every other statement is still checked.
      const [role] = await db.query<{ session_replication_role: string }>(
        "SHOW session_replication_role",
      );
      assert.equal(role.session_replication_role, "origin");
      await assert.rejects(
        db.query("INSERT INTO child VALUES ('c2', 'nope')"),
        /foreign key/,
      );
    });
  });

  Deno.test(`${driver} trustedBatch: statements issued among batches are still checked`, async () => {
    await withDb(async (db) => {
      // Nothing awaited in between: the batches' role must not leak into the other statements.
      const batch = (id: string) =>
        db.trustedBatch!("ins_child", SQL, JSON.stringify([{ id, parent_id: "nope" }]));
      const results = await Promise.allSettled([
        batch("b1"),
        db.query("INSERT INTO child VALUES ('q1', 'nope')"),
        batch("b2"),
        db.exec("INSERT INTO child VALUES ('q2', 'nope')"),
        db.transaction((tx) => tx.exec("INSERT INTO child VALUES ('q3', 'nope')")),
        batch("b3"),
      ]);
      assert.deepEqual(results.map((r) => r.status), [
        "fulfilled",
        "rejected",
        "fulfilled",
        "rejected",
        "rejected",
        "fulfilled",
      ]);
      for (const r of results) {
        if (r.status === "rejected") assert.match(String(r.reason), /foreign key/);
      }
      const rows = await db.query<{ id: string }>("SELECT id FROM child ORDER BY id");
      assert.deepEqual(rows.map((r) => r.id), ["b1", "b2", "b3"]);
    });
  });

  Deno.test(`${driver} trustedBatch: a failing statement changes nothing and leaves the session usable`, async () => {
    await withDb(async (db) => {
      const rows = JSON.stringify([{ id: "d1", parent_id: "p1" }, { id: "d1", parent_id: "p1" }]);
      await assert.rejects(db.trustedBatch!("ins_child", SQL, rows), /duplicate key/);
      assert.deepEqual(await db.query("SELECT id FROM child"), []);
      const [role] = await db.query<{ session_replication_role: string }>(
        "SHOW session_replication_role",
      );
      assert.equal(role.session_replication_role, "origin");
    });
  });

  Deno.test(`${driver}: a transaction commits what its body did, and rolls back when it throws`, async () => {
    await withDb(async (db) => {
      const value = await db.transaction(async (tx) => {
        await tx.query("INSERT INTO parent VALUES ($1)", ["p2"]);
        return (await tx.query<{ n: string }>("SELECT count(*)::int8 AS n FROM parent"))[0].n;
      });
      assert.equal(value, "2");
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.exec("INSERT INTO parent VALUES ('p3')");
          throw new Error("changed my mind");
        }),
        /changed my mind/,
      );
      const rows = await db.query<{ id: string }>("SELECT id FROM parent ORDER BY id");
      assert.deepEqual(rows.map((r) => r.id), ["p1", "p2"]);
    });
  });

  Deno.test(`${driver}: statements outside a transaction wait until it ends`, async () => {
    await withDb(async (db) => {
      let release!: () => void;
      const gate = new Promise<void>((r) => release = r);
      const inTx = db.transaction(async (tx) => {
        await tx.query("INSERT INTO parent VALUES ('p2')");
        await gate;
        await tx.query("INSERT INTO parent VALUES ('p3')");
      });
      // Started while the transaction is open, so it must see both rows or neither.
      const outside = db.query<{ n: number }>("SELECT count(*)::int AS n FROM parent");
      await new Promise((r) => setTimeout(r, 20));
      release();
      await inTx;
      assert.deepEqual(await outside, [{ n: 3 }]);
    });
  });

  Deno.test(`${driver}: errors keep PostgreSQL's fields; int8 and numeric stay text`, async () => {
    await withDb(async (db) => {
      const e = await db.query("INSERT INTO parent VALUES ('p1')").catch((e) => e);
      assert.ok(e instanceof Error);
      assert.match(e.message, /duplicate key/);
      assert.equal((e as Error & { code?: string }).code, "23505");
      const [row] = await db.query<Record<string, unknown>>(
        "SELECT 9007199254740993::int8 AS big, 1.10::numeric AS num, now() AS at, '{\"a\":1}'::jsonb AS j",
      );
      assert.equal(row.big, "9007199254740993");
      assert.equal(row.num, "1.10");
      assert.ok(row.at instanceof Date);
      assert.deepEqual(row.j, { a: 1 });
    });
  });

  Deno.test(`${driver}: dump() starts a new database with the same rows`, async () => {
    await withDb(async (db) => {
      const copy = await openDb(undefined, { from: await db.dump() });
      try {
        assert.deepEqual(await copy.query("SELECT id FROM parent"), [{ id: "p1" }]);
      } finally {
        await copy.close();
      }
    });
  });
}

Deno.test("pglite thread: a store opened from a dump gives its memory back when closed", async () => {
  const first = await openPglite(undefined);
  await first.exec(
    "CREATE TABLE t (x text); INSERT INTO t SELECT repeat('x', 1000) FROM generate_series(1, 20000)",
  );
  const dump = await first.dump();
  await first.close();
  const cycle = async () => {
    const db = await openPgliteThread(undefined, { from: dump });
    assert.deepEqual(await db.query("SELECT count(*)::int AS n FROM t"), [{ n: 20000 }]);
    await db.close();
  };
  await cycle();
  await cycle();
  const before = Deno.memoryUsage().rss;
  const n = 12;
  for (let i = 0; i < n; i++) await cycle();
  const grown = (Deno.memoryUsage().rss - before) / 1048576;
  // Each open that kept its dump kept some 40 MB; a suite opens hundreds.
  assert.ok(grown < 150, `RSS grew ${grown.toFixed(0)} MiB over ${n} stores opened and closed`);
});

/** The nice value of each of this process's threads named `worker-…` (Deno's Workers). */
async function workerNices(): Promise<Map<string, number>> {
  const out = await new Deno.Command("ps", {
    args: ["-T", "-o", "spid=,ni=,comm=", "-p", String(Deno.pid)],
  }).output();
  const nices = new Map<string, number>();
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const [tid, ni, comm] = line.trim().split(/\s+/);
    if (comm?.startsWith("worker-")) nices.set(tid, Number(ni));
  }
  return nices;
}

Deno.test({
  name: "pglite thread: the store's thread runs at a lower priority than the requests'",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const before = await workerNices();
    const db = await openPgliteThread(undefined);
    try {
      await db.query("SELECT 1");
      const opened = [...(await workerNices())].filter(([tid]) => !before.has(tid));
      assert.equal(opened.length, 1, "one thread more: the store's");
      const own = getPriority();
      assert.equal(opened[0][1], Math.min(19, own + 10));
    } finally {
      await db.close();
    }
  },
});

import assert from "node:assert/strict";
import { openPglite } from "./pglite.ts";

const SQL = `INSERT INTO child (id, parent_id) SELECT x.id, x.parent_id
  FROM json_to_recordset($1::text::json) AS x(id text, parent_id text) RETURNING id`;

async function withDb(fn: (db: Awaited<ReturnType<typeof openPglite>>) => Promise<void>) {
  const db = await openPglite(undefined);
  try {
    await db.exec(`CREATE TABLE parent (id text PRIMARY KEY);
      CREATE TABLE child (id text PRIMARY KEY, parent_id text NOT NULL REFERENCES parent (id));
      INSERT INTO parent VALUES ('p1');`);
    await fn(db);
  } finally {
    await db.close();
  }
}

Deno.test("pglite trustedBatch: runs prepared, returns rows, quotes its argument", async () => {
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

Deno.test("pglite trustedBatch: foreign-key triggers are off for that statement only", async () => {
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

Deno.test("pglite trustedBatch: a failing statement changes nothing and leaves the session usable", async () => {
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

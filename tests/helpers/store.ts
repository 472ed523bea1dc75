/**
 * Stores for tests: PGlite in memory always, plus PostgreSQL when `DATABASE_URL` is set.
 * Every `open()` gives an empty, migrated store of its own; closing it releases everything
 * (for PostgreSQL, the scratch database is dropped).
 *
 *   for (const { name, open } of await testStores()) {
 *     Deno.test(`${name}: …`, async () => { const store = await open(); try { … } finally { await store.close(); } });
 *   }
 */
import postgres from "postgres";
import type { Store } from "../../src/store/store.ts";
import { SqlStore } from "../../src/store/sql_store.ts";
import { openPglite } from "../../src/store/pglite.ts";
import { openPgliteThread } from "../../src/store/pglite_thread.ts";
import { openStore } from "../../src/store/mod.ts";
import { randomBase62 } from "../../src/lib/ids.ts";

export interface TestStore {
  name: string;
  open: () => Promise<Store>;
}

export function testStores(): Promise<TestStore[]> {
  const stores: TestStore[] = [{ name: "pglite", open: openMemory }];
  const url = Deno.env.get("DATABASE_URL");
  if (url) stores.push({ name: "postgres", open: () => openScratchPostgres(url) });
  return Promise.resolve(stores);
}

/**
 * initdb takes seconds under WASM, so the first open migrates a PGlite and keeps a dump of
 * it; later opens start from the dump in a fraction of that.
 */
let template: Promise<Blob> | undefined;

function pgliteTemplate(): Promise<Blob> {
  template ??= (async () => {
    const db = await openPglite(undefined);
    try {
      await new SqlStore(db).migrate();
      return await db.dump();
    } finally {
      await db.close();
    }
  })();
  return template;
}

/** On its own thread, as the gateway runs it. */
async function openMemory(): Promise<Store> {
  const db = await openPgliteThread(undefined, { from: await pgliteTemplate() });
  const store = new SqlStore(db);
  await store.migrate();
  return store;
}

/** A fresh database on `url`'s server, dropped when the store is closed. */
async function openScratchPostgres(url: string): Promise<Store> {
  const scratch = await scratchDatabase(url);
  const store = await openStore({ databaseUrl: scratch.url });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await scratch.drop();
  };
  return store;
}

/**
 * An empty database created on `url`'s server (for tests that open their own connections,
 * e.g. the admin CLI). `drop()` removes it, even with connections still open.
 */
export async function scratchDatabase(
  url: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `tollgate_test_${randomBase62(12).toLowerCase()}`;
  await adminQuery(url, `CREATE DATABASE ${name}`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  return {
    url: dbUrl.href,
    drop: () => adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function adminQuery(url: string, text: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(text);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

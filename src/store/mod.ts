/**
 * The store's public face: `openStore` picks the driver (PostgreSQL when a URL is given,
 * else embedded PGlite under `DATA_DIR/pg`, or in memory for tests) and migrates. PGlite runs
 * on a thread of its own (src/store/pglite_thread.ts), off the thread that serves requests.
 */
import type { Store } from "./store.ts";
import { SqlStore } from "./sql_store.ts";

export type * from "./store.ts";
export { NotFoundError } from "./errors.ts";
export { generateKey, hashKey } from "./keys.ts";

export interface StoreOptions {
  databaseUrl?: string;
  /** `DATA_DIR`; PGlite keeps its files in `dataDir/pg`. Defaults to `./data`. */
  dataDir?: string;
  /** PGlite in memory (tests): nothing persists. */
  memory?: boolean;
}

/**
 * Opens and migrates the store. An embedded directory must be opened by one process only:
 * callers hold `acquireDirLock` (src/admin/server_file.ts) around it.
 */
export async function openStore(cfg: StoreOptions): Promise<Store> {
  // Each driver is loaded only when used: a PostgreSQL deployment never loads PGlite's WASM.
  const db = cfg.databaseUrl
    ? await (await import("./postgres.ts")).openPostgres(cfg.databaseUrl)
    : await (await import("./pglite_thread.ts")).openPgliteThread(
      cfg.memory ? undefined : cfg.dataDir ?? "./data",
    );
  const store = new SqlStore(db);
  try {
    await store.migrate();
  } catch (e) {
    await db.close();
    throw e;
  }
  return store;
}

/**
 * The embedded driver: PGlite (PostgreSQL compiled to WASM) in this process, persisted under
 * `DATA_DIR/pg`. One process at a time may open a directory (see `acquireDirLock` in
 * src/admin/server_file.ts). PGlite runs one query at a time, so transactions here are
 * trivially serial.
 */
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { type Db, param } from "./db.ts";

/** PostgreSQL type oids whose text form we keep (the default parsers lose precision). */
const INT8 = 20;
const NUMERIC = 1700;
const keepText = (x: string) => x;

export interface PgliteDb extends Db {
  /** The whole data directory as an uncompressed tarball (a template for fast test starts). */
  dump(): Promise<Blob>;
}

/**
 * Opens PGlite under `dataDir/pg`, or in memory when `dataDir` is undefined. `from` starts
 * from a `dump()` instead of running initdb (which takes seconds), for tests.
 */
export async function openPglite(
  dataDir: string | undefined,
  opts: { from?: Blob } = {},
): Promise<PgliteDb> {
  let dir: string | undefined;
  if (dataDir !== undefined) {
    dir = `${dataDir.replace(/\/+$/, "")}/pg`;
    await Deno.mkdir(dir, { recursive: true });
  }
  const pg = await PGlite.create({
    dataDir: dir,
    loadDataDir: opts.from,
    parsers: { [INT8]: keepText, [NUMERIC]: keepText },
  });
  return {
    ...wrap(pg),
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    close: () => pg.close(),
    dump: () => pg.dumpDataDir("none"),
  };
}

function wrap(q: PGlite | Transaction): Db {
  return {
    async query<T>(sql: string, params: unknown[] = []) {
      return (await q.query<T>(sql, params.map(param))).rows;
    },
    async exec(sql: string) {
      await q.exec(sql);
    },
    transaction() {
      throw new Error("nested transactions are not supported");
    },
    close() {
      throw new Error("close the database, not a transaction");
    },
  };
}

/**
 * The embedded driver: PGlite (PostgreSQL compiled to WASM) in this process, persisted under
 * `DATA_DIR/pg`. One process at a time may open a directory (see `acquireDirLock` in
 * src/admin/server_file.ts). PGlite runs one query at a time, so transactions here are
 * trivially serial.
 */
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { type Db, param, statementsOnly } from "./db.ts";

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
  const prepared = new Set<string>();
  return {
    ...wrap(pg),
    async trustedBatch<T>(name: string, sql: string, arg: string) {
      if (!/^[a-z_]+$/.test(name)) throw new Error(`bad statement name ${name}`);
      if (!prepared.has(name)) {
        await pg.exec(`PREPARE ${name}(text) AS ${sql}`);
        prepared.add(name);
      }
      // EXECUTE takes no bind parameters, so the argument travels as a literal (standard
      // strings: only the quote is special). The two statements are one implicit
      // transaction, so SET LOCAL ends with it, and an error rolls both back.
      const literal = "'" + arg.replaceAll("'", "''") + "'";
      const results = await pg.exec(
        `SET LOCAL session_replication_role = replica; EXECUTE ${name}(${literal})`,
      );
      return (results[1]?.rows ?? []) as T[];
    },
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    close: () => pg.close(),
    dump: () => pg.dumpDataDir("none"),
  };
}

function wrap(q: PGlite | Transaction): Db {
  return statementsOnly({
    async query<T>(sql: string, params: unknown[] = []) {
      return (await q.query<T>(sql, params.map(param))).rows;
    },
    async exec(sql: string) {
      await q.exec(sql);
    },
  });
}

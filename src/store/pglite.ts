/**
 * The embedded driver: PGlite (PostgreSQL compiled to WASM) in this process, persisted under
 * `DATA_DIR/pg`. One process at a time may open a directory (see `acquireDirLock` in
 * src/admin/server_file.ts). PGlite runs one query at a time, so transactions here are
 * trivially serial.
 */
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { type Db, param, statementsOnly } from "./db.ts";
import { lane } from "../lib/lane.ts";
import { DATA_DIR_MODE } from "../lib/data_dir.ts";

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
    await Deno.mkdir(dir, { recursive: true, mode: DATA_DIR_MODE });
  }
  const pg = await PGlite.create({
    dataDir: dir,
    loadDataDir: opts.from,
    parsers: { [INT8]: keepText, [NUMERIC]: keepText },
  });
  const prepared = new Set<string>();
  // Trusted batches run with the foreign-key triggers off (session_replication_role =
  // replica), every other statement with them on. Each change of that setting empties
  // PostgreSQL's plan cache, so switching it around every batch (SET LOCAL) re-planned the
  // prepared batch statement each time: ~0.6 ms a batch. The role is switched only when the
  // kind of statement changes, and one lane keeps each switch together with its statement,
  // so no other statement ever runs under the batch's role.
  let role: "origin" | "replica" = "origin";
  const serial = lane();
  const inRole = <T>(want: typeof role, fn: () => Promise<T>): Promise<T> =>
    serial(async () => {
      if (role !== want) {
        // Its own implicit transaction: a statement failing after it cannot undo it.
        await pg.exec(`SET session_replication_role = ${want}`);
        role = want;
      }
      return await fn();
    });
  const base = wrap(pg);
  return {
    ...base,
    query: (sql, params) => inRole("origin", () => base.query(sql, params)),
    exec: (sql) => inRole("origin", () => base.exec(sql)),
    trustedBatch<T>(name: string, sql: string, arg: string) {
      if (!/^[a-z_]+$/.test(name)) throw new Error(`bad statement name ${name}`);
      return inRole("replica", async () => {
        if (!prepared.has(name)) {
          await pg.exec(`PREPARE ${name}(text) AS ${sql}`);
          prepared.add(name);
        }
        // EXECUTE takes no bind parameters, so the argument travels as a literal (standard
        // strings: only the quote is special).
        const literal = "'" + arg.replaceAll("'", "''") + "'";
        const [result] = await pg.exec(`EXECUTE ${name}(${literal})`);
        return (result?.rows ?? []) as T[];
      });
    },
    // The whole transaction holds the lane: its statements run on `tx`, outside it.
    transaction: (fn) => inRole("origin", () => pg.transaction((tx) => fn(wrap(tx)))),
    close: () => serial(() => pg.close()),
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

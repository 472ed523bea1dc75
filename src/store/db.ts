/**
 * The driver seam: the little the SQL store needs from a database. PGlite and postgres.js
 * each implement it in a few lines, so both run exactly the same statements.
 *
 * Contract for drivers: `int8` and `numeric` columns come back as strings (never a lossy
 * `number`), `timestamptz` as `Date`, `jsonb` parsed, `bool` as boolean, `int4` as number.
 * Parameters are strings, numbers, booleans or null; statements cast them (`$1::bigint`).
 */
export interface Db {
  /** One statement, with `$n` parameters; the rows it returns. */
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A script of several statements, without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * Optional, embedded driver only: runs `sql` (one `$1` text parameter) as a named prepared
   * statement, planned once per session, with the foreign-key triggers off for that one
   * statement. Only for a statement whose every reference the caller guarantees: the batch
   * writer of settled generations, whose account, key and generation ids it has just read
   * or written itself. Per row, those triggers were about a third of the batch's execution.
   */
  trustedBatch?<T>(name: string, sql: string, arg: string): Promise<T[]>;
}

/** bigint parameters travel as decimal strings, exact on both drivers. */
export function param(v: unknown): unknown {
  return typeof v === "bigint" ? v.toString() : v;
}

/**
 * A `Db` over `query`/`exec` alone: a transaction's handle, or the base a driver spreads its
 * own `transaction` and `close` over. Transactions do not nest, and only the database closes.
 */
export function statementsOnly(s: Pick<Db, "query" | "exec">): Db {
  return {
    ...s,
    transaction() {
      throw new Error("nested transactions are not supported");
    },
    close() {
      throw new Error("close the database, not a transaction");
    },
  };
}

/**
 * The clustered driver: PostgreSQL through postgres.js. Statements are prepared (the same few
 * run on every request); `int8`/`numeric` come back as strings, postgres.js's default.
 */
import postgres from "postgres";
import { type Db, param, statementsOnly } from "./db.ts";

/** Connections per instance: enough for concurrent holds and settlements, small enough that
 * many instances fit under PostgreSQL's default max_connections (100). */
const CONNECTIONS_MAX = 10;
/** Seconds `close()` waits for queries in flight before cutting connections. */
const CLOSE_TIMEOUT_S = 5;
/** Seconds to wait for a connection: while PostgreSQL is down, paid requests must get a
 * quick 503 with Retry-After, not hang for postgres.js's default 30 s. */
const CONNECT_TIMEOUT_S = 2;
/**
 * A transaction left open this long is ended by PostgreSQL itself. The gateway's transactions
 * take milliseconds; one whose instance went silent mid-way (a partition, a frozen host) would
 * otherwise keep its account's row locked for as long as the connection lives — minutes —
 * blocking every other instance's holds and settlements on that account, and the admin CLI.
 */
export const IDLE_TRANSACTION_TIMEOUT_MS = 30_000;

type Sql = postgres.Sql | postgres.TransactionSql;

export function openPostgres(url: string): Promise<Db> {
  const sql = postgres(url, {
    max: CONNECTIONS_MAX,
    onnotice: () => {},
    prepare: true,
    connect_timeout: CONNECT_TIMEOUT_S,
    // postgres.js waits up to 20 s between reconnects, and queries wait with it: while the
    // store is down every paid request would hang that long instead of getting a 503.
    backoff: () => 0.1,
    connection: { idle_in_transaction_session_timeout: IDLE_TRANSACTION_TIMEOUT_MS },
  });
  return Promise.resolve({
    ...wrap(sql),
    transaction: <T>(fn: (tx: Db) => Promise<T>) => sql.begin((tx) => fn(wrap(tx))) as Promise<T>,
    close: () => sql.end({ timeout: CLOSE_TIMEOUT_S }),
  });
}

function wrap(sql: Sql): Db {
  return statementsOnly({
    async query<T>(text: string, params: unknown[] = []) {
      const rows = await sql.unsafe(text, params.map(param) as postgres.ParameterOrJSON<never>[]);
      // A plain array: postgres.js's Result subclass carries extra fields.
      return Array.from(rows) as T[];
    },
    async exec(text: string) {
      await sql.unsafe(text).simple();
    },
  });
}

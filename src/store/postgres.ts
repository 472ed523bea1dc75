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

/**
 * PostgreSQL ended the statement to break a deadlock (40P01) or a serialization conflict
 * (40001). Statements that lock the same rows in another order (a batch of settlements over
 * several accounts, a top-up's foreign-key check beside a hold's row lock) can meet so under
 * load; the one chosen is rolled back whole, and sent again it runs as if for the first time.
 */
function conflicted(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "40001";
}

/** Tries beyond the first for a statement PostgreSQL rolled back for a conflict. */
export const CONFLICT_RETRIES = 3;

/**
 * Runs a statement of its own (outside any transaction) again when PostgreSQL rolled it back
 * for a conflict, after a short random pause so that the two sides do not meet again. Inside a
 * transaction the whole transaction is void; that is its caller's to retry.
 */
export async function retryingConflicts<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await run();
    } catch (e) {
      if (!conflicted(e) || attempt >= CONFLICT_RETRIES) throw e;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
    }
  }
}

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
    ...wrap(sql, true),
    transaction: <T>(fn: (tx: Db) => Promise<T>) => sql.begin((tx) => fn(wrap(tx))) as Promise<T>,
    close: () => sql.end({ timeout: CLOSE_TIMEOUT_S }),
  });
}

/** `alone`: statements run outside a transaction (each its own), so a conflict is retried. */
function wrap(sql: Sql, alone = false): Db {
  return statementsOnly({
    async query<T>(text: string, params: unknown[] = []) {
      const args = params.map(param) as postgres.ParameterOrJSON<never>[];
      const rows = alone
        ? await retryingConflicts(() => sql.unsafe(text, args))
        : await sql.unsafe(text, args);
      // A plain array: postgres.js's Result subclass carries extra fields.
      return Array.from(rows) as T[];
    },
    async exec(text: string) {
      await sql.unsafe(text).simple();
    },
  });
}

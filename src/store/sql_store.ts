/**
 * The one implementation of `Store`: plain SQL over the `Db` seam, identical on PGlite and
 * PostgreSQL. Every money move is a single statement (data-modifying CTEs), so it is atomic
 * and race-free without explicit transactions or application locks:
 *
 * - `reserve`: admits a generation iff `balance - held >= hold` (re-checked by PostgreSQL on
 *   the locked account row, so concurrent reserves can never over-commit the balance).
 * - `settle`: closes the generation only if it is still `running`; a second or racing
 *   settlement finds no such row and changes nothing. The ledger's unique `generation_id`
 *   is the second, independent guard.
 * - `topup`: the ledger row is inserted `ON CONFLICT (idempotency_key) DO NOTHING`; the
 *   balance is credited only from the row actually inserted.
 *
 * Invariants (tested): balance = Σ ledger amounts; Σ debits = −Σ generation costs;
 * held = Σ holds of running generations + Σ leases.
 */
import type {
  Account,
  ApiKeyRecord,
  Blob,
  Generation,
  GenerationCheckpoint,
  GenerationOpen,
  GenerationStatus,
  KeyAuth,
  LedgerEntry,
  ReserveOptions,
  SettledGeneration,
  Settlement,
  Store,
} from "./store.ts";
import type { Db } from "./db.ts";
import { NotFoundError } from "./errors.ts";
import { newId } from "../lib/ids.ts";
import { storedCountMax } from "../lib/bounds.ts";
import { migrations } from "./migrations/index.ts";

/** Advisory lock key for migrations ("toll" in ASCII): instances starting together queue. */
const MIGRATION_LOCK = 0x746f6c6c;
/** Held while an account is looked up by name and made if missing (the demo account). */
const NAMED_ACCOUNT_LOCK = 0x746f6c6d;
/** PostgreSQL's SQLSTATE for a duplicate key. */
const UNIQUE_VIOLATION = "23505";

const ACCOUNT_COLS = "id, name, balance, held, default_model, rpm_limit, created";
const KEY_COLS =
  "id, account_id, prefix, label, revoked_at, rpm_limit, spend_limit, spent, last_used, created";
const LEDGER_COLS = "id, account_id, amount, kind, generation_id, idempotency_key, created";
const GENERATION_COLS = "id, account_id, key_id, endpoint, model, provider, upstream_model, " +
  "stream, status, finish_reason, input_tokens, output_tokens, cache_read_tokens, " +
  "cache_write_tokens, reasoning_tokens, cost, cost_details, usage_source, hold, latency_ms, " +
  "ttft_ms, error, created, finished";
const BLOB_COLS = "id, account_id, content_type, size, storage_key, created";

/** `a.x AS a_x, …`: one table's columns under a prefix, for joins. */
function aliased(cols: string, table: string): string {
  return cols.split(", ").map((c) => `${table}.${c} AS ${table}_${c}`).join(", ");
}

type Row = Record<string, unknown>;

/**
 * Settled generations in one statement (wallet batches): each row inserted already settled
 * (or a journaled running row settled in place), with its debit, ledger entry and key spend.
 * `$1` is a JSON array of rows. Leased (`$2` the instance), the costs also come out of that
 * instance's lease on each account and so out of `held` — never more than the lease still
 * holds, should the sweeper have ended it.
 */
/**
 * CTEs `lo`, `ls`, `a` of a leased debit: each account's `t.total` comes off its balance, and
 * as much of it as the lease of `instance` (a parameter; none when NULL) still holds comes off
 * that lease and `held` with it. A negative total (a refund) takes nothing from the lease.
 */
function leasedDebit(instance: string): string {
  return `lo AS (
         SELECT leases.account_id, GREATEST(LEAST(leases.amount, t.total), 0) AS used
         FROM leases JOIN t ON t.account_id = leases.account_id
         WHERE leases.instance = ${instance}
         FOR UPDATE OF leases
       ), ls AS (
         UPDATE leases SET amount = leases.amount - lo.used FROM lo
         WHERE leases.instance = ${instance} AND leases.account_id = lo.account_id
       ), a AS (
         UPDATE accounts SET balance = accounts.balance - t.total,
           held = accounts.held - coalesce(lo.used, 0)
         FROM t LEFT JOIN lo ON lo.account_id = t.account_id
         WHERE accounts.id = t.account_id
       )`;
}

/** What a settlement sets on a generation's row (bar `finished`, set by the store). */
const SETTLED_FIELDS = [
  "status",
  "hold",
  "cost",
  "cost_details",
  "provider",
  "upstream_model",
  "finish_reason",
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_write_tokens",
  "reasoning_tokens",
  "usage_source",
  "latency_ms",
  "ttft_ms",
  "error",
];
/** The columns a settled generation's row is written with (bar `finished`). */
const GENERATION_COLUMNS = ["id", "account_id", "key_id", "endpoint", "model", "stream"]
  .concat(SETTLED_FIELDS, "created").join(", ");

/**
 * A batch of settlements written in one statement: a new generation's row is inserted where no
 * row has its id, and a row the wallet journaled is settled in place; a row settled already (a
 * batch retried after its reply was lost) or closed by the sweeper is in neither, so it is not
 * debited again. (An insert with ON CONFLICT DO UPDATE did both in one step, at ~20 % more of
 * the statement's time on embedded PGlite: every row paid for a speculative insertion.) A row of
 * the batch inserted by another connection still uncommitted when the statement began makes it
 * fail on the primary key, and the batch is retried: deliberately, since skipping that row would
 * leave it running and unbilled. (Embedded PGlite has one connection; a leased batch first locks
 * its accounts, which such an insert holds a key-share lock on.)
 */
function recordSettledSql(leased: boolean, allNew = false): string {
  const debit = leased
    ? `t AS (
         SELECT account_id, sum(cost) AS total FROM g GROUP BY account_id
       ), ${leasedDebit("$2")}`
    : `a AS (
         UPDATE accounts SET balance = accounts.balance - t.total
         FROM (SELECT account_id, sum(cost) AS total FROM g GROUP BY account_id) t
         WHERE accounts.id = t.account_id
       )`;
  // Every row new: inserted as it is. Otherwise a row already there is left out of the insert,
  // and settled in place only when the wallet journaled it.
  const unseen = allNew
    ? ""
    : "WHERE NOT EXISTS (SELECT 1 FROM generations e WHERE e.id = input.id)";
  const rows = allNew ? "g AS (SELECT * FROM fresh)" : `journaled AS (
         -- Only a row the wallet journaled (running, its hold 0: the hold was never the
         -- store's); a settled one, or one the sweeper closed, stays as it is.
         UPDATE generations SET ${SETTLED_FIELDS.map((f) => `${f} = i.${f}`).join(", ")},
           model = i.model, finished = clock_timestamp()
         FROM input i
         WHERE generations.id = i.id AND generations.status = 'running' AND generations.hold = 0
         RETURNING generations.id, generations.account_id, generations.key_id, generations.cost
       ), g AS (
         SELECT * FROM fresh UNION ALL SELECT * FROM journaled
       )`;
  return `WITH input AS (
         SELECT * FROM json_to_recordset($1::text::json) AS x(
           id text, account_id text, key_id text, endpoint text, model text, stream boolean,
           status text, hold bigint, cost bigint, cost_details jsonb, provider text,
           upstream_model text, finish_reason text, input_tokens integer, output_tokens integer,
           cache_read_tokens integer, cache_write_tokens integer, reasoning_tokens integer,
           usage_source text, latency_ms integer, ttft_ms integer, error text,
           created timestamptz, ledger_id text)
       ), fresh AS (
         INSERT INTO generations (${GENERATION_COLUMNS}, finished)
         SELECT ${GENERATION_COLUMNS}, clock_timestamp() FROM input ${unseen}
         RETURNING id, account_id, key_id, cost
       ), ${rows}, ${debit}, l AS (
         INSERT INTO ledger (id, account_id, amount, kind, generation_id, created)
         SELECT i.ledger_id, g.account_id, -g.cost, 'debit', g.id, clock_timestamp()
         FROM g JOIN input i ON i.id = g.id WHERE g.cost > 0
       ), k AS (
         UPDATE api_keys SET spent = api_keys.spent + t.total
         FROM (SELECT key_id, sum(cost) AS total FROM g WHERE cost > 0 GROUP BY key_id) t
         WHERE api_keys.id = t.key_id
       )
       SELECT id FROM g`;
}
const RECORD_SETTLED = recordSettledSql(false);
const RECORD_SETTLED_LEASED = recordSettledSql(true);
/**
 * A batch none of whose rows was journaled (a wallet's generations that settled within
 * `journalAfterMs`, as short calls do): inserted without looking each id up first (a fifth of
 * the statement's time on embedded PGlite). A row that is there after all (a retried batch's
 * whose first answer was lost) fails it on the primary key, changing nothing, and
 * RECORD_SETTLED then writes the batch.
 */
const RECORD_SETTLED_NEW = recordSettledSql(false, true);

/**
 * A settlement's figures as `settle` and SETTLE_LATE set them ($2–$16 and $18 of
 * `settleParams`; $17 is its ledger entry's id).
 */
const SETTLED_COLUMNS = `status = $2, cost = $3::bigint, cost_details = $4::text::jsonb,
           provider = $5, upstream_model = $6, finish_reason = $7, input_tokens = $8,
           output_tokens = $9, cache_read_tokens = $10, cache_write_tokens = $11,
           reasoning_tokens = $12, usage_source = $13, latency_ms = $14, ttft_ms = $15,
           error = $16, model = coalesce($18, model), finished = clock_timestamp()`;

function settleParams(s: Settlement): unknown[] {
  const t = s.tokens;
  return [
    s.generationId,
    s.status,
    s.cost,
    JSON.stringify(s.costDetails),
    s.provider,
    storable(s.upstreamModel),
    storable(s.finishReason),
    count(t.input),
    count(t.output),
    count(t.cacheRead),
    count(t.cacheWrite),
    count(t.reasoning),
    s.usageSource,
    count(s.latencyMs),
    count(s.ttftMs),
    storable(s.error),
    newId("led"),
    s.model ?? null,
  ];
}

/**
 * The real settlement of a generation the sweeper closed as `interrupted` while the instance
 * serving it was stalled, not dead (frozen past its lease, or a store-held generation running
 * longer than the sweep deadline): it replaces the sweeper's checkpoint figures, or the
 * response's `usage.cost` would differ from the debit. The balance and the key's spend move by
 * the difference, and the generation's one debit entry becomes its cost (still one entry per
 * generation). The hold went back with the sweep. `$19`, a leasing instance, pays the
 * difference out of its current lease, where it has one; none left, the balance pays, and may
 * go below what other instances hold: the stalled instance's generations were admitted
 * against money that was leased when they began. Once applied the row is no longer
 * `interrupted`, so a retried settlement changes nothing.
 */
const SETTLE_LATE = `WITH prev AS (
         SELECT id, cost FROM generations WHERE id = $1 AND status = 'interrupted' FOR UPDATE
       ), g AS (
         UPDATE generations SET ${SETTLED_COLUMNS}
         FROM prev WHERE generations.id = prev.id
         RETURNING generations.account_id, generations.key_id, generations.cost,
           generations.cost - prev.cost AS delta
       ), t AS (
         SELECT account_id, delta AS total FROM g
       ), ${leasedDebit("$19")}, l AS (
         INSERT INTO ledger (id, account_id, amount, kind, generation_id, created)
         SELECT $17, g.account_id, -g.cost, 'debit', $1, clock_timestamp() FROM g
         WHERE g.delta <> 0
         ON CONFLICT (generation_id) DO UPDATE SET amount = EXCLUDED.amount
       ), k AS (
         UPDATE api_keys SET spent = api_keys.spent + g.delta
         FROM g WHERE api_keys.id = g.key_id AND g.delta <> 0
       )
       SELECT 1 AS settled FROM g`;

/**
 * Generations in flight, journaled (`$1` a JSON array): a wallet's inserted running with hold 0,
 * or a running row's checkpoint moved on (a wallet's, or one held in the store, whose hold
 * stays). Never a settled row: that settlement already said the last word.
 */
const JOURNAL = `INSERT INTO generations (id, account_id, key_id, endpoint, model, stream, status,
         hold, cost, cost_details, provider, upstream_model, input_tokens, output_tokens,
         cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_source, created,
         checkpoint_at, instance)
       SELECT id, account_id, key_id, endpoint, model, stream, 'running', 0, cost, cost_details,
         provider, upstream_model, input_tokens, output_tokens, cache_read_tokens,
         cache_write_tokens, reasoning_tokens, 'counted', created, clock_timestamp(), $2
       FROM json_to_recordset($1::text::json) AS x(
         id text, account_id text, key_id text, endpoint text, model text, stream boolean,
         cost bigint, cost_details jsonb, provider text, upstream_model text,
         input_tokens integer, output_tokens integer, cache_read_tokens integer,
         cache_write_tokens integer, reasoning_tokens integer, created timestamptz)
       ON CONFLICT (id) DO UPDATE SET
         model = EXCLUDED.model, cost = EXCLUDED.cost, cost_details = EXCLUDED.cost_details,
         provider = EXCLUDED.provider, upstream_model = EXCLUDED.upstream_model,
         input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
         cache_read_tokens = EXCLUDED.cache_read_tokens,
         cache_write_tokens = EXCLUDED.cache_write_tokens,
         reasoning_tokens = EXCLUDED.reasoning_tokens,
         checkpoint_at = EXCLUDED.checkpoint_at,
         instance = coalesce(EXCLUDED.instance, generations.instance)
       WHERE generations.status = 'running'`;

/** A generation's token figures as the batch statements' JSON rows carry them. */
function tokenColumns(t: Settlement["tokens"]) {
  return {
    input_tokens: count(t.input),
    output_tokens: count(t.output),
    cache_read_tokens: count(t.cacheRead),
    cache_write_tokens: count(t.cacheWrite),
    reasoning_tokens: count(t.reasoning),
  };
}

/**
 * The columns a generation has from its opening, as the batch statements' JSON rows carry them;
 * `served`, the model a fallback served it with instead.
 */
function openColumns(g: GenerationOpen, served?: string) {
  return {
    id: g.id,
    account_id: g.accountId,
    key_id: g.keyId,
    endpoint: g.endpoint,
    model: served ?? g.model,
    stream: g.stream,
  };
}

/**
 * Account rows locked in one order before a leased batch: batches of several instances each
 * update many accounts, and in arbitrary order two of them could deadlock.
 */
const LOCK_ACCOUNTS = `SELECT id FROM accounts
       WHERE id IN (SELECT jsonb_array_elements_text($1::text::jsonb))
       ORDER BY id FOR UPDATE`;

/** A new account; its opening balance, when positive, is its first ledger entry. */
async function insertAccount(db: Db, name: string, balance: bigint): Promise<Account> {
  if (balance < 0n) throw new RangeError("an opening balance cannot be negative");
  // The opening balance is a ledger entry too, so that balance = Σ ledger always holds.
  const [row] = await db.query<Row>(
    `WITH a AS (
       INSERT INTO accounts (id, name, balance, created)
       VALUES ($1, $2, $3::bigint, clock_timestamp())
       RETURNING ${ACCOUNT_COLS}
     ), l AS (
       INSERT INTO ledger (id, account_id, amount, kind, created)
       SELECT $4, a.id, a.balance, 'topup', a.created FROM a WHERE a.balance > 0
     )
     SELECT ${ACCOUNT_COLS} FROM a`,
    [newId("acc"), name, balance, newId("led")],
  );
  return toAccount(row);
}

export class SqlStore implements Store {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async migrate(): Promise<void> {
    await this.#db.transaction(async (tx) => {
      // Transaction-scoped: released at commit, also if this process dies.
      await tx.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
      const [{ present }] = await tx.query<{ present: boolean }>(
        "SELECT to_regclass('schema_migrations') IS NOT NULL AS present",
      );
      if (!present) {
        await tx.exec(
          "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, " +
            "applied timestamptz NOT NULL DEFAULT now())",
        );
      }
      const rows = await tx.query<{ version: number }>("SELECT version FROM schema_migrations");
      const applied = new Set(rows.map((r) => r.version));
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        await tx.exec(m.sql);
        await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
          m.version,
          m.name,
        ]);
      }
    });
  }

  /** The applied migrations and the schema as the catalog describes it: for tests and
   * diagnostics (two snapshots are equal iff nothing in the schema changed). */
  async schemaSnapshot(): Promise<
    { migrations: Row[]; columns: Row[]; indexes: Row[]; constraints: Row[] }
  > {
    const q = (sql: string) => this.#db.query<Row>(sql);
    return {
      migrations: await q("SELECT version, name FROM schema_migrations ORDER BY version"),
      columns: await q(
        `SELECT table_name, column_name, data_type, is_nullable, column_default
         FROM information_schema.columns WHERE table_schema = current_schema()
         ORDER BY table_name, ordinal_position`,
      ),
      indexes: await q(
        `SELECT tablename, indexname, indexdef FROM pg_indexes
         WHERE schemaname = current_schema() ORDER BY tablename, indexname`,
      ),
      constraints: await q(
        `SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def
         FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
         ORDER BY 1, 2`,
      ),
    };
  }

  async ping(): Promise<void> {
    await this.#db.query("SELECT 1");
  }

  close(): Promise<void> {
    return this.#db.close();
  }

  // --- accounts ---

  createAccount(name: string, balance: bigint): Promise<Account> {
    return insertAccount(this.#db, name, balance);
  }

  async ensureAccountNamed(
    name: string,
    balance: bigint,
    key: { hash: string; prefix: string; label: string | null },
  ): Promise<{ account: Account; key: ApiKeyRecord | null }> {
    return await this.#db.transaction(async (tx) => {
      // Transaction-scoped, like the migrations': a second caller reads the first's account.
      await tx.query(`SELECT pg_advisory_xact_lock(${NAMED_ACCOUNT_LOCK})`);
      const [found] = await tx.query<Row>(
        `SELECT ${ACCOUNT_COLS} FROM accounts WHERE name = $1 ORDER BY created, id LIMIT 1`,
        [name],
      );
      if (found) return { account: toAccount(found), key: null };
      const account = await insertAccount(tx, name, balance);
      const [row] = await tx.query<Row>(
        `INSERT INTO api_keys (id, account_id, prefix, key_hash, label, created)
         VALUES ($1, $2, $3, $4, $5, clock_timestamp())
         RETURNING ${KEY_COLS}`,
        [newId("key"), account.id, key.prefix, key.hash, key.label],
      );
      return { account, key: toKey(row) };
    });
  }

  async getAccount(id: string): Promise<Account | null> {
    const [row] = await this.#db.query<Row>(
      `SELECT ${ACCOUNT_COLS} FROM accounts WHERE id = $1`,
      [id],
    );
    return row ? toAccount(row) : null;
  }

  async findAccountByName(name: string): Promise<Account | null> {
    const [row] = await this.#db.query<Row>(
      `SELECT ${ACCOUNT_COLS} FROM accounts WHERE name = $1 ORDER BY created, id LIMIT 1`,
      [name],
    );
    return row ? toAccount(row) : null;
  }

  async setDefaultModel(accountId: string, model: string | null): Promise<void> {
    const rows = await this.#db.query(
      "UPDATE accounts SET default_model = $2 WHERE id = $1 RETURNING id",
      [accountId, model],
    );
    if (rows.length === 0) throw new NotFoundError(`no such account: ${accountId}`);
  }

  async setAccountRpm(accountId: string, rpm: number | null): Promise<void> {
    const rows = await this.#db.query(
      "UPDATE accounts SET rpm_limit = $2 WHERE id = $1 RETURNING id",
      [accountId, rpm],
    );
    if (rows.length === 0) throw new NotFoundError(`no such account: ${accountId}`);
  }

  // --- keys ---

  async createKey(
    accountId: string,
    keyHash: string,
    prefix: string,
    label: string | null,
  ): Promise<ApiKeyRecord> {
    const rows = await this.#db.query<Row>(
      `INSERT INTO api_keys (id, account_id, prefix, key_hash, label, created)
       SELECT $1, id, $3, $4, $5, clock_timestamp() FROM accounts WHERE id = $2
       RETURNING ${KEY_COLS}`,
      [newId("key"), accountId, prefix, keyHash, label],
    );
    if (rows.length === 0) throw new NotFoundError(`no such account: ${accountId}`);
    return toKey(rows[0]);
  }

  /** A revoked key is returned with `revoked: true` (auth answers 401 for it). */
  async findKeyByHash(keyHash: string): Promise<KeyAuth | null> {
    const [row] = await this.#db.query<Row>(
      `SELECT ${aliased(KEY_COLS, "k")}, ${aliased(ACCOUNT_COLS, "a")}
       FROM api_keys k JOIN accounts a ON a.id = k.account_id
       WHERE k.key_hash = $1`,
      [keyHash],
    );
    if (!row) return null;
    return { key: toKey(unprefix(row, "k_")), account: toAccount(unprefix(row, "a_")) };
  }

  async listKeys(accountId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.#db.query<Row>(
      `SELECT ${KEY_COLS} FROM api_keys WHERE account_id = $1 ORDER BY created, id`,
      [accountId],
    );
    return rows.map(toKey);
  }

  /** True iff the key exists; revoking a revoked key keeps its first revocation time. */
  async revokeKey(keyId: string): Promise<"revoked" | "already revoked" | false> {
    // `before` is read from the statement's snapshot: the row as it was before this update.
    const rows = await this.#db.query<{ already: boolean }>(
      `UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, now())
         FROM (SELECT revoked_at FROM api_keys WHERE id = $1) before
        WHERE k.id = $1
      RETURNING before.revoked_at IS NOT NULL AS already`,
      [keyId],
    );
    if (rows.length === 0) return false;
    return rows[0].already ? "already revoked" : "revoked";
  }

  /** `undefined` leaves a limit as it is; `null` removes it. */
  async setKeyLimits(
    keyId: string,
    limits: { rpm?: number | null; spend?: bigint | null },
  ): Promise<void> {
    const rows = await this.#db.query(
      `UPDATE api_keys SET
         rpm_limit = CASE WHEN $2::boolean THEN $3::integer ELSE rpm_limit END,
         spend_limit = CASE WHEN $4::boolean THEN $5::bigint ELSE spend_limit END
       WHERE id = $1 RETURNING id`,
      [
        keyId,
        limits.rpm !== undefined,
        limits.rpm ?? null,
        limits.spend !== undefined,
        limits.spend ?? null,
      ],
    );
    if (rows.length === 0) throw new NotFoundError(`no such key: ${keyId}`);
  }

  /** Only moves `last_used` forward, so out-of-order touches are harmless. */
  async touchKey(keyId: string, at: Date): Promise<void> {
    await this.#db.query(
      `UPDATE api_keys SET last_used = $2::timestamptz
       WHERE id = $1 AND (last_used IS NULL OR last_used < $2::timestamptz)`,
      [keyId, at.toISOString()],
    );
  }

  // --- money ---

  async topup(
    accountId: string,
    amount: bigint,
    idempotencyKey: string,
  ): Promise<{ entry: LedgerEntry; applied: boolean }> {
    if (amount <= 0n) throw new RangeError("a top-up must be positive");
    const [inserted] = await this.#db.query<Row>(
      `WITH l AS (
         INSERT INTO ledger (id, account_id, amount, kind, idempotency_key, created)
         VALUES ($1, $2, $3::bigint, 'topup', $4, clock_timestamp())
         ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING ${LEDGER_COLS}
       ), a AS (
         UPDATE accounts SET balance = accounts.balance + l.amount
         FROM l WHERE accounts.id = l.account_id
       )
       SELECT ${LEDGER_COLS} FROM l`,
      [newId("led"), accountId, amount, idempotencyKey],
    );
    if (inserted) return { entry: toLedger(inserted), applied: true };
    // A repeat: the first entry is committed (the insert above waited for it if in flight).
    const [first] = await this.#db.query<Row>(
      `SELECT ${LEDGER_COLS} FROM ledger WHERE idempotency_key = $1`,
      [idempotencyKey],
    );
    return { entry: toLedger(first), applied: false };
  }

  /**
   * The key's spend cap counts settled spend plus the holds of its running generations, so
   * overlapping requests cannot each pass alone. (On PostgreSQL two reserves in the very same
   * instant can still both pass the cap check — each cannot see the other's uncommitted row —
   * so the cap may be exceeded by at most one hold per concurrent request. The account
   * balance check has no such gap: it is re-checked on the locked row.)
   */
  async reserve(g: GenerationOpen, opts: ReserveOptions = {}): Promise<boolean> {
    if (g.hold < 0n) throw new RangeError("a hold cannot be negative");
    const inMemory = opts.keyInMemory ?? 0n;
    if (inMemory < 0n) throw new RangeError("what a wallet holds cannot be negative");
    // A key known to have no cap needs no turn: one statement (one round trip) is enough.
    if (opts.keyCapped === false) return await this.#reserveIn(this.#db, g, inMemory);
    return await this.#db.transaction(async (tx) => {
      // A capped key's reserves take turns. The cap check sums the key's running holds, and
      // a statement sees only what was committed when it began: two reserves at once each
      // missed the other's hold, and a 0.04 ₽ cap let 0.10 ₽ through. Locking first makes
      // the next reserve's statement begin after this one commits. The lock is the account
      // row's, which every settlement takes before the key's: locking the key first could
      // deadlock with a settlement.
      await tx.query(
        `SELECT 1 FROM accounts WHERE id = $1 AND EXISTS (
           SELECT 1 FROM api_keys WHERE id = $2 AND spend_limit IS NOT NULL
         ) FOR UPDATE`,
        [g.accountId, g.keyId],
      );
      return await this.#reserveIn(tx, g, inMemory);
    });
  }

  async #reserveIn(db: Db, g: GenerationOpen, inMemory: bigint): Promise<boolean> {
    const rows = await db.query(
      `WITH k AS (
         SELECT 1 FROM api_keys
         WHERE id = $2 AND account_id = $1
           AND CASE WHEN spend_limit IS NULL THEN true
                    ELSE spent + $3::bigint + $8::bigint + (
                      SELECT coalesce(sum(hold), 0) FROM generations
                      WHERE key_id = $2 AND status = 'running'
                    ) <= spend_limit
               END
       ), h AS (
         UPDATE accounts SET held = held + $3::bigint
         WHERE id = $1 AND balance - held >= $3::bigint AND EXISTS (SELECT 1 FROM k)
         RETURNING id
       )
       INSERT INTO generations (id, account_id, key_id, endpoint, model, stream, status, hold, created)
       SELECT $4, h.id, $2, $5, $6, $7, 'running', $3::bigint, clock_timestamp() FROM h
       RETURNING id`,
      [g.accountId, g.keyId, g.hold, g.id, g.endpoint, g.model, g.stream, inMemory],
    );
    return rows.length === 1;
  }

  async settle(s: Settlement): Promise<boolean> {
    if (s.cost < 0n) throw new RangeError("a cost cannot be negative");
    const params = settleParams(s);
    const rows = await this.#db.query(
      `WITH g AS (
         UPDATE generations SET ${SETTLED_COLUMNS}
         WHERE id = $1 AND status = 'running'
         RETURNING account_id, key_id, hold, cost
       ), a AS (
         UPDATE accounts SET balance = accounts.balance - g.cost, held = accounts.held - g.hold
         FROM g WHERE accounts.id = g.account_id
       ), l AS (
         INSERT INTO ledger (id, account_id, amount, kind, generation_id, created)
         SELECT $17, g.account_id, -g.cost, 'debit', $1, clock_timestamp() FROM g
         WHERE g.cost > 0
       ), k AS (
         UPDATE api_keys SET spent = api_keys.spent + g.cost
         FROM g WHERE api_keys.id = g.key_id AND g.cost > 0
       )
       SELECT 1 AS settled FROM g`,
      params,
    );
    if (rows.length === 1) return true;
    return await this.#settleLate(this.#db, s, params);
  }

  /**
   * A settlement that finds its generation `interrupted` instead of running: see SETTLE_LATE.
   * The sweeper's own (`interrupted`) settlements never replace one another.
   */
  async #settleLate(
    db: Pick<Db, "query">,
    s: Settlement,
    params = settleParams(s),
    lease: string | null = null,
  ): Promise<boolean> {
    if (s.status === "interrupted") return false;
    const rows = await db.query(SETTLE_LATE, [...params, lease]);
    return rows.length === 1;
  }

  async recordSettled(
    items: SettledGeneration[],
    lease?: string,
  ): Promise<string[]> {
    if (items.length === 0) return [];
    const rows = items.map(({ open: g, created, settlement: s }) => {
      if (s.cost < 0n) throw new RangeError("a cost cannot be negative");
      return {
        ...openColumns(g, s.model),
        status: s.status,
        hold: g.hold.toString(),
        cost: s.cost.toString(),
        cost_details: s.costDetails,
        provider: s.provider,
        upstream_model: storable(s.upstreamModel),
        finish_reason: storable(s.finishReason),
        ...tokenColumns(s.tokens),
        usage_source: s.usageSource,
        latency_ms: count(s.latencyMs),
        ttft_ms: count(s.ttftMs),
        error: storable(s.error),
        created: created.toISOString(),
        ledger_id: newId("led"),
      };
    });
    const json = JSON.stringify(rows);
    if (lease !== undefined) {
      const accounts = JSON.stringify([...new Set(rows.map((r) => r.account_id))]);
      return await this.#db.transaction(async (tx) => {
        await tx.query(LOCK_ACCOUNTS, [accounts]);
        const done = await tx.query<{ id: string }>(RECORD_SETTLED_LEASED, [json, lease]);
        return this.#withLate(tx, items, done, lease);
      });
    }
    const write = (sql: string, name: string) =>
      this.#db.trustedBatch
        ? this.#db.trustedBatch<{ id: string }>(name, sql, json)
        : this.#db.query<{ id: string }>(sql, [json]);
    let done: { id: string }[] | undefined;
    if (!items.some((i) => i.journaled)) {
      try {
        done = await write(RECORD_SETTLED_NEW, "record_settled_new");
      } catch (e) {
        if ((e as { code?: unknown })?.code !== UNIQUE_VIOLATION) throw e;
      }
    }
    done ??= await write(RECORD_SETTLED, "record_settled");
    return this.#withLate(this.#db, items, done, null);
  }

  /**
   * The batch's ids settled, and those of its rows the batch skipped that were interrupted
   * meanwhile, settled late (almost always none: a skipped row is one a retried batch had
   * already written).
   */
  async #withLate(
    db: Pick<Db, "query">,
    items: SettledGeneration[],
    rows: { id: string }[],
    lease: string | null,
  ): Promise<string[]> {
    const ids = rows.map((r) => r.id);
    if (ids.length === items.length) return ids;
    const written = new Set(ids);
    for (const { settlement } of items) {
      if (written.has(settlement.generationId)) continue;
      if (await this.#settleLate(db, settlement, undefined, lease)) {
        ids.push(settlement.generationId);
      }
    }
    return ids;
  }

  async journal(items: GenerationCheckpoint[], instance?: string): Promise<void> {
    if (items.length === 0) return;
    const rows = items.map(({ open: g, created, ...c }) => {
      if (c.cost < 0n) throw new RangeError("a cost cannot be negative");
      return {
        ...openColumns(g, c.model),
        cost: c.cost.toString(),
        cost_details: c.costDetails,
        provider: c.provider,
        upstream_model: storable(c.upstreamModel),
        ...tokenColumns(c.tokens),
        created: created.toISOString(),
      };
    });
    await this.#db.query(JOURNAL, [JSON.stringify(rows), instance ?? null]);
  }

  // --- leases ---

  async lease(
    instance: string,
    accountId: string,
    min: bigint,
    want: bigint,
    ttlMs: number,
  ): Promise<bigint> {
    if (min < 0n || want < min) throw new RangeError("a lease needs 0 ≤ min ≤ want");
    const rows = await this.#db.query<{ granted: string }>(
      `WITH cur AS (
         SELECT id, LEAST($4::bigint, balance - held, GREATEST($3::bigint, (balance - held) / 2))
           AS granted FROM accounts
         WHERE id = $2 FOR UPDATE
       ), a AS (
         UPDATE accounts SET held = accounts.held + cur.granted FROM cur
         WHERE accounts.id = cur.id AND cur.granted >= $3::bigint AND cur.granted > 0
         RETURNING cur.granted
       ), l AS (
         INSERT INTO leases (instance, account_id, amount, expires)
         SELECT $1, $2, a.granted, now() + $5::integer * interval '1 millisecond' FROM a
         ON CONFLICT (instance, account_id) DO UPDATE
           SET amount = leases.amount + EXCLUDED.amount, expires = EXCLUDED.expires
       )
       SELECT granted FROM a`,
      [instance, accountId, min, want, Math.round(ttlMs)],
    );
    return rows.length === 1 ? big(rows[0].granted) : 0n;
  }

  // Both lock the account rows first, as every other statement on leases does (a lease
  // row's account, then the lease): in the other order they could deadlock with those.
  async endLease(instance: string, accountId: string): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await tx.query(`SELECT id FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
      await tx.query(
        `WITH d AS (
           DELETE FROM leases WHERE instance = $1 AND account_id = $2 RETURNING amount
         )
         UPDATE accounts SET held = accounts.held - d.amount FROM d WHERE accounts.id = $2`,
        [instance, accountId],
      );
    });
  }

  async renewLeases(instance: string, ttlMs: number): Promise<string[]> {
    const rows = await this.#db.query<{ account_id: string }>(
      `UPDATE leases SET expires = now() + $2::integer * interval '1 millisecond'
       WHERE instance = $1 RETURNING account_id`,
      [instance, Math.round(ttlMs)],
    );
    return rows.map((r) => r.account_id);
  }

  async expiredLeaseInstances(): Promise<string[]> {
    const rows = await this.#db.query<{ instance: string }>(
      "SELECT DISTINCT instance FROM leases WHERE expires < now() ORDER BY instance",
    );
    return rows.map((r) => r.instance);
  }

  async expireLeases(instances?: string[]): Promise<number> {
    // now() is the transaction's start: both statements see the same leases as expired.
    const expired = instances === undefined
      ? "expires < now()"
      : "expires < now() AND instance = ANY($1::text[])";
    const args = instances === undefined ? [] : [instances];
    const rows = await this.#db.transaction(async (tx) => {
      await tx.query(
        `SELECT id FROM accounts
         WHERE id IN (SELECT account_id FROM leases WHERE ${expired})
         ORDER BY id FOR UPDATE`,
        args,
      );
      return tx.query<{ n: number }>(
        `WITH d AS (
           DELETE FROM leases WHERE ${expired} RETURNING account_id, amount
         ), a AS (
           UPDATE accounts SET held = accounts.held - t.total
           FROM (SELECT account_id, sum(amount) AS total FROM d GROUP BY account_id) t
           WHERE accounts.id = t.account_id
         )
         SELECT count(*)::integer AS n FROM d`,
        args,
      );
    });
    return rows[0]?.n ?? 0;
  }

  async leased(accountId: string): Promise<bigint> {
    const rows = await this.#db.query<{ total: string }>(
      `SELECT coalesce(sum(amount), 0)::text AS total FROM leases WHERE account_id = $1`,
      [accountId],
    );
    return big(rows[0].total);
  }

  // --- generations ---

  async getGeneration(accountId: string, id: string): Promise<Generation | null> {
    // Sent on, PostgreSQL refuses the parameter and a client's typo becomes a 500.
    if (unstorable(id)) return null;
    const [row] = await this.#db.query<Row>(
      `SELECT ${GENERATION_COLS} FROM generations WHERE id = $1 AND account_id = $2`,
      [id, accountId],
    );
    return row ? toGeneration(row) : null;
  }

  /** An unknown cursor yields an empty page. */
  async listGenerations(
    accountId: string,
    opts: { limit: number; before?: string },
  ): Promise<Generation[]> {
    const limit = Math.max(0, Math.floor(opts.limit));
    if (opts.before !== undefined && unstorable(opts.before)) return [];
    const rows = await this.#db.query<Row>(
      `SELECT ${GENERATION_COLS} FROM generations
       WHERE account_id = $1
         AND ($2::text IS NULL OR (created, seq) < (
           SELECT created, seq FROM generations WHERE id = $2 AND account_id = $1
         ))
       ORDER BY created DESC, seq DESC
       LIMIT $3`,
      [accountId, opts.before ?? null, limit],
    );
    return rows.map(toGeneration);
  }

  async staleGenerations(
    { olderThanMs, checkpointStaleMs = olderThanMs, instances = [] }: {
      olderThanMs: number;
      checkpointStaleMs?: number;
      instances?: string[];
    },
  ): Promise<Generation[]> {
    // Ages by the database's clock, which wrote `created` and `checkpoint_at`: an instance
    // whose own clock runs ahead must not find live rows old.
    const rows = await this.#db.query<Row>(
      `SELECT ${GENERATION_COLS} FROM generations
       WHERE status = 'running' AND (
         instance = ANY($3::text[]) OR CASE WHEN checkpoint_at IS NULL
           THEN created < clock_timestamp() - $1::integer * interval '1 millisecond'
           ELSE checkpoint_at < clock_timestamp() - $2::integer * interval '1 millisecond' END)
       ORDER BY created, seq`,
      [olderThanMs, checkpointStaleMs, instances],
    );
    return rows.map(toGeneration);
  }

  /** Oldest first, like a bank statement. */
  async listLedger(accountId: string, opts: { last?: number } = {}): Promise<LedgerEntry[]> {
    if (opts.last === undefined) {
      const rows = await this.#db.query<Row>(
        `SELECT ${LEDGER_COLS} FROM ledger WHERE account_id = $1 ORDER BY created, seq`,
        [accountId],
      );
      return rows.map(toLedger);
    }
    const rows = await this.#db.query<Row>(
      `SELECT ${LEDGER_COLS} FROM ledger WHERE account_id = $1
       ORDER BY created DESC, seq DESC LIMIT $2`,
      [accountId, opts.last],
    );
    return rows.map(toLedger).reverse();
  }

  async accountTotals(accountId: string): Promise<{ balance: bigint; debited: bigint } | null> {
    // One statement, one snapshot.
    const [row] = await this.#db.query<{ balance: string; debited: string }>(
      `SELECT a.balance::text AS balance, coalesce((
         SELECT -sum(l.amount) FROM ledger l WHERE l.account_id = a.id AND l.kind = 'debit'
       ), 0)::text AS debited
       FROM accounts a WHERE a.id = $1`,
      [accountId],
    );
    return row ? { balance: BigInt(row.balance), debited: BigInt(row.debited) } : null;
  }

  // --- blobs ---

  async putBlob(b: Blob): Promise<void> {
    await this.#db.query(
      `INSERT INTO blobs (${BLOB_COLS}) VALUES ($1, $2, $3, $4::bigint, $5, $6::timestamptz)`,
      [b.id, b.accountId, b.contentType, b.size, b.storageKey, b.created.toISOString()],
    );
  }

  async getBlob(id: string): Promise<Blob | null> {
    const [row] = await this.#db.query<Row>(`SELECT ${BLOB_COLS} FROM blobs WHERE id = $1`, [id]);
    if (!row) return null;
    return {
      id: row.id as string,
      accountId: row.account_id as string,
      contentType: row.content_type as string,
      size: Number(row.size),
      storageKey: row.storage_key as string,
      created: date(row.created),
    };
  }
}

// --- row mapping ---

function big(v: unknown): bigint {
  return BigInt(v as string | number | bigint);
}

function bigOrNull(v: unknown): bigint | null {
  return v === null || v === undefined ? null : big(v);
}

function date(v: unknown): Date {
  return v instanceof Date ? v : new Date(v as string);
}

function dateOrNull(v: unknown): Date | null {
  return v === null || v === undefined ? null : date(v);
}

function num(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

function unprefix(row: Row, prefix: string): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v;
  }
  return out;
}

function toAccount(r: Row): Account {
  return {
    id: r.id as string,
    name: r.name as string,
    balance: big(r.balance),
    held: big(r.held),
    defaultModel: (r.default_model as string | null) ?? null,
    rpmLimit: num(r.rpm_limit),
    created: date(r.created),
  };
}

function toKey(r: Row): ApiKeyRecord {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    prefix: r.prefix as string,
    label: (r.label as string | null) ?? null,
    revoked: r.revoked_at !== null && r.revoked_at !== undefined,
    rpmLimit: num(r.rpm_limit),
    spendLimit: bigOrNull(r.spend_limit),
    spent: big(r.spent),
    lastUsed: dateOrNull(r.last_used),
    created: date(r.created),
  };
}

function toLedger(r: Row): LedgerEntry {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    amount: big(r.amount),
    kind: r.kind as LedgerEntry["kind"],
    generationId: (r.generation_id as string | null) ?? null,
    idempotencyKey: (r.idempotency_key as string | null) ?? null,
    created: date(r.created),
  };
}

function toGeneration(r: Row): Generation {
  const tokens: Generation["tokens"] = {};
  const pairs = [
    ["input", r.input_tokens],
    ["output", r.output_tokens],
    ["cacheRead", r.cache_read_tokens],
    ["cacheWrite", r.cache_write_tokens],
    ["reasoning", r.reasoning_tokens],
  ] as const;
  for (const [name, v] of pairs) if (v !== null && v !== undefined) tokens[name] = Number(v);
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    keyId: r.key_id as string,
    endpoint: r.endpoint as string,
    model: r.model as string,
    provider: (r.provider as string | null) ?? null,
    upstreamModel: (r.upstream_model as string | null) ?? null,
    stream: r.stream as boolean,
    status: r.status as GenerationStatus,
    finishReason: (r.finish_reason as string | null) ?? null,
    tokens,
    cost: big(r.cost),
    costDetails: (r.cost_details as Record<string, number> | null) ?? {},
    usageSource: (r.usage_source as string | null) ?? null,
    hold: big(r.hold),
    latencyMs: num(r.latency_ms),
    ttftMs: num(r.ttft_ms),
    error: (r.error as string | null) ?? null,
    created: date(r.created),
    finished: dateOrNull(r.finished),
  };
}

/**
 * PostgreSQL text (and jsonb) cannot hold U+0000, nor a lone UTF-16 surrogate (the batch's
 * JSON carries it as a `\uD83D` escape that jsonb refuses); an error text quoting an upstream
 * could hold either, and so could one cut at its length bound in the middle of an emoji, or a
 * model name an upstream reports. Left in, the settlement (or a whole wallet batch, every
 * account's in it) would fail on every retry.
 */
function storable<T extends string | null>(text: T): T {
  return (text === null ? null : text.replaceAll("\u0000", "\uFFFD").toWellFormed()) as T;
}

/**
 * A count as an integer column holds it, rounded up as the meter reads usage. The meter already
 * bounds the token figures it reads; the embeddings and images readers take any non-negative
 * integer, and one past 2^31 - 1 failed the statement (a wallet batch with it, every account's
 * rows, on every retry). The cost was computed from the figure as reported.
 */
function count(n: number | null | undefined): number | null {
  if (n === null || n === undefined || !Number.isFinite(n)) return null;
  return Math.min(storedCountMax, Math.max(0, Math.ceil(n)));
}

/** No stored text holds U+0000 (see `storable`): an id or cursor with one names nothing. */
const unstorable = (text: string) => text.includes("\u0000");

/**
 * The store: accounts, keys, ledger, generations, blobs. One interface, one SQL
 * implementation over two drivers (embedded PGlite, PostgreSQL via postgres.js). All money
 * is bigint nano-roubles.
 */
export interface Account {
  id: string;
  name: string;
  balance: bigint;
  held: bigint;
  defaultModel: string | null;
  /** Requests per minute for the whole account; null = config default. */
  rpmLimit: number | null;
  created: Date;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  /** The visible prefix of the key (e.g. `tg_AbC1`), for operators to recognise it. */
  prefix: string;
  label: string | null;
  revoked: boolean;
  rpmLimit: number | null;
  /** Optional lifetime spend cap in nano-roubles; null = none. */
  spendLimit: bigint | null;
  spent: bigint;
  lastUsed: Date | null;
  created: Date;
}

/** A key as the auth stage sees it: the key row joined with its account's settings. */
export interface KeyAuth {
  key: ApiKeyRecord;
  account: Account;
}

export interface LedgerEntry {
  id: string;
  accountId: string;
  amount: bigint;
  kind: "topup" | "debit" | "refund" | "adjustment";
  generationId: string | null;
  idempotencyKey: string | null;
  created: Date;
}

export type GenerationStatus = "running" | "completed" | "failed" | "cancelled" | "interrupted";

export interface GenerationOpen {
  id: string;
  accountId: string;
  keyId: string;
  endpoint: string;
  model: string;
  stream: boolean;
  /** The hold reserved for this generation, nano-roubles. */
  hold: bigint;
}

export interface ReserveOptions {
  keyCapped?: boolean;
  keyInMemory?: bigint;
}

/** A generation settled in a wallet's memory, as its batch writes it. */
export interface SettledGeneration {
  open: GenerationOpen;
  /** When it was admitted (the row's `created`). */
  created: Date;
  settlement: Settlement;
  /**
   * A journal write carried it (attempted: one whose answer was lost may have landed), so the
   * store may hold its running row; otherwise the batch may take it for a new row.
   */
  journaled?: boolean;
}

/**
 * A generation in flight, as a wallet journals it (design §5, recovery): a `running` row with
 * hold 0 (its hold is the wallet's, in memory or in a lease) and what it has cost so far. A
 * process that dies leaves it behind; the sweeper settles it at that cost.
 */
export interface GenerationCheckpoint {
  open: GenerationOpen;
  created: Date;
  cost: bigint;
  costDetails: Record<string, number>;
  provider: string | null;
  upstreamModel: string | null;
  /** The catalogue model serving it, where not the one it opened with (see Settlement). */
  model?: string;
  tokens: Settlement["tokens"];
}

export interface Settlement {
  generationId: string;
  status: Exclude<GenerationStatus, "running">;
  /** The debit, nano-roubles, markup included (0 for a failed call with no output). */
  cost: bigint;
  costDetails: Record<string, number>;
  provider: string | null;
  upstreamModel: string | null;
  /**
   * The catalogue model that served, where not the one the generation opened with: a fallback
   * of chat's `models` list. The history names it, as the answer did and as the cost is priced.
   */
  model?: string;
  finishReason: string | null;
  tokens: {
    input?: number;
    output?: number;
    cacheRead?: number;
    cacheWrite?: number;
    reasoning?: number;
  };
  usageSource: "upstream" | "counted" | "none";
  latencyMs: number | null;
  ttftMs: number | null;
  error: string | null;
}

export interface Generation {
  id: string;
  accountId: string;
  keyId: string;
  endpoint: string;
  model: string;
  provider: string | null;
  upstreamModel: string | null;
  stream: boolean;
  status: GenerationStatus;
  finishReason: string | null;
  tokens: Settlement["tokens"];
  cost: bigint;
  costDetails: Record<string, number>;
  usageSource: string | null;
  hold: bigint;
  latencyMs: number | null;
  ttftMs: number | null;
  error: string | null;
  created: Date;
  finished: Date | null;
}

export interface Blob {
  id: string;
  accountId: string;
  contentType: string;
  size: number;
  storageKey: string;
  created: Date;
}

export interface Store {
  /** Applies pending migrations under an advisory lock; idempotent. */
  migrate(): Promise<void>;
  /** A trivial round trip, for readiness. */
  ping(): Promise<void>;
  close(): Promise<void>;

  createAccount(name: string, balance: bigint): Promise<Account>;
  getAccount(id: string): Promise<Account | null>;
  /** The oldest account with this name (names are not unique), e.g. the demo account. */
  findAccountByName(name: string): Promise<Account | null>;
  /**
   * The oldest account named `name`; when there is none, one made with `balance` and a key, in
   * one transaction that callers doing the same wait on (instances starting together on one
   * PostgreSQL make one demo account between them). `key` is the new key, null when found.
   */
  ensureAccountNamed(
    name: string,
    balance: bigint,
    key: { hash: string; prefix: string; label: string | null },
  ): Promise<{ account: Account; key: ApiKeyRecord | null }>;
  setDefaultModel(accountId: string, model: string | null): Promise<void>;
  setAccountRpm(accountId: string, rpm: number | null): Promise<void>;

  /** Stores only the SHA-256 hex of the key. */
  createKey(
    accountId: string,
    keyHash: string,
    prefix: string,
    label: string | null,
  ): Promise<ApiKeyRecord>;
  findKeyByHash(keyHash: string): Promise<KeyAuth | null>;
  listKeys(accountId: string): Promise<ApiKeyRecord[]>;
  /** Idempotent: an operator told "already revoked" knows the earlier revocation held. */
  revokeKey(keyId: string): Promise<"revoked" | "already revoked" | false>;
  setKeyLimits(
    keyId: string,
    limits: { rpm?: number | null; spend?: bigint | null },
  ): Promise<void>;
  touchKey(keyId: string, at: Date): Promise<void>;

  /**
   * Credits the account once per idempotency key: a repeat returns the first entry and
   * `applied: false`.
   */
  topup(
    accountId: string,
    amount: bigint,
    idempotencyKey: string,
  ): Promise<{ entry: LedgerEntry; applied: boolean }>;

  /**
   * Reserves `hold` on the balance if `balance - held >= hold` (and the key's spend cap
   * allows it) and opens the generation row, in one statement; for a key with a cap (or not
   * known to have none) after taking the account row's lock, so that reserves at once see
   * each other's holds. Returns false when funds are short. `keyInMemory`: what the caller's
   * wallet holds or has settled unwritten for the key outside the store (a lease's
   * generations, admitted before the key had its cap), counted against the cap too.
   */
  reserve(g: GenerationOpen, opts?: ReserveOptions): Promise<boolean>;
  /**
   * One transaction: debits the cost, releases the hold, writes the ledger entry (unique per
   * generation) and closes the generation row. A repeat is a no-op returning false. A row the
   * sweeper closed as `interrupted` (its instance stalled) takes the settlement's figures, and
   * the balance, key spend and debit entry move by the difference.
   */
  settle(s: Settlement): Promise<boolean>;

  /**
   * Records generations whose hold lived in a wallet's memory (src/billing: the embedded
   * wallet, or the leased one when `lease` names its instance, whose lease then pays the
   * costs): each row is inserted already settled, with its debit, ledger entry and key spend,
   * all in one statement for the whole batch. A journaled (running) row is settled in place;
   * a generation id already settled is skipped, so a retried batch applies once; an
   * `interrupted` one is settled late, as `settle` does. Returns the ids settled now.
   */
  recordSettled(items: SettledGeneration[], lease?: string): Promise<string[]>;
  /**
   * Journals generations in flight (one statement): a row not there yet is inserted
   * `running` with hold 0; a running one gets the new checkpoint (cost so far, time). A row
   * already settled is left alone. `recordSettled` later settles a journaled row in place.
   */
  journal(items: GenerationCheckpoint[], instance?: string): Promise<void>;

  /**
   * Leases (design §10; `lease` in recordSettled names the instance whose leases pay): an
   * instance takes a slice of an account's free balance (balance − held) into `held`, admits
   * requests against it from memory, and has their costs come out of the balance and the
   * lease together. `lease` takes up to `want`, and at least `min`, more into `instance`'s
   * lease and sets it to expire `ttlMs` from now; beyond `min`, never more than half the
   * free balance, so a busy instance's lease leaves the rest to its peers (taking all it
   * wanted, one instance's eight holds could leave the others nothing to admit against for
   * as long as it stayed busy). Returns the amount granted: 0n, with nothing changed, when not
   * even `min` is free.
   */
  lease(
    instance: string,
    accountId: string,
    min: bigint,
    want: bigint,
    ttlMs: number,
  ): Promise<bigint>;
  /** Ends `instance`'s lease on the account, giving back all it still holds. */
  endLease(instance: string, accountId: string): Promise<void>;
  /** Sets every lease of `instance` to expire `ttlMs` from now; the accounts it still leases. */
  renewLeases(instance: string, ttlMs: number): Promise<string[]>;
  /** The instances with a lease past its expiry (they stopped renewing: dead). */
  expiredLeaseInstances(): Promise<string[]>;
  /**
   * Gives back every lease past its expiry (its instance stopped) — only those of `instances`
   * when given; how many were ended.
   */
  expireLeases(instances?: string[]): Promise<number>;
  /** Σ leased on the account, by every instance. */
  leased(accountId: string): Promise<bigint>;

  getGeneration(accountId: string, id: string): Promise<Generation | null>;
  /** Newest first; `before` is the cursor (a generation id from the previous page). */
  listGenerations(
    accountId: string,
    opts: { limit: number; before?: string },
  ): Promise<Generation[]>;
  /**
   * Generations still `running` that a live process would have settled or checkpointed by
   * now (ages by the database's clock): journaled ones whose last checkpoint is older than
   * `checkpointStaleMs` or whose instance is one of `instances` (dead), others opened more
   * than `olderThanMs` ago.
   */
  staleGenerations(
    opts: { olderThanMs: number; checkpointStaleMs?: number; instances?: string[] },
  ): Promise<Generation[]>;
  /** Oldest first; with `last`, only the newest `last` entries (still oldest first). */
  listLedger(accountId: string, opts?: { last?: number }): Promise<LedgerEntry[]>;
  /**
   * The account's balance and what its ledger debits add up to (generations billed, positive),
   * read together: a settlement moves both at once, and two separate reads with one landing
   * between them would not add up to the account's credits. Null for an unknown account.
   */
  accountTotals(accountId: string): Promise<{ balance: bigint; debited: bigint } | null>;

  putBlob(b: Blob): Promise<void>;
  getBlob(id: string): Promise<Blob | null>;
}

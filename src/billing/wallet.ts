import type { GenerationOpen, Settlement, Store } from "../store/store.ts";
import type { Quota } from "./quota.ts";

/**
 * Settlements are gathered this long before they are written (or until a statement's worth
 * waits). A crash loses what was gathered and not yet written, which then bills nothing:
 * about this long's worth, plus a write in flight.
 */
const flushDelayMs = 25;
/**
 * Generations per statement. A statement costs ~1.3 ms however small, plus ~0.1 ms a row
 * (embedded PGlite), so rows are gathered, not written one by one; a backlog is written in
 * statements of at most this many, with a turn of the event loop between them.
 */
const rowsPerStatement = 64;
/** Between retries while the store refuses a batch. */
const retryMs = 1_000;
/**
 * Settlements not yet written past which new requests wait for the store (or, while it
 * refuses writes, are turned away): the store thread must keep up with the requests it
 * bills, and what a crash can lose stays bounded. ~8 statements, about 60 ms of writing.
 */
const backlogRows = 512;

/** Figures of one account (or key): as stored, plus what this process has not written yet. */
interface Figures {
  /** Account: balance − held in the store. Key: spent in the store. */
  stored: bigint;
  /** Costs settled here, not yet written. */
  pending: bigint;
  /** Holds of generations in flight. */
  held: bigint;
}

interface AccountState extends Figures {
  epoch: number;
  keys: Map<string, Figures & { spendLimit: bigint | null }>;
}

interface Queued {
  open: GenerationOpen;
  created: Date;
  settlement: Settlement;
  done: (applied: boolean) => void;
}

/**
 * The embedded wallet (design §10): holds in memory, settlements written in batches. Valid
 * only when this process is the store's one writer — embedded PGlite, which is never opened
 * twice; operator commands run in-process and call `invalidate`. It keeps the very figures
 * the store's reserve statement checks (balance − held, the key's spend against its cap), so
 * it admits exactly what the store would, for no statement per reserve and a share of one
 * per settlement.
 *
 * Store reads and batch writes go through one serial lane, so a re-read never sees a batch
 * half-applied. A generation reaches the store at its settlement: a process that dies
 * mid-stream leaves no running row and no held amount behind, and bills nothing for it.
 */
export class MemoryQuota implements Quota {
  #accounts = new Map<string, AccountState>();
  #open = new Map<string, { g: GenerationOpen; created: Date }>();
  #queue: Queued[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | undefined;
  #lane: Promise<unknown> = Promise.resolve();
  #epoch = 0;
  /** Rows of the batch being written (or retried). */
  #inFlight = 0;
  /** The last write was refused; cleared by the next that lands. */
  #failing = false;
  /** Woken after every write attempt, landed or refused. */
  #attempted: (() => void)[] = [];

  constructor(
    private readonly store: Store,
    private readonly backlog = backlogRows,
  ) {}

  async reserve(g: GenerationOpen): Promise<boolean> {
    while (this.#queue.length + this.#inFlight >= this.backlog) {
      if (this.#failing) throw new Error("the store is refusing settlements; backlog full");
      if (!this.#writing) this.#write();
      await new Promise<void>((r) => this.#attempted.push(r));
    }
    let a = this.#accounts.get(g.accountId);
    if (!a || a.epoch !== this.#epoch || !a.keys.has(g.keyId)) {
      a = await this.#load(g.accountId, g.keyId);
    }
    const k = a.keys.get(g.keyId);
    if (!k) return false;
    // No await from here on: the check and the hold are one step.
    if (a.stored - a.pending - a.held < g.hold) return false;
    if (k.spendLimit !== null && k.stored + k.pending + k.held + g.hold > k.spendLimit) {
      return false;
    }
    a.held += g.hold;
    k.held += g.hold;
    this.#open.set(g.id, { g, created: new Date() });
    return true;
  }

  settle(s: Settlement): Promise<boolean> {
    // Refused before any figure moves: a negative cost would also poison its batch forever.
    if (s.cost < 0n) return Promise.reject(new RangeError("a cost cannot be negative"));
    const open = this.#open.get(s.generationId);
    // Not held here (a row the sweeper found in the store): the store's own settlement.
    if (!open) return this.store.settle(s);
    this.#open.delete(s.generationId);
    const { g } = open;
    const a = this.#accounts.get(g.accountId)!;
    const k = a.keys.get(g.keyId)!;
    a.held -= g.hold;
    k.held -= g.hold;
    a.pending += s.cost;
    k.pending += s.cost;
    return new Promise((done) => {
      this.#queue.push({ open: g, created: open.created, settlement: s, done });
      this.#schedule(this.#queue.length >= rowsPerStatement ? 0 : flushDelayMs);
    });
  }

  invalidate(): void {
    this.#epoch++;
  }

  async flush(): Promise<void> {
    while (this.#queue.length > 0 || this.#writing) await this.#write();
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#lane.then(fn);
    this.#lane = p.catch(() => {});
    return p;
  }

  #wake() {
    for (const wake of this.#attempted.splice(0)) wake();
  }

  #schedule(ms: number) {
    if (this.#writing) return;
    if (this.#timer !== undefined) {
      if (ms > 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#write();
    }, ms);
  }

  #write(): Promise<void> {
    if (this.#writing) return this.#writing;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const batch = this.#queue.splice(0, rowsPerStatement);
    if (batch.length === 0) return Promise.resolve();
    this.#inFlight = batch.length;
    this.#writing = this.#serial(async () => {
      for (;;) {
        let inserted: Set<string>;
        try {
          inserted = new Set(await this.store.recordSettled(batch));
        } catch {
          // The store is down: the batch waits, its costs still counted as pending.
          this.#failing = true;
          this.#wake();
          await new Promise((r) => setTimeout(r, retryMs));
          continue;
        }
        this.#failing = false;
        this.#inFlight = 0;
        for (const q of batch) {
          const a = this.#accounts.get(q.open.accountId);
          const k = a?.keys.get(q.open.keyId);
          const cost = q.settlement.cost;
          const applied = inserted.has(q.open.id);
          if (a) {
            a.pending -= cost;
            if (applied) a.stored -= cost;
          }
          if (k) {
            k.pending -= cost;
            if (applied) k.stored += cost;
          }
          q.done(applied);
        }
        this.#wake();
        return;
      }
    }).finally(() => {
      this.#writing = undefined;
      // A full statement's worth is written at once. Fewer rows are gathered again: the
      // store runs on its own thread, so settlements keep arriving while a batch is written,
      // and writing those few at once would make a statement of a handful of rows each time
      // (at one request in flight, a third of a millisecond of the store's CPU per request).
      const n = this.#queue.length;
      if (n > 0) this.#schedule(n >= rowsPerStatement ? 0 : flushDelayMs);
    });
    return this.#writing;
  }

  /** Re-reads an account and its keys from the store, keeping what is in flight here. */
  #load(accountId: string, keyId: string): Promise<AccountState> {
    return this.#serial(async () => {
      const current = this.#accounts.get(accountId);
      // Another request may have loaded it while this one waited in the lane.
      if (current && current.epoch === this.#epoch && current.keys.has(keyId)) return current;
      // The epoch as of before the read: an invalidate that lands while the read is in flight
      // must leave these figures stale, not stamp them current.
      const epoch = this.#epoch;
      const [acc, keys] = await Promise.all([
        this.store.getAccount(accountId),
        this.store.listKeys(accountId),
      ]);
      const prev = this.#accounts.get(accountId);
      const state: AccountState = {
        epoch,
        stored: acc ? acc.balance - acc.held : 0n,
        pending: prev?.pending ?? 0n,
        held: prev?.held ?? 0n,
        keys: new Map(),
      };
      for (const key of keys) {
        const p = prev?.keys.get(key.id);
        state.keys.set(key.id, {
          spendLimit: key.spendLimit,
          stored: key.spent,
          pending: p?.pending ?? 0n,
          held: p?.held ?? 0n,
        });
      }
      this.#accounts.set(accountId, state);
      return state;
    });
  }
}

import type { GenerationOpen, ReserveOptions, Settlement, Store } from "../store/store.ts";
import { type Checkpoint, Journal } from "./journal.ts";

/**
 * Where holds live. `StoreQuota` keeps each hold in the store (one statement to reserve, one
 * to settle). `MemoryQuota` (wallet.ts) keeps them in memory and settles in batches — only
 * for the embedded store, which one process owns. `LeaseQuota` (lease.ts) holds against a
 * slice of the balance leased from the store and settles in batches — for any number of
 * instances sharing PostgreSQL. The pipeline sees only this interface (design §10).
 */
export interface Quota {
  /**
   * Reserves the hold and opens the generation; false when funds (or the key's cap) fall
   * short. `keyCapped`: the key has a spend cap (as of the caller's cached key record).
   */
  reserve(g: GenerationOpen, opts?: { keyCapped?: boolean }): Promise<boolean>;
  /** Settles once: a repeat is a no-op returning false. Resolves when durable. */
  settle(s: Settlement): Promise<boolean>;
  /**
   * The generation is open in this process (reserved, not settled): alive, whatever its row's
   * age or checkpoint says, so this process's sweeper leaves it alone.
   */
  holds(generationId: string): boolean;
  /** The leasing instance this wallet is (lease.ts), whose own leases its sweeper leaves alone. */
  readonly instance?: string;
  /**
   * What of the account's balance this wallet has leased and not committed (lease.ts): part of
   * the store's `held`, yet the account's own to spend here.
   */
  unusedLease?(accountId: string): bigint;
  /** Something outside changed balances or limits (an operator command): forget cached figures. */
  invalidate(): void;
  /**
   * Where an open generation's cost so far comes from (its meter), for wallets that journal
   * generations in flight (journal.ts); the others have nothing to do with it.
   */
  watch?(generationId: string, progress: () => Checkpoint): void;
  /**
   * What this process keeps for the account that the store does not show yet: holds of
   * generations in flight and costs settled but not written (the embedded wallet's).
   */
  inMemory?(accountId: string): { held: bigint; pending: bigint };
  /**
   * The store refuses this wallet's settlement batches (they wait in memory, retried): a crash
   * now loses more than a batch, so the instance is not ready.
   */
  readonly settlementsFailing?: boolean;
  /** Writes everything pending. */
  flush(): Promise<void>;
  /** Writes everything pending and gives back what the wallet took from the store. */
  close(): Promise<void>;
  /**
   * Other instances share the store and write their settlements in batches: what they
   * answered a moment ago may not be in the store yet.
   */
  readonly peersBatch: boolean;
}

export class StoreQuota implements Quota {
  readonly peersBatch = false;
  readonly #held: StoreHeld;
  constructor(private readonly store: Store) {
    this.#held = new StoreHeld(store);
  }
  reserve(g: GenerationOpen, opts?: { keyCapped?: boolean }) {
    return this.#held.reserve(g, opts);
  }
  settle(s: Settlement) {
    this.#held.settled(s.generationId);
    return this.store.settle(s);
  }
  holds(generationId: string) {
    return this.#held.has(generationId);
  }
  watch(generationId: string, progress: () => Checkpoint): void {
    this.#held.journal.watch(generationId, progress);
  }
  /** The journal's step, now (tests). */
  journalNow(now?: number): Promise<void> {
    return this.#held.journal.tick(now);
  }
  invalidate() {}
  flush() {
    return Promise.resolve();
  }
  close() {
    this.#held.journal.stop();
    return Promise.resolve();
  }
}

/**
 * Generations a quota holds in the store itself (a statement to reserve, one to settle) and
 * has not settled yet. They are journaled like a wallet's (journal.ts): their rows'
 * checkpoints tell every instance's sweeper they are alive however long they run (by age
 * alone, a peer would close a live stream and free its hold), and a dead process's are billed
 * at their last checkpoint.
 */
export class StoreHeld {
  readonly #open = new Map<string, { g: GenerationOpen; created: Date }>();
  readonly journal: Journal;

  constructor(private readonly store: Store, instance?: string) {
    this.journal = new Journal(store, () => this.#open.values(), (fn) => fn(), instance);
  }

  async reserve(g: GenerationOpen, opts?: ReserveOptions): Promise<boolean> {
    const ok = await this.store.reserve(g, opts);
    if (ok) {
      this.#open.set(g.id, { g, created: new Date() });
      this.journal.opened(g.id);
    }
    return ok;
  }

  /** The generation settles: no checkpoint is taken of it any more. */
  settled(generationId: string): void {
    if (this.#open.delete(generationId)) this.journal.closed(generationId);
  }

  has(generationId: string): boolean {
    return this.#open.has(generationId);
  }
}

import type { GenerationOpen, Settlement, Store } from "../store/store.ts";
import type { Checkpoint } from "./journal.ts";

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
  readonly #open = new OpenIds();
  constructor(private readonly store: Store) {}
  reserve(g: GenerationOpen, opts?: { keyCapped?: boolean }) {
    return this.#open.reserved(g.id, this.store.reserve(g, opts));
  }
  settle(s: Settlement) {
    this.#open.delete(s.generationId);
    return this.store.settle(s);
  }
  holds(generationId: string) {
    return this.#open.has(generationId);
  }
  invalidate() {}
  flush() {
    return Promise.resolve();
  }
  close() {
    return Promise.resolve();
  }
}

/** Ids of the generations a quota reserved in the store and has not settled yet. */
export class OpenIds extends Set<string> {
  async reserved(id: string, reserve: Promise<boolean>): Promise<boolean> {
    const ok = await reserve;
    if (ok) this.add(id);
    return ok;
  }
}

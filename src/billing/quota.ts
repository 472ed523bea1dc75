import type { GenerationOpen, Settlement, Store } from "../store/store.ts";

/**
 * Where holds live. `StoreQuota` keeps each hold in the store (one statement to reserve, one
 * to settle: correct across any number of instances sharing PostgreSQL). `MemoryQuota`
 * (wallet.ts) keeps them in memory and settles in batches — only for the embedded store,
 * which one process owns. The pipeline sees only this interface (design §10).
 */
export interface Quota {
  /** Reserves the hold and opens the generation; false when funds (or the key's cap) fall short. */
  reserve(g: GenerationOpen): Promise<boolean>;
  /** Settles once: a repeat is a no-op returning false. Resolves when durable. */
  settle(s: Settlement): Promise<boolean>;
  /** Something outside changed balances or limits (an operator command): forget cached figures. */
  invalidate(): void;
  /** Writes everything pending. */
  flush(): Promise<void>;
}

export class StoreQuota implements Quota {
  constructor(private readonly store: Store) {}
  reserve(g: GenerationOpen) {
    return this.store.reserve(g);
  }
  settle(s: Settlement) {
    return this.store.settle(s);
  }
  invalidate() {}
  flush() {
    return Promise.resolve();
  }
}

import type { GenerationOpen, Settlement, Store } from "../store/store.ts";
import type { Quota } from "./quota.ts";
import { backlogRows, type Settled, SettlementBatches, takeOpen } from "./batches.ts";
import { type Checkpoint, Journal } from "./journal.ts";

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

/**
 * The embedded wallet (design §10): holds in memory, settlements written in batches. Valid
 * only when this process is the store's one writer — embedded PGlite, which is never opened
 * twice; operator commands run in-process and call `invalidate`. It keeps the very figures
 * the store's reserve statement checks (balance − held, the key's spend against its cap), so
 * it admits exactly what the store would, for no statement per reserve and a share of one
 * per settlement.
 *
 * Store reads and batch writes go through one serial lane, so a re-read never sees a batch
 * half-applied. A generation reaches the store at its settlement, or, running longer, as a
 * journaled row with checkpoints of its cost (journal.ts): a process that dies leaves no held
 * amount behind, and the sweeper bills what its journaled generations had consumed.
 */
export class MemoryQuota implements Quota {
  /** The one writer of its store: nothing is pending anywhere else. */
  readonly peersBatch = false;
  #accounts = new Map<string, AccountState>();
  #open = new Map<string, { g: GenerationOpen; created: Date }>();
  #epoch = 0;
  readonly #batches: SettlementBatches;
  get settlementsFailing(): boolean {
    return this.#batches.failing;
  }
  readonly #journal: Journal;

  constructor(private readonly store: Store, backlog = backlogRows) {
    this.#batches = new SettlementBatches(
      (batch) => store.recordSettled(batch),
      (item) => this.#landed(item),
      backlog,
    );
    this.#journal = new Journal(store, () => this.#open.values(), (fn) => this.#batches.serial(fn));
  }

  inMemory(accountId: string): { held: bigint; pending: bigint } {
    let held = 0n;
    for (const { g } of this.#open.values()) if (g.accountId === accountId) held += g.hold;
    return { held, pending: this.#accounts.get(accountId)?.pending ?? 0n };
  }

  async reserve(g: GenerationOpen): Promise<boolean> {
    await this.#batches.room();
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
    this.#journal.opened(g.id);
    return true;
  }

  watch(generationId: string, progress: () => Checkpoint): void {
    this.#journal.watch(generationId, progress);
  }

  /** The journal's step, now (tests). */
  journalNow(now?: number): Promise<void> {
    return this.#journal.tick(now);
  }

  async settle(s: Settlement): Promise<boolean> {
    const open = takeOpen(this.#open, s);
    // Not held here (a row the sweeper found in the store): the store's own settlement.
    if (!open) return await this.store.settle(s);
    const journaled = this.#journal.closed(s.generationId);
    const { g } = open;
    const a = this.#accounts.get(g.accountId)!;
    const k = a.keys.get(g.keyId)!;
    a.held -= g.hold;
    k.held -= g.hold;
    a.pending += s.cost;
    k.pending += s.cost;
    return this.#batches.add({ open: g, created: open.created, settlement: s, journaled });
  }

  holds(generationId: string): boolean {
    return this.#open.has(generationId);
  }

  invalidate(): void {
    this.#epoch++;
  }

  flush(): Promise<void> {
    return this.#batches.flush();
  }

  close(): Promise<void> {
    this.#journal.stop();
    return this.flush();
  }

  #landed({ open, settlement }: Settled) {
    const a = this.#accounts.get(open.accountId);
    const k = a?.keys.get(open.keyId);
    const cost = settlement.cost;
    // Applied or not, the cost is in the store now: a row the batch found written already is
    // this wallet's own earlier write of it (a commit whose reply was lost, or a batch retried
    // after a late settlement of another of its rows failed), and no re-read of the account
    // can have seen it since, the batch holding the lane that re-reads go through.
    if (a) {
      a.pending -= cost;
      a.stored -= cost;
    }
    if (k) {
      k.pending -= cost;
      k.stored += cost;
    }
  }

  /** Re-reads an account and its keys from the store, keeping what is in flight here. */
  #load(accountId: string, keyId: string): Promise<AccountState> {
    return this.#batches.serial(async () => {
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

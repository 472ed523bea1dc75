import type { GenerationOpen, Settlement, Store } from "../store/store.ts";
import { newId } from "../lib/ids.ts";
import { type Quota, StoreHeld } from "./quota.ts";
import { backlogRows, type Settled, SettlementBatches, takeOpen } from "./batches.ts";
import { type Checkpoint, Journal } from "./journal.ts";

export interface LeaseTiming {
  /** How long a lease outlives its instance's last renewal before the sweeper gives it back. */
  ttlMs: number;
  renewEveryMs: number;
  /**
   * The instance trusts a lease this much less long than the store keeps it: its own clock
   * starts before the statement that set the expiry, and a late tick must not outrun it.
   */
  safetyMs: number;
  /** An account's lease unused this long, with nothing of it in flight, is given back. */
  idleMs: number;
  tickMs: number;
}

const defaultTiming: LeaseTiming = {
  ttlMs: 30_000,
  renewEveryMs: 10_000,
  safetyMs: 5_000,
  idleMs: 5_000,
  tickMs: 1_000,
};

/**
 * A lease is topped up to this many holds (at most the account's free balance) plus twice
 * what the account's generations in flight here hold, in the background when less than
 * `lowWaterHolds` holds, or than is in flight, remains free, so a steady stream of requests
 * rarely waits for a statement. Holds are worst cases (a whole output cap), costs mostly far
 * less, so a lease serves many more requests than this. Sized by what is in flight: at 32
 * concurrent requests a lease of 8 holds ran dry with every few settlements, and the requests
 * queued behind one top-up statement after another (4 800 req/s with the gateway's core 80 %
 * busy; 6 100 and 85 % with room for them). A lease is thus at most eight holds more than
 * three times what was in flight at its last top-up; it keeps that size while used and goes
 * back after `idleMs` unused.
 */
const holdsPerLease = 8n;
const lowWaterHolds = 2n;
/**
 * After a top-up that left the lease still below the mark that asks for one (the balance is
 * short: a statement per request otherwise), none in the background for this long.
 */
const shortBackoffMs = 1_000;
/** A lease never asks for more than this (a bigint column's range, with room to spare). */
const leaseAskMax = 2n ** 62n;

/** What a lease is topped up to for a hold of `hold`, with `holding` in flight. */
function leaseWanted(hold: bigint, holding: bigint): bigint {
  const want = holdsPerLease * hold + 2n * holding;
  return want < leaseAskMax ? want : leaseAskMax;
}

interface Lease {
  /** Leased and not committed to any hold in flight or cost not yet written. */
  free: bigint;
  /** Local time after which `free` is no longer trusted (the store may have ended it). */
  validUntil: number;
  /**
   * Bumped whenever `free` is dropped as untrusted: a hold taken before then returns nothing
   * to `free` at its settlement, since the lease it came from may be gone.
   */
  epoch: number;
  lastUsed: number;
  /** Generations of this account open here or settled and not yet written. */
  busy: number;
  /** What the generations of this account still open here hold. */
  holding: bigint;
  /** A top-up came back too short to help: no background one before this time. */
  shortUntil: number;
  topUp?: Promise<bigint>;
  ending?: Promise<void>;
}

/**
 * The clustered wallet (design §10): each instance leases a slice of an account's balance
 * from PostgreSQL — the lease is part of the account's `held`, so no other instance can
 * commit it — admits requests against it in memory, and writes their settlements in
 * batches that debit the balance and shrink the lease together. One statement per few
 * leases' worth of requests, one per batch of settlements, instead of two per request.
 *
 * An account can be refused while another instance still holds an unused part of its
 * balance: leases are bounded (a few holds each, more while many are in flight) and given
 * back after `idleMs` unused, or by
 * the sweeper `ttlMs` after their instance stopped renewing them. Keys with a spend cap
 * are held and settled in the store one by one, as `StoreQuota` does: their cap counts
 * every instance's holds. A process that dies loses its unwritten settlements (about
 * `flushDelayMs` of them, see batches.ts), which then bill nothing; generations it had open
 * longer are journaled (journal.ts) and billed by the sweeper at their last checkpoint.
 */
export class LeaseQuota implements Quota {
  readonly instance = newId("ins", 12);
  readonly peersBatch = true;
  #leases = new Map<string, Lease>();
  #open = new Map<string, { g: GenerationOpen; created: Date; epoch: number }>();
  /** Per key, costs of leased generations settled here and not yet written. */
  #keyUnwritten = new Map<string, bigint>();
  /**
   * Capped keys' generations, held in the store. Journaled as no instance's: their holds are
   * not in a lease, so the end of this instance's leases (a stall) must not let a peer sweep
   * them while they run; stale checkpoints tell when their process died.
   */
  readonly #inStore: StoreHeld;
  #timer: ReturnType<typeof setInterval> | undefined;
  #renewedAt = Date.now();
  #renewing = false;
  readonly #batches: SettlementBatches;
  get settlementsFailing(): boolean {
    return this.#batches.failing;
  }
  readonly #journal: Journal;

  readonly #t: LeaseTiming;

  constructor(
    private readonly store: Store,
    opts: { backlog?: number; timing?: Partial<LeaseTiming> } = {},
  ) {
    this.#t = { ...defaultTiming, ...opts.timing };
    this.#batches = new SettlementBatches(
      (batch) => store.recordSettled(batch, this.instance),
      (item) => this.#landed(item),
      opts.backlog ?? backlogRows,
    );
    this.#journal = new Journal(
      store,
      () => this.#open.values(),
      (fn) => this.#batches.serial(fn),
      this.instance,
    );
    this.#inStore = new StoreHeld(store);
  }

  watch(generationId: string, progress: () => Checkpoint): void {
    this.#journal.watch(generationId, progress);
    this.#inStore.journal.watch(generationId, progress);
  }

  /** The journals' step, now (tests). */
  async journalNow(now?: number): Promise<void> {
    await this.#journal.tick(now);
    await this.#inStore.journal.tick(now);
  }

  async reserve(g: GenerationOpen, opts: { keyCapped?: boolean } = {}): Promise<boolean> {
    // Not in #open: its settlement goes to the store too. What the key has on this wallet's
    // leases (admitted before it had a cap) is not in the store yet, and counts against it.
    if (opts.keyCapped) {
      return this.#inStore.reserve(g, { ...opts, keyInMemory: this.#keyInMemory(g.keyId) });
    }
    if (g.hold < 0n) throw new RangeError("a hold cannot be negative");
    await this.#batches.room();
    this.#startTicking();
    let toppedUp = false;
    for (;;) {
      let l = this.#leases.get(g.accountId);
      if (!l) {
        l = {
          free: 0n,
          validUntil: 0,
          epoch: 0,
          lastUsed: Date.now(),
          busy: 0,
          holding: 0n,
          shortUntil: 0,
        };
        this.#leases.set(g.accountId, l);
      }
      if (l.ending) {
        await l.ending;
        continue;
      }
      const now = Date.now();
      if (now >= l.validUntil) this.#distrust(l);
      // No await between the check and the hold: they are one step.
      if (l.free >= g.hold) {
        l.free -= g.hold;
        l.busy++;
        l.holding += g.hold;
        l.lastUsed = now;
        this.#open.set(g.id, { g, created: new Date(), epoch: l.epoch });
        this.#journal.opened(g.id);
        const low = lowWaterHolds * g.hold > l.holding ? lowWaterHolds * g.hold : l.holding;
        if (!l.topUp && l.free < low && now >= l.shortUntil) {
          this.#topUp(g.accountId, l, 0n, leaseWanted(g.hold, l.holding) - l.free, low)
            .catch(() => {});
        }
        return true;
      }
      if (l.topUp) {
        await l.topUp.catch(() => {});
        continue;
      }
      if (toppedUp) return false;
      toppedUp = true;
      const need = g.hold - l.free;
      const want = leaseWanted(g.hold, l.holding) - l.free;
      await this.#topUp(g.accountId, l, need, want > need ? want : need, lowWaterHolds * g.hold);
    }
  }

  async settle(s: Settlement): Promise<boolean> {
    const open = takeOpen(this.#open, s);
    // Not held here (a capped key's, or a row the sweeper found): the store's own settlement.
    if (!open) {
      this.#inStore.settled(s.generationId);
      return await this.store.settle(s);
    }
    const journaled = this.#journal.closed(s.generationId);
    const { g } = open;
    const l = this.#leases.get(g.accountId)!;
    l.holding -= g.hold;
    // What the hold did not use is free again; the cost stays committed until written. A hold
    // from a lease since dropped returns nothing, and its cost will still come out of the
    // lease row, which the lease taken since shares.
    if (open.epoch === l.epoch) l.free += g.hold - s.cost;
    else l.free -= s.cost;
    l.lastUsed = Date.now();
    this.#keyUnwritten.set(g.keyId, (this.#keyUnwritten.get(g.keyId) ?? 0n) + s.cost);
    return this.#batches.add({ open: g, created: open.created, settlement: s, journaled });
  }

  unusedLease(accountId: string): bigint {
    const l = this.#leases.get(accountId);
    return l && !l.ending && Date.now() < l.validUntil ? l.free : 0n;
  }

  holds(generationId: string): boolean {
    return this.#open.has(generationId) || this.#inStore.has(generationId);
  }

  invalidate(): void {
    // Nothing cached: a lease is taken from the balance as it stands in the store.
  }

  flush(): Promise<void> {
    return this.#batches.flush();
  }

  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#journal.stop();
    this.#inStore.journal.stop();
    await this.flush();
    await Promise.all([...this.#leases.values()].map((l) => l.topUp?.catch(() => {})));
    // Ends already under way are waited for; what did not end (the store refused) is tried
    // once more, and otherwise left to the sweeper once the lease expires, as is a lease
    // with generations still open (the gateway closes its wallet after they finished).
    for (let attempt = 0; attempt < 2; attempt++) {
      await Promise.all(
        [...this.#leases].filter(([, l]) => l.busy === 0).map(([accountId, l]) =>
          l.ending ?? this.#end(accountId, l)
        ),
      );
    }
  }

  /** The key's holds open on this wallet's leases and its costs settled here, not written. */
  #keyInMemory(keyId: string): bigint {
    let sum = this.#keyUnwritten.get(keyId) ?? 0n;
    for (const { g } of this.#open.values()) if (g.keyId === keyId) sum += g.hold;
    return sum;
  }

  #landed({ open, settlement }: Settled) {
    const unwritten = (this.#keyUnwritten.get(open.keyId) ?? 0n) - settlement.cost;
    if (unwritten > 0n) this.#keyUnwritten.set(open.keyId, unwritten);
    else this.#keyUnwritten.delete(open.keyId);
    // Applied or not: a leased generation already in the store can only be this wallet's own
    // earlier write of it (a commit whose reply was lost), which took its cost from the lease.
    this.#leases.get(open.accountId)!.busy--;
  }

  #distrust(l: Lease) {
    l.free = 0n;
    l.epoch++;
  }

  /**
   * Asks the store for `want` more (at least `min`). `low`: the free amount below which a
   * request asks for a top-up; a grant that leaves the lease below it (the store grants at most
   * half the free balance, so short of `want` is usual) pauses the background ones.
   */
  #topUp(
    accountId: string,
    l: Lease,
    min: bigint,
    want: bigint,
    low: bigint,
  ): Promise<bigint> {
    const started = Date.now();
    const p = this.store.lease(this.instance, accountId, min, want, this.#t.ttlMs).then(
      (granted) => {
        if (granted > 0n) {
          l.free += granted;
          l.validUntil = started + this.#t.ttlMs - this.#t.safetyMs;
        }
        if (granted < want && l.free < low) l.shortUntil = Date.now() + shortBackoffMs;
        return granted;
      },
    ).finally(() => {
      if (l.topUp === p) l.topUp = undefined;
    });
    l.topUp = p;
    return p;
  }

  /** Gives the whole lease back; through the batch lane, so no batch is paying from it. */
  #end(accountId: string, l: Lease): Promise<void> {
    // Dropped first: should the statement commit and its reply be lost, nothing may still be
    // admitted against money the store has given back.
    this.#distrust(l);
    l.ending = this.#batches.serial(() => this.store.endLease(this.instance, accountId)).then(
      () => {
        this.#leases.delete(accountId);
      },
      () => {
        l.ending = undefined; // the store is down: tried again next tick
      },
    );
    return l.ending;
  }

  #startTicking() {
    if (this.#timer !== undefined) return;
    const timer = setInterval(() => this.#tick(), this.#t.tickMs);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #tick() {
    const now = Date.now();
    for (const [accountId, l] of this.#leases) {
      if (l.busy === 0 && !l.topUp && !l.ending && now - l.lastUsed >= this.#t.idleMs) {
        this.#end(accountId, l);
      }
    }
    if (this.#leases.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    if (this.#renewing || now - this.#renewedAt < this.#t.renewEveryMs) return;
    this.#renewing = true;
    this.store.renewLeases(this.instance, this.#t.ttlMs).then((accounts) => {
      this.#renewedAt = now;
      const live = new Set(accounts);
      for (const [accountId, l] of this.#leases) {
        if (live.has(accountId)) {
          l.validUntil = Math.max(l.validUntil, now + this.#t.ttlMs - this.#t.safetyMs);
        } else if (!l.topUp) {
          // Ended by the sweeper (this instance stalled past the expiry): nothing is leased.
          this.#distrust(l);
        }
      }
    }, () => {}).finally(() => {
      this.#renewing = false;
    });
  }
}

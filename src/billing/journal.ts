import type { GenerationCheckpoint, GenerationOpen, Store } from "../store/store.ts";

/** What a generation in flight has cost so far: the meter's figure (Meter.checkpoint). */
export type Checkpoint = Omit<GenerationCheckpoint, "open" | "created">;

/**
 * A generation open this long is journaled: a running row in the store. Shorter ones (most
 * non-streaming calls on a fast upstream) never cost a statement of their own.
 */
export const journalAfterMs = 1_000;
/**
 * A journaled generation's checkpoint is renewed this often while it runs: a crash leaves at
 * most this much of a stream unbilled, for one row update per long generation this often.
 */
export const checkpointEveryMs = 2_000;
/**
 * A journaled row not checkpointed for this long belongs to a process that died: the sweeper
 * settles it at its last checkpoint. Many renewals' worth, so a slow store cannot make a live
 * generation look dead. (A leasing instance's rows are settled sooner, as soon as its leases
 * expire: before they go back, or the balance they hold for those rows would be spent twice.)
 */
export const checkpointStaleMs = 120_000;

/** The checkpoint of a generation whose upstream has not answered yet: nothing consumed. */
const NOTHING_YET: Checkpoint = {
  cost: 0n,
  costDetails: {},
  provider: null,
  upstreamModel: null,
  tokens: {},
};

interface Watched {
  progress?: () => Checkpoint;
  journaledAt?: number;
  /** A journal write carried it, landed or not: its running row may be in the store. */
  written?: boolean;
}

/**
 * The journal of the wallets that hold generations in memory (wallet.ts, lease.ts; design §5,
 * recovery). Those generations reach the store only when they settle, so a process that died
 * would leave nothing of the ones in flight: not billed, not in the history. So every
 * generation open past `journalAfterMs` gets a running row, and its cost so far (from the
 * meter, `watch`) is checkpointed every `checkpointEveryMs`; the sweeper settles the rows a
 * dead process left at their last checkpoint, and the wallet's own settlement settles a row
 * in place (`recordSettled`).
 *
 * The journal writes through `serial`, the batches' lane: a checkpoint taken before a
 * generation settled is written before that settlement's batch, and none is taken after.
 */
export class Journal {
  readonly #watched = new Map<string, Watched>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing = false;
  /** Stopped (the wallet closed): no step is scheduled again, a write in flight included. */
  #stopped = false;

  constructor(
    private readonly store: Store,
    /** The wallet's generations in flight. */
    private readonly open: () => Iterable<{ g: GenerationOpen; created: Date }>,
    private readonly serial: (fn: () => Promise<void>) => Promise<void>,
    /** The leasing instance whose leases hold these generations (none: the embedded wallet). */
    private readonly instance?: string,
  ) {}

  /** A generation was opened: journaling starts once it has run `journalAfterMs`. */
  opened(id: string): void {
    this.#watched.set(id, {});
    if (!this.#stopped) this.#timer ??= setTimeout(() => this.tick(), journalAfterMs);
  }

  /** Where the generation's cost so far comes from (the meter of its current attempt). */
  watch(id: string, progress: () => Checkpoint): void {
    const w = this.#watched.get(id);
    if (w) w.progress = progress;
  }

  /**
   * The generation settled in the wallet: no checkpoint is taken of it any more. True when a
   * journal write carried it (its running row may be in the store).
   */
  closed(id: string): boolean {
    const w = this.#watched.get(id);
    this.#watched.delete(id);
    return w?.written === true;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Takes the checkpoints due and writes them (exported for tests: the timer's step). */
  async tick(now = Date.now()): Promise<void> {
    clearTimeout(this.#timer); // a step taken early (tests) replaces the one scheduled
    this.#timer = undefined;
    const due: GenerationCheckpoint[] = [];
    const taken: Watched[] = [];
    if (!this.#writing) {
      for (const { g, created } of this.open()) {
        const w = this.#watched.get(g.id);
        if (!w || now - created.getTime() < journalAfterMs) continue;
        if (w.journaledAt !== undefined && now - w.journaledAt < checkpointEveryMs) continue;
        let c: Checkpoint;
        try {
          c = w.progress?.() ?? NOTHING_YET;
        } catch {
          continue; // a figure that cannot be computed now: the next checkpoint tries again
        }
        if (c.cost < 0n) continue;
        due.push({ open: g, created, ...c });
        taken.push(w);
      }
    }
    if (due.length > 0) {
      this.#writing = true;
      for (const w of taken) w.written = true;
      try {
        await this.serial(() => this.store.journal(due, this.instance));
        for (const w of taken) w.journaledAt = now;
      } catch {
        // The store is down: the next tick tries again.
      } finally {
        this.#writing = false;
      }
    }
    if (this.#watched.size > 0 && !this.#stopped) {
      this.#timer ??= setTimeout(() => this.tick(), journalAfterMs);
    }
  }
}

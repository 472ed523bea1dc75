import type { SettledGeneration as Settled, Settlement } from "../store/store.ts";
import { lane } from "../lib/lane.ts";

export type { Settled };

/**
 * Settlements are gathered this long before they are written (or until a statement's worth
 * waits). A crash loses what was gathered and not yet written, which then bills nothing:
 * about this long's worth, plus a write in flight.
 */
const flushDelayMs = 25;
/**
 * Generations per statement. On embedded PGlite a statement of 1 row costs ~0.9 ms, of 64
 * rows ~86 µs a row and of 256 ~50 µs a row (the store's thread shares the gateway's core when
 * it has only one), so rows are gathered, not written one by one; a backlog is written in
 * statements of at most this many, with a turn of the event loop between them.
 */
const rowsPerStatement = 256;
/** Between retries while the store refuses a batch. */
const retryMs = 1_000;
/**
 * Settlements not yet written past which new requests wait for the store (or, while it
 * refuses writes, are turned away): the store must keep up with the requests it bills, and
 * what a crash can lose stays bounded. 4 full statements, about 50 ms of writing.
 */
export const backlogRows = 1024;

/**
 * The wallet's record of the generation a settlement closes, taken out of `open`; undefined
 * when the wallet did not hold it (the store's own settlement applies then). A negative cost
 * is refused before any figure moves: it would also poison its batch forever.
 */
export function takeOpen<T>(open: Map<string, T>, s: Settlement): T | undefined {
  if (s.cost < 0n) throw new RangeError("a cost cannot be negative");
  const held = open.get(s.generationId);
  if (held !== undefined) open.delete(s.generationId);
  return held;
}

interface Queued {
  item: Settled;
  done: (applied: boolean) => void;
  /** Its statement committed (a retry after a later half failed leaves it out). */
  written?: boolean;
  /** Stripped to its figures after the store refused a value in it (see `#attempt`). */
  bare?: boolean;
}

/** PostgreSQL refused a value (SQLSTATE class 22, data exception; 23514, a check). */
function refusesValue(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("22") || code === "23514");
}

/** A settlement with only its figures: what the generation cost and how it ended. */
function bare(item: Settled): Settled {
  const s = item.settlement;
  return {
    ...item,
    settlement: {
      ...s,
      costDetails: {},
      upstreamModel: null,
      finishReason: null,
      tokens: {},
      latencyMs: null,
      ttftMs: null,
      error: s.error === null ? null : "(the error's text could not be stored)",
    },
  };
}

/**
 * The batch writer both in-memory wallets share (wallet.ts, lease.ts): settlements queue
 * here and are written a statement's worth at a time by `write`, retried while the store
 * refuses them; `landed` hears of each row once its statement commits (`applied` false for a
 * generation the store already had). Store reads the wallet needs consistent with the
 * batches go through `serial`, the same lane, so they never see a batch half-applied.
 */
export class SettlementBatches {
  #queue: Queued[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | undefined;
  readonly #lane = lane();
  /** Rows of the batch being written (or retried). */
  #inFlight = 0;
  /** The last write was refused; cleared by the next that lands. */
  #failing = false;
  /** Woken after every write attempt, landed or refused. */
  #attempted: (() => void)[] = [];

  constructor(
    private readonly write: (batch: Settled[]) => Promise<string[]>,
    private readonly landed: (item: Settled, applied: boolean) => void,
    private readonly backlog = backlogRows,
  ) {}

  /** The last write was refused and none has landed since. */
  get failing(): boolean {
    return this.#failing;
  }

  /** Waits while the backlog is full; throws while the store refuses writes and it stays full. */
  async room(): Promise<void> {
    while (this.#queue.length + this.#inFlight >= this.backlog) {
      if (this.#failing) throw new Error("the store is refusing settlements; backlog full");
      if (!this.#writing) this.#write();
      await new Promise<void>((r) => this.#attempted.push(r));
    }
  }

  /** Queues one settlement; resolves once written (true) or found already written (false). */
  add(item: Settled): Promise<boolean> {
    return new Promise((done) => {
      this.#queue.push({ item, done });
      this.#schedule(this.#queue.length >= rowsPerStatement ? 0 : flushDelayMs);
    });
  }

  async flush(): Promise<void> {
    while (this.#queue.length > 0 || this.#writing) await this.#write();
  }

  serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.#lane(fn);
  }

  /**
   * Writes `items` and lands them. A statement the store refuses for a value in it (PostgreSQL's
   * data-exception and check classes) is written again in halves, down to the one row at fault,
   * which is written once more without what it says besides its figures (texts, token counts):
   * one row the store cannot hold would otherwise stop every account's settlements, retried
   * for ever. Throws when the store refuses for any other reason (it is down): the rows not
   * written are retried.
   */
  async #attempt(items: Queued[]): Promise<void> {
    let ids: string[];
    try {
      ids = await this.write(items.map((q) => q.item));
    } catch (e) {
      if (!refusesValue(e)) throw e;
      if (items.length > 1) {
        const half = items.length >> 1;
        await this.#attempt(items.slice(0, half));
        await this.#attempt(items.slice(half));
        return;
      }
      const [q] = items;
      if (q.bare) throw e;
      q.bare = true;
      q.item = bare(q.item);
      ids = await this.write([q.item]);
    }
    const inserted = new Set(ids);
    for (const q of items) {
      const applied = inserted.has(q.item.open.id);
      q.written = true;
      this.landed(q.item, applied);
      q.done(applied);
    }
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
    this.#writing = this.serial(async () => {
      let left = batch;
      for (;;) {
        try {
          await this.#attempt(left);
        } catch {
          // The store is down: the rows not written wait, their costs still counted as pending.
          left = left.filter((q) => !q.written);
          this.#inFlight = left.length;
          this.#failing = true;
          this.#wake();
          await new Promise((r) => setTimeout(r, retryMs));
          continue;
        }
        this.#failing = false;
        this.#inFlight = 0;
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
}

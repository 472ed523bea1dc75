/**
 * Holds the promises of work that runs off the client's path (settlements, key touches), so
 * that shutdown and tests can wait until every one has landed.
 */
export class Tracker {
  #pending = new Set<Promise<unknown>>();
  /** The settlements among them (see `landed`). */
  #settling = new Set<Promise<unknown>>();

  track<T>(p: Promise<T>): Promise<T> {
    return held(this.#pending, p);
  }

  /** A settlement: tracked, and waited for by `landed`. */
  trackSettlement<T>(p: Promise<T>): Promise<T> {
    return this.track(held(this.#settling, p));
  }

  get size(): number {
    return this.#pending.size;
  }

  /**
   * Resolves when the settlements tracked now have landed, or after `maxMs`: a reading that
   * must count the calls just answered waits for their settlements, not for ones begun
   * meanwhile (under steady traffic `idle` might never resolve), nor for other work (an
   * upstream drained after its client left), nor for long on a store that is down.
   */
  async landed(maxMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([...this.#settling]),
      new Promise((r) => timer = setTimeout(r, maxMs)),
    ]);
    clearTimeout(timer);
  }

  /** Resolves when everything tracked so far, and anything it started, has settled. */
  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }
}

/** `p`, kept in `set` until it settles. */
function held<T>(set: Set<Promise<unknown>>, p: Promise<T>): Promise<T> {
  set.add(p);
  const done = () => set.delete(p);
  p.then(done, done);
  return p;
}

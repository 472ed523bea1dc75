/**
 * Requests-per-minute limits per key and per account. The in-process limiter is the default;
 * with REDIS_URL the Redis one shares counts across instances (redis.ts) and falls back to
 * this one while Redis is unreachable.
 */
export interface LimitCheck {
  /** Bucket names with their per-minute limits; a limit of 0 means unlimited. */
  buckets: { name: string; rpm: number }[];
}

export interface Limiter {
  /** Takes one request from every bucket; returns seconds to wait when any is exhausted. */
  take(check: LimitCheck): Promise<{ ok: true } | { ok: false; retryAfter: number }>;
  close(): Promise<void>;
}

/**
 * A fixed one-minute window per bucket. A sliding window would be smoother at the window
 * edge, but the fixed window gives an exact `Retry-After` and one counter per bucket.
 */
export class MemoryLimiter implements Limiter {
  #windows = new Map<string, { start: number; count: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  take(check: LimitCheck) {
    const now = this.now();
    const windowStart = now - (now % 60_000);
    const touched: { start: number; count: number }[] = [];
    for (const { name, rpm } of check.buckets) {
      if (rpm <= 0) continue;
      let w = this.#windows.get(name);
      if (!w || w.start !== windowStart) {
        w = { start: windowStart, count: 0 };
        this.#windows.set(name, w);
      }
      if (w.count >= rpm) {
        for (const t of touched) t.count--; // all-or-nothing across buckets
        return Promise.resolve({
          ok: false as const,
          retryAfter: (windowStart + 60_000 - now) / 1000,
        });
      }
      w.count++;
      touched.push(w);
    }
    if (this.#windows.size > 100_000) this.#evict(windowStart);
    return Promise.resolve({ ok: true as const });
  }

  #evict(windowStart: number) {
    for (const [k, w] of this.#windows) if (w.start !== windowStart) this.#windows.delete(k);
  }

  close() {
    return Promise.resolve();
  }
}

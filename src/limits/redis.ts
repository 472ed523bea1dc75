import { createClient } from "redis";
import type { Logger } from "../lib/log.ts";
import { describeError } from "../lib/describe_error.ts";
import { type LimitCheck, type Limiter, MemoryLimiter } from "./limiter.ts";

/**
 * All buckets of a request in one atomic round trip: each fixed one-minute window counter is
 * incremented; if any goes over its limit, the increments are undone and 1 is returned (-1
 * when all fit). Correct across any number of gateway instances.
 */
const SCRIPT = `
local n = #KEYS
for i = 1, n do
  local c = redis.call('INCR', KEYS[i])
  if c == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[n + 1]) end
  if c > tonumber(ARGV[i]) then
    for j = 1, i do redis.call('DECR', KEYS[j]) end
    return 1
  end
end
return -1
`;

/** A limiter command that takes longer than this is treated as Redis being down. */
const commandTimeoutMs = 250;
/**
 * After a command failed, Redis is left alone this long: one that stalls (a partition, a
 * frozen host) keeps its connection open, and every request would wait out the timeout.
 */
const pauseAfterFailureMs = 2_000;
const windowMs = 60_000;

/**
 * The Redis limiter. While Redis is unreachable it falls back to the per-instance limiter
 * (limits still hold per instance, and no request fails because of Redis), logs the switch
 * once, and goes back to Redis as soon as a command succeeds again.
 */
export class RedisLimiter implements Limiter {
  readonly #fallback = new MemoryLimiter();
  #degraded = false;
  #pausedUntil = 0;
  readonly #client;
  /** host:port, never the URL: it may carry a password. */
  readonly #at: string;

  private constructor(url: string, private readonly log: Logger) {
    this.#at = new URL(url).host;
    this.#client = createClient({
      url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 1_000,
        reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2_000),
      },
    });
    // Without a listener the client's errors would crash the process.
    this.#client.on("error", (e) => this.#degrade(`redis error: ${describeError(e)}`));
  }

  /** Where Redis is, while it does not answer (limits are then this instance's alone). */
  get unreachable(): string | undefined {
    return this.#degraded ? this.#at : undefined;
  }

  static async connect(url: string, log: Logger): Promise<RedisLimiter> {
    const l = new RedisLimiter(url, log);
    try {
      await withTimeout(l.#client.connect(), 2_000);
    } catch (e) {
      l.#degrade(`redis unreachable at start: ${describeError(e)}`);
    }
    return l;
  }

  async take(check: LimitCheck): Promise<{ ok: true } | { ok: false; retryAfter: number }> {
    const active = check.buckets.filter((b) => b.rpm > 0);
    if (active.length === 0) return { ok: true };
    if (!this.#client.isReady) {
      this.#degrade("redis not connected");
      return this.#fallback.take(check);
    }
    // The monotonic clock: the wall clock set back (NTP, a VM resumed) would stretch the pause.
    if (performance.now() < this.#pausedUntil) return this.#fallback.take(check);
    const now = Date.now();
    const window = Math.floor(now / windowMs);
    try {
      const refused = Number(
        await withTimeout(
          this.#client.eval(SCRIPT, {
            keys: active.map((b) => `tg:rl:${b.name}:${window}`),
            arguments: [...active.map((b) => String(b.rpm)), String(windowMs + 1_000)],
          }),
          commandTimeoutMs,
        ),
      );
      if (this.#degraded) {
        this.#degraded = false;
        this.log.log("info", "rate limiter back on redis");
      }
      // The wait is until this clock minute ends, when the next window's keys start afresh
      // (a key itself outlives its window by a second: its life says nothing of the wait).
      return refused < 0
        ? { ok: true }
        : { ok: false, retryAfter: ((window + 1) * windowMs - now) / 1000 };
    } catch (e) {
      this.#pausedUntil = performance.now() + pauseAfterFailureMs;
      this.#degrade(`redis command failed: ${describeError(e)}`);
      return this.#fallback.take(check);
    }
  }

  #degrade(reason: string) {
    if (this.#degraded) return;
    this.#degraded = true;
    this.log.log("warn", "rate limiter falling back to per-instance limits", {
      reason,
      redis: this.#at,
    });
  }

  async close(): Promise<void> {
    try {
      if (this.#client.isOpen) await this.#client.close();
    } catch { /* already gone */ }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timeout")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

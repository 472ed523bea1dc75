import assert from "node:assert/strict";
import { RedisLimiter } from "./redis.ts";
import { createLogger } from "../lib/log.ts";
import { roomInWindow, waitFor } from "../../tests/helpers/time.ts";
import { RedisServer } from "../../tests/helpers/faults.ts";

const url = Deno.env.get("REDIS_URL");
const quiet = createLogger("error", () => {});

function bucket(rpm: number) {
  return { buckets: [{ name: `test:${crypto.randomUUID()}`, rpm }] };
}

Deno.test({
  name: "redis limiter: two instances share one per-minute budget",
  ignore: !url,
  async fn() {
    const a = await RedisLimiter.connect(url!, quiet);
    const b = await RedisLimiter.connect(url!, quiet);
    try {
      // All ten in one clock minute: across a boundary the next window admits five more.
      await roomInWindow(5_000);
      const check = bucket(5);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).take(check)),
      );
      const now = Date.now();
      assert.equal(results.filter((r) => r.ok).length, 5);
      const refused = results.find((r) => !r.ok) as { ok: false; retryAfter: number };
      // The wait is what is left of this clock minute, not the counter key's whole life.
      const left = (60_000 - (now % 60_000)) / 1000;
      assert.ok(
        refused.retryAfter > 0 && refused.retryAfter <= left + 1,
        `retryAfter ${refused.retryAfter} s with ${left} s left of the window`,
      );
    } finally {
      await a.close();
      await b.close();
    }
  },
});

Deno.test({
  name: "redis limiter: a refused request takes nothing from the other buckets",
  ignore: !url,
  async fn() {
    const l = await RedisLimiter.connect(url!, quiet);
    try {
      const wide = { name: `test:${crypto.randomUUID()}`, rpm: 100 };
      const narrow = { name: `test:${crypto.randomUUID()}`, rpm: 1 };
      // The 102 requests in one clock minute: a new window would admit them afresh.
      await roomInWindow(10_000);
      assert.equal((await l.take({ buckets: [wide, narrow] })).ok, true);
      assert.equal((await l.take({ buckets: [wide, narrow] })).ok, false);
      // Only one request was counted on the wide bucket: 99 more fit.
      let ok = 0;
      for (let i = 0; i < 100; i++) if ((await l.take({ buckets: [wide] })).ok) ok++;
      assert.equal(ok, 99);
    } finally {
      await l.close();
    }
  },
});

Deno.test("redis limiter: unreachable redis falls back to per-instance limits, never throws, says why", async () => {
  const lines: string[] = [];
  const l = await RedisLimiter.connect(
    "redis://127.0.0.1:1",
    createLogger("warn", (s) => lines.push(s)),
  );
  try {
    const check = bucket(3);
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await l.take(check));
    assert.deepEqual(results.map((r) => r.ok), [true, true, true, false, false]);
    assert.ok(lines.some((s) => s.includes("falling back")));
    assert.equal(lines.filter((s) => s.includes("falling back")).length, 1, "logged once");
    // An operator reads why (refused, DNS, auth) and where, not only that it failed.
    const line = JSON.parse(lines.find((s) => s.includes("falling back"))!);
    assert.match(line.reason, /ECONNREFUSED|refused/i, line.reason);
    assert.equal(line.redis, "127.0.0.1:1");
    // What the start-up line reads to say limits are in memory, not in Redis.
    assert.equal(l.unreachable, "127.0.0.1:1");
  } finally {
    await l.close();
  }
});

const noRedisServer = await RedisServer.unavailable();

Deno.test({
  name: "redis limiter: a Redis that stops answering costs one command timeout, not one a request",
  ignore: noRedisServer !== undefined,
  async fn() {
    const redis = await RedisServer.create();
    const l = await RedisLimiter.connect(redis.url, quiet);
    try {
      const check = bucket(1_000);
      assert.equal((await l.take(check)).ok, true);
      assert.equal(l.unreachable, undefined);
      redis.freeze();
      // The first request waits out the command timeout (250 ms) and falls back; the next
      // ones, for a while, go to the per-instance limiter at once: 20 waits would be 5 s.
      assert.equal((await l.take(check)).ok, true);
      assert.notEqual(l.unreachable, undefined);
      const t0 = performance.now();
      for (let i = 0; i < 20; i++) assert.equal((await l.take(check)).ok, true);
      const ms = performance.now() - t0;
      assert.ok(ms < 1_500, `20 requests while Redis is frozen took ${ms.toFixed(0)} ms`);
      // Back on Redis once it answers again.
      redis.thaw();
      await waitFor("the limiter back on Redis", async () => {
        await l.take(check);
        return l.unreachable === undefined ? true : undefined;
      }, 15_000);
    } finally {
      redis.thaw();
      await l.close();
      await redis.kill();
    }
  },
});

Deno.test({
  name: "redis limiter: the wall clock set back after a failure does not keep it off Redis",
  ignore: noRedisServer !== undefined,
  async fn() {
    const redis = await RedisServer.create();
    const l = await RedisLimiter.connect(redis.url, quiet);
    const wallClock = Date.now;
    try {
      const check = bucket(1_000);
      redis.freeze();
      assert.equal((await l.take(check)).ok, true);
      assert.notEqual(l.unreachable, undefined);
      redis.thaw();
      // NTP steps the clock back an hour: the pause after the failure is still 2 s, not 2 s
      // and an hour of per-instance limits.
      const stepped = wallClock() - 3_600_000;
      const at = wallClock();
      Date.now = () => stepped + (wallClock() - at);
      await waitFor("the limiter back on Redis", async () => {
        await l.take(check);
        return l.unreachable === undefined ? true : undefined;
      }, 10_000);
    } finally {
      Date.now = wallClock;
      redis.thaw();
      await l.close();
      await redis.kill();
    }
  },
});

/** The in-process limiter: fixed one-minute windows per bucket, all-or-nothing across buckets. */
import assert from "node:assert/strict";
import { MemoryLimiter } from "./limiter.ts";

/** A clock the test moves by hand, starting a little into a minute window. */
function clock(start = 1_700_000_040_000 + 5_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

const one = (name: string, rpm: number) => ({ buckets: [{ name, rpm }] });

Deno.test("limiter: rpm is respected within one window", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  for (let i = 0; i < 5; i++) assert.deepEqual(await l.take(one("k", 5)), { ok: true }, `#${i}`);
  const r = await l.take(one("k", 5));
  assert.equal(r.ok, false);
  await l.close();
});

Deno.test("limiter: retryAfter is the rest of the window, in seconds", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  const windowEnd = c.now() - (c.now() % 60_000) + 60_000;
  await l.take(one("k", 1));
  c.advance(10_000);
  const r = await l.take(one("k", 1));
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.ok(r.retryAfter > 0, `retryAfter ${r.retryAfter} > 0`);
  assert.ok(r.retryAfter <= 60, `retryAfter ${r.retryAfter} ≤ 60`);
  assert.equal(r.retryAfter, (windowEnd - c.now()) / 1000);
  // Waiting that long is enough.
  c.advance(Math.ceil(r.retryAfter * 1000));
  assert.deepEqual(await l.take(one("k", 1)), { ok: true });
});

Deno.test("limiter: a new window starts fresh", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  for (let i = 0; i < 3; i++) await l.take(one("k", 3));
  assert.equal((await l.take(one("k", 3))).ok, false);
  c.advance(60_000);
  for (let i = 0; i < 3; i++) assert.equal((await l.take(one("k", 3))).ok, true);
  assert.equal((await l.take(one("k", 3))).ok, false);
});

Deno.test("limiter: buckets are independent", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  await l.take(one("a", 1));
  assert.equal((await l.take(one("a", 1))).ok, false);
  assert.equal((await l.take(one("b", 1))).ok, true);
});

Deno.test("limiter: rpm 0 means unlimited", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  for (let i = 0; i < 1000; i++) assert.equal((await l.take(one("k", 0))).ok, true);
});

Deno.test("limiter: all-or-nothing across buckets (a refused request costs no bucket)", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  // The account bucket allows 2; the key bucket allows 10.
  const check = { buckets: [{ name: "key", rpm: 10 }, { name: "acct", rpm: 2 }] };
  assert.equal((await l.take(check)).ok, true);
  assert.equal((await l.take(check)).ok, true);
  for (let i = 0; i < 20; i++) assert.equal((await l.take(check)).ok, false);
  // Refusals did not use up the key bucket: 8 left of 10.
  for (let i = 0; i < 8; i++) {
    assert.equal((await l.take(one("key", 10))).ok, true, `key #${i}`);
  }
  assert.equal((await l.take(one("key", 10))).ok, false);
});

Deno.test("limiter: a full first bucket leaves the later ones untouched", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  await l.take(one("key", 1));
  const check = { buckets: [{ name: "key", rpm: 1 }, { name: "acct", rpm: 1 }] };
  assert.equal((await l.take(check)).ok, false);
  assert.equal((await l.take(one("acct", 1))).ok, true, "acct bucket was not charged");
});

Deno.test("limiter: two keys of one account share the account bucket", async () => {
  const c = clock();
  const l = new MemoryLimiter(c.now);
  const k1 = { buckets: [{ name: "k:1", rpm: 5 }, { name: "a:1", rpm: 3 }] };
  const k2 = { buckets: [{ name: "k:2", rpm: 5 }, { name: "a:1", rpm: 3 }] };
  assert.equal((await l.take(k1)).ok, true);
  assert.equal((await l.take(k2)).ok, true);
  assert.equal((await l.take(k1)).ok, true);
  assert.equal((await l.take(k2)).ok, false);
  assert.equal((await l.take(k1)).ok, false);
});

Deno.test("limiter: the default clock works", async () => {
  const l = new MemoryLimiter();
  assert.equal((await l.take(one("k", 1))).ok, true);
  const r = await l.take(one("k", 1));
  assert.equal(r.ok, false);
  if (!r.ok) assert.ok(r.retryAfter > 0 && r.retryAfter <= 60);
  await l.close();
});

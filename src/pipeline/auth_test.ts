/** Auth: header parsing, key shape, the key cache and revocation. */
import assert from "node:assert/strict";
import { authenticate, extractKey, KeyCache } from "./auth.ts";
import { GatewayError } from "../http/gateway_error.ts";
import { generateKey, hashKey } from "../store/keys.ts";
import { Tracker } from "../lib/tracker.ts";
import { keyCacheEntriesMax, keyTouchIntervalMs } from "../lib/bounds.ts";
import type { Account, ApiKeyRecord, KeyAuth, Store } from "../store/store.ts";

const KEY = "tg_" + "A1b2C3d4E5".repeat(4) + "xyz"; // 43 base62 chars, like a real key
const OTHER = "tg_" + "Z9y8X7w6V5".repeat(4) + "abc";

function rejects401(headers: HeadersInit, why: RegExp | undefined = undefined): GatewayError {
  try {
    extractKey(new Headers(headers));
  } catch (e) {
    assert.ok(e instanceof GatewayError, `expected a GatewayError, got ${e}`);
    assert.equal(e.status, 401);
    if (why) assert.match(e.message, why);
    return e;
  }
  assert.fail(`expected ${JSON.stringify(headers)} to be refused`);
}

Deno.test("auth: Authorization: Bearer <key>", () => {
  assert.equal(extractKey(new Headers({ authorization: `Bearer ${KEY}` })), KEY);
  assert.equal(extractKey(new Headers({ authorization: `bearer ${KEY}` })), KEY);
  assert.equal(extractKey(new Headers({ authorization: `Bearer   ${KEY}  ` })), KEY);
});

Deno.test("auth: x-api-key alone (the vendor SDK's header)", () => {
  assert.equal(extractKey(new Headers({ "x-api-key": KEY })), KEY);
});

Deno.test("auth: the same key in both headers is fine", () => {
  assert.equal(
    extractKey(new Headers({ authorization: `Bearer ${KEY}`, "x-api-key": KEY })),
    KEY,
  );
});

Deno.test("auth: two different keys in two headers → 401", () => {
  rejects401({ authorization: `Bearer ${KEY}`, "x-api-key": OTHER }, /two different/);
});

Deno.test("auth: missing key → 401", () => {
  rejects401({}, /missing/);
  rejects401({ "x-api-key": "" });
  rejects401({ "x-api-key": "   " });
});

Deno.test("auth: malformed Authorization → 401", () => {
  for (
    const value of [
      KEY, // no scheme
      `Basic ${btoa("user:" + KEY)}`,
      "Bearer",
      "Bearer ",
      `Bearer ${KEY} extra`,
      `Token ${KEY}`,
      `Bearer${KEY}`,
    ]
  ) {
    rejects401({ authorization: value });
  }
});

Deno.test("auth: a malformed Authorization is not rescued by a good x-api-key", () => {
  rejects401({ authorization: "Basic abc", "x-api-key": KEY });
});

Deno.test("auth: key shape is checked before any lookup", () => {
  for (
    const key of [
      "tg_short", // too short
      "tg-" + "a".repeat(43), // no underscore
      "TG_" + "a".repeat(43), // prefix must be lowercase
      "tg_" + "a".repeat(42) + "!", // not base62
      "tg_" + "a".repeat(300), // far too long
      "_" + "a".repeat(43), // no prefix
      "sk-proj-" + "a".repeat(40), // someone else's key
    ]
  ) {
    rejects401({ authorization: `Bearer ${key}` }, /invalid API key/);
  }
});

Deno.test("auth: a generated key has the accepted shape", async () => {
  const k = await generateKey("tg");
  assert.match(k.key, /^tg_[A-Za-z0-9]{43}$/);
  assert.equal(extractKey(new Headers({ authorization: `Bearer ${k.key}` })), k.key);
  assert.ok(k.key.startsWith(k.display));
  assert.equal(k.hash, await hashKey(k.key));
});

// --- authenticate against a store stub -------------------------------------------------

function fakeStore(entries: Map<string, KeyAuth>) {
  let lookups = 0;
  let touches = 0;
  let down = false;
  const store = {
    findKeyByHash(hash: string) {
      lookups++;
      if (down) return Promise.reject(new Error("store down"));
      const e = entries.get(hash);
      return Promise.resolve(e ? structuredClone(e) : null);
    },
    touchKey() {
      touches++;
      return Promise.resolve();
    },
  } as unknown as Store;
  return {
    store,
    get lookups() {
      return lookups;
    },
    get touches() {
      return touches;
    },
    setDown(v: boolean) {
      down = v;
    },
  };
}

function keyAuth(revoked = false): KeyAuth {
  const account: Account = {
    id: "acc_1",
    name: "t",
    balance: 0n,
    held: 0n,
    defaultModel: "openai/gpt-4o-mini",
    rpmLimit: 7,
    created: new Date(0),
  };
  const key: ApiKeyRecord = {
    id: "key_1",
    accountId: "acc_1",
    prefix: "tg_A1b2C3d4",
    label: null,
    revoked,
    rpmLimit: 3,
    spendLimit: null,
    spent: 0n,
    lastUsed: null,
    created: new Date(0),
  };
  return { key, account };
}

Deno.test("auth: authenticate returns the caller with its limits and default model", async () => {
  const entries = new Map([[await hashKey(KEY), keyAuth()]]);
  const s = fakeStore(entries);
  const tracker = new Tracker();
  const caller = await authenticate(new Headers({ "x-api-key": KEY }), {
    store: s.store,
    keyCache: new KeyCache(0),
    tracker,
  });
  assert.deepEqual(caller, {
    accountId: "acc_1",
    keyId: "key_1",
    defaultModel: "openai/gpt-4o-mini",
    keyRpm: 3,
    accountRpm: 7,
    keyCapped: false,
  });
  await tracker.idle();
  assert.equal(s.touches, 1);
});

Deno.test("auth: unknown, revoked and other-prefix keys → 401", async () => {
  const entries = new Map([[await hashKey(KEY), keyAuth(true)]]);
  const s = fakeStore(entries);
  const deps = {
    store: s.store,
    keyCache: new KeyCache(0),
    tracker: new Tracker(),
  };
  for (const key of [KEY, OTHER]) {
    await assert.rejects(
      authenticate(new Headers({ authorization: `Bearer ${key}` }), deps),
      (e: unknown) => e instanceof GatewayError && e.status === 401,
    );
  }
  await assert.rejects(
    authenticate(new Headers({ authorization: `Bearer xx_${"a".repeat(43)}` }), deps),
    (e: unknown) => e instanceof GatewayError && e.status === 401,
  );
});

Deno.test("auth: a key issued under an earlier KEY_PREFIX still authenticates", async () => {
  const old = `gw_${"Q".repeat(43)}`;
  const s = fakeStore(new Map([[await hashKey(old), keyAuth()]]));
  const caller = await authenticate(new Headers({ authorization: `Bearer ${old}` }), {
    store: s.store,
    keyCache: new KeyCache(0),
    tracker: new Tracker(),
  });
  assert.equal(caller.keyId, "key_1");
});

Deno.test("auth: with a TTL of 0 a revocation is seen on the next request", async () => {
  const entry = keyAuth(false);
  const entries = new Map([[await hashKey(KEY), entry]]);
  const s = fakeStore(entries);
  const deps = {
    store: s.store,
    keyCache: new KeyCache(0),
    tracker: new Tracker(),
  };
  const h = new Headers({ authorization: `Bearer ${KEY}` });
  await authenticate(h, deps);
  entry.key.revoked = true;
  await assert.rejects(authenticate(h, deps), (e: unknown) => (e as GatewayError).status === 401);
  await deps.tracker.idle();
});

Deno.test("auth: the cache answers within its TTL, hits and misses alike", async () => {
  const entries = new Map([[await hashKey(KEY), keyAuth()]]);
  const s = fakeStore(entries);
  const deps = {
    store: s.store,
    keyCache: new KeyCache(60_000),
    tracker: new Tracker(),
  };
  for (let i = 0; i < 3; i++) await authenticate(new Headers({ "x-api-key": KEY }), deps);
  assert.equal(s.lookups, 1);
  for (let i = 0; i < 3; i++) {
    await assert.rejects(authenticate(new Headers({ "x-api-key": OTHER }), deps));
  }
  assert.equal(s.lookups, 2, "a miss is cached too");
  await deps.tracker.idle();
  assert.equal(s.touches, 1, "last_used is written at most once per interval");
});

Deno.test("auth: KeyCache entries expire", () => {
  const c = new KeyCache(1000);
  const v = keyAuth();
  c.set("h", v, 0);
  assert.equal(c.get("h", 999), v);
  assert.equal(c.get("h", 1000), undefined);
  c.set("miss", null, 0);
  assert.equal(c.get("miss", 10), null);
  assert.equal(c.get("never", 10), undefined);
});

Deno.test("auth: a store outage is a 503 with Retry-After, not a 401", async () => {
  const s = fakeStore(new Map());
  s.setDown(true);
  const deps = {
    store: s.store,
    keyCache: new KeyCache(0),
    tracker: new Tracker(),
  };
  await assert.rejects(
    authenticate(new Headers({ "x-api-key": KEY }), deps),
    (e: unknown) => e instanceof GatewayError && e.status === 503 && e.retryAfter !== undefined,
  );
});

/** A store whose key reads wait until released, to hold them in flight. */
function slowStore(entries: Map<string, KeyAuth>) {
  const s = fakeStore(entries);
  const waiting: (() => void)[] = [];
  const find = s.store.findKeyByHash.bind(s.store);
  s.store.findKeyByHash = (hash: string) =>
    new Promise<void>((r) => waiting.push(r)).then(() => find(hash));
  return {
    s,
    release() {
      for (const r of waiting.splice(0)) r();
    },
    get waiting() {
      return waiting.length;
    },
  };
}

Deno.test("auth: requests that miss together share one store read", async () => {
  const { s, release } = slowStore(new Map([[await hashKey(KEY), keyAuth()]]));
  const deps = { store: s.store, keyCache: new KeyCache(10_000), tracker: new Tracker() };
  const calls = Array.from(
    { length: 32 },
    () => authenticate(new Headers({ "x-api-key": KEY }), deps),
  );
  await new Promise((r) => setTimeout(r, 0));
  release();
  const callers = await Promise.all(calls);
  assert.equal(s.lookups, 1);
  assert.ok(callers.every((c) => c.keyId === "key_1"));
  await deps.tracker.idle();
});

Deno.test("auth: past half its TTL an entry is served while one read renews it", async () => {
  const entry = keyAuth();
  const hash = await hashKey(KEY);
  const { s, release } = slowStore(new Map([[hash, entry]]));
  const cache = new KeyCache(1000);
  const read = () => s.store.findKeyByHash(hash);
  const first = cache.lookup("h", 0, read);
  release();
  assert.equal((await first)?.key.revoked, false);
  entry.key.revoked = true;
  // Young: served from the cache, no read.
  assert.equal((await cache.lookup("h", 400, read))?.key.revoked, false);
  assert.equal(s.lookups, 1);
  // Past half its life: still served at once (the read is held), one renewal started.
  assert.equal((await cache.lookup("h", 600, read))?.key.revoked, false);
  assert.equal((await cache.lookup("h", 700, read))?.key.revoked, false);
  assert.equal(s.lookups, 1, "the renewal is waiting to read");
  release();
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(s.lookups, 2, "one renewal for both requests");
  // The renewal landed: the revocation is seen before the first entry's TTL ran out.
  assert.equal((await cache.lookup("h", 800, read))?.key.revoked, true);
});

Deno.test("auth: nothing is served past the TTL while a renewal is still in flight", async () => {
  const hash = await hashKey(KEY);
  const { s, release } = slowStore(new Map([[hash, keyAuth()]]));
  const cache = new KeyCache(1000);
  const read = () => s.store.findKeyByHash(hash);
  const first = cache.lookup("h", 0, read);
  release();
  await first;
  // A renewal starts at 600 and is held; at 1000 the entry is expired, so the request waits
  // for that same read rather than being answered from the old entry.
  await cache.lookup("h", 600, read);
  let answered = false;
  const late = cache.lookup("h", 1000, read).then((v) => {
    answered = true;
    return v;
  });
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(answered, false);
  release();
  assert.equal((await late)?.key.id, "key_1");
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(s.lookups, 2);
});

Deno.test("auth: a failed renewal leaves the entry to its TTL; a failed read is a 503", async () => {
  const hash = await hashKey(KEY);
  const s = fakeStore(new Map([[hash, keyAuth()]]));
  const cache = new KeyCache(1000);
  const read = () => s.store.findKeyByHash(hash);
  await cache.lookup("h", 0, read);
  s.setDown(true);
  assert.equal((await cache.lookup("h", 600, read))?.key.id, "key_1");
  await new Promise((r) => setTimeout(r, 0));
  assert.equal((await cache.lookup("h", 900, read))?.key.id, "key_1");
  await assert.rejects(cache.lookup("h", 1000, read), /store down/);
});

Deno.test("auth: a read begun before clear() fills no entry; the next request reads again", async () => {
  const entry = keyAuth();
  const hash = await hashKey(KEY);
  const s = fakeStore(new Map([[hash, entry]]));
  const cache = new KeyCache(10_000);
  // The first read answers with the key as it stood before the operator revoked it.
  let answer!: (v: KeyAuth | null) => void;
  const before = cache.lookup(hash, 0, () => new Promise((r) => answer = r));
  cache.clear();
  entry.key.revoked = true;
  const after = cache.lookup(hash, 1, () => s.store.findKeyByHash(hash));
  answer(keyAuth(false));
  assert.equal((await before)?.key.revoked, false, "that request was in flight already");
  assert.equal((await after)?.key.revoked, true, "a request after clear() reads anew");
  assert.equal(cache.get(hash, 2)?.key.revoked, true, "the stale answer filled nothing");
  assert.equal(s.lookups, 1);
});

Deno.test("auth: with a TTL of 0 no read is shared: each request reads after it arrived", async () => {
  const hash = await hashKey(KEY);
  const { s, release } = slowStore(new Map([[hash, keyAuth()]]));
  const cache = new KeyCache(0);
  const read = () => s.store.findKeyByHash(hash);
  const both = [cache.lookup(hash, 0, read), cache.lookup(hash, 0, read)];
  await new Promise((r) => setTimeout(r, 0));
  release();
  await Promise.all(both);
  assert.equal(s.lookups, 2);
});

Deno.test("auth: a read in flight for a whole TTL is not joined: a hung read stalls a key one TTL at most", async () => {
  const hash = await hashKey(KEY);
  const s = fakeStore(new Map([[hash, keyAuth()]]));
  const cache = new KeyCache(1000);
  const hung = cache.lookup(hash, 0, () => new Promise(() => {}));
  const joined = cache.lookup(hash, 999, () => s.store.findKeyByHash(hash));
  const fresh = await cache.lookup(hash, 1000, () => s.store.findKeyByHash(hash));
  assert.equal(fresh?.key.id, "key_1");
  assert.equal(s.lookups, 1, "the request at 999 joined the hung read; the one at 1000 read");
  const settled = await Promise.race([
    Promise.any([hung, joined]).then(() => "answered"),
    new Promise((r) => setTimeout(() => r("waiting"), 5)),
  ]);
  assert.equal(settled, "waiting");
});

Deno.test("auth: an older read that lands last does not replace a newer entry", async () => {
  const hash = await hashKey(KEY);
  const cache = new KeyCache(1000);
  let oldAnswer!: (v: KeyAuth | null) => void;
  const old = cache.lookup(hash, 0, () => new Promise((r) => oldAnswer = r));
  // The old read hangs past the TTL; a new one reads the revocation and lands first.
  await cache.lookup(hash, 1000, () => Promise.resolve(keyAuth(true)));
  oldAnswer(keyAuth(false));
  await old;
  assert.equal(cache.get(hash, 1001)?.key.revoked, true);
});

Deno.test("key cache: a flood of made-up keys does not push the real ones out", () => {
  const cache = new KeyCache(60_000);
  const real = { key: { id: "key_real" } } as unknown as KeyAuth;
  cache.set("real", real, 0);
  for (let i = 0; i <= keyCacheEntriesMax; i++) cache.set(`bogus${i}`, null, 1);
  assert.equal(cache.get("real", 2), real, "the real key is still cached");
  assert.equal(cache.get("bogus0", 2), undefined, "the misses made room");
});

Deno.test("key cache: the last-used clock of keys no longer in use is let go", () => {
  const cache = new KeyCache(10_000);
  // A long-running gateway sees keys come and go (rotated, revoked, clients that stopped):
  // each was remembered for good, one entry per key ever used since start.
  const start = keyTouchIntervalMs; // a first touch is written at once
  for (let i = 0; i <= keyCacheEntriesMax; i++) assert.ok(cache.shouldTouch(`key_${i}`, start + i));
  const later = start + keyCacheEntriesMax + keyTouchIntervalMs;
  for (let i = 0; i < 100; i++) cache.shouldTouch(`key_new${i}`, later + i);
  assert.ok(cache.touchedKeys <= 200, `${cache.touchedKeys} keys remembered`);
  assert.equal(cache.shouldTouch("key_new0", later + 1000), false, "a recent touch is kept");
});

import { createHash } from "node:crypto";
import { GatewayError, unauthorized } from "../http/gateway_error.ts";
import { apiKeyCharsMax, keyCacheEntriesMax, keyTouchIntervalMs } from "../lib/bounds.ts";
import type { KeyAuth, Store } from "../store/store.ts";
import type { Tracker } from "../lib/tracker.ts";

/** Who is calling: the result of the auth stage. */
export interface Caller {
  accountId: string;
  keyId: string;
  defaultModel: string | null;
  keyRpm: number | null;
  accountRpm: number | null;
  /** The key has a spend cap: its holds are checked against it in the store (quota.ts). */
  keyCapped: boolean;
}

/**
 * Key lookups are cached in memory for `ttlMs` (KEY_CACHE_TTL_MS, default 10 s): a revoked key
 * stops working within that time on every instance. Misses are cached too, so a flood of bad
 * keys cannot turn into a flood of store reads.
 *
 * A key in steady use never waits on the store: past half its life an entry is still served
 * while one background read renews it, and requests that miss together share one read. The
 * embedded store's thread runs behind the requests (it writes the settlement batches), so under
 * load a read queued behind a batch can take a second; when every request of a key waited for
 * its own read each time the entry expired, a busy gateway stalled every TTL (a 1.5 s p99 on
 * 64-token streams at 32 connections). Nothing is served past the TTL, counted from when the
 * read that filled the entry began. The price: a key in steady use is read every half TTL.
 */
export class KeyCache {
  /** `read`: when the read that filled the entry began; its TTL counts from then. */
  #entries = new Map<
    string,
    { value: KeyAuth | null; read: number; expires: number; renewAt: number }
  >();
  #reading = new Map<string, { answer: Promise<KeyAuth | null>; began: number }>();
  /** Bumped by `clear`: a read begun before it fills no entry. */
  #epoch = 0;
  #touched = new Map<string, number>();
  constructor(readonly ttlMs: number) {}

  get(hash: string, now: number): KeyAuth | null | undefined {
    const e = this.#entries.get(hash);
    if (!e) return undefined;
    if (e.expires <= now) {
      this.#entries.delete(hash);
      return undefined;
    }
    return e.value;
  }
  /** Fills the entry with what a read begun at `began` found, unless a later read filled it. */
  set(hash: string, value: KeyAuth | null, began: number) {
    const e = this.#entries.get(hash);
    if (e && e.read > began) return;
    if (this.#entries.size > keyCacheEntriesMax) this.#evict();
    this.#entries.set(hash, {
      value,
      read: began,
      expires: began + this.ttlMs,
      renewAt: began + this.ttlMs / 2,
    });
  }
  /**
   * Makes room: the cached misses go first, so a flood of made-up keys (which anyone can send,
   * unauthenticated) cannot push the real keys out and send their requests to the store; only
   * a cache of real keys alone past the bound is emptied.
   */
  #evict() {
    for (const [hash, e] of this.#entries) if (e.value === null) this.#entries.delete(hash);
    if (this.#entries.size > keyCacheEntriesMax) this.#entries.clear();
  }

  /** Forgets every entry, and every read in flight (an operator changed keys or accounts). */
  clear() {
    this.#entries.clear();
    this.#reading.clear();
    this.#epoch++;
  }

  /**
   * The key behind `hash`: from the cache (renewed in the background past half its life), or
   * from `read`. Requests that miss while a read younger than the TTL is in flight share it, so
   * what they are told is never older than a cached answer could be (with a TTL of 0 nothing is
   * shared), and a read that hangs holds up a key's requests for one TTL at most, not until it
   * ends. A failed read rejects the requests sharing it; a failed renewal leaves the entry to
   * its TTL.
   */
  lookup(
    hash: string,
    now: number,
    read: () => Promise<KeyAuth | null>,
  ): Promise<KeyAuth | null> {
    const e = this.#entries.get(hash);
    if (e && now < e.expires) {
      if (now >= e.renewAt) this.#read(hash, now, read).catch(() => {});
      return Promise.resolve(e.value);
    }
    return this.#read(hash, now, read);
  }

  #read(hash: string, now: number, read: () => Promise<KeyAuth | null>) {
    const inFlight = this.#reading.get(hash);
    if (inFlight && now - inFlight.began < this.ttlMs) return inFlight.answer;
    const epoch = this.#epoch;
    const answer: Promise<KeyAuth | null> = read().then((value) => {
      if (epoch === this.#epoch) this.set(hash, value, now);
      return value;
    }).finally(() => {
      if (this.#reading.get(hash)?.answer === answer) this.#reading.delete(hash);
    });
    this.#reading.set(hash, { answer, began: now });
    return answer;
  }

  /** True when `last_used` should be written now for this key. */
  shouldTouch(keyId: string, now: number): boolean {
    const last = this.#touched.get(keyId) ?? 0;
    if (now - last < keyTouchIntervalMs) return false;
    // One entry per key used since start would grow for the life of the process (keys are
    // rotated, revoked, abandoned); a touch older than the interval decides nothing, so those
    // entries go once there are many.
    if (this.#touched.size > keyCacheEntriesMax) {
      for (const [id, at] of this.#touched) {
        if (now - at >= keyTouchIntervalMs) this.#touched.delete(id);
      }
    }
    this.#touched.set(keyId, now);
    return true;
  }

  /** Keys whose last write of `last_used` is remembered (bounded; for tests). */
  get touchedKeys(): number {
    return this.#touched.size;
  }
}

const KEY_SHAPE = /^[a-z][a-z0-9]{0,15}_[A-Za-z0-9]{20,200}$/;

/** The key from `Authorization: Bearer …` or `x-api-key` (the vendor SDK's header). */
export function extractKey(headers: Headers): string {
  const auth = headers.get("authorization");
  const xKey = headers.get("x-api-key");
  let bearer: string | undefined;
  if (auth !== null) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) throw unauthorized("malformed Authorization header: expected 'Bearer <key>'");
    bearer = m[1];
  }
  if (bearer !== undefined && xKey !== null && xKey.trim() !== "" && xKey.trim() !== bearer) {
    throw unauthorized("two different API keys were sent (Authorization and x-api-key)");
  }
  const key = bearer ?? xKey?.trim();
  if (!key) throw unauthorized("missing API key: send 'Authorization: Bearer <key>'");
  if (key.length > apiKeyCharsMax || !KEY_SHAPE.test(key)) throw unauthorized("invalid API key");
  return key;
}

/**
 * node:crypto's synchronous hash: WebCrypto's `digest` costs ~70 µs per request under load
 * (a promise and a buffer round trip), this ~1.5 µs, on every authenticated request.
 */
export function sha256Hex(text: string): Promise<string> {
  return Promise.resolve(createHash("sha256").update(text).digest("hex"));
}

export async function authenticate(
  headers: Headers,
  deps: { store: Store; keyCache: KeyCache; tracker: Tracker },
): Promise<Caller> {
  // Any prefix: keys issued before KEY_PREFIX changed stay valid (the lookup is by hash).
  const key = extractKey(headers);
  const hash = await sha256Hex(key);
  const now = Date.now();
  let found: KeyAuth | null;
  try {
    found = await deps.keyCache.lookup(hash, now, () => deps.store.findKeyByHash(hash));
  } catch {
    throw new GatewayError(503, "the gateway's store is unavailable; retry shortly", {
      retryAfter: 2,
    });
  }
  if (!found || found.key.revoked) throw unauthorized("invalid or revoked API key");
  if (deps.keyCache.shouldTouch(found.key.id, now)) {
    deps.tracker.track(deps.store.touchKey(found.key.id, new Date(now)).catch(() => {}));
  }
  return {
    accountId: found.account.id,
    keyId: found.key.id,
    defaultModel: found.account.defaultModel,
    keyRpm: found.key.rpmLimit,
    accountRpm: found.account.rpmLimit,
    keyCapped: found.key.spendLimit !== null,
  };
}

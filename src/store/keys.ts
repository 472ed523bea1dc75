/**
 * API keys: `<prefix>_<43 base62 characters>` (256 bits from Web Crypto). The store keeps
 * only the SHA-256 hex of a key; a plain hash suffices because the key itself is random and
 * long, so there is nothing to brute-force.
 */
import { randomBase62 } from "../lib/ids.ts";

/** 43 base62 characters carry 43 × log2(62) ≈ 256.03 bits. */
const KEY_CHARS = 43;
/** Characters after `<prefix>_` kept visible so operators can tell keys apart (~48 bits). */
const DISPLAY_CHARS = 8;

export interface NewKey {
  /** The secret, shown to the operator once. */
  key: string;
  /** SHA-256 hex of `key`: what the store keeps. */
  hash: string;
  /** The visible prefix, e.g. `tg_AbC1xYz9`. */
  display: string;
}

export async function generateKey(prefix: string): Promise<NewKey> {
  const secret = randomBase62(KEY_CHARS);
  const key = `${prefix}_${secret}`;
  return { key, hash: await hashKey(key), display: `${prefix}_${secret.slice(0, DISPLAY_CHARS)}` };
}

export async function hashKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

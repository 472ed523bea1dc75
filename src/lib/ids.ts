const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Bytes at or above this would make `% 62` favour the first characters: they are skipped. */
const UNBIASED_BELOW = 248; // 4 × 62
/** One call to the CSPRNG per ~90 ids rather than one per id: ids are made on every request. */
const pool = new Uint8Array(2048);
let at = pool.length;

/**
 * `n` uniformly random base62 characters (log2(62) ≈ 5.954 bits each) from Web Crypto, for
 * ids and API keys.
 */
export function randomBase62(n: number): string {
  let out = "";
  while (out.length < n) {
    if (at === pool.length) {
      crypto.getRandomValues(pool);
      at = 0;
    }
    const b = pool[at++];
    if (b < UNBIASED_BELOW) out += ALPHABET[b % 62];
  }
  return out;
}

/**
 * `<prefix>_<chars>`: as many base62 characters as carry `bytes` bytes of entropy (23 for
 * the default 17 bytes, i.e. 136 bits), unguessable.
 */
export function newId(prefix: string, bytes = 17): string {
  return `${prefix}_${randomBase62(Math.ceil(bytes * 8 / Math.log2(62)))}`;
}

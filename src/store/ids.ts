/** Random base62 text from Web Crypto, for API keys and test names (ids: src/lib/ids.ts). */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * `n` uniformly random base62 characters (log2(62) ≈ 5.954 bits each). Bytes ≥ 248 are
 * rejected so that `byte % 62` carries no bias.
 */
export function randomBase62(n: number): string {
  let out = "";
  while (out.length < n) {
    const bytes = crypto.getRandomValues(new Uint8Array(n * 2));
    for (const b of bytes) {
      if (b >= 248) continue;
      out += ALPHABET[b % 62];
      if (out.length === n) break;
    }
  }
  return out;
}

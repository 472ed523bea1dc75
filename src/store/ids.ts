/**
 * Random identifiers: `<prefix>_<base62>`. Ids are made in code, not by the database, so a
 * caller can name a generation before the row exists and PGlite and PostgreSQL agree.
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** 22 base62 characters carry 130.9 bits: unguessable and collision-free at any scale. */
const ID_CHARS = 22;

/**
 * `n` uniformly random base62 characters (log2(62) ≈ 5.954 bits each) from Web Crypto.
 * Bytes ≥ 248 are rejected so that `byte % 62` carries no bias.
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

/** A fresh id such as `gen_3fK…`; prefixes in use: acc, key, led, gen, blob. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(ID_CHARS)}`;
}

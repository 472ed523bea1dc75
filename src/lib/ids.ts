const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `<prefix>_<22 base62 chars>`: 128+ bits from the platform's CSPRNG, unguessable. */
export function newId(prefix: string, bytes = 17): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  let n = 0n;
  for (const b of raw) n = (n << 8n) | BigInt(b);
  let s = "";
  while (n > 0n) {
    s = ALPHABET[Number(n % 62n)] + s;
    n /= 62n;
  }
  return `${prefix}_${s.padStart(Math.ceil(bytes * 8 / Math.log2(62)), "0")}`;
}

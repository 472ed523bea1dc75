/**
 * Money is integer nano-roubles (1e-9 RUB) in `bigint`. Prices and rates are decimal strings,
 * held exactly as `Dec` (n / 10^scale) so that a cost is computed without floating point and
 * rounded once.
 */
export const NANO_PER_RUB = 1_000_000_000n;

/** An exact decimal: value = n / 10^scale. */
export interface Dec {
  n: bigint;
  scale: number;
}

export const ZERO: Dec = { n: 0n, scale: 0 };

/**
 * Powers of ten by exponent: a BigInt exponentiation is dear, and every cost and hold (on
 * every request) takes several.
 */
const POW10: bigint[] = Array.from({ length: 64 }, (_, k) => 10n ** BigInt(k));

/** 10^k as a bigint (k ≥ 0). */
export function pow10(k: number): bigint {
  return POW10[k] ?? 10n ** BigInt(k);
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** Parses "0.0000025", "12", "1e-6"; throws on anything else (NaN, "", "abc"). */
export function parseDec(text: string | number): Dec {
  const s = typeof text === "number" ? numberToPlain(text) : text.trim();
  const m = DECIMAL.exec(s);
  if (!m || (m[2] === "" && (m[3] ?? "") === "")) throw new Error(`not a decimal: ${s}`);
  const [, sign, int, frac = "", exp = "0"] = m;
  let n = BigInt((int || "0") + frac);
  let scale = frac.length - Number(exp);
  if (scale < 0) {
    n *= pow10(-scale);
    scale = 0;
  }
  return { n: sign === "-" ? -n : n, scale };
}

function numberToPlain(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`not a finite number: ${x}`);
  return String(x);
}

function align(a: Dec, b: Dec): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [a.n * pow10(scale - a.scale), b.n * pow10(scale - b.scale), scale];
}

export function add(a: Dec, b: Dec): Dec {
  const [x, y, scale] = align(a, b);
  return { n: x + y, scale };
}

export function mul(a: Dec, b: Dec): Dec {
  return { n: a.n * b.n, scale: a.scale + b.scale };
}

export function mulInt(a: Dec, k: number | bigint): Dec {
  return { n: a.n * BigInt(k), scale: a.scale };
}

export function isZero(a: Dec): boolean {
  return a.n === 0n;
}

export function cmp(a: Dec, b: Dec): number {
  const [x, y] = align(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Rounds a rouble amount up to whole nano-roubles (the one rounding of a generation). */
export function ceilNano(rub: Dec): bigint {
  const shifted = rub.n * NANO_PER_RUB;
  const div = pow10(rub.scale);
  const q = shifted / div;
  return shifted % div > 0n ? q + 1n : q;
}

/** Rounds half up to nano-roubles: for display of itemised parts, never for debits. */
export function roundNano(rub: Dec): bigint {
  const shifted = rub.n * NANO_PER_RUB * 2n;
  const div = pow10(rub.scale) * 2n;
  const q = (shifted + div / 2n) / div;
  return q;
}

/** Nano-roubles as a JSON number of roubles with at most 9 decimals. */
export function nanoToRub(nano: bigint): number {
  return Number(formatRub(nano));
}

/** Nano-roubles as an exact decimal string of roubles, trailing zeros trimmed. */
export function formatRub(nano: bigint): string {
  const neg = nano < 0n;
  const abs = neg ? -nano : nano;
  const whole = abs / NANO_PER_RUB;
  const frac = (abs % NANO_PER_RUB).toString().padStart(9, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${whole}${frac ? "." + frac : ""}`;
}

/**
 * Nano-roubles as roubles and kopecks for a person to read ("124,35"), rounded up to the
 * kopeck: shown as what a top-up must reach, it must not fall short.
 */
export function formatKopecksUp(nano: bigint): string {
  const perKopeck = NANO_PER_RUB / 100n;
  const kopecks = (nano + perKopeck - 1n) / perKopeck;
  return `${kopecks / 100n},${String(kopecks % 100n).padStart(2, "0")}`;
}

/** A rouble amount typed by an operator ("100", "12.5") as nano-roubles; more than 9 decimals is an error. */
export function rubToNano(text: string): bigint {
  const d = parseDec(text);
  if (d.scale > 9) throw new Error(`at most 9 decimals: ${text}`);
  return d.n * pow10(9 - d.scale);
}

/** A decimal as a string without exponent, e.g. for public price strings. */
export function formatDec(d: Dec): string {
  const neg = d.n < 0n;
  const digits = (neg ? -d.n : d.n).toString().padStart(d.scale + 1, "0");
  const int = digits.slice(0, digits.length - d.scale);
  const frac = d.scale > 0 ? digits.slice(digits.length - d.scale).replace(/0+$/, "") : "";
  return `${neg ? "-" : ""}${int}${frac ? "." + frac : ""}`;
}

/** Limits a decimal's scale (rounding half up) so public prices stay readable. */
export function roundDec(d: Dec, scale: number): Dec {
  if (d.scale <= scale) return d;
  const div = pow10(d.scale - scale);
  const neg = d.n < 0n;
  const abs = neg ? -d.n : d.n;
  const q = (abs + div / 2n) / div;
  return { n: neg ? -q : q, scale };
}

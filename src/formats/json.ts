/**
 * Reading JSON of unknown shape (upstream bodies and events, client extras): the small typed
 * accessors every format's decoder and encoder uses, so that each reads a value the same way.
 */

/** A JSON object of unknown shape. */
export type Obj = Record<string, unknown>;

/** A JSON object: not null, not an array. */
export const isObject = (v: unknown): v is Obj =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** `v` when it is a JSON object, else undefined. */
export const obj = (v: unknown): Obj | undefined => isObject(v) ? v : undefined;

/** `v` when it is a string, else undefined. */
export const str = (v: unknown): string | undefined => typeof v === "string" ? v : undefined;

/** `v` when it is a finite number, else undefined. */
export const num = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) ? v : undefined;

/** JSON text that holds an object → that object; anything else (or no JSON) → undefined. */
/** A non-empty array of strings, or undefined (a list a field may carry, such as domains). */
export const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string") ? v : undefined;

export function parseObject(text: string): Obj | undefined {
  try {
    return obj(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * A JSON number as a plain decimal string: `1e-7` → "0.0000001". `String()` switches to
 * exponent notation below 1e-6, which price code should not have to parse.
 */
export function decimalString(x: number): string {
  const s = String(x);
  const e = s.indexOf("e");
  if (e < 0) return s;
  const neg = s.startsWith("-");
  const mantissa = s.slice(neg ? 1 : 0, e);
  const exp = Number(s.slice(e + 1));
  const dot = mantissa.indexOf(".");
  const digits = mantissa.replace(".", "");
  const point = (dot < 0 ? mantissa.length : dot) + exp;
  let out: string;
  if (point <= 0) out = "0." + "0".repeat(-point) + digits;
  else if (point >= digits.length) out = digits + "0".repeat(point - digits.length);
  else out = digits.slice(0, point) + "." + digits.slice(point);
  return neg ? "-" + out : out;
}

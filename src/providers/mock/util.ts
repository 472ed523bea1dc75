/**
 * Small deterministic helpers for the mock upstream: a string hash, hash-derived ids,
 * base64, and the input-token count. Nothing here reads a clock or a random source, so the
 * same request always yields the same bytes.
 */

/** 32-bit FNV-1a over UTF-16 code units; `seed` lets one string give several hashes. */
export function fnv1a(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** xorshift32 step; never returns 0 for a non-zero input. */
export function xorshift(x: number): number {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return x >>> 0;
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `len` alphanumeric characters derived from `seed` (ids such as `chatcmpl-…`). */
export function alnum(seed: number, len: number): string {
  let x = seed >>> 0 || 0x9e3779b9;
  let out = "";
  for (let i = 0; i < len; i++) {
    x = xorshift(x);
    out += ALNUM[x % 62];
  }
  return out;
}

/** A fixed `created` timestamp (2026-01-01T00:00:00Z): real time would break determinism. */
export const CREATED = 1767225600;

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 with padding. */
export function base64(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64[n >>> 18] + B64[(n >>> 12) & 63] + B64[(n >>> 6) & 63] + B64[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    out += B64[n >>> 18] + B64[(n >>> 12) & 63] + "==";
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += B64[n >>> 18] + B64[(n >>> 12) & 63] + B64[(n >>> 6) & 63] + "=";
  }
  return out;
}

/** Keys whose string values are prompt text; everything else (roles, ids, urls…) is not. */
const TEXT_KEYS = new Set([
  "content",
  "text",
  "arguments",
  "input",
  "output",
  "thinking",
  "refusal",
  "system",
  "instructions",
  "prompt",
]);

/** Characters of prompt text in `v`, reached under key `key`. */
export function textChars(v: unknown, key: string): number {
  if (typeof v === "string") return TEXT_KEYS.has(key) ? v.length : 0;
  if (Array.isArray(v)) {
    let n = 0;
    for (const x of v) n += textChars(x, key);
    return n;
  }
  if (v !== null && typeof v === "object") {
    let n = 0;
    for (const k in v) n += textChars((v as Record<string, unknown>)[k], k);
    return n;
  }
  return 0;
}

/** The mock's tokenizer: one token per four characters, at least one. */
export function tokensOf(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

/** Prompt tokens of a chat, messages or responses request body. */
export function promptTokens(body: Record<string, unknown>): number {
  return tokensOf(
    textChars(body.messages, "messages") + textChars(body.system, "system") +
      textChars(body.instructions, "instructions") + textChars(body.input, "input"),
  );
}

/** JSON string literal of `s`. */
export const q = (s: string): string => JSON.stringify(s);

const encoder = new TextEncoder();
export const utf8 = (s: string): Uint8Array<ArrayBuffer> => encoder.encode(s);

/** A plain object view of an unknown JSON value (arrays and primitives give `{}`). */
export function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v)
    ? v as Record<string, unknown>
    : {};
}

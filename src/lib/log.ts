/**
 * Structured logs, one JSON object per line. Callers pass fields, never request bodies or
 * headers: prompt text, keys and upstream credentials must not reach a log (see the privacy
 * test). `redact` is a second line of defence for messages built from upstream errors.
 */
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(min: Level, sink: (line: string) => void = console.error): Logger {
  return {
    log(level, msg, fields) {
      if (ORDER[level] < ORDER[min]) return;
      sink(JSON.stringify({ t: new Date().toISOString(), level, msg: redact(msg), ...fields }));
    },
  };
}

const SECRETISH = [
  /\b(sk|rk|pk|tg|gw)[-_][A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[A-Za-z0-9._~+\/-]+=*/gi,
  /\b[a-f0-9]{64}\b/gi,
];

/** Masks anything shaped like a key, a bearer token or a SHA-256 key hash. */
export function redact(text: string): string {
  let out = text;
  for (const re of SECRETISH) out = out.replace(re, "[redacted]");
  return out;
}

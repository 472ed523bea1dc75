import { z } from "zod";
import { describeError, withoutPassword } from "./lib/describe_error.ts";

/**
 * Every setting comes from the environment and is validated here, once, at start. A bad
 * value stops start-up with one line naming the variable (see `loadConfig`). Provider keys
 * (`OPENAI_API_KEY`, …) are not here: the providers file names the variable each provider
 * reads, so keys never pass through a config object that might be logged.
 */
const decimal = (example: string, what = "a non-negative decimal") =>
  z.string().regex(/^\d+(\.\d+)?$/, `${what} such as ${example}`);
/**
 * A whole number in [min, max], told as that range when it is not one: zod's own words
 * ("expected number, received NaN") leave an operator guessing what the variable takes.
 */
const whole = (fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) => {
  const what = max === Number.MAX_SAFE_INTEGER
    ? `a whole number, at least ${min}`
    : `a whole number from ${min} to ${max}`;
  return z.string().regex(/^\d+$/, what).transform(Number)
    .refine((n) => n >= min && n <= max, what).default(fallback);
};
/** File links are handed to browsers and SDKs, which fetch only http(s). */
const publicUrl = z.string().url("an http:// or https:// URL").refine(
  (v) => /^https?:\/\//i.test(v),
  "an http:// or https:// URL",
).optional();
/**
 * MARKUP is a fraction (0.05 = 5 %). Above 1 (100 %) it is almost surely a percentage typed as
 * one (`5` meaning 5 % would bill six times the upstream cost), so it is refused, not guessed.
 */
const MARKUP_MAX = 1;
/**
 * A URL of one of `schemes` (a `mysql://` DATABASE_URL would fail later, and less clearly).
 * Told as those schemes whether the value is another URL or none at all (`host:5432`).
 */
const serviceUrl = (schemes: string[]) => {
  const what = `a ${schemes.map((s) => s + "://").join(" or ")} URL`;
  return z.string().url(what).refine((v) => schemes.some((s) => v.startsWith(s + "://")), what)
    .optional();
};
/**
 * Roubles credited to the demo account. The store keeps nano-roubles in a 64-bit column
 * (at most about 9.2 billion roubles), so a larger figure would fail half-way through the
 * first start.
 */
const DEMO_BALANCE_MAX_RUB = 1_000_000_000;

const schema = z.object({
  PORT: whole(8787, 0, 65535),
  HOST: z.string().min(1).default("0.0.0.0"),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: serviceUrl(["postgres", "postgresql"]),
  REDIS_URL: serviceUrl(["redis", "rediss"]),
  BLOB_URL: z.string().min(1).optional(),
  PUBLIC_BASE_URL: publicUrl,
  USD_RUB: decimal("92.5", "a positive decimal").refine(
    (v) => Number(v) > 0,
    "a positive decimal such as 92.5",
  ).default(
    "92.5",
  ),
  MARKUP: decimal("0.05").refine(
    (v) => Number(v) <= MARKUP_MAX,
    `a fraction such as 0.05 (5 %), at most ${MARKUP_MAX} (100 %)`,
  ).default("0.05"),
  KEY_PREFIX: z.string().regex(
    /^[a-z][a-z0-9]{0,15}$/,
    "1 to 16 lowercase letters and digits, starting with a letter",
  ).default("tg"),
  ADMIN_TOKEN: z.string().min(16, "at least 16 characters").optional(),
  DEMO_BALANCE_RUB: decimal("1000").refine(
    (v) => Number(v) <= DEMO_BALANCE_MAX_RUB && !/\.\d{10}/.test(v),
    `at most ${DEMO_BALANCE_MAX_RUB} roubles, with at most 9 decimals`,
  ).default("1000"),
  PROVIDERS_FILE: z.string().min(1).optional(),
  CATALOGUE_FILE: z.string().min(1).optional(),
  CANCEL_POLICY: z.enum(["abort", "drain"]).default("abort"),
  DRAIN_DEADLINE_MS: whole(30_000, 0, 600_000),
  STREAM_KEEPALIVE_MS: whole(15_000, 0, 600_000),
  KEY_CACHE_TTL_MS: whole(10_000, 0, 300_000),
  RATE_LIMIT_RPM: whole(600, 0),
  ACCOUNT_RATE_LIMIT_RPM: whole(3000, 0),
  BODY_MAX_BYTES: whole(32 * 1024 * 1024, 1024),
  SWEEP_AFTER_MS: whole(15 * 60_000, 1000),
  SHUTDOWN_GRACE_MS: whole(25_000, 0, 600_000),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
});

export type Config = z.infer<typeof schema>;

export class ConfigError extends Error {}

/** Validates `env`; throws a `ConfigError` whose message is one line naming the variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== "") cleaned[key] = v;
  }
  const r = schema.safeParse(cleaned);
  if (!r.success) {
    const issue = r.error.issues[0];
    const name = String(issue.path[0]);
    throw new ConfigError(
      `config: ${name}=${
        JSON.stringify(withoutPassword(cleaned[name] ?? ""))
      } is invalid: ${issue.message}`,
    );
  }
  return r.data;
}

export function loadConfig(): Config {
  return parseConfig(Deno.env.toObject());
}

/**
 * Runs one step of start-up; whatever it throws becomes a `ConfigError` whose one line names
 * the step (`DATABASE_URL=postgres://…`, `PROVIDERS_FILE config/providers.json`), so an
 * operator reads what to fix instead of a stack trace.
 */
export async function startStep<T>(what: string, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`${what ? withoutPassword(what) + ": " : ""}${describeError(e)}`);
  }
}

/** Config validation: defaults, and one line naming the variable when a value is bad. */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "./config.ts";

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    parseConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${e}`);
    return e;
  }
  assert.fail(`expected ${JSON.stringify(env)} to be rejected`);
}

Deno.test("config: defaults when nothing is set", () => {
  const cfg = parseConfig({});
  assert.equal(cfg.PORT, 8787);
  assert.equal(cfg.HOST, "0.0.0.0");
  assert.equal(cfg.DATA_DIR, "./data");
  assert.equal(cfg.DATABASE_URL, undefined);
  assert.equal(cfg.REDIS_URL, undefined);
  assert.equal(cfg.USD_RUB, "92.5");
  assert.equal(cfg.MARKUP, "0.05");
  assert.equal(cfg.KEY_PREFIX, "tg");
  assert.equal(cfg.ADMIN_TOKEN, undefined);
  assert.equal(cfg.CANCEL_POLICY, "abort");
  assert.equal(cfg.KEY_CACHE_TTL_MS, 10_000);
  assert.equal(cfg.STREAM_KEEPALIVE_MS, 15_000);
  assert.equal(cfg.LOG_LEVEL, "info");
  assert.ok(cfg.BODY_MAX_BYTES >= 1024);
  assert.ok(cfg.RATE_LIMIT_RPM >= 0);
});

Deno.test("config: an empty string counts as unset", () => {
  const cfg = parseConfig({ PORT: "", USD_RUB: "", DATABASE_URL: "" });
  assert.equal(cfg.PORT, 8787);
  assert.equal(cfg.USD_RUB, "92.5");
  assert.equal(cfg.DATABASE_URL, undefined);
});

Deno.test("config: values are coerced and kept", () => {
  const cfg = parseConfig({
    PORT: "0",
    USD_RUB: "100.25",
    MARKUP: "0",
    KEY_CACHE_TTL_MS: "0",
    CANCEL_POLICY: "drain",
    DATABASE_URL: "postgres://u@localhost:5432/db",
  });
  assert.equal(cfg.PORT, 0);
  assert.equal(cfg.USD_RUB, "100.25");
  assert.equal(cfg.MARKUP, "0");
  assert.equal(cfg.KEY_CACHE_TTL_MS, 0);
  assert.equal(cfg.CANCEL_POLICY, "drain");
  assert.equal(cfg.DATABASE_URL, "postgres://u@localhost:5432/db");
});

Deno.test("config: unrelated environment variables are ignored", () => {
  const cfg = parseConfig({ PATH: "/bin", OPENAI_API_KEY: "sk-secret", HOME: "/root" });
  assert.equal(cfg.PORT, 8787);
  assert.ok(!JSON.stringify(cfg).includes("sk-secret"));
});

for (const port of ["abc", "-1", "65536", "80.5", "8080x"]) {
  Deno.test(`config: PORT=${port} is rejected with one line naming PORT`, () => {
    const e = configError({ PORT: port });
    assert.ok(!e.message.includes("\n"), `one line: ${JSON.stringify(e.message)}`);
    assert.match(e.message, /\bPORT\b/);
    assert.ok(e.message.includes(port), `names the value: ${e.message}`);
  });
}

for (const rate of ["abc", "-1", "1,5", "92.", ".5", "1e3"]) {
  Deno.test(`config: USD_RUB=${rate} is rejected with one line naming USD_RUB`, () => {
    const e = configError({ USD_RUB: rate });
    assert.ok(!e.message.includes("\n"), `one line: ${JSON.stringify(e.message)}`);
    assert.match(e.message, /\bUSD_RUB\b/);
  });
}

Deno.test("config: the message names the bad variable, not a good one next to it", () => {
  const e = configError({ PORT: "8080", USD_RUB: "92.5", MARKUP: "lots" });
  assert.match(e.message, /\bMARKUP\b/);
  assert.doesNotMatch(e.message, /\bPORT\b/);
});

Deno.test("config: other bad values name their variable", () => {
  const cases: Record<string, string> = {
    CANCEL_POLICY: "sometimes",
    LOG_LEVEL: "loud",
    DATABASE_URL: "not a url",
    KEY_PREFIX: "Bad_Prefix",
    ADMIN_TOKEN: "short",
    KEY_CACHE_TTL_MS: "-5",
    BODY_MAX_BYTES: "10",
  };
  for (const [name, value] of Object.entries(cases)) {
    const e = configError({ [name]: value });
    assert.ok(!e.message.includes("\n"), `${name}: one line`);
    assert.ok(e.message.includes(name), `${name}: ${e.message}`);
  }
});

Deno.test("config: PUBLIC_BASE_URL takes http and https only (links are fetched by clients)", () => {
  for (const url of ["http://gw.test", "https://gw.test/base"]) {
    assert.equal(parseConfig({ PUBLIC_BASE_URL: url }).PUBLIC_BASE_URL, url);
  }
  for (const url of ["ftp://x", "file:///srv/files", "not a url"]) {
    const e = configError({ PUBLIC_BASE_URL: url });
    assert.equal(
      e.message,
      `config: PUBLIC_BASE_URL=${JSON.stringify(url)} is invalid: an http:// or https:// URL`,
    );
  }
});

Deno.test("config: MARKUP is a fraction; above 1 (100 %) it is taken for a percentage and refused", () => {
  for (const m of ["0", "0.05", "0.5", "1", "1.0"]) {
    assert.equal(parseConfig({ MARKUP: m }).MARKUP, m);
  }
  for (const m of ["5", "1.01", "20"]) {
    const e = configError({ MARKUP: m });
    assert.equal(
      e.message,
      `config: MARKUP="${m}" is invalid: a fraction such as 0.05 (5 %), at most 1 (100 %)`,
    );
  }
});

Deno.test("config: USD_RUB=0 is rejected (a zero rate would make every model free)", () => {
  for (const rate of ["0", "0.0", "0.000"]) {
    const e = configError({ USD_RUB: rate });
    assert.match(e.message, /\bUSD_RUB\b/);
  }
});

Deno.test("config: a URL's password is masked whole, whatever characters it holds", async () => {
  const { withoutPassword } = await import("./lib/describe_error.ts");
  for (const pw of ["s3cr/t", "p@ss", "a?b#c", "plain"]) {
    const shown = withoutPassword(`DATABASE_URL=postgres://app:${pw}@db:5432/tg: connect failed`);
    assert.equal(shown, "DATABASE_URL=postgres://app:***@db:5432/tg: connect failed", pw);
  }
  const e = configError({ DATABASE_URL: "mysql://app:s3cr/t@db/tg" });
  assert.ok(!e.message.includes("s3cr"), e.message);
});

Deno.test("config: a password with a space in it is masked whole too", async () => {
  // The URL check takes such a URL and the driver connects with it; a start-up failure
  // then names the URL.
  const { withoutPassword } = await import("./lib/describe_error.ts");
  for (const pw of ["two words", "a b@c d", "tab\there"]) {
    const shown = withoutPassword(`DATABASE_URL=postgres://app:${pw}@db:5432/tg: connect failed`);
    assert.equal(shown, "DATABASE_URL=postgres://app:***@db:5432/tg: connect failed", pw);
  }
  const e = configError({ DATABASE_URL: "mysql://app:two words@db/tg" });
  assert.ok(!e.message.includes("words"), e.message);
});

Deno.test("config: a bad whole number is told as the range it must be in", () => {
  const cases: Record<string, [string, string]> = {
    PORT: ["abc", "a whole number from 0 to 65535"],
    KEY_CACHE_TTL_MS: ["1.5", "a whole number from 0 to 300000"],
    RATE_LIMIT_RPM: ["-1", "a whole number, at least 0"],
    ACCOUNT_RATE_LIMIT_RPM: ["lots", "a whole number, at least 0"],
    BODY_MAX_BYTES: ["0", "a whole number, at least 1024"],
    SHUTDOWN_GRACE_MS: ["25s", "a whole number from 0 to 600000"],
  };
  for (const [name, [value, expected]] of Object.entries(cases)) {
    const e = configError({ [name]: value });
    assert.equal(e.message, `config: ${name}="${value}" is invalid: ${expected}`);
  }
});

Deno.test("config: USD_RUB that is not a number asks for a positive one, as zero is refused", () => {
  const e = configError({ USD_RUB: "x" });
  assert.equal(e.message, 'config: USD_RUB="x" is invalid: a positive decimal such as 92.5');
});

Deno.test("config: a store URL that is no URL at all is told the schemes it must have", () => {
  // zod's own "Invalid URL" leaves the operator guessing what the variable takes.
  const cases: Record<string, string> = {
    DATABASE_URL: "a postgres:// or postgresql:// URL",
    REDIS_URL: "a redis:// or rediss:// URL",
  };
  for (const [name, expected] of Object.entries(cases)) {
    for (const value of ["notaurl", "localhost:5432/db", "127.0.0.1:6379"]) {
      const e = configError({ [name]: value });
      assert.equal(e.message, `config: ${name}=${JSON.stringify(value)} is invalid: ${expected}`);
    }
  }
});

Deno.test("config: KEY_PREFIX is told its whole form: a letter first, at most 16 characters", () => {
  for (const p of ["tg", "a", "sk2", "a".repeat(16)]) {
    assert.equal(parseConfig({ KEY_PREFIX: p }).KEY_PREFIX, p);
  }
  // "lowercase letters and digits" alone is wrong for these: they are lowercase letters and
  // digits, and still refused.
  for (const p of ["a".repeat(17), "1tg", "TG", "my_prefix"]) {
    const e = configError({ KEY_PREFIX: p });
    assert.equal(
      e.message,
      `config: KEY_PREFIX=${
        JSON.stringify(p)
      } is invalid: 1 to 16 lowercase letters and digits, starting with a letter`,
    );
  }
});

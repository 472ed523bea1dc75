/** The providers file: keys from the environment, base-URL overrides, upstream names. */
import assert from "node:assert/strict";
import { loadProviders, parseProviders, type ProviderSpec, upstreamNameFor } from "./provider.ts";
import { PROTOCOL } from "./protocols/mod.ts";

const envOf = (vars: Record<string, string>) => (name: string) => vars[name];

function spec(p: Record<string, unknown> & { id: string }) {
  return {
    protocols: ["openai-chat"],
    baseUrl: "https://example.test/v1",
    keyEnv: `${p.id.toUpperCase()}_KEY`,
    ...p,
  };
}

Deno.test("providers: a provider whose key is unset (or empty) is disabled", () => {
  const file = {
    providers: [spec({ id: "a" }), spec({ id: "b" }), spec({ id: "c" })],
  };
  const { enabled, disabled } = parseProviders(file, envOf({ A_KEY: "ka", C_KEY: "" }));
  assert.deepEqual(enabled.map((p) => p.id), ["a"]);
  assert.deepEqual(disabled, ["b", "c"]);
  assert.equal(enabled[0].key, "ka");
});

Deno.test("providers: defaults are filled in", () => {
  const { enabled } = parseProviders({ providers: [spec({ id: "a" })] }, envOf({ A_KEY: "k" }));
  const p = enabled[0];
  assert.equal(p.priority, 100);
  assert.equal(p.upstreamName, "{model}");
  assert.deepEqual(p.serves, []);
  assert.deepEqual(p.models, {});
  assert.deepEqual(p.nameReplace, []);
  assert.ok(p.timeouts.firstByteMs > 0 && p.timeouts.idleMs > 0 && p.timeouts.imagesMs > 0);
});

Deno.test("providers: baseUrlEnv overrides the file's baseUrl; trailing slashes dropped", () => {
  const file = {
    providers: [
      spec({ id: "a", baseUrlEnv: "A_URL", baseUrl: "https://real.test/v1/" }),
      spec({ id: "b", baseUrlEnv: "B_URL", baseUrl: "https://real.test/v1/" }),
    ],
  };
  const { enabled } = parseProviders(
    file,
    envOf({ A_KEY: "k", B_KEY: "k", A_URL: "http://127.0.0.1:9999/v1//" }),
  );
  const byId = Object.fromEntries(enabled.map((p) => [p.id, p]));
  assert.equal(byId.a.baseUrl, "http://127.0.0.1:9999/v1");
  assert.equal(byId.b.baseUrl, "https://real.test/v1", "B_URL unset: the file's URL");
});

Deno.test("providers: enabled providers come sorted by priority", () => {
  const file = {
    providers: [
      spec({ id: "late", priority: 50 }),
      spec({ id: "early", priority: 10 }),
      spec({ id: "default" }),
    ],
  };
  const { enabled } = parseProviders(
    file,
    envOf({ LATE_KEY: "k", EARLY_KEY: "k", DEFAULT_KEY: "k" }),
  );
  assert.deepEqual(enabled.map((p) => p.id), ["early", "late", "default"]);
});

Deno.test("providers: a malformed file is refused", () => {
  const bad = [
    {},
    { providers: [{ id: "a" }] },
    { providers: [spec({ id: "a", protocols: [] })] },
    { providers: [spec({ id: "a", protocols: ["carrier-pigeon"] })] },
    { providers: [spec({ id: "a", baseUrl: "not a url" })] },
    { providers: [spec({ id: "Bad Id" })] },
    // A misspelt price key, or a value that is no price, would have counted as 0 (free).
    { providers: [spec({ id: "a", prices: { "openai/gpt-4o-mini": { promt: "0.1" } } })] },
    { providers: [spec({ id: "a", prices: { "openai/gpt-4o-mini": { prompt: "abc" } } })] },
  ];
  for (const file of bad) {
    assert.throws(() => parseProviders(file, envOf({ A_KEY: "k" })), JSON.stringify(file));
  }
});

Deno.test("providers: the key never appears in the spec fields", () => {
  const { enabled } = parseProviders(
    { providers: [spec({ id: "a" })] },
    envOf({ A_KEY: "sk-very-secret" }),
  );
  const { key, ...rest } = enabled[0];
  assert.equal(key, "sk-very-secret");
  assert.ok(!JSON.stringify(rest).includes("sk-very-secret"));
});

// --- upstream names ----------------------------------------------------------------------

function named(p: Partial<ProviderSpec>): ProviderSpec {
  const { enabled } = parseProviders(
    { providers: [spec({ id: "p", ...p })] },
    envOf({ P_KEY: "k" }),
  );
  return enabled[0];
}

Deno.test("providers: wildcard '*' serves every slug under its template", () => {
  const p = named({ serves: ["*"], upstreamName: "{slug}" });
  assert.equal(upstreamNameFor(p, "openai/gpt-4o-mini"), "openai/gpt-4o-mini");
  assert.equal(upstreamNameFor(p, "meta-llama/llama-3.1-8b"), "meta-llama/llama-3.1-8b");
});

Deno.test("providers: 'vendor/*' serves only that vendor", () => {
  const p = named({ serves: ["openai/*"] });
  assert.equal(upstreamNameFor(p, "openai/gpt-4o-mini"), "gpt-4o-mini");
  assert.equal(upstreamNameFor(p, "anthropic/claude-sonnet-4.5"), undefined);
  assert.equal(upstreamNameFor(p, "openai-ish/model"), undefined, "prefix match stops at '/'");
});

Deno.test("providers: a ':variant' slug is served only by a provider that takes the whole slug", () => {
  const vendor = named({ serves: ["openai/*"] });
  assert.equal(upstreamNameFor(vendor, "openai/gpt-4o-mini:batch"), undefined);
  assert.equal(upstreamNameFor(vendor, "openai/gpt-oss-20b:free"), undefined);
  const aggregator = named({ serves: ["*"], upstreamName: "{slug}" });
  assert.equal(upstreamNameFor(aggregator, "openai/gpt-4o-mini:batch"), "openai/gpt-4o-mini:batch");
  // An operator's explicit mapping still wins.
  const mapped = named({ serves: ["openai/*"], models: { "openai/x:batch": "x-batch" } });
  assert.equal(upstreamNameFor(mapped, "openai/x:batch"), "x-batch");
});

Deno.test("providers: an exact slug is served; others are not", () => {
  const p = named({ serves: ["openai/gpt-4o-mini"] });
  assert.equal(upstreamNameFor(p, "openai/gpt-4o-mini"), "gpt-4o-mini");
  assert.equal(upstreamNameFor(p, "openai/gpt-4o"), undefined);
});

Deno.test("providers: an explicit model mapping wins over the template, even unserved", () => {
  const p = named({
    serves: ["openai/*"],
    models: { "openai/gpt-4o-mini": "my-deployment-1", "x/y": "z-upstream" },
    nameReplace: [["-", "_"]],
  });
  assert.equal(upstreamNameFor(p, "openai/gpt-4o-mini"), "my-deployment-1");
  assert.equal(upstreamNameFor(p, "x/y"), "z-upstream");
  assert.equal(upstreamNameFor(p, "openai/gpt-4o"), "gpt_4o");
});

Deno.test("providers: template placeholders {slug} {vendor} {model}", () => {
  const p = named({ serves: ["*"], upstreamName: "{vendor}--{model}--{slug}" });
  assert.equal(upstreamNameFor(p, "acme/rocket-1"), "acme--rocket-1--acme/rocket-1");
});

Deno.test("providers: Anthropic's dots become dashes", () => {
  const p = named({ serves: ["anthropic/*"], nameReplace: [[".", "-"]] });
  assert.equal(upstreamNameFor(p, "anthropic/claude-sonnet-4.5"), "claude-sonnet-4-5");
  assert.equal(upstreamNameFor(p, "anthropic/claude-3.5-haiku"), "claude-3-5-haiku");
  assert.equal(upstreamNameFor(p, "anthropic/claude-opus-4"), "claude-opus-4");
});

Deno.test("providers: the bundled providers file parses and names models as documented", async () => {
  const env = envOf({ OPENAI_API_KEY: "a", ANTHROPIC_API_KEY: "b", OPENROUTER_API_KEY: "c" });
  const { enabled, disabled } = await loadProviders(undefined, env);
  assert.deepEqual(disabled, []);
  const byId = Object.fromEntries(enabled.map((p) => [p.id, p]));
  assert.ok(byId.openai && byId.anthropic && byId.openrouter);
  assert.equal(upstreamNameFor(byId.openai, "openai/gpt-4o-mini"), "gpt-4o-mini");
  assert.equal(upstreamNameFor(byId.openai, "anthropic/claude-sonnet-4.5"), undefined);
  assert.equal(
    upstreamNameFor(byId.anthropic, "anthropic/claude-sonnet-4.5"),
    "claude-sonnet-4-5",
  );
  // Older models whose API id the slug does not spell (no alias without a date, or a "-0").
  assert.equal(
    upstreamNameFor(byId.anthropic, "anthropic/claude-3-haiku"),
    "claude-3-haiku-20240307",
  );
  assert.equal(upstreamNameFor(byId.anthropic, "anthropic/claude-sonnet-4"), "claude-sonnet-4-0");
  assert.equal(upstreamNameFor(byId.anthropic, "anthropic/claude-opus-4"), "claude-opus-4-0");
  assert.equal(upstreamNameFor(byId.openrouter, "openai/gpt-4o-mini"), "openai/gpt-4o-mini");
  assert.equal(
    upstreamNameFor(byId.openrouter, "anthropic/claude-sonnet-4.5"),
    "anthropic/claude-sonnet-4.5",
  );
  // First-party providers go before the aggregator.
  assert.ok(enabled.indexOf(byId.openai) < enabled.indexOf(byId.openrouter));
  assert.ok(enabled.indexOf(byId.anthropic) < enabled.indexOf(byId.openrouter));
});

Deno.test("providers: the bundled file with no keys disables everything", async () => {
  const { enabled, disabled } = await loadProviders(undefined, () => undefined);
  assert.deepEqual(enabled, []);
  assert.deepEqual(disabled.sort(), ["anthropic", "openai", "openrouter"]);
});

Deno.test("providers: a providers file given by path is read", async () => {
  const path = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(path, JSON.stringify({ providers: [spec({ id: "a" })] }));
    const { enabled } = await loadProviders(path, envOf({ A_KEY: "k" }));
    assert.deepEqual(enabled.map((p) => p.id), ["a"]);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("providers: a price override replaces the prices it names, the catalogue's stand for the rest", async () => {
  const { Catalogue } = await import("../catalogue/catalogue.ts");
  const { pricesFor } = await import("../pipeline/pipeline.ts");
  const catalogue = await Catalogue.load();
  const model = catalogue.resolve("openai/gpt-4o-mini")!;
  const { enabled } = parseProviders({
    providers: [spec({ id: "a", prices: { "openai/gpt-4o-mini": { prompt: "0.00001" } } })],
  }, envOf({ A_KEY: "k" }));
  const c = { provider: enabled[0], protocol: "openai-chat", upstreamModel: "m" } as Parameters<
    typeof pricesFor
  >[0];
  const table = pricesFor(c, model, catalogue);
  assert.equal(table.prompt, "0.00001");
  assert.equal(table.completion, model.pricing.completion);
  assert.ok(Number(table.completion) > 0);
});

Deno.test("providers: extra header names are lower-cased, so a call's own headers replace them", () => {
  const p = named({ headers: { "X-Title": "Tollgate", Authorization: "Bearer stale" } });
  assert.deepEqual(p.headers, { "x-title": "Tollgate", authorization: "Bearer stale" });
  const sent = PROTOCOL["openai-chat"].headers({ ...p, key: "k" } as never, new Headers());
  assert.deepEqual(sent, {
    "x-title": "Tollgate",
    authorization: "Bearer k",
    "content-type": "application/json",
  });
});

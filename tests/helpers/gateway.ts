/**
 * A real gateway for integration tests: the mock upstream on a free port, the gateway on
 * another (Deno.serve, real HTTP), a fresh store (PGlite in memory, or a scratch PostgreSQL
 * database when DATABASE_URL is set) and an account with a key.
 */
import assert from "node:assert/strict";
import { type Config, parseConfig } from "../../src/config.ts";
import { buildGateway, type Gateway, type QuotaKind } from "../../src/server.ts";
import { type MockServer, startMock } from "../../src/providers/mock/server.ts";
import { rubToNano } from "../../src/billing/money.ts";
import { generateKey } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";
import { testStores } from "./store.ts";

export interface TestGateway {
  /** e.g. http://127.0.0.1:PORT (the service root). */
  url: string;
  /** `${url}/v1`, what the OpenAI SDK takes as baseURL. */
  baseURL: string;
  key: string;
  accountId: string;
  store: Store;
  mock: MockServer;
  gw: Gateway;
  /** A further account with its own key. */
  account(
    balanceRub: string,
    opts?: { defaultModel?: string },
  ): Promise<{ accountId: string; key: string }>;
  /** Waits until every settlement started so far has landed. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface GatewayOptions {
  balanceRub?: string;
  /** Providers file contents; default: the bundled one, every provider pointed at the mock. */
  providers?: unknown;
  config?: Record<string, string>;
  /** Provider keys to leave unset (disables those providers). */
  withoutKeys?: string[];
  /**
   * Where holds live. Default: `TEST_QUOTA` if set, else as production runs on that store —
   * leased on PostgreSQL; on PGlite in the store, one statement each (the embedded wallet,
   * `memory`, has tests of its own and runs the whole suite with TEST_QUOTA=memory).
   */
  quota?: QuotaKind;
  /** Another gateway's store, to run a second instance on it (left open at close). */
  store?: Store;
}

/** Provider keys and base URLs pointing every bundled provider at the mock. */
export function mockEnv(
  mockUrl: string,
  extra: Record<string, string> = {},
  without: string[] = [],
): Record<string, string> {
  const env: Record<string, string> = {
    OPENAI_API_KEY: "mock-openai-key",
    OPENAI_BASE_URL: `${mockUrl}/v1`,
    ANTHROPIC_API_KEY: "mock-anthropic-key",
    ANTHROPIC_BASE_URL: mockUrl,
    OPENROUTER_API_KEY: "mock-openrouter-key",
    OPENROUTER_BASE_URL: `${mockUrl}/v1`,
    MOCK_URL: mockUrl,
    ...extra,
  };
  for (const k of without) delete env[k];
  return env;
}

/** The gateway config of a test: free port, quiet, no key cache; a providers file if given. */
export async function testConfig(
  providers?: unknown,
  config?: Record<string, string>,
): Promise<{ cfg: Config; providersFile?: string }> {
  let providersFile: string | undefined;
  if (providers) {
    providersFile = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(providersFile, JSON.stringify(providers));
  }
  const cfg = parseConfig({
    PORT: "0",
    LOG_LEVEL: "error",
    KEY_CACHE_TTL_MS: "0",
    PROVIDERS_FILE: providersFile,
    ...config,
  });
  return { cfg, providersFile };
}

export async function startGateway(opts: GatewayOptions = {}): Promise<TestGateway> {
  const mock = startMock({ port: 0, hostname: "127.0.0.1" });
  const env = mockEnv(mock.url, {}, opts.withoutKeys);
  const { cfg, providersFile } = await testConfig(opts.providers, opts.config);
  const [, pg] = await testStores();
  const store = opts.store ?? await (pg ?? (await testStores())[0]).open();
  const gw = await buildGateway(cfg, {
    store,
    env: (n) => env[n],
    quota: opts.quota ?? (Deno.env.get("TEST_QUOTA") as QuotaKind | undefined) ??
      (pg ? "lease" : "store"),
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req, info) => gw.handler(req, { remoteAddr: (info.remoteAddr as Deno.NetAddr).hostname }),
  );
  const url = `http://127.0.0.1:${server.addr.port}`;

  const account = async (balanceRub: string, o: { defaultModel?: string } = {}) => {
    const a = await store.createAccount("test", 0n);
    if (balanceRub !== "0") await store.topup(a.id, rubToNano(balanceRub), `t-${a.id}`);
    if (o.defaultModel) await store.setDefaultModel(a.id, o.defaultModel);
    const k = await generateKey(cfg.KEY_PREFIX);
    await store.createKey(a.id, k.hash, k.display, "test");
    return { accountId: a.id, key: k.key };
  };
  const first = await account(opts.balanceRub ?? "1000");

  return {
    url,
    baseURL: `${url}/v1`,
    key: first.key,
    accountId: first.accountId,
    store,
    mock,
    gw,
    account,
    settled: () => gw.ctx.tracker.idle(),
    async close() {
      await server.shutdown();
      await gw.close();
      if (!opts.store) await store.close();
      await mock.close();
      if (providersFile) await Deno.remove(providersFile).catch(() => {});
    },
  };
}

/**
 * Every account's balance equals Σ its ledger, held equals Σ open holds + Σ leases, Σ debits
 * = Σ costs.
 */
export async function checkInvariants(store: Store, accountIds: string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const id of accountIds) {
    const a = await store.getAccount(id);
    if (!a) continue;
    const ledger = await store.listLedger(id);
    const sum = ledger.reduce((s, e) => s + e.amount, 0n);
    if (sum !== a.balance) problems.push(`${id}: balance ${a.balance} ≠ Σ ledger ${sum}`);
    const gens = [];
    let before: string | undefined;
    for (;;) {
      const page = await store.listGenerations(id, { limit: 100, before });
      gens.push(...page);
      if (page.length < 100) break;
      before = page.at(-1)!.id;
    }
    const held = gens.filter((g) => g.status === "running").reduce((s, g) => s + g.hold, 0n) +
      await store.leased(id);
    if (held !== a.held) problems.push(`${id}: held ${a.held} ≠ Σ open holds + leases ${held}`);
    const debits = ledger.filter((e) => e.kind === "debit").reduce((s, e) => s - e.amount, 0n);
    const costs = gens.reduce((s, g) => s + g.cost, 0n);
    if (debits !== costs) problems.push(`${id}: Σ debits ${debits} ≠ Σ generation costs ${costs}`);
    for (const g of gens) {
      if (g.status === "running") continue;
      const n = ledger.filter((e) => e.generationId === g.id).length;
      if (g.cost > 0n && n !== 1) problems.push(`${g.id}: ${n} debits for a settled generation`);
    }
  }
  return problems;
}

/**
 * The hold a request makes, learned from one call on a rich account of a gateway of its own
 * (the request is sent as given, with its body cancelled after the headers).
 */
export async function probeHold(body: unknown): Promise<bigint> {
  const probe = await startGateway({ quota: "memory" });
  try {
    const res = await fetch(`${probe.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${probe.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    await res.body?.cancel();
    await probe.settled();
    const [gen] = await probe.store.listGenerations(probe.accountId, { limit: 1 });
    return gen.hold;
  } finally {
    await probe.close();
  }
}

/** Roubles as the decimal text an account's balance is given in. */
export function rubText(nano: bigint): string {
  const digits = nano.toString().padStart(10, "0");
  return `${digits.slice(0, -9)}.${digits.slice(-9)}`;
}

/** What the account's generations hold: its `held` less what wallets lease (part of held). */
export async function heldByGenerations(store: Store, accountId: string): Promise<bigint> {
  const a = await store.getAccount(accountId);
  return a!.held - await store.leased(accountId);
}

/**
 * Runs `fn` against a fresh gateway, then waits for every settlement and checks the ledger
 * invariants of the first account and of every account the test made with `g.account`.
 */
export async function withGateway(
  fn: (g: TestGateway) => Promise<void>,
  opts: GatewayOptions = {},
): Promise<void> {
  const g = await startGateway(opts);
  const accounts = [g.accountId];
  const makeAccount = g.account;
  g.account = async (balance, o) => {
    const a = await makeAccount(balance, o);
    accounts.push(a.accountId);
    return a;
  };
  try {
    await fn(g);
    await g.settled();
    await g.mock.idle();
    await g.settled();
    assert.deepEqual(await checkInvariants(g.store, accounts), []);
  } finally {
    await g.close();
  }
}

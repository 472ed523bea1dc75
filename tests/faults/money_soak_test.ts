/**
 * A seeded soak of the money rules across the storage modes: several accounts and keys (some
 * with spend caps, some near an empty balance), concurrent requests on the three text
 * endpoints, streaming and not, with upstream errors, cuts, stalls, missing usage, failover,
 * clients leaving mid-stream, and top-ups and cap changes while the load runs. Once quiet,
 * the store itself must show: balance = opening + top-ups − debits, nothing held, one debit
 * per generation equal to its cost, a key's spend the sum of its generations' costs, nothing
 * left running, no balance below zero, and each answer's `usage.cost` equal to its debit.
 *
 * Modes: the embedded wallet and holds in the store on PGlite, always; two leasing instances
 * sharing PostgreSQL (and the Redis limiter) when DATABASE_URL (and REDIS_URL) are set.
 */
import assert from "node:assert/strict";
import { buildGateway, type Gateway, type QuotaKind } from "../../src/server.ts";
import { startMock } from "../../src/providers/mock/server.ts";
import { RedisLimiter } from "../../src/limits/redis.ts";
import { createLogger } from "../../src/lib/log.ts";
import { generateKey } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";
import { rubToNano } from "../../src/billing/money.ts";
import { mockEnv, testConfig } from "../helpers/gateway.ts";
import { testStores } from "../helpers/store.ts";
import { allGenerations, pool, readSse, rng, sleep } from "../helpers/faults.ts";
import { scratchDatabase } from "../helpers/store.ts";
import { journaled, spawnGateway, withGatewayProcesses } from "../helpers/process.ts";
import { waitFor } from "../helpers/time.ts";
import { openStore } from "../../src/store/mod.ts";
import { sweep } from "../../src/server.ts";
import { journalAfterMs } from "../../src/billing/journal.ts";
import postgres from "postgres";

type Obj = Record<string, unknown>;

const CHAT_MODEL = "openai/gpt-4o-mini";
const CLAUDE = "anthropic/claude-sonnet-4.5";

/** Every bundled provider on the mock, short timeouts, and a failing first choice for OpenAI's. */
async function providers(): Promise<unknown> {
  const file = JSON.parse(
    await Deno.readTextFile(new URL("../../config/providers.json", import.meta.url)),
  ) as { providers: Obj[] };
  const timeouts = { firstByteMs: 5_000, responseMs: 2_000, idleMs: 400, imagesMs: 120_000 };
  const bundled: Obj[] = file.providers.map((p) => ({ ...p, timeouts }));
  const flaky = {
    ...bundled.find((p) => p.id === "openai"),
    id: "flaky",
    priority: 1,
    headers: { "x-mock-error": "503" },
  };
  return { providers: [flaky, ...bundled] };
}

interface Instance {
  gw: Gateway;
  url: string;
  close(): Promise<void>;
}

async function instance(
  store: Store,
  mockUrl: string,
  quota: QuotaKind,
  providersFile: unknown,
): Promise<Instance> {
  const env = mockEnv(mockUrl);
  const { cfg, providersFile: file } = await testConfig(providersFile, {
    RATE_LIMIT_RPM: "100000",
    ACCOUNT_RATE_LIMIT_RPM: "100000",
    CANCEL_POLICY: "abort",
  });
  const redis = Deno.env.get("REDIS_URL");
  const log = createLogger("error");
  const limiter = redis && quota === "lease" ? await RedisLimiter.connect(redis, log) : undefined;
  const gw = await buildGateway(cfg, { store, env: (n) => env[n], quota, limiter, logger: log });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req, info) => gw.handler(req, { remoteAddr: (info.remoteAddr as Deno.NetAddr).hostname }),
  );
  return {
    gw,
    url: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      await server.shutdown();
      await gw.close();
      if (file) await Deno.remove(file).catch(() => {});
    },
  };
}

interface SoakKey {
  keyId: string;
  key: string;
}
interface SoakAccount {
  accountId: string;
  keys: SoakKey[];
}

type Endpoint = "chat" | "messages" | "responses";

interface Outcome {
  endpoint: Endpoint;
  stream: boolean;
  status: number;
  id: string | null;
  /** The `usage.cost` the client saw, in roubles, if it saw one. */
  cost?: number;
  plan: string;
}

function body(endpoint: Endpoint, content: string, stream: boolean, maxTokens?: number): Obj {
  switch (endpoint) {
    case "chat":
      return {
        model: CHAT_MODEL,
        stream,
        ...(maxTokens ? { max_tokens: maxTokens } : {}),
        messages: [{ role: "user", content }],
      };
    case "messages":
      return {
        model: CLAUDE,
        stream,
        max_tokens: maxTokens ?? 300,
        messages: [{ role: "user", content }],
      };
    case "responses":
      return {
        model: CHAT_MODEL,
        stream,
        ...(maxTokens ? { max_output_tokens: maxTokens } : {}),
        input: content,
      };
  }
}

const PATHS: Record<Endpoint, string> = {
  chat: "/v1/chat/completions",
  messages: "/v1/messages",
  responses: "/v1/responses",
};

/** The last `usage.cost` in a body or an SSE event (responses nests it under `response`). */
function costIn(o: unknown): number | undefined {
  if (!o || typeof o !== "object") return undefined;
  const x = o as Obj;
  const usage = (x.usage ?? (x.response as Obj | undefined)?.usage) as Obj | undefined;
  return typeof usage?.cost === "number" ? usage.cost : undefined;
}

/** One seeded request: what it asks the mock to do and how the client behaves. */
function plan(r: ReturnType<typeof rng>, i: number): {
  endpoint: Endpoint;
  stream: boolean;
  marker: string;
  leaveAfter?: number;
  /** The client gives up this soon, headers or not. */
  abortMs?: number;
  maxTokens?: number;
  name: string;
} {
  const endpoint = (["chat", "messages", "responses"] as const)[r.int(0, 2)];
  const stream = r.next() < 0.65;
  const tokens = r.int(3, 30);
  const every = r.int(0, 15);
  const k = r.int(1, Math.max(1, tokens - 1));
  const kinds = [
    "ok",
    "ok",
    "ok",
    "nousage",
    "cut",
    "fail",
    "stall",
    "error500",
    "error400",
    "leave",
    "leave",
    "cache",
    "abort",
  ];
  const kind = kinds[r.int(0, kinds.length - 1)];
  const base = `tokens=${tokens},every=${every},first=${r.int(0, 30)}`;
  const marker = {
    ok: base,
    nousage: `${base},usage=none`,
    cut: `${base},cut=${k}`,
    fail: `${base},fail=${k}`,
    stall: `${base},stall=${k}`,
    error500: `${base},error=500`,
    error400: `${base},error=400`,
    leave: `tokens=${tokens},every=${Math.max(every, 10)}`,
    cache: `${base},cache_read=${r.int(1, 500)},reasoning=${r.int(0, 20)}`,
    abort: `tokens=${tokens},every=${every},first=${r.int(0, 80)}`,
  }[kind]!;
  const maxTokens = r.next() < 0.7 ? r.int(50, 400) : undefined;
  return {
    endpoint,
    stream: kind === "leave" ? true : stream,
    marker,
    leaveAfter: kind === "leave" ? r.int(1, 4) : undefined,
    abortMs: kind === "abort" ? r.int(1, 60) : undefined,
    maxTokens,
    name: `#${i} ${endpoint} ${kind}`,
  };
}

async function send(
  base: string,
  key: string,
  p: ReturnType<typeof plan>,
  i: number,
): Promise<Outcome> {
  const content = `soak ${i} ${"lorem ipsum ".repeat(i % 7)}[[mock:${p.marker}]]`;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    authorization: `Bearer ${key}`,
  };
  if (p.endpoint === "messages") headers["anthropic-version"] = "2023-06-01";
  let res: Response;
  try {
    res = await fetch(base + PATHS[p.endpoint], {
      method: "POST",
      headers,
      body: JSON.stringify(body(p.endpoint, content, p.stream, p.maxTokens)),
      signal: p.abortMs === undefined ? undefined : AbortSignal.timeout(p.abortMs),
    });
  } catch {
    return { endpoint: p.endpoint, stream: p.stream, status: 0, id: null, plan: p.name };
  }
  const out: Outcome = {
    endpoint: p.endpoint,
    stream: p.stream,
    status: res.status,
    id: res.headers.get("x-generation-id"),
    plan: `${p.name} [${p.marker}]${p.stream ? " stream" : ""}`,
  };
  const isSse = (res.headers.get("content-type") ?? "").includes("text/event-stream");
  if (!isSse) {
    const text = await res.text().catch(() => "");
    try {
      out.cost = costIn(JSON.parse(text));
    } catch { /* not JSON */ }
    return out;
  }
  let events = 0;
  await readSse(res, (d) => {
    events++;
    if (d !== "[DONE]") {
      try {
        out.cost = costIn(JSON.parse(d)) ?? out.cost;
      } catch { /* not JSON */ }
    }
    return p.leaveAfter !== undefined && events >= p.leaveAfter;
  });
  return out;
}

/** What the store shows, once quiet: every money rule, per account and per key. */
async function moneyProblems(
  store: Store,
  accounts: SoakAccount[],
  funded: Map<string, bigint>,
  /** Keys whose cap no operator changed during the run. */
  fixedCaps: Map<string, bigint>,
): Promise<string[]> {
  const problems: string[] = [];
  for (const { accountId } of accounts) {
    const a = (await store.getAccount(accountId))!;
    const ledger = await store.listLedger(accountId);
    const gens = await allGenerations(store, accountId);
    const topups = ledger.filter((e) => e.kind === "topup").reduce((s, e) => s + e.amount, 0n);
    if (topups !== funded.get(accountId)) {
      problems.push(`${accountId}: top-ups ${topups} ≠ funded ${funded.get(accountId)}`);
    }
    const debits = ledger.filter((e) => e.kind === "debit");
    const others = ledger.filter((e) => e.kind !== "debit" && e.kind !== "topup");
    if (others.length > 0) problems.push(`${accountId}: unexpected entries ${others.length}`);
    const debited = debits.reduce((s, e) => s - e.amount, 0n);
    if (a.balance !== topups - debited) {
      problems.push(`${accountId}: balance ${a.balance} ≠ top-ups ${topups} − debits ${debited}`);
    }
    if (a.held !== 0n) problems.push(`${accountId}: held ${a.held} with nothing open`);
    // Below zero only by what costs went past their holds (the estimate fell short).
    const short = gens.reduce((s, g) => s + (g.cost > g.hold ? g.cost - g.hold : 0n), 0n);
    if (a.balance < -short) problems.push(`${accountId}: balance ${a.balance}, short ${short}`);
    const byGen = new Map<string, bigint[]>();
    for (const e of debits) {
      if (!e.generationId) problems.push(`${accountId}: debit ${e.id} of no generation`);
      else byGen.set(e.generationId, [...(byGen.get(e.generationId) ?? []), -e.amount]);
    }
    const ids = new Set(gens.map((g) => g.id));
    for (const id of byGen.keys()) {
      if (!ids.has(id)) problems.push(`${id}: debited, no generation`);
    }
    for (const g of gens) {
      if (g.status === "running") problems.push(`${g.id}: left running`);
      if (g.cost < 0n) problems.push(`${g.id}: cost ${g.cost}`);
      const d = byGen.get(g.id) ?? [];
      const want = g.cost > 0n ? [g.cost] : [];
      if (d.join() !== want.join()) {
        problems.push(`${g.id} (${g.status}): debits [${d}] for cost ${g.cost}`);
      }
    }
    for (const k of await store.listKeys(accountId)) {
      const spent = gens.filter((g) => g.keyId === k.id).reduce((s, g) => s + g.cost, 0n);
      if (k.spent !== spent) problems.push(`${k.id}: spent ${k.spent} ≠ Σ its costs ${spent}`);
      const short = gens.filter((g) => g.keyId === k.id)
        .reduce((s, g) => s + (g.cost > g.hold ? g.cost - g.hold : 0n), 0n);
      const cap = fixedCaps.get(k.id);
      if (cap !== undefined && k.spent > cap + short) {
        problems.push(`${k.id}: spent ${k.spent} past its cap ${cap} (short ${short})`);
      }
    }
  }
  return problems;
}

/**
 * Waits until generations `ids` are journaled in `store`: running rows with their cost so far.
 * The first checkpoint is due `journalAfterMs` after a generation opened, on the journal's next
 * tick; on a loaded machine its statement lands later.
 */
function journaledIn(store: Store, accountId: string, ids: string[]): Promise<true> {
  return waitFor(`generations ${ids.join(", ")} journaled`, async () => {
    for (const id of ids) {
      const g = await store.getGeneration(accountId, id);
      if (g?.status !== "running" || g.cost <= 0n) return undefined;
    }
    return true;
  }, 20_000);
}

/**
 * A third instance, a process of its own, is killed (SIGKILL) with streams in flight: some
 * journaled (open past `journalAfterMs`), some not. Once its leases expire (their expiry is
 * moved back: the 30 s pass at once), a peer's sweep bills the journaled ones at their last
 * checkpoint and gives the leases back.
 */
async function killedInstance(
  dbUrl: string,
  mockUrl: string,
  peers: Instance[],
  a: SoakAccount,
) {
  const ids: string[] = [];
  const dataDir = await Deno.makeTempDir();
  const proc = await spawnGateway(dataDir, mockUrl, {
    DATABASE_URL: dbUrl,
    REDIS_URL: Deno.env.get("REDIS_URL") ?? "",
    RATE_LIMIT_RPM: "0",
    ACCOUNT_RATE_LIMIT_RPM: "0",
  });
  try {
    const ask = (content: string) =>
      fetch(`http://127.0.0.1:${proc.port}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${a.keys[0].key}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: CHAT_MODEL,
          stream: true,
          max_tokens: 2000,
          messages: [{ role: "user", content }],
        }),
      });
    const long = await Promise.all(
      [0, 1, 2].map((i) => ask(`long ${i} [[mock:tokens=1000,every=20]]`)),
    );
    ids.push(...long.map((res) => res.headers.get("x-generation-id")!));
    const readers = long.map((res) => res.body!.getReader());
    const until = performance.now() + 2 * journalAfterMs + 700;
    while (performance.now() < until) await Promise.all(readers.map((r) => r.read()));
    // Read on until their checkpoints are in the store (a loaded machine writes them late).
    const reading = (async () => {
      while (!(await Promise.all(readers.map((r) => r.read()))).some((r) => r.done)) {
        /* the streams run on */
      }
    })().catch(() => {});
    await journaledIn(peers[0].gw.ctx.store, a.accountId, ids);
    const short = await ask("short [[mock:tokens=1000,every=20]]");
    await short.body!.getReader().read();
    proc.proc.kill("SIGKILL");
    await proc.proc.status;
    for (const r of readers) await r.cancel().catch(() => {});
    await reading;
    await short.body?.cancel().catch(() => {});
  } finally {
    try {
      proc.proc.kill("SIGKILL");
    } catch { /* dead already */ }
    await proc.proc.status;
    await proc.proc.stdout.cancel().catch(() => {});
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`UPDATE leases SET expires = now() - interval '1 second'
      WHERE instance <> ALL(${peers.map((p) => p.gw.ctx.quota.instance!)})`;
  } finally {
    await sql.end({ timeout: 5 });
  }
  await sweep(peers[0].gw.ctx, peers[0].gw.ctx.cfg.SWEEP_AFTER_MS);
  for (const id of ids) {
    const g = await peers[0].gw.ctx.store.getGeneration(a.accountId, id);
    assert.equal(g?.status, "interrupted", `${id}: swept`);
    assert.ok(g.cost > 0n, `${id}: billed at its checkpoint`);
  }
}

/**
 * An instance stalls past its leases (their expiry moved back) with streams in flight, and a
 * peer's sweep closes them as interrupted at their checkpoints; then the streams end, and their
 * real settlements replace the sweep's figures: the client's `usage.cost` is the debit.
 */
async function stalledInstance(
  dbUrl: string,
  stalled: Instance,
  peer: Instance,
  a: SoakAccount,
): Promise<Outcome[]> {
  const ids: string[] = [];
  const streams = [0, 1, 2].map(async (i): Promise<Outcome> => {
    const res = await fetch(`${stalled.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.keys[0].key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: CHAT_MODEL,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 2000,
        messages: [{
          role: "user",
          // 8 s and more: the streams outlast the wait for their checkpoints.
          content: `stalled ${i} [[mock:tokens=${400 + i * 20},every=20]]`,
        }],
      }),
    });
    const out: Outcome = {
      endpoint: "chat",
      stream: true,
      status: res.status,
      id: res.headers.get("x-generation-id"),
      plan: `stalled ${i}`,
    };
    if (out.id) ids.push(out.id);
    await readSse(res, (d) => {
      if (d === "[DONE]") return;
      out.cost = costIn(JSON.parse(d)) ?? out.cost;
    });
    return out;
  });
  await sleep(2 * journalAfterMs + 800);
  // Their checkpoints in the store (a loaded machine writes them late), then the stall.
  await waitFor("the stalled streams' responses", () => ids.length === 3 || undefined);
  await journaledIn(peer.gw.ctx.store, a.accountId, ids);
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`UPDATE leases SET expires = now() - interval '1 second'
      WHERE instance = ${stalled.gw.ctx.quota.instance!}`;
  } finally {
    await sql.end({ timeout: 5 });
  }
  const swept = await sweep(peer.gw.ctx, peer.gw.ctx.cfg.SWEEP_AFTER_MS);
  assert.ok(swept >= 3, `the stalled instance's streams were swept (${swept})`);
  return await Promise.all(streams);
}

async function soak(
  mode: "memory" | "store" | "lease",
  seed: number,
  requests: number,
  onPostgres = false,
): Promise<void> {
  const mock = startMock({ port: 0, hostname: "127.0.0.1" });
  const pgUrl = Deno.env.get("DATABASE_URL");
  // Leases are for PostgreSQL; holds in the store run on both.
  const scratch = (mode === "lease" || onPostgres) && pgUrl
    ? await scratchDatabase(pgUrl)
    : undefined;
  const store = scratch
    ? await openStore({ databaseUrl: scratch.url })
    : await (await testStores())[0].open();
  const file = await providers();
  const instances: Instance[] = [];
  try {
    instances.push(await instance(store, mock.url, mode, file));
    if (mode === "lease") instances.push(await instance(store, mock.url, mode, file));
    const r = rng(seed);
    const accounts: SoakAccount[] = [];
    const funded = new Map<string, bigint>();
    const fixedCaps = new Map<string, bigint>();
    const keyPrefix = instances[0].gw.ctx.cfg.KEY_PREFIX;
    const makeKey = async (accountId: string, cap?: bigint) => {
      const k = await generateKey(keyPrefix);
      const rec = await store.createKey(accountId, k.hash, k.display, "soak");
      if (cap !== undefined) await store.setKeyLimits(rec.id, { spend: cap });
      return { keyId: rec.id, key: k.key };
    };
    // Rich, modest, near zero (a few kopecks: most requests are refused), and one empty.
    for (const rub of ["5000", "300", "0.05", "0.003", "0"]) {
      const opening = rubToNano(rub);
      const a = await store.createAccount("soak", opening);
      funded.set(a.id, opening);
      const keys = [await makeKey(a.id), await makeKey(a.id, rubToNano("2"))];
      if (r.next() < 0.5) {
        keys.push(await makeKey(a.id, rubToNano("0.05")));
        fixedCaps.set(keys[2].keyId, rubToNano("0.05"));
      }
      accounts.push({ accountId: a.id, keys });
    }
    const outcomes = new Array<Outcome | undefined>(requests);
    const plans = Array.from({ length: requests }, (_, i) => plan(r, i));
    const picks = plans.map(() => {
      // Mostly the funded accounts: the near-empty ones are refused nearly always.
      const a = accounts[[0, 0, 0, 1, 1, 1, 2, 3, 4][r.int(0, 8)]];
      return { a, k: a.keys[r.int(0, a.keys.length - 1)], at: r.int(0, instances.length - 1) };
    });
    // Operator moves while the load runs: top-ups (one repeated: applied once) and caps.
    const ops = (async () => {
      for (let n = 0; n < 8; n++) {
        await sleep(150 + r.int(0, 250));
        const a = accounts[n % accounts.length];
        const amount = rubToNano(["0.01", "0.5", "1"][n % 3]);
        const { applied } = await store.topup(a.accountId, amount, `soak-${seed}-${n}`);
        if (applied) funded.set(a.accountId, funded.get(a.accountId)! + amount);
        await store.topup(a.accountId, amount, `soak-${seed}-${n}`);
        const k = a.keys[1];
        await store.setKeyLimits(k.keyId, { spend: n % 2 ? null : rubToNano("0.5") });
        for (const i of instances) {
          i.gw.ctx.quota.invalidate();
          i.gw.ctx.keyCache.clear();
        }
      }
    })();
    // Awaited after the load; a failure meanwhile is that await's, not an uncaught rejection
    // that would cancel the rest of the file.
    ops.catch(() => {});
    await pool(requests, 32, async (i) => {
      const { k, at } = picks[i];
      outcomes[i] = await send(instances[at].url, k.key, plans[i], i);
    });
    await ops;
    for (const i of instances) await i.gw.ctx.tracker.idle();
    await mock.idle();
    for (const i of instances) await i.gw.ctx.tracker.idle();
    for (const i of instances) await i.gw.ctx.quota.flush();
    if (mode === "lease" && scratch) {
      await killedInstance(scratch.url, mock.url, instances, accounts[0]);
      const late = await stalledInstance(scratch.url, instances[1], instances[0], accounts[0]);
      for (const o of late) {
        outcomes.push(o);
        picks.push({ a: accounts[0], k: accounts[0].keys[0], at: 1 });
      }
      for (const i of instances) await i.gw.ctx.tracker.idle();
      for (const i of instances) await i.gw.ctx.quota.flush();
    }

    // What each client saw is what its generation was debited.
    const seen: string[] = [];
    const byAccount = new Map(accounts.flatMap((a) => a.keys.map((k) => [k.key, a.accountId])));
    for (const [i, o] of outcomes.entries()) {
      if (!o) continue;
      if (o.status !== 200 && o.id) {
        // Refused or failed before the answer began: nothing was billed for it.
        const g = await store.getGeneration(byAccount.get(picks[i].k.key)!, o.id);
        if (g && g.cost !== 0n) seen.push(`${o.plan}: status ${o.status}, cost ${g.cost}`);
      }
      if (o.status !== 200 || !o.id || o.cost === undefined) continue;
      const g = await store.getGeneration(picks[i].a.accountId, o.id);
      if (!g) {
        seen.push(`${o.plan}: generation ${o.id} missing`);
        continue;
      }
      if (rubToNano(String(o.cost)) !== g.cost) {
        seen.push(`${o.plan}: client saw ${o.cost}, generation ${g.id} cost ${g.cost}`);
      }
      const got = await fetch(`${instances[i % instances.length].url}/v1/generations/${o.id}`, {
        headers: { authorization: `Bearer ${picks[i].k.key}` },
      });
      const shown = got.status === 200 ? (await got.json()).cost : await got.text();
      if (shown !== o.cost) seen.push(`${o.plan}: GET generation shows ${shown}, saw ${o.cost}`);
    }
    // Given back (leases too): nothing may stay held.
    for (const i of instances.splice(0)) await i.close();
    const problems = await moneyProblems(store, accounts, funded, fixedCaps);
    const statuses: Record<string, number> = {};
    for (const o of outcomes) if (o) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
    assert.deepEqual(
      [...seen, ...problems],
      [],
      `statuses ${JSON.stringify(statuses)}`,
    );
    assert.ok((statuses[200] ?? 0) > requests / 3, `enough served: ${JSON.stringify(statuses)}`);
    assert.ok((statuses[402] ?? 0) > 0, `some refused for funds: ${JSON.stringify(statuses)}`);
  } finally {
    for (const i of instances) await i.close().catch(() => {});
    await store.close();
    await scratch?.drop();
    await mock.close();
  }
}

Deno.test("money soak: the embedded wallet (PGlite, holds in memory, batched settlements)", async () => {
  await soak("memory", 1, 240);
});

Deno.test("money soak: holds in the store (PGlite)", async () => {
  await soak("store", 2, 240);
});

Deno.test({
  name: "money soak: holds in the store (PostgreSQL)",
  ignore: !Deno.env.get("DATABASE_URL"),
  fn: () => soak("store", 5, 240, true),
});

Deno.test({
  name: "money soak: two leasing instances sharing PostgreSQL",
  ignore: !Deno.env.get("DATABASE_URL"),
  fn: () => soak("lease", 3, 240),
});

Deno.test("money soak: the embedded gateway killed (SIGKILL) under load, then restarted", () =>
  withGatewayProcesses(async ({ spawn, inStore }) => {
    const gw = await spawn({ RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" });
    let stop = false;
    // Short calls (settled in batches, some in the batch a crash loses) and long streams
    // (journaled, billed at their checkpoint by the next start).
    const longIds: string[] = [];
    const load = Array.from({ length: 16 }, async (_, w) => {
      const r = rng(40 + w);
      for (let n = 0; !stop; n++) {
        const long = w < 3 && n === 0;
        // A long stream outlasts the wait for its checkpoint (50 s): the kill ends it.
        const marker = long
          ? "tokens=5000,every=10"
          : `tokens=${r.int(3, 20)},every=${r.int(0, 4)}`;
        try {
          const res = await fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json" },
            body: JSON.stringify({
              model: CHAT_MODEL,
              stream: long || r.next() < 0.5,
              max_tokens: long ? 6000 : 100,
              messages: [{ role: "user", content: `w${w} n${n} [[mock:${marker}]]` }],
            }),
          });
          if (long) longIds.push(res.headers.get("x-generation-id")!);
          await res.text();
        } catch { /* the process died */ }
      }
    });
    await sleep(2 * journalAfterMs + 900);
    // The long streams' checkpoints are in the store when it dies (late on a loaded machine).
    await waitFor("the long streams' responses", () => longIds.length === 3 || undefined);
    for (const id of longIds) await journaled(gw, id);
    gw.proc.kill("SIGKILL");
    await gw.proc.status;
    stop = true;
    await Promise.all(load);
    const next = await spawn({ SHUTDOWN_GRACE_MS: "0" });
    next.proc.kill("SIGTERM");
    await next.drain();
    await inStore(async (store) => {
      const account = { accountId: gw.accountId!, keys: [] };
      const opening = (await store.listLedger(gw.accountId!))
        .filter((e) => e.kind === "topup").reduce((s, e) => s + e.amount, 0n);
      assert.deepEqual(
        await moneyProblems(store, [account], new Map([[gw.accountId!, opening]]), new Map()),
        [],
      );
      const gens = await allGenerations(store, gw.accountId!);
      const swept = gens.filter((g) => g.status === "interrupted");
      assert.ok(swept.length >= 3, `the long streams were billed at restart (${swept.length})`);
      assert.ok(swept.every((g) => g.cost > 0n));
    });
  }));

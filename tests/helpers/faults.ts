/**
 * Infrastructure for the fault and load suite (tests/faults/, scripts/soak.ts): a gateway
 * built like tests/helpers/gateway.ts but open to an external store URL, a limiter and a
 * capturing logger; accounts funded to the nano-rouble; a bounded-concurrency pool; a seeded
 * PRNG; SSE reading; the end-of-scenario checks; and dedicated PostgreSQL and Redis server
 * processes that a test can stop and start without touching the machine's own.
 */
import assert from "node:assert/strict";
import { buildGateway, type Gateway } from "../../src/server.ts";
import { type MockDefaults, type MockServer, startMock } from "../../src/providers/mock/server.ts";
import { generateKey } from "../../src/store/keys.ts";
import { openStore } from "../../src/store/mod.ts";
import type { Generation, Store } from "../../src/store/store.ts";
import type { Limiter } from "../../src/limits/limiter.ts";
import type { Logger } from "../../src/lib/log.ts";
import { checkInvariants, mockEnv, testConfig } from "./gateway.ts";
import { testStores } from "./store.ts";

export { checkInvariants };

type Obj = Record<string, unknown>;

// ---- the gateway ---------------------------------------------------------------------------

export interface FaultGatewayOptions {
  /** Providers file contents; default: the bundled one, every provider pointed at the mock. */
  providers?: unknown;
  /** Env-style config overrides (RATE_LIMIT_RPM, CANCEL_POLICY, BODY_MAX_BYTES, …). */
  config?: Record<string, string>;
  /** Extra provider-side environment (keys and base URLs a custom providers file names). */
  env?: Record<string, string> | ((mockUrl: string) => Record<string, string>);
  /** Provider key variables to leave unset. */
  withoutKeys?: string[];
  /** A PostgreSQL URL to open the store on (e.g. a dedicated cluster); default a test store. */
  databaseUrl?: string;
  limiter?: Limiter;
  logger?: Logger;
  mockDefaults?: MockDefaults;
  /** Wraps the store the gateway uses (e.g. to make some calls fail); tests see the real one. */
  wrapStore?: (store: Store) => Store;
}

export interface FaultAccount {
  accountId: string;
  keyId: string;
  key: string;
}

export interface FaultGateway {
  url: string;
  baseURL: string;
  store: Store;
  mock: MockServer;
  gw: Gateway;
  /** The mock's provider key for the bundled `openai` provider. */
  openaiKey: string;
  /** Every account made through `account`, for the invariant check. */
  accounts: string[];
  /** A new account funded with `balance` nano-roubles (0 = nothing) and one key. */
  account(balance: bigint): Promise<FaultAccount>;
  /** A further key on an existing account. */
  key(accountId: string): Promise<{ keyId: string; key: string }>;
  settled(): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultGateway(opts: FaultGatewayOptions = {}): Promise<FaultGateway> {
  const mock = startMock({ port: 0, hostname: "127.0.0.1", defaults: opts.mockDefaults });
  const env = mockEnv(
    mock.url,
    typeof opts.env === "function" ? opts.env(mock.url) : opts.env,
    opts.withoutKeys,
  );
  let providersFile: string | undefined;
  let store: Store | undefined;
  let gw: Gateway | undefined;
  try {
    const made = await testConfig(opts.providers, opts.config);
    providersFile = made.providersFile;
    const cfg = made.cfg;
    if (opts.databaseUrl) store = await openStore({ databaseUrl: opts.databaseUrl });
    else {
      const stores = await testStores();
      store = await (stores[1] ?? stores[0]).open();
    }
    gw = await buildGateway(cfg, {
      store: opts.wrapStore ? opts.wrapStore(store) : store,
      env: (n) => env[n],
      limiter: opts.limiter,
      logger: opts.logger,
    });
    const theStore = store;
    const theGw = gw;
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      (req, info) => theGw.handler(req, { remoteAddr: (info.remoteAddr as Deno.NetAddr).hostname }),
    );
    const url = `http://127.0.0.1:${server.addr.port}`;
    const accounts: string[] = [];
    const key = async (accountId: string) => {
      const k = await generateKey(cfg.KEY_PREFIX);
      const rec = await theStore.createKey(accountId, k.hash, k.display, "fault");
      return { keyId: rec.id, key: k.key };
    };
    return {
      url,
      baseURL: `${url}/v1`,
      store: theStore,
      mock,
      gw: theGw,
      openaiKey: env.OPENAI_API_KEY,
      accounts,
      async account(balance: bigint) {
        const a = await theStore.createAccount("fault", 0n);
        if (balance > 0n) await theStore.topup(a.id, balance, `fault-${a.id}`);
        accounts.push(a.id);
        return { accountId: a.id, ...(await key(a.id)) };
      },
      key,
      settled: () => theGw.ctx.tracker.idle(),
      async close() {
        await server.shutdown();
        await theGw.close();
        await theStore.close();
        await mock.close();
        if (providersFile) await Deno.remove(providersFile).catch(() => {});
      },
    };
  } catch (e) {
    await gw?.close().catch(() => {});
    await store?.close().catch(() => {});
    await mock.close();
    if (providersFile) await Deno.remove(providersFile).catch(() => {});
    throw e;
  }
}

/** Runs `fn` on a fresh fault gateway and always closes it. */
export async function withFaultGateway<T>(
  opts: FaultGatewayOptions,
  fn: (g: FaultGateway) => Promise<T>,
): Promise<T> {
  const g = await startFaultGateway(opts);
  try {
    return await fn(g);
  } finally {
    await g.close();
  }
}

/** A providers file with only an `openai` provider (openai-chat/responses) on the mock. */
export function openaiOnly(
  timeouts: { firstByteMs: number; idleMs: number; imagesMs: number } = {
    firstByteMs: 5_000,
    idleMs: 300,
    imagesMs: 120_000,
  },
  over: Obj = {},
): Obj {
  return {
    providers: [{
      id: "openai",
      protocols: ["openai-chat", "openai-responses"],
      baseUrl: "https://api.openai.com/v1",
      baseUrlEnv: "OPENAI_BASE_URL",
      keyEnv: "OPENAI_API_KEY",
      priority: 10,
      serves: ["openai/*"],
      upstreamName: "{model}",
      timeouts,
      ...over,
    }],
  };
}

// ---- the end-of-scenario checks -------------------------------------------------------------

/** Every generation of an account, newest first. */
export async function allGenerations(store: Store, accountId: string): Promise<Generation[]> {
  const out: Generation[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await store.listGenerations(accountId, { limit: 100, before });
    out.push(...page);
    if (page.length < 100) return out;
    before = page.at(-1)!.id;
  }
}

/**
 * Waits for every settlement and the mock to go idle, then: the ledger invariants hold for
 * every account, no generation is left `running`, and nothing is held but leases.
 */
export async function assertSettledClean(g: FaultGateway, accounts = g.accounts): Promise<void> {
  await g.settled();
  await g.mock.idle();
  await g.settled();
  assert.deepEqual(await checkInvariants(g.store, accounts), []);
  for (const id of accounts) {
    const running = (await allGenerations(g.store, id)).filter((x) => x.status === "running");
    assert.deepEqual(running.map((x) => x.id), [], `no generation of ${id} left running`);
    // A leased wallet keeps its lease (part of held) until idle; nothing else may be held.
    const a = await g.store.getAccount(id);
    assert.equal(a!.held - await g.store.leased(id), 0n, `nothing held on ${id}`);
  }
}

// ---- requests ------------------------------------------------------------------------------

export function post(
  url: string,
  body: unknown,
  opts: { key?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  return fetch(url, {
    method: "POST",
    headers: { ...headers, ...opts.headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: opts.signal,
  });
}

/** Runs `fn(0 … n-1)` with at most `concurrency` in flight; results in index order. */
export async function pool<T>(
  n: number,
  concurrency: number,
  fn: (i: number) => Promise<T>,
): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
  return out;
}

/** A small seeded PRNG (mulberry32): the same seed, the same scenario. */
export function rng(seed: number): { next(): number; int(lo: number, hi: number): number } {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Reads an SSE body event by event; `onData` sees each `data:` payload and returns true to
 * stop reading (the body is then cancelled, as a disconnecting client would).
 */
export async function readSse(
  res: Response,
  onData: (data: string) => boolean | void = () => {},
): Promise<{ data: string[]; stopped: boolean; broken: boolean }> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  const data: string[] = [];
  let buf = "";
  try {
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch {
        return { data, stopped: false, broken: true };
      }
      if (r.done) return { data, stopped: false, broken: false };
      buf += dec.decode(r.value, { stream: true });
      for (let at = buf.search(/\r?\n\r?\n/); at >= 0; at = buf.search(/\r?\n\r?\n/)) {
        const block = buf.slice(0, at);
        buf = buf.slice(at).replace(/^\r?\n\r?\n/, "");
        const lines = block.split(/\r?\n/).filter((l) => l.startsWith("data:"));
        if (lines.length === 0) continue;
        const d = lines.map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        data.push(d);
        if (onData(d) === true) {
          await reader.cancel().catch(() => {});
          return { data, stopped: true, broken: false };
        }
      }
    }
  } finally {
    reader.releaseLock();
  }
}

// ---- processes -----------------------------------------------------------------------------

/** A TCP port nobody listens on right now. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function run(
  cmd: string,
  args: string[],
  asUser?: string,
): Promise<{ code: number; out: string }> {
  const [c, a] = asUser ? ["runuser", ["-u", asUser, "--", cmd, ...args]] : [cmd, args];
  const r = await new Deno.Command(c, { args: a, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

/**
 * A PostgreSQL cluster of the test's own (initdb in a temporary directory, a free port, trust
 * auth on 127.0.0.1), so it can be stopped and started without touching the machine's
 * server. Run as the `postgres` user when the test runs as root (initdb refuses root).
 */
export class PgCluster {
  private constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
    readonly asUser: string | undefined,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Why a cluster cannot be made here, or undefined when it can. */
  static async unavailable(): Promise<string | undefined> {
    if (Deno.build.os !== "linux") return "not on Linux";
    if (!(await PgCluster.#binDir())) return "no initdb under /usr/lib/postgresql/*/bin";
    if (Deno.uid() === 0) {
      const r = await run("id", ["-u", "postgres"]).catch(() => ({ code: 1, out: "" }));
      if (r.code !== 0) return "running as root and there is no postgres user to run initdb as";
    }
    return undefined;
  }

  static async #binDir(): Promise<string | undefined> {
    const found: string[] = [];
    try {
      for await (const e of Deno.readDir("/usr/lib/postgresql")) {
        try {
          await Deno.stat(`/usr/lib/postgresql/${e.name}/bin/initdb`);
          found.push(e.name);
        } catch { /* not a server install */ }
      }
    } catch {
      return undefined;
    }
    found.sort((a, b) => Number(b) - Number(a));
    return found.length > 0 ? `/usr/lib/postgresql/${found[0]}/bin` : undefined;
  }

  static async create(): Promise<PgCluster> {
    const bin = await PgCluster.#binDir();
    if (!bin) throw new Error("no initdb found");
    const dir = await Deno.makeTempDir({ prefix: "tollgate-pg-" });
    let asUser: string | undefined;
    if (Deno.uid() === 0) {
      asUser = "postgres";
      const uid = Number((await run("id", ["-u", "postgres"])).out.trim());
      const gid = Number((await run("id", ["-g", "postgres"])).out.trim());
      await Deno.chown(dir, uid, gid);
    }
    const c = new PgCluster(bin, dir, freePort(), asUser);
    const init = await run(
      `${bin}/initdb`,
      ["-D", `${dir}/data`, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"],
      asUser,
    );
    if (init.code !== 0) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw new Error(`initdb failed: ${init.out.slice(-500)}`);
    }
    await c.start();
    return c;
  }

  async start(): Promise<void> {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off ` +
      `-c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
    const r = await run(
      `${this.bin}/pg_ctl`,
      ["-D", `${this.dir}/data`, "-l", `${this.dir}/log`, "-o", opts, "-w", "-t", "30", "start"],
      this.asUser,
    );
    if (r.code !== 0) throw new Error(`pg_ctl start failed: ${r.out.slice(-500)}`);
  }

  async stop(mode: "fast" | "immediate" = "fast"): Promise<void> {
    const r = await run(
      `${this.bin}/pg_ctl`,
      ["-D", `${this.dir}/data`, "-m", mode, "-w", "-t", "30", "stop"],
      this.asUser,
    );
    if (r.code !== 0) throw new Error(`pg_ctl stop failed: ${r.out.slice(-500)}`);
  }

  /** Stops the server if it runs and removes its files. */
  async destroy(): Promise<void> {
    await run(
      `${this.bin}/pg_ctl`,
      ["-D", `${this.dir}/data`, "-m", "immediate", "-w", "stop"],
      this.asUser,
    ).catch(() => {});
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

/** A redis-server of the test's own on a free port (no persistence), killable and restartable. */
export class RedisServer {
  #proc: Deno.ChildProcess | undefined;
  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async unavailable(): Promise<string | undefined> {
    if (Deno.build.os !== "linux") return "not on Linux";
    try {
      const r = await run("redis-server", ["--version"]);
      return r.code === 0 ? undefined : "redis-server does not run";
    } catch {
      return "no redis-server on PATH";
    }
  }

  static async create(): Promise<RedisServer> {
    const r = new RedisServer(freePort());
    await r.start();
    return r;
  }

  get running(): boolean {
    return this.#proc !== undefined;
  }

  async start(): Promise<void> {
    if (this.#proc) return;
    this.#proc = new Deno.Command("redis-server", {
      args: [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const until = Date.now() + 10_000;
    for (;;) {
      if ((await this.cli("PING")).trim() === "PONG") return;
      if (Date.now() > until) throw new Error("redis-server did not start");
      await sleep(50);
    }
  }

  /** SIGSTOP / SIGCONT: connections stay open and nothing answers, as on a frozen host. */
  freeze(): void {
    this.#proc?.kill("SIGSTOP");
  }

  thaw(): void {
    this.#proc?.kill("SIGCONT");
  }

  /** SIGKILL: the server vanishes mid-load, as a crashed Redis would. */
  async kill(): Promise<void> {
    const p = this.#proc;
    if (!p) return;
    this.#proc = undefined;
    p.kill("SIGKILL");
    await p.status;
  }

  /** One redis-cli command against this server; its output ("" when unreachable). */
  async cli(...args: string[]): Promise<string> {
    try {
      const r = await run("redis-cli", ["-p", String(this.port), "--raw", ...args]);
      return r.code === 0 ? r.out : "";
    } catch {
      return "";
    }
  }

  async destroy(): Promise<void> {
    await this.kill();
  }
}

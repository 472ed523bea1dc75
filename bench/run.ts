/**
 * `deno task bench` (= `deno run -A bench/run.ts`): what Tollgate costs in latency, time to
 * first token, throughput, CPU and memory, measured in one run against
 *   direct      the mock upstream itself (no gateway),
 *   floor-pass  bench/floor_pass.ts: a minimal Deno proxy that hands the body through,
 *   floor-scan  bench/floor_scan.ts: the same with one JavaScript metering stage,
 *   tollgate    src/main.ts, metering into its store (embedded, or PostgreSQL + Redis when
 *               DATABASE_URL / REDIS_URL are set: a scratch database is created and dropped),
 *   portkey     npm:@portkey-ai/gateway under Node, when it installs;
 * and, only when named in --targets, the diagnostic `tollgate-nostore` (bench/tollgate_nostore.ts:
 * Tollgate's pipeline over a store that does no work).
 * The gateway under test runs on core 0; the mock, the load generators and this process on
 * core 1. Non-streaming load comes from `wrk` (installed with apt-get when missing), streams
 * from bench/loadgen.ts. Targets alternate within every point and each point is repeated;
 * the tables show medians. Results: bench/results/latest.{json,md} for a default or full run
 * of every point, bench/results/partial.{json,md} for any other (see `resultsName`).
 *
 * Flags: `USAGE` below (`deno task bench --help` prints it).
 */
import postgres from "postgres";
import type { Dist, LoadResult, Spec } from "./loadgen.ts";

// ---------------------------------------------------------------------------------------
// Options

type Mode = "quick" | "default" | "full";

interface Options {
  mode: Mode;
  reps: number;
  warmupS: number;
  durationS: number;
  targets?: string[];
  scenarios?: string[];
  concurrency?: number[];
  portkey: boolean;
  profile: boolean;
  nice: boolean;
  /** --reps, --warmup or --duration was given: not the mode's own measurement. */
  tuned: boolean;
}

const USAGE = `deno task bench [flags]   (bench/README.md has the details)
  (none)             every target at concurrency 1/32/256, 3 runs per point (~11 min);
                     writes bench/results/latest.{json,md}
  --quick            only the points the targets need, 1 run each (~1.5 min)
  --full             every scenario × concurrency × target, 3 runs of 3 s (~30 min)
  --reps=N --warmup=S --duration=S
  --targets=a,b      direct, floor-pass, floor-scan, tollgate, portkey, tollgate-nostore
  --scenarios=a,b    chat, chat-stream, messages-stream, cross-stream, chat-paced,
                     messages-paced, cross-paced
  --concurrency=1,32 instead of the mode's
  --no-portkey --no-nice
  --profile          Tollgate under --cpu-prof; where its time went is printed at the end
  A quick, narrowed, re-timed or profiled run writes bench/results/partial.* instead.
  DATABASE_URL and REDIS_URL set: Tollgate on a scratch PostgreSQL database and Redis.`;

function parseOptions(args: string[]): Options {
  const flag = (name: string) => args.includes(`--${name}`);
  const value = (name: string) => {
    const a = args.find((x) => x.startsWith(`--${name}=`));
    return a?.slice(name.length + 3);
  };
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const known =
    /^--(quick|full|no-portkey|no-nice|profile|(reps|warmup|duration|targets|scenarios|concurrency)=.+)$/;
  for (const a of args) {
    if (!known.test(a)) {
      console.error(`unknown argument ${a}`);
      Deno.exit(2);
    }
  }
  const mode: Mode = flag("quick") ? "quick" : flag("full") ? "full" : "default";
  const int = (name: string, dflt: number) => {
    const v = value(name);
    if (v === undefined) return dflt;
    if (!/^\d+$/.test(v) || Number(v) < 1) {
      console.error(`--${name} wants a whole number ≥ 1`);
      Deno.exit(2);
    }
    return Number(v);
  };
  return {
    mode,
    reps: int("reps", mode === "quick" ? 1 : 3),
    warmupS: int("warmup", 1),
    durationS: int("duration", mode === "full" ? 3 : 2),
    targets: value("targets")?.split(","),
    scenarios: value("scenarios")?.split(","),
    concurrency: value("concurrency")?.split(",").map(Number).filter((n) => n >= 1),
    portkey: !flag("no-portkey"),
    profile: flag("profile"),
    nice: !flag("no-nice"),
    tuned: ["reps", "warmup", "duration"].some((n) => value(n) !== undefined),
  };
}

/**
 * Where a run's results go: `latest` holds the last run of every point a mode measures (the
 * default or `--full`); a run narrowed to some targets, scenarios or concurrencies, a quick
 * one, one with its own repetitions or durations, or a profiled one writes `partial`, so an
 * A/B never replaces the figures the README quotes (it did once: a README table of "not
 * measured" rows).
 */
export function resultsName(
  o: Pick<
    Options,
    "mode" | "targets" | "scenarios" | "concurrency" | "portkey" | "profile" | "tuned"
  >,
): "latest" | "partial" {
  const narrowed = o.mode === "quick" || o.targets !== undefined || o.scenarios !== undefined ||
    o.concurrency !== undefined || !o.portkey || o.profile || o.tuned;
  return narrowed ? "partial" : "latest";
}

// ---------------------------------------------------------------------------------------
// Scenarios, targets and the matrix

interface Scenario {
  id: string;
  label: string;
  api: "chat" | "messages";
  stream: boolean;
  paced: boolean;
  /** A messages client on an OpenAI-chat upstream (Tollgate only). */
  cross: boolean;
}

const SCENARIOS: Scenario[] = [
  {
    id: "chat",
    label: "chat, non-streaming",
    api: "chat",
    stream: false,
    paced: false,
    cross: false,
  },
  {
    id: "chat-stream",
    label: "chat stream, 64 tokens, no delay",
    api: "chat",
    stream: true,
    paced: false,
    cross: false,
  },
  {
    id: "messages-stream",
    label: "messages stream, 64 tokens, no delay",
    api: "messages",
    stream: true,
    paced: false,
    cross: false,
  },
  {
    id: "cross-stream",
    label: "messages client → chat upstream, no delay",
    api: "messages",
    stream: true,
    paced: false,
    cross: true,
  },
  {
    id: "chat-paced",
    label: "chat stream, paced (100 ms, then 10 ms/token)",
    api: "chat",
    stream: true,
    paced: true,
    cross: false,
  },
  {
    id: "messages-paced",
    label: "messages stream, paced",
    api: "messages",
    stream: true,
    paced: true,
    cross: false,
  },
  {
    id: "cross-paced",
    label: "messages client → chat upstream, paced",
    api: "messages",
    stream: true,
    paced: true,
    cross: true,
  },
];
const scenario = (id: string) => SCENARIOS.find((s) => s.id === id)!;

const TARGETS = [
  "direct",
  "floor-pass",
  "floor-scan",
  "tollgate",
  "portkey",
  "tollgate-nostore",
] as const;
type TargetName = typeof TARGETS[number];
/** Diagnostic targets: only run when named in --targets (next to every `tollgate` point). */
const DIAGNOSTIC: TargetName[] = ["tollgate-nostore"];

interface Point {
  scenario: string;
  c: number;
  targets: TargetName[];
}

function matrix(mode: Mode): Point[] {
  const all = TARGETS.filter((t) => !DIAGNOSTIC.includes(t));
  if (mode === "quick") {
    return [
      { scenario: "chat", c: 1, targets: ["direct", "tollgate"] },
      { scenario: "chat", c: 32, targets: ["direct", "floor-pass", "tollgate", "portkey"] },
      { scenario: "chat-stream", c: 32, targets: all },
      {
        scenario: "messages-stream",
        c: 32,
        targets: ["direct", "floor-scan", "tollgate", "portkey"],
      },
      { scenario: "cross-stream", c: 32, targets: ["tollgate"] },
      { scenario: "chat-paced", c: 32, targets: ["direct", "tollgate"] },
      { scenario: "chat-paced", c: 256, targets: ["direct", "tollgate"] },
    ];
  }
  if (mode === "full") {
    const out: Point[] = [];
    for (const s of SCENARIOS) {
      for (const c of [1, 32, 256]) {
        out.push({ scenario: s.id, c, targets: s.cross ? ["tollgate"] : all });
      }
    }
    return out;
  }
  return [
    ...[1, 32, 256].map((c) => ({ scenario: "chat", c, targets: all })),
    { scenario: "chat-stream", c: 1, targets: ["direct", "floor-scan", "tollgate"] },
    ...[32, 256].map((c) => ({ scenario: "chat-stream", c, targets: all })),
    { scenario: "messages-stream", c: 32, targets: all },
    { scenario: "cross-stream", c: 32, targets: ["tollgate"] },
    ...[32, 256].map((c) => ({ scenario: "chat-paced", c, targets: all })),
    { scenario: "messages-paced", c: 32, targets: ["direct", "tollgate", "portkey"] },
    ...[32, 256].map((c) => ({
      scenario: "cross-paced",
      c,
      targets: ["tollgate"] as TargetName[],
    })),
  ];
}

// ---------------------------------------------------------------------------------------
// Small helpers: commands, /proc, ports

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const BENCH = `${ROOT}/bench`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = new TextEncoder();
const log = (s: string) => Deno.stderr.writeSync(enc.encode(s + "\n"));

async function sh(
  cmd: string[],
  opts: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      env: opts.env,
      cwd: opts.cwd,
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    }).output();
    const d = new TextDecoder();
    return { code: r.code, out: d.decode(r.stdout), err: d.decode(r.stderr) };
  } catch (e) {
    return { code: -1, out: "", err: String(e) };
  }
}

const which = async (name: string) => {
  const r = await sh(["sh", "-c", `command -v ${name}`]);
  return r.code === 0 ? r.out.trim() : undefined;
};

let CLK_TCK = 100;

function procStat(pid: number): string[] | undefined {
  try {
    const s = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return s.slice(s.lastIndexOf(")") + 2).split(" "); // fields from 3 (state) on
  } catch {
    return undefined;
  }
}

/** utime + stime of a process (all threads), ms. */
function cpuMs(pid: number): number {
  const f = procStat(pid);
  if (!f) return NaN;
  return (Number(f[11]) + Number(f[12])) * 1000 / CLK_TCK;
}

/** CPU of this process's waited-for children (cutime + cstime), ms. */
function childrenCpuMs(): number {
  const f = procStat(Deno.pid)!;
  return (Number(f[13]) + Number(f[14])) * 1000 / CLK_TCK;
}

/** Busy time of one core since boot (everything but idle and iowait), ms. */
function coreBusyMs(core: number): number {
  try {
    const m = Deno.readTextFileSync("/proc/stat").match(new RegExp(`^cpu${core} (.+)$`, "m"));
    if (!m) return NaN;
    const f = m[1].trim().split(/\s+/).map(Number);
    const busy = f[0] + f[1] + f[2] + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    return busy * 1000 / CLK_TCK;
  } catch {
    return NaN;
  }
}

function rssKiB(pid: number): number {
  try {
    const m = Deno.readTextFileSync(`/proc/${pid}/status`).match(/^VmRSS:\s+(\d+) kB/m);
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function waitPort(port: number, ms: number, alive: () => boolean): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end && alive()) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      return true;
    } catch {
      await sleep(100);
    }
  }
  return false;
}

/** Waits until these processes stop using CPU (≤ 10 ms in 150 ms), at most 3 s. */
async function quiesce(pids: number[]): Promise<void> {
  const total = () => pids.reduce((a, p) => a + (cpuMs(p) || 0), 0);
  const end = Date.now() + 3000;
  let prev = total();
  while (Date.now() < end) {
    await sleep(150);
    const cur = total();
    if (cur - prev <= 10) return;
    prev = cur;
  }
}

// ---------------------------------------------------------------------------------------
// Long-running processes

class Proc {
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  readonly lines: string[] = [];
  exited = false;
  #watchers: ((line: string) => void)[] = [];
  readonly done: Promise<Deno.CommandStatus>;

  constructor(readonly name: string, cmd: string[], env: Record<string, string>) {
    this.child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      env,
      cwd: ROOT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.pid = this.child.pid;
    this.done = this.child.status.then((s) => {
      this.exited = true;
      return s;
    });
    this.#pump(this.child.stdout);
    this.#pump(this.child.stderr);
  }

  async #pump(stream: ReadableStream<Uint8Array>) {
    let rest = "";
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      const parts = (rest + text).split("\n");
      rest = parts.pop()!;
      for (const line of parts) {
        // deno-lint-ignore no-control-regex
        const clean = line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").replace(/\r/g, "");
        this.lines.push(clean);
        if (this.lines.length > 200) this.lines.splice(0, 100);
        for (const w of this.#watchers) w(clean);
      }
    }
  }

  /** The first line (seen so far or later) matching `re`, or undefined after `ms`. */
  waitLine(re: RegExp, ms: number): Promise<string | undefined> {
    const seen = this.lines.find((l) => re.test(l));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const t = setTimeout(() => finish(undefined), ms);
      const w = (l: string) => re.test(l) && finish(l);
      const finish = (l: string | undefined) => {
        clearTimeout(t);
        this.#watchers = this.#watchers.filter((x) => x !== w);
        resolve(l);
      };
      this.#watchers.push(w);
      this.done.then(() => finish(undefined));
    });
  }

  tail(n = 15): string {
    return this.lines.slice(-n).join("\n");
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    try {
      this.child.kill("SIGTERM");
    } catch { /* gone */ }
    const t = setTimeout(() => {
      try {
        this.child.kill("SIGKILL");
      } catch { /* gone */ }
    }, 10_000);
    await this.done;
    clearTimeout(t);
  }
}

/**
 * The flags `deno task start` runs Tollgate with (deno.json): the benchmark measures the
 * gateway as it is started, its permissions (what it may do, e.g. lower its store thread's
 * priority) and GC settings included. The floors and the mock run on Deno's defaults.
 */
export function startFlagsOf(startTask: string): string[] {
  return startTask.split(/\s+/).filter((t) => t.startsWith("--"));
}

const startFlags = startFlagsOf(
  (JSON.parse(Deno.readTextFileSync(new URL("../deno.json", import.meta.url))) as {
    tasks: { start: string };
  }).tasks.start,
);

// ---------------------------------------------------------------------------------------
// Setup: wrk, taskset, Portkey

interface Env {
  /** Bench processes run at nice −10 (root only) so other jobs disturb them less. */
  nice: boolean;
  wrk?: string;
  wrkNote: string;
  pinned: boolean;
  pinNote: string;
  cores: number;
  cpuModel: string;
  denoVersion: string;
  nodeVersion?: string;
  wrkVersion?: string;
}

async function ensureWrk(): Promise<{ path?: string; note: string }> {
  const have = await which("wrk");
  if (have) return { path: have, note: "wrk found" };
  const apt = await which("apt-get");
  const root = Deno.uid?.() === 0;
  if (!apt || !root) {
    return {
      note: `wrk is missing and cannot be installed here (${!apt ? "no apt-get" : "not root"}); ` +
        "install it (`apt-get install wrk`); non-streaming load falls back to bench/loadgen.ts",
    };
  }
  log("setup: wrk is missing; installing it: apt-get update && apt-get install -y wrk");
  const env = { DEBIAN_FRONTEND: "noninteractive", PATH: Deno.env.get("PATH") ?? "" };
  const u = await sh(["apt-get", "update"], { env });
  const i = await sh(["apt-get", "install", "-y", "--no-install-recommends", "wrk"], { env });
  const path = await which("wrk");
  if (path) return { path, note: "wrk installed with apt-get by this run" };
  return {
    note: "apt-get install wrk failed (" + (i.err || u.err).trim().split("\n").slice(-1)[0] +
      "); non-streaming load falls back to bench/loadgen.ts",
  };
}

const PORTKEY_VERSION = "1.15.2";
/**
 * Portkey 1.15.2 declares "@hono/node-server": "^1.3.3", which resolves to a release whose
 * Response wrapper makes `response.headers` of a re-wrapped fetch response immutable; every
 * stream then fails with `TypeError: immutable` in Portkey's updateHeaders (Portkey-AI/gateway
 * issue #1389). @hono/node-server 2.1.8 carries the upstream fix (honojs/node-server#382), so
 * the install pins it with an npm override; Portkey's own code runs unmodified.
 */
const PORTKEY_OVERRIDES = { "@hono/node-server": "2.1.8" };

async function ensurePortkey(): Promise<{ script?: string; note: string }> {
  const node = await which("node"), npm = await which("npm");
  if (!node || !npm) return { note: "Portkey not run: node/npm are not installed" };
  const home = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  const dir = `${home}/tollgate-bench/portkey-${PORTKEY_VERSION}`;
  const script = `${dir}/node_modules/@portkey-ai/gateway/build/start-server.js`;
  const pkg = JSON.stringify(
    {
      name: "tollgate-bench-portkey",
      private: true,
      dependencies: { "@portkey-ai/gateway": PORTKEY_VERSION },
      overrides: PORTKEY_OVERRIDES,
    },
    null,
    2,
  );
  let current = "";
  try {
    current = await Deno.readTextFile(`${dir}/package.json`);
  } catch { /* first run */ }
  try {
    await Deno.stat(script);
    if (current === pkg) return { script, note: "" };
  } catch { /* install below */ }
  log(`setup: installing @portkey-ai/gateway@${PORTKEY_VERSION} with npm into ${dir}`);
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/package.json`, pkg);
  const r = await sh([npm, "install", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: dir });
  try {
    await Deno.stat(script);
    return { script, note: "" };
  } catch {
    return {
      note: "Portkey not run: npm install failed: " +
        (r.err.trim().split("\n").slice(-1)[0] || `exit ${r.code}`),
    };
  }
}

async function probeEnv(niceWanted: boolean): Promise<Env> {
  const cores = navigator.hardwareConcurrency;
  const tck = await sh(["getconf", "CLK_TCK"]);
  if (tck.code === 0 && /^\d+$/.test(tck.out.trim())) CLK_TCK = Number(tck.out.trim());
  let cpuModel = "";
  try {
    cpuModel = Deno.readTextFileSync("/proc/cpuinfo").match(/^model name\s*:\s*(.+)$/m)?.[1] ??
      "";
  } catch { /* not Linux */ }
  const taskset = await which("taskset");
  const pinned = !!taskset && cores >= 2;
  const pinNote = pinned
    ? "gateway under test on core 0; mock, load generators and the runner on core 1"
    : `not pinned (${!taskset ? "taskset is missing" : "fewer than 2 cores"}): figures are noisier`;
  const w = await ensureWrk();
  const node = await which("node");
  return {
    nice: niceWanted && Deno.uid() === 0 && !!(await which("nice")),
    wrk: w.path,
    wrkNote: w.note,
    pinned,
    pinNote,
    cores,
    cpuModel,
    denoVersion: Deno.version.deno,
    nodeVersion: node ? (await sh([node, "--version"])).out.trim() : undefined,
    wrkVersion: w.path
      ? (await sh([w.path, "--version"])).out.match(/^wrk \S+/)?.[0] ?? "wrk"
      : undefined,
  };
}

// ---------------------------------------------------------------------------------------
// Requests

const ZERO = "[[mock:tokens=64]]";
const PACED = "[[mock:tokens=64,first=100,every=10]]";

interface Req {
  path: string;
  headers: Record<string, string>;
  body: string;
}

function chatBody(model: string, s: Scenario): string {
  return JSON.stringify({
    model,
    max_tokens: 128,
    ...(s.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    messages: [{ role: "user", content: `Write a short story. ${s.paced ? PACED : ZERO}` }],
  });
}

function messagesBody(model: string, s: Scenario): string {
  return JSON.stringify({
    model,
    max_tokens: 128,
    ...(s.stream ? { stream: true } : {}),
    messages: [{ role: "user", content: `Write a short story. ${s.paced ? PACED : ZERO}` }],
  });
}

interface Target {
  name: TargetName;
  port: number;
  proc: Proc;
  /** Why a scenario cannot run on this target. */
  skip: Map<string, string>;
  request(s: Scenario): Req | undefined;
}

function upstreamRequest(s: Scenario, extra: Record<string, string> = {}): Req | undefined {
  if (s.cross) return undefined;
  if (s.api === "chat") {
    return {
      path: "/v1/chat/completions",
      headers: { authorization: "Bearer x", ...extra },
      body: chatBody("gpt-4o-mini", s),
    };
  }
  return {
    path: "/v1/messages",
    headers: { "x-api-key": "x", "anthropic-version": "2023-06-01", ...extra },
    body: messagesBody("claude-sonnet-4-5", s),
  };
}

function tollgateRequest(s: Scenario, key: string): Req {
  if (s.api === "chat") {
    return {
      path: "/v1/chat/completions",
      headers: { authorization: `Bearer ${key}` },
      body: chatBody("openai/gpt-4o-mini", s),
    };
  }
  return {
    path: "/v1/messages",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
    body: messagesBody(s.cross ? "openai/gpt-4o-mini" : "anthropic/claude-sonnet-4.5", s),
  };
}

/** One request through `target`, checked: 200 and a body with the first token and usage. */
async function probe(t: Target, s: Scenario): Promise<string | undefined> {
  const r = t.request(s);
  if (!r) return "not applicable";
  try {
    const res = await fetch(`http://127.0.0.1:${t.port}${r.path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...r.headers },
      body: r.body,
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    if (res.status !== 200) return `HTTP ${res.status}: ${text.slice(0, 200)}`;
    if (!text.includes("tok0")) return `no answer text in the body: ${text.slice(0, 200)}`;
    if (!text.includes("usage")) return "no usage in the body";
    return undefined;
  } catch (e) {
    return String(e);
  }
}

// ---------------------------------------------------------------------------------------
// One measurement

interface Run {
  target: TargetName;
  scenario: string;
  c: number;
  rep: number;
  tool: "wrk" | "loadgen";
  completed: number;
  errors: number;
  windowMs: number;
  rps: number;
  latency: Omit<Dist, "n">;
  ttfb?: Omit<Dist, "n">;
  ttft?: Omit<Dist, "n">;
  /** Target CPU over the window, ms per completed request. */
  cpuMsPerReq: number;
  /** Target CPU over the window, share of one core. */
  cpuCore: number;
  rssIdleMiB: number;
  rssMaxMiB: number;
  /** (max RSS in the window − idle RSS before it) / concurrency, MiB. */
  rssPerOpenMiB: number;
  /** CPU of mock + load generator on the client core, share of one core (approximate). */
  clientCore: number;
  /** Busy time of core 0 not spent by the target (other processes on the machine). */
  otherCore0: number;
  firstError?: string;
}

interface Ctx {
  opts: Options;
  env: Env;
  mock: Proc;
  mockPort: number;
}

function pin(ctx: Ctx | { env: Env }, core: number, cmd: string[]): string[] {
  const pinned = ctx.env.pinned ? ["taskset", "-c", String(core), ...cmd] : cmd;
  return ctx.env.nice ? ["nice", "-n", "-10", ...pinned] : pinned;
}

function rssSampler(pid: number) {
  const xs: number[] = [];
  const t = setInterval(() => xs.push(rssKiB(pid)), 100);
  return {
    stop() {
      clearInterval(t);
      xs.push(rssKiB(pid));
      return Math.max(...xs.filter((x) => x === x));
    },
  };
}

/**
 * The warm-up and window of a point. A paced stream lasts ~0.8 s, and c=256 keeps a slow
 * target's requests in flight for seconds: both get longer windows, so the count of
 * completions does not move in steps of `c`.
 */
function windowFor(opts: Options, s: Scenario, c: number): { warmupS: number; durationS: number } {
  if (s.paced) return { warmupS: opts.warmupS + 1, durationS: Math.ceil(opts.durationS * 1.5) };
  if (c >= 256) return { warmupS: opts.warmupS, durationS: 2 * opts.durationS };
  return { warmupS: opts.warmupS, durationS: opts.durationS };
}

async function measure(ctx: Ctx, t: Target, s: Scenario, c: number, rep: number): Promise<Run> {
  const req = t.request(s)!;
  const pids = [...new Set([t.proc.pid, ctx.mock.pid])];
  await quiesce(pids);
  const rssIdle = rssKiB(t.proc.pid);
  const base = { target: t.name, scenario: s.id, c, rep };
  const win = windowFor(ctx.opts, s, c);
  const useWrk = !s.stream && ctx.env.wrk !== undefined;
  if (useWrk) return await measureWrk(ctx, t, req, c, rssIdle, base, win, pids);
  return await measureLoadgen(ctx, t, req, c, rssIdle, base, win);
}

function finish(
  base: Pick<Run, "target" | "scenario" | "c" | "rep">,
  tool: Run["tool"],
  r: {
    completed: number;
    errors: number;
    windowMs: number;
    latency: Omit<Dist, "n">;
    ttfb?: Omit<Dist, "n">;
    ttft?: Omit<Dist, "n">;
    firstError?: string;
  },
  cpu: {
    target: number;
    mock: number;
    client: number;
    clientMs: number;
    windowMs: number;
    core0: number;
    onCore0: boolean;
  },
  c: number,
  rssIdle: number,
  rssMax: number,
): Run {
  const clientShare = (cpu.target === cpu.mock ? 0 : cpu.mock / cpu.windowMs) +
    cpu.client / cpu.clientMs;
  return {
    ...base,
    tool,
    completed: r.completed,
    errors: r.errors,
    windowMs: r.windowMs,
    rps: r.completed / (r.windowMs / 1000),
    latency: r.latency,
    ttfb: r.ttfb,
    ttft: r.ttft,
    cpuMsPerReq: r.completed > 0 ? cpu.target / r.completed : NaN,
    cpuCore: cpu.target / cpu.windowMs,
    rssIdleMiB: rssIdle / 1024,
    rssMaxMiB: rssMax / 1024,
    rssPerOpenMiB: (rssMax - rssIdle) / 1024 / c,
    clientCore: clientShare,
    otherCore0: Math.max(0, cpu.core0 - (cpu.onCore0 ? cpu.target : 0)) / cpu.windowMs,
    firstError: r.firstError,
  };
}

async function measureWrk(
  ctx: Ctx,
  t: Target,
  req: Req,
  c: number,
  rssIdle: number,
  base: Pick<Run, "target" | "scenario" | "c" | "rep">,
  win: { warmupS: number; durationS: number },
  pids: number[],
): Promise<Run> {
  const bodyFile = await Deno.makeTempFile({ prefix: "tollgate-bench-", suffix: ".json" });
  await Deno.writeTextFile(bodyFile, req.body);
  const env = {
    ...Deno.env.toObject(),
    BENCH_BODY_FILE: bodyFile,
    BENCH_HEADERS: Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join("\n"),
  };
  const url = `http://127.0.0.1:${t.port}${req.path}`;
  const wrk = (seconds: number) =>
    pin(ctx, 1, [
      ctx.env.wrk!,
      "-t1",
      `-c${c}`,
      `-d${seconds}s`,
      "--timeout",
      "10s",
      "-s",
      `${BENCH}/wrk.lua`,
      url,
    ]);
  try {
    await sh(wrk(win.warmupS), { env });
    // wrk leaves its last requests to the target when it stops: let them finish, so the
    // window's CPU is not charged with them.
    await quiesce(pids);
    const t0 = performance.now();
    const target0 = cpuMs(t.proc.pid), mock0 = cpuMs(ctx.mock.pid), kids0 = childrenCpuMs();
    const core00 = coreBusyMs(0);
    const sampler = rssSampler(t.proc.pid);
    const out = await sh(wrk(win.durationS), { env });
    const rssMax = sampler.stop();
    const t1 = performance.now();
    const target1 = cpuMs(t.proc.pid), mock1 = cpuMs(ctx.mock.pid), kids1 = childrenCpuMs();
    const core01 = coreBusyMs(0);
    const line = out.out.split("\n").find((l) => l.startsWith("WRKRESULT "));
    if (!line) throw new Error(`wrk failed: ${out.err || out.out}`);
    const w = JSON.parse(line.slice(10));
    const errors = w.connect + w.read + w.write + w.status + w.timeout;
    const ms = (us: number) => us / 1000;
    return finish(
      base,
      "wrk",
      {
        completed: w.requests - w.status,
        errors,
        windowMs: w.duration_us / 1000,
        latency: {
          p50: ms(w.p50_us),
          p90: ms(w.p90_us),
          p99: ms(w.p99_us),
          mean: ms(w.mean_us),
          max: ms(w.max_us),
        },
        firstError: errors ? `wrk errors: ${line.slice(10)}` : undefined,
      },
      {
        target: target1 - target0,
        mock: mock1 - mock0,
        client: kids1 - kids0,
        clientMs: t1 - t0,
        windowMs: t1 - t0,
        core0: core01 - core00,
        onCore0: t.name !== "direct",
      },
      c,
      rssIdle,
      rssMax,
    );
  } finally {
    await Deno.remove(bodyFile).catch(() => {});
  }
}

async function measureLoadgen(
  ctx: Ctx,
  t: Target,
  req: Req,
  c: number,
  rssIdle: number,
  base: Pick<Run, "target" | "scenario" | "c" | "rep">,
  win: { warmupS: number; durationS: number },
): Promise<Run> {
  const spec: Spec = {
    port: t.port,
    path: req.path,
    headers: req.headers,
    body: req.body,
    concurrency: c,
    warmupMs: win.warmupS * 1000,
    durationMs: win.durationS * 1000,
    marker: "tok0",
    drainMs: 3000,
    timeoutMs: 20_000,
  };
  const kids0 = childrenCpuMs();
  const tStart = performance.now();
  const cmd = pin(ctx, 1, [
    Deno.execPath(),
    "run",
    "-A",
    `${BENCH}/loadgen.ts`,
    JSON.stringify(spec),
  ]);
  const child = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const killer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, spec.warmupMs + spec.durationMs + 60_000);
  type Snap = { t: number; target: number; mock: number; core0: number };
  let w: Snap | undefined;
  let e: Snap | undefined;
  let sampler: ReturnType<typeof rssSampler> | undefined;
  let rssMax = NaN;
  let result: LoadResult | undefined;
  const snap = (): Snap => ({
    t: performance.now(),
    target: cpuMs(t.proc.pid),
    mock: cpuMs(ctx.mock.pid),
    core0: coreBusyMs(0),
  });
  const errText = new Response(child.stderr).text();
  let rest = "";
  for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + text).split("\n");
    rest = parts.pop()!;
    for (const line of parts) {
      if (line === "W") {
        w = snap();
        sampler = rssSampler(t.proc.pid);
      } else if (line === "E") {
        e = snap();
        rssMax = sampler?.stop() ?? NaN;
        sampler = undefined;
      } else if (line.startsWith("{")) {
        // NaN (an empty distribution) travels as null.
        result = JSON.parse(line, (_k, v) => v === null ? NaN : v);
      }
    }
  }
  sampler?.stop();
  await child.status;
  clearTimeout(killer);
  const tEnd = performance.now();
  const err = await errText;
  if (!result || !w || !e) throw new Error(`load generator failed: ${err.slice(-500)}`);
  const kids1 = childrenCpuMs();
  return finish(
    base,
    "loadgen",
    result,
    {
      target: e.target - w.target,
      mock: e.mock - w.mock,
      client: kids1 - kids0,
      clientMs: tEnd - tStart,
      windowMs: e.t - w.t,
      core0: e.core0 - w.core0,
      onCore0: t.name !== "direct",
    },
    c,
    rssIdle,
    rssMax,
  );
}

// ---------------------------------------------------------------------------------------
// Aggregation, targets, tables

interface Agg {
  target: TargetName;
  scenario: string;
  c: number;
  n: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  ttftP50?: number;
  ttftP99?: number;
  ttfbP50?: number;
  cpuMsPerReq: number;
  cpuCore: number;
  rssIdleMiB: number;
  rssMaxMiB: number;
  rssPerOpenMiB: number;
  clientCore: number;
  otherCore0: number;
  errors: number;
}

function median(xs: number[]): number {
  const s = xs.filter((x) => x === x).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function aggregate(runs: Run[]): Agg[] {
  const groups = new Map<string, Run[]>();
  for (const r of runs) {
    const k = `${r.scenario}|${r.c}|${r.target}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const out: Agg[] = [];
  for (const rs of groups.values()) {
    const m = (f: (r: Run) => number | undefined) => median(rs.map((r) => f(r) ?? NaN));
    const streaming = rs[0].ttft !== undefined;
    out.push({
      target: rs[0].target,
      scenario: rs[0].scenario,
      c: rs[0].c,
      n: rs.length,
      rps: m((r) => r.rps),
      p50: m((r) => r.latency.p50),
      p90: m((r) => r.latency.p90),
      p99: m((r) => r.latency.p99),
      ttftP50: streaming ? m((r) => r.ttft?.p50) : undefined,
      ttftP99: streaming ? m((r) => r.ttft?.p99) : undefined,
      ttfbP50: streaming ? m((r) => r.ttfb?.p50) : undefined,
      cpuMsPerReq: m((r) => r.cpuMsPerReq),
      cpuCore: m((r) => r.cpuCore),
      rssIdleMiB: m((r) => r.rssIdleMiB),
      rssMaxMiB: m((r) => r.rssMaxMiB),
      rssPerOpenMiB: m((r) => r.rssPerOpenMiB),
      clientCore: m((r) => r.clientCore),
      otherCore0: m((r) => r.otherCore0),
      errors: rs.reduce((a, r) => a + r.errors, 0),
    });
  }
  return out;
}

interface Check {
  id: string;
  what: string;
  value: number;
  unit: string;
  limit: string;
  met: boolean | null;
  detail: string;
}

function checks(aggs: Agg[]): Check[] {
  const get = (t: TargetName, s: string, c: number) =>
    aggs.find((a) => a.target === t && a.scenario === s && a.c === c);
  const out: Check[] = [];
  const add = (
    id: string,
    what: string,
    unit: string,
    limit: string,
    ok: (v: number) => boolean,
    v: number | undefined,
    detail: string,
  ) => {
    const value = v ?? NaN;
    out.push({ id, what, value, unit, limit, met: value === value ? ok(value) : null, detail });
  };
  const f = (x: number | undefined, d = 2) => (x === undefined || x !== x ? "–" : x.toFixed(d));

  const tg1 = get("tollgate", "chat", 1), d1 = get("direct", "chat", 1);
  add(
    "nonstream-c1-p50",
    "non-streaming c=1: added p50 over direct",
    "ms",
    "≤ 0.5 ms",
    (v) => v <= 0.5,
    tg1 && d1 ? tg1.p50 - d1.p50 : undefined,
    `tollgate ${f(tg1?.p50, 3)} ms, direct ${f(d1?.p50, 3)} ms`,
  );
  add(
    "nonstream-c1-p99",
    "non-streaming c=1: added p99 over direct",
    "ms",
    "≤ 3 ms",
    (v) => v <= 3,
    tg1 && d1 ? tg1.p99 - d1.p99 : undefined,
    `tollgate ${f(tg1?.p99, 3)} ms, direct ${f(d1?.p99, 3)} ms`,
  );
  const tg32 = get("tollgate", "chat", 32),
    fp32 = get("floor-pass", "chat", 32),
    pk32 = get("portkey", "chat", 32);
  add(
    "nonstream-c32-vs-floor",
    "non-streaming c=32: req/s vs floor-pass",
    "×",
    "≥ 0.50",
    (v) => v >= 0.5,
    tg32 && fp32 ? tg32.rps / fp32.rps : undefined,
    `tollgate ${f(tg32?.rps, 0)}/s, floor-pass ${f(fp32?.rps, 0)}/s`,
  );
  add(
    "nonstream-c32-vs-portkey",
    "non-streaming c=32: req/s vs Portkey",
    "×",
    "≥ 5",
    (v) => v >= 5,
    tg32 && pk32 ? tg32.rps / pk32.rps : undefined,
    `tollgate ${f(tg32?.rps, 0)}/s, portkey ${f(pk32?.rps, 0)}/s`,
  );

  for (
    const [s, base, limit] of [
      ["chat-stream", "chat-stream", 1.15],
      ["messages-stream", "messages-stream", 1.15],
      ["cross-stream", "chat-stream", 1.30],
    ] as const
  ) {
    const tg = get("tollgate", s, 32), fs = get("floor-scan", base, 32);
    add(
      `cpu-${s}`,
      `${s} c=32: CPU per stream vs floor-scan (${base})`,
      "×",
      `≤ ${limit.toFixed(2)}`,
      (v) => v <= limit,
      tg && fs ? tg.cpuMsPerReq / fs.cpuMsPerReq : undefined,
      `tollgate ${f(tg?.cpuMsPerReq)} ms, floor-scan ${f(fs?.cpuMsPerReq)} ms`,
    );
  }
  for (const s of ["chat-stream", "messages-stream"]) {
    const tg = get("tollgate", s, 32), pk = get("portkey", s, 32);
    add(
      `streams-${s}-vs-portkey`,
      `${s} c=32: streams/s vs Portkey`,
      "×",
      "≥ 1",
      (v) => v >= 1,
      tg && pk ? tg.rps / pk.rps : undefined,
      `tollgate ${f(tg?.rps, 0)}/s, portkey ${f(pk?.rps, 0)}/s`,
    );
  }
  for (const s of ["chat-paced", "messages-paced", "cross-paced"]) {
    const tg = get("tollgate", s, 32);
    const d = get("direct", s === "cross-paced" ? "chat-paced" : s, 32);
    if (!tg) continue;
    add(
      `ttft-${s}`,
      `${s} c=32: added time to first token p50`,
      "ms",
      "≤ 2 ms",
      (v) => v <= 2,
      tg && d ? tg.ttftP50! - d.ttftP50! : undefined,
      `tollgate ${f(tg?.ttftP50)} ms, direct ${f(d?.ttftP50)} ms`,
    );
  }
  const tp = get("tollgate", "chat-paced", 256), dp = get("direct", "chat-paced", 256);
  add(
    "paced-c256-streams",
    "chat-paced c=256: streams/s vs direct",
    "×",
    "≥ 0.85",
    (v) => v >= 0.85,
    tp && dp ? tp.rps / dp.rps : undefined,
    `tollgate ${f(tp?.rps, 0)}/s, direct ${f(dp?.rps, 0)}/s`,
  );
  add(
    "paced-c256-rss",
    "chat-paced c=256: RSS per open stream",
    "MiB",
    "≤ 0.8 MiB",
    (v) => v <= 0.8,
    tp?.rssPerOpenMiB,
    `peak ${f(tp?.rssMaxMiB, 1)} MiB, idle ${f(tp?.rssIdleMiB, 1)} MiB, 256 open`,
  );
  return out;
}

function fmt(x: number | undefined, d: number): string {
  if (x === undefined || x !== x) return "–";
  return x.toFixed(d);
}

function markdown(
  meta: Record<string, unknown>,
  aggs: Agg[],
  cs: Check[],
  notes: string[],
): string {
  const L: string[] = [];
  L.push(`# Tollgate benchmark`);
  L.push("");
  L.push(`Command: \`deno task bench${meta.flags ? " " + meta.flags : ""}\` — ${meta.date}`);
  L.push("");
  L.push(
    `Machine: ${meta.cores} cores (${meta.cpu}); Deno ${meta.deno}, Node ${meta.node ?? "–"}, ` +
      `${meta.wrk ?? "no wrk"}. ${meta.pinning}. Store: ${meta.store}. ` +
      `Mode ${meta.mode}: ${meta.reps} run(s) per point of ${meta.durationS} s after ${meta.warmupS} s ` +
      `of warm-up (c=256: ${2 * Number(meta.durationS)} s; paced streams: ` +
      `${Math.ceil(1.5 * Number(meta.durationS))} s after ${Number(meta.warmupS) + 1} s), ` +
      `targets alternating; medians shown.`,
  );
  L.push("");
  for (const n of notes) L.push(`- ${n}`);
  if (notes.length) L.push("");
  L.push("## Targets (Tollgate, same run)");
  L.push("");
  L.push("| target | measured | limit | | detail |");
  L.push("|---|---:|---|---|---|");
  for (const c of cs) {
    const v = c.value !== c.value
      ? "–"
      : c.unit === "×"
      ? `${c.value.toFixed(2)}×`
      : `${c.value.toFixed(c.unit === "MiB" ? 3 : 2)} ${c.unit}`;
    const mark = c.met === null ? "not measured" : c.met ? "met" : "**missed**";
    L.push(`| ${c.what} | ${v} | ${c.limit} | ${mark} | ${c.detail} |`);
  }
  L.push("");
  L.push("## Results");
  L.push("");
  L.push(
    "req/s counts completed requests (streams) per second; latency is to the last byte; TTFT is " +
      "the time to the first content token; CPU is the target process's user+system time over " +
      "the window per request; client core is mock + load generator (the ceiling check: " +
      "near 100 % means the client side, not the target, was the limit).",
  );
  L.push("");
  L.push(
    "| scenario | c | target | req/s | p50 ms | p90 ms | p99 ms | TTFT p50 ms | CPU ms/req | target core | RSS MiB | RSS/open MiB | client core | other load, core 0 | errors |",
  );
  L.push("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  const order = (a: Agg) =>
    SCENARIOS.findIndex((s) => s.id === a.scenario) * 1e6 + a.c * 10 + TARGETS.indexOf(a.target);
  for (const a of [...aggs].sort((x, y) => order(x) - order(y))) {
    L.push(
      `| ${a.scenario} | ${a.c} | ${a.target} | ${fmt(a.rps, 0)} | ${fmt(a.p50, 2)} | ${
        fmt(a.p90, 2)
      } | ` +
        `${fmt(a.p99, 2)} | ${fmt(a.ttftP50, 2)} | ${fmt(a.cpuMsPerReq, 3)} | ${
          fmt(a.cpuCore * 100, 0)
        } % | ` +
        `${fmt(a.rssMaxMiB, 0)} | ${
          a.c >= 32 && a.scenario.endsWith("paced") ? fmt(a.rssPerOpenMiB, 3) : "–"
        } | ` +
        `${fmt(a.clientCore * 100, 0)} % | ${fmt(a.otherCore0 * 100, 0)} % | ${a.errors} |`,
    );
  }
  L.push("");
  L.push("Scenarios:");
  for (const s of SCENARIOS) {
    if (aggs.some((a) => a.scenario === s.id)) L.push(`- \`${s.id}\`: ${s.label}`);
  }
  return L.join("\n") + "\n";
}

// ---------------------------------------------------------------------------------------
// CPU profile summary (--profile)

interface ProfNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

/** Where the time goes in a .cpuprofile: self time by function and by file, and the
 * inclusive time of Tollgate's own functions (src/). */
export function profileTop(profile: { nodes: ProfNode[] }, n = 25): string {
  const byId = new Map<number, ProfNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const c of node.children ?? []) parent.set(c, node.id);
  }
  const where = (node: ProfNode) => {
    const cf = node.callFrame;
    const file = cf.url.replace(`file://${ROOT}/`, "").replace(
      /^file:\/\/.*\/registry\.npmjs\.org\/([^/]+(?:\/[^/]+)?)\/.*$/,
      "npm:$1",
    ).replace(/^wasm:\/\/.*$/, "wasm");
    return {
      file: file || "(native)",
      fn: `${cf.functionName || "(anonymous)"} ${file}:${cf.lineNumber + 1}`,
    };
  };
  const self = new Map<string, number>(), byFile = new Map<string, number>();
  const incl = new Map<string, number>();
  let total = 0, idle = 0;
  for (const node of profile.nodes) {
    const h = node.hitCount ?? 0;
    if (h === 0) continue;
    if (node.callFrame.functionName === "(idle)") {
      idle += h;
      continue;
    }
    total += h;
    const w = where(node);
    self.set(w.fn, (self.get(w.fn) ?? 0) + h);
    byFile.set(w.file, (byFile.get(w.file) ?? 0) + h);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const a = byId.get(id)!;
      if (!a.callFrame.url.includes(`${ROOT}/src/`)) continue;
      const k = where(a).fn;
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + h);
    }
  }
  const pct = (h: number) => ((100 * h) / total).toFixed(1).padStart(5) + " %";
  const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
  const lines = [
    `busy samples ${total} (idle ${idle}); shares are of busy time`,
    "self time by function:",
  ];
  for (const [k, h] of top(self, n)) lines.push(`  ${pct(h)}  ${k}`);
  lines.push("self time by file / package:");
  for (const [k, h] of top(byFile, 20)) lines.push(`  ${pct(h)}  ${k}`);
  lines.push("inclusive time of src/ functions:");
  for (const [k, h] of top(incl, n)) lines.push(`  ${pct(h)}  ${k}`);
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------
// Main

async function main() {
  const opts = parseOptions(Deno.args);
  const env = await probeEnv(opts.nice);
  if (env.pinned) {
    // Keep the runner itself off the gateway's core.
    await sh(["taskset", "-a", "-p", "-c", "1", String(Deno.pid)]);
  }
  if (env.nice) await sh(["renice", "-n", "-10", "-p", String(Deno.pid)]);
  const notes: string[] = [env.wrkNote];
  if (env.nice) {
    notes.push(
      "every bench process runs at nice −10, so other jobs on the machine disturb it less (--no-nice to turn off)",
    );
  }
  let points = matrix(opts.mode);
  if (opts.scenarios) points = points.filter((p) => opts.scenarios!.includes(p.scenario));
  if (opts.concurrency) {
    // The mode's scenarios and targets, at these concurrencies instead.
    const byScenario = new Map<string, Set<TargetName>>();
    for (const p of points) {
      const set = byScenario.get(p.scenario) ?? new Set();
      for (const t of p.targets) set.add(t);
      byScenario.set(p.scenario, set);
    }
    points = [...byScenario].flatMap(([s, ts]) =>
      opts.concurrency!.map((c) => ({ scenario: s, c, targets: [...ts] }))
    );
  }
  const wanted = new Set<TargetName>(
    (opts.targets as TargetName[] | undefined) ?? TARGETS.filter((t) => !DIAGNOSTIC.includes(t)),
  );
  if (!opts.portkey) wanted.delete("portkey");
  for (const d of DIAGNOSTIC) {
    if (!opts.targets?.includes(d)) continue;
    for (const p of points) if (p.targets.includes("tollgate")) p.targets.push(d);
  }
  for (const p of points) p.targets = p.targets.filter((t) => wanted.has(t));
  points = points.filter((p) => p.targets.length > 0);
  const used = new Set(points.flatMap((p) => p.targets));

  let pk: { script?: string; note: string } = { note: "Portkey not run (--no-portkey)" };
  if (used.has("portkey")) {
    pk = await ensurePortkey();
    if (!pk.script) notes.push(pk.note);
    else {
      notes.push(
        `Portkey ${PORTKEY_VERSION} under Node ${env.nodeVersion}, installed with npm with the ` +
          `override @hono/node-server@${PORTKEY_OVERRIDES["@hono/node-server"]} (the published ` +
          "dependency range fails every stream with `TypeError: immutable`, Portkey-AI/gateway#1389)",
      );
    }
  }

  // Store: embedded, or a scratch PostgreSQL database (+ Redis) when DATABASE_URL is set.
  const dbUrl = Deno.env.get("DATABASE_URL");
  const redisUrl = Deno.env.get("REDIS_URL");
  let scratch: { admin: ReturnType<typeof postgres>; name: string; url: string } | undefined;
  if (dbUrl && used.has("tollgate")) {
    const admin = postgres(dbUrl, { max: 1, onnotice: () => {} });
    const name = `tollgate_bench_${Date.now().toString(36)}`;
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const u = new URL(dbUrl);
    u.pathname = `/${name}`;
    scratch = { admin, name, url: u.toString() };
  }
  const store = dbUrl
    ? `PostgreSQL (scratch database)${redisUrl ? " + Redis" : ""}`
    : "embedded (PGlite in a temporary DATA_DIR)";

  const dataDir = await Deno.makeTempDir({ prefix: "tollgate-bench-" });
  const profDir = `${BENCH}/results/profile`;
  if (opts.profile) {
    await Deno.remove(profDir, { recursive: true }).catch(() => {});
    await Deno.mkdir(`${profDir}/nostore`, { recursive: true });
  }
  const procs: Proc[] = [];
  const stopAll = async () => {
    await Promise.all(procs.map((p) => p.stop()));
  };
  let interrupted = false;
  const onSignal = async () => {
    if (interrupted) return;
    interrupted = true;
    log("interrupted: stopping everything");
    await stopAll();
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);

  try {
    const deno = Deno.execPath();
    const baseEnv = Deno.env.toObject();
    // Mock upstream on the client core.
    const mockPort = freePort();
    const mock = new Proc(
      "mock",
      pin({ env }, 1, [deno, "run", "-A", "src/providers/mock/main.ts"]),
      {
        ...baseEnv,
        MOCK_PORT: String(mockPort),
        MOCK_HOSTNAME: "127.0.0.1",
      },
    );
    procs.push(mock);
    if (!(await mock.waitLine(/listening on/, 60_000))) {
      throw new Error(`the mock upstream did not start:\n${mock.tail()}`);
    }
    const mockUrl = `http://127.0.0.1:${mockPort}`;
    const ctx: Ctx = { opts, env, mock, mockPort };
    const targets = new Map<TargetName, Target>();

    if (used.has("direct")) {
      targets.set("direct", {
        name: "direct",
        port: mockPort,
        proc: mock,
        skip: new Map(),
        request: (s) => upstreamRequest(s),
      });
    }
    for (const name of ["floor-pass", "floor-scan"] as const) {
      if (!used.has(name)) continue;
      const port = freePort();
      const p = new Proc(
        name,
        pin({ env }, 0, [deno, "run", "-A", `bench/${name.replace("-", "_")}.ts`]),
        {
          ...baseEnv,
          PORT: String(port),
          UPSTREAM_URL: mockUrl,
        },
      );
      procs.push(p);
      if (!(await p.waitLine(/listening on/, 60_000))) {
        throw new Error(`${name} did not start:\n${p.tail()}`);
      }
      targets.set(name, {
        name,
        port,
        proc: p,
        skip: new Map(),
        request: (s) => upstreamRequest(s),
      });
    }
    if (used.has("tollgate")) {
      const port = freePort();
      const flags = opts.profile ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
      const tgEnv: Record<string, string> = {
        ...baseEnv,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: "127.0.0.1",
        OPENAI_API_KEY: "x",
        OPENAI_BASE_URL: `${mockUrl}/v1`,
        ANTHROPIC_API_KEY: "x",
        ANTHROPIC_BASE_URL: mockUrl,
        OPENROUTER_API_KEY: "x",
        OPENROUTER_BASE_URL: `${mockUrl}/v1`,
        RATE_LIMIT_RPM: "0",
        ACCOUNT_RATE_LIMIT_RPM: "0",
        LOG_LEVEL: "warn",
        DEMO_BALANCE_RUB: "100000000",
      };
      delete tgEnv.PROVIDERS_FILE;
      if (scratch) tgEnv.DATABASE_URL = scratch.url;
      const p = new Proc(
        "tollgate",
        pin({ env }, 0, [deno, "run", ...startFlags, ...flags, "src/main.ts"]),
        tgEnv,
      );
      procs.push(p);
      const key = await p.waitLine(/^tg_[A-Za-z0-9]+$/, 120_000);
      if (!key) throw new Error(`Tollgate did not print a demo key:\n${p.tail()}`);
      if (!(await waitPort(port, 60_000, () => !p.exited))) {
        throw new Error(`Tollgate did not listen:\n${p.tail()}`);
      }
      targets.set("tollgate", {
        name: "tollgate",
        port,
        proc: p,
        skip: new Map(),
        request: (s) => tollgateRequest(s, key),
      });
    }
    if (used.has("tollgate-nostore")) {
      const port = freePort();
      const p = new Proc(
        "tollgate-nostore",
        pin({ env }, 0, [
          deno,
          "run",
          ...startFlags,
          ...(opts.profile ? ["--cpu-prof", `--cpu-prof-dir=${profDir}/nostore`] : []),
          "bench/tollgate_nostore.ts",
        ]),
        {
          ...baseEnv,
          PORT: String(port),
          OPENAI_API_KEY: "x",
          OPENAI_BASE_URL: `${mockUrl}/v1`,
          ANTHROPIC_API_KEY: "x",
          ANTHROPIC_BASE_URL: mockUrl,
          OPENROUTER_API_KEY: "x",
          OPENROUTER_BASE_URL: `${mockUrl}/v1`,
          RATE_LIMIT_RPM: "0",
          ACCOUNT_RATE_LIMIT_RPM: "0",
        },
      );
      procs.push(p);
      const key = await p.waitLine(/^tg_[A-Za-z0-9]+$/, 120_000);
      if (!key || !(await p.waitLine(/listening on/, 60_000))) {
        throw new Error(`tollgate-nostore did not start:\n${p.tail()}`);
      }
      targets.set("tollgate-nostore", {
        name: "tollgate-nostore",
        port,
        proc: p,
        skip: new Map(),
        request: (s) => tollgateRequest(s, key),
      });
    }
    if (used.has("portkey") && pk.script) {
      const port = freePort();
      const p = new Proc(
        "portkey",
        pin({ env }, 0, ["node", pk.script, `--port=${port}`, "--headless"]),
        { ...baseEnv, NODE_ENV: "production" },
      );
      procs.push(p);
      if (!(await waitPort(port, 60_000, () => !p.exited))) {
        notes.push(`Portkey did not start: ${p.tail(3).replace(/\n/g, " ")}`);
      } else {
        targets.set("portkey", {
          name: "portkey",
          port,
          proc: p,
          skip: new Map(),
          request: (s) =>
            upstreamRequest(s, {
              "x-portkey-provider": s.api === "chat" ? "openai" : "anthropic",
              "x-portkey-custom-host": `${mockUrl}/v1`,
            }),
        });
      }
    }

    // Check every (target, scenario) once before measuring.
    for (const p of points) {
      for (const name of p.targets) {
        const t = targets.get(name);
        if (!t || t.skip.has(p.scenario)) continue;
        const why = await probe(t, scenario(p.scenario));
        if (why) {
          t.skip.set(p.scenario, why);
          notes.push(`${name} cannot serve ${p.scenario}: ${why}`);
        }
      }
    }
    const plan: { p: Point; t: Target }[][] = [];
    for (let rep = 0; rep < opts.reps; rep++) {
      const round: { p: Point; t: Target }[] = [];
      points.forEach((p, i) => {
        const ts = p.targets.map((n) => targets.get(n)).filter((t): t is Target =>
          !!t && !t.skip.has(p.scenario)
        );
        const k = (rep + i) % Math.max(1, ts.length);
        for (const t of [...ts.slice(k), ...ts.slice(0, k)]) round.push({ p, t });
      });
      plan.push(round);
    }
    const total = plan.reduce((a, r) => a + r.length, 0);
    const seconds = plan.flat().reduce((a, { p }) => {
      const w = windowFor(opts, scenario(p.scenario), p.c);
      return a + 0.8 + w.warmupS + w.durationS;
    }, 0);
    log(
      `bench: ${total} measurements (${opts.mode}, ${opts.reps}× ${opts.durationS} s), ` +
        `about ${Math.ceil(seconds / 60)} min; ${env.pinNote}`,
    );
    const runs: Run[] = [];
    let done = 0;
    for (let rep = 0; rep < plan.length; rep++) {
      for (const { p, t } of plan[rep]) {
        const s = scenario(p.scenario);
        done++;
        try {
          const r = await measure(ctx, t, s, p.c, rep);
          runs.push(r);
          log(
            `[${done}/${total}] ${s.id} c=${p.c} ${t.name}: ${r.rps.toFixed(0)}/s ` +
              `p50 ${r.latency.p50.toFixed(2)} p99 ${r.latency.p99.toFixed(2)} ms` +
              (r.ttft ? ` ttft ${r.ttft.p50.toFixed(2)} ms` : "") +
              ` cpu ${r.cpuMsPerReq.toFixed(3)} ms/req (${(r.cpuCore * 100).toFixed(0)} %)` +
              ` client ${(r.clientCore * 100).toFixed(0)} %` +
              ` other@core0 ${(r.otherCore0 * 100).toFixed(0)} %` +
              (r.errors ? ` errors ${r.errors} (${r.firstError})` : ""),
          );
        } catch (e) {
          log(`[${done}/${total}] ${s.id} c=${p.c} ${t.name}: failed: ${e}`);
          notes.push(
            `${t.name} ${s.id} c=${p.c} rep ${rep + 1} failed: ${String(e).slice(0, 200)}`,
          );
        }
        for (const proc of procs) {
          if (proc.exited) throw new Error(`${proc.name} exited:\n${proc.tail()}`);
        }
      }
    }

    const aggs = aggregate(runs);
    const cs = checks(aggs);
    // The client ceiling: the direct figures show what mock + load generator carry on one core.
    for (const a of aggs) {
      if (a.target !== "direct" && a.clientCore > 0.95) {
        notes.push(
          `${a.target} ${a.scenario} c=${a.c}: the client core was ${
            (a.clientCore * 100).toFixed(0)
          } % busy, ` +
            "so this figure may be limited by mock + load generator, not by the target",
        );
      }
    }
    const busy = aggs.filter((a) => a.otherCore0 > 0.1);
    if (busy.length > 0) {
      notes.push(
        `other processes used core 0 during ${busy.length} of ${aggs.length} points ` +
          `(up to ${(Math.max(...busy.map((a) => a.otherCore0)) * 100).toFixed(0)} % of it): ` +
          "the machine was not quiet, so those figures understate the targets",
      );
    }
    const meta = {
      date: new Date().toISOString(),
      flags: Deno.args.join(" "),
      mode: opts.mode,
      reps: opts.reps,
      warmupS: opts.warmupS,
      durationS: opts.durationS,
      cores: env.cores,
      cpu: env.cpuModel,
      deno: env.denoVersion,
      node: env.nodeVersion,
      wrk: env.wrkVersion,
      pinning: env.pinNote,
      store,
      portkey: pk.script ? PORTKEY_VERSION : null,
    };
    const md = markdown(meta, aggs, cs, notes);
    await Deno.mkdir(`${BENCH}/results`, { recursive: true });
    const name = resultsName(opts);
    await Deno.writeTextFile(
      `${BENCH}/results/${name}.json`,
      JSON.stringify({ meta, notes, checks: cs, results: aggs, runs }, null, 2) + "\n",
    );
    await Deno.writeTextFile(`${BENCH}/results/${name}.md`, md);
    console.log(md);
    log(`written: bench/results/${name}.json, bench/results/${name}.md`);
  } finally {
    await stopAll();
    if (opts.profile) {
      try {
        for (
          const [dir, name] of [[profDir, "tollgate"], [`${profDir}/nostore`, "tollgate-nostore"]]
        ) {
          let files: Deno.DirEntry[] = [];
          try {
            files = [...Deno.readDirSync(dir)].filter((f) => f.name.endsWith(".cpuprofile"));
          } catch { /* that target did not run */ }
          for (const f of files) {
            const prof = JSON.parse(await Deno.readTextFile(`${dir}/${f.name}`));
            console.log(`\n${name} CPU profile ${dir}/${f.name}\n${profileTop(prof)}`);
          }
        }
      } catch (e) {
        log(`no CPU profile: ${e}`);
      }
    }
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    if (scratch) {
      await scratch.admin.unsafe(`DROP DATABASE IF EXISTS ${scratch.name} WITH (FORCE)`).catch(
        (e) => log(`could not drop ${scratch!.name}: ${e}`),
      );
      await scratch.admin.end();
    }
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
}

if (import.meta.main) await main();

import { startMock } from "../../src/providers/mock/server.ts";
import { openStore } from "../../src/store/mod.ts";
import type { Store } from "../../src/store/store.ts";

/**
 * The real gateway as a process of its own (`src/main.ts`) on the embedded store, pointed at a
 * mock upstream: for what only a whole process shows (signals, a crash, a restart).
 */

export interface GatewayProcess {
  proc: Deno.ChildProcess;
  port: number;
  /** The demo key and account, printed on the first start of a data directory only. */
  key?: string;
  accountId?: string;
  /** Drains the rest of stdout (until the process exits). */
  drain(): Promise<void>;
}

async function* lines(stream: ReadableStream<Uint8Array>) {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
    }
  }
}

/** Starts the gateway and waits until it listens. */
export async function spawnGateway(
  dataDir: string,
  mockUrl: string,
  env: Record<string, string> = {},
): Promise<GatewayProcess> {
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../../src/main.ts", import.meta.url).pathname],
    env: {
      DATA_DIR: dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      OPENAI_API_KEY: "mock-key",
      OPENAI_BASE_URL: `${mockUrl}/v1`,
      // The embedded store is the one inspected, whatever the suite runs on.
      DATABASE_URL: "",
      REDIS_URL: "",
      LOG_LEVEL: "error",
      ...env,
    },
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).spawn();
  let key: string | undefined, accountId: string | undefined, port = 0;
  const out = lines(proc.stdout);
  for await (const line of out) {
    if (!key && /^tg_[A-Za-z0-9]+$/.test(line)) key = line;
    accountId ??= /(acc_[A-Za-z0-9]+)/.exec(line)?.[1];
    const m = /^Listening on http:\/\/[^:]+:(\d+)/.exec(line);
    if (m) {
      port = Number(m[1]);
      break;
    }
  }
  if (!port) {
    try {
      proc.kill("SIGKILL");
    } catch { /* already exited */ }
    await proc.status;
    throw new Error("the gateway exited before it listened");
  }
  return {
    proc,
    port,
    key,
    accountId,
    drain: async () => {
      for await (const _ of out) { /* until the process exits */ }
    },
  };
}

/** Kills the process if it still runs and waits for it. */
async function stopGateway(g: GatewayProcess): Promise<void> {
  try {
    g.proc.kill("SIGKILL");
  } catch { /* already exited */ }
  await g.proc.status;
  await g.proc.stdout.cancel().catch(() => {});
}

/**
 * Waits until generation `id` is journaled in the process's store: a running row there with
 * its cost so far (`GET /v1/generations/{id}` reads the store). Its first checkpoint is due
 * `journalAfterMs` after it opened, on the journal's next tick, and a loaded machine writes it
 * later than that: a test that kills the process to see the checkpoint billed waits for it
 * (with a stream that outlasts the wait: a busy process answers this slowly too).
 */
export async function journaled(
  g: GatewayProcess,
  id: string,
  key = g.key,
  ms = 40_000,
): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${g.port}/v1/generations/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const row = res.status === 200 ? await res.json() : await res.body?.cancel();
    if (row?.status === "running" && row.cost > 0) return;
    if (Date.now() > until) throw new Error(`generation ${id} not journaled within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A 50 s chat stream (5 000 tokens, one every 10 ms) on the demo key; 200 asserted. */
export async function longStream(g: GatewayProcess): Promise<{ res: Response; id: string }> {
  const res = await fetch(`http://127.0.0.1:${g.port}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "openai/gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "long [[mock:tokens=5000,every=10]]" }],
    }),
  });
  if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
  return { res, id: res.headers.get("x-generation-id")! };
}

/**
 * A mock upstream and a fresh data directory for gateway processes: `spawn` starts one there
 * (as often as the test likes, one after another), `inStore` opens the embedded store while
 * none runs. Every process is killed, the mock closed and the directory removed at the end.
 */
export async function withGatewayProcesses(
  fn: (h: {
    spawn: (env?: Record<string, string>) => Promise<GatewayProcess>;
    inStore: <T>(read: (store: Store) => Promise<T>) => Promise<T>;
  }) => Promise<void>,
): Promise<void> {
  const mock = startMock({ port: 0, hostname: "127.0.0.1" });
  const dataDir = await Deno.makeTempDir();
  const started: GatewayProcess[] = [];
  try {
    await fn({
      spawn: async (env) => {
        const g = await spawnGateway(dataDir, mock.url, env);
        started.push(g);
        return g;
      },
      inStore: async (read) => {
        const store = await openStore({ dataDir });
        try {
          return await read(store);
        } finally {
          await store.close();
        }
      },
    });
  } finally {
    for (const g of started) await stopGateway(g);
    await mock.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

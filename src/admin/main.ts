/**
 * `deno task admin …`: the operator CLI. Text by default, exactly one JSON object on stdout
 * with `--json`. Exit status: 0 done, 1 the command failed, 2 bad arguments (usage on stderr).
 *
 * It reaches the same store as the server:
 * - `DATABASE_URL` set: PostgreSQL directly (any number of processes may connect).
 * - embedded: PGlite's directory admits one process. If `DATA_DIR/server.json` names a
 *   server that answers, the command runs inside it (`POST /admin/v1/run`); otherwise the
 *   CLI takes `DATA_DIR/pg.lock` and opens the directory itself.
 */
import { parseConfig } from "../config.ts";
import { openStore } from "../store/mod.ts";
import type { Store } from "../store/store.ts";
import { type AdminReply, runAdmin } from "./commands.ts";
import type { OperatorReply } from "./operator_api.ts";
import { acquireDirLock, readServerFile } from "./server_file.ts";

/** How long the CLI waits for the server to run a command (they take milliseconds). */
const SERVER_TIMEOUT_MS = 30_000;

export interface CliIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

function processIo(): CliIo {
  return { env: Deno.env.toObject(), out: (t) => console.log(t), err: (t) => console.error(t) };
}

/** A failure of the command itself (as opposed to its arguments). */
type Failure = { ok: false; error: string; usage?: undefined };

export async function cli(args: string[], io: CliIo = processIo()): Promise<number> {
  const json = args.includes("--json");
  const argv = args.filter((a) => a !== "--json");
  let reply: AdminReply | Failure;
  try {
    const cfg = parseConfig(io.env);
    const keyPrefix = cfg.KEY_PREFIX;
    reply = cfg.DATABASE_URL
      ? await runLocal(() => openStore({ databaseUrl: cfg.DATABASE_URL }), argv, keyPrefix)
      : await runEmbedded(cfg.DATA_DIR, argv, keyPrefix);
  } catch (e) {
    reply = { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  if (reply.ok) {
    io.out(json ? JSON.stringify(reply.result) : reply.text);
    return 0;
  }
  // With --json a failure is one JSON object too, on standard output, as a success is; the
  // message (and the usage) still go to standard error for whoever reads the terminal.
  if (json) io.out(JSON.stringify({ ok: false, error: reply.error }));
  if (reply.usage !== undefined) {
    io.err(`error: ${reply.error}\n\n${reply.usage}`);
    return 2;
  }
  io.err(`error: ${reply.error}`);
  return 1;
}

async function runLocal(
  open: () => Promise<Store>,
  argv: string[],
  keyPrefix: string,
): Promise<AdminReply> {
  const store = await open();
  try {
    return await runAdmin(store, argv, { keyPrefix });
  } finally {
    await store.close();
  }
}

async function runEmbedded(
  dataDir: string,
  argv: string[],
  keyPrefix: string,
): Promise<AdminReply | Failure> {
  const server = await readServerFile(dataDir);
  if (server) {
    const reply = await askServer(server.url, server.token, argv);
    if (reply) return reply;
  }
  // No server answers: open the directory ourselves, unless some live process holds it.
  const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
  const dirExisted = await exists(dataDir);
  const fresh = !(await exists(`${dataDir}/pg`));
  const release = await acquireDirLock(dataDir);
  let lookedAmiss = false;
  try {
    return await runLocal(() => openStore({ dataDir }), argv, keyPrefix);
  } catch (e) {
    // A command that failed on a directory this very run created most likely looked in the
    // wrong place (a server started with another DATA_DIR): say where it looked.
    if (!fresh) throw e;
    lookedAmiss = true;
    const error = e instanceof Error ? e.message : String(e);
    throw new Error(
      `${error} (${dataDir} held no gateway data before this command: is DATA_DIR the gateway's?)`,
    );
  } finally {
    await release();
    // ...and leaves nothing there: an empty store in the wrong place would only mislead.
    if (lookedAmiss) {
      await (dirExisted
        ? Promise.all(
          [`${dataDir}/pg`, `${dataDir}/pg.lock`].map((p) => Deno.remove(p, { recursive: true })),
        )
        : Deno.remove(dataDir, { recursive: true })).catch(() => {});
    }
  }
}

/** The server's reply, or null when nothing listens there (a server.json left behind). */
async function askServer(
  url: string,
  token: string,
  argv: string[],
): Promise<AdminReply | Failure | null> {
  let res: Response;
  try {
    res = await fetch(new URL("/admin/v1/run", url), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ argv }),
      signal: AbortSignal.timeout(SERVER_TIMEOUT_MS),
    });
  } catch (e) {
    if (e instanceof TypeError) return null; // connection refused: no server there
    throw e;
  }
  const body = await res.json().catch(() => null) as OperatorReply | null;
  if (!body || typeof body.ok !== "boolean") {
    return { ok: false, error: `the server at ${url} answered ${res.status} without a reply` };
  }
  if (body.ok) return body;
  if (body.usage !== undefined) return { ok: false, error: body.error, usage: body.usage };
  const hint = res.status === 401 ? " (server.json is stale? restart the server)" : "";
  return { ok: false, error: `${body.error}${hint}` };
}

if (import.meta.main) Deno.exit(await cli(Deno.args));

/**
 * Coordination between the server and the admin CLI in embedded mode, where PGlite's
 * directory may be opened by one process only:
 *
 * - `DATA_DIR/server.json` (mode 0600): written by a running server — its pid, its loopback
 *   URL and a random operator token — so the CLI sends commands to it instead of opening the
 *   directory a second time.
 * - `DATA_DIR/pg.lock`: an OS file lock held by whichever process has `DATA_DIR/pg` open
 *   (the server, or the CLI when no server runs); the file holds that process's pid.
 */
import { join } from "node:path";
import { DATA_DIR_MODE } from "../lib/data_dir.ts";

export interface ServerInfo {
  pid: number;
  /** e.g. `http://127.0.0.1:8787` */
  url: string;
  /** The bearer token for `POST /admin/v1/run`. */
  token: string;
}

const SERVER_FILE = "server.json";

/**
 * The URL this machine's own processes reach a server on that listens on `host`: a wildcard
 * address is reached over loopback, a specific one (HOST=10.0.0.5, ::1) only on itself.
 */
export function localUrl(host: string, port: number): string {
  const h = host.replace(/^\[(.*)\]$/, "$1");
  const addr = h === "" || h === "0.0.0.0" || h === "localhost"
    ? "127.0.0.1"
    : h === "::"
    ? "::1"
    : h;
  return `http://${addr.includes(":") ? `[${addr}]` : addr}:${port}`;
}
const LOCK_FILE = "pg.lock";

/** Written atomically (temp file + rename) and readable by the owner only: it holds a token. */
export async function writeServerFile(dataDir: string, info: ServerInfo): Promise<void> {
  await Deno.mkdir(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const path = join(dataDir, SERVER_FILE);
  const tmp = `${path}.${Deno.pid}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(info) + "\n", { mode: 0o600 });
  await chmodOwnerOnly(tmp);
  await Deno.rename(tmp, path);
}

export async function removeServerFile(dataDir: string): Promise<void> {
  await removeIfPresent(join(dataDir, SERVER_FILE));
}

/** The running server's coordinates, or null when there is no (readable, well-formed) file. */
export async function readServerFile(dataDir: string): Promise<ServerInfo | null> {
  const text = await readIfPresent(join(dataDir, SERVER_FILE));
  if (text === null) return null;
  try {
    const v = JSON.parse(text);
    if (
      typeof v?.pid === "number" && typeof v.url === "string" && typeof v.token === "string"
    ) return { pid: v.pid, url: v.url, token: v.token };
  } catch {
    // A torn or foreign file counts as absent.
  }
  return null;
}

export class DirLockedError extends Error {
  override name = "DirLockedError";
}

/**
 * Takes an exclusive OS lock on `DATA_DIR/pg.lock` (flock / LockFileEx) for this process and
 * writes our pid into it; resolves to the release function. The OS drops the lock when the
 * process dies, so a crash never leaves a stale lock. Fails at once with a `DirLockedError`
 * naming the holder's pid when another process (or another open in this one) has it.
 */
export async function acquireDirLock(dataDir: string): Promise<() => Promise<void>> {
  await Deno.mkdir(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const path = join(dataDir, LOCK_FILE);
  const file = await Deno.open(path, { read: true, write: true, create: true, mode: 0o600 });
  let locked = false;
  try {
    locked = await file.tryLock(true);
    if (!locked) {
      // (Windows forbids reading a locked range: then the holder is "unknown".)
      const holder = (await readIfPresent(path).catch(() => null))?.trim() || "unknown";
      throw new DirLockedError(
        `${join(dataDir, "pg")} is in use by process ${holder} (a running server?); ` +
          "stop it first",
      );
    }
    await file.truncate(0);
    await file.write(new TextEncoder().encode(`${Deno.pid}\n`));
  } catch (e) {
    if (locked) await file.unlock();
    file.close();
    throw e;
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    await file.truncate(0);
    await file.unlock();
    file.close();
  };
}

async function chmodOwnerOnly(path: string): Promise<void> {
  if (Deno.build.os === "windows") return; // no POSIX modes; the file's ACL applies
  await Deno.chmod(path, 0o600);
}

async function readIfPresent(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

async function removeIfPresent(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

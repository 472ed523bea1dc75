/**
 * `POST /admin/v1/run`: the admin CLI's way in when the server owns the embedded store. It
 * answers loopback callers holding the token from `DATA_DIR/server.json` only.
 *
 * Request: `{"argv": ["balance", "--account", "acc_…"]}` with `authorization: Bearer <token>`.
 * Replies (JSON):
 * - 200 `{ok: true, result, text}`
 * - 400 `{ok: false, error, usage}`: bad arguments (the CLI exits 2)
 * - 404 / 422 / 500 `{ok: false, error}`: the command failed (the CLI exits 1)
 * - 401, 403, 405: refused before running anything (403 also to a request a proxy passed on).
 */
import type { Store } from "../store/store.ts";
import { NotFoundError } from "../store/errors.ts";
import { type AdminConfig, CommandError, runAdmin } from "./commands.ts";

/** An operator's argv is a few short words; anything larger is not from our CLI. */
const BODY_BYTES_MAX = 64 * 1024;

export type OperatorReply =
  | { ok: true; result: Record<string, unknown>; text: string }
  | { ok: false; error: string; usage?: string };

/**
 * The operator API's handler. `cfg.ran` is told after each command that ran (whatever its
 * outcome: a failure midway may have changed something), so the gateway can drop what it
 * keeps of the store's figures; a refused caller (not loopback, wrong token, a bad body or
 * command) changes nothing and costs nothing else: when every call emptied the key cache and the
 * wallet's figures, a flood of refused calls cut the gateway's throughput five times.
 */
export function createOperatorHandler(
  store: Store,
  cfg: AdminConfig & { token: string; ran?: () => void },
): (req: Request, remoteAddr: string) => Promise<Response> {
  const expected = sha256(cfg.token);
  return async (req, remoteAddr) => {
    if (!isLoopback(remoteAddr) || proxied(req.headers)) {
      return reply(403, { ok: false, error: "the operator API answers loopback callers only" });
    }
    const presented = /^Bearer (.+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
    if (!cfg.token || presented === undefined || !equal(await sha256(presented), await expected)) {
      return reply(401, { ok: false, error: "missing or wrong operator token" }, {
        "www-authenticate": "Bearer",
      });
    }
    if (req.method !== "POST") {
      return reply(405, { ok: false, error: "use POST" }, { allow: "POST" });
    }
    const argv = await readArgv(req);
    if (!argv) {
      return reply(400, { ok: false, error: 'the body must be {"argv": ["command", …]}' });
    }
    let ran = false;
    try {
      const r = await runAdmin(store, argv, cfg);
      ran = r.ok;
      return r.ok ? reply(200, r) : reply(400, { ok: false, error: r.error, usage: r.usage });
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      if (e instanceof NotFoundError) return reply(404, { ok: false, error });
      if (e instanceof CommandError || e instanceof RangeError) {
        return reply(422, { ok: false, error });
      }
      ran = true; // failed midway: what it changed is not known
      return reply(500, { ok: false, error });
    } finally {
      if (ran) cfg.ran?.();
    }
  };
}

async function readArgv(req: Request): Promise<string[] | null> {
  const text = await req.text();
  if (text.length > BODY_BYTES_MAX) return null;
  try {
    const body = JSON.parse(text);
    const argv = body?.argv;
    if (Array.isArray(argv) && argv.every((a) => typeof a === "string")) return argv;
  } catch {
    // not JSON
  }
  return null;
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (`::ffff:127.0.0.1`). */
export function isLoopback(addr: string): boolean {
  const a = addr.toLowerCase().replace(/^\[|\]$/g, "");
  if (a === "::1" || a === "0:0:0:0:0:0:0:1") return true;
  const v4 = a.startsWith("::ffff:") ? a.slice(7) : a;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/**
 * Headers a reverse proxy adds to what it passes on. A proxy on the same host connects from
 * loopback, so behind it every outside caller would pass the address check; the admin CLI
 * sends none of them. (A proxy that adds none cannot be told apart: the token still guards.)
 */
const PROXY_HEADERS = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip", "via"];

function proxied(headers: Headers): boolean {
  return PROXY_HEADERS.some((h) => headers.has(h));
}

async function sha256(s: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
}

/** Constant time: both sides are 32-byte digests, so neither length nor content leaks. */
function equal(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

function reply(status: number, body: OperatorReply, headers: Record<string, string> = {}) {
  return Response.json(body, { status, headers: { "cache-control": "no-store", ...headers } });
}

/**
 * GET /v1/files/{id}: a stored file (an image made in url mode). No key needed: the id is
 * 144 random bits, the link itself is the capability, and links are permanent (spec). The
 * bytes never change, so they are cached for a year. Unknown ids get the plain 404.
 */
import { renderNotFound } from "../http/envelopes.ts";
import { GatewayError } from "../http/gateway_error.ts";
import type { AppContext } from "../pipeline/context.ts";
import { FILE_ID, loadFile } from "../blobs/mod.ts";
import { blobsOf } from "./mod.ts";

export const FILES_PATH = "/v1/files/";

export async function handleFile(req: Request, rest: string, app: AppContext): Promise<Response> {
  const id = rest;
  if (!FILE_ID.test(id)) return renderNotFound();
  let found;
  try {
    found = await loadFile(blobsOf(app), app.store, id);
  } catch (e) {
    app.log.log("warn", "stored file could not be read", { error: (e as Error)?.message });
    throw new GatewayError(503, "file storage is unavailable; retry shortly", { retryAfter: 2 });
  }
  if (!found) return renderNotFound();
  const etag = `"${id}"`;
  const headers: Record<string, string> = {
    "content-type": found.row.contentType,
    "cache-control": "public, max-age=31536000, immutable",
    etag,
    "x-content-type-options": "nosniff",
    // A stored SVG opened directly must not run script or load anything.
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    "cross-origin-resource-policy": "cross-origin",
  };
  const inm = req.headers.get("if-none-match");
  if (inm && inm.split(",").some((t) => t.trim() === etag || t.trim() === "*")) {
    return new Response(null, { status: 304, headers });
  }
  headers["content-length"] = String(found.bytes.byteLength);
  return new Response(found.bytes as BodyInit, { headers });
}

/** The service root that links are built on: PUBLIC_BASE_URL, else the request's origin. */
export function publicBase(app: AppContext, req: Request): string {
  return (app.cfg.PUBLIC_BASE_URL ?? new URL(req.url).origin).replace(/\/+$/, "");
}

const LOOPBACK = ["localhost", "127.0.0.1", "[::1]"];

/**
 * The bases this gateway's own file links may carry for `req`: the public base and the
 * request's origin, and, reached on a loopback name, the other loopback names of that port
 * (a link made via `localhost` is as much ours via `127.0.0.1`).
 */
export function ownBases(app: AppContext, req: Request): string[] {
  const origin = new URL(req.url);
  const bases = [publicBase(app, req), origin.origin];
  if (LOOPBACK.includes(origin.hostname)) {
    for (const host of LOOPBACK) {
      bases.push(`${origin.protocol}//${host}${origin.port ? ":" + origin.port : ""}`);
    }
  }
  return [...new Set(bases)];
}

export function fileUrl(base: string, id: string): string {
  return `${base}${FILES_PATH}${id}`;
}

/** The file id when `url` is one of our own links (on any of `bases`), else undefined. */
export function ownFileId(url: string, bases: string[]): string | undefined {
  for (const base of bases) {
    const prefix = base + FILES_PATH;
    if (url.startsWith(prefix)) {
      const id = url.slice(prefix.length).replace(/[?#].*$/, "");
      return FILE_ID.test(id) ? id : undefined;
    }
  }
  return undefined;
}

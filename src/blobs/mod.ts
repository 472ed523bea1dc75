/**
 * Stored files (images in url mode): bytes in a BlobStore, metadata in the main store.
 * A file's id is its capability — 144 random bits, so links can be public and permanent.
 *
 * BLOB_URL selects the byte store:
 *   unset                       disk, under DATA_DIR/blobs
 *   file:///abs/path or a path  disk, there
 *   s3://bucket?endpoint=https://…&region=…&prefix=…
 *                               S3-compatible; credentials from the URL's user info
 *                               (s3://KEY:SECRET@bucket?…) or AWS_ACCESS_KEY_ID /
 *                               AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN) in the environment.
 */
import type { Blob as BlobRow, Store } from "../store/store.ts";
import { newId } from "../lib/ids.ts";
import { DiskBlobStore } from "./disk.ts";
import { S3BlobStore, type S3Config } from "./s3.ts";
import type { BlobStore } from "./store.ts";

export type { BlobStore } from "./store.ts";
export { DiskBlobStore } from "./disk.ts";
export { S3BlobStore } from "./s3.ts";

/** `file_` + 25 base62 characters (18 random bytes). */
export const FILE_ID = /^file_[0-9A-Za-z]{20,40}$/;

export function newFileId(): string {
  return newId("file", 18);
}

export function blobStoreFromConfig(
  cfg: { BLOB_URL?: string; DATA_DIR: string },
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): BlobStore {
  const url = cfg.BLOB_URL?.trim();
  if (!url) return new DiskBlobStore(`${cfg.DATA_DIR.replace(/\/+$/, "")}/blobs`);
  if (url.startsWith("s3://")) return new S3BlobStore(parseS3Url(url, env));
  if (url.startsWith("file://")) {
    return new DiskBlobStore(decodeURIComponent(new URL(url).pathname));
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(
      `BLOB_URL: unsupported scheme in ${JSON.stringify(url.split("?")[0])}; use s3:// or a path`,
    );
  }
  return new DiskBlobStore(url.replace(/\/+$/, ""));
}

/**
 * A file's row is in the shared database but its bytes are where the instance that made it put
 * them: on PostgreSQL (several instances) without BLOB_URL, a link made on one instance is a
 * 404 on every other. Said at start, as the link itself only fails later and elsewhere.
 */
export function unsharedBlobsWarning(
  cfg: { BLOB_URL?: string; DATABASE_URL?: string; DATA_DIR: string },
): string | undefined {
  if (!cfg.DATABASE_URL || cfg.BLOB_URL?.trim()) return undefined;
  return `BLOB_URL is unset: image files are kept in ${
    cfg.DATA_DIR.replace(/\/+$/, "")
  }/blobs of this instance alone, so with several instances a file link made on one answers 404 on the others; set BLOB_URL to S3 or a directory they all share`;
}

export function parseS3Url(text: string, env: (name: string) => string | undefined): S3Config {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new Error("BLOB_URL: not a valid s3:// URL");
  }
  const bucket = decodeURIComponent(u.hostname);
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new Error("BLOB_URL: s3://<bucket>… needs a valid bucket name");
  }
  const region = u.searchParams.get("region") ?? env("AWS_REGION") ?? "us-east-1";
  const endpoint = u.searchParams.get("endpoint") ?? `https://s3.${region}.amazonaws.com`;
  try {
    const e = new URL(endpoint);
    if (e.protocol !== "https:" && e.protocol !== "http:") throw new Error();
  } catch {
    throw new Error("BLOB_URL: endpoint= must be an http(s) URL");
  }
  let prefix = u.searchParams.get("prefix") ?? (u.pathname.replace(/^\/+/, ""));
  if (prefix !== "" && !prefix.endsWith("/")) prefix += "/";
  const accessKeyId = decodeURIComponent(u.username) || env("AWS_ACCESS_KEY_ID");
  const secretAccessKey = decodeURIComponent(u.password) || env("AWS_SECRET_ACCESS_KEY");
  if (!accessKeyId || !secretAccessKey) {
    throw new Error(
      "BLOB_URL: S3 credentials missing; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    );
  }
  return {
    endpoint,
    region,
    bucket,
    prefix,
    credentials: { accessKeyId, secretAccessKey, sessionToken: env("AWS_SESSION_TOKEN") },
  };
}

/**
 * The byte store of one gateway. Bound to the app context at start (mod.ts of endpoints);
 * tests swap in a failing one with `setBlobStore`.
 */
const stores = new WeakMap<object, BlobStore>();

export function setBlobStore(owner: object, store: BlobStore): void {
  stores.set(owner, store);
}

export function blobStoreOf(owner: object): BlobStore | undefined {
  return stores.get(owner);
}

/** Saves bytes, then the metadata row; returns the new file id. Throws when either fails. */
export async function saveFile(
  blobs: BlobStore,
  store: Store,
  accountId: string,
  bytes: Uint8Array,
  contentType: string,
): Promise<string> {
  const id = newFileId();
  await blobs.put(id, bytes, contentType);
  await store.putBlob({
    id,
    accountId,
    contentType,
    size: bytes.byteLength,
    storageKey: id,
    created: new Date(),
  });
  return id;
}

/** A stored file, or null when the id is unknown (or its bytes are gone). */
export async function loadFile(
  blobs: BlobStore,
  store: Store,
  id: string,
): Promise<{ row: BlobRow; bytes: Uint8Array } | null> {
  if (!FILE_ID.test(id)) return null;
  const row = await store.getBlob(id);
  if (!row) return null;
  const bytes = await blobs.get(row.storageKey);
  return bytes ? { row, bytes } : null;
}

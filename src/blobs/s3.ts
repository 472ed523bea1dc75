import { readCapped } from "../lib/safe_fetch.ts";
import type { BlobStore } from "./store.ts";
import { EMPTY_SHA256, sha256Hex, signRequest, type SigV4Credentials, uriEncode } from "./sigv4.ts";

export interface S3Config {
  /** e.g. https://s3.eu-central-1.amazonaws.com, https://<account>.r2.cloudflarestorage.com, http://minio:9000 */
  endpoint: string;
  region: string;
  bucket: string;
  /** Key prefix inside the bucket, e.g. "tollgate/" (may be empty). */
  prefix: string;
  credentials: SigV4Credentials;
}

/** One object request may take this long; the store is on the response path of url mode. */
const s3RequestMs = 30_000;
/** Largest object read back: far above any generated image (a 4K PNG is ~25 MB). */
const s3ObjectBytesMax = 128 * 1024 * 1024;

/**
 * An S3-compatible bucket (AWS, R2, MinIO, …) addressed path-style
 * (`endpoint/bucket/key`), which every compatible service accepts. Requests are signed with
 * SigV4 (sigv4.ts), payloads hashed.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3";
  constructor(readonly cfg: S3Config) {}

  #url(key: string): URL {
    const base = this.cfg.endpoint.replace(/\/+$/, "");
    const path = `${this.cfg.prefix}${key}`.split("/").map(uriEncode).join("/");
    return new URL(`${base}/${uriEncode(this.cfg.bucket)}/${path}`);
  }

  async #send(method: "PUT" | "GET", key: string, body?: Uint8Array, type?: string) {
    const url = this.#url(key);
    const signed = await signRequest({
      method,
      url,
      headers: type ? { "content-type": type } : {},
      payloadHash: body ? await sha256Hex(body) : EMPTY_SHA256,
      region: this.cfg.region,
      service: "s3",
      credentials: this.cfg.credentials,
      now: new Date(),
    });
    const headers = new Headers(signed.headers);
    headers.delete("host"); // fetch sets it from the URL, the same value that was signed
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), s3RequestMs);
    try {
      const res = await fetch(url, {
        method,
        headers,
        body: body as BodyInit | undefined,
        signal: abort.signal,
      });
      if (method === "GET" && res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`S3 ${method} answered HTTP ${res.status}`);
      }
      if (method === "PUT") {
        await res.body?.cancel();
        return new Uint8Array(0);
      }
      return await readCapped(res, s3ObjectBytesMax);
    } finally {
      clearTimeout(timer);
    }
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    await this.#send("PUT", key, bytes, contentType);
  }

  get(key: string): Promise<Uint8Array | null> {
    return this.#send("GET", key);
  }
}

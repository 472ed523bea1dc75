import { GatewayError } from "./gateway_error.ts";
import { bodyIdleMs, jsonDepthMax } from "../lib/bounds.ts";
import { readStreamCapped } from "../lib/read_capped.ts";

/**
 * Reads a JSON request body with the byte count enforced while streaming (a lying or absent
 * Content-Length cannot get past it), then bounds its nesting. Every failure is a 400
 * GatewayError, rendered in the endpoint's envelope by the caller.
 */
export async function readJsonBody(
  req: Request,
  maxBytes: number,
  opts: { idleMs?: number } = {},
): Promise<Record<string, unknown>> {
  const type = req.headers.get("content-type");
  if (type !== null && !/^application\/([\w.+-]*\+)?json\b/i.test(type.trim())) {
    throw new GatewayError(
      400,
      `request body must be JSON (Content-Type: application/json), got ${
        JSON.stringify(type.slice(0, 100))
      }`,
    );
  }
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const text = await readText(req, maxBytes, opts.idleMs ?? bodyIdleMs);
  if (text.trim() === "") {
    throw new GatewayError(400, "request body is empty; expected a JSON object");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new GatewayError(400, `malformed JSON in request body: ${(e as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GatewayError(400, "request body must be a JSON object");
  }
  checkDepth(value, 1); // the root object is the first level
  return value as Record<string, unknown>;
}

function tooLarge(maxBytes: number) {
  // 400, not 413: no endpoint's error list in the spec has a 413, and an oversized body is
  // an invalid request the client must change before retrying.
  return new GatewayError(400, `request body exceeds ${maxBytes} bytes`, {
    code: "PAYLOAD_TOO_LARGE",
  });
}

/** Stateless for whole-buffer decodes, so one serves every request. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

async function readText(req: Request, maxBytes: number, idleMs: number): Promise<string> {
  if (!req.body) return "";
  const encodings = contentEncodings(req.headers.get("content-encoding"));
  // Read chunk by chunk even where a Content-Length frames the body (`req.bytes()` would
  // do): only a chunked read can give up on a client that stops sending half-way.
  const idle = {
    ms: idleMs,
    stalled: () =>
      new GatewayError(400, `request body stalled: nothing arrived for ${idleMs / 1000} s`),
  };
  let all: Uint8Array;
  try {
    // The limit holds for the decoded body, counted while it is inflated: a small
    // compressed body cannot expand past it. Without a Content-Length (chunked), or with one
    // that lies, the count is enforced while reading.
    let body: ReadableStream<Uint8Array> = req.body;
    for (const enc of encodings.reverse()) body = await decoded(body, enc);
    all = await readStreamCapped(body, maxBytes, () => tooLarge(maxBytes), idle);
  } catch (e) {
    if (e instanceof GatewayError) throw e;
    throw new GatewayError(
      400,
      encodings.length > 0
        ? `request body could not be decompressed (Content-Encoding: ${encodings.join(", ")})`
        : "request body could not be read",
    );
  }
  // A Request built in-process (not parsed off the wire) can carry a header that lies.
  if (all.byteLength > maxBytes) throw tooLarge(maxBytes);
  try {
    return utf8.decode(all);
  } catch {
    throw new GatewayError(400, "request body is not valid UTF-8");
  }
}

/** The codings applied to a request body, in the order they were applied. */
function contentEncodings(header: string | null): string[] {
  if (header === null) return [];
  const out: string[] = [];
  for (const raw of header.split(",")) {
    const enc = raw.trim().toLowerCase();
    if (enc === "" || enc === "identity") continue;
    if (!Object.hasOwn(codings, enc)) {
      throw new GatewayError(
        400,
        `unsupported Content-Encoding ${JSON.stringify(enc.slice(0, 40))}; send the body ` +
          `uncompressed or as ${Object.keys(codings).join(", ")}`,
      );
    }
    out.push(enc);
  }
  return out;
}

/** HTTP content codings and the decompressor each needs (zstd is Node's, the rest the web's). */
const codings: Record<string, CompressionFormat | "zstd"> = {
  gzip: "gzip",
  "x-gzip": "gzip",
  deflate: "deflate",
  br: "brotli" as CompressionFormat,
  zstd: "zstd",
};

async function decoded(
  body: ReadableStream<Uint8Array>,
  enc: string,
): Promise<ReadableStream<Uint8Array>> {
  const format = codings[enc];
  if (format !== "zstd") {
    return body.pipeThrough(
      new DecompressionStream(format) as unknown as ReadableWritablePair<Uint8Array, Uint8Array>,
    );
  }
  // Loaded on first use: only a client that compresses with zstd pays for node:zlib.
  const [zlib, { Duplex }] = await Promise.all([import("node:zlib"), import("node:stream")]);
  const pair = Duplex.toWeb(zlib.createZstdDecompress()) as unknown as {
    readable: ReadableStream<Uint8Array>;
    writable: WritableStream<Uint8Array>;
  };
  return body.pipeThrough(pair);
}

/**
 * Bounds nesting and drops `__proto__` keys: JSON.parse makes them own properties, harmless
 * until some later `Object.assign` turns one into a prototype switch.
 */
function checkDepth(v: unknown, depth: number): void {
  if (depth > jsonDepthMax) {
    throw new GatewayError(400, `request body nests deeper than ${jsonDepthMax} levels`);
  }
  if (Array.isArray(v)) {
    for (const x of v) if (typeof x === "object" && x !== null) checkDepth(x, depth + 1);
  } else if (typeof v === "object" && v !== null) {
    if (Object.hasOwn(v, "__proto__")) delete (v as Record<string, unknown>)["__proto__"];
    for (const x of Object.values(v)) {
      if (typeof x === "object" && x !== null) checkDepth(x, depth + 1);
    }
  }
}

import { GatewayError } from "./gateway_error.ts";
import { jsonDepthMax } from "../lib/bounds.ts";
import { readStreamCapped } from "../lib/read_capped.ts";

/**
 * Reads a JSON request body with the byte count enforced while streaming (a lying or absent
 * Content-Length cannot get past it), then bounds its nesting. Every failure is a 400
 * GatewayError, rendered in the endpoint's envelope by the caller.
 */
export async function readJsonBody(
  req: Request,
  maxBytes: number,
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
  const text = await readText(req, maxBytes, declared);
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
  checkDepth(value, 0);
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

async function readText(req: Request, maxBytes: number, declared: number): Promise<string> {
  if (!req.body) return "";
  let all: Uint8Array;
  try {
    // A declared length (already checked against the limit) frames the body: the server
    // reads exactly that many bytes, so it can be taken whole. Without one (chunked), the
    // count is enforced while reading.
    all = Number.isFinite(declared)
      ? await req.bytes()
      : await readStreamCapped(req.body, maxBytes, () => tooLarge(maxBytes));
  } catch (e) {
    if (e instanceof GatewayError) throw e;
    throw new GatewayError(400, "request body could not be read");
  }
  // A Request built in-process (not parsed off the wire) can carry a header that lies.
  if (all.byteLength > maxBytes) throw tooLarge(maxBytes);
  try {
    return utf8.decode(all);
  } catch {
    throw new GatewayError(400, "request body is not valid UTF-8");
  }
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

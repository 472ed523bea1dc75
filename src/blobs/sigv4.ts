/**
 * AWS Signature Version 4 for header-signed requests, on Web Crypto (no dependency). Used by
 * the S3-compatible blob store; checked against AWS's published test vectors in
 * sigv4_test.ts.
 */

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SignInput {
  method: string;
  url: URL;
  /** Headers to sign besides `host` and `x-amz-*`, which are added here. */
  headers?: Record<string, string>;
  /** Hex SHA-256 of the body, or "UNSIGNED-PAYLOAD". */
  payloadHash: string;
  region: string;
  service: string;
  credentials: SigV4Credentials;
  now: Date;
}

export interface Signed {
  /** Every signed header plus `authorization` (lower-case names; `host` included). */
  headers: Record<string, string>;
  signature: string;
  canonicalRequest: string;
  stringToSign: string;
}

export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const enc = new TextEncoder();

export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? enc.encode(data) : data;
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource)));
}

function hex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

async function hmac(key: Uint8Array, data: string): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey(
    "raw",
    key as BufferSource,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(data)));
}

/** RFC 3986 encoding as SigV4 wants it: only A–Z a–z 0–9 - . _ ~ stay as they are. */
export function uriEncode(s: string): string {
  let out = "";
  for (const b of enc.encode(s)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

/** Each path segment decoded, then encoded once (S3 style: no double encoding). */
function canonicalPath(pathname: string): string {
  if (pathname === "") return "/";
  return pathname.split("/").map((seg) => {
    let raw = seg;
    try {
      raw = decodeURIComponent(seg);
    } catch { /* keep as given */ }
    return uriEncode(raw);
  }).join("/");
}

function canonicalQuery(search: string): string {
  const q = search.startsWith("?") ? search.slice(1) : search;
  if (q === "") return "";
  const pairs = q.split("&").filter((p) => p !== "").map((p) => {
    const eq = p.indexOf("=");
    const dec = (x: string) => {
      try {
        return decodeURIComponent(x.replace(/\+/g, "%20"));
      } catch {
        return x;
      }
    };
    const k = eq < 0 ? p : p.slice(0, eq);
    const v = eq < 0 ? "" : p.slice(eq + 1);
    return [uriEncode(dec(k)), uriEncode(dec(v))] as const;
  });
  pairs.sort((
    a,
    b,
  ) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}

/** `20150830T123600Z` */
export function amzDate(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

export async function signRequest(input: SignInput): Promise<Signed> {
  const date = amzDate(input.now);
  const day = date.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.headers ?? {})) headers[k.toLowerCase()] = v;
  headers["host"] ??= input.url.host;
  headers["x-amz-date"] = date;
  if (input.service === "s3") headers["x-amz-content-sha256"] ??= input.payloadHash;
  if (input.credentials.sessionToken) {
    headers["x-amz-security-token"] = input.credentials.sessionToken;
  }
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names
    .map((n) => `${n}:${headers[n].trim().replace(/\s+/g, " ")}\n`)
    .join("");
  const signedHeaders = names.join(";");
  const canonicalRequest = [
    input.method.toUpperCase(),
    canonicalPath(input.url.pathname),
    canonicalQuery(input.url.search),
    canonicalHeaders,
    signedHeaders,
    input.payloadHash,
  ].join("\n");
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = [
    "AWS4-HMAC-SHA256",
    date,
    scope,
    await sha256Hex(canonicalRequest),
  ].join("\n");
  let key = await hmac(enc.encode("AWS4" + input.credentials.secretAccessKey), day);
  key = await hmac(key, input.region);
  key = await hmac(key, input.service);
  key = await hmac(key, "aws4_request");
  const signature = hex(await hmac(key, stringToSign));
  headers["authorization"] = `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/` +
    `${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return { headers, signature, canonicalRequest, stringToSign };
}

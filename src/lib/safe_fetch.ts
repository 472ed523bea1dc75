/**
 * Fetching a URL that a client named (an image reference), without letting the client aim
 * the gateway at its own network: http(s) only, no credentials in the URL, every address
 * the host resolves to must be public (not private, loopback, link-local, CGNAT, metadata,
 * unspecified, multicast or reserved, in IPv4, IPv6, IPv4-mapped and numeric forms),
 * redirects are followed by hand and each hop is checked again, and both size and time are
 * capped.
 *
 * Residual risk, stated: the check resolves the name, then `fetch` resolves it again. A DNS
 * server that answers differently the second time (rebinding with a zero TTL) could slip
 * through in that gap; Deno's fetch offers no way to pin the connection to the checked
 * address. Deployments that fetch references should also block private ranges at egress.
 */
import { readStreamCapped } from "./read_capped.ts";

/** A URL refused by policy (scheme, address, redirect). The client's mistake: a 400. */
export class UnsafeUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsafeUrlError";
  }
}

/** A permitted URL that could not be fetched (status, size, time, network). */
export class FetchFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FetchFailedError";
  }
}

export interface SafeFetchOptions {
  /** Largest body accepted, bytes. */
  maxBytes: number;
  /** The whole fetch (every hop, DNS included) must finish within this, ms. */
  timeoutMs: number;
  /** Redirects followed at most (default 3). */
  maxRedirects?: number;
  /**
   * TESTS ONLY: hosts (`name` or `name:port`, as in `URL.host`) exempt from the address
   * check, so a test can fetch from a server on 127.0.0.1. Never set in production code.
   */
  allowHosts?: readonly string[];
  /** Name → addresses; default `Deno.resolveDns` (A and AAAA). Tests use a fake. */
  resolve?: (host: string, signal: AbortSignal) => Promise<string[]>;
  signal?: AbortSignal;
  /** `Accept` header sent. */
  accept?: string;
}

export interface FetchedBody {
  bytes: Uint8Array;
  contentType: string | null;
  /** The URL finally fetched (after redirects). */
  url: string;
}

const redirectsMaxDefault = 3;

export async function safeFetch(raw: string, opts: SafeFetchOptions): Promise<FetchedBody> {
  let url = checkUrlSyntax(raw);
  const abort = new AbortController();
  const timer = setTimeout(
    () => abort.abort(new DOMException("time cap reached", "TimeoutError")),
    opts.timeoutMs,
  );
  const onOuter = () => abort.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onOuter, { once: true });
  const maxRedirects = opts.maxRedirects ?? redirectsMaxDefault;
  try {
    for (let hop = 0;; hop++) {
      await assertPublicHost(url, opts, abort.signal);
      let res: Response;
      try {
        res = await fetch(url, {
          redirect: "manual",
          signal: abort.signal,
          headers: opts.accept ? { accept: opts.accept } : undefined,
        });
      } catch (e) {
        throw failure(e, abort.signal, opts.timeoutMs);
      }
      if (res.status >= 300 && res.status < 400 && res.headers.has("location")) {
        await res.body?.cancel().catch(() => {});
        if (hop >= maxRedirects) {
          throw new UnsafeUrlError(`more than ${maxRedirects} redirects`);
        }
        let next: URL;
        try {
          next = new URL(res.headers.get("location")!, url);
        } catch {
          throw new FetchFailedError("redirect to an invalid URL");
        }
        url = checkUrlSyntax(next.href);
        continue;
      }
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        throw new FetchFailedError(`HTTP ${res.status}`);
      }
      let bytes: Uint8Array;
      try {
        bytes = await readCapped(res, opts.maxBytes);
      } catch (e) {
        if (e instanceof FetchFailedError) throw e;
        throw failure(e, abort.signal, opts.timeoutMs);
      }
      return { bytes, contentType: res.headers.get("content-type"), url: url.href };
    }
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onOuter);
  }
}

function failure(e: unknown, signal: AbortSignal, timeoutMs: number): Error {
  if (e instanceof UnsafeUrlError || e instanceof FetchFailedError) return e;
  if (signal.aborted && (signal.reason as Error)?.name === "TimeoutError") {
    return new FetchFailedError(`no complete answer within ${timeoutMs} ms`);
  }
  return new FetchFailedError("could not be fetched");
}

/** Reads a body with the byte count enforced while streaming. */
export async function readCapped(res: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get("content-length") ?? "NaN");
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw new FetchFailedError(`larger than ${maxBytes} bytes`);
  }
  if (!res.body) return new Uint8Array(0);
  return await readStreamCapped(
    res.body,
    maxBytes,
    () => new FetchFailedError(`larger than ${maxBytes} bytes`),
  );
}

/** Scheme and shape: http(s), a host, no user info. */
export function checkUrlSyntax(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UnsafeUrlError(`scheme ${url.protocol} is not allowed; use http or https`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new UnsafeUrlError("credentials in the URL are not allowed");
  }
  if (url.hostname === "") throw new UnsafeUrlError("the URL has no host");
  return url;
}

/**
 * A check that needs no DNS: the URL's host is a literal non-public address or `localhost`.
 * Lets a caller refuse such a URL before doing any paid work; names that only resolve to
 * private addresses are still caught by `safeFetch` itself.
 */
export function isObviouslyPrivate(url: URL, allowHosts?: readonly string[]): boolean {
  if (allowHosts?.includes(url.host) || allowHosts?.includes(url.hostname)) return false;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const literal = parseIp(host);
  if (literal) return !isPublicIp(literal);
  const name = host.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

async function assertPublicHost(
  url: URL,
  opts: SafeFetchOptions,
  signal: AbortSignal,
): Promise<void> {
  if (opts.allowHosts?.includes(url.host) || opts.allowHosts?.includes(url.hostname)) return;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const literal = parseIp(host);
  if (literal) {
    if (!isPublicIp(literal)) throw new UnsafeUrlError(`address ${host} is not public`);
    return;
  }
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) {
    throw new UnsafeUrlError(`host ${host} is not public`);
  }
  let addrs: string[];
  try {
    addrs = await (opts.resolve ?? resolveBoth)(name, signal);
  } catch (e) {
    throw failure(e, signal, opts.timeoutMs);
  }
  if (addrs.length === 0) throw new FetchFailedError(`host ${host} does not resolve`);
  for (const a of addrs) {
    const ip = parseIp(a);
    if (!ip || !isPublicIp(ip)) {
      throw new UnsafeUrlError(`host ${host} resolves to an address that is not public`);
    }
  }
}

async function resolveBoth(host: string, signal: AbortSignal): Promise<string[]> {
  const [a, aaaa] = await Promise.allSettled([
    Deno.resolveDns(host, "A", { signal }),
    Deno.resolveDns(host, "AAAA", { signal }),
  ]);
  const out = [
    ...(a.status === "fulfilled" ? a.value : []),
    ...(aaaa.status === "fulfilled" ? aaaa.value : []),
  ];
  if (out.length === 0 && signal.aborted) throw signal.reason;
  return out;
}

// --- addresses ---

export type Ip = { v: 4; n: number } | { v: 6; g: number[] };

/**
 * An IP literal in any form a resolver might accept: dotted IPv4 with decimal, octal (0…)
 * or hex (0x…) parts and the short forms `a`, `a.b`, `a.b.c` (inet_aton), or IPv6 with
 * `::` and an embedded dotted tail. Anything else (a host name) is undefined.
 */
export function parseIp(s: string): Ip | undefined {
  if (s.includes(":")) {
    const g = parseIPv6(s);
    return g ? { v: 6, g } : undefined;
  }
  const n = parseIPv4(s);
  return n === undefined ? undefined : { v: 4, n };
}

export function parseIPv4(s: string): number | undefined {
  const parts = s.replace(/\.$/, "").split(".");
  if (parts.length < 1 || parts.length > 4) return undefined;
  const nums: number[] = [];
  for (const p of parts) {
    let v: number;
    if (/^0[xX][0-9a-fA-F]*$/.test(p)) v = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]+$/.test(p)) v = parseInt(p.slice(1), 8);
    else if (/^(0|[1-9][0-9]*)$/.test(p)) v = Number(p);
    else return undefined;
    if (!Number.isFinite(v)) return undefined;
    nums.push(v);
  }
  const last = nums.pop()!;
  for (const x of nums) if (x > 255) return undefined;
  if (last >= 2 ** (8 * (4 - nums.length))) return undefined;
  let n = 0;
  nums.forEach((x, i) => (n += x * 2 ** (8 * (3 - i))));
  return n + last;
}

/** Eight 16-bit groups, or undefined. A zone (`%eth0`) is dropped. */
export function parseIPv6(raw: string): number[] | undefined {
  const s = raw.replace(/%.*$/, "");
  if (!/^[0-9a-fA-F:.]+$/.test(s)) return undefined;
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const side = (t: string): number[] | undefined => {
    if (t === "") return [];
    const out: number[] = [];
    const parts = t.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes(".")) {
        if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(p)) return undefined;
        const o = p.split(".").map(Number);
        if (o.some((x) => x > 255)) return undefined;
        out.push((o[0] << 8) | o[1], (o[2] << 8) | o[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return undefined;
        out.push(parseInt(p, 16));
      }
    }
    return out;
  };
  const head = side(halves[0]);
  const tail = halves.length === 2 ? side(halves[1]) : [];
  if (!head || !tail) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const fill = 8 - head.length - tail.length;
  if (fill < 1) return undefined;
  return [...head, ...new Array(fill).fill(0), ...tail];
}

/** IPv4 ranges that are not the public internet: [network, prefix length]. */
const V4_BLOCKED: [string, number][] = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];
const V4_RANGES = V4_BLOCKED.map(([a, len]) => {
  const mask = len === 0 ? 0 : (~0 << (32 - len)) >>> 0;
  return [(parseIPv4(a)! & mask) >>> 0, mask] as const;
});

export function isPublicIPv4(n: number): boolean {
  return !V4_RANGES.some(([net, mask]) => ((n & mask) >>> 0) === net);
}

/**
 * Public IPv6 is global unicast (2000::/3) minus documentation, Teredo and the IETF block,
 * with 6to4 judged by its embedded IPv4. IPv4-mapped (::ffff:a.b.c.d) and NAT64
 * (64:ff9b::/96) addresses are judged as the IPv4 inside. Everything else — loopback,
 * unspecified, link-local fe80::/10, unique-local fc00::/7 (incl. fd00:ec2::254, the EC2
 * metadata address), multicast ff00::/8, IPv4-compatible ::a.b.c.d — is refused.
 */
export function isPublicIPv6(g: number[]): boolean {
  const v4At = (i: number) => ((g[i] << 16) | g[i + 1]) >>> 0;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return isPublicIPv4(v4At(6)); // ::ffff:0:0/96
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return isPublicIPv4(v4At(6)); // NAT64
  if ((g[0] & 0xe000) !== 0x2000) return false; // not 2000::/3
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false; // documentation
  if (g[0] === 0x2001 && g[1] < 0x0200) return false; // 2001::/23: Teredo, ORCHID, IETF
  if (g[0] === 0x2002) return isPublicIPv4(v4At(1)); // 6to4
  if (g[0] === 0x3fff && g[1] < 0x1000) return false; // 3fff::/20 documentation
  return true;
}

export function isPublicIp(ip: Ip): boolean {
  return ip.v === 4 ? isPublicIPv4(ip.n) : isPublicIPv6(ip.g);
}

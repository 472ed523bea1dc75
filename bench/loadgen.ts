/**
 * The benchmark's HTTP/1.1 load generator for streams (and the fallback for whole responses
 * when `wrk` is missing). Raw TCP, keep-alive, a fixed number of connections each sending
 * one request after another; it measures, per response, the time to the first byte, to the
 * first content token (a marker string in the body, e.g. `tok0`) and to the end.
 *
 * Run by bench/run.ts as its own process (pinned to the client core):
 *   deno run -A bench/loadgen.ts '<json Spec>'
 * It prints `W` when the measuring window opens, `E` when it closes (so the caller can read
 * the target's CPU counters at those moments), then one JSON line with the result.
 * Only responses that complete inside the window are counted. Every loop is bounded: no new
 * request starts after the window; in-flight ones get `drainMs`, then the connections close.
 */

export interface Spec {
  /** 127.0.0.1 only. */
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Text whose first appearance in a body marks the first token (TTFT). */
  marker?: string;
  /** How long in-flight responses may finish after the window, ms. */
  drainMs?: number;
  /** A response slower than this counts as an error and its connection is closed, ms. */
  timeoutMs?: number;
}

export interface Dist {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

export interface LoadResult {
  completed: number;
  errors: number;
  statusErrors: number;
  windowMs: number;
  rps: number;
  /** Whole response, ms. */
  latency: Dist;
  /** First response byte, ms. */
  ttfb: Dist;
  /** First content token (marker), ms; n = 0 without a marker. */
  ttft: Dist;
  firstError?: string;
}

export function dist(xs: number[]): Dist {
  if (xs.length === 0) return { n: 0, p50: NaN, p90: NaN, p99: NaN, mean: NaN, max: NaN };
  const s = Float64Array.from(xs).sort();
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  let sum = 0;
  for (const x of s) sum += x;
  return {
    n: s.length,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    mean: sum / s.length,
    max: s[s.length - 1],
  };
}

const latin1 = new TextDecoder("latin1");

// Chunked-body parser states.
const SIZE = 0, EXT = 1, DATA = 2, DATA_END = 3, TRAILER = 4;

interface Parsed {
  status: number;
  close: boolean;
  ttfb: number;
  ttft: number;
  end: number;
}

class EofError extends Error {}

/** Reads exactly one HTTP/1.1 response from `conn`. */
async function readResponse(
  conn: Deno.Conn,
  buf: Uint8Array,
  marker: string | undefined,
): Promise<Parsed> {
  let head = "";
  let inHead = true;
  let status = 0;
  let close = false;
  let chunked = false;
  let remaining = 0; // content-length bytes left, or bytes left in the current chunk
  let state = SIZE;
  let size = 0;
  let lineLen = 0;
  let skip = 0;
  let ttfb = 0;
  let ttft = marker ? 0 : NaN;
  let carry = "";
  const look = (from: number, to: number, now: number) => {
    if (ttft === ttft && ttft !== 0) return; // found already (or no marker: NaN)
    if (!marker || to <= from) return;
    const text = carry + latin1.decode(buf.subarray(from, to));
    if (text.includes(marker)) ttft = now;
    else carry = text.slice(-(marker.length - 1));
  };
  for (;;) {
    const n = await conn.read(buf);
    if (n === null) throw new EofError("connection closed by the server");
    const now = performance.now();
    if (ttfb === 0) ttfb = now;
    let i = 0;
    if (inHead) {
      head += latin1.decode(buf.subarray(0, n));
      const e = head.indexOf("\r\n\r\n");
      if (e < 0) {
        if (head.length > 65536) throw new Error("response head too long");
        continue;
      }
      i = n - (head.length - (e + 4));
      const lines = head.slice(0, e).split("\r\n");
      status = Number(lines[0].split(" ")[1]);
      let length = -1;
      for (let k = 1; k < lines.length; k++) {
        const line = lines[k];
        const c = line.indexOf(":");
        const name = line.slice(0, c).trim().toLowerCase();
        const value = line.slice(c + 1).trim().toLowerCase();
        if (name === "content-length") length = Number(value);
        else if (name === "transfer-encoding") chunked = value.includes("chunked");
        else if (name === "connection") close = value === "close";
      }
      inHead = false;
      if (!chunked) {
        if (length < 0) throw new Error("response without length or chunked encoding");
        remaining = length;
      }
    }
    if (!chunked) {
      const take = Math.min(remaining, n - i);
      look(i, i + take, now);
      remaining -= take;
      if (remaining === 0) return { status, close, ttfb, ttft, end: now };
      continue;
    }
    while (i < n) {
      switch (state) {
        case SIZE: {
          const c = buf[i++];
          if (c === 0x0d) break;
          if (c === 0x0a) {
            if (size === 0) {
              state = TRAILER;
              lineLen = 0;
            } else {
              state = DATA;
              remaining = size;
            }
            size = 0;
          } else if (c === 0x3b) state = EXT;
          else {
            const d = c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57;
            if (d < 0 || d > 15) throw new Error("bad chunk size");
            size = size * 16 + d;
          }
          break;
        }
        case EXT:
          if (buf[i++] === 0x0a) {
            state = size === 0 ? TRAILER : DATA;
            remaining = size;
            lineLen = 0;
            size = 0;
          }
          break;
        case DATA: {
          const take = Math.min(remaining, n - i);
          look(i, i + take, now);
          i += take;
          remaining -= take;
          if (remaining === 0) {
            state = DATA_END;
            skip = 2;
          }
          break;
        }
        case DATA_END: {
          const take = Math.min(skip, n - i);
          i += take;
          skip -= take;
          if (skip === 0) state = SIZE;
          break;
        }
        case TRAILER: {
          const c = buf[i++];
          if (c === 0x0a) {
            if (lineLen === 0) {
              if (i !== n) throw new Error("unexpected bytes after the response");
              return { status, close, ttfb, ttft, end: now };
            }
            lineLen = 0;
          } else if (c !== 0x0d) lineLen++;
          break;
        }
      }
    }
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

function requestBytes(spec: Spec): Uint8Array {
  const enc = new TextEncoder();
  const body = enc.encode(spec.body);
  let head = `POST ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1:${spec.port}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`;
  for (const [k, v] of Object.entries(spec.headers)) head += `${k}: ${v}\r\n`;
  const h = enc.encode(head + "\r\n");
  const out = new Uint8Array(h.length + body.length);
  out.set(h);
  out.set(body, h.length);
  return out;
}

export async function run(spec: Spec, signal?: (s: "W" | "E") => void): Promise<LoadResult> {
  const req = requestBytes(spec);
  const drainMs = spec.drainMs ?? 5_000;
  const timeoutMs = spec.timeoutMs ?? 30_000;
  const t0 = performance.now();
  let tW = Infinity;
  let tE = Infinity;
  let stopped = false; // no new request after the window
  const lat: number[] = [], ttfb: number[] = [], ttft: number[] = [];
  let errors = 0, statusErrors = 0, completed = 0;
  let firstError: string | undefined;
  const conns = new Set<Deno.Conn>();

  const wTimer = setTimeout(() => {
    tW = performance.now();
    signal?.("W");
  }, spec.warmupMs);
  const eTimer = setTimeout(() => {
    tE = performance.now();
    stopped = true;
    signal?.("E");
  }, spec.warmupMs + spec.durationMs);

  const worker = async () => {
    const buf = new Uint8Array(65536);
    let conn: Deno.TcpConn | undefined;
    let failures = 0;
    while (!stopped) {
      try {
        if (!conn) {
          conn = await Deno.connect({ hostname: "127.0.0.1", port: spec.port });
          conn.setNoDelay(true);
          conns.add(conn);
        }
        const c = conn;
        const start = performance.now();
        const timer = setTimeout(() => {
          try {
            c.close();
          } catch { /* already closed */ }
        }, timeoutMs);
        let r: Parsed;
        try {
          await writeAll(c, req);
          r = await readResponse(c, buf, spec.marker);
        } finally {
          clearTimeout(timer);
        }
        if (r.close) {
          conns.delete(c);
          c.close();
          conn = undefined;
        }
        if (r.end >= tW && r.end <= tE) {
          if (r.status >= 400) statusErrors++;
          else {
            completed++;
            lat.push(r.end - start);
            ttfb.push(r.ttfb - start);
            if (r.ttft === r.ttft && r.ttft > 0) ttft.push(r.ttft - start);
          }
        }
        failures = 0;
      } catch (e) {
        if (conn) {
          conns.delete(conn);
          try {
            conn.close();
          } catch { /* already closed */ }
          conn = undefined;
        }
        if (stopped) break;
        if (performance.now() >= tW) errors++;
        firstError ??= String(e);
        // A target that refuses every connection must not spin: back off, then give up.
        if (++failures > 50) break;
        await new Promise((r) => setTimeout(r, Math.min(100, 2 ** failures)));
      }
    }
    if (conn) {
      conns.delete(conn);
      try {
        conn.close();
      } catch { /* closed by the timeout or the hard stop */ }
    }
  };

  const workers = Array.from({ length: spec.concurrency }, worker);
  const all = Promise.all(workers);
  // After the window, in-flight responses get drainMs, then every connection is closed.
  const hard = new Promise<void>((resolve) => {
    const t = setTimeout(() => {
      for (const c of conns) {
        try {
          c.close();
        } catch { /* already closed */ }
      }
      resolve();
    }, spec.warmupMs + spec.durationMs + drainMs);
    all.then(() => {
      clearTimeout(t);
      resolve();
    });
  });
  await hard;
  await all;
  clearTimeout(wTimer);
  clearTimeout(eTimer);
  if (tE === Infinity) tE = performance.now();
  if (tW === Infinity) tW = t0;
  const windowMs = tE - tW;
  return {
    completed,
    errors,
    statusErrors,
    windowMs,
    rps: completed / (windowMs / 1000),
    latency: dist(lat),
    ttfb: dist(ttfb),
    ttft: dist(ttft),
    firstError,
  };
}

if (import.meta.main) {
  const spec = JSON.parse(Deno.args[0]) as Spec;
  const enc = new TextEncoder();
  const say = (s: string) => Deno.stdout.writeSync(enc.encode(s + "\n"));
  // Last resort: never outlive the run by much, whatever happens.
  const guard = setTimeout(
    () => Deno.exit(3),
    spec.warmupMs + spec.durationMs + (spec.drainMs ?? 5_000) + 30_000,
  );
  const result = await run(spec, say);
  clearTimeout(guard);
  say(JSON.stringify(result));
}

/**
 * The dev mock upstream: a deterministic fake OpenAI- and Anthropic-compatible provider
 * used by tests, the benchmark and `deno task dev`.
 *
 * Endpoints (matched on the path's end, so any base-URL prefix works):
 *   POST …/chat/completions, …/messages, …/responses, …/embeddings,
 *        …/images/generations, …/images/edits (JSON or multipart)
 *   GET  /__mock/stats    the recorded calls, as JSON
 *   POST /__mock/reset    forget them
 *
 * Behaviour is steered per request by markers (see controls.ts). Each distinct request is
 * planned once and cached (plan.ts), so replaying the benchmark's request costs little
 * more than copying bytes.
 */
import { createHash } from "node:crypto";
import type { MockDefaults } from "./answer.ts";
import { buildPlan, type Protocol } from "./build.ts";
import { controlHeaders, parseControls } from "./controls.ts";
import { type Active, type MockCall, MockCut, play } from "./driver.ts";
import { ANTHROPIC_LONG_CONTEXT_BETA, type Vendor, vendorError } from "./errors.ts";
import { errorPlan, type Plan } from "./plan.ts";
import { obj } from "./util.ts";

export type { MockDefaults } from "./answer.ts";
export { answerText } from "./answer.ts";
export type { MockCall, MockOutcome } from "./driver.ts";

export interface MockStats {
  /** Recorded calls, oldest first (the oldest are dropped past `callsMax`). */
  calls: MockCall[];
  /** Calls seen since start or the last reset, dropped ones included. */
  total: number;
  /** Bytes of the answers kept in the plan cache (bounded by `planCacheBytesMax`). */
  cachedPlanBytes: number;
}

export interface MockServer {
  /** Base URL, e.g. `http://127.0.0.1:8788` (no trailing slash, no `/v1`). */
  url: string;
  port: number;
  stats: MockStats;
  /** Forgets the recorded calls. */
  reset(): void;
  /** Resolves once no request is in flight (streams ended, delays over). */
  idle(): Promise<void>;
  /** Cuts whatever is in flight and stops listening. */
  close(): Promise<void>;
}

export interface MockOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  defaults?: MockDefaults;
  /** Most calls kept in `stats.calls` (default 10 000); bounds memory under the benchmark. */
  callsMax?: number;
}

const ROUTES: [suffix: string, protocol: Protocol][] = [
  ["/chat/completions", "chat"],
  ["/messages", "messages"],
  ["/responses", "responses"],
  ["/embeddings", "embeddings"],
  ["/images/generations", "images"],
  ["/images/edits", "images"],
];

/** Distinct requests whose plans are kept; the cache is simply emptied when full. */
const planCacheMax = 512;
/** Bodies longer than this are not cached (image edits carry megabytes of base64). */
const planCacheBodyCharsMax = 65_536;
/**
 * Bytes the cached plans may take, all told: a count alone let 512 long streams (a
 * 100 000-token stream's frames take tens of MB) grow the mock past gigabytes. A plan larger
 * than a quarter of it is served and not kept.
 */
const planCacheBytesMax = 64 * 1024 * 1024;
const callsMaxDefault = 10_000;

/** What a plan's answer takes in memory (its bytes; each frame's object counted too). */
function planBytes(plan: Plan): number {
  let n = plan.body?.byteLength ?? 0;
  for (const f of plan.frames ?? []) n += f.bytes.byteLength + 64;
  return n;
}

function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const qm = url.indexOf("?", start);
  return qm < 0 ? url.slice(start) : url.slice(start, qm);
}

function routeOf(path: string): Protocol | undefined {
  for (const [suffix, protocol] of ROUTES) if (path.endsWith(suffix)) return protocol;
  return undefined;
}

/** Whether the request was sent with the key `bad-key` (`Bearer ` stripped), in either header. */
function isBadKey(headers: Record<string, string>): boolean {
  const auth = headers["authorization"]?.trim();
  return headers["x-api-key"]?.trim() === "bad-key" || auth === "bad-key" ||
    auth === "Bearer bad-key";
}

/**
 * Eight hex digits of the caller's key (either header, `Bearer ` stripped), "" without one:
 * the organisation its encrypted reasoning is made for (see responses.ts).
 */
function keyTagOf(headers: Record<string, string>): string {
  const key = headers["x-api-key"]?.trim() ||
    headers["authorization"]?.trim().replace(/^Bearer\s+/i, "");
  return key ? createHash("sha256").update(key).digest("hex").slice(0, 8) : "";
}

export function startMock(opts: MockOptions = {}): MockServer {
  const defaults: Required<MockDefaults> = {
    firstTokenMs: opts.defaults?.firstTokenMs ?? 0,
    tokenMs: opts.defaults?.tokenMs ?? 0,
    tokens: opts.defaults?.tokens ?? 16,
  };
  const callsMax = Math.max(1, opts.callsMax ?? callsMaxDefault);
  const stats: MockStats = { calls: [], total: 0, cachedPlanBytes: 0 };
  const cache = new Map<string, Plan>();

  const active = new Set<Active>();
  let idleWaiters: (() => void)[] = [];
  const life = {
    add: (a: Active) => void active.add(a),
    delete: (a: Active) => {
      active.delete(a);
      if (active.size === 0 && idleWaiters.length > 0) {
        const ws = idleWaiters;
        idleWaiters = [];
        for (const w of ws) w();
      }
    },
  };

  const record = (call: MockCall) => {
    stats.total++;
    if (stats.calls.length >= callsMax) stats.calls.splice(0, Math.ceil(callsMax / 2));
    stats.calls.push(call);
  };
  const reset = () => {
    stats.calls.length = 0;
    stats.total = 0;
  };

  /** The plan of a request: built once per distinct request, then served from the cache. */
  const planFor = (protocol: Protocol, got: ReadBody, headers: Record<string, string>): Plan => {
    const keyTag = keyTagOf(headers);
    const longContext = protocol === "messages" &&
      (headers["anthropic-beta"] ?? "").split(",").some((b) =>
        b.trim() === ANTHROPIC_LONG_CONTEXT_BETA
      );
    const key = got.formImages === undefined && got.raw.length <= planCacheBodyCharsMax
      ? protocol + "\n" + keyTag + (longContext ? " 1m" : "") + "\n" + controlHeaders(headers) +
        "\n" + got.raw
      : undefined;
    let plan = key === undefined ? undefined : cache.get(key);
    if (plan) return plan;
    plan = buildPlan({
      protocol,
      body: got.body,
      raw: got.raw,
      controls: parseControls(got.raw, headers),
      defaults,
      formImages: got.formImages,
      keyTag,
      longContext,
    });
    const bytes = planBytes(plan);
    if (key !== undefined && bytes <= planCacheBytesMax / 4) {
      if (cache.size >= planCacheMax || stats.cachedPlanBytes + bytes > planCacheBytesMax) {
        cache.clear();
        stats.cachedPlanBytes = 0;
      }
      cache.set(key, plan);
      stats.cachedPlanBytes += bytes;
    }
    return plan;
  };

  const handler = async (req: Request): Promise<Response> => {
    const path = pathOf(req.url);
    if (path.startsWith("/__mock/")) return admin(req.method, path, stats, reset);

    const protocol = routeOf(path);
    const headers: Record<string, string> = {};
    for (const [k, v] of req.headers) headers[k] = v;
    const call: MockCall = {
      path,
      protocol: protocol ?? "unknown",
      body: null,
      headers,
      outcome: "running",
      inputTokens: 0,
      outputTokensSent: 0,
      usageReported: false,
    };
    record(call);
    const vendor: Vendor = protocol === "messages" ? "anthropic" : "openai";
    const fail = (status: number, message?: string) =>
      play(errorPlan(status, vendorError(vendor, status, message)), call, life, () => req.signal);

    if (!protocol) return fail(404, `Invalid URL (${req.method} ${path})`);
    if (req.method !== "POST") return fail(405, `Invalid method for URL (${req.method} ${path})`);

    const got = await readBody(req, headers);
    call.body = got.recorded;
    if (isBadKey(headers)) return fail(401);
    // Anthropic wants a key; its SDK (1.x) sends it as `Authorization: Bearer`, older
    // clients and most gateways as `x-api-key`.
    if (protocol === "messages" && !headers["x-api-key"] && !headers["authorization"]) {
      return fail(401, "x-api-key header is required");
    }
    if (got.invalid !== undefined) return fail(400, got.invalid);

    return play(planFor(protocol, got, headers), call, life, () => req.signal);
  };

  const server = Deno.serve({
    port: opts.port ?? 0,
    hostname: opts.hostname ?? "127.0.0.1",
    onListen() {},
    onError(error) {
      // A cut stream is on purpose; anything else is a bug worth seeing.
      // deno-lint-ignore no-console
      if (!(error instanceof MockCut)) console.error("mock upstream:", error);
      return new Response(null, { status: 500 });
    },
  }, handler);

  const port = server.addr.port;
  const host = server.addr.hostname === "0.0.0.0" ? "127.0.0.1" : server.addr.hostname;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    stats,
    reset,
    idle: () =>
      active.size === 0 ? Promise.resolve() : new Promise<void>((r) => idleWaiters.push(r)),
    async close() {
      for (const a of [...active]) a.abort();
      await server.shutdown();
    },
  };
}

function admin(method: string, path: string, stats: MockStats, reset: () => void): Response {
  if (path === "/__mock/stats" && method === "GET") return Response.json(stats);
  if (path === "/__mock/reset" && method === "POST") {
    reset();
    return Response.json({ ok: true });
  }
  return new Response("not found\n", { status: 404 });
}

interface ReadBody {
  /** Text scanned for markers and hashed: the JSON text, or a form's prompt. */
  raw: string;
  body: Record<string, unknown>;
  /** What the stats show: the parsed JSON, the raw text if it did not parse, or the form. */
  recorded: unknown;
  /** Input images of a multipart form. */
  formImages?: number;
  /** Why the body is unusable, if it is. */
  invalid?: string;
}

async function readBody(req: Request, headers: Record<string, string>): Promise<ReadBody> {
  if ((headers["content-type"] ?? "").startsWith("multipart/form-data")) {
    const form = await readForm(req);
    if (!form) {
      return { raw: "", body: {}, recorded: null, invalid: "Could not parse multipart form." };
    }
    const raw = typeof form.body.prompt === "string" ? form.body.prompt : "";
    return { raw, body: form.body, recorded: form.body, formImages: form.images };
  }
  const raw = await req.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return {
      raw,
      body: {},
      recorded: raw,
      invalid: "We could not parse the JSON body of your request.",
    };
  }
  return { raw, body: obj(parsed), recorded: parsed };
}

/** A multipart image edit as a plain object: fields as strings, files as descriptions. */
async function readForm(
  req: Request,
): Promise<{ body: Record<string, unknown>; images: number } | null> {
  let form: FormData;
  try {
    form = await req.formData();
  } catch {
    return null;
  }
  const body: Record<string, unknown> = {};
  let images = 0;
  for (const [name, value] of form) {
    const v = typeof value === "string"
      ? value
      : { filename: value.name, type: value.type, size: value.size };
    if (typeof value !== "string" && (name === "image" || name === "image[]")) images++;
    if (name.endsWith("[]") || name in body) {
      const key = name.endsWith("[]") ? name.slice(0, -2) : name;
      const prev = body[key];
      body[key] = Array.isArray(prev) ? [...prev, v] : prev === undefined ? [v] : [prev, v];
    } else {
      body[name] = v;
    }
  }
  return { body, images };
}

/**
 * Method + path → endpoint; nothing else. Each endpoint names its error envelope so that a
 * wrong method on a known path answers 405 in that endpoint's own envelope, and everything
 * unknown (including `/v1/messages/count_tokens`) is the spec's plain-text 404.
 */
import {
  type EnvelopeFamily,
  renderError,
  renderNotFound,
  renderRateLimited,
} from "./http/envelopes.ts";
import { GatewayError, internalError, isGatewayError } from "./http/gateway_error.ts";
import type { AppContext } from "./pipeline/context.ts";
import { handleText } from "./pipeline/pipeline.ts";
import { admit } from "./pipeline/limit.ts";
import { getGeneration, listGenerations } from "./pipeline/generations.ts";
import { credits, keyInfo } from "./pipeline/key_info.ts";
import { FORMATS } from "./formats/mod.ts";
import type { Listing } from "./catalogue/listing.ts";

export interface AppExtras {
  listing: Listing;
  /** Extra routes mounted by main.ts (operator API, files, embeddings, images). */
  routes?: Route[];
}

export interface Route {
  method: string;
  /** Exact path, or a prefix ending in "/" whose remainder is passed, decoded, as `rest`. */
  path: string;
  /** The remainder may hold "/" (a model slug); otherwise it is one path segment. */
  nested?: boolean;
  /** The error envelope, or how to choose it from the request (a listing both SDKs read). */
  envelope: EnvelopeFamily | ((req: Request) => EnvelopeFamily);
  handle: (
    req: Request,
    rest: string,
    info: { remoteAddr: string },
  ) => Promise<Response> | Response;
}

export type Handler = (req: Request, info?: { remoteAddr: string }) => Promise<Response>;

export function createApp(app: AppContext, extras: AppExtras): Handler {
  const routes: Route[] = [
    { method: "GET", path: "/healthz", envelope: "generic", handle: () => text("ok") },
    {
      method: "GET",
      path: "/readyz",
      envelope: "generic",
      handle: async () => {
        if (app.draining) return text("draining", 503);
        // The store answers a read yet refuses writes (a full disk): settlements pile up in
        // memory, and a ping alone would call the instance ready.
        if (app.quota.settlementsFailing) return text("store refuses settlements", 503);
        try {
          await app.store.ping();
          return text("ready");
        } catch {
          return text("store unreachable", 503);
        }
      },
    },
    {
      method: "GET",
      path: "/v1/models",
      envelope: sdkEnvelope,
      handle: async (r) => {
        await admit(r, app);
        return extras.listing.models(r);
      },
    },
    {
      method: "GET",
      path: "/v1/models/",
      nested: true,
      envelope: sdkEnvelope,
      handle: async (r, rest) => {
        await admit(r, app);
        const res = extras.listing.model(r, rest);
        if (res) return res;
        const meant = rest.includes("/") ? undefined : app.catalogue.suggest(rest);
        throw new GatewayError(
          404,
          `model ${JSON.stringify(rest.slice(0, 200))} is not in the catalogue` +
            (meant ? `; did you mean ${JSON.stringify(meant)}?` : ""),
        );
      },
    },
    {
      method: "GET",
      path: "/v1/embeddings/models",
      envelope: "coded",
      handle: async (r) => {
        await admit(r, app);
        return extras.listing.embeddingModels(r);
      },
    },
    {
      method: "POST",
      path: "/v1/chat/completions",
      envelope: "generic",
      handle: (r) => handleText(FORMATS.chat, r, app),
    },
    {
      method: "POST",
      path: "/v1/messages",
      envelope: "messages",
      handle: (r) => handleText(FORMATS.messages, r, app),
    },
    {
      method: "POST",
      path: "/v1/responses",
      envelope: "generic",
      handle: (r) => handleText(FORMATS.responses, r, app),
    },
    {
      method: "GET",
      path: "/v1/generations",
      envelope: "generic",
      handle: (r) => listGenerations(r, app),
    },
    {
      method: "GET",
      path: "/v1/generations/",
      envelope: "generic",
      handle: (r, rest) => getGeneration(r, rest, app),
    },
    { method: "GET", path: "/v1/key", envelope: "generic", handle: (r) => keyInfo(r, app) },
    { method: "GET", path: "/v1/credits", envelope: "generic", handle: (r) => credits(r, app) },
    ...(extras.routes ?? []),
  ];
  const exact = new Map<string, Route[]>();
  const prefixed: Route[] = [];
  for (const r of routes) {
    if (r.path.endsWith("/") && r.path.length > 1) prefixed.push(r);
    else exact.set(r.path, [...(exact.get(r.path) ?? []), r]);
  }

  const handle: Handler = async (req, info) => {
    const pathname = pathOf(req.url);
    const path = pathname.length > 1 ? pathname.replace(/\/+$/, "") : pathname;
    let candidates = exact.get(path);
    let rest = "";
    if (!candidates) {
      const p = prefixed.find((r) => path.startsWith(r.path) && path.length > r.path.length);
      if (p && (p.nested || !path.slice(p.path.length).includes("/"))) {
        candidates = prefixed.filter((r) => r.path === p.path);
        rest = decodeRest(path.slice(p.path.length));
      }
    }
    if (!candidates) return renderNotFound();
    if (req.method === "OPTIONS" && req.headers.has("access-control-request-method")) {
      return preflight(req, candidates.map((r) => r.method));
    }
    if (/\bwebsocket\b/i.test(req.headers.get("upgrade") ?? "")) {
      // No endpoint speaks WebSocket. Codex's built-in OpenAI provider opens its responses
      // stream as one first: a 426 has it post over HTTP at once, where any other refusal is
      // retried five times (seconds, and an error line each) at the start of every session.
      return renderError(
        envelopeOf(candidates[0], req),
        new GatewayError(426, `${path} does not speak WebSocket; send the request over HTTP`),
      );
    }
    const method = req.method === "HEAD" ? "GET" : req.method;
    const route = candidates.find((r) => r.method === method);
    if (!route) {
      const allow = candidates.map((r) => r.method).join(", ");
      return renderError(
        envelopeOf(candidates[0], req),
        new GatewayError(405, `method ${req.method} is not allowed on ${path}; use ${allow}`),
        { allow },
      );
    }
    try {
      return await route.handle(req, rest, info ?? { remoteAddr: "" });
    } catch (e) {
      if (isGatewayError(e)) {
        if (e.code === "RATE_LIMITED" && e.status === 429) {
          return renderRateLimited(e.retryAfter ?? 1);
        }
        return renderError(envelopeOf(route, req), e);
      }
      app.log.log("error", "unhandled error", { path, error: (e as Error)?.name });
      return renderError(envelopeOf(route, req), internalError());
    }
  };
  // A browser's request (it alone sends Origin) may read the answer from any page: the key in
  // its Authorization header is what authorises it, not a cookie.
  return (req, info) =>
    req.headers.has("origin") ? handle(req, info).then(withCors) : handle(req, info);
}

const envelopeOf = (route: Route, req: Request): EnvelopeFamily =>
  typeof route.envelope === "function" ? route.envelope(req) : route.envelope;

/**
 * The model listings serve both SDKs: Anthropic's (it always sends `anthropic-version`) reads
 * its errors' `type` (`not_found_error`, `authentication_error`) from its own envelope.
 */
const sdkEnvelope = (req: Request): EnvelopeFamily =>
  req.headers.has("anthropic-version") ? "messages" : "generic";

// What the SDKs decide a retry by (`retry-after`, `x-should-retry`) must be readable in a
// browser too, or a refusal no retry can get past is retried there all the same.
const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers":
    "x-generation-id, x-request-id, request-id, retry-after, x-should-retry",
};

function withCors(res: Response): Response {
  try {
    for (const [k, v] of Object.entries(CORS_HEADERS)) res.headers.set(k, v);
    return res;
  } catch {
    // A response whose headers cannot change (one passed on from a fetch): a copy can.
    const copy = new Response(res.body, res);
    for (const [k, v] of Object.entries(CORS_HEADERS)) copy.headers.set(k, v);
    return copy;
  }
}

/** A CORS preflight: the route's methods, and whatever headers the browser means to send. */
function preflight(req: Request, methods: string[]): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-origin": "*",
      "access-control-allow-methods": [...methods, "OPTIONS"].join(", "),
      "access-control-allow-headers": req.headers.get("access-control-request-headers") ??
        "authorization, content-type",
      "access-control-max-age": "86400",
    },
  });
}

/**
 * A path remainder as its route reads it: percent-escapes decoded. A malformed escape is
 * kept as sent: it is part of no id, so the lookup finds nothing instead of failing.
 */
function decodeRest(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function text(body: string, status = 200): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

/**
 * The path of a request URL, read off the string: parsing a `URL` costs more than the
 * routing it serves. A path that needs normalising (dot segments, escapes, backslashes)
 * takes the parser's reading.
 */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  let end = url.length;
  for (let i = start; i < url.length; i++) {
    const c = url[i];
    if (c === "?" || c === "#") {
      end = i;
      break;
    }
    if (c === "%" || c === "\\" || (c === "." && url[i - 1] === "/")) return new URL(url).pathname;
  }
  return url.slice(start, end);
}

import { createHash } from "node:crypto";
import { type Catalogue, type CatalogueModel, STANDARD_PRICE_KEYS } from "./catalogue.ts";
import { publicPrice, publicPricing, type Rates } from "./pricing.ts";

/** A price as the catalogue writes one (USD, plain decimal). */
const PRICE = /^\d+(\.\d+)?$/;

/**
 * GET /v1/models and GET /v1/embeddings/models. The catalogue is fixed for the life of the
 * process, so each body is rendered once, with a strong ETag, and served from memory; the
 * edge caches it (spec: "cached at the network edge") and revalidates with If-None-Match.
 */
export interface Listing {
  models(req: Request): Response;
  embeddingModels(req: Request): Response;
  /** One entry of either listing by id (the OpenAI SDK's `models.retrieve`); null if none. */
  model(req: Request, id: string): Response | null;
}

/** Browsers re-check after a minute; shared caches hold five, since prices change by redeploy. */
const CACHE_CONTROL = "public, max-age=60, s-maxage=300";

export function createListing(catalogue: Catalogue, rates: Rates): Listing {
  const generative = catalogue.generative().map((m) => publicModel(m, rates));
  const aliases = catalogue.aliases().map(({ alias, target }) => ({
    ...publicModel(target, rates),
    id: alias.id,
    canonical_slug: alias.canonical_slug,
    name: alias.name,
    created: alias.created,
    description: alias.description,
    ...sdkFields(alias),
  }));
  const embedding = catalogue.embeddingModels().map((m) => publicModel(m, rates));
  const allModels = newestFirst([...generative, ...aliases]);
  const allEmbeddings = newestFirst(embedding);
  const models = paged(allModels, cachedJson(page(allModels)));
  const embeddings = paged(allEmbeddings, cachedJson(page(allEmbeddings)));
  const byId = new Map([...generative, ...aliases, ...embedding].map((m) => [m.id, m]));
  // Rendered on first request: most of ~500 entries are never asked for one by one.
  const one = new Map<string, (req: Request) => Response>();
  return {
    models,
    embeddingModels: embeddings,
    model(req, id) {
      let render = one.get(id);
      if (!render) {
        const m = byId.get(id);
        if (!m) return null;
        one.set(id, render = cachedJson(m));
      }
      return render(req);
    },
  };
}

/**
 * The spec's listing root, `{ data }`, with what the SDKs' list types also read: OpenAI's
 * `object: "list"`, Anthropic's page fields (without paging parameters one page holds every
 * model).
 */
function page(models: PublicModel[], hasMore = false) {
  return {
    object: "list",
    data: models,
    has_more: hasMore,
    first_id: models[0]?.id ?? null,
    last_id: models.at(-1)?.id ?? null,
  };
}

/** Anthropic's list parameters: at most this many a page, and this many when none is asked. */
const PAGE_MAX = 1000;
const PAGE_DEFAULT = 20;

/**
 * Anthropic's paging (`limit`, `after_id`, `before_id`, as its SDK's pager and hand-written
 * loops send them); without any of them, the whole cached listing.
 */
function paged(all: PublicModel[], whole: (req: Request) => Response): (req: Request) => Response {
  return (req) => {
    const q = new URL(req.url).searchParams;
    if (!q.has("limit") && !q.has("after_id") && !q.has("before_id")) return whole(req);
    const asked = Number(q.get("limit") ?? PAGE_DEFAULT);
    const limit = Number.isInteger(asked) ? Math.min(PAGE_MAX, Math.max(1, asked)) : PAGE_DEFAULT;
    const at = (id: string | null) => id === null ? -1 : all.findIndex((m) => m.id === id);
    const before = q.get("before_id");
    let slice: PublicModel[];
    let hasMore: boolean;
    if (before !== null) {
      const end = Math.max(0, at(before));
      const start = Math.max(0, end - limit);
      slice = all.slice(start, end);
      hasMore = start > 0;
    } else {
      const after = q.get("after_id");
      const start = after === null ? 0 : at(after) < 0 ? all.length : at(after) + 1;
      slice = all.slice(start, start + limit);
      hasMore = start + limit < all.length;
    }
    return new Response(JSON.stringify(page(slice, hasMore)), {
      headers: { "content-type": "application/json", "cache-control": CACHE_CONTROL },
    });
  };
}

/**
 * The spec's Model object, field for field, prices in roubles with markup, then the fields
 * the SDKs' model types declare (OpenAI's `object`, `owned_by`; Anthropic's `type`,
 * `display_name`, `created_at`, `lifecycle`). Seed-only fields (image capabilities, dimensions, output cap)
 * are for the gateway, not shown; prices beyond the spec's keys are (in `pricing`), and tiers
 * (`pricing_overrides`).
 */
export function publicModel(m: CatalogueModel, rates: Rates) {
  const usd: Record<string, string> = {};
  for (const key of STANDARD_PRICE_KEYS) usd[key] = m.pricing[key] ?? "0";
  // The other prices the model is billed at (one-hour cache writes, audio, image output),
  // where it has them: a customer can check every debit against the listing.
  for (const [key, v] of Object.entries(m.pricing)) {
    if (!(key in usd) && typeof v === "string" && PRICE.test(v)) usd[key] = v;
  }
  // Tiers (long prompts, hours of the day) that replace some prices: their prices in
  // roubles, their conditions as they are. Beside `pricing`, whose values the spec makes all
  // strings.
  const tiers = m.pricing_overrides?.length
    ? {
      pricing_overrides: m.pricing_overrides.map((tier) =>
        Object.fromEntries(
          Object.entries(tier).map((
            [k, v],
          ) => [k, typeof v === "string" && PRICE.test(v) ? publicPrice(v, rates) : v]),
        )
      ),
    }
    : {};
  return {
    id: m.id,
    canonical_slug: m.canonical_slug,
    name: m.name,
    created: m.created,
    description: m.description,
    context_length: m.context_length,
    architecture: {
      input_modalities: m.architecture.input_modalities,
      output_modalities: m.architecture.output_modalities,
      tokenizer: m.architecture.tokenizer,
      instruct_type: m.architecture.instruct_type,
    },
    pricing: publicPricing(usd, rates),
    ...tiers,
    per_request_limits: m.per_request_limits,
    supported_parameters: m.supported_parameters,
    ...sdkFields(m),
  };
}

/** What the SDKs' model types read, from the spec's fields. */
function sdkFields(m: { id: string; name: string; created: number }) {
  return {
    object: "model",
    owned_by: m.id.replace(/^~/, "").split("/")[0],
    type: "model",
    display_name: m.name,
    created_at: new Date(m.created * 1000).toISOString().replace(".000Z", "Z"),
    // Required in Anthropic's ModelInfo: every model listed is one the gateway serves.
    lifecycle: "active",
  };
}

type PublicModel = ReturnType<typeof publicModel>;

/** As the upstream lists them: newest first; id breaks ties so the body (and ETag) is stable. */
function newestFirst(models: PublicModel[]): PublicModel[] {
  return models.sort((a, b) => b.created - a.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function cachedJson(value: unknown): (req: Request) => Response {
  const body = JSON.stringify(value);
  const length = String(new TextEncoder().encode(body).byteLength);
  const etag = `"${createHash("sha256").update(body).digest("base64url")}"`;
  return (req) => {
    const headers = { "etag": etag, "cache-control": CACHE_CONTROL };
    if (matchesNoneMatch(req.headers.get("if-none-match"), etag)) {
      return new Response(null, { status: 304, headers });
    }
    const full = { ...headers, "content-type": "application/json" };
    if (req.method !== "HEAD") return new Response(body, { status: 200, headers: full });
    // A HEAD answer says how long the GET body is.
    return new Response(null, { status: 200, headers: { ...full, "content-length": length } });
  };
}

/**
 * RFC 9110 §13.1.2: If-None-Match is a list of entity tags or "*", compared weakly — an edge
 * that compressed the body may hand back our tag as W/"…", which still names this body.
 */
export function matchesNoneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header.trim() === "*") return true;
  const ours = opaque(etag);
  for (const m of header.matchAll(/(?:W\/)?("[^"]*")/g)) {
    if (m[1] === ours) return true;
  }
  return false;
}

function opaque(tag: string): string {
  return tag.startsWith("W/") ? tag.slice(2) : tag;
}

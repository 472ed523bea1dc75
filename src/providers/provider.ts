import { z } from "zod";

/**
 * A provider is data: where it lives, which protocols it speaks, which catalogue slugs it
 * serves and under what upstream name. The code for a protocol lives in protocols/; many
 * providers share one protocol. Keys come from the environment variable the file names,
 * never from the file itself; a provider whose key is unset is disabled.
 */
export const PROTOCOLS = [
  "openai-chat",
  "anthropic-messages",
  "openai-responses",
  "openai-embeddings",
  "openai-images",
] as const;
export type Protocol = typeof PROTOCOLS[number];

const timeouts = z.strictObject({
  /**
   * Until a stream's response headers arrive (connect + first byte), and then until its body
   * says anything (an upstream that answers headers and stays silent is failed over).
   */
  firstByteMs: z.number().int().positive().default(60_000),
  /**
   * A stream that has spoken (a role chunk, `message_start`) but sent no token yet: reasoning
   * models think silently for minutes before their first token, and the work is billed, so
   * it is not thrown away for another provider after a minute.
   */
  firstTokenMs: z.number().int().positive().default(600_000),
  /** A whole non-streaming answer: its headers come only once it is complete. */
  responseMs: z.number().int().positive().default(600_000),
  /** Longest silence between two chunks of a streaming body. */
  idleMs: z.number().int().positive().default(120_000),
  /** Image generation is slow (spec: suggest ≥ 120 s). */
  imagesMs: z.number().int().positive().default(180_000),
});

/** The catalogue's price keys (USD per token, image, request or search). */
const PRICE_KEYS = [
  "prompt",
  "completion",
  "request",
  "image",
  "image_token",
  "image_output",
  "audio",
  "audio_output",
  "input_audio_cache",
  "input_cache_read",
  "input_cache_write",
  "input_cache_write_1h",
  "internal_reasoning",
  "web_search",
];

/**
 * A price override is checked at start: a misspelt key or a value that is not a price would
 * otherwise count as 0, and make what it was meant to price free.
 */
const priceOverrides = z.record(
  z.string(),
  z.string().regex(/^\d+(\.\d+)?$/, 'a price is a decimal string of USD, such as "0.0000025"'),
).superRefine((table, ctx) => {
  for (const k of Object.keys(table)) {
    if (!PRICE_KEYS.includes(k)) {
      ctx.addIssue({
        code: "custom",
        path: [k],
        message: `unknown price key "${k}" (the catalogue's: ${PRICE_KEYS.join(", ")})`,
      });
    }
  }
});

/**
 * Strict objects: a misspelt field (`baseURL`, `keyenv`) would otherwise be dropped in
 * silence, and the provider run on a default the operator meant to replace.
 */
const providerSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/),
  protocols: z.array(z.enum(PROTOCOLS)).min(1),
  baseUrl: z.string().url().regex(/^https?:\/\//, "an http:// or https:// URL"),
  baseUrlEnv: z.string().optional(),
  keyEnv: z.string(),
  priority: z.number().int().default(100),
  timeouts: timeouts.default({
    firstByteMs: 60_000,
    firstTokenMs: 600_000,
    responseMs: 600_000,
    idleMs: 120_000,
    imagesMs: 180_000,
  }),
  /** Slug patterns served: exact slugs, `vendor/*`, or `*`. */
  serves: z.array(z.string()).default([]),
  /** Explicit slug → upstream name; wins over the template. */
  models: z.record(z.string(), z.string()).default({}),
  /** `{slug}` (whole slug), `{vendor}`, `{model}` (the part after the vendor). */
  upstreamName: z.string().default("{model}"),
  /** Replacements applied to the templated name, e.g. Anthropic's dots → dashes. */
  nameReplace: z.array(z.tuple([z.string(), z.string()])).default([]),
  /**
   * Slug → USD price overrides (the catalogue's pricing keys): each key given replaces the
   * catalogue's price, the others keep it.
   */
  prices: z.record(z.string(), priceOverrides).default({}),
  /**
   * USD per search of the provider's hosted web search, for models whose catalogue price for
   * it is zero: the listing gives none for OpenAI's non-reasoning models, which OpenAI bills
   * per search all the same.
   */
  webSearchUsd: z.string().regex(/^\d+(\.\d+)?$/).optional(),
  /** Extra headers on every call, their names lower-cased (the calls' own are set over them). */
  headers: z.record(z.string(), z.string()).default({}).transform((h) =>
    Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]))
  ),
  /**
   * Slug patterns (`*` matches anything) the provider serves through `openai-responses`
   * only — OpenAI answers 404 on /chat/completions for its codex and pro models.
   */
  responsesOnly: z.array(z.string()).default([]),
  /**
   * Slug patterns the provider serves through `openai-chat` only: OpenAI's audio models are on
   * /chat/completions alone (its responses API refuses them), so a responses client's call to
   * one is transcoded rather than passed through to be refused.
   */
  chatOnly: z.array(z.string()).default([]),
  /**
   * Slug patterns whose calls with tools go through `openai-responses`: OpenAI's chat API
   * refuses function tools beside reasoning on its newer models ("Function tools with
   * reasoning_effort are not supported … use /v1/responses"), and gpt-5.6 applies a default
   * effort even when none is asked.
   */
  responsesForTools: z.array(z.string()).default([]),
  /**
   * Slug patterns the provider does not serve although `serves` takes them: Anthropic's
   * `-fast` entries are its fast mode, a setting of the base model billed at six times its
   * price, not a model name its API knows; OpenAI's API knows none of OpenRouter's own
   * `openai/` offers (`o4-mini-high` is an effort, `gpt-5-image` GPT-5 with OpenRouter's image
   * tool, gpt-oss runs at other hosts, `gpt-3.5-turbo-instruct` its chat API refuses): its
   * 404 for them would cost every call a round trip before the failover, and fail it where
   * no aggregator is configured.
   */
  skips: z.array(z.string()).default([]),
  /**
   * Slug patterns of Anthropic models that think only adaptively: they refuse a thinking
   * budget (`thinking.type` "enabled"), and are sent `{type: "adaptive"}` with
   * `output_config.effort` instead.
   */
  adaptiveThinking: z.array(z.string()).default([]),
  /**
   * Slug patterns of Anthropic models before the adaptive ones that take
   * `output_config.effort` (Opus 4.5); the others refuse it with a 400.
   */
  effortBeforeAdaptive: z.array(z.string()).default([]),
  /**
   * Models listed with a longer window than the provider gives without a beta flag (Anthropic's
   * Sonnet 4 and 4.5: 1M tokens with `context-1m-2025-08-07`, else 200K). A call refused as
   * past the window is made once more with the flag; not sent before, as an account without
   * the flag's access has every call carrying it refused.
   */
  contextBeta: z.strictObject({
    beta: z.string().regex(/^[A-Za-z0-9._-]+$/),
    models: z.array(z.string()).min(1),
  }).optional(),
  /**
   * Reasoning efforts each model takes (efforts.ts): every call is sent the nearest, a
   * pass-through's own field too.
   * The first entry whose patterns name the slug applies; a model none names takes any.
   */
  reasoningEfforts: z.array(z.strictObject({
    models: z.array(z.string()).min(1),
    efforts: z.array(z.enum(["none", "minimal", "low", "medium", "high", "xhigh"])).min(1),
  })).default([]),
  quirks: z.strictObject({ openrouterUsage: z.boolean().optional() }).default({}),
});

export type ProviderSpec = z.infer<typeof providerSchema>;

export interface Provider extends ProviderSpec {
  /** The secret; never logged, never rendered. */
  readonly key: string;
}

export const providersFileSchema = z.strictObject({
  providers: z.array(providerSchema).superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, i) => {
      if (seen.has(p.id)) {
        ctx.addIssue({
          code: "custom",
          path: [i, "id"],
          message: `duplicate provider id "${p.id}"`,
        });
      }
      seen.add(p.id);
    });
  }),
});

export interface LoadedProviders {
  enabled: Provider[];
  /** Ids of providers whose key variable is unset. */
  disabled: string[];
}

export function parseProviders(
  json: unknown,
  env: (name: string) => string | undefined,
): LoadedProviders {
  const file = providersFileSchema.parse(json);
  const enabled: Provider[] = [];
  const disabled: string[] = [];
  for (const spec of file.providers) {
    const key = env(spec.keyEnv);
    if (!key) {
      disabled.push(spec.id);
      continue;
    }
    const fromEnv = spec.baseUrlEnv ? env(spec.baseUrlEnv) : undefined;
    if (fromEnv && !/^https?:\/\/[^/?#\s]+/.test(fromEnv)) {
      throw new Error(
        `${spec.baseUrlEnv} must be an http:// or https:// URL (provider ${spec.id})`,
      );
    }
    const baseUrl = fromEnv || spec.baseUrl;
    enabled.push({ ...spec, baseUrl: baseUrl.replace(/\/+$/, ""), key });
  }
  enabled.sort((a, b) => a.priority - b.priority);
  return { enabled, disabled };
}

export async function loadProviders(
  file: string | undefined,
  env: (name: string) => string | undefined,
): Promise<LoadedProviders> {
  const url = file ?? new URL("../../config/providers.json", import.meta.url);
  let text: string;
  try {
    text = await Deno.readTextFile(url);
  } catch (e) {
    throw new Error(e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`not valid JSON: ${(e as Error).message}`);
  }
  return parseProviders(json, env);
}

const upstreamNames = new WeakMap<ProviderSpec, Map<string, string | undefined>>();

/**
 * The upstream model name under which `provider` serves `slug`, or undefined (memoised per
 * catalogue slug: routing asks for every provider on every request).
 */
export function upstreamNameFor(provider: ProviderSpec, slug: string): string | undefined {
  let bySlug = upstreamNames.get(provider);
  if (!bySlug) upstreamNames.set(provider, bySlug = new Map());
  if (bySlug.has(slug)) return bySlug.get(slug);
  const name = nameFor(provider, slug);
  bySlug.set(slug, name);
  return name;
}

function nameFor(provider: ProviderSpec, slug: string): string | undefined {
  const explicit = provider.models[slug];
  if (explicit) return explicit;
  if (!provider.serves.some((p) => matches(p, slug))) return undefined;
  if (provider.skips.some((p) => globMatch(p, slug))) return undefined;
  // A `:variant` (`:batch`, `:free`, `:thinking`) is an aggregator's offer at its own price:
  // only a provider that takes the whole slug serves it. A vendor's own API knows no such
  // name, and would bill its full price for a variant listed cheaper.
  if (slug.includes(":") && !provider.upstreamName.includes("{slug}")) return undefined;
  const slash = slug.indexOf("/");
  const vendor = slash < 0 ? "" : slug.slice(0, slash).replace(/^~/, "");
  const model = slash < 0 ? slug : slug.slice(slash + 1);
  let name = provider.upstreamName
    .replaceAll("{slug}", slug)
    .replaceAll("{vendor}", vendor)
    .replaceAll("{model}", model);
  for (const [from, to] of provider.nameReplace) name = name.replaceAll(from, to);
  return name;
}

function matches(pattern: string, slug: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith("/*")) return slug.startsWith(pattern.slice(0, -1));
  return pattern === slug;
}

/** Each pattern compiled once: routing matches some on every request. */
const globs = new Map<string, RegExp>();

/** `*` matches any run of characters; everything else literally. */
export function globMatch(pattern: string, slug: string): boolean {
  if (!pattern.includes("*")) return pattern === slug;
  let re = globs.get(pattern);
  if (!re) {
    re = new RegExp(
      "^" + pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") +
        "$",
    );
    globs.set(pattern, re);
  }
  return re.test(slug);
}

const protocolCache = new WeakMap<ProviderSpec, Map<string, readonly Protocol[]>>();

/** The protocols `provider` may speak for `slug` (memoised: routing runs on every request). */
export function protocolsFor(provider: ProviderSpec, slug: string): readonly Protocol[] {
  if (provider.responsesOnly.length === 0 && provider.chatOnly.length === 0) {
    return provider.protocols;
  }
  let bySlug = protocolCache.get(provider);
  if (!bySlug) protocolCache.set(provider, bySlug = new Map());
  let out = bySlug.get(slug);
  if (!out) {
    out = provider.responsesOnly.some((p) => globMatch(p, slug))
      ? provider.protocols.filter((p) => p === "openai-responses")
      : provider.chatOnly.some((p) => globMatch(p, slug))
      ? provider.protocols.filter((p) => p !== "openai-responses")
      : provider.protocols;
    bySlug.set(slug, out);
  }
  return out;
}

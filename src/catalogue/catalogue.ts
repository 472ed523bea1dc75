import { z } from "zod";

/**
 * The model catalogue: the committed seed (`catalogue/models.json`, `catalogue/embeddings.json`,
 * built by `scripts/build_catalogue.ts`) loaded once at start. Prices here are the upstream's,
 * in USD; public RUB prices are derived in pricing.ts. Design §4.
 */

const priceString = z.string().regex(/^-?\d+(\.\d+)?$/, "a plain decimal string");

/** Image-generation capabilities, present only where the snapshot describes them (spec: images rule 2). */
const imageSchema = z.object({
  aspect_ratios: z.array(z.string()).optional(),
  resolutions: z.array(z.string()).optional(),
  qualities: z.array(z.string()).optional(),
  backgrounds: z.array(z.string()).optional(),
  output_formats: z.array(z.string()).optional(),
  n_max: z.number().int().positive().optional(),
  input_references_max: z.number().int().nonnegative().optional(),
  seed: z.boolean().optional(),
  /** USD per output image, keyed by resolution or quality; "default" when the price is flat. */
  prices: z.record(z.string(), priceString).optional(),
  /** The upstream's price list as given: per image, per megapixel or per token. */
  unit_prices: z.array(z.object({ billable: z.string(), unit: z.string(), usd: priceString }))
    .optional(),
});

const seedModelSchema = z.object({
  id: z.string().min(3),
  canonical_slug: z.string().min(1),
  name: z.string(),
  created: z.number().int(),
  description: z.string(),
  context_length: z.number().int().nonnegative(),
  architecture: z.object({
    input_modalities: z.array(z.string()),
    output_modalities: z.array(z.string()),
    tokenizer: z.string(),
    instruct_type: z.string().nullable(),
  }),
  /** USD per token, request or unit; the eight spec keys always present, "-1" = dynamic. */
  pricing: z.record(z.string(), priceString),
  /** Tiered prices (above `min_prompt_tokens`, or by time of day) kept as the upstream gave them. */
  pricing_overrides: z.array(z.record(z.string(), z.unknown())).optional(),
  per_request_limits: z.record(z.string(), z.unknown()).nullable(),
  supported_parameters: z.array(z.string()),
  max_completion_tokens: z.number().int().positive().nullable(),
  dimensions: z.number().int().positive().optional(),
  reducible_dimensions: z.boolean().optional(),
  /** The only sizes a reducible model makes, where it makes a few (Voyage's). */
  dimension_options: z.array(z.number().int().positive()).optional(),
  image: imageSchema.optional(),
  /**
   * Reasoning the model cannot turn off (the snapshot's `reasoning.mandatory`), and the
   * efforts it takes where the snapshot lists them.
   */
  reasoning: z.object({ mandatory: z.literal(true), efforts: z.array(z.string()).optional() })
    .optional(),
});

/** `family` is a regular expression over model ids; the alias follows its newest `created` match. */
const aliasSchema = z.object({
  id: z.string().regex(/^~[^/]+\/.+-latest$/, "~vendor/family-latest"),
  canonical_slug: z.string(),
  name: z.string(),
  created: z.number().int(),
  description: z.string(),
  family: z.string().min(1),
});

const modelsFileSchema = z.object({
  models: z.array(seedModelSchema),
  aliases: z.array(aliasSchema).default([]),
});
const embeddingsFileSchema = z.object({ models: z.array(seedModelSchema) });

export type SeedModel = z.infer<typeof seedModelSchema>;
export type ImageCapabilities = z.infer<typeof imageSchema>;
export type AliasDef = z.infer<typeof aliasSchema>;
export type CatalogueModel = SeedModel & { kind: "generative" | "embedding" };
export interface ResolvedAlias {
  alias: AliasDef;
  target: CatalogueModel;
}

/** The spec's standard price keys; the seed builder fills missing ones with "0". */
export const STANDARD_PRICE_KEYS = [
  "prompt",
  "completion",
  "request",
  "image",
  "web_search",
  "internal_reasoning",
  "input_cache_read",
  "input_cache_write",
] as const;

/** Output cap when the upstream states none: large enough for real answers, small enough to hold for. */
const fallbackOutputTokensMax = 32_768;

const DEFAULT_MODELS = new URL("../../catalogue/models.json", import.meta.url);
const DEFAULT_EMBEDDINGS = new URL("../../catalogue/embeddings.json", import.meta.url);

export class Catalogue {
  readonly #byId = new Map<string, CatalogueModel>();
  /** Permanent slugs (`canonical_slug`, dated: "anthropic/claude-4.5-sonnet-20250929"). */
  readonly #byCanonical = new Map<string, CatalogueModel>();
  readonly #aliases = new Map<string, ResolvedAlias>();
  readonly #params = new WeakMap<CatalogueModel, Set<string>>();
  readonly #generative: CatalogueModel[];
  readonly #embedding: CatalogueModel[];
  /** Per price key, the dearest fixed price any model lists: what a dynamic price is held at. */
  #ceiling?: Record<string, string>;
  readonly #charged = new WeakMap<CatalogueModel, Record<string, string>>();

  private constructor(models: SeedModel[], embeddings: SeedModel[], aliases: AliasDef[]) {
    this.#generative = models.map((m) => this.#add(m, "generative"));
    this.#embedding = embeddings.map((m) => this.#add(m, "embedding"));
    for (const alias of aliases) {
      if (this.#byId.has(alias.id) || this.#aliases.has(alias.id)) {
        throw new Error(`catalogue: duplicate id ${alias.id}`);
      }
      this.#aliases.set(alias.id, { alias, target: newestOfFamily(alias, this.#generative) });
    }
  }

  /** Reads and validates the seed files (defaults: the committed seed beside the code). */
  static async load(paths: { models?: string; embeddings?: string } = {}): Promise<Catalogue> {
    const models = await readSeed(modelsFileSchema, paths.models ?? DEFAULT_MODELS);
    const embeddings = await readSeed(embeddingsFileSchema, paths.embeddings ?? DEFAULT_EMBEDDINGS);
    return new Catalogue(models.models, embeddings.models, models.aliases);
  }

  /** Builds a catalogue from in-memory seed entries (tests, tools); aliases resolve here too. */
  static fromData(
    models: SeedModel[],
    embeddings: SeedModel[] = [],
    aliases: AliasDef[] = [],
  ): Catalogue {
    return new Catalogue(models, embeddings, aliases);
  }

  /**
   * A slug as a client sends it: an exact id (including `:free` and other listed variants),
   * an alias `~vendor/family-latest`, which yields the family's newest model, or a model's
   * permanent `canonical_slug` (what an upstream names in its answers). Bare upstream
   * names ("gpt-4o") are not resolved (spec: models are addressed by `<vendor>/<model>`).
   */
  resolve(slugOrAlias: string): CatalogueModel | undefined {
    if (!slugOrAlias.includes("/")) return undefined;
    return this.#byId.get(slugOrAlias) ?? this.#aliases.get(slugOrAlias)?.target ??
      this.#byCanonical.get(slugOrAlias);
  }

  /**
   * The slug a bare upstream name most likely means ("claude-sonnet-4-5-20250929" →
   * "anthropic/claude-sonnet-4.5", "gpt-4o" → "openai/gpt-4o"), for the 400 that refuses it
   * to say so: clients such as Claude Code send their vendor's names until told otherwise.
   */
  suggest(name: string): string | undefined {
    if (name.includes("/")) return undefined;
    const base = name.toLowerCase()
      .replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, "") // a dated snapshot
      .replace(/(\d)-(\d)(?=$|-)/g, "$1.$2"); // "4-5" as the catalogue spells it, "4.5"
    for (const m of [...this.#generative, ...this.#embedding]) {
      if (m.id.slice(m.id.indexOf("/") + 1) === base) return m.id;
    }
    return undefined;
  }

  generative(): CatalogueModel[] {
    return this.#generative;
  }

  embeddingModels(): CatalogueModel[] {
    return this.#embedding;
  }

  /** Every alias with the model it resolves to, in seed order. */
  aliases(): ResolvedAlias[] {
    return [...this.#aliases.values()];
  }

  isEmbedding(m: CatalogueModel): boolean {
    return m.kind === "embedding";
  }

  acceptsImages(m: CatalogueModel): boolean {
    return m.architecture.input_modalities.includes("image");
  }

  outputsImages(m: CatalogueModel): boolean {
    return m.architecture.output_modalities.includes("image");
  }

  supportsParam(m: CatalogueModel, name: string): boolean {
    let set = this.#params.get(m);
    if (!set) {
      set = new Set(m.supported_parameters);
      this.#params.set(m, set);
    }
    return set.has(name);
  }

  /**
   * A model's prices as the gateway holds and bills them. A price the upstream sets at run time
   * ("-1": OpenRouter's routers, which pick a model per request) is unknown before the call,
   * so it stands at the dearest fixed price in the catalogue for that key: the hold then covers
   * whatever model is picked, and output counted without the upstream's figure is never free.
   * (The upstream's reported cost, and the price of the model it names, win when known.)
   */
  chargedPrices(m: CatalogueModel): Record<string, string> {
    if (!isDynamic(m)) return m.pricing;
    let charged = this.#charged.get(m);
    if (!charged) {
      const ceiling = this.#ceiling ??= dearestPrices(this.#generative);
      charged = { ...m.pricing };
      for (const [k, v] of Object.entries(charged)) {
        if (v === DYNAMIC_PRICE) charged[k] = ceiling[k] ?? "0";
      }
      this.#charged.set(m, charged);
    }
    return charged;
  }

  /**
   * The most output tokens a request may ask for: the upstream's stated cap, never above the
   * context window; without a stated cap, the context window up to a fallback.
   */
  maxOutputTokens(m: CatalogueModel): number {
    const ctx = m.context_length > 0 ? m.context_length : Infinity;
    const cap = m.max_completion_tokens ?? fallbackOutputTokensMax;
    return Math.min(cap, ctx);
  }

  #add(seed: SeedModel, kind: CatalogueModel["kind"]): CatalogueModel {
    if (this.#byId.has(seed.id)) throw new Error(`catalogue: duplicate id ${seed.id}`);
    const m: CatalogueModel = { ...seed, kind };
    this.#byId.set(m.id, m);
    // A permanent slug names the model, not its variants (`:batch`, `:free`, which share it).
    const held = this.#byCanonical.get(m.canonical_slug);
    if (!held || (held.id.includes(":") && !m.id.includes(":"))) {
      this.#byCanonical.set(m.canonical_slug, m);
    }
    return m;
  }
}

/** The price string of a price the upstream sets per request. */
export const DYNAMIC_PRICE = "-1";

/** Per price table (never changed in place): routing asks on every request. */
const dynamicPricing = new WeakMap<object, boolean>();

/** True when any of a model's prices is set by the upstream at run time. */
export function isDynamic(m: CatalogueModel): boolean {
  let dynamic = dynamicPricing.get(m.pricing);
  if (dynamic === undefined) {
    dynamic = Object.values(m.pricing).includes(DYNAMIC_PRICE);
    dynamicPricing.set(m.pricing, dynamic);
  }
  return dynamic;
}

/** Per key, the highest price among models whose prices are all fixed. */
function dearestPrices(models: CatalogueModel[]): Record<string, string> {
  const best: Record<string, [number, string]> = {};
  for (const m of models) {
    if (isDynamic(m)) continue;
    for (const [k, v] of Object.entries(m.pricing)) {
      const n = Number(v);
      if (Number.isFinite(n) && n > (best[k]?.[0] ?? 0)) best[k] = [n, v];
    }
  }
  return Object.fromEntries(Object.entries(best).map(([k, [, v]]) => [k, v]));
}

/** Newest `created` wins; equal timestamps fall to the smaller id so the choice is stable. */
function newestOfFamily(alias: AliasDef, models: CatalogueModel[]): CatalogueModel {
  const family = new RegExp(alias.family);
  let best: CatalogueModel | undefined;
  for (const m of models) {
    if (!family.test(m.id)) continue;
    if (!best || m.created > best.created || (m.created === best.created && m.id < best.id)) {
      best = m;
    }
  }
  if (!best) throw new Error(`catalogue: alias ${alias.id} matches no model (${alias.family})`);
  return best;
}

/** Reads one seed file; a bad file stops start-up with one line naming the file and field. */
async function readSeed<T>(schema: z.ZodType<T>, path: string | URL): Promise<T> {
  let json: unknown;
  try {
    json = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    throw new Error(`catalogue: cannot read ${path}: ${(e as Error).message}`);
  }
  const r = schema.safeParse(json);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new Error(`catalogue: ${path}: ${issue.path.join(".")}: ${issue.message}`);
}

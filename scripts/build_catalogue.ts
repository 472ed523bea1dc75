/**
 * Builds the committed catalogue seed from the shared OpenRouter snapshot (see the snapshot's
 * PROVENANCE.md):
 *
 *   deno run --allow-read --allow-write scripts/build_catalogue.ts [sharedCatalogueDir]
 *
 * Writes `catalogue/models.json` (generative models and alias definitions) and
 * `catalogue/embeddings.json`. The output is a pure function of the input: entries sorted by
 * id, fixed key order, so a rebuild from the same snapshot is byte-identical (checked by
 * build_catalogue_test.ts).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cmp, formatDec, parseDec } from "../src/billing/money.ts";
import {
  type AliasDef,
  type ImageCapabilities,
  type SeedModel,
  STANDARD_PRICE_KEYS,
} from "../src/catalogue/catalogue.ts";

/** The fields of an OpenRouter /api/v1/models entry that the seed reads. */
interface UpstreamModel {
  id: string;
  canonical_slug: string;
  name: string;
  created: number;
  description: string;
  context_length: number;
  architecture: {
    input_modalities: string[];
    output_modalities: string[];
    tokenizer: string;
    instruct_type: string | null;
  };
  pricing: Record<string, unknown>;
  top_provider?: { max_completion_tokens?: number | null };
  per_request_limits: Record<string, unknown> | null;
  supported_parameters: string[];
  alias_target?: { slug: string };
  reasoning?: { mandatory?: boolean; supported_efforts?: string[] };
}

/** Spec, GET /v1/models: generative models are those producing text, image, video or audio. */
const GENERATIVE_OUTPUTS = new Set(["text", "image", "video", "audio"]);

/**
 * Alias families. Each `~vendor/family-latest` of the snapshot needs one: a pattern over ids
 * naming the family's versions (not its -fast/-pro/:batch variants). The build checks that
 * the newest match is the snapshot's own `alias_target`, so a pattern cannot silently drift.
 */
const FAMILIES: Record<string, string> = {
  "~anthropic/claude-fable-latest": "^anthropic/claude-fable-\\d+(\\.\\d+)*$",
  "~anthropic/claude-haiku-latest": "^anthropic/claude-haiku-\\d+(\\.\\d+)*$",
  "~anthropic/claude-opus-latest": "^anthropic/claude-opus-\\d+(\\.\\d+)*$",
  "~anthropic/claude-sonnet-latest": "^anthropic/claude-sonnet-\\d+(\\.\\d+)*$",
  "~deepseek/deepseek-v4-flash-latest": "^deepseek/deepseek-v4-flash(-\\d{4})?$",
  "~google/gemini-flash-latest": "^google/gemini-\\d+(\\.\\d+)*-flash(-preview)?$",
  "~google/gemini-pro-latest": "^google/gemini-\\d+(\\.\\d+)*-pro(-preview)?$",
  "~moonshotai/kimi-latest": "^moonshotai/kimi-k\\d+(\\.\\d+)*$",
  // From GPT-5.6 on, "Sol" is the flagship tier (its description says so); Terra and Luna
  // are the smaller tiers, which OpenRouter's own alias does not follow.
  "~openai/gpt-latest": "^openai/gpt-\\d+(\\.\\d+)*(-sol)?$",
  "~openai/gpt-mini-latest": "^openai/gpt-\\d+(\\.\\d+)*-mini$",
  "~x-ai/grok-latest": "^x-ai/grok-\\d+(\\.\\d+)*$",
};

/**
 * Vector sizes. The snapshot states them only in prose, so they are listed here from the
 * model cards; a model missing here has no `dimensions` rather than a guess.
 */
const EMBEDDING_DIMENSIONS: Record<string, number> = {
  "baai/bge-base-en-v1.5": 768, // the launch model (spec, Limits)
  "baai/bge-large-en-v1.5": 1024,
  "baai/bge-m3": 1024,
  "google/gemini-embedding-001": 3072,
  "intfloat/e5-base-v2": 768,
  "intfloat/e5-large-v2": 1024,
  "intfloat/multilingual-e5-large": 1024,
  "mistralai/codestral-embed-2505": 1536,
  "mistralai/mistral-embed-2312": 1024,
  "openai/text-embedding-3-large": 3072,
  "openai/text-embedding-3-small": 1536,
  "openai/text-embedding-ada-002": 1536,
  "qwen/qwen3-embedding-4b": 2560,
  "qwen/qwen3-embedding-8b": 4096,
  "sentence-transformers/all-minilm-l12-v2": 384,
  "sentence-transformers/all-minilm-l6-v2": 384,
  "sentence-transformers/all-mpnet-base-v2": 768,
  "sentence-transformers/multi-qa-mpnet-base-dot-v1": 768,
  "sentence-transformers/paraphrase-minilm-l6-v2": 384,
  "thenlper/gte-base": 768,
  "thenlper/gte-large": 1024,
  // Voyage's default size; the listing states the others it makes (DIMENSION_OPTIONS).
  "voyageai/voyage-4": 1024,
  "voyageai/voyage-4-large": 1024,
  "voyageai/voyage-4-lite": 1024,
  "voyageai/voyage-code-4": 1024,
};

/**
 * Models that make vectors of a few sizes only (Matryoshka sizes, as their listing states):
 * `dimensions` must name one of them.
 */
const DIMENSION_OPTIONS: Record<string, number[]> = {
  "voyageai/voyage-4": [2048, 1024, 512, 256],
  "voyageai/voyage-4-large": [2048, 1024, 512, 256],
  "voyageai/voyage-4-lite": [2048, 1024, 512, 256],
  "voyageai/voyage-code-4": [2048, 1024, 512, 256],
};

/**
 * Models that honour the OpenAI `dimensions` request field (spec: "only if the model supports
 * reduced dimensionality"). Others may shorten vectors through their own field names, which
 * the embeddings endpoint does not translate, so they are not claimed here.
 */
const REDUCIBLE = new Set([
  "openai/text-embedding-3-large",
  "openai/text-embedding-3-small",
  ...Object.keys(DIMENSION_OPTIONS),
]);

export interface BuiltCatalogue {
  /** Formatted JSON text of catalogue/models.json. */
  models: string;
  /** Formatted JSON text of catalogue/embeddings.json. */
  embeddings: string;
  /** What was left out and why, for the operator. */
  notes: string[];
}

export async function buildCatalogue(srcDir: string): Promise<BuiltCatalogue> {
  const notes: string[] = [];
  const all = await readData(join(srcDir, "openrouter-models-all.json"));
  const embeddingSrc = await readData(join(srcDir, "embeddings-models.json"));
  const imageSrc = await readData(join(srcDir, "image-models.json"));
  const images = await readImageCapabilities(join(srcDir, "openrouter-images-api"), notes);

  const byId = new Map(all.map((m) => [m.id, m]));
  for (const m of [...embeddingSrc, ...imageSrc]) {
    if (!byId.has(m.id)) throw new Error(`${m.id} is missing from openrouter-models-all.json`);
  }
  for (const id of images.keys()) {
    if (!byId.has(id)) notes.push(`image capabilities for ${id}: model not in the snapshot`);
  }

  const generative = all.filter((m) => !m.id.startsWith("~") && isGenerative(m));
  const skipped = all.filter((m) => !m.id.startsWith("~") && !isGenerative(m) && !isEmbedding(m));
  if (skipped.length) {
    notes.push(
      `left out ${skipped.length} models with no generative output (speech, ` +
        `transcription, rerank): the gateway has no endpoint for them`,
    );
  }
  const models = sortById(generative.map((m) => seedEntry(m, images.get(m.id))));
  const aliases = aliasDefs(all, generative);
  const embeddings = sortById(embeddingSrc.map(embeddingEntry));
  return {
    models: formatJson({ models, aliases }),
    embeddings: formatJson({ models: embeddings }),
    notes,
  };
}

export async function writeCatalogue(srcDir: string, outDir: string): Promise<BuiltCatalogue> {
  const built = await buildCatalogue(srcDir);
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(join(outDir, "models.json"), built.models);
  await Deno.writeTextFile(join(outDir, "embeddings.json"), built.embeddings);
  return built;
}

function isGenerative(m: UpstreamModel): boolean {
  return m.architecture.output_modalities.some((o) => GENERATIVE_OUTPUTS.has(o));
}

function isEmbedding(m: UpstreamModel): boolean {
  return m.architecture.output_modalities.includes("embeddings");
}

function seedEntry(m: UpstreamModel, image?: ImageCapabilities): SeedModel {
  const { pricing, overrides } = seedPricing(m.pricing);
  const maxOut = m.top_provider?.max_completion_tokens;
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
    pricing,
    ...(overrides ? { pricing_overrides: overrides } : {}),
    per_request_limits: m.per_request_limits,
    supported_parameters: m.supported_parameters,
    // Some image models state 0, which means "not stated", not "no output".
    max_completion_tokens: maxOut && maxOut > 0 ? maxOut : null,
    ...(image ? { image } : {}),
    ...mandatoryReasoning(m),
  };
}

/**
 * A model that cannot stop reasoning (OpenRouter answers 400 to `reasoning: {enabled: false}`):
 * the efforts it takes, so reasoning turned off asks it for the least.
 */
function mandatoryReasoning(m: UpstreamModel): Pick<SeedModel, "reasoning"> {
  const r = m.reasoning;
  if (r?.mandatory !== true) return {};
  const efforts = r.supported_efforts?.filter((e) => typeof e === "string");
  return { reasoning: { mandatory: true, ...(efforts?.length ? { efforts } : {}) } };
}

function embeddingEntry(m: UpstreamModel): SeedModel {
  const base = m.id.replace(/:[^/]*$/, ""); // ":batch" and ":free" share the base model's vectors
  const dimensions = EMBEDDING_DIMENSIONS[base];
  return {
    ...seedEntry(m),
    ...(dimensions ? { dimensions } : {}),
    reducible_dimensions: REDUCIBLE.has(base),
    ...(DIMENSION_OPTIONS[base] ? { dimension_options: DIMENSION_OPTIONS[base] } : {}),
  };
}

/**
 * The 2026 API leaves out zero prices; the seed spells out the standard keys (missing = "0")
 * and keeps every other key. `overrides` is a list, not a price, so it moves out of `pricing`.
 */
function seedPricing(src: Record<string, unknown>) {
  const pricing: Record<string, string> = {};
  for (const key of STANDARD_PRICE_KEYS) pricing[key] = "0";
  let overrides: Record<string, unknown>[] | undefined;
  for (const key of Object.keys(src).sort()) {
    const v = src[key];
    if (key === "overrides" && Array.isArray(v)) overrides = v;
    else if (typeof v === "string" || typeof v === "number") pricing[key] = plain(v);
    else throw new Error(`unexpected price ${key}: ${JSON.stringify(v)}`);
  }
  return { pricing, overrides };
}

/** A price as a plain decimal string ("2e-06" → "0.000002"); "-1" (dynamic) stays "-1". */
function plain(v: string | number): string {
  return formatDec(parseDec(v));
}

function aliasDefs(all: UpstreamModel[], generative: UpstreamModel[]): AliasDef[] {
  const defs = all.filter((m) => m.id.startsWith("~")).map((m): AliasDef => {
    const family = FAMILIES[m.id];
    if (!family) throw new Error(`alias ${m.id} has no family pattern in FAMILIES`);
    const re = new RegExp(family);
    const newest = generative.filter((g) => re.test(g.id))
      .sort((a, b) => b.created - a.created || byCodeUnits(a.id, b.id))[0];
    if (newest?.id !== m.alias_target?.slug) {
      throw new Error(
        `alias ${m.id}: family resolves to ${newest?.id}, snapshot says ${m.alias_target?.slug}`,
      );
    }
    return {
      id: m.id,
      canonical_slug: m.canonical_slug,
      name: m.name,
      created: m.created,
      description: m.description,
      family,
    };
  });
  return sortById(defs);
}

/**
 * Capabilities from OpenRouter's Image API recording: enums of the model, per-unit prices of
 * its endpoints. Where endpoints differ in price the highest is kept, because the images
 * endpoint checks the balance against an estimate before the run (spec: images rule 3).
 */
async function readImageCapabilities(dir: string, notes: string[]) {
  const listing = JSON.parse(await Deno.readTextFile(join(dir, "images_models.json")));
  const out = new Map<string, ImageCapabilities>();
  for (const m of listing.data as { id: string; supported_parameters: Params }[]) {
    const file = join(dir, "endpoints", m.id.replace("/", "__") + ".json");
    let endpoints: { pricing: RawUnitPrice[] }[] = [];
    try {
      endpoints = JSON.parse(await Deno.readTextFile(file)).endpoints;
    } catch {
      notes.push(`image prices for ${m.id}: no endpoints file`);
    }
    out.set(m.id, imageCapabilities(m.supported_parameters, endpoints.flatMap((e) => e.pricing)));
  }
  return out;
}

type Params = Record<string, { type: string; values?: string[]; max?: number }>;
type RawUnitPrice = { billable: string; unit: string; cost_usd: number };

function imageCapabilities(p: Params, prices: RawUnitPrice[]): ImageCapabilities {
  const caps: ImageCapabilities = {};
  if (p.aspect_ratio?.values) caps.aspect_ratios = p.aspect_ratio.values;
  if (p.resolution?.values) caps.resolutions = p.resolution.values;
  if (p.quality?.values) caps.qualities = p.quality.values;
  if (p.background?.values) caps.backgrounds = p.background.values;
  if (p.output_format?.values) caps.output_formats = p.output_format.values;
  if (p.n?.max !== undefined) caps.n_max = p.n.max;
  if (p.input_references?.max !== undefined) caps.input_references_max = p.input_references.max;
  if (p.seed) caps.seed = true;
  const units = new Map<string, { billable: string; unit: string; usd: string }>();
  for (const u of prices) {
    const key = `${u.billable}/${u.unit}`;
    const prev = units.get(key);
    if (!prev || cmp(parseDec(prev.usd), parseDec(u.cost_usd)) < 0) {
      units.set(key, { billable: u.billable, unit: u.unit, usd: plain(u.cost_usd) });
    }
  }
  const unitPrices = [...units.entries()].sort(([a], [b]) => byCodeUnits(a, b)).map(([, u]) => u);
  if (unitPrices.length) caps.unit_prices = unitPrices;
  // The recording prices per image without a resolution or quality split; one flat price.
  const perImage = units.get("output_image/image");
  if (perImage) caps.prices = { default: perImage.usd };
  return caps;
}

async function readData(path: string): Promise<UpstreamModel[]> {
  const json = JSON.parse(await Deno.readTextFile(path));
  if (!Array.isArray(json?.data)) throw new Error(`${path}: expected { data: [...] }`);
  return json.data;
}

/** Locale-independent order, so the output is the same on every machine. */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortById<T extends { id: string }>(xs: T[]): T[] {
  return xs.sort((a, b) => byCodeUnits(a.id, b.id));
}

function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}

if (import.meta.main) {
  const repo = new URL("..", import.meta.url);
  const src = Deno.args[0] ?? fileURLToPath(new URL("../shared/catalogue", repo));
  const out = fileURLToPath(new URL("catalogue", repo));
  const built = await writeCatalogue(src, out);
  for (const note of built.notes) console.error(`note: ${note}`);
  const counts = [built.models, built.embeddings].map((t) => JSON.parse(t).models.length);
  console.log(`wrote ${out}/models.json (${counts[0]} models), embeddings.json (${counts[1]})`);
}

import assert from "node:assert/strict";
import { Catalogue, type SeedModel } from "./catalogue.ts";
import { createListing, matchesNoneMatch } from "./listing.ts";
import { publicPrice, type Rates } from "./pricing.ts";

const rates: Rates = { usdRub: "92.5", markup: "0.05" };
const catalogue = await Catalogue.load();
const listing = createListing(catalogue, rates);

const MODEL_FIELDS = [
  "id",
  "canonical_slug",
  "name",
  "created",
  "description",
  "context_length",
  "architecture",
  "pricing",
  "per_request_limits",
  "supported_parameters",
];
const PRICE_KEYS = [
  "prompt",
  "completion",
  "request",
  "image",
  "web_search",
  "internal_reasoning",
  "input_cache_read",
  "input_cache_write",
];
/** Prices beyond the spec's that some models are billed at. */
const EXTRA_PRICE_KEYS = [
  "image_output",
  "image_token",
  "audio",
  "audio_output",
  "input_audio_cache",
  "input_cache_write_1h",
];

type Json = Record<string, unknown>;

function get(path: string, headers: HeadersInit = {}, method = "GET") {
  return new Request(`http://gateway.test${path}`, { method, headers });
}

/** What the SDKs' model types declare besides the spec's fields (OpenAI's, Anthropic's). */
const SDK_FIELDS = ["object", "owned_by", "type", "display_name", "created_at", "lifecycle"];

/** The spec's root, then the SDKs' list fields: OpenAI's `object`, Anthropic's page. */
async function data(res: Response): Promise<Json[]> {
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["object", "data", "has_more", "first_id", "last_id"]);
  assert.equal(body.object, "list");
  assert.equal(body.has_more, false);
  assert.equal(body.first_id, body.data[0].id);
  assert.equal(body.last_id, body.data.at(-1).id);
  return body.data;
}

/**
 * The spec's Model object: these fields, these types, then the SDKs' model fields drawn from
 * them, nothing else.
 */
function assertModel(m: Json) {
  // The spec's fields in its order (a model with price tiers lists them after `pricing`).
  const fields = Object.keys(m).filter((k) => k !== "pricing_overrides");
  assert.deepEqual(fields, [...MODEL_FIELDS, ...SDK_FIELDS], String(m.id));
  if ("pricing_overrides" in m) {
    assert.equal(Object.keys(m).indexOf("pricing_overrides"), MODEL_FIELDS.indexOf("pricing") + 1);
    assert.ok(Array.isArray(m.pricing_overrides), String(m.id));
  }
  assert.equal(m.object, "model");
  assert.equal(m.type, "model");
  assert.equal(m.owned_by, (m.id as string).replace(/^~/, "").split("/")[0]);
  assert.equal(m.display_name, m.name);
  assert.equal(Date.parse(m.created_at as string), (m.created as number) * 1000);
  assert.equal(m.lifecycle, "active");
  for (const k of ["id", "canonical_slug", "name", "description"]) {
    assert.equal(typeof m[k], "string", `${m.id} ${k}`);
  }
  assert.ok(Number.isInteger(m.created) && Number.isInteger(m.context_length), String(m.id));
  const arch = m.architecture as Json;
  assert.deepEqual(Object.keys(arch), [
    "input_modalities",
    "output_modalities",
    "tokenizer",
    "instruct_type",
  ]);
  for (const k of ["input_modalities", "output_modalities"]) {
    assert.ok((arch[k] as unknown[]).every((x) => typeof x === "string"), `${m.id} ${k}`);
  }
  assert.equal(typeof arch.tokenizer, "string");
  assert.ok(arch.instruct_type === null || typeof arch.instruct_type === "string");
  const pricing = m.pricing as Json;
  // The spec's keys, in its order; then the other prices the model has, and its tiers.
  const keys = Object.keys(pricing);
  assert.deepEqual(keys.slice(0, PRICE_KEYS.length), PRICE_KEYS, String(m.id));
  for (const k of keys.slice(PRICE_KEYS.length)) {
    assert.ok(EXTRA_PRICE_KEYS.includes(k), `${m.id} ${k}`);
  }
  // All strings, as the spec says.
  for (const v of Object.values(pricing)) assert.match(v as string, /^-?\d+(\.\d{1,18})?$/);
  assert.ok(m.per_request_limits === null || typeof m.per_request_limits === "object");
  assert.ok((m.supported_parameters as unknown[]).every((x) => typeof x === "string"));
}

Deno.test("GET /v1/models lists over 300 generative models with exactly the Model fields", async () => {
  const res = listing.models(get("/v1/models"));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const models = await data(res);
  assert.ok(models.length > 300, `only ${models.length}`);
  for (const m of models) assertModel(m);
  const ids = new Set(models.map((m) => m.id));
  assert.equal(ids.size, models.length);
  for (const m of models) {
    const out = (m.architecture as Json).output_modalities as string[];
    assert.ok(!out.includes("embeddings"), String(m.id));
  }
  assert.ok(!ids.has("baai/bge-base-en-v1.5"));
});

Deno.test("aliases are listed under their own slug with the current target's data", async () => {
  const models = await data(listing.models(get("/v1/models")));
  const alias = models.find((m) => m.id === "~anthropic/claude-opus-latest");
  const target = models.find((m) => m.id === "anthropic/claude-opus-5");
  assert.ok(alias && target);
  assert.equal(alias.canonical_slug, "~anthropic/claude-opus-latest");
  assert.deepEqual(alias.pricing, target.pricing);
  assert.equal(alias.context_length, target.context_length);
});

Deno.test("GET /v1/embeddings/models lists only embedding models, the launch model included", async () => {
  const models = await data(listing.embeddingModels(get("/v1/embeddings/models")));
  assert.equal(models.length, catalogue.embeddingModels().length);
  for (const m of models) {
    assertModel(m);
    assert.deepEqual((m.architecture as Json).output_modalities, ["embeddings"]);
  }
  const launch = models.find((m) => m.id === "baai/bge-base-en-v1.5");
  assert.ok(launch);
  assert.equal(launch.context_length, 512);
  // 0.000000005 USD × 92.5 × 1.05
  assert.equal((launch.pricing as Json).prompt, "0.000000485625");
});

Deno.test("prices are shown in roubles with markup; dynamic stays -1", async () => {
  const models = await data(listing.models(get("/v1/models")));
  const auto = models.find((m) => m.id === "openrouter/auto");
  assert.equal((auto?.pricing as Json).prompt, "-1");
  const seedModel = catalogue.resolve("openai/gpt-4o")!;
  const listed = models.find((m) => m.id === "openai/gpt-4o")!;
  assert.notEqual((listed.pricing as Json).prompt, seedModel.pricing.prompt);
  assert.equal((listed.pricing as Json).request, "0");
});

Deno.test("responses are cacheable at the edge and carry a strong ETag", () => {
  const res = listing.models(get("/v1/models"));
  const cc = res.headers.get("cache-control") ?? "";
  assert.match(cc, /\bpublic\b/);
  assert.match(cc, /\bs-maxage=\d+/);
  assert.match(res.headers.get("etag") ?? "", /^"[A-Za-z0-9_-]{43}"$/);
  const other = listing.embeddingModels(get("/v1/embeddings/models"));
  assert.notEqual(other.headers.get("etag"), res.headers.get("etag"));
});

Deno.test("a matching If-None-Match gets 304 with no body; anything else gets 200", async () => {
  const etag = listing.models(get("/v1/models")).headers.get("etag")!;
  for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, "*"]) {
    const res = listing.models(get("/v1/models", { "if-none-match": inm }));
    assert.equal(res.status, 304, inm);
    assert.equal(res.headers.get("etag"), etag);
    assert.match(res.headers.get("cache-control") ?? "", /s-maxage/);
    assert.equal(res.body, null);
  }
  for (const inm of [`"nope"`, `W/"nope"`, etag.slice(1, -1)]) {
    const res = listing.models(get("/v1/models", { "if-none-match": inm }));
    assert.equal(res.status, 200, inm);
    await res.body?.cancel();
  }
});

Deno.test("HEAD answers with the headers only, the GET body's length among them", async () => {
  const res = listing.models(get("/v1/models", {}, "HEAD"));
  assert.equal(res.status, 200);
  assert.equal(res.body, null);
  assert.ok(res.headers.get("etag"));
  const body = await listing.models(get("/v1/models")).bytes();
  assert.equal(res.headers.get("content-length"), String(body.byteLength));
});

Deno.test("the ETag is stable across constructions and changes with the rates", async () => {
  const again = createListing(await Catalogue.load(), rates);
  const a = listing.models(get("/v1/models"));
  const b = again.models(get("/v1/models"));
  assert.equal(a.headers.get("etag"), b.headers.get("etag"));
  assert.equal(await a.text(), await b.text());
  const dearer = createListing(catalogue, { usdRub: "100", markup: "0.05" });
  assert.notEqual(dearer.models(get("/v1/models")).headers.get("etag"), a.headers.get("etag"));
});

Deno.test("models missing standard price keys are listed with zeros", async () => {
  const m: SeedModel = {
    id: "acme/one",
    canonical_slug: "acme/one-2026",
    name: "Acme One",
    created: 1,
    description: "",
    context_length: 1000,
    architecture: {
      input_modalities: ["text"],
      output_modalities: ["text"],
      tokenizer: "Other",
      instruct_type: null,
    },
    pricing: { prompt: "0.000001", completion: "0" },
    per_request_limits: null,
    supported_parameters: [],
    max_completion_tokens: null,
  };
  const [listed] = await data(createListing(Catalogue.fromData([m]), rates).models(get("/")));
  assertModel(listed);
  assert.deepEqual(listed.pricing, {
    prompt: "0.000097125",
    completion: "0",
    request: "0",
    image: "0",
    web_search: "0",
    internal_reasoning: "0",
    input_cache_read: "0",
    input_cache_write: "0",
  });
});

Deno.test("If-None-Match parsing: lists, wildcard, weak tags, junk", () => {
  const tag = `"abc"`;
  assert.equal(matchesNoneMatch(null, tag), false);
  assert.equal(matchesNoneMatch(" * ", tag), true);
  assert.equal(matchesNoneMatch(`"x", W/"abc"`, tag), true);
  assert.equal(matchesNoneMatch(`"x","abc"`, tag), true);
  assert.equal(matchesNoneMatch(`abc`, tag), false);
  assert.equal(matchesNoneMatch(`"abcd"`, tag), false);
  assert.equal(matchesNoneMatch(``, tag), false);
});

Deno.test("GET /v1/models shows the prices beyond the spec's keys and the tiers a debit uses", async () => {
  const models = await data(listing.models(get("/v1/models")));
  const sonnet = models.find((m) => m.id === "anthropic/claude-sonnet-4.5")!;
  const pricing = sonnet.pricing as Json;
  const overrides = sonnet.pricing_overrides as Json[];
  const seed = catalogue.resolve("anthropic/claude-sonnet-4.5")!;
  assert.equal(
    pricing.input_cache_write_1h,
    publicPrice(seed.pricing.input_cache_write_1h!, rates),
  );
  const tier = overrides.find((t) => t.min_prompt_tokens === 200_000)!;
  assert.ok(tier, "the long-context tier is listed");
  // Twice the base prompt price, in roubles with the markup, as the debit computes it.
  assert.equal(tier.prompt, publicPrice(String(Number(seed.pricing.prompt) * 2), rates));
  assert.equal(tier.prompt, publicPrice(String(seed.pricing_overrides![0].prompt), rates));
  // A model without tiers lists none.
  const mini = models.find((m) => m.id === "openai/gpt-4o-mini")!;
  assert.equal(mini.pricing_overrides, undefined);
});

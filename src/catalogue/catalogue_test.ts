import assert from "node:assert/strict";
import { type AliasDef, Catalogue, type SeedModel } from "./catalogue.ts";

function seed(over: Partial<SeedModel> & { id: string }): SeedModel {
  return {
    canonical_slug: over.id,
    name: over.id,
    created: 1_700_000_000,
    description: "",
    context_length: 8192,
    architecture: {
      input_modalities: ["text"],
      output_modalities: ["text"],
      tokenizer: "Other",
      instruct_type: null,
    },
    pricing: { prompt: "0.000001", completion: "0.000002" },
    per_request_limits: null,
    supported_parameters: ["max_tokens", "temperature"],
    max_completion_tokens: null,
    ...over,
  };
}

function alias(id: string, family: string): AliasDef {
  return { id, canonical_slug: id, name: id, created: 1, description: "", family };
}

const real = await Catalogue.load();

Deno.test("the seed lists more than 300 generative models and no embedding model among them", () => {
  const models = real.generative();
  assert.ok(models.length > 300, `only ${models.length}`);
  for (const m of models) {
    assert.equal(m.kind, "generative");
    assert.ok(!m.architecture.output_modalities.includes("embeddings"), m.id);
    assert.ok(
      m.architecture.output_modalities.some((o) => ["text", "image", "video", "audio"].includes(o)),
      m.id,
    );
  }
});

Deno.test("the seed's embedding models are only embedding models, the launch model included", () => {
  const models = real.embeddingModels();
  assert.ok(models.length > 0);
  for (const m of models) {
    assert.ok(real.isEmbedding(m), m.id);
    assert.deepEqual(m.architecture.output_modalities, ["embeddings"]);
  }
  const launch = real.resolve("baai/bge-base-en-v1.5");
  assert.ok(launch && real.isEmbedding(launch));
  assert.equal(launch.dimensions, 768);
  assert.equal(launch.context_length, 512);
  assert.equal(launch.reducible_dimensions, false);
  assert.equal(real.resolve("openai/text-embedding-3-small")?.reducible_dimensions, true);
});

Deno.test("every seed entry spells out the eight standard prices", () => {
  for (const m of [...real.generative(), ...real.embeddingModels()]) {
    for (
      const key of [
        "prompt",
        "completion",
        "request",
        "image",
        "web_search",
        "internal_reasoning",
        "input_cache_read",
        "input_cache_write",
      ]
    ) {
      assert.match(m.pricing[key], /^-?\d+(\.\d+)?$/, `${m.id} ${key}`);
    }
  }
  assert.equal(real.resolve("openrouter/auto")?.pricing.prompt, "-1");
});

Deno.test("an alias resolves to the newest created model of its family", () => {
  const cat = Catalogue.fromData(
    [
      seed({ id: "acme/rocket-1", created: 100 }),
      seed({ id: "acme/rocket-3", created: 300 }),
      seed({ id: "acme/rocket-2", created: 200 }),
      seed({ id: "acme/rocket-3-fast", created: 400 }), // a variant, not a version
      seed({ id: "other/rocket-9", created: 900 }),
    ],
    [],
    [alias("~acme/rocket-latest", "^acme/rocket-\\d+$")],
  );
  assert.equal(cat.resolve("~acme/rocket-latest")?.id, "acme/rocket-3");
  assert.equal(cat.aliases()[0].target.id, "acme/rocket-3");
});

Deno.test("an alias follows a newer model added to the seed", () => {
  const family = [alias("~acme/rocket-latest", "^acme/rocket-\\d+$")];
  const before = Catalogue.fromData([seed({ id: "acme/rocket-1", created: 100 })], [], family);
  const after = Catalogue.fromData(
    [seed({ id: "acme/rocket-1", created: 100 }), seed({ id: "acme/rocket-2", created: 200 })],
    [],
    family,
  );
  assert.equal(before.resolve("~acme/rocket-latest")?.id, "acme/rocket-1");
  assert.equal(after.resolve("~acme/rocket-latest")?.id, "acme/rocket-2");
});

Deno.test("equal created timestamps resolve to the smaller id, whatever the seed order", () => {
  const family = [alias("~acme/rocket-latest", "^acme/rocket-\\d+$")];
  const a = seed({ id: "acme/rocket-2", created: 5 });
  const b = seed({ id: "acme/rocket-1", created: 5 });
  assert.equal(Catalogue.fromData([a, b], [], family).resolve("~acme/rocket-latest")?.id, b.id);
  assert.equal(Catalogue.fromData([b, a], [], family).resolve("~acme/rocket-latest")?.id, b.id);
});

Deno.test("the seed's aliases resolve to the newest of their families", () => {
  const expected: Record<string, string> = {
    "~anthropic/claude-opus-latest": "anthropic/claude-opus-5",
    "~anthropic/claude-sonnet-latest": "anthropic/claude-sonnet-5",
    "~openai/gpt-latest": "openai/gpt-5.6-sol",
    "~google/gemini-flash-latest": "google/gemini-3.7-flash",
    "~x-ai/grok-latest": "x-ai/grok-4.6",
  };
  for (const [slug, id] of Object.entries(expected)) assert.equal(real.resolve(slug)?.id, id);
  assert.equal(real.aliases().length, 11);
  for (const { alias, target } of real.aliases()) {
    const family = new RegExp(alias.family);
    const newer = real.generative().filter((m) => family.test(m.id) && m.created > target.created);
    assert.deepEqual(newer, [], alias.id);
  }
});

Deno.test("bare upstream names and unknown slugs do not resolve", () => {
  assert.equal(real.resolve("gpt-4o"), undefined);
  assert.equal(real.resolve("claude-opus-5"), undefined);
  assert.equal(real.resolve("openai/no-such-model"), undefined);
  assert.equal(real.resolve("~openai/no-such-latest"), undefined);
  assert.equal(real.resolve("openai/gpt-4o")?.id, "openai/gpt-4o");
});

Deno.test(":free variants resolve exactly as listed", () => {
  const free = real.generative().find((m) => m.id.endsWith(":free"));
  assert.ok(free);
  assert.equal(real.resolve(free.id), free);
});

Deno.test("capability helpers read modalities and parameters", () => {
  const cat = Catalogue.fromData([
    seed({
      id: "acme/painter",
      architecture: {
        input_modalities: ["text", "image"],
        output_modalities: ["image"],
        tokenizer: "Other",
        instruct_type: null,
      },
      supported_parameters: ["seed"],
    }),
    seed({ id: "acme/writer" }),
  ]);
  const painter = cat.resolve("acme/painter")!;
  const writer = cat.resolve("acme/writer")!;
  assert.ok(cat.acceptsImages(painter) && cat.outputsImages(painter));
  assert.ok(!cat.acceptsImages(writer) && !cat.outputsImages(writer));
  assert.ok(cat.supportsParam(painter, "seed"));
  assert.ok(!cat.supportsParam(painter, "tools"));
  assert.ok(cat.supportsParam(writer, "temperature"));
});

Deno.test("maxOutputTokens: the stated cap within the context, else a fallback", () => {
  const cat = Catalogue.fromData([
    seed({ id: "a/stated", context_length: 200_000, max_completion_tokens: 64_000 }),
    seed({ id: "a/over", context_length: 8192, max_completion_tokens: 16_384 }),
    seed({ id: "a/unstated-big", context_length: 1_000_000 }),
    seed({ id: "a/unstated-small", context_length: 4096 }),
    seed({ id: "a/no-context", context_length: 0 }),
  ]);
  const max = (id: string) => cat.maxOutputTokens(cat.resolve(id)!);
  assert.equal(max("a/stated"), 64_000);
  assert.equal(max("a/over"), 8192);
  assert.equal(max("a/unstated-big"), 32_768);
  assert.equal(max("a/unstated-small"), 4096);
  assert.equal(max("a/no-context"), 32_768);
});

Deno.test("a broken catalogue refuses to load", () => {
  assert.throws(
    () => Catalogue.fromData([seed({ id: "a/x" })], [seed({ id: "a/x" })]),
    /duplicate id a\/x/,
  );
  assert.throws(
    () => Catalogue.fromData([seed({ id: "a/x" })], [], [alias("~a/y-latest", "^a/y-\\d+$")]),
    /matches no model/,
  );
});

Deno.test("load names the file and the field of a bad seed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const models = `${dir}/models.json`;
    const embeddings = `${dir}/embeddings.json`;
    await Deno.writeTextFile(embeddings, JSON.stringify({ models: [] }));
    const bad = { ...seed({ id: "a/x" }), pricing: { prompt: "cheap" } };
    await Deno.writeTextFile(models, JSON.stringify({ models: [bad] }));
    await assert.rejects(
      Catalogue.load({ models, embeddings }),
      (e: Error) => e.message.includes(models) && e.message.includes("models.0.pricing.prompt"),
    );
    await assert.rejects(Catalogue.load({ models: `${dir}/none.json`, embeddings }), /none\.json/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("suggest: a bare upstream name → the slug it most likely means; slugs and strangers → none", () => {
  assert.equal(real.suggest("claude-sonnet-4-5-20250929"), "anthropic/claude-sonnet-4.5");
  assert.equal(real.suggest("claude-haiku-4-5"), "anthropic/claude-haiku-4.5");
  assert.equal(real.suggest("claude-opus-4-1-20250805"), "anthropic/claude-opus-4.1");
  assert.equal(real.suggest("gpt-4o-mini"), "openai/gpt-4o-mini");
  assert.equal(real.suggest("bge-base-en-v1.5"), "baai/bge-base-en-v1.5");
  assert.equal(real.suggest("anthropic/claude-sonnet-4.5"), undefined);
  assert.equal(real.suggest("no-such-model-9"), undefined);
  // Never resolved for serving: the name stays unknown.
  assert.equal(real.resolve("claude-sonnet-4-5-20250929"), undefined);
});

Deno.test("catalogue: a permanent slug resolves to its model, not to a variant sharing it", async () => {
  const c = await Catalogue.load();
  assert.equal(
    c.resolve("anthropic/claude-4.5-sonnet-20250929")?.id,
    "anthropic/claude-sonnet-4.5",
  );
  assert.equal(c.resolve("anthropic/claude-4.5-haiku-20251001")?.id, "anthropic/claude-haiku-4.5");
  // An id wins over another model's permanent slug that happens to equal it.
  for (const m of c.generative()) assert.equal(c.resolve(m.id), m);
});

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildCatalogue, writeCatalogue } from "./build_catalogue.ts";

const shared = fileURLToPath(new URL("../../shared/catalogue", import.meta.url));
const committed = fileURLToPath(new URL("../catalogue", import.meta.url));
const ignore = !existsSync(shared);

Deno.test({
  name: "rebuilding from the shared snapshot reproduces the committed seed byte for byte",
  ignore,
  async fn() {
    const out = await Deno.makeTempDir();
    try {
      await writeCatalogue(shared, out);
      for (const file of ["models.json", "embeddings.json"]) {
        const rebuilt = await Deno.readTextFile(`${out}/${file}`);
        const seed = await Deno.readTextFile(`${committed}/${file}`);
        assert.ok(rebuilt === seed, `catalogue/${file} drifted: run deno task catalogue`);
      }
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
});

Deno.test({
  name: "the build keeps generative models, drops non-generative ones, and explains why",
  ignore,
  async fn() {
    const built = await buildCatalogue(shared);
    const { models, aliases } = JSON.parse(built.models);
    const ids = new Set(models.map((m: { id: string }) => m.id));
    assert.ok(ids.has("openai/gpt-4o") && ids.has("google/veo-3.1"));
    assert.ok(!ids.has("baai/bge-base-en-v1.5")); // embeddings live in embeddings.json
    assert.ok(![...ids].some((id) => String(id).startsWith("~"))); // aliases are definitions
    assert.equal(aliases.length, 11);
    assert.ok(built.notes.some((n) => n.includes("speech")));
    const image = models.find((m: { id: string }) => m.id === "bytedance-seed/seedream-4.5");
    assert.deepEqual(image.image.prices, { default: "0.04" });
    assert.deepEqual(image.image.resolutions, ["1K", "2K", "4K"]);
  },
});

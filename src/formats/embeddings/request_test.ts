import assert from "node:assert/strict";
import { Catalogue } from "../../catalogue/catalogue.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import { countInput, parseEmbeddingsRequest } from "./request.ts";

const catalogue = await Catalogue.load();

function fails(body: Record<string, unknown>, code: string, message?: RegExp) {
  assert.throws(() => parseEmbeddingsRequest(body, catalogue), (e: unknown) => {
    assert.ok(e instanceof GatewayError);
    assert.equal(e.status, 400);
    assert.equal(e.code, code);
    if (message) assert.match(e.message, message);
    return true;
  });
}

Deno.test("embeddings input: the five forms and their counted tokens", () => {
  assert.deepEqual(countInput("abcdefgh"), { items: 1, countedTokens: 2, images: 0 });
  assert.deepEqual(countInput(["abcd", "abcdefgh"]), { items: 2, countedTokens: 3, images: 0 });
  assert.deepEqual(countInput([5, 6, 7]), { items: 1, countedTokens: 3, images: 0 });
  assert.deepEqual(countInput([[1, 2], [3]]), { items: 2, countedTokens: 3, images: 0 });
  assert.deepEqual(
    countInput([
      {
        content: [{ type: "text", text: "abcdefgh" }, {
          type: "image_url",
          image_url: { url: "https://x/y.png" },
        }],
      },
      { text: "abcd", image: "https://x/z.png" },
    ]),
    { items: 2, countedTokens: 3, images: 2 },
  );
  for (const bad of [undefined, null, 3, [], [1, "a"], [[1], ["a"]], [[]], [-1], [1.5], [true]]) {
    assert.throws(() => countInput(bad), GatewayError, JSON.stringify(bad));
  }
  assert.throws(() => countInput(new Array(2049).fill("x")), /at most 2048/);
  // Empty texts, which every provider refuses, are the gateway's 400.
  assert.throws(() => countInput(""), /input must not be an empty string/);
  assert.throws(() => countInput(["a", ""]), /input\[1\] must not be an empty string/);
});

Deno.test("embeddings request: model checks", () => {
  fails({ input: "x" }, "MODEL_REQUIRED");
  fails({ model: "nobody/none", input: "x" }, "MODEL_NOT_FOUND");
  fails(
    { model: "openai/gpt-4o-mini", input: "x" },
    "MODEL_NOT_EMBEDDING_CAPABLE",
    /does not support embeddings/,
  );
  fails(
    { model: "baai/bge-base-en-v1.5", input: "x", stream: true },
    "INVALID_REQUEST",
    /do not stream/,
  );
  fails(
    {
      model: "baai/bge-base-en-v1.5",
      input: [{ type: "image_url", image_url: "https://x/y.png" }],
    },
    "INVALID_REQUEST",
    /text only/,
  );
});

Deno.test("embeddings request: encoding_format and dimensions", () => {
  const ok = parseEmbeddingsRequest({ model: "baai/bge-base-en-v1.5", input: "x" }, catalogue);
  assert.equal(ok.encoding, "float");
  assert.equal(ok.items, 1);
  fails({ model: "baai/bge-base-en-v1.5", input: "x", encoding_format: "int8" }, "INVALID_REQUEST");
  fails(
    { model: "baai/bge-base-en-v1.5", input: "x", dimensions: 256 },
    "INVALID_REQUEST",
    /reduced dimensions/,
  );
  fails({ model: "openai/text-embedding-3-small", input: "x", dimensions: 0 }, "INVALID_REQUEST");
  fails(
    { model: "openai/text-embedding-3-small", input: "x", dimensions: 5000 },
    "INVALID_REQUEST",
    /at most 1536/,
  );
  const native = parseEmbeddingsRequest(
    { model: "baai/bge-base-en-v1.5", input: "x", dimensions: 768 },
    catalogue,
  );
  assert.equal("dimensions" in native.body, false);
  const reduced = parseEmbeddingsRequest(
    { model: "openai/text-embedding-3-small", input: "x", dimensions: 256, user: "u", extra: 1 },
    catalogue,
  );
  assert.deepEqual(reduced.body, {
    model: "openai/text-embedding-3-small",
    input: "x",
    dimensions: 256,
    user: "u",
    extra: 1,
  });
  fails({ model: "baai/bge-base-en-v1.5", input: "x", user: 5 }, "INVALID_REQUEST");
  // Voyage makes its Matryoshka sizes only, larger than its default included.
  for (const dimensions of [256, 2048]) {
    const v = parseEmbeddingsRequest(
      { model: "voyageai/voyage-4", input: "x", dimensions },
      catalogue,
    );
    assert.equal(v.body.dimensions, dimensions);
  }
  fails(
    { model: "voyageai/voyage-4-lite", input: "x", dimensions: 300 },
    "INVALID_REQUEST",
    /2048, 1024, 512, 256 numbers; dimensions must be one of them/,
  );
});

Deno.test("embeddings request: a token-id document past the model's context is refused", () => {
  const m = "baai/bge-base-en-v1.5"; // context 512
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i % 1000);
  // Exactly the context: accepted, as one document or among others.
  assert.equal(parseEmbeddingsRequest({ model: m, input: ids(512) }, catalogue).countedTokens, 512);
  parseEmbeddingsRequest({ model: m, input: [ids(3), ids(512)] }, catalogue);
  fails({ model: m, input: ids(513) }, "INVALID_REQUEST", /input has 513 tokens.*at most 512/);
  fails({ model: m, input: [ids(3), ids(513)] }, "INVALID_REQUEST", /input\[1\] has 513 tokens/);
  // Text is the provider's to refuse: the gateway's count of it is an estimate.
  parseEmbeddingsRequest({ model: m, input: "word ".repeat(600) }, catalogue);
});

/**
 * Embeddings end to end: the real `openai` SDK → a real gateway over HTTP → the mock
 * upstream (768-dimensional deterministic vectors); metering checked against the store.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  checkInvariants,
  heldByGenerations,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.ts";
import { nanoToRub } from "../../src/billing/money.ts";
import { estimateTokens } from "../../src/billing/count.ts";

/** The launch model: English, 768 numbers, served by openrouter (openai-embeddings). */
const MODEL = "baai/bge-base-en-v1.5";
/** Reducible dimensions, served by openai first. */
const REDUCIBLE = "openai/text-embedding-3-small";

function client(g: TestGateway, key = g.key) {
  return new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0 });
}

async function withGateway(
  fn: (g: TestGateway) => Promise<void>,
  opts: Parameters<typeof startGateway>[0] = {},
) {
  const g = await startGateway(opts);
  try {
    await fn(g);
    await g.settled();
    assert.deepEqual(await checkInvariants(g.store, [g.accountId]), []);
  } finally {
    await g.close();
  }
}

async function post(g: TestGateway, body: unknown, key: string | null = g.key) {
  const res = await fetch(`${g.baseURL}/embeddings`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

function float32(b64: string): number[] {
  const bytes = Uint8Array.fromBase64(b64);
  const dv = new DataView(bytes.buffer);
  return Array.from({ length: bytes.byteLength / 4 }, (_, i) => dv.getFloat32(i * 4, true));
}

async function balance(g: TestGateway) {
  return (await g.store.getAccount(g.accountId))!;
}

Deno.test("embeddings: float vectors, usage with cost, and the debit equals the cost", async () => {
  await withGateway(async (g) => {
    const before = (await balance(g)).balance;
    const raw = await client(g).embeddings.create({
      model: MODEL,
      input: "The quick brown fox",
      encoding_format: "float",
    }).withResponse();
    const r = raw.data;
    assert.equal(r.object, "list");
    assert.equal(r.model, MODEL);
    assert.equal(r.data.length, 1);
    assert.equal(r.data[0].object, "embedding");
    assert.equal(r.data[0].index, 0);
    assert.equal(r.data[0].embedding.length, 768);
    assert.ok(r.data[0].embedding.every((x) => typeof x === "number"));
    const usage = r.usage as typeof r.usage & {
      cost: number;
      cost_details: Record<string, number>;
    };
    assert.ok(usage.prompt_tokens > 0);
    assert.equal(usage.total_tokens, usage.prompt_tokens);
    assert.ok(usage.cost > 0);
    assert.ok("upstream_inference_input_cost" in usage.cost_details);
    const genId = raw.response.headers.get("x-generation-id")!;
    assert.match(genId, /^gen_/);
    await g.settled();
    const after = await balance(g);
    assert.equal(nanoToRub(before - after.balance), usage.cost);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
    const gen = await g.store.getGeneration(g.accountId, genId);
    assert.equal(gen?.status, "completed");
    assert.equal(gen?.endpoint, "embeddings");
    assert.equal(gen?.usageSource, "upstream");
    assert.equal(gen?.tokens.input, usage.prompt_tokens);
    // The upstream got the catalogue slug as its model name and the client's format.
    const body = g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    assert.equal(body.model, MODEL);
    assert.equal(body.encoding_format, "float");
  });
});

Deno.test("embeddings: base64 decodes back to the same 768 numbers; the SDK default too", async () => {
  await withGateway(async (g) => {
    const input = "Vectors, please";
    const floats = await client(g).embeddings.create({
      model: MODEL,
      input,
      encoding_format: "float",
    });
    const b64 = await client(g).embeddings.create({
      model: MODEL,
      input,
      encoding_format: "base64",
    });
    assert.equal(typeof b64.data[0].embedding, "string");
    const decoded = float32(b64.data[0].embedding as unknown as string);
    assert.equal(decoded.length, 768);
    assert.deepEqual(decoded, floats.data[0].embedding.map(Math.fround));
    // Without encoding_format the SDK asks for base64 and decodes it itself.
    const sdkDefault = await client(g).embeddings.create({ model: MODEL, input });
    assert.deepEqual(sdkDefault.data[0].embedding, decoded);
  });
});

Deno.test("embeddings: a batch comes back in input order, one vector per item", async () => {
  await withGateway(async (g) => {
    const inputs = ["alpha", "beta", "gamma", "delta"];
    const batch = await client(g).embeddings.create({
      model: MODEL,
      input: inputs,
      encoding_format: "float",
    });
    assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2, 3]);
    for (let i = 0; i < inputs.length; i++) {
      const one = await client(g).embeddings.create({
        model: MODEL,
        input: inputs[i],
        encoding_format: "float",
      });
      assert.deepEqual(batch.data[i].embedding, one.data[0].embedding, inputs[i]);
    }
    assert.notDeepEqual(batch.data[0].embedding, batch.data[1].embedding);
  });
});

Deno.test("embeddings: token arrays are accepted; usage counts them", async () => {
  await withGateway(async (g) => {
    const single = await client(g).embeddings.create({
      model: MODEL,
      input: [1, 2, 3, 4],
      encoding_format: "float",
    });
    assert.equal(single.data.length, 1);
    const many = await client(g).embeddings.create({
      model: MODEL,
      input: [[1, 2, 3], [4, 5]],
      encoding_format: "float",
    });
    assert.equal(many.data.length, 2);
    assert.equal(many.usage.prompt_tokens, 5);
  });
});

Deno.test("embeddings: without provider usage the field is absent but the debit is made", async () => {
  await withGateway(async (g) => {
    const before = (await balance(g)).balance;
    const input = "no usage from the provider here [[mock:usage=none]]";
    const raw = await client(g).embeddings.create({
      model: MODEL,
      input,
      encoding_format: "float",
    }).withResponse();
    assert.equal(raw.data.usage, undefined);
    assert.equal(raw.data.data[0].embedding.length, 768);
    await g.settled();
    const genId = raw.response.headers.get("x-generation-id")!;
    const gen = (await g.store.getGeneration(g.accountId, genId))!;
    assert.equal(gen.status, "completed");
    assert.equal(gen.usageSource, "counted");
    assert.equal(gen.tokens.input, estimateTokens(input));
    assert.ok(gen.cost > 0n);
    const after = await balance(g);
    assert.equal(before - after.balance, gen.cost);
  });
});

Deno.test("embeddings: unknown fields and the end user's id reach the upstream unchanged", async () => {
  await withGateway(async (g) => {
    const r = await post(g, {
      model: MODEL,
      input: "pass it on",
      user: "end-user-42",
      x_custom: { keep: [1, "two"] },
    });
    assert.equal(r.status, 200);
    const body = g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    assert.equal(body.user, "end-user-42");
    assert.deepEqual(body.x_custom, { keep: [1, "two"] });
  });
});

Deno.test("embeddings: dimensions only where the model can reduce them", async () => {
  await withGateway(async (g) => {
    const reduced = await client(g).embeddings.create({
      model: REDUCIBLE,
      input: "shorter",
      dimensions: 256,
      encoding_format: "float",
    });
    assert.equal(reduced.data[0].embedding.length, 256);
    const call = g.mock.stats.calls.at(-1)!;
    assert.equal((call.body as Record<string, unknown>).model, "text-embedding-3-small");
    assert.equal((call.body as Record<string, unknown>).dimensions, 256);

    const refused = await post(g, { model: MODEL, input: "x", dimensions: 256 });
    assert.equal(refused.status, 400);
    assert.match(refused.json.error.message, /does not support reduced dimensions/);
    assert.equal(typeof refused.json.error.type, "string");
    assert.equal(typeof refused.json.error.code, "string");
    const tooBig = await post(g, { model: REDUCIBLE, input: "x", dimensions: 99999 });
    assert.equal(tooBig.status, 400);
  });
});

Deno.test("embeddings: request errors in the coded envelope", async () => {
  await withGateway(async (g) => {
    const calls = g.mock.stats.total;
    const unknown = await post(g, { model: "nobody/no-such-model", input: "x" });
    assert.equal(unknown.status, 400);
    assert.deepEqual(
      [unknown.json.error.type, unknown.json.error.code],
      ["invalid_model", "MODEL_NOT_FOUND"],
    );
    assert.equal(typeof unknown.json.error.message, "string");
    // A bare name is pointed at the slug meant and at the listing of embedding models.
    const bare = await post(g, { model: "text-embedding-3-small", input: "x" });
    assert.equal(bare.status, 400);
    assert.match(bare.json.error.message, /GET \/v1\/embeddings\/models/);
    assert.match(bare.json.error.message, /did you mean "openai\/text-embedding-3-small"/);

    const generative = await post(g, { model: "openai/gpt-4o-mini", input: "x" });
    assert.equal(generative.status, 400);
    assert.match(generative.json.error.message, /does not support embeddings/);

    const noModel = await post(g, { input: "x" });
    assert.equal(noModel.status, 400);
    assert.equal(noModel.json.error.code, "MODEL_REQUIRED");

    for (const input of [undefined, [], 42, [1, "mixed"], [[1], "mixed"], { nope: true }]) {
      const r = await post(g, { model: MODEL, input });
      if (typeof input === "object" && input !== null && !Array.isArray(input)) {
        // One multimodal object is a valid form; the mock refuses it as the provider would.
        assert.equal(r.status, 400);
        continue;
      }
      assert.equal(r.status, 400, JSON.stringify(input));
      assert.equal(r.json.error.code, "INVALID_REQUEST");
    }
    const badFormat = await post(g, { model: MODEL, input: "x", encoding_format: "int8" });
    assert.equal(badFormat.status, 400);
    assert.match(badFormat.json.error.message, /encoding_format/);

    const malformed = await post(g, "{not json");
    assert.equal(malformed.status, 400);
    assert.match(malformed.json.error.message, /malformed JSON/);

    const anonymous = await post(g, { model: MODEL, input: "x" }, null);
    assert.equal(anonymous.status, 401);
    assert.equal(typeof anonymous.json.error.code, "string");

    // Only the multimodal object reached the upstream.
    assert.equal(g.mock.stats.total - calls, 1);
    assert.equal((await balance(g)).balance, 1000_000_000_000n);
  });
});

Deno.test("embeddings: provider failure is a 502 and costs nothing", async () => {
  await withGateway(async (g) => {
    const before = await balance(g);
    const r = await post(g, { model: MODEL, input: "break [[mock:fail]]" });
    assert.equal(r.status, 502);
    assert.equal(r.json.error.type, "provider_error");
    assert.equal(r.json.error.code, "PROVIDER_ERROR");
    assert.match(r.headers.get("x-generation-id") ?? "", /^gen_/);
    await g.settled();
    const after = await balance(g);
    assert.equal(after.balance, before.balance);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
    const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    assert.equal(gen.status, "failed");
    assert.equal(gen.cost, 0n);

    // Both providers of a reducible model fail: one call each, then the 502.
    const calls = g.mock.stats.total;
    const both = await post(g, { model: REDUCIBLE, input: "break [[mock:fail]]" });
    assert.equal(both.status, 502);
    assert.equal(g.mock.stats.total - calls, 2);
  });
});

Deno.test("embeddings: an empty balance is a 402", async () => {
  await withGateway(async (g) => {
    const poor = await g.account("0");
    const r = await post(g, { model: MODEL, input: "x" }, poor.key);
    assert.equal(r.status, 402);
    assert.equal(r.json.error.code, "INSUFFICIENT_BALANCE");
    // It says what the estimate is of: the input, not a max_tokens embeddings do not have.
    assert.match(r.json.error.message, /длине входа/);
    assert.doesNotMatch(r.json.error.message, /max_tokens/);
    assert.equal(g.mock.stats.total, 0);
    assert.deepEqual(await checkInvariants(g.store, [poor.accountId]), []);
  });
});

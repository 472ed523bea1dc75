import assert from "node:assert/strict";
import { GatewayError } from "../../http/gateway_error.ts";
import {
  base64ToFloats,
  decodeEmbeddingsBody,
  encodeEmbeddingsResponse,
  floatsToBase64,
} from "./response.ts";
import { decodeEmbeddingsError } from "./errors.ts";
import { errorBody } from "../../http/envelopes.ts";

const vec = (x: number) => [x, x / 2, -x];

Deno.test("embeddings answer: reordered by index, usage and cost read", () => {
  const up = decodeEmbeddingsBody({
    data: [
      { object: "embedding", index: 1, embedding: vec(2) },
      { object: "embedding", index: 0, embedding: vec(1) },
    ],
    usage: { prompt_tokens: 7, total_tokens: 7, cost: 0.0001 },
  }, 2);
  assert.deepEqual(up.vectors, [vec(1), vec(2)]);
  assert.equal(up.promptTokens, 7);
  assert.equal(up.costUsd, "0.0001");
  // OpenRouter on the operator's own provider key: its fee, and what the provider charged.
  const byok = decodeEmbeddingsBody({
    data: [{ index: 0, embedding: vec(1) }],
    usage: {
      prompt_tokens: 7,
      cost: 0.000001,
      is_byok: true,
      cost_details: { upstream_inference_cost: 0.00002 },
    },
  }, 1);
  assert.equal(byok.costUsd, "0.000021");
  const none = decodeEmbeddingsBody({ data: [{ embedding: vec(1) }] }, 1);
  assert.equal(none.promptTokens, undefined);
});

Deno.test("embeddings answer: anything but one vector per input is a 502", () => {
  const bad = [
    null,
    { data: [] },
    { data: [{ index: 0, embedding: vec(1) }] }, // one short
    { data: [{ index: 0, embedding: vec(1) }, { index: 0, embedding: vec(1) }] }, // duplicate
    { data: [{ index: 0, embedding: vec(1) }, { index: 5, embedding: vec(1) }] },
    { data: [{ index: 0, embedding: "%%%" }, { index: 1, embedding: ["x"] }] },
    { error: { message: "boom" } },
  ];
  for (const b of bad) {
    assert.throws(() => decodeEmbeddingsBody(b, 2), (e: unknown) => {
      return e instanceof GatewayError && e.status === 502;
    }, JSON.stringify(b));
  }
});

Deno.test("embeddings answer: float32 base64 both ways", () => {
  const f = [0.5, -1.25, 3];
  const b64 = floatsToBase64(f);
  assert.deepEqual(base64ToFloats(b64), f);
  const up = { vectors: [f, b64] };
  const asB64 = encodeEmbeddingsResponse(up, "base64", "m/x", undefined);
  assert.deepEqual((asB64.data as { embedding: unknown }[]).map((d) => d.embedding), [b64, b64]);
  assert.equal("usage" in asB64, false);
  const asFloat = encodeEmbeddingsResponse(up, "float", "m/x", {
    prompt_tokens: 1,
    total_tokens: 1,
    cost: 0.1,
    cost_details: {},
  });
  assert.deepEqual(asFloat.data, [
    { object: "embedding", index: 0, embedding: f },
    { object: "embedding", index: 1, embedding: f },
  ]);
  assert.equal(asFloat.object, "list");
  assert.equal(asFloat.model, "m/x");
});

Deno.test("embeddings upstream errors follow the spec's table", () => {
  assert.equal(decodeEmbeddingsError(408, null).status, 408);
  assert.equal(decodeEmbeddingsError(500, null).status, 502);
  assert.equal(decodeEmbeddingsError(401, { error: { message: "bad key sk-abc" } }).status, 502);
  assert.equal(decodeEmbeddingsError(429, null).status, 429);
  assert.equal(decodeEmbeddingsError(400, { error: { message: "too long" } }).status, 400);
  assert.equal(decodeEmbeddingsError(504, null).status, 504);
});

Deno.test("embeddings: a document past the provider's context is the coded envelope's INVALID_REQUEST", () => {
  const e = decodeEmbeddingsError(400, {
    error: {
      message: "This model's maximum context length is 512 tokens, however you requested 600 " +
        "tokens (600 in your prompt; 0 for the completion). Please reduce your prompt.",
      type: "invalid_request_error",
      code: null,
    },
  });
  assert.equal(e.status, 400);
  assert.match(e.message, /maximum context length is 512/);
  const error = errorBody("coded", e).error as Record<string, unknown>;
  assert.equal(error.code, "INVALID_REQUEST");
  assert.equal(error.type, "invalid_request");
});

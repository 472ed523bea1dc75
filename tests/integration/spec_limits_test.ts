/**
 * The spec's Limits table, row by row, over raw HTTP: each bound at its value, just inside and
 * just outside it. An accepted value is answered 200; a refused one is a 400 in the endpoint's
 * own envelope that names the field, and reaches no upstream.
 */
import assert from "node:assert/strict";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

type Obj = Record<string, unknown>;

async function post(g: TestGateway, path: string, body: unknown) {
  const res = await fetch(`${g.baseURL}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() as Obj };
}

/** Every case of `cases` on `path`: 200 where `ok`, else a 400 whose message matches. */
async function bounds(
  g: TestGateway,
  path: string,
  base: Obj,
  cases: [extra: Obj, ok: true | RegExp][],
) {
  for (const [extra, ok] of cases) {
    const before = g.mock.stats.calls.length;
    const r = await post(g, path, { ...base, ...extra });
    const what = `${path} ${JSON.stringify(extra).slice(0, 80)}`;
    if (ok === true) {
      assert.equal(r.status, 200, `${what}: ${JSON.stringify(r.json).slice(0, 300)}`);
      continue;
    }
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json).slice(0, 300)}`);
    const error = r.json.error as Obj;
    assert.match(String(error.message), ok, what);
    if (path === "/chat/completions") assert.equal(error.code, 400, what);
    else assert.equal(typeof error.code, "string", what); // the coded envelope
    assert.equal(g.mock.stats.calls.length, before, `${what}: nothing reaches the upstream`);
  }
}

const CHAT = {
  model: "openai/gpt-4o-mini", // context_length 128 000
  messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
};

Deno.test("spec limits: chat temperature [0, 2], top_p (0, 1], penalties [-2, 2]", () =>
  withGateway((g) =>
    bounds(g, "/chat/completions", CHAT, [
      [{ temperature: 0 }, true],
      [{ temperature: 2 }, true],
      [{ temperature: -0.0001 }, /temperature/],
      [{ temperature: 2.0001 }, /temperature/],
      [{ top_p: 0 }, /top_p/],
      [{ top_p: 0.0001 }, true],
      [{ top_p: 1 }, true],
      [{ top_p: 1.0001 }, /top_p/],
      [{ frequency_penalty: -2, presence_penalty: -2 }, true],
      [{ frequency_penalty: 2, presence_penalty: 2 }, true],
      [{ frequency_penalty: -2.0001 }, /frequency_penalty/],
      [{ frequency_penalty: 2.0001 }, /frequency_penalty/],
      [{ presence_penalty: -2.0001 }, /presence_penalty/],
      [{ presence_penalty: 2.0001 }, /presence_penalty/],
    ])
  ));

Deno.test("spec limits: chat max_tokens [1, context_length) and at most 4 stop sequences", () =>
  withGateway((g) =>
    bounds(g, "/chat/completions", CHAT, [
      [{ max_tokens: 0 }, /max_tokens/],
      [{ max_tokens: 1 }, true],
      [{ max_tokens: 127_999 }, true],
      [{ max_tokens: 128_000 }, /max_tokens/],
      [{ max_tokens: 1.5 }, /max_tokens/],
      [{ stop: "END" }, true],
      [{ stop: ["a", "b", "c"] }, true],
      [{ stop: ["a", "b", "c", "d"] }, true],
      [{ stop: ["a", "b", "c", "d", "e"] }, /stop/],
    ])
  ));

const PNG = "data:image/png;base64," +
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

Deno.test("spec limits: images n [1, 10] and at most 16 input_references", () =>
  withGateway(async (g) => {
    const base = { model: "openai/gpt-image-1", prompt: "a cat", quality: "low" };
    await bounds(g, "/images/generations", base, [
      [{ n: 0 }, /\bn\b/],
      [{ n: 1 }, true],
      [{ n: 10 }, true],
      [{ n: 11 }, /\bn\b/],
      [{ input_references: Array(15).fill(PNG) }, true],
      [{ input_references: Array(16).fill(PNG) }, true],
      [{ input_references: Array(17).fill(PNG) }, /input_references/],
    ]);
    const ten = await post(g, "/images/generations", { ...base, n: 10 });
    assert.equal((ten.json.data as unknown[]).length, 10);
  }));

Deno.test("spec limits: the launch embedding model gives 768 numbers within 512 tokens", () =>
  withGateway(async (g) => {
    const base = { model: "baai/bge-base-en-v1.5" };
    // A token-id document is counted exactly against the model's context_length (512).
    await bounds(g, "/embeddings", base, [
      [{ input: Array(511).fill(1) }, true],
      [{ input: Array(512).fill(1) }, true],
      [{ input: Array(513).fill(1) }, /513 tokens/],
      [{ input: [Array(512).fill(1), [7]] }, true],
      [{ input: [[7], Array(513).fill(1)] }, /input\[1\] has 513 tokens/],
    ]);
    const r = await post(g, "/embeddings", { ...base, input: ["one", "two"] });
    assert.deepEqual(
      (r.json.data as { embedding: number[] }[]).map((d) => d.embedding.length),
      [768, 768],
    );
  }));

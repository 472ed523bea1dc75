/**
 * Chat completions end to end: the real `openai` SDK → a real gateway over HTTP → the mock
 * upstream; metering checked against the store.
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
import { answerText } from "../../src/providers/mock/server.ts";
import { postChat, sseData } from "../helpers/chat.ts";

const MODEL = "openai/gpt-4o-mini";

function client(g: TestGateway, key = g.key) {
  return new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0 });
}

async function withGateway(fn: (g: TestGateway) => Promise<void>, opts = {}) {
  const g = await startGateway(opts);
  try {
    await fn(g);
    await g.settled();
    assert.deepEqual(await checkInvariants(g.store, [g.accountId]), []);
  } finally {
    await g.close();
  }
}

Deno.test("chat: non-streaming completion returns text, usage and the debited cost", async () => {
  await withGateway(async (g) => {
    const before = (await g.store.getAccount(g.accountId))!.balance;
    const raw = await client(g).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Say hello [[mock:tokens=5]]" }],
    }).withResponse();
    const r = raw.data;
    assert.equal(r.object, "chat.completion");
    assert.equal(r.model, MODEL);
    assert.ok(r.choices[0].message.content!.length > 0);
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.equal(r.usage!.completion_tokens, 5);
    const usage = r.usage as unknown as { cost: number; cost_details: Record<string, number> };
    assert.ok(usage.cost > 0);
    assert.ok("upstream_inference_input_cost" in usage.cost_details);
    const genId = raw.response.headers.get("x-generation-id")!;
    assert.match(genId, /^gen_/);
    // Spec: the completion `id` is the generation identifier, not the upstream's.
    assert.equal(r.id, genId);
    await g.settled();
    const after = (await g.store.getAccount(g.accountId))!;
    assert.equal(nanoToRub(before - after.balance), usage.cost);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
    const gen = await g.store.getGeneration(g.accountId, genId);
    assert.equal(gen?.status, "completed");
    assert.equal(gen?.usageSource, "upstream");
  });
});

Deno.test("chat: streaming relays chunks and ends with usage, cost and [DONE]", async () => {
  await withGateway(async (g) => {
    const stream = await client(g).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Count [[mock:tokens=8]]" }],
      stream: true,
    });
    let text = "";
    let usage: Record<string, unknown> | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, unknown>;
    }
    assert.ok(chunks >= 8);
    assert.ok(text.length > 0);
    assert.equal(usage?.completion_tokens, 8);
    assert.equal(typeof usage?.cost, "number");
  });
});

for (const includeUsage of [true, false]) {
  Deno.test(`chat: a successful stream's raw SSE: role chunk, content, finish, ${includeUsage ? "usage chunk" : "usage on the finish chunk"}, [DONE]`, () =>
    rawStream(includeUsage));
}

/** With `include_usage` the usage comes in OpenAI's own chunk (`choices: []`); without, on the
 * finish chunk, so that every chunk has a `choices[0]`. */
async function rawStream(includeUsage: boolean) {
  await withGateway(async (g) => {
    const res = await postChat(g, {
      model: MODEL,
      stream: true,
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: "user", content: "Count [[mock:tokens=4]]" }],
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const genId = res.headers.get("x-generation-id") ?? "";
    assert.match(genId, /^gen_/);
    const body = await res.text();
    // The upstream's chunk id (chatcmpl-…) and model name are replaced everywhere.
    assert.ok(!body.includes("chatcmpl-"), body);
    assert.ok(!body.includes('"gpt-4o-mini"'), body);
    const data = sseData(body);
    assert.equal(data.at(-1), "[DONE]");
    assert.equal(data.filter((d) => d === "[DONE]").length, 1);
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    for (const c of chunks) {
      assert.equal(c.object, "chat.completion.chunk");
      assert.equal(c.error, undefined);
      // Spec: chunk `id` is the generation id, `model` the requested slug.
      assert.equal(c.id, genId);
      assert.equal(c.model, MODEL);
    }
    assert.equal(chunks[0].choices[0].delta.role, "assistant");
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
    assert.equal(text, answerText(4));
    const finishes = chunks.map((c) => c.choices[0]?.finish_reason).filter((f) => f);
    assert.deepEqual(finishes, ["stop"]);
    const last = chunks.at(-1);
    if (includeUsage) assert.deepEqual(last.choices, []);
    else {
      for (const c of chunks) assert.equal(c.choices.length, 1);
      assert.equal(last.choices[0].finish_reason, "stop");
    }
    assert.equal(chunks.filter((c) => c.usage).length, 1);
    assert.equal(last.usage.completion_tokens, 4);
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 4);
    assert.ok(last.usage.cost > 0);
    assert.ok("upstream_inference_output_cost" in last.usage.cost_details);
  });
}

Deno.test("chat: finish_reason length when max_tokens cuts the answer", async () => {
  await withGateway(async (g) => {
    const r = await client(g).chat.completions.create({
      model: MODEL,
      max_tokens: 3,
      messages: [{ role: "user", content: "Count [[mock:tokens=10]]" }],
    });
    assert.equal(r.choices[0].finish_reason, "length");
    assert.equal(r.usage!.completion_tokens, 3);
    assert.equal(r.choices[0].message.content, answerText(3));
    // The upstream was asked for the same cap, in OpenAI's current field.
    const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
    assert.equal(sent.max_completion_tokens, 3);
  });
});

Deno.test('chat: an answer without text has content "" whatever the upstream\'s format', async () => {
  // Spec: choices[].message.content is a string. A transcoded upstream (Anthropic, OpenAI's
  // responses API) that sends no text block must not leave it null.
  await withGateway(async (g) => {
    for (const model of [MODEL, "anthropic/claude-sonnet-4.5", "openai/gpt-5.1-codex"]) {
      const r = await client(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Say nothing [[mock:tokens=0]]" }],
      });
      assert.equal(r.choices[0].message.content, "", model);
      assert.equal(r.choices[0].finish_reason, "stop", model);
    }
  });
});

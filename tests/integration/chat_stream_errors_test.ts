/**
 * Chat completions streams that go wrong after the first byte, end to end: an upstream
 * in-stream error, a connection cut, a mid-stream stall, and a client that disconnects (under
 * both cancel policies). Each must end the client's stream with the gateway's error chunk
 * (`finish_reason: "error"`, an `error` object, usage with cost, no `[DONE]`) and settle the
 * generation exactly once, at the cost of what was consumed.
 */
import assert from "node:assert/strict";
import { heldByGenerations } from "../helpers/gateway.ts";
import OpenAI from "openai";
import { rubToNano } from "../../src/billing/money.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import {
  ANTHROPIC_MODEL,
  balance,
  client,
  mockProvider,
  MODEL,
  postChat,
  settledGeneration,
  sseData,
  waitFor,
  withGateway,
} from "../helpers/chat.ts";

type Obj = Record<string, unknown>;

interface Chunk {
  id: string;
  model: string;
  choices: { index: number; delta: Obj; finish_reason: string | null }[];
  usage?: { completion_tokens: number; cost: number } | null;
  error?: { code: number; message: string; metadata: Obj };
}

/** Streams `marker` raw through fetch; returns the data payloads and the generation id. */
async function rawStream(g: TestGateway, model: string, marker: string) {
  const res = await postChat(g, {
    model,
    stream: true,
    messages: [{ role: "user", content: `Tell me more ${marker}` }],
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
  const id = res.headers.get("x-generation-id")!;
  const data = sseData(await res.text());
  return { id, data };
}

/** The stream's end is the gateway's error chunk; returns it and the content before it. */
function assertErrorEnd(data: string[]): { last: Chunk; text: string } {
  assert.ok(!data.includes("[DONE]"), "no [DONE] after an error");
  const all = data.map((d) => JSON.parse(d) as Chunk);
  // The error object alone comes first (OpenAI's convention), then the finish chunk with it.
  const alone = all.at(-2)!;
  assert.deepEqual(Object.keys(alone), ["error"], JSON.stringify(alone));
  const chunks = [...all.slice(0, -2), all.at(-1)!];
  const last = chunks.at(-1)!;
  assert.deepEqual(alone.error, last.error);
  assert.equal(last.choices[0]?.finish_reason, "error", JSON.stringify(last));
  assert.ok(last.error, "the last chunk carries an error object");
  assert.equal(typeof last.error.code, "number");
  assert.ok(last.error.code >= 500, `a provider-side code: ${last.error.code}`);
  assert.equal(typeof last.error.message, "string");
  assert.equal(typeof last.error.metadata, "object");
  assert.equal(typeof last.usage?.cost, "number");
  for (const c of chunks.slice(0, -1)) {
    assert.ok(c.error === undefined, "only the last chunk carries the error");
    assert.notEqual(c.choices[0]?.finish_reason, "error");
  }
  const text = chunks.map((c) => (c.choices[0]?.delta?.content as string | undefined) ?? "")
    .join("");
  return { last, text };
}

/** The failed generation is settled once, at the cost the error chunk showed. */
async function assertFailedSettlement(g: TestGateway, id: string, before: bigint, cost: number) {
  const gen = await settledGeneration(g, g.accountId, id);
  await g.settled();
  assert.equal(gen.status, "failed");
  assert.equal(gen.finishReason, "error");
  assert.ok(gen.cost > 0n, "the tokens relayed before the error are paid for");
  assert.equal(gen.cost, rubToNano(String(cost)), "the debit is the cost the client saw");
  assert.equal(before - (await balance(g)), gen.cost);
  const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === id);
  assert.equal(debits.length, 1);
  assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
  return gen;
}

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(`chat stream errors (${model}): an in-stream upstream error after 3 tokens`, () =>
    withGateway(async (g) => {
      const before = await balance(g);
      const { id, data } = await rawStream(g, model, "[[mock:tokens=10,fail=3]]");
      const { last, text } = assertErrorEnd(data);
      assert.equal(text, "tok0 tok1 tok2");
      assert.equal(last.error!.code, 502);
      await g.mock.idle();
      assert.equal(g.mock.stats.calls.length, 1, "no failover after the first byte");
      assert.equal(g.mock.stats.calls[0].outcome, "error");
      const gen = await assertFailedSettlement(g, id, before, last.usage!.cost);
      assert.equal(gen.usageSource, "counted");
      assert.equal(gen.tokens.output, 3);
    }));

  Deno.test(`chat stream errors (${model}): the SDK surfaces the in-stream error`, () =>
    withGateway(async (g) => {
      const stream = await client(g).chat.completions.create({
        model,
        stream: true,
        messages: [{ role: "user", content: "Tell me more [[mock:tokens=10,fail=3]]" }],
      });
      let text = "";
      let thrown: unknown;
      try {
        for await (const c of stream) text += c.choices[0]?.delta?.content ?? "";
      } catch (e) {
        thrown = e;
      }
      assert.ok(thrown instanceof OpenAI.APIError, `the SDK throws an APIError: ${thrown}`);
      assert.equal((thrown.error as Obj).code, 502);
      assert.equal(text, "tok0 tok1 tok2");
    }));

  Deno.test(`chat stream errors (${model}): a connection cut after 3 tokens`, () =>
    withGateway(async (g) => {
      const before = await balance(g);
      const { id, data } = await rawStream(g, model, "[[mock:tokens=10,cut=3]]");
      const { last, text } = assertErrorEnd(data);
      assert.equal(text, "tok0 tok1 tok2");
      await g.mock.idle();
      assert.equal(g.mock.stats.calls[0].outcome, "cut");
      const gen = await assertFailedSettlement(g, id, before, last.usage!.cost);
      assert.equal(gen.usageSource, "counted");
      assert.equal(gen.tokens.output, 3);
    }));
}

Deno.test("chat stream errors: a stall mid-stream ends with the error chunk after idleMs", () =>
  withGateway(async (g) => {
    const before = await balance(g);
    const t0 = Date.now();
    const { id, data } = await rawStream(g, MODEL, "[[mock:tokens=10,stall=3]]");
    assert.ok(Date.now() - t0 < 5000, "ended by the idle timeout, not the mock");
    const { last, text } = assertErrorEnd(data);
    assert.equal(text, "tok0 tok1 tok2");
    // A provider that stopped answering: the spec's chat list calls it 502, not 504.
    assert.equal(last.error!.code, 502);
    await assertFailedSettlement(g, id, before, last.usage!.cost);
    await g.mock.idle();
    assert.notEqual(g.mock.stats.calls[0].outcome, "running", "the upstream call was ended");
  }, {
    providers: {
      providers: [mockProvider("openai", { timeouts: { firstByteMs: 5000, idleMs: 400 } })],
    },
  }));

/**
 * Reads a few chunks of a long, slow stream through the SDK, then aborts; returns the
 * generation id and the text seen.
 */
async function readThenAbort(g: TestGateway, model: string, marker: string, chunks = 4) {
  const ac = new AbortController();
  const raw = await client(g).chat.completions.create({
    model,
    stream: true,
    messages: [{ role: "user", content: `Go on ${marker}` }],
  }, { signal: ac.signal }).withResponse();
  const id = raw.response.headers.get("x-generation-id")!;
  let n = 0;
  let text = "";
  try {
    for await (const c of raw.data) {
      text += c.choices[0]?.delta?.content ?? "";
      if (++n >= chunks) ac.abort();
    }
  } catch (e) {
    assert.ok(
      e instanceof OpenAI.APIUserAbortError || (e as Error).name === "AbortError",
      `an abort, not ${e}`,
    );
  }
  return { id, text };
}

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(
    `chat stream cancel (${model}): a client disconnect settles once with counted usage`,
    () =>
      withGateway(async (g) => {
        const before = await balance(g);
        const { id, text } = await readThenAbort(g, model, "[[mock:every=20,tokens=200]]");
        assert.ok(text.startsWith("tok0"));
        const gen = await settledGeneration(g, g.accountId, id);
        await g.mock.idle();
        await g.settled();
        assert.equal(gen.status, "cancelled");
        assert.equal(gen.usageSource, "counted");
        assert.ok(gen.cost > 0n, "what was relayed is paid for");
        assert.ok(gen.tokens.output! > 0 && gen.tokens.output! < 200, `${gen.tokens.output}`);
        const call = g.mock.stats.calls[0];
        assert.equal(call.outcome, "cancelled", "policy abort cancels the upstream call");
        assert.ok(call.outputTokensSent < 200);
        const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === id);
        assert.equal(debits.length, 1, "exactly one debit");
        assert.equal(debits[0].amount, -gen.cost);
        assert.equal(before - (await balance(g)), gen.cost);
        assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
        // Nothing settles it a second time later.
        await new Promise((r) => setTimeout(r, 200));
        await g.settled();
        const again = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === id);
        assert.equal(again.length, 1);
      }),
  );

  Deno.test(
    `chat stream cancel (${model}): with CANCEL_POLICY=drain the upstream runs to its usage`,
    () =>
      withGateway(async (g) => {
        const before = await balance(g);
        const { id } = await readThenAbort(g, model, "[[mock:every=10,tokens=60]]");
        const gen = await settledGeneration(g, g.accountId, id);
        await g.mock.idle();
        await g.settled();
        assert.equal(gen.status, "cancelled");
        assert.equal(gen.usageSource, "upstream");
        assert.equal(gen.tokens.output, 60, "the upstream's own count of the whole answer");
        assert.equal(g.mock.stats.calls[0].outcome, "completed");
        assert.equal(before - (await balance(g)), gen.cost);
        const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === id);
        assert.equal(debits.length, 1);
        assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
      }, { config: { CANCEL_POLICY: "drain" } }),
  );
}

Deno.test("chat stream cancel: a non-streaming client that leaves cancels the upstream", () =>
  withGateway(async (g) => {
    // A 5 s answer, cut when the client leaves: a loaded machine notices the departure late,
    // and a 1 s answer could end before it did.
    const gen = await leaveWholeAnswer(g, 100);
    assert.equal(gen.status, "cancelled");
    assert.equal(g.mock.stats.calls[0].outcome, "cancelled");
  }));

/**
 * A non-streaming call whose client leaves 100 ms into its answer (50 tokens, one every
 * `everyMs`); its settled generation. Raw fetch, to keep the request under 512 bytes: Deno's
 * HTTP server misses the disconnect of a client whose body crosses its first 512-byte read
 * (README), and the SDK's own headers would push this request past it (the SDK does abort its
 * fetch).
 */
async function leaveWholeAnswer(
  g: Parameters<Parameters<typeof withGateway>[0]>[0],
  everyMs = 20,
) {
  const ac = new AbortController();
  const p = postChat(g, {
    model: MODEL,
    messages: [{ role: "user", content: `Slowly [[mock:every=${everyMs},tokens=50]]` }],
  }, { signal: ac.signal }).catch((e) => e);
  await waitFor("the upstream call", () => g.mock.stats.calls.length > 0 || undefined);
  await new Promise((r) => setTimeout(r, 100));
  ac.abort();
  assert.equal(((await p) as Error).name, "AbortError");
  const [first] = await waitFor("the generation", async () => {
    const l = await g.store.listGenerations(g.accountId, { limit: 1 });
    return l.length > 0 ? l : undefined;
  });
  const gen = await settledGeneration(g, g.accountId, first.id);
  await g.mock.idle();
  await g.settled();
  return gen;
}

Deno.test("chat cancel: with CANCEL_POLICY=drain a non-streaming call the client left is read to its usage and billed", () =>
  withGateway(async (g) => {
    const before = await balance(g);
    const gen = await leaveWholeAnswer(g);
    assert.equal(gen.status, "cancelled");
    assert.equal(g.mock.stats.calls[0].outcome, "completed", "the upstream answered in full");
    assert.equal(gen.tokens.output, 50, "the upstream's own count of the whole answer");
    assert.ok(gen.cost > 0n);
    assert.equal(before - (await balance(g)), gen.cost);
    const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === gen.id);
    assert.equal(debits.length, 1, "exactly one debit");
    assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
  }, { config: { CANCEL_POLICY: "drain" } }));

Deno.test("chat cancel: with CANCEL_POLICY=drain the drain deadline still cuts a non-streaming call", () =>
  withGateway(async (g) => {
    const before = await balance(g);
    // A 5 s answer: the cut comes 200 ms after the departure is noticed, late on a loaded
    // machine, and a 1 s answer could end before it.
    const gen = await leaveWholeAnswer(g, 100);
    assert.equal(gen.status, "cancelled");
    assert.equal(g.mock.stats.calls[0].outcome, "cancelled", "cut 200 ms after the client left");
    assert.equal(gen.cost, 0n, "nothing was learnt of its usage");
    assert.equal(await balance(g), before);
    assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
  }, { config: { CANCEL_POLICY: "drain", DRAIN_DEADLINE_MS: "200" } }));

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(
    `chat stream cancel (${model}): a client that leaves while the model thinks before its first token cancels the upstream`,
    () =>
      withGateway(async (g) => {
        // A body long enough to arrive apart from its headers, as real clients' do: the HTTP
        // server then notices a departure only once the handler has answered.
        const padding = "x".repeat(20_000);
        const ac = new AbortController();
        const t0 = Date.now();
        const res = await postChat(g, {
          model,
          stream: true,
          messages: [{ role: "user", content: `${padding} [[mock:first=6000,tokens=5]]` }],
        }, { signal: ac.signal });
        // The status line comes while the model thinks, so the client is not left waiting.
        assert.equal(res.status, 200);
        assert.ok(Date.now() - t0 < 3000, `headers after ${Date.now() - t0} ms`);
        const id = res.headers.get("x-generation-id")!;
        await new Promise((r) => setTimeout(r, 300));
        ac.abort();
        await res.body?.cancel().catch(() => {});
        const gen = await settledGeneration(g, g.accountId, id);
        await g.mock.idle();
        assert.equal(gen.status, "cancelled");
        assert.ok(
          gen.latencyMs! < 4000,
          `settled after ${gen.latencyMs} ms, not at the first token`,
        );
        assert.equal(g.mock.stats.calls[0].outcome, "cancelled", "the upstream call was cancelled");
        await g.settled();
        assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
      }),
  );
}

Deno.test("chat stream: a model silent past firstTokenMs after the status line went out ends with the error chunk", () =>
  withGateway(async (g) => {
    const before = await balance(g);
    const t0 = Date.now();
    const { id, data } = await rawStream(g, MODEL, "[[mock:first=5000,tokens=3]]");
    const { last, text } = assertErrorEnd(data);
    assert.equal(text, "");
    // The chat list has no 504: a provider that did not answer in time is its 502.
    assert.equal(last.error?.code, 502);
    assert.match(last.error!.message, /in time/);
    assert.ok(Date.now() - t0 < 4000, "ended at the deadline, not at the late token");
    const gen = await settledGeneration(g, g.accountId, id);
    assert.equal(gen.status, "failed");
    assert.equal(gen.cost, rubToNano(String(last.usage!.cost)));
    await g.settled();
    assert.equal(before - (await balance(g)), gen.cost);
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.length, 1, "no failover once the status line was sent");
    assert.equal(g.mock.stats.calls[0].outcome, "cancelled");
  }, {
    providers: {
      providers: [
        mockProvider("openai", { timeouts: { firstByteMs: 5000, firstTokenMs: 1800 } }),
        mockProvider("backup", { priority: 20 }),
      ],
    },
  }));

Deno.test("chat stream: a connection that breaks after an early status line ends with the error chunk", () =>
  withGateway(async (g) => {
    const { data } = await rawStream(g, MODEL, "[[mock:first=1500,tokens=5,cut=1]]");
    const { last, text } = assertErrorEnd(data);
    assert.equal(text, "tok0");
    assert.match(last.error!.message, /broke/);
  }));

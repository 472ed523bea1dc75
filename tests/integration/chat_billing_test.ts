/**
 * Chat completions and money, end to end: the hold refused with 402 before any upstream call,
 * the debit equal to the `usage.cost` the client saw (nano-exact), the same cost streaming
 * and not, and the generation history (`x-generation-id`, `GET /v1/generations[/{id}]`).
 */
import assert from "node:assert/strict";
import { heldByGenerations } from "../helpers/gateway.ts";
import type OpenAI from "openai";
import { nanoToRub, rubToNano } from "../../src/billing/money.ts";
import { Catalogue } from "../../src/catalogue/catalogue.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { ANTHROPIC_MODEL, balance, client, MODEL, sdkError, withGateway } from "../helpers/chat.ts";

type Obj = Record<string, unknown>;

interface CostUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  cost_details: Record<string, number>;
}

function messages(marker: string): OpenAI.Chat.ChatCompletionMessageParam[] {
  return [{ role: "user", content: `Tell me a story ${marker}` }];
}

/** Checks the debit of generation `id` against the cost the client was shown. */
async function assertDebit(g: TestGateway, id: string, before: bigint, shownCost: number) {
  await g.settled();
  const after = await balance(g);
  const delta = before - after;
  assert.ok(delta > 0n, "something was debited");
  assert.equal(delta, rubToNano(String(shownCost)), "the debit is the cost shown, to the nano");
  assert.equal(nanoToRub(delta), shownCost);
  const gen = (await g.store.getGeneration(g.accountId, id))!;
  assert.equal(gen.cost, delta);
  const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === id);
  assert.equal(debits.length, 1);
  assert.equal(debits[0].kind, "debit");
  assert.equal(debits[0].amount, -delta);
  assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
}

Deno.test("chat billing: 402 with no upstream call when the balance cannot cover the hold", () =>
  withGateway(async (g) => {
    const poor = await g.account("0.000001");
    const before = await balance(g, poor.accountId);
    const calls = g.mock.stats.calls.length;
    const e = await sdkError(
      client(g, poor.key).chat.completions.create({ model: MODEL, messages: messages("") }),
    );
    assert.equal(e.status, 402);
    const err = e.error as Obj;
    assert.equal(err.code, 402);
    assert.equal(typeof err.message, "string");
    assert.equal(typeof err.metadata, "object");
    assert.equal(g.mock.stats.calls.length, calls, "the upstream was not called");
    const a = (await g.store.getAccount(poor.accountId))!;
    assert.equal(await heldByGenerations(g.store, a.id), 0n, "no hold left behind");
    assert.equal(a.balance, before);
    assert.deepEqual(await g.store.listGenerations(poor.accountId, { limit: 10 }), []);
  }));

Deno.test("chat billing: 402 on a streaming request too, before any byte of stream", () =>
  withGateway(async (g) => {
    const poor = await g.account("0.000001");
    const e = await sdkError(
      client(g, poor.key).chat.completions.create({
        model: MODEL,
        messages: messages(""),
        stream: true,
      }),
    );
    assert.equal(e.status, 402);
    assert.equal(g.mock.stats.calls.length, 0);
    assert.equal(await heldByGenerations(g.store, poor.accountId), 0n);
  }));

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(`chat billing (${model}): non-streaming debit equals usage.cost to the nano`, () =>
    withGateway(async (g) => {
      const before = await balance(g);
      const raw = await client(g).chat.completions.create({
        model,
        messages: messages("[[mock:tokens=37]]"),
      }).withResponse();
      const usage = raw.data.usage as unknown as CostUsage;
      assert.equal(usage.completion_tokens, 37);
      assert.ok(usage.cost > 0);
      assert.equal(typeof usage.cost_details, "object");
      await assertDebit(g, raw.response.headers.get("x-generation-id")!, before, usage.cost);
    }));

  Deno.test(`chat billing (${model}): streaming debit equals usage.cost to the nano`, () =>
    withGateway(async (g) => {
      const before = await balance(g);
      const raw = await client(g).chat.completions.create({
        model,
        messages: messages("[[mock:tokens=37]]"),
        stream: true,
      }).withResponse();
      const id = raw.response.headers.get("x-generation-id");
      assert.match(id ?? "", /^gen_/, "a streaming answer carries x-generation-id");
      let usage: CostUsage | undefined;
      for await (const c of raw.data) if (c.usage) usage = c.usage as unknown as CostUsage;
      assert.equal(usage?.completion_tokens, 37);
      await assertDebit(g, id!, before, usage!.cost);
      const gen = (await g.store.getGeneration(g.accountId, id!))!;
      assert.equal(gen.status, "completed");
      assert.equal(gen.usageSource, "upstream");
      assert.equal(gen.stream, true);
    }));

  Deno.test(`chat billing (${model}): streaming and non-streaming cost the same`, () =>
    withGateway(async (g) => {
      const c = client(g);
      const msgs = messages("[[mock:tokens=23,cache_read=5]]");
      const whole = await c.chat.completions.create({ model, messages: msgs });
      const stream = await c.chat.completions.create({ model, messages: msgs, stream: true });
      let streamed: CostUsage | undefined;
      for await (const ch of stream) if (ch.usage) streamed = ch.usage as unknown as CostUsage;
      const w = whole.usage as unknown as CostUsage;
      assert.ok(streamed);
      assert.equal(streamed.cost, w.cost);
      assert.deepEqual(streamed.cost_details, w.cost_details);
      assert.equal(streamed.prompt_tokens, w.prompt_tokens);
      assert.equal(streamed.completion_tokens, w.completion_tokens);
      await g.settled();
      const [s, n] = await g.store.listGenerations(g.accountId, { limit: 2 });
      assert.equal(s.cost, n.cost);
      assert.deepEqual(s.tokens, n.tokens);
    }));
}

Deno.test("chat billing: GET /v1/generations/{id} returns the generation of x-generation-id", () =>
  withGateway(async (g) => {
    const c = client(g);
    const raw = await c.chat.completions.create({
      model: MODEL,
      messages: messages("[[mock:tokens=11]]"),
    }).withResponse();
    const id = raw.response.headers.get("x-generation-id")!;
    assert.match(id, /^gen_/);
    const usage = raw.data.usage as unknown as CostUsage;
    await g.settled();
    const gen = await c.get(`/generations/${id}`) as Obj;
    assert.equal(gen.id, id);
    assert.equal(gen.model, MODEL);
    assert.equal(gen.provider, "openai");
    assert.equal(gen.status, "completed");
    assert.equal(gen.usage_source, "upstream");
    assert.equal(gen.cost, usage.cost);
    assert.equal(gen.stream, false);
    assert.equal(gen.endpoint, "chat");
    assert.equal(gen.finish_reason, "stop");
    const tokens = gen.tokens as Obj;
    assert.equal(tokens.input, usage.prompt_tokens);
    assert.equal(tokens.output, 11);
  }));

Deno.test("chat billing: GET /v1/generations lists newest first with cursor pagination", () =>
  withGateway(async (g) => {
    const c = client(g);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const raw = await c.chat.completions.create({
        model: MODEL,
        messages: messages(`#${i} [[mock:tokens=2]]`),
      }).withResponse();
      ids.push(raw.response.headers.get("x-generation-id")!);
    }
    await g.settled();
    const newest = [...ids].reverse();
    const all = await c.get("/generations") as { data: Obj[]; has_more: boolean };
    assert.deepEqual(all.data.map((x) => x.id), newest);
    assert.equal(all.has_more, false);

    const p1 = await c.get("/generations", { query: { limit: 2 } }) as {
      data: Obj[];
      has_more: boolean;
      next_cursor: string | null;
    };
    assert.deepEqual(p1.data.map((x) => x.id), newest.slice(0, 2));
    assert.equal(p1.has_more, true);
    assert.equal(typeof p1.next_cursor, "string");
    const p2 = await c.get("/generations", {
      query: { limit: 2, cursor: p1.next_cursor },
    }) as { data: Obj[]; has_more: boolean; next_cursor: string | null };
    assert.deepEqual(p2.data.map((x) => x.id), newest.slice(2));
    assert.equal(p2.has_more, false);
    assert.equal(p2.next_cursor, null);
    // The oldest generation as cursor: the end, an empty page.
    const end = await c.get("/generations", { query: { cursor: newest.at(-1) } }) as Obj;
    assert.deepEqual(end.data, []);
    // A cursor that names nothing (mistyped, or another account's) is not taken for the end.
    const other = await g.account("10");
    for (const cursor of ["gen_nonexistent", newest[0]]) {
      const e = await sdkError(client(g, other.key).get("/generations", { query: { cursor } }));
      assert.equal(e.status, 400, cursor);
      assert.match(String((e.error as Obj).message), /is not a generation of this account/);
    }
    // A limit is digits, 1 to the page's most: not a number Number() would also read.
    for (const limit of ["1e2", "0x10", "2.0", " 2", "0", "-1"]) {
      const e = await sdkError(c.get("/generations", { query: { limit } }));
      assert.equal(e.status, 400, limit);
      assert.match(String((e.error as Obj).message), /limit must be an integer/);
    }
  }));

Deno.test("chat billing: another account's generation id → 404", () =>
  withGateway(async (g) => {
    const raw = await client(g).chat.completions.create({
      model: MODEL,
      messages: messages("[[mock:tokens=2]]"),
    }).withResponse();
    const id = raw.response.headers.get("x-generation-id")!;
    await g.settled();
    const other = await g.account("10");
    const e = await sdkError(client(g, other.key).get(`/generations/${id}`));
    assert.equal(e.status, 404);
    assert.equal((e.error as Obj).code, 404);
    const list = await client(g, other.key).get("/generations") as { data: Obj[] };
    assert.deepEqual(list.data, [], "nor is it listed for the other account");
    // The owner still sees it.
    const mine = await client(g).get(`/generations/${id}`) as Obj;
    assert.equal(mine.id, id);
  }));

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(`chat billing (${model}): the completion id is the generation id (spec: id)`, () =>
    withGateway(async (g) => {
      // Spec, chat completion object: `id` is the "Generation identifier" (the one the
      // generation history answers to) and `model` the slug. Streaming chunks should agree
      // with the whole object; mismatches are collected so one run reports them all.
      const c = client(g);
      const problems: string[] = [];
      const raw = await c.chat.completions.create({
        model,
        messages: messages("[[mock:tokens=2]]"),
      }).withResponse();
      const wholeId = raw.response.headers.get("x-generation-id");
      if (raw.data.id !== wholeId) problems.push(`body id ${raw.data.id} ≠ ${wholeId}`);
      if (raw.data.model !== model) problems.push(`body model ${raw.data.model}`);
      const s = await c.chat.completions.create({
        model,
        messages: messages("[[mock:tokens=2]]"),
        stream: true,
      }).withResponse();
      const streamId = s.response.headers.get("x-generation-id");
      const ids = new Set<string>();
      const models = new Set<string>();
      for await (const ch of s.data) {
        ids.add(ch.id);
        models.add(ch.model);
      }
      if (ids.size !== 1 || !ids.has(streamId!)) {
        problems.push(`chunk ids ${[...ids].join(", ")} ≠ ${streamId}`);
      }
      if (models.size !== 1 || !models.has(model)) {
        problems.push(`chunk models ${[...models].join(", ")}`);
      }
      assert.deepEqual(problems, []);
      // The ids are the generations the history answers to, one per call.
      assert.notEqual(streamId, wholeId);
      await g.settled();
      for (const id of [wholeId!, streamId!]) {
        const gen = await c.get(`/generations/${id}`) as Obj;
        assert.equal(gen.id, id);
        assert.equal(gen.model, model);
      }
    }));
}

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(`chat billing (${model}): an answer without usage is counted from its text, whole or streamed`, () =>
    withGateway(async (g) => {
      // 400 mock tokens ("tok0 tok1 … tok399", 2 289 characters) and no usage from the upstream.
      const marker = "[[mock:tokens=400,usage=none]]";
      const whole = await client(g).chat.completions.create({
        model,
        messages: messages(marker),
      }).withResponse();
      const text = whole.data.choices[0].message.content!;
      assert.equal(text.split(" ").length, 400);
      await g.settled();
      const gen =
        (await g.store.getGeneration(g.accountId, whole.response.headers.get("x-generation-id")!))!;
      assert.equal(gen.usageSource, "counted");
      // One delta carrying the whole answer: about four characters a token, not one token.
      assert.equal(gen.tokens.output, Math.floor(text.length / 4));

      const streamed = await client(g).chat.completions.create({
        model,
        messages: messages(marker),
        stream: true,
      }).withResponse();
      let deltas = 0;
      for await (const chunk of streamed.data) if (chunk.choices[0]?.delta?.content) deltas++;
      await g.settled();
      const sgen = (await g.store.getGeneration(
        g.accountId,
        streamed.response.headers.get("x-generation-id")!,
      ))!;
      assert.equal(sgen.usageSource, "counted");
      // Streamed one short token per delta: one token each.
      assert.equal(deltas, 400);
      assert.equal(sgen.tokens.output, 400);
    }));
}

Deno.test("chat billing: a cap the upstream raises to its least is held at that least", () =>
  withGateway(async (g) => {
    // A responses-only model takes no max_output_tokens below 16: one token asked is sixteen
    // allowed, and billed if made. The hold must cover the sixteen, or the balance goes below 0.
    const slug = "openai/gpt-5.3-codex";
    const price = Number((await Catalogue.load()).resolve(slug)!.pricing.completion);
    const output16 = 16 * price * 92.5 * 1.05; // roubles at the default rate and markup
    const poor = await g.account((output16 * 0.8).toFixed(6));
    const ask = (max_tokens: number) =>
      client(g, poor.key).chat.completions.create({
        model: slug,
        max_tokens,
        messages: messages("[[mock:tokens=16]]"),
      });
    const e = await sdkError(ask(1));
    assert.equal(e.status, 402);
    const a = (await g.store.getAccount(poor.accountId))!;
    assert.ok(a.balance > 0n);
    assert.equal(g.mock.stats.calls.length, 0, "refused before the upstream");
  }));

Deno.test("chat billing: n choices are held n times over and asked of the upstream as sent", () =>
  withGateway(async (g) => {
    const ask = (key: string, n: number, model = MODEL) =>
      client(g, key).chat.completions.create({
        model,
        n,
        max_tokens: 1000,
        messages: messages("[[mock:tokens=2]]"),
      }).withResponse();
    // The hold of one choice, from a probe.
    const probe = await ask(g.key, 1);
    await g.settled();
    const one = (await g.store.getGeneration(
      g.accountId,
      probe.response.headers.get("x-generation-id")!,
    ))!.hold;
    // Enough for one choice's hold, not for two.
    const a = await g.account(nanoToRub(one * 3n / 2n).toString());
    assert.equal((await ask(a.key, 1)).data.object, "chat.completion");
    const e = await sdkError(ask(a.key, 2));
    assert.equal(e.status, 402);
    // The upstream is asked for the choices as sent.
    const rich = await ask(g.key, 2);
    assert.equal(rich.data.object, "chat.completion");
    await g.mock.idle();
    assert.equal((g.mock.stats.calls.at(-1)!.body as Obj).n, 2);
  }));

Deno.test("chat: n > 1 on a model no chat upstream serves is a 400 naming n, nothing sent", () =>
  withGateway(async (g) => {
    const refused = await sdkError(
      client(g).chat.completions.create({
        model: ANTHROPIC_MODEL,
        n: 2,
        messages: messages("[[mock:tokens=2]]"),
      }),
    );
    assert.equal(refused.status, 400);
    assert.match(String((refused.error as Obj).message), /n > 1/);
    assert.equal(g.mock.stats.calls.length, 0);
  }, { withoutKeys: ["OPENROUTER_API_KEY"] }));

Deno.test("an n sent to the messages or responses endpoint (neither has one) does not multiply the hold", () =>
  withGateway(async (g) => {
    const post = (path: string, body: Obj) =>
      fetch(`${g.url}/v1/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const bodies: [string, Obj][] = [
      ["responses", { model: MODEL, input: "hi [[mock:tokens=2]]", max_output_tokens: 16 }],
      ["messages", {
        model: ANTHROPIC_MODEL,
        max_tokens: 16,
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
      }],
    ];
    for (const [path, body] of bodies) {
      const holds: bigint[] = [];
      // 2^53: a hold that many times over went past what the store holds (a 503 "store
      // unavailable"); a smaller n only refused a rich account for nothing (402).
      for (const n of [undefined, 1000, 2 ** 53]) {
        const res = await post(path, n === undefined ? body : { ...body, n });
        assert.equal(res.status, 200, `${path} n=${n}: ${await res.clone().text()}`);
        await res.body?.cancel();
        await g.settled();
        const id = res.headers.get("x-generation-id")!;
        holds.push((await g.store.getGeneration(g.accountId, id))!.hold);
      }
      assert.deepEqual(holds, [holds[0], holds[0], holds[0]], path);
    }
  }));

Deno.test("chat billing: OpenAI is asked for its standard tier, the one the price table prices, and to store nothing", () =>
  withGateway(async (g) => {
    const c = client(g);
    await c.chat.completions.create({
      model: MODEL,
      service_tier: "priority",
      // Nor is anything stored in the operator's account.
      store: true,
      // (which OpenAI refuses without `store`: it tags stored completions)
      metadata: { team: "a" },
      messages: messages("[[mock:tokens=2]]"),
    });
    await c.responses.create({ model: MODEL, service_tier: "flex", input: "hi [[mock:tokens=2]]" });
    for (const call of g.mock.stats.calls) {
      assert.equal((call.body as Obj).service_tier, undefined, call.path);
      assert.ok(!(call.body as Obj).store, call.path);
      if (call.path.endsWith("/chat/completions")) {
        assert.equal((call.body as Obj).metadata, undefined, call.path);
      }
    }
    assert.equal(g.mock.stats.calls.length, 2);
  }));

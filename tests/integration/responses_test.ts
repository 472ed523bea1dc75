/**
 * POST /v1/responses end to end: the real `openai` SDK (`client.responses`) → a real gateway
 * over HTTP → the mock upstream, served by an openai-responses upstream (pass-through), an
 * openai-chat upstream and an anthropic-messages upstream (both transcoded).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  heldByGenerations,
  startGateway,
  type TestGateway,
  withGateway,
} from "../helpers/gateway.ts";
import { ALL_VIA_CHAT } from "../helpers/providers.ts";
import { nanoToRub } from "../../src/billing/money.ts";
import { parseSse } from "../helpers/sse.ts";

type Upstream = "responses" | "chat" | "anthropic";
const UPSTREAMS: Upstream[] = ["responses", "chat", "anthropic"];

/**
 * Per upstream kind: the slug and the gateway options. With the bundled providers file an
 * openai/* slug goes to the openai provider, whose openai-responses protocol a responses
 * client prefers (pass-through), and anthropic/* to the anthropic provider.
 */
const SETUP: Record<Upstream, { model: string; opts: Parameters<typeof startGateway>[0] }> = {
  responses: { model: "openai/gpt-5.1", opts: {} },
  chat: { model: "openai/gpt-5.1", opts: { providers: ALL_VIA_CHAT } },
  anthropic: { model: "anthropic/claude-sonnet-4.5", opts: {} },
};

/** The mock's route for each upstream kind (MockCall.protocol). */
const MOCK_PROTOCOL: Record<Upstream, string> = {
  responses: "responses",
  chat: "chat",
  anthropic: "messages",
};

function client(g: TestGateway, key = g.key) {
  return new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0 });
}

function post(g: TestGateway, body: unknown, key = g.key) {
  return fetch(`${g.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The generic envelope: `{error: {code: <status>, message, metadata}}`. */
async function expectGenericError(res: Response, status: number) {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = JSON.parse(text);
  assert.equal(body.error.code, status, text);
  assert.equal(typeof body.error.message, "string");
  assert.equal(typeof body.error.metadata, "object");
  return body as { error: { code: number; message: string; metadata: Record<string, unknown> } };
}

function checkUsage(usage: Record<string, unknown>) {
  assert.equal(typeof usage.input_tokens, "number");
  assert.equal(typeof usage.output_tokens, "number");
  const inDetails = usage.input_tokens_details as Record<string, unknown>;
  const outDetails = usage.output_tokens_details as Record<string, unknown>;
  assert.equal(typeof inDetails?.cached_tokens, "number");
  // Required in the SDKs' types (a Python client reads None where it is missing), on every
  // upstream: a pass-through upstream that leaves it out (OpenAI's older answers do) too.
  assert.equal(typeof inDetails?.cache_write_tokens, "number");
  assert.equal(typeof outDetails?.reasoning_tokens, "number");
  assert.equal(
    usage.total_tokens,
    (usage.input_tokens as number) + (usage.output_tokens as number),
  );
  assert.equal(typeof usage.cost, "number");
  assert.ok((usage.cost as number) > 0);
  const details = usage.cost_details as Record<string, unknown>;
  assert.equal(typeof details?.upstream_inference_input_cost, "number");
  assert.equal(typeof details?.upstream_inference_output_cost, "number");
}

// ---- non-streaming -------------------------------------------------------------------------

for (const u of UPSTREAMS) {
  const { model, opts } = SETUP[u];

  Deno.test(`responses (${u} upstream): non-streaming response with output_text, usage and cost`, async () => {
    await withGateway(async (g) => {
      const before = (await g.store.getAccount(g.accountId))!.balance;
      const raw = await client(g).responses.create({
        model,
        input: "Say hello [[mock:tokens=5]]",
      }).withResponse();
      const r = raw.data;
      assert.equal(r.object, "response");
      assert.equal(r.model, model);
      assert.equal(r.status, "completed");
      const message = r.output.find((i) => i.type === "message");
      assert.ok(message && message.type === "message");
      assert.equal(message.role, "assistant");
      assert.equal(typeof message.id, "string");
      assert.equal(message.status, "completed");
      const part = message.content[0];
      assert.equal(part.type, "output_text");
      assert.equal((part as { text: string }).text, "tok0 tok1 tok2 tok3 tok4");
      assert.ok(Array.isArray((part as { annotations: unknown[] }).annotations));
      assert.equal(r.output_text, "tok0 tok1 tok2 tok3 tok4");
      // The wire itself carries output_text (the spec lists it; the SDK would also add it).
      const usage = r.usage as unknown as Record<string, unknown>;
      checkUsage(usage);
      assert.equal(usage.output_tokens, 5);

      const genId = raw.response.headers.get("x-generation-id")!;
      assert.match(genId, /^gen_/);
      // On every route the response's id is the generation's: the history finds it by it.
      assert.equal(r.id, genId);
      await g.settled();
      const after = (await g.store.getAccount(g.accountId))!;
      assert.equal(nanoToRub(before - after.balance), usage.cost);
      assert.equal(await heldByGenerations(g.store, after.id), 0n);
      const gen = await g.store.getGeneration(g.accountId, genId);
      assert.equal(gen?.status, "completed");
      assert.equal(gen?.endpoint, "responses");

      await g.mock.idle();
      assert.equal(g.mock.stats.calls.length, 1);
      assert.equal(g.mock.stats.calls[0].protocol, MOCK_PROTOCOL[u]);
    }, opts);
  });

  Deno.test(`responses (${u} upstream): output_text is on the wire, not only added by the SDK`, async () => {
    await withGateway(async (g) => {
      const res = await post(g, { model, input: "Hi [[mock:tokens=3]]" });
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.output_text, "tok0 tok1 tok2");
      assert.equal(body.model, model);
      assert.equal(body.store, false);
    }, opts);
  });
}

// ---- streaming -----------------------------------------------------------------------------

const TEXT_STREAM_ORDER = (deltas: number) => [
  "response.created",
  "response.in_progress",
  "response.output_item.added",
  "response.content_part.added",
  ...Array(deltas).fill("response.output_text.delta"),
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  "response.completed",
];

for (const u of UPSTREAMS) {
  const { model, opts } = SETUP[u];

  Deno.test(`responses (${u} upstream): raw SSE in the responses event order`, async () => {
    await withGateway(async (g) => {
      const res = await post(g, { model, input: "Count [[mock:tokens=4]]", stream: true });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      const genId = res.headers.get("x-generation-id")!;
      const events = parseSse(await res.text());
      const payloads = events.map((e) => JSON.parse(e.data));
      for (let i = 0; i < events.length; i++) {
        assert.equal(payloads[i].type, events[i].event, "data.type matches the event name");
      }
      assert.deepEqual(events.map((e) => e.event), TEXT_STREAM_ORDER(4));
      const seq = payloads.map((p) => p.sequence_number);
      for (let i = 1; i < seq.length; i++) {
        assert.ok(seq[i] > seq[i - 1], `sequence_number increases: ${seq.join(",")}`);
      }
      assert.equal(
        payloads.filter((p) => p.type === "response.output_text.delta").map((p) => p.delta).join(
          "",
        ),
        "tok0 tok1 tok2 tok3",
      );
      const created = payloads[0].response;
      assert.equal(created.object, "response");
      // Pass-through forwards response.created as it came but for its id and model (pinned
      // by the conformance replay tests), so every route names the slug this early.
      assert.equal(created.model, model);
      const done = payloads.at(-1).response;
      assert.equal(done.status, "completed");
      assert.equal(done.model, model);
      assert.equal(created.id, genId);
      assert.equal(done.id, genId);
      checkUsage(done.usage);
      assert.equal(done.usage.output_tokens, 4);
      assert.equal(done.output_text ?? "tok0 tok1 tok2 tok3", "tok0 tok1 tok2 tok3");
      await g.settled();
      const gen = await g.store.getGeneration(g.accountId, genId);
      assert.equal(gen?.status, "completed");
      assert.equal(nanoToRub(gen!.cost), done.usage.cost);
    }, opts);
  });

  Deno.test(`responses (${u} upstream): SDK stream delivers deltas and the completed response`, async () => {
    await withGateway(async (g) => {
      const stream = await client(g).responses.create({
        model,
        input: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
        stream: true,
      });
      let text = "";
      const types: string[] = [];
      let completed: OpenAI.Responses.Response | undefined;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === "response.output_text.delta") text += ev.delta;
        if (ev.type === "response.completed") completed = ev.response;
      }
      assert.equal(types[0], "response.created");
      assert.equal(types.at(-1), "response.completed");
      assert.equal(text, "tok0 tok1 tok2 tok3 tok4 tok5");
      assert.equal(completed?.model, model);
      checkUsage(completed!.usage as unknown as Record<string, unknown>);

      const helper = client(g).responses.stream({ model, input: "Again [[mock:tokens=2]]" });
      const final = await helper.finalResponse();
      assert.equal(final.output_text, "tok0 tok1");
      assert.equal(final.status, "completed");
    }, opts);
  });

  Deno.test(`responses (${u} upstream): the response echoes the text.format asked for, streamed or not`, async () => {
    // LangChain's ChatOpenAI (useResponsesApi, withStructuredOutput) parses a streamed answer
    // only when response.completed says `text.format.type: "json_schema"`, as OpenAI echoes
    // it; the body is the one it sent.
    const format = {
      type: "json_schema",
      schema: {
        type: "object",
        properties: { name: { type: "string" }, age: { type: "number" } },
        required: ["name", "age"],
        additionalProperties: false,
      },
      name: "extract",
      strict: true,
    } as const;
    await withGateway(async (g) => {
      const body = {
        model,
        text: { format },
        input: [{ type: "message" as const, role: "user" as const, content: "Bob is 42" }],
      };
      const stream = await client(g).responses.create({ ...body, stream: true });
      let completed: OpenAI.Responses.Response | undefined;
      for await (const ev of stream) if (ev.type === "response.completed") completed = ev.response;
      assert.equal(completed?.text?.format?.type, "json_schema");
      assert.deepEqual(JSON.parse(completed!.output_text), { name: "mock name 1", age: 1 });
      const whole = await client(g).responses.create(body);
      assert.equal(whole.text?.format?.type, "json_schema");
      assert.equal((whole.text?.format as { name?: string }).name, "extract");
    }, opts);
  });

  for (const fault of ["fail", "cut"]) {
    Deno.test(`responses (${u} upstream): an in-stream failure (${fault}=3) ends with response.failed`, async () => {
      await withGateway(async (g) => {
        const res = await post(g, {
          model,
          input: `Fail [[mock:tokens=8,${fault}=3]]`,
          stream: true,
        });
        assert.equal(res.status, 200);
        const genId = res.headers.get("x-generation-id")!;
        const events = parseSse(await res.text());
        const names = events.map((e) => e.event);
        assert.equal(names.at(-1), "response.failed", names.join(" "));
        assert.ok(!names.includes("response.completed"), "never a silent completed");
        const failed = JSON.parse(events.at(-1)!.data).response;
        assert.equal(failed.status, "failed");
        assert.equal(typeof failed.error?.message, "string");
        assert.ok(!/mock-openai-key|mock-anthropic-key/.test(JSON.stringify(failed)));
        const seq = events.map((e) => JSON.parse(e.data).sequence_number);
        for (let i = 1; i < seq.length; i++) assert.ok(seq[i] > seq[i - 1], seq.join(","));
        assert.equal(names.filter((n) => n === "response.output_text.delta").length, 3);
        await g.settled();
        const gen = await g.store.getGeneration(g.accountId, genId);
        assert.equal(gen?.status, "failed");
        assert.ok(gen!.cost > 0n, "what was relayed before the failure is charged");
      }, opts);
    });
  }
}

for (const u of UPSTREAMS) {
  const { model, opts } = SETUP[u];
  Deno.test(`responses (${u} upstream): a length finish is status incomplete, streamed or not`, async () => {
    await withGateway(async (g) => {
      const params = {
        model,
        instructions: "Be brief.",
        input: "Long answer [[mock:tokens=3,finish=length]]",
      };
      const r = await client(g).responses.create(params);
      assert.equal(r.status, "incomplete");
      assert.equal(r.incomplete_details?.reason, "max_output_tokens");
      assert.equal(r.output_text, "tok0 tok1 tok2");
      checkUsage(r.usage as unknown as Record<string, unknown>);
      // The message cut short is itself incomplete, as OpenAI marks it.
      if (u !== "responses") {
        assert.equal((r.output.at(-1) as { status?: string }).status, "incomplete");
      }

      const res = await post(g, { ...params, stream: true });
      const events = parseSse(await res.text());
      const names = events.map((e) => e.event);
      assert.equal(names.at(-1), "response.incomplete", names.join(" "));
      assert.ok(!names.includes("response.completed"));
      const done = JSON.parse(events.at(-1)!.data).response;
      assert.equal(done.status, "incomplete");
      assert.equal(done.incomplete_details?.reason, "max_output_tokens");
      assert.equal(done.model, model);
      checkUsage(done.usage);
      if (u !== "responses") {
        assert.equal(done.output.at(-1).status, "incomplete");
        const itemDone = events.filter((e) => e.event === "response.output_item.done").at(-1)!;
        assert.equal(JSON.parse(itemDone.data).item.status, "incomplete");
      }

      await g.mock.idle();
      const sent = JSON.stringify(g.mock.stats.calls[0].body);
      assert.ok(sent.includes("Be brief."), "instructions reach the upstream");
    }, opts);
  });
}

// ---- function tools ------------------------------------------------------------------------

const TOOLS: OpenAI.Responses.FunctionTool[] = [
  {
    type: "function",
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    strict: false,
  },
  {
    type: "function",
    name: "get_time",
    description: "Local time in a city",
    parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    strict: false,
  },
];

for (const u of UPSTREAMS) {
  const { model, opts } = SETUP[u];

  Deno.test(`responses (${u} upstream): several function calls in one turn, then their outputs`, async () => {
    await withGateway(async (g) => {
      const c = client(g);
      const first = await c.responses.create({
        model,
        tools: TOOLS,
        input: "Weather and time in Paris? [[mock:tools=2]]",
      });
      assert.equal(first.model, model);
      const calls = first.output.filter((i) => i.type === "function_call");
      assert.equal(calls.length, 2, JSON.stringify(first.output));
      assert.deepEqual(calls.map((c) => c.name), ["get_weather", "get_time"]);
      for (const call of calls) {
        assert.ok(call.call_id.length > 0);
        assert.deepEqual(Object.keys(JSON.parse(call.arguments)), ["q"]);
      }
      assert.notEqual(calls[0].call_id, calls[1].call_id);

      // The streamed form carries the same two calls.
      const streamed = await c.responses.stream({
        model,
        tools: TOOLS,
        input: "Streamed: weather and time? [[mock:tools=2]]",
      }).finalResponse();
      const streamedCalls = streamed.output.filter((i) => i.type === "function_call");
      assert.deepEqual(streamedCalls.map((c) => c.name), ["get_weather", "get_time"]);
      for (const call of streamedCalls) JSON.parse(call.arguments);

      const second = await c.responses.create({
        model,
        tools: TOOLS,
        input: [
          { role: "user", content: "Weather and time in Paris?" },
          ...calls.map((call) => ({
            type: "function_call" as const,
            call_id: call.call_id,
            name: call.name,
            arguments: call.arguments,
          })),
          { type: "function_call_output", call_id: calls[0].call_id, output: "Sunny, 21°C" },
          { type: "function_call_output", call_id: calls[1].call_id, output: "14:05" },
          { role: "user", content: "Summarise [[mock:tokens=3]]" },
        ],
      });
      assert.equal(second.status, "completed");
      assert.equal(second.output_text, "tok0 tok1 tok2");

      await g.mock.idle();
      const sent = JSON.stringify(g.mock.stats.calls.at(-1)!.body);
      assert.ok(sent.includes("Sunny, 21°C") && sent.includes("14:05"), sent);
      for (const call of calls) assert.ok(sent.includes(call.call_id), "call ids reach upstream");
    }, opts);
  });
}

// ---- request fields ------------------------------------------------------------------------

for (const u of UPSTREAMS) {
  const { model, opts } = SETUP[u];
  Deno.test(`responses (${u} upstream): reasoning effort reaches the upstream`, async () => {
    await withGateway(async (g) => {
      const r = await client(g).responses.create({
        model,
        reasoning: { effort: "high" },
        input: "Think hard [[mock:tokens=2,reasoning=5]]",
      });
      assert.equal(r.status, "completed");
      assert.equal(r.output_text, "tok0 tok1");
      const usage = r.usage!;
      assert.equal(usage.output_tokens, 7, "reasoning tokens are output tokens");
      if (u !== "anthropic") assert.equal(usage.output_tokens_details.reasoning_tokens, 5);
      await g.mock.idle();
      const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
      if (u === "responses") {
        assert.equal((sent.reasoning as { effort: string }).effort, "high");
      } else if (u === "chat") {
        assert.equal(sent.reasoning_effort, "high", JSON.stringify(sent));
      } else {
        const thinking = sent.thinking as { type: string; budget_tokens: number };
        assert.equal(thinking?.type, "enabled", JSON.stringify(sent));
        assert.ok(thinking.budget_tokens >= 1024);
      }
    }, opts);
  });
}

Deno.test("responses: previous_response_id is refused with 400 saying the full history must be sent", async () => {
  for (const u of UPSTREAMS) {
    const { model, opts } = SETUP[u];
    await withGateway(async (g) => {
      const res = await post(g, {
        model,
        previous_response_id: "resp_abc123",
        input: "And then?",
      });
      const body = await expectGenericError(res, 400);
      assert.match(body.error.message, /previous_response_id/);
      assert.match(body.error.message, /full/i);
      assert.match(body.error.message, /history|conversation|input/i);
      assert.equal(g.mock.stats.calls.length, 0);

      await assert.rejects(
        client(g).responses.create({ model, previous_response_id: "resp_abc123", input: "x" }),
        (e: unknown) => e instanceof OpenAI.BadRequestError,
      );
    }, opts);
  }
});

Deno.test("responses: store: true is accepted and nothing is stored upstream", async () => {
  for (const u of UPSTREAMS) {
    const { model, opts } = SETUP[u];
    await withGateway(async (g) => {
      const r = await client(g).responses.create({
        model,
        store: true,
        input: "Remember this [[mock:tokens=2]]",
      });
      assert.equal(r.status, "completed");
      assert.equal((r as unknown as { store: unknown }).store, false, "nothing was stored");
      await g.mock.idle();
      const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
      if (u === "responses") assert.equal(sent.store, false, "pass-through sends store:false");
      else assert.notEqual(sent.store, true);
    }, opts);
  }
});

Deno.test("responses: reasoning settings are left out for a model without reasoning (Codex sends them to any model)", async () => {
  await withGateway(async (g) => {
    // A session that switched from a reasoning model: its reasoning items are in the input,
    // and Codex asks for GPT-5's `low` verbosity on every call.
    const r = await client(g).responses.create({
      model: "openai/gpt-4o-mini",
      input: [
        { role: "user", content: "earlier" },
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAAAxyz" },
        { role: "assistant", content: "said" },
        { role: "user", content: "hi [[mock:tokens=2]]" },
      ],
      reasoning: { effort: "high", summary: "auto" },
      include: ["reasoning.encrypted_content", "message.output_text.logprobs"],
      text: { verbosity: "low", format: { type: "text" } },
    } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    assert.equal(r.status, "completed");
    const sent = g.mock.stats.calls[0];
    assert.match(sent.path, /\/responses$/, "still the pass-through");
    const body = sent.body as Record<string, unknown>;
    assert.equal(body.reasoning, undefined);
    assert.deepEqual(body.include, ["message.output_text.logprobs"]);
    assert.deepEqual((body.input as { type?: string }[]).map((i) => i.type ?? "message"), [
      "message",
      "message",
      "message",
    ]);
    assert.deepEqual(body.text, { format: { type: "text" } });
    // A reasoning model keeps them.
    await client(g).responses.create({
      model: "openai/gpt-5.1",
      input: "hi [[mock:tokens=2]]",
      reasoning: { effort: "high" },
      include: ["reasoning.encrypted_content"],
    });
    const kept = g.mock.stats.calls[1].body as Record<string, unknown>;
    assert.deepEqual(kept.reasoning, { effort: "high" });
    assert.deepEqual(kept.include, ["reasoning.encrypted_content"]);
  });
});

Deno.test("responses: built-in tools need an upstream that runs them (400 naming the tool elsewhere)", async () => {
  const body = (model: string, tool = "web_search") => ({
    model,
    tools: [{ type: tool }],
    input: "News today? [[mock:tokens=2]]",
  });
  const refused = async (g: TestGateway, model: string, tool: string) => {
    const err = await expectGenericError(await post(g, body(model, tool)), 400);
    assert.match(err.error.message, new RegExp(tool));
    assert.equal(g.mock.stats.calls.length, 0);
  };
  // A chat upstream runs neither; Anthropic runs web search (its server tool), nothing else.
  await withGateway((g) => refused(g, SETUP.chat.model, "web_search"), SETUP.chat.opts);
  await withGateway(async (g) => {
    await refused(g, SETUP.anthropic.model, "file_search");
    const res = await post(g, body(SETUP.anthropic.model));
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as { tools: { type: string }[] };
    assert.deepEqual(sent.tools, [{
      type: "web_search_20250305",
      name: "web_search",
      max_uses: 10,
    }]);
  }, { withoutKeys: ["OPENROUTER_API_KEY"] });
  await withGateway(async (g) => {
    const res = await post(g, body(SETUP.responses.model));
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as { tools: { type: string }[] };
    assert.deepEqual(sent.tools, [{ type: "web_search" }]);
  }, SETUP.responses.opts);
});

// ---- errors --------------------------------------------------------------------------------

Deno.test("responses errors: 400 model not found, 401, 402, 503 in the generic envelope", async () => {
  await withGateway(
    async (g) => {
      const m = SETUP.responses.model;
      const nf = await expectGenericError(await post(g, { model: "gpt-5.1", input: "x" }), 400);
      assert.match(nf.error.message, /model not found/i);
      const none = await fetch(`${g.baseURL}/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: m, input: "x" }),
      });
      await expectGenericError(none, 401);
      const a = await g.account("0.01");
      const low = await expectGenericError(
        await post(g, { model: m, input: "x", max_output_tokens: 100000 }, a.key),
        402,
      );
      assert.match(low.error.message, /[а-яА-ЯёЁ]/);
      assert.equal(g.mock.stats.calls.length, 0);
    },
  );
  await withGateway(async (g) => {
    await expectGenericError(await post(g, { model: SETUP.responses.model, input: "x" }), 503);
  }, { withoutKeys: ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"] });
});

Deno.test("responses errors: a 402 for a call that set no output limit does not ask to lower it", async () => {
  await withGateway(async (g) => {
    // Codex sends no max_output_tokens and has no setting for one: the gateway already held
    // the least output it holds for, so only a top-up (or a limit of the client's own) helps.
    const a = await g.account("0.01");
    const low = await expectGenericError(
      await post(g, { model: SETUP.responses.model, input: "x" }, a.key),
      402,
    );
    assert.match(low.error.message, /резервирует до \d+,\d\d ₽/);
    assert.match(low.error.message, /4096 токенов вывода/, "says what the hold is made of");
    assert.doesNotMatch(low.error.message, /Уменьшите max_tokens/);
    assert.match(low.error.message, /[Пп]ополните баланс/);
    // The limit it may set is the responses API's own field: `max_tokens` is no field there.
    assert.match(low.error.message, /max_output_tokens/);
    assert.doesNotMatch(low.error.message, /\bmax_tokens\b/);
    // A limit of its own that the balance does not cover: lowering that field helps.
    const capped = await expectGenericError(
      await post(g, { model: SETUP.responses.model, input: "x", max_output_tokens: 100000 }, a.key),
      402,
    );
    assert.match(capped.error.message, /Уменьшите max_output_tokens/);
    assert.doesNotMatch(capped.error.message, /\bmax_tokens\b/);
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("responses errors: upstream 429 → 429, upstream 500 → failover then 502, no charge", async () => {
  await withGateway(async (g) => {
    const before = (await g.store.getAccount(g.accountId))!.balance;
    const m = SETUP.responses.model;
    const limited = await post(g, { model: m, input: "x [[mock:error=429]]" });
    assert.equal(limited.headers.get("retry-after"), "2", "the upstream's wait");
    await expectGenericError(limited, 429);
    await g.mock.idle();
    g.mock.reset();
    await expectGenericError(await post(g, { model: m, input: "y [[mock:error=500]]" }), 502);
    await g.mock.idle();
    // openai (responses), then openrouter (responses) for the same slug
    assert.equal(g.mock.stats.calls.length, 2);
    await g.settled();
    const after = (await g.store.getAccount(g.accountId))!;
    assert.equal(after.balance, before);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
  });
});

// ---- Codex recorded requests ---------------------------------------------------------------

const CODEX_DIR = "/work/shared/fixtures/clients/codex";
const codexFiles: string[] = (() => {
  try {
    return [...Deno.readDirSync(CODEX_DIR)]
      .map((e) => e.name)
      .filter((n) => n.endsWith(".request.json"))
      .sort();
  } catch {
    return [];
  }
})();

Deno.test({
  name: "responses (responses upstream): Codex recorded requests stream with 200",
  ignore: codexFiles.length === 0,
  fn: async () => {
    await withGateway(async (g) => {
      for (const file of codexFiles) {
        const rec = JSON.parse(await Deno.readTextFile(`${CODEX_DIR}/${file}`));
        const body = { ...rec.body, model: "openai/gpt-5.1-codex" };
        const res = await post(g, body);
        const text = await res.text();
        assert.equal(res.status, 200, `${file}: ${text.slice(0, 500)}`);
        assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
        const events = parseSse(text);
        assert.equal(events[0].event, "response.created", file);
        assert.equal(events.at(-1)!.event, "response.completed", `${file}: ${text.slice(-400)}`);
        const done = JSON.parse(events.at(-1)!.data).response;
        assert.equal(done.model, "openai/gpt-5.1-codex");
        assert.equal(typeof done.usage.cost, "number");
      }
      await g.mock.idle();
      assert.equal(g.mock.stats.calls.length, codexFiles.length);
      for (const call of g.mock.stats.calls) {
        assert.equal(call.protocol, "responses");
        assert.equal(call.outcome, "completed");
        const sent = call.body as Record<string, unknown>;
        assert.equal(sent.model, "gpt-5.1-codex");
        assert.equal(sent.store, false);
      }
    });
  },
});

// Spec: responses `input` items come "in the same form as chat messages" too.
for (const u of UPSTREAMS) {
  Deno.test(`responses (${u} upstream): a chat-form history (tool_calls, a tool message, chat parts) is taken`, async () => {
    const { model, opts } = SETUP[u];
    await withGateway(async (g) => {
      const res = await client(g).responses.create({
        model,
        input: [
          { role: "system", content: "Be brief." },
          { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "call_1",
              type: "function",
              function: { name: "weather", arguments: '{"city":"Paris"}' },
            }],
          },
          { role: "tool", tool_call_id: "call_1", content: "18C, sunny" },
          { role: "user", content: "Thanks [[mock:tokens=3]]" },
        ],
        tools: [{
          type: "function",
          name: "weather",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          strict: false,
        }],
      } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      assert.equal(res.status, "completed");
      await g.mock.idle();
      const call = g.mock.stats.calls.find((c) => c.protocol === MOCK_PROTOCOL[u])!;
      const sent = JSON.stringify(call.body);
      // The tool call and its result reached the upstream in its own form.
      if (u === "responses") {
        const items = (call.body as { input: Record<string, unknown>[] }).input;
        assert.deepEqual(items.map((i) => i.type ?? i.role), [
          "system",
          "user",
          "function_call",
          "function_call_output",
          "user",
        ]);
        assert.match(sent, /"type":"input_text","text":"Weather in Paris\?"/);
        assert.match(sent, /"call_id":"call_1","output":"18C, sunny"/);
      } else if (u === "chat") {
        assert.match(sent, /"role":"tool","tool_call_id":"call_1"/);
        assert.match(sent, /"name":"weather"/);
      } else {
        assert.match(sent, /"type":"tool_use","id":"call_1","name":"weather"/);
        assert.match(sent, /"type":"tool_result","tool_use_id":"call_1"/);
      }
      assert.match(sent, /Weather in Paris\?/);
    }, opts);
  });
}

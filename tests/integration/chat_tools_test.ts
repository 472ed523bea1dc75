/**
 * Chat completions with tool calls, end to end through the real `openai` SDK: parallel calls,
 * arguments split across chunks, streaming and not, over a same-format upstream (openai-chat,
 * passed through) and a translated one (anthropic-messages).
 */
import assert from "node:assert/strict";
import type OpenAI from "openai";
import { ANTHROPIC_MODEL, client, MODEL, withGateway } from "../helpers/chat.ts";

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather for a city",
      parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "Local time for a city",
      parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    },
  },
];

function request(model: string, marker: string) {
  return {
    model,
    messages: [{ role: "user" as const, content: `Weather and time in Oslo? ${marker}` }],
    tools: TOOLS,
  };
}

for (const model of [MODEL, ANTHROPIC_MODEL]) {
  Deno.test(`chat tools (${model}): non-streaming parallel tool calls`, () =>
    withGateway(async (g) => {
      const r = await client(g).chat.completions.create(request(model, "[[mock:tools=2]]"));
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, "tool_calls");
      const calls = choice.message.tool_calls!;
      assert.equal(calls.length, 2);
      assert.deepEqual(
        calls.map((c) => c.type === "function" ? c.function.name : c.type),
        ["get_weather", "get_time"],
      );
      assert.notEqual(calls[0].id, calls[1].id);
      for (const [i, c] of calls.entries()) {
        assert.ok(c.type === "function");
        assert.match(c.id, /\S/);
        assert.deepEqual(JSON.parse(c.function.arguments), { q: `mock q ${i + 1}` });
      }
      const usage = r.usage as unknown as { cost: number; completion_tokens: number };
      assert.ok(usage.completion_tokens > 0);
      assert.ok(usage.cost > 0);
    }));

  Deno.test(
    `chat tools (${model}): streaming parallel tool calls with arguments split across chunks`,
    () =>
      withGateway(async (g) => {
        const stream = await client(g).chat.completions.create({
          ...request(model, "[[mock:tools=2]]"),
          stream: true,
        });
        const pieces = new Map<number, string[]>();
        const names = new Map<number, string>();
        const ids = new Map<number, string>();
        let finish: string | null = null;
        let usage: Record<string, unknown> | undefined;
        for await (const chunk of stream) {
          if (chunk.usage) usage = chunk.usage as unknown as Record<string, unknown>;
          const choice = chunk.choices[0];
          if (!choice) continue;
          finish = choice.finish_reason ?? finish;
          for (const tc of choice.delta.tool_calls ?? []) {
            if (tc.id) ids.set(tc.index, tc.id);
            if (tc.function?.name) names.set(tc.index, tc.function.name);
            if (tc.function?.arguments) {
              pieces.set(tc.index, [...(pieces.get(tc.index) ?? []), tc.function.arguments]);
            }
          }
        }
        assert.equal(finish, "tool_calls");
        assert.deepEqual([...names.keys()].sort(), [0, 1], "dense chat indices 0 and 1");
        assert.deepEqual([names.get(0), names.get(1)], ["get_weather", "get_time"]);
        assert.notEqual(ids.get(0), ids.get(1));
        for (const i of [0, 1]) {
          const p = pieces.get(i)!;
          assert.ok(p.length > 1, `arguments of call ${i} arrive in several chunks`);
          assert.deepEqual(JSON.parse(p.join("")), { q: `mock q ${i + 1}` });
        }
        assert.equal(typeof usage?.cost, "number");
        assert.ok((usage!.cost as number) > 0);
      }),
  );

  for (const includeUsage of [true, false]) {
    Deno.test(`chat tools (${model}): the SDK's stream helper accumulates parseable arguments${includeUsage ? "" : " (usage on the finish chunk)"}`, () =>
      streamHelper(model, includeUsage));
  }
}

async function streamHelper(model: string, includeUsage: boolean) {
  await withGateway(async (g) => {
    const stream = client(g).chat.completions.stream({
      ...request(model, "[[mock:tools=2]]"),
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    });
    const done: { name: string; args: unknown }[] = [];
    stream.on("tool_calls.function.arguments.done", (e) => {
      done.push({ name: e.name, args: e.parsed_arguments ?? JSON.parse(e.arguments) });
    });
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0].message.tool_calls ?? [];
    assert.equal(final.choices[0].finish_reason, "tool_calls");
    assert.equal(calls.length, 2);
    for (const [i, c] of calls.entries()) {
      assert.ok(c.type === "function");
      assert.deepEqual(JSON.parse(c.function.arguments), { q: `mock q ${i + 1}` });
    }
    assert.deepEqual(done.map((d) => d.name), ["get_weather", "get_time"]);
    // Either way the final completion carries the usage and its cost.
    assert.ok((final.usage as unknown as { cost: number }).cost > 0);
  });
}

Deno.test("chat tools: a tool result turn goes back upstream and the model answers", () =>
  withGateway(async (g) => {
    const c = client(g);
    const first = await c.chat.completions.create(request(MODEL, "[[mock:tool=get_weather]]"));
    const call = first.choices[0].message.tool_calls![0];
    assert.ok(call.type === "function");
    const second = await c.chat.completions.create({
      model: MODEL,
      tools: TOOLS,
      messages: [
        { role: "user", content: "Weather in Oslo? [[mock:tokens=4]]" },
        first.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: '{"temp": 3}' },
      ],
    });
    assert.equal(second.choices[0].finish_reason, "stop");
    assert.ok(second.choices[0].message.content!.length > 0);
    const sent = g.mock.stats.calls[1].body as { messages: Record<string, unknown>[] };
    assert.equal(sent.messages.at(-1)!.role, "tool");
    assert.equal(sent.messages.at(-1)!.tool_call_id, call.id);
  }));

Deno.test("chat tools: allowed_tools passes to OpenAI as sent, and to Claude as the allowed tools only", () =>
  withGateway(async (g) => {
    const choice = {
      type: "allowed_tools" as const,
      allowed_tools: {
        mode: "required" as const,
        tools: [{ type: "function" as const, function: { name: "get_time" } }],
      },
    };
    const c = client(g);
    await c.chat.completions.create({
      ...request(MODEL, "[[mock:tool=get_time]]"),
      tool_choice: choice,
    });
    const openai = g.mock.stats.calls[0].body as Record<string, unknown>;
    assert.deepEqual(openai.tool_choice, choice);
    assert.equal((openai.tools as unknown[]).length, 2);

    const r = await c.chat.completions.create({
      ...request(ANTHROPIC_MODEL, "[[mock:tool=get_time]]"),
      tool_choice: choice,
    });
    const claude = g.mock.stats.calls[1].body as {
      tools: { name: string }[];
      tool_choice: unknown;
    };
    assert.deepEqual(claude.tools.map((t) => t.name), ["get_time"], "get_weather was not allowed");
    assert.deepEqual(claude.tool_choice, { type: "tool", name: "get_time" });
    assert.equal(r.choices[0].message.tool_calls?.[0].type, "function");

    // OpenRouter takes no allowed_tools either: the chat body it is passed has the subset.
    await c.chat.completions.create({
      ...request("google/gemini-2.5-flash", "[[mock:tool=get_time]]"),
      tool_choice: choice,
    });
    const or = g.mock.stats.calls[2].body as { tools: { function: { name: string } }[] };
    assert.deepEqual(or.tools.map((t) => t.function.name), ["get_time"]);
    assert.deepEqual((or as Record<string, unknown>).tool_choice, {
      type: "function",
      function: { name: "get_time" },
    });
    // … and so has the responses body.
    await c.responses.create({
      model: "google/gemini-2.5-flash",
      input: "time? [[mock:tool=get_time]]",
      tools: ["get_weather", "get_time", "get_date"].map((name) => ({
        type: "function" as const,
        name,
        strict: false,
        parameters: { type: "object", properties: {} },
      })),
      tool_choice: {
        type: "allowed_tools",
        mode: "auto",
        tools: [{ type: "function", name: "get_time" }, { type: "function", name: "get_weather" }],
      },
    });
    const orr = g.mock.stats.calls[3];
    assert.equal(orr.path, "/v1/responses");
    const sent = orr.body as { tools: { name: string }[]; tool_choice: unknown };
    assert.deepEqual(sent.tools.map((t) => t.name), ["get_weather", "get_time"]);
    assert.equal(sent.tool_choice, "auto");
  }));

Deno.test("chat tools: custom tools pass to OpenAI's chat API, and elsewhere are a 400 naming them", () =>
  withGateway(async (g) => {
    const body = (model: string) => ({
      model,
      messages: [{ role: "user" as const, content: "patch it [[mock:tokens=2]]" }],
      tools: [{ type: "custom" as const, custom: { name: "apply_patch", description: "a patch" } }],
    });
    const c = client(g);
    const r = await c.chat.completions.create(body(MODEL));
    assert.equal(typeof r.choices[0].message.content, "string");
    const sent = g.mock.stats.calls[0].body as { tools: unknown[] };
    assert.deepEqual(sent.tools, body(MODEL).tools);
    // Claude through OpenRouter's chat API: sent as they came.
    await c.chat.completions.create(body(ANTHROPIC_MODEL));
    assert.deepEqual((g.mock.stats.calls[1].body as { tools: unknown[] }).tools, sent.tools);
    await withGateway(async (only) => {
      // With Anthropic's own API alone, nothing can run them.
      const e = await client(only).chat.completions.create(body(ANTHROPIC_MODEL)).catch((e) => e);
      assert.equal(e.status, 400);
      assert.match(String(e.error?.message), /custom tools/);
      assert.equal(only.mock.stats.calls.length, 0);
    }, { withoutKeys: ["OPENROUTER_API_KEY"] });
  }));

Deno.test("chat tools: OpenAI's newer models take tools through the responses API, not chat (which refuses them beside reasoning)", () =>
  withGateway(async (g) => {
    for (const model of ["openai/gpt-5.4", "openai/gpt-5.6-terra"]) {
      const before = g.mock.stats.calls.length;
      const r = await client(g).chat.completions.create({
        ...request(model, "[[mock:tools=2]]"),
        reasoning_effort: "high",
      });
      const calls = r.choices[0].message.tool_calls!;
      assert.equal(calls.length, 2, model);
      assert.equal(r.choices[0].finish_reason, "tool_calls");
      const sent = g.mock.stats.calls.slice(before);
      assert.equal(sent.length, 1);
      assert.match(sent[0].path, /\/responses$/, `${model} went to ${sent[0].path}`);
      const body = sent[0].body as Record<string, unknown>;
      assert.deepEqual(
        (body.reasoning as Record<string, unknown>)?.effort,
        "high",
        "the effort is kept",
      );
    }
    // OpenAI's own fields the chat call carried reach the responses API in its terms.
    const keyed = g.mock.stats.calls.length;
    await client(g).chat.completions.create(
      {
        ...request("openai/gpt-5.4", "[[mock:tokens=2]]"),
        prompt_cache_key: "session-42",
        verbosity: "low",
      } as Parameters<ReturnType<typeof client>["chat"]["completions"]["create"]>[0],
    );
    const keyedBody = g.mock.stats.calls[keyed].body as Record<string, unknown>;
    assert.equal(keyedBody.prompt_cache_key, "session-42");
    assert.deepEqual((keyedBody.text as Record<string, unknown>)?.verbosity, "low");
    // Stop sequences too: the model takes none, so the gateway keeps them on that call.
    const withStop = g.mock.stats.calls.length;
    await client(g).chat.completions.create({
      ...request("openai/gpt-5.4", "[[mock:tokens=3]]"),
      stop: ["END"],
    });
    assert.match(g.mock.stats.calls[withStop].path, /\/responses$/);
    // Without tools the chat API takes them: a chat client keeps its pass-through.
    const before = g.mock.stats.calls.length;
    await client(g).chat.completions.create({
      model: "openai/gpt-5.4",
      messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
      reasoning_effort: "high",
    });
    assert.match(g.mock.stats.calls[before].path, /\/chat\/completions$/);
  }));

Deno.test("chat tools: on gpt-5.2+ OpenAI's encrypted reasoning reaches the chat client and goes back with its tool results", () =>
  withGateway(async (g) => {
    const model = "openai/gpt-5.4";
    const first = await client(g).chat.completions.create({
      ...request(model, "[[mock:tool=get_weather,reasoning=3]]"),
      reasoning_effort: "medium",
    });
    const message = first.choices[0].message as unknown as Record<string, unknown>;
    const details = message.reasoning_details as Record<string, unknown>[];
    assert.ok(Array.isArray(details), JSON.stringify(message));
    const entry = details.find((d) => d.format === "openai-responses-v1")!;
    assert.equal(entry.type, "reasoning.encrypted");
    assert.match(String(entry.data), /^gAAAAA/);
    const call = first.choices[0].message.tool_calls![0];
    const before = g.mock.stats.calls.length;
    await client(g).chat.completions.create({
      model,
      tools: TOOLS,
      reasoning_effort: "medium",
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        message as never,
        { role: "tool", tool_call_id: call.id, content: "sunny [[mock:tokens=2]]" },
      ],
    });
    const input = (g.mock.stats.calls[before].body as { input: Record<string, unknown>[] }).input;
    const reasoning = input.find((i) => i.type === "reasoning");
    assert.ok(reasoning, JSON.stringify(input));
    assert.equal(reasoning.encrypted_content, entry.data, "replayed as OpenAI gave it");
    const types = input.map((i) => i.type ?? i.role);
    assert.ok(types.indexOf("reasoning") < types.indexOf("function_call"), types.join(","));
  }));

/**
 * Across formats: one usage costs the same whichever client format asked and whichever
 * upstream protocol reported it (each reports cached input its own way), and the chat SDK
 * works against an Anthropic upstream (streaming and tools), and the messages SDK against an
 * openai-responses upstream.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { ALL_VIA_ANTHROPIC, ALL_VIA_CHAT, ALL_VIA_RESPONSES } from "../helpers/providers.ts";
import { nanoToRub } from "../../src/billing/money.ts";
import { shortToolName } from "../../src/formats/tool_names.ts";

const MODEL = "anthropic/claude-sonnet-4.5";

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
const anthropic = (g: TestGateway) =>
  new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });

type Client = "messages" | "chat" | "responses";

interface Billed {
  cost: number;
  genCost: bigint;
  tokens: Record<string, number | undefined>;
  upstream: string;
}

/**
 * One call of `client` against a gateway whose every slug goes to `providers`' protocol,
 * with the same prompt text (the mock counts prompt tokens from the text, whatever the
 * wire), so the upstream reports the same figures in its own shape.
 */
async function billedCall(
  client: Client,
  providers: unknown,
  prompt: string,
  stream: boolean,
): Promise<Billed> {
  let out: Billed | undefined;
  await withGateway(async (g) => {
    let cost: number | undefined;
    let genId: string | null = null;
    if (client === "messages") {
      const params = {
        model: MODEL,
        max_tokens: 512,
        messages: [{ role: "user" as const, content: prompt }],
      };
      if (stream) {
        const res = await fetch(`${g.url}/v1/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
          body: JSON.stringify({ ...params, stream: true }),
        });
        assert.equal(res.status, 200);
        genId = res.headers.get("x-generation-id");
        const text = await res.text();
        const delta = text.split("\n").find((l) =>
          l.startsWith("data:") && l.includes("message_delta")
        );
        cost = JSON.parse(delta!.slice(5)).usage.cost;
      } else {
        const raw = await anthropic(g).messages.create(params).withResponse();
        genId = raw.response.headers.get("x-generation-id");
        cost = (raw.data.usage as unknown as { cost: number }).cost;
      }
    } else if (client === "chat") {
      const messages = [{ role: "user" as const, content: prompt }];
      if (stream) {
        const s = await openai(g).chat.completions.create({
          model: MODEL,
          max_tokens: 512,
          messages,
          stream: true,
        }).withResponse();
        genId = s.response.headers.get("x-generation-id");
        for await (const chunk of s.data) {
          if (chunk.usage) cost = (chunk.usage as unknown as { cost: number }).cost;
        }
      } else {
        const raw = await openai(g).chat.completions.create({
          model: MODEL,
          max_tokens: 512,
          messages,
        })
          .withResponse();
        genId = raw.response.headers.get("x-generation-id");
        cost = (raw.data.usage as unknown as { cost: number }).cost;
      }
    } else {
      const input = [{ role: "user" as const, content: prompt }];
      if (stream) {
        const s = await openai(g).responses.create({
          model: MODEL,
          max_output_tokens: 512,
          input,
          stream: true,
        }).withResponse();
        genId = s.response.headers.get("x-generation-id");
        for await (const ev of s.data) {
          if (ev.type === "response.completed") {
            cost = (ev.response.usage as unknown as { cost: number }).cost;
          }
        }
      } else {
        const raw = await openai(g).responses.create({
          model: MODEL,
          max_output_tokens: 512,
          input,
        })
          .withResponse();
        genId = raw.response.headers.get("x-generation-id");
        cost = (raw.data.usage as unknown as { cost: number }).cost;
      }
    }
    assert.equal(typeof cost, "number");
    await g.settled();
    const gen = (await g.store.getGeneration(g.accountId, genId!))!;
    assert.equal(gen.status, "completed");
    assert.equal(gen.usageSource, "upstream");
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.length, 1);
    out = {
      cost: cost!,
      genCost: gen.cost,
      tokens: { ...gen.tokens },
      upstream: g.mock.stats.calls[0].protocol,
    };
  }, { providers });
  return out!;
}

Deno.test("cross-format: the same usage costs the same whichever way it was reported", async () => {
  // Cache reads are reported as a part of the input by chat and responses, beside it by
  // messages; the responses format has no cache-write figure, so only reads are compared.
  const prompt = "Tell me about caching, briefly please. [[mock:tokens=7,cache_read=400]]";
  const cases: [Client, unknown, boolean][] = [
    ["messages", ALL_VIA_ANTHROPIC, false], // pass-through
    ["messages", ALL_VIA_ANTHROPIC, true],
    ["chat", ALL_VIA_CHAT, false], // pass-through
    ["chat", ALL_VIA_CHAT, true],
    ["messages", ALL_VIA_CHAT, false],
    ["messages", ALL_VIA_CHAT, true],
    ["chat", ALL_VIA_ANTHROPIC, false],
    ["chat", ALL_VIA_ANTHROPIC, true],
    ["responses", ALL_VIA_RESPONSES, false], // pass-through
    ["responses", ALL_VIA_RESPONSES, true],
    ["responses", ALL_VIA_CHAT, false],
    ["responses", ALL_VIA_ANTHROPIC, true],
    ["messages", ALL_VIA_RESPONSES, false],
    ["chat", ALL_VIA_RESPONSES, true],
  ];
  const results: (Billed & { name: string })[] = [];
  for (const [client, providers, stream] of cases) {
    const b = await billedCall(client, providers, prompt, stream);
    results.push({ ...b, name: `${client}→${b.upstream}${stream ? " (stream)" : ""}` });
  }
  const ref = results[0];
  assert.equal(ref.tokens.cacheRead, 400);
  assert.equal(ref.tokens.output, 7);
  assert.ok(ref.tokens.input! > 400, "internal input counts the cached part too");
  for (const r of results) {
    assert.deepEqual(
      { input: r.tokens.input, output: r.tokens.output, cacheRead: r.tokens.cacheRead },
      { input: ref.tokens.input, output: ref.tokens.output, cacheRead: ref.tokens.cacheRead },
      `${r.name}: tokens`,
    );
    assert.equal(r.genCost, ref.genCost, `${r.name}: debit ${r.genCost} vs ${ref.genCost}`);
    assert.equal(r.cost, ref.cost, `${r.name}: usage.cost`);
    assert.equal(nanoToRub(r.genCost), r.cost, `${r.name}: usage.cost is the debit`);
  }
});

// ---- the chat SDK against the Anthropic upstream --------------------------------------------

const WEATHER: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  },
};

Deno.test("cross-format: chat SDK streaming against the anthropic upstream", async () => {
  await withGateway(async (g) => {
    const stream = await openai(g).chat.completions.create({
      model: MODEL,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Count [[mock:tokens=5]]" },
      ],
      stream: true,
    });
    let text = "";
    let finish: string | null | undefined;
    let usage: Record<string, unknown> | undefined;
    for await (const chunk of stream) {
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.equal(chunk.model, MODEL);
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, unknown>;
    }
    assert.equal(text, "tok0 tok1 tok2 tok3 tok4");
    assert.equal(finish, "stop");
    assert.equal(usage?.completion_tokens, 5);
    assert.equal(typeof usage?.cost, "number");
    await g.mock.idle();
    const call = g.mock.stats.calls[0];
    assert.equal(call.protocol, "messages");
    const sent = call.body as Record<string, unknown>;
    assert.equal(sent.model, "claude-sonnet-4-5");
    assert.equal(typeof sent.max_tokens, "number", "Anthropic requires max_tokens");
    assert.equal(sent.stream, true);
    assert.ok(JSON.stringify(sent.system).includes("Be brief."));
    assert.ok(
      (sent.messages as { role: string }[]).every((m) => m.role !== "system"),
      "the system prompt moves out of messages",
    );
  });
});

Deno.test("cross-format: chat SDK tool calls against the anthropic upstream (non-streaming, streaming, round trip)", async () => {
  await withGateway(async (g) => {
    const c = openai(g);
    const first = await c.chat.completions.create({
      model: MODEL,
      tools: [WEATHER],
      messages: [{ role: "user", content: "Weather in Paris? [[mock:tool=get_weather]]" }],
    });
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, "tool_calls");
    const calls = choice.message.tool_calls!;
    assert.equal(calls.length, 1);
    const call = calls[0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    assert.equal(call.type, "function");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), { q: "mock q 1" });

    // Streaming, two parallel calls: the argument fragments assemble per index.
    const stream = await c.chat.completions.create({
      model: MODEL,
      tools: [WEATHER, { ...WEATHER, function: { ...WEATHER.function, name: "get_time" } }],
      messages: [{ role: "user", content: "Weather and time? [[mock:tools=2]]" }],
      stream: true,
    });
    const built = new Map<number, { id?: string; name?: string; args: string }>();
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
        const b = built.get(tc.index) ?? { args: "" };
        if (tc.id) b.id = tc.id;
        if (tc.function?.name) b.name = tc.function.name;
        b.args += tc.function?.arguments ?? "";
        built.set(tc.index, b);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, "tool_calls");
    assert.deepEqual([...built.values()].map((b) => b.name), ["get_weather", "get_time"]);
    for (const b of built.values()) {
      assert.ok(b.id);
      assert.deepEqual(Object.keys(JSON.parse(b.args)), ["q"]);
    }

    // Round trip: the tool result goes back as an Anthropic tool_result block.
    const second = await c.chat.completions.create({
      model: MODEL,
      tools: [WEATHER],
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: calls },
        { role: "tool", tool_call_id: call.id, content: "Sunny, 21°C" },
        { role: "user", content: "Thanks [[mock:tokens=2]]" },
      ],
    });
    assert.equal(second.choices[0].message.content, "tok0 tok1");
    await g.mock.idle();
    const sent = g.mock.stats.calls.at(-1)!.body as {
      messages: { role: string; content: { type: string; tool_use_id?: string; id?: string }[] }[];
    };
    const assistant = sent.messages.find((m) => m.role === "assistant")!;
    assert.equal(assistant.content.find((b) => b.type === "tool_use")?.id, call.id);
    const result = sent.messages.flatMap((m) => Array.isArray(m.content) ? m.content : [])
      .find((b) => b.type === "tool_result");
    assert.equal(result?.tool_use_id, call.id);
  });
});

Deno.test("cross-format: messages SDK streaming with tools against an openai-responses upstream", async () => {
  await withGateway(async (g) => {
    const final = await anthropic(g).messages.stream({
      model: "openai/gpt-5.1",
      max_tokens: 256,
      tools: [{
        name: "get_weather",
        input_schema: { type: "object", properties: { q: { type: "string" } } },
      }],
      messages: [{ role: "user", content: "Weather? [[mock:tool=get_weather,tokens=2]]" }],
    }).finalMessage();
    assert.equal(final.stop_reason, "tool_use");
    assert.equal((final.content[0] as { text: string }).text, "tok0 tok1");
    const use = final.content.find((b) => b.type === "tool_use");
    assert.ok(use && use.type === "tool_use");
    assert.deepEqual(use.input, { q: "mock q 1" });
    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
    assert.equal(g.mock.stats.calls[0].protocol, "responses");
    assert.equal(sent.store, false);
  }, { providers: ALL_VIA_RESPONSES });
});

for (
  const [upstream, providers] of [["chat", ALL_VIA_CHAT], ["responses", ALL_VIA_RESPONSES]] as const
) {
  Deno.test(`cross-format: a tool name over 64 characters (Claude Code's MCP tools) reaches an OpenAI ${upstream} upstream shortened, and comes back whole`, async () => {
    await withGateway(async (g) => {
      const long =
        "mcp__github_enterprise_server__fetch_repository_pull_request_review_comments_with_context";
      const short = shortToolName(long);
      assert.ok(long.length > 64 && short.length === 64, short);
      const ask = (stream: boolean, content: string) =>
        anthropic(g).messages.create({
          model: "openai/gpt-4o-mini",
          max_tokens: 256,
          stream,
          tools: [
            { name: long, input_schema: { type: "object", properties: {} } },
            { name: "Read", input_schema: { type: "object", properties: {} } },
          ],
          tool_choice: { type: "tool", name: long },
          messages: [
            { role: "user", content: "earlier" },
            {
              role: "assistant",
              content: [{ type: "tool_use", id: "toolu_1", name: long, input: {} }],
            },
            {
              role: "user",
              content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }],
            },
            { role: "user", content },
          ],
        } as Anthropic.MessageCreateParams);
      const whole = await ask(false, `again [[mock:tool=${short}]]`) as Anthropic.Message;
      const use = whole.content.find((b) => b.type === "tool_use");
      assert.equal(use?.type === "tool_use" && use.name, long);
      await g.mock.idle();
      const sent = JSON.stringify(g.mock.stats.calls.at(-1)!.body);
      assert.ok(!sent.includes(long), "no name over 64 characters upstream");
      // Declared, chosen and in the history: the same short name each time.
      assert.equal(sent.split(`"${short}"`).length - 1, 3, sent);
      assert.ok(sent.includes(`"Read"`), "short names unchanged");

      const events = await ask(true, `again [[mock:tool=${short}]]`) as unknown as AsyncIterable<
        Anthropic.MessageStreamEvent
      >;
      const names: string[] = [];
      for await (const e of events) {
        if (e.type === "content_block_start" && e.content_block.type === "tool_use") {
          names.push(e.content_block.name);
        }
      }
      assert.deepEqual(names, [long]);
    }, { providers });
  });
}

for (
  const [upstream, providers] of [["chat", ALL_VIA_CHAT], ["responses", ALL_VIA_RESPONSES]] as const
) {
  Deno.test(`cross-format: an Anthropic strict tool with an optional property reaches an OpenAI ${upstream} upstream unconstrained, a closed one strict`, async () => {
    await withGateway(async (g) => {
      const closed = {
        type: "object" as const,
        properties: { city: { type: "string" } },
        required: ["city"],
        additionalProperties: false,
      };
      // Anthropic's strict mode takes `units` optional; OpenAI's answers 400 to it.
      const optional = {
        ...closed,
        properties: { ...closed.properties, units: { type: "string" } },
      };
      const r = await anthropic(g).messages.create({
        model: "openai/gpt-4o-mini",
        max_tokens: 64,
        tools: [
          { name: "weather", strict: true, input_schema: optional },
          { name: "time", strict: true, input_schema: closed },
        ],
        messages: [{ role: "user", content: "Weather? [[mock:tool=weather]]" }],
      } as Anthropic.MessageCreateParams) as Anthropic.Message;
      assert.equal(r.stop_reason, "tool_use");
      await g.mock.idle();
      const call = g.mock.stats.calls[0];
      assert.equal(call.protocol, upstream);
      const tools = (call.body as { tools: Record<string, unknown>[] }).tools;
      const fn = (t: Record<string, unknown>) =>
        (upstream === "chat" ? t.function : t) as Record<string, unknown>;
      assert.notEqual(fn(tools[0]).strict, true);
      assert.equal(fn(tools[1]).strict, true);
    }, { providers });
  });
}

Deno.test("cross-format: an Anthropic client's cache marks never reach OpenAI's chat API", async () => {
  await withGateway(async (g) => {
    const r = await anthropic(g).messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 64,
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "Hi", cache_control: { type: "ephemeral" } }],
        },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "Again [[mock:tokens=2]]" },
      ],
    });
    assert.equal(r.type, "message");
    await g.mock.idle();
    const call = g.mock.stats.calls[0];
    assert.equal(call.protocol, "chat");
    const sent = JSON.stringify(call.body);
    // OpenAI answers 400 "Unknown parameter" to either.
    assert.doesNotMatch(sent, /cache_control/);
    assert.doesNotMatch(sent, /"max_tokens"/);
    assert.match(sent, /Be brief\./);
  });
});

/** A minimal PDF, base64. */
const PDF_B64 = btoa("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n");

Deno.test("cross-format: a PDF reaches a model of another format as that format's file part", async () => {
  await withGateway(async (g) => {
    // Anthropic client, OpenAI chat model: the document becomes a chat `file` part.
    const r = await anthropic(g).messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 64,
      messages: [{
        role: "user",
        content: [
          {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: PDF_B64 },
          },
          { type: "text", text: "Summarise [[mock:tokens=2]]" },
        ],
      }],
    });
    assert.equal(r.type, "message");
    // Responses client, Claude: the input_file becomes a document block.
    const res = await fetch(`${g.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        input: [{
          role: "user",
          content: [
            {
              type: "input_file",
              filename: "a.pdf",
              file_data: `data:application/pdf;base64,${PDF_B64}`,
            },
            { type: "input_text", text: "Summarise [[mock:tokens=2]]" },
          ],
        }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    // Chat client, Claude: the chat file part becomes a document block too.
    const c = await openai(g).chat.completions.create({
      model: MODEL,
      messages: [{
        role: "user",
        content: [
          {
            type: "file",
            file: { filename: "a.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` },
          },
          { type: "text", text: "Summarise [[mock:tokens=2]]" },
        ],
      }],
    });
    assert.equal(c.object, "chat.completion");
    await g.mock.idle();
    const [chat, messages, fromChat] = g.mock.stats.calls.map((c) =>
      c.body as Record<string, unknown>
    );
    const chatParts = (chat.messages as { content: unknown }[]).at(-1)!.content as unknown[];
    assert.deepEqual(chatParts[0], {
      type: "file",
      file: { filename: "document.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` },
    });
    // The client's file name is the document's title.
    for (const body of [messages, fromChat]) {
      const blocks = (body.messages as { content: unknown[] }[]).at(-1)!.content;
      assert.deepEqual(blocks[0], {
        type: "document",
        source: { type: "base64", media_type: "application/pdf", data: PDF_B64 },
        title: "a.pdf",
      });
    }
  }, { withoutKeys: ["OPENROUTER_API_KEY"] });
});

Deno.test("cross-format: sampling settings go only to a model that lists them (OpenAI's reasoning models refuse them)", async () => {
  await withGateway(async (g) => {
    const ask = (model: string) =>
      anthropic(g).messages.create({
        model,
        max_tokens: 32,
        temperature: 0.5,
        top_p: 0.9,
        top_k: 40,
        stop_sequences: ["END"],
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
        // The SDK's newest types leave the sampling fields out; the API still takes them.
      } as unknown as Anthropic.MessageCreateParamsNonStreaming);
    const sent = () => g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    // gpt-5.1 lists none of them.
    await ask("openai/gpt-5.1");
    for (const k of ["temperature", "top_p", "top_k", "stop"]) {
      assert.equal(sent()[k], undefined, k);
    }
    // Gemini (through OpenRouter) lists temperature, top_p and stop, not top_k.
    await ask("google/gemini-2.5-flash");
    assert.equal(sent().temperature, 0.5);
    assert.equal(sent().top_p, 0.9);
    assert.deepEqual(sent().stop, ["END"]);
    assert.equal(sent().top_k, undefined);
  });
});

Deno.test("cross-format: stop sequences a model does not take are kept by the gateway (streamed or not), the upstream's usage billed", async () => {
  await withGateway(async (g) => {
    const ask = (stream: boolean) =>
      anthropic(g).messages.create({
        model: "openai/gpt-5.1",
        max_tokens: 256,
        stream,
        stop_sequences: ["tok3", "never"],
        messages: [{ role: "user", content: "count [[mock:tokens=6]]" }],
      } as Anthropic.MessageCreateParams);
    const whole = await ask(false).withResponse();
    const m = whole.data as Anthropic.Message;
    assert.deepEqual(m.content, [{ type: "text", text: "tok0 tok1 tok2 " }]);
    assert.equal(m.stop_reason, "stop_sequence");
    assert.equal(m.stop_sequence, "tok3");
    await g.mock.idle();
    assert.equal((g.mock.stats.calls.at(-1)!.body as Record<string, unknown>).stop, undefined);
    await g.settled();
    const gen = (await g.store.getGeneration(
      g.accountId,
      whole.response.headers.get("x-generation-id")!,
    ))!;
    assert.equal(gen.tokens.output, 6, "what the upstream generated");

    let streamed = "";
    let stop: unknown;
    for await (
      const e of await ask(true) as unknown as AsyncIterable<Anthropic.MessageStreamEvent>
    ) {
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") {
        streamed += e.delta.text;
      }
      if (e.type === "message_delta") stop = [e.delta.stop_reason, e.delta.stop_sequence];
    }
    assert.equal(streamed, "tok0 tok1 tok2 ");
    assert.deepEqual(stop, ["stop_sequence", "tok3"]);
  });
});

Deno.test("cross-format: a chat client keeps Claude's thinking on across a tool call (reasoning_details back)", async () => {
  await withGateway(async (g) => {
    const c = openai(g);
    const ask = { model: MODEL, reasoning_effort: "high" as const, tools: [WEATHER] };
    const first = await c.chat.completions.create({
      ...ask,
      messages: [{ role: "user", content: "Weather? [[mock:tool=get_weather,reasoning=3]]" }],
    });
    const m = first.choices[0].message as unknown as Record<string, unknown> & {
      tool_calls: { id: string }[];
    };
    const details = m.reasoning_details as Record<string, unknown>[];
    assert.equal(details.length, 1);
    assert.equal(details[0].type, "reasoning.text");
    assert.equal(details[0].format, "anthropic-claude-v1");
    const signature = details[0].signature as string;
    assert.ok(signature.length > 10);

    await c.chat.completions.create({
      ...ask,
      messages: [
        { role: "user", content: "Weather?" },
        m as unknown as OpenAI.Chat.ChatCompletionMessageParam,
        { role: "tool", tool_call_id: m.tool_calls[0].id, content: "20C" },
        { role: "user", content: "and? [[mock:tokens=2]]" },
      ],
    });
    await g.mock.idle();
    const sent = g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    // Thinking stays on, the signed block replayed at the head of the tool turn.
    assert.equal((sent.thinking as Record<string, unknown>)?.type, "enabled");
    const turn = (sent.messages as { role: string; content: Record<string, unknown>[] }[])[1];
    assert.equal(turn.role, "assistant");
    assert.equal(turn.content[0].type, "thinking");
    assert.equal(turn.content[0].signature, signature);

    // Streaming gives the same entry as a delta.
    const stream = await c.chat.completions.create({
      ...ask,
      stream: true,
      messages: [{ role: "user", content: "Weather? [[mock:tool=get_weather,reasoning=3]]" }],
    });
    const streamed: unknown[] = [];
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta as Record<string, unknown> | undefined;
      if (d?.reasoning_details) streamed.push(...(d.reasoning_details as unknown[]));
    }
    assert.equal(streamed.length, 1);
    assert.equal((streamed[0] as Record<string, unknown>).format, "anthropic-claude-v1");
  });
});

Deno.test("cross-format: a messages stream from a chat upstream opens with the gateway's prompt count", async () => {
  await withGateway(async (g) => {
    const res = await fetch(`${g.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "openai/gpt-4o-mini",
        max_tokens: 64,
        stream: true,
        messages: [{ role: "user", content: "Count the words of this prompt. [[mock:tokens=2]]" }],
      }),
    });
    assert.equal(res.status, 200);
    const events = (await res.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
      JSON.parse(l.slice(6))
    );
    const start = events.find((e) => e.type === "message_start");
    const delta = events.find((e) => e.type === "message_delta");
    // The chat upstream reports usage only at the end; message_start carries the gateway's
    // own count rather than 0, and message_delta the upstream's figures.
    assert.ok(start.message.usage.input_tokens > 0, JSON.stringify(start.message.usage));
    assert.equal(start.message.usage.output_tokens, 0);
    assert.ok(delta.usage.input_tokens > 0);
  }, { providers: ALL_VIA_CHAT });
});

Deno.test("cross-format: an OpenRouter model's reasoning reaches a messages client as thinking (dev mock)", async () => {
  await withGateway(async (g) => {
    const client = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const r = await client.messages.create({
      model: "deepseek/deepseek-r1",
      max_tokens: 4000,
      thinking: { type: "enabled", budget_tokens: 2000 },
      messages: [{ role: "user", content: "Think first [[mock:reasoning=3,tokens=2]]" }],
    });
    const thinking = r.content.find((b) => b.type === "thinking");
    assert.ok(thinking && thinking.type === "thinking" && thinking.thinking.length > 0);
    assert.ok(r.content.some((b) => b.type === "text"));
    const sent = g.mock.stats.calls.at(-1)!;
    assert.equal(sent.protocol, "chat");
    assert.ok((sent.body as { reasoning?: unknown }).reasoning, "reasoning asked of OpenRouter");
  });
});

import assert from "node:assert/strict";
import type { Part, TextRequest } from "../../events/text_request.ts";
import {
  fromInternal,
  IMAGES_FOLLOW,
  passThroughRequest,
  toInternal,
  toOpenAIDialect,
  uncarriedPart,
} from "./request.ts";
import { validateChatRequest } from "./schema.ts";

const internal = (body: unknown, model = "openai/gpt-4o") =>
  toInternal(validateChatRequest(body), model);

const call = (id: string, name: string, args = "{}") => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

const AGENT_TURN = {
  model: "openai/gpt-4o",
  messages: [
    { role: "system", content: "You are terse." },
    { role: "developer", content: [{ type: "text", text: "Use tools." }] },
    {
      role: "user",
      content: [
        { type: "text", text: "Weather and time in Moscow?" },
        { type: "image_url", image_url: { url: "https://example.com/map.png" } },
      ],
    },
    {
      role: "assistant",
      content: "",
      tool_calls: [call("c1", "weather", '{"city":"Moscow"}'), call("c2", "time")],
    },
    { role: "tool", tool_call_id: "c1", content: "-3°C" },
    { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "14:00" }] },
    { role: "user", content: "Thanks. Summarise." },
    { role: "assistant", content: "Summary:" },
  ],
  tools: [{
    type: "function",
    function: { name: "weather", description: "d", parameters: { type: "object" }, strict: true },
  }, { type: "function", function: { name: "time" } }],
  tool_choice: "auto",
  stream: true,
  max_tokens: 300,
  temperature: 0.2,
  stop: "END",
  user: "u1",
};

Deno.test("toInternal: system/developer → system, tool messages merge, prefill stays last", () => {
  const req = internal(AGENT_TURN);
  assert.deepEqual(req.system, [
    { type: "text", text: "You are terse." },
    { type: "text", text: "Use tools." },
  ]);
  assert.deepEqual(req.messages, [
    {
      role: "user",
      parts: [
        { type: "text", text: "Weather and time in Moscow?" },
        { type: "image", url: "https://example.com/map.png" },
      ],
    },
    {
      role: "assistant",
      parts: [
        { type: "tool_call", id: "c1", name: "weather", arguments: '{"city":"Moscow"}' },
        { type: "tool_call", id: "c2", name: "time", arguments: "{}" },
      ],
    },
    {
      role: "user",
      parts: [
        { type: "tool_result", callId: "c1", content: [{ type: "text", text: "-3°C" }] },
        { type: "tool_result", callId: "c2", content: [{ type: "text", text: "14:00" }] },
      ],
    },
    { role: "user", parts: [{ type: "text", text: "Thanks. Summarise." }] },
    { role: "assistant", parts: [{ type: "text", text: "Summary:" }] },
  ]);
  assert.deepEqual(req.tools, [
    { name: "weather", description: "d", parameters: { type: "object" }, strict: true },
    { name: "time", parameters: { type: "object", properties: {} } },
  ]);
  assert.deepEqual(req.toolChoice, { type: "auto" });
  assert.equal(req.stream, true);
  assert.equal(req.maxTokens, 300);
  assert.equal(req.temperature, 0.2);
  assert.deepEqual(req.stop, ["END"]);
  assert.equal(req.user, "u1");
  assert.equal(req.model, "openai/gpt-4o");
});

Deno.test("toInternal: sampling, format, reasoning and cache_control are carried", () => {
  const req = internal({
    messages: [
      {
        role: "system",
        content: [{ type: "text", text: "s", cache_control: { type: "ephemeral", ttl: "1h" } }],
      },
      { role: "assistant", content: "earlier", reasoning_content: "why" },
      { role: "user", content: "q" },
    ],
    max_tokens: 10,
    max_completion_tokens: 20,
    top_p: 0.5,
    top_k: 40,
    frequency_penalty: 1,
    presence_penalty: -1,
    seed: 7,
    parallel_tool_calls: false,
    tools: [{ type: "function", function: { name: "f" } }],
    tool_choice: { type: "function", function: { name: "f" } },
    response_format: {
      type: "json_schema",
      json_schema: { name: "r", schema: { type: "object" }, strict: true },
    },
    reasoning: { max_tokens: 2048 },
    reasoning_effort: "low",
  });
  assert.deepEqual(req.system, [{
    type: "text",
    text: "s",
    cacheControl: { type: "ephemeral", ttl: "1h" },
  }]);
  assert.deepEqual(req.messages[0].parts, [
    { type: "reasoning", text: "why" },
    { type: "text", text: "earlier" },
  ]);
  assert.equal(req.maxTokens, 20);
  assert.equal(req.topP, 0.5);
  assert.equal(req.topK, 40);
  assert.equal(req.frequencyPenalty, 1);
  assert.equal(req.presencePenalty, -1);
  assert.equal(req.seed, 7);
  assert.equal(req.parallelToolCalls, false);
  assert.deepEqual(req.toolChoice, { type: "tool", name: "f" });
  assert.deepEqual(req.responseFormat, {
    type: "json_schema",
    name: "r",
    schema: { type: "object" },
    strict: true,
  });
  assert.deepEqual(req.reasoning, { effort: "low", budgetTokens: 2048 });
  assert.equal(req.stream, false);
});

Deno.test("toInternal: a cache mark on a whole message marks its last part, system and tool results too", () => {
  const mark = { type: "ephemeral" };
  const r = internal({
    model: "m",
    messages: [
      { role: "system", content: "You are brief.", cache_control: mark },
      {
        role: "user",
        content: [{ type: "text", text: "a" }, { type: "text", text: "b" }],
        cache_control: mark,
      },
      { role: "assistant", content: null, tool_calls: [call("c1", "f")] },
      { role: "tool", tool_call_id: "c1", content: "done", cache_control: mark },
      { role: "user", content: "plain" },
    ],
  });
  assert.deepEqual(r.system, [{ type: "text", text: "You are brief.", cacheControl: mark }]);
  const markOf = (p: Part) => "cacheControl" in p ? p.cacheControl : undefined;
  assert.deepEqual(r.messages[0].parts.map(markOf), [undefined, mark]);
  assert.deepEqual(markOf(r.messages[2].parts[0]), mark);
  assert.equal(markOf(r.messages[3].parts[0]), undefined);
});

Deno.test("toInternal: a bare reasoning object enables reasoning; absent means none", () => {
  assert.deepEqual(
    internal({ messages: [{ role: "user", content: "q" }], reasoning: {} }).reasoning,
    {
      enabled: true,
    },
  );
  assert.deepEqual(
    internal({ messages: [{ role: "user", content: "q" }], reasoning: { enabled: false } })
      .reasoning,
    { enabled: false },
  );
  assert.equal(internal({ messages: [{ role: "user", content: "q" }] }).reasoning, undefined);
});

Deno.test("fromInternal: tool results → tool messages, images → image_url, stream usage on", () => {
  const body = fromInternal(internal(AGENT_TURN), "gpt-4o-2024-08-06");
  assert.deepEqual(body, {
    model: "gpt-4o-2024-08-06",
    messages: [
      {
        role: "system",
        content: [{ type: "text", text: "You are terse." }, { type: "text", text: "Use tools." }],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "Weather and time in Moscow?" },
          { type: "image_url", image_url: { url: "https://example.com/map.png" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [call("c1", "weather", '{"city":"Moscow"}'), call("c2", "time")],
      },
      { role: "tool", tool_call_id: "c1", content: "-3°C" },
      { role: "tool", tool_call_id: "c2", content: "14:00" },
      { role: "user", content: "Thanks. Summarise." },
      { role: "assistant", content: "Summary:" },
    ],
    stream: true,
    stream_options: { include_usage: true },
    max_completion_tokens: 300,
    temperature: 0.2,
    stop: ["END"],
    tools: [
      {
        type: "function",
        function: {
          name: "weather",
          description: "d",
          parameters: { type: "object" },
          strict: true,
        },
      },
      {
        type: "function",
        function: { name: "time", parameters: { type: "object", properties: {} } },
      },
    ],
    tool_choice: "auto",
    user: "u1",
  });
});

Deno.test("chat → internal → chat → internal is stable", () => {
  const once = internal(AGENT_TURN);
  const twice = toInternal(
    validateChatRequest(fromInternal(once, "openai/gpt-4o")),
    "openai/gpt-4o",
  );
  // The two system messages come back as one system message of two parts: same parts.
  assert.deepEqual(twice, once);
});

Deno.test("fromInternal: images a tool returned follow in a user message", () => {
  const req: TextRequest = {
    model: "m",
    system: [],
    stream: false,
    messages: [{
      role: "user",
      parts: [
        {
          type: "tool_result",
          callId: "shot",
          content: [{ type: "text", text: "screenshot:" }, {
            type: "image",
            url: "data:image/png;base64,AAAA",
          }],
          isError: false,
        },
        { type: "text", text: "what do you see?" },
      ],
    }],
  };
  assert.deepEqual(fromInternal(req, "up").messages, [
    { role: "tool", tool_call_id: "shot", content: "screenshot:" },
    {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
        { type: "text", text: "what do you see?" },
      ],
    },
  ]);
});

Deno.test("fromInternal: a last user turn of nothing stays, blank, never leaving a prefill", () => {
  // A messages client's `content: []`: left out, the assistant's answer before it would be the
  // last message, which OpenRouter's providers continue as a prefill instead of answering.
  const req: TextRequest = {
    model: "m",
    system: [],
    stream: false,
    messages: [
      { role: "user", parts: [{ type: "text", text: "Hi" }] },
      { role: "assistant", parts: [{ type: "text", text: "Hello" }] },
      { role: "user", parts: [] },
    ],
  };
  assert.deepEqual(fromInternal(req, "up").messages, [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello" },
    { role: "user", content: "" },
  ]);
  // Not the last turn: it goes, as before.
  req.messages.push({ role: "assistant", parts: [{ type: "text", text: "Yes?" }] });
  assert.equal((fromInternal(req, "up").messages as unknown[]).length, 3);
});

Deno.test("fromInternal: a tool result of images alone says they follow, not an empty message", () => {
  const req: TextRequest = {
    model: "m",
    system: [],
    stream: false,
    messages: [{
      role: "user",
      parts: [{
        type: "tool_result",
        callId: "view",
        content: [{ type: "text", text: " " }, {
          type: "image",
          url: "data:image/png;base64,AAAA",
        }],
        isError: false,
      }],
    }],
  };
  assert.deepEqual(fromInternal(req, "up").messages, [
    { role: "tool", tool_call_id: "view", content: IMAGES_FOLLOW },
    {
      role: "user",
      content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }],
    },
  ]);
});

Deno.test("fromInternal: reasoning as reasoning_effort, or OpenRouter's object when asked", () => {
  const req = (reasoning: TextRequest["reasoning"]): TextRequest => ({
    model: "m",
    system: [],
    stream: false,
    messages: [
      { role: "user", parts: [{ type: "text", text: "q" }] },
      {
        role: "assistant",
        parts: [{ type: "reasoning", text: "thought", signature: "sig" }, {
          type: "text",
          text: "a",
        }],
      },
    ],
    reasoning,
    maxTokens: 50,
    topK: 5,
  });
  const openai = fromInternal(req({ effort: "high" }), "o3");
  assert.equal(openai.reasoning_effort, "high");
  assert.equal(openai.reasoning, undefined);
  assert.equal(openai.top_k, undefined);
  assert.deepEqual((openai.messages as unknown[])[1], { role: "assistant", content: "a" });
  assert.equal(fromInternal(req({ budgetTokens: 1024 }), "o3").reasoning_effort, "low");
  assert.equal(fromInternal(req({ budgetTokens: 16000 }), "o3").reasoning_effort, "medium");
  assert.equal(fromInternal(req({ budgetTokens: 32000 }), "o3").reasoning_effort, "high");
  assert.equal(fromInternal(req({ enabled: true }), "o3").reasoning_effort, undefined);

  const or = fromInternal(req({ budgetTokens: 4096, enabled: true }), "x/y", {
    openrouterReasoning: true,
    maxTokensField: "max_tokens",
  });
  assert.deepEqual(or.reasoning, { max_tokens: 4096, enabled: true });
  assert.equal(or.reasoning_effort, undefined);
  assert.equal(or.max_tokens, 50);
  assert.equal(or.top_k, 5);
  assert.deepEqual((or.messages as unknown[])[1], {
    role: "assistant",
    content: "a",
    reasoning: "thought",
  });
});

Deno.test("fromInternal: response formats and a named tool choice", () => {
  const req: TextRequest = {
    model: "m",
    system: [],
    stream: false,
    messages: [{ role: "user", parts: [{ type: "text", text: "q" }] }],
    tools: [{ name: "f", parameters: { type: "object" } }],
    toolChoice: { type: "tool", name: "f" },
    responseFormat: { type: "json_schema", name: "r", schema: { type: "object" }, strict: true },
    parallelToolCalls: true,
    seed: 1,
    topP: 0.9,
    frequencyPenalty: 0.1,
    presencePenalty: 0.2,
  };
  const body = fromInternal(req, "up");
  assert.deepEqual(body.tool_choice, { type: "function", function: { name: "f" } });
  assert.deepEqual(body.response_format, {
    type: "json_schema",
    json_schema: { name: "r", schema: { type: "object" }, strict: true },
  });
  assert.equal(body.parallel_tool_calls, true);
  assert.equal(body.stream, undefined);
  assert.equal(body.stream_options, undefined);
  assert.equal(body.seed, 1);
  assert.equal(body.top_p, 0.9);
  assert.equal(body.frequency_penalty, 0.1);
  assert.equal(body.presence_penalty, 0.2);
  assert.deepEqual(
    fromInternal({ ...req, responseFormat: { type: "json_object" } }, "up").response_format,
    {
      type: "json_object",
    },
  );
});

Deno.test("passThroughRequest: only model and stream_options change", () => {
  const body = {
    model: "openai/gpt-4o",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: false, include_obfuscation: false },
    reasoning: { effort: "low" },
    custom: [1, 2],
  };
  const snapshot = structuredClone(body);
  assert.deepEqual(passThroughRequest(body, "gpt-4o-2024-08-06"), {
    ...body,
    model: "gpt-4o-2024-08-06",
    stream_options: { include_usage: true, include_obfuscation: false },
  });
  assert.deepEqual(body, snapshot, "the client's body is not mutated");
  assert.deepEqual(passThroughRequest({ messages: [], stream: true }, "u").stream_options, {
    include_usage: true,
  });
  const plain = { model: "a", messages: [] };
  assert.deepEqual(passThroughRequest(plain, "u"), { model: "u", messages: [] });
  // Not streamed: OpenAI refuses stream_options.
  const whole = {
    model: "a",
    messages: [],
    stream: false,
    stream_options: { include_usage: true },
  };
  assert.deepEqual(passThroughRequest(whole, "u"), { model: "u", messages: [], stream: false });
});

Deno.test("toOpenAIDialect: OpenRouter's extensions translated or dropped, the client's body untouched", () => {
  const client = {
    model: "gpt-5.1",
    reasoning: { effort: "high", exclude: true },
    include_reasoning: true,
    top_k: 5,
    min_p: 0.1,
    repetition_penalty: 1.1,
    provider: { order: ["openai"] },
    structured_outputs: true,
    max_tokens: 100,
    temperature: 0.5,
    cache_control: { type: "ephemeral" },
    tools: [
      { type: "function", function: { name: "f" }, cache_control: { type: "ephemeral" } },
    ],
    messages: [
      {
        role: "system",
        content: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      },
      { role: "user", content: "hi", cache_control: { type: "ephemeral" } },
      { role: "assistant", content: "hello", reasoning: "thought", reasoning_details: [] },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "c1",
          type: "function",
          function: { name: "f", arguments: "{}" },
          cache_control: { type: "ephemeral" },
        }],
      },
      { role: "tool", tool_call_id: "c1", content: "ok" },
      { role: "user", content: [{ type: "text", text: "again" }] },
    ],
  };
  const before = structuredClone(client);
  const body = { ...client };
  toOpenAIDialect(body);
  assert.deepEqual(client, before, "the client's body is not modified");
  assert.deepEqual(body, {
    model: "gpt-5.1",
    reasoning_effort: "high",
    max_completion_tokens: 100,
    temperature: 0.5,
    tools: [{ type: "function", function: { name: "f" } }],
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "ok" },
      { role: "user", content: [{ type: "text", text: "again" }] },
    ],
  });
  // GPT-5's verbosity: kept for it, left out for the families that take only the default.
  for (const [model, kept] of [["gpt-5.1", true], ["o3", false], ["gpt-4o-mini", false]] as const) {
    const b: Record<string, unknown> = { model, messages: [], verbosity: "low" };
    toOpenAIDialect(b);
    assert.equal("verbosity" in b, kept, model);
  }
  // What the client set in OpenAI's own terms wins.
  const own = { model: "m", messages: [], reasoning: { effort: "high" }, reasoning_effort: "low" };
  toOpenAIDialect(own);
  assert.deepEqual(own, { model: "m", messages: [], reasoning_effort: "low" });
});

Deno.test("toOpenAIDialect: tool call ids over 40 characters (responses' fc_… ids a client kept) are shortened on both sides", () => {
  // A chat client's history from another API sent to OpenAI's chat API as it is: OpenAI
  // refuses an id over 40 characters ("string too long. Expected a string with maximum
  // length 40").
  const long = "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f";
  const client = {
    model: "gpt-5",
    messages: [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: long, type: "function", function: { name: "f", arguments: "{}" } },
          { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: long, content: "ok" },
      { role: "tool", tool_call_id: "call_1", content: "ok" },
    ],
  };
  const before = structuredClone(client);
  const body: Record<string, unknown> = { ...client };
  toOpenAIDialect(body);
  assert.deepEqual(client, before, "the client's body is not modified");
  const [, assistant, first, second] = body.messages as {
    tool_calls?: { id: string }[];
    tool_call_id?: string;
  }[];
  const id = assistant.tool_calls![0].id;
  assert.ok(id.length <= 40, `${id} is at most 40 characters`);
  assert.equal(first.tool_call_id, id, "the result keeps pairing with its call");
  assert.equal(assistant.tool_calls![1].id, "call_1");
  assert.equal(second.tool_call_id, "call_1");
});

Deno.test("toOpenAIDialect: a reasoning budget is the effort nearest it, as OpenRouter maps it", () => {
  const sent = (reasoning: unknown) => {
    const b: Record<string, unknown> = { model: "gpt-5.1", messages: [], reasoning };
    toOpenAIDialect(b);
    return b.reasoning_effort;
  };
  assert.equal(sent({ max_tokens: 2_000 }), "low");
  assert.equal(sent({ max_tokens: 10_000, exclude: true }), "medium");
  assert.equal(sent({ max_tokens: 30_000 }), "high");
  assert.equal(sent({ max_tokens: 30_000, effort: "low" }), "low", "an effort named wins");
  assert.equal(sent({ max_tokens: 30_000, enabled: false }), undefined);
  assert.equal(sent({ enabled: true }), undefined, "the model's default effort");
});

Deno.test("fromInternal: a failed tool call's result says so (chat has no is_error)", () => {
  const result = (text: string | undefined, isError: boolean) => ({
    type: "tool_result" as const,
    callId: "c",
    content: text === undefined ? [] : [{ type: "text" as const, text }],
    isError,
  });
  const contents = [
    result("exit code 1: no such file", true),
    result(undefined, true),
    result("<tool_use_error>File does not exist.</tool_use_error>", true),
    result("Error: denied", true),
    result("fine", false),
  ].map((p) =>
    (fromInternal(
      { model: "m", system: [], stream: false, messages: [{ role: "user", parts: [p] }] },
      "up",
    ).messages as { content: unknown }[])[0].content
  );
  assert.deepEqual(contents, [
    "Error: exit code 1: no such file",
    "Error",
    "<tool_use_error>File does not exist.</tool_use_error>",
    "Error: denied",
    "fine",
  ]);
});

Deno.test("the end-user id reaches OpenAI within its 64 characters", () => {
  // Claude Code's metadata.user_id: a JSON object of ~150 characters; OpenAI refuses > 64.
  const long = JSON.stringify({
    device_id: "0".repeat(64),
    account_uuid: "",
    session_id: "5b4c1f9e-2f0a-4c55-9a53-0d8f2f0e7c11",
  });
  const req = (user: string): TextRequest => ({
    model: "m",
    system: [],
    stream: false,
    user,
    messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
  });
  const sent = fromInternal(req(long), "gpt-4o").user as string;
  assert.match(sent, /^[0-9a-f]{64}$/);
  assert.equal(fromInternal(req(long), "gpt-4o").user, sent, "one stable id per end user");
  assert.notEqual(fromInternal(req(long + "x"), "gpt-4o").user, sent);
  assert.equal(fromInternal(req("user-42"), "gpt-4o").user, "user-42");
  const passed = { model: "gpt-4o", messages: [], user: long };
  toOpenAIDialect(passed);
  assert.equal(passed.user, sent);
});

Deno.test("toInternal: safety_identifier is the end-user id where user is not sent", () => {
  const base = { model: "m", messages: [{ role: "user", content: "hi" }] };
  assert.equal(internal({ ...base, safety_identifier: "sid" }).user, "sid");
  assert.equal(internal({ ...base, safety_identifier: "sid", user: "u1" }).user, "u1");
  assert.equal(internal(base).user, undefined);
});

Deno.test("fromInternal: an image's detail as chat takes it (the responses API's original is high)", () => {
  const withDetail = (detail: string) => {
    const body = fromInternal({
      model: "m",
      system: [],
      messages: [{ role: "user", parts: [{ type: "image", url: "https://x/a.png", detail }] }],
      stream: false,
    }, "up");
    const msgs = body.messages as { content: { image_url?: { detail?: string } }[] }[];
    return msgs[0].content[0].image_url?.detail;
  };
  assert.equal(withDetail("low"), "low");
  assert.equal(withDetail("auto"), "auto");
  assert.equal(withDetail("original"), "high");
});

/** A Claude call whose last turn is one marked tool result of `content`. */
function markedToolResult(content: { type: "text"; text: string }[]): TextRequest {
  return {
    model: "anthropic/claude-opus-4.7",
    system: [],
    stream: false,
    messages: [
      { role: "user", parts: [{ type: "text", text: "go" }] },
      { role: "assistant", parts: [{ type: "tool_call", id: "c1", name: "ls", arguments: "{}" }] },
      {
        role: "user",
        parts: [{
          type: "tool_result",
          callId: "c1",
          cacheControl: { type: "ephemeral" },
          content,
        }],
      },
    ],
  };
}

Deno.test("fromInternal: a tool result's cache breakpoint stays, on its last text (OpenAI's dialect drops it)", () => {
  const cache = { type: "ephemeral" as const };
  const req = markedToolResult([{ type: "text", text: "a.txt" }, { type: "text", text: "b.txt" }]);
  const body = fromInternal(req, "anthropic/claude-opus-4.7");
  const tool = (body.messages as Record<string, unknown>[]).find((m) => m.role === "tool");
  assert.deepEqual(tool?.content, [
    { type: "text", text: "a.txt" },
    { type: "text", text: "b.txt", cache_control: cache },
  ]);
  toOpenAIDialect(body);
  const plain = (body.messages as Record<string, unknown>[]).find((m) => m.role === "tool");
  assert.deepEqual(plain?.content, [{ type: "text", text: "a.txt" }, {
    type: "text",
    text: "b.txt",
  }]);
});

Deno.test("fromInternal: a named prompt cache asks OpenRouter for Claude's automatic breakpoint, unless the client marked its own", () => {
  const req = (over: Partial<TextRequest>): TextRequest => ({
    model: "anthropic/claude-opus-4.7",
    system: [{ type: "text", text: "sys" }],
    messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
    stream: false,
    ...over,
  });
  const openrouter = { openrouterReasoning: true };
  const claude = "anthropic/claude-opus-4.7";
  assert.deepEqual(fromInternal(req({ promptCacheKey: "k" }), claude, openrouter).cache_control, {
    type: "ephemeral",
  });
  assert.equal(fromInternal(req({}), claude, openrouter).cache_control, undefined);
  // Other vendors cache by themselves; OpenAI's own API is sent the key.
  const gemini = fromInternal(req({ promptCacheKey: "k" }), "google/gemini-2.5-pro", openrouter);
  assert.equal(gemini.cache_control, undefined);
  const openai = fromInternal(req({ promptCacheKey: "k" }), "gpt-5.1");
  assert.equal(openai.cache_control, undefined);
  assert.equal(openai.prompt_cache_key, "k");
  const marked = req({
    promptCacheKey: "k",
    system: [{ type: "text", text: "sys", cacheControl: { type: "ephemeral" } }],
  });
  assert.equal(fromInternal(marked, claude, openrouter).cache_control, undefined);
});

Deno.test("fromInternal: a tool result's cache breakpoint never lands on blank text (Anthropic refuses it)", () => {
  const cache = { type: "ephemeral" as const };
  const result = markedToolResult;
  const toolOf = (req: TextRequest) =>
    (fromInternal(req, "anthropic/claude-opus-4.7").messages as Record<string, unknown>[])
      .find((m) => m.role === "tool")?.content;
  assert.equal(toolOf(result([{ type: "text", text: "  " }])), "  ");
  assert.deepEqual(toolOf(result([{ type: "text", text: "a" }, { type: "text", text: "" }])), [
    { type: "text", text: "a", cache_control: cache },
    { type: "text", text: "" },
  ]);
});

Deno.test("toInternal and uncarriedPart: a text file is its text; a file by id, another file type or audio only a chat upstream reads", () => {
  const body = (part: Record<string, unknown>) =>
    validateChatRequest({
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: [{ type: "text", text: "read" }, part] }],
    });
  const text = body({
    type: "file",
    file: { filename: "notes.md", file_data: "data:text/markdown;base64,IyBUaXRsZQ==" },
  });
  assert.equal(uncarriedPart(text), undefined);
  assert.deepEqual(toInternal(text, "anthropic/claude-sonnet-4.5").messages[0].parts[1], {
    type: "text",
    text: "notes.md:\n# Title",
  });
  assert.equal(
    uncarriedPart(body({ type: "file", file: { file_id: "file-1" } })),
    "a file by file_id",
  );
  assert.equal(
    uncarriedPart(
      body({ type: "file", file: { file_data: "data:application/zip;base64,UEsDBA==" } }),
    ),
    "a file of this type",
  );
  assert.equal(
    uncarriedPart(body({ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } })),
    "input_audio",
  );
  const pdf = body({ type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0=" } });
  assert.equal(uncarriedPart(pdf), undefined);
});

Deno.test("fromInternal: no tool choice or parallel_tool_calls without tools (OpenAI refuses them)", () => {
  for (const tools of [undefined, []]) {
    for (const toolChoice of [{ type: "auto" }, { type: "required" }, { type: "none" }] as const) {
      const body = fromInternal({
        model: "m",
        system: [],
        stream: false,
        messages: [{ role: "user", parts: [{ type: "text", text: "q" }] }],
        tools,
        toolChoice,
        parallelToolCalls: false,
      }, "up");
      assert.equal(body.tools, undefined);
      assert.equal(body.tool_choice, undefined);
      assert.equal(body.parallel_tool_calls, undefined);
    }
  }
  const withTool = fromInternal({
    model: "m",
    system: [],
    stream: false,
    messages: [{ role: "user", parts: [{ type: "text", text: "q" }] }],
    tools: [{ name: "f", parameters: { type: "object" } }],
    toolChoice: { type: "required" },
    parallelToolCalls: false,
  }, "up");
  assert.equal(withTool.tool_choice, "required");
  assert.equal(withTool.parallel_tool_calls, false);
});

Deno.test("fromInternal: an assistant turn of reasoning alone is left out (OpenAI refuses content null without tool calls)", () => {
  // Codex's history after a turn interrupted once its reasoning had come: a reasoning item, then
  // the user's next message.
  for (const openrouterReasoning of [false, true]) {
    const body = fromInternal(
      {
        model: "google/gemini-3.5-flash",
        system: [],
        stream: false,
        messages: [
          { role: "user", parts: [{ type: "text", text: "go" }] },
          { role: "assistant", parts: [{ type: "reasoning", text: "thinking" }] },
          { role: "user", parts: [{ type: "text", text: "again" }] },
        ],
      },
      "google/gemini-3.5-flash",
      { openrouterReasoning },
    );
    const msgs = body.messages as { role: string; content: unknown }[];
    assert.deepEqual(msgs.map((m) => m.role), ["user", "user"]);
  }
});

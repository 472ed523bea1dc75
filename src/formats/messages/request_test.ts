import assert from "node:assert/strict";
import type { TextRequest } from "../../events/text_request.ts";
import {
  adaptiveAsBudget,
  fromInternal,
  midSystemAsUser,
  NON_STREAMING_MAX_TOKENS,
  passThroughRequest,
  toInternal,
  upstreamsFor,
} from "./request.ts";
import { type MessagesRequest, validateMessagesRequest } from "./schema.ts";
import { isGatewayError } from "../../http/gateway_error.ts";

const SLUG = "anthropic/claude-sonnet-4.5";
const UPSTREAM = "claude-sonnet-4-5-20250929";

const internal = (body: Record<string, unknown>) =>
  toInternal(validateMessagesRequest({ model: SLUG, max_tokens: 100, ...body }), SLUG);

const req = (over: Partial<TextRequest>): TextRequest => ({
  model: SLUG,
  system: [],
  messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
  stream: false,
  ...over,
});

// ---------------------------------------------------------------------------------------------
// toInternal

Deno.test("toInternal: system string and blocks become system parts with cache control", () => {
  assert.deepEqual(
    internal({ system: "be brief", messages: [{ role: "user", content: "x" }] }).system,
    [
      { type: "text", text: "be brief" },
    ],
  );
  const r = internal({
    system: [{ type: "text", text: "a" }, {
      type: "text",
      text: "b",
      cache_control: { type: "ephemeral", ttl: "1h" },
    }],
    messages: [{ role: "user", content: "x" }],
  });
  assert.deepEqual(r.system, [
    { type: "text", text: "a" },
    { type: "text", text: "b", cacheControl: { type: "ephemeral", ttl: "1h" } },
  ]);
});

Deno.test("toInternal: a mid-conversation system message joins the system parts", () => {
  const r = internal({
    system: "first",
    messages: [{ role: "user", content: "x" }, { role: "system", content: "second" }],
  });
  assert.deepEqual(r.system.map((p) => p.text), ["first", "second"]);
  assert.equal(r.messages.length, 1);
});

Deno.test("toInternal: content blocks become parts", () => {
  const r = internal({
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "look", cache_control: { type: "ephemeral" } },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBO" } },
          { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
          {
            type: "document",
            source: { type: "text", media_type: "text/plain", data: "doc text" },
          },
          { type: "search_result", source: "https://x", title: "t", content: [] },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "hmm", signature: "sig" },
          { type: "redacted_thinking", data: "blob" },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "sunny" },
          {
            type: "tool_result",
            tool_use_id: "toolu_2",
            is_error: true,
            content: [{ type: "text", text: "bad" }, {
              type: "image",
              source: { type: "url", url: "https://x/y.png" },
            }],
            cache_control: { type: "ephemeral" },
          },
        ],
      },
    ],
  });
  assert.deepEqual(r.messages, [
    {
      role: "user",
      parts: [
        { type: "text", text: "look", cacheControl: { type: "ephemeral" } },
        { type: "image", url: "data:image/png;base64,iVBO" },
        { type: "image", url: "https://example.com/a.png" },
        { type: "text", text: "doc text" },
        { type: "text", text: "t\n\nhttps://x" },
      ],
    },
    {
      role: "assistant",
      parts: [
        { type: "reasoning", text: "hmm", signature: "sig" },
        { type: "reasoning", text: "", redacted: "blob" },
        { type: "tool_call", id: "toolu_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      ],
    },
    {
      role: "user",
      parts: [
        { type: "tool_result", callId: "toolu_1", content: [{ type: "text", text: "sunny" }] },
        {
          type: "tool_result",
          callId: "toolu_2",
          isError: true,
          content: [{ type: "text", text: "bad" }, { type: "image", url: "https://x/y.png" }],
          cacheControl: { type: "ephemeral" },
        },
      ],
    },
  ]);
});

Deno.test("toInternal: tools, tool choice and parallel calls", () => {
  const r = internal({
    messages: [{ role: "user", content: "x" }],
    tools: [
      {
        name: "get_weather",
        description: "d",
        input_schema: { type: "object" },
        cache_control: { type: "ephemeral" },
      },
      {
        type: "web_search_20250305",
        name: "web_search",
        user_location: { type: "approximate", city: "Kazan", country: "RU", region: "" },
      },
    ],
    tool_choice: { type: "any", disable_parallel_tool_use: true },
  });
  assert.deepEqual(r.webSearch, {
    maxUses: 10,
    userLocation: { city: "Kazan", country: "RU" },
  });
  assert.deepEqual(r.tools, [
    {
      name: "get_weather",
      description: "d",
      parameters: { type: "object" },
      cacheControl: { type: "ephemeral" },
    },
  ]);
  assert.deepEqual(r.toolChoice, { type: "required" });
  assert.equal(r.parallelToolCalls, false);
  const choice = (tool_choice: unknown) =>
    internal({
      messages: [{ role: "user", content: "x" }],
      tools: [{ name: "get_weather", input_schema: { type: "object" } }],
      tool_choice,
    }).toolChoice;
  assert.deepEqual(choice({ type: "tool", name: "get_weather" }), {
    type: "tool",
    name: "get_weather",
  });
  assert.deepEqual(choice({ type: "auto" }), { type: "auto" });
  assert.deepEqual(choice({ type: "none" }), { type: "none" });
});

Deno.test("toInternal: a strict tool stays strict only where OpenAI's strict mode takes its schema", () => {
  const strictOf = (input_schema: Record<string, unknown>) =>
    internal({
      messages: [{ role: "user", content: "x" }],
      tools: [{ name: "t", strict: true, input_schema }],
    }).tools?.[0].strict;
  const closed = {
    type: "object",
    properties: {
      city: { type: "string" },
      at: {
        type: "object",
        properties: { day: { type: "string" } },
        required: ["day"],
        additionalProperties: false,
      },
    },
    required: ["city", "at"],
    additionalProperties: false,
  };
  assert.equal(strictOf(closed), true);
  // Anthropic's strict mode takes an optional property; OpenAI's answers 400 to it (and to an
  // object left open), so the tool reaches other models unconstrained rather than refused.
  assert.equal(strictOf({ ...closed, required: ["city"] }), undefined);
  assert.equal(strictOf({ ...closed, additionalProperties: undefined }), undefined);
  const nestedOptional = structuredClone(closed);
  nestedOptional.properties.at.required = [];
  assert.equal(strictOf(nestedOptional), undefined);
  const optionalInList = {
    ...closed,
    properties: {
      ...closed.properties,
      tags: {
        type: "array",
        items: {
          type: "object",
          properties: { k: { type: "string" } },
          additionalProperties: false,
        },
      },
    },
    required: ["city", "at", "tags"],
  };
  assert.equal(strictOf(optionalInList), undefined);
});

Deno.test("toInternal: an enum of no type (the Anthropic SDK's zod helper writes them) is typed for OpenAI's strict mode", () => {
  // zodOutputFormat(z.object({conditions: z.enum([...])})) gives `{enum: [...]}` alone, which
  // OpenAI's strict mode answers 400 ("schema must have a 'type' key"): sent strict as it came,
  // every messages.parse() with an enum failed on an OpenAI model.
  const schema = {
    type: "object",
    properties: {
      conditions: { enum: ["sunny", "rain"] },
      level: { enum: [1, 2.5, null] },
      unit: { const: "c" },
      hourly: { type: "array", items: { $ref: "#/$defs/h" } },
    },
    required: ["conditions", "level", "unit", "hourly"],
    additionalProperties: false,
    $defs: {
      h: {
        type: "object",
        properties: { kind: { enum: ["a", "b"] } },
        required: ["kind"],
        additionalProperties: false,
      },
    },
  };
  const sent = structuredClone(schema);
  const r = internal({
    messages: [{ role: "user", content: "x" }],
    output_config: { format: { type: "json_schema", schema: sent } },
    tools: [{ name: "t", strict: true, input_schema: sent }],
  });
  const format = (x: typeof r) => x.responseFormat as { schema?: unknown; strict?: boolean };
  for (const s of [format(r).schema, r.tools?.[0].parameters]) {
    const p = (s as typeof schema).properties as Record<string, Record<string, unknown>>;
    assert.equal(p.conditions.type, "string");
    assert.deepEqual(p.level.type, ["number", "null"]);
    assert.equal(p.unit.type, "string");
    const defs = (s as typeof schema).$defs.h.properties as Record<string, Record<string, unknown>>;
    assert.equal(defs.kind.type, "string");
  }
  assert.equal(format(r).strict, true);
  assert.equal(r.tools?.[0].strict, true);
  assert.deepEqual(sent, schema, "the client's body is left as it came");
  // An enum of objects names no one type: not strict, and left as it came.
  const mixed = { ...schema, properties: { ...schema.properties, o: { enum: [{ a: 1 }] } } };
  const m = internal({
    messages: [{ role: "user", content: "x" }],
    output_config: { format: { type: "json_schema", schema: mixed } },
  });
  assert.equal(format(m).strict, undefined);
  assert.equal(format(m).schema, mixed);
});

Deno.test("toInternal: thinking, effort, sampling, stop sequences, user", () => {
  const r = internal({
    messages: [{ role: "user", content: "x" }],
    thinking: { type: "enabled", budget_tokens: 2048 },
    output_config: { effort: "max" },
    temperature: 0.5,
    top_p: 0.9,
    top_k: 40,
    stop_sequences: ["END"],
    metadata: { user_id: "u-1" },
    stream: true,
  });
  assert.deepEqual(r.reasoning, { enabled: true, budgetTokens: 2048, effort: "xhigh" });
  assert.equal(r.temperature, 0.5);
  assert.equal(r.topP, 0.9);
  assert.equal(r.topK, 40);
  assert.deepEqual(r.stop, ["END"]);
  assert.equal(r.user, "u-1");
  assert.equal(r.stream, true);
  assert.equal(r.maxTokens, 100);
  assert.deepEqual(
    internal({ messages: [{ role: "user", content: "x" }], thinking: { type: "adaptive" } })
      .reasoning,
    { enabled: true },
  );
  assert.deepEqual(
    internal({ messages: [{ role: "user", content: "x" }], thinking: { type: "disabled" } })
      .reasoning,
    { enabled: false },
  );
});

// ---------------------------------------------------------------------------------------------
// fromInternal

Deno.test("fromInternal: a blank last user message after a blank assistant turn is dropped, not merged as an empty block", () => {
  const text = (t: string) => [{ type: "text" as const, text: t }];
  const body = fromInternal(
    req({
      messages: [
        { role: "user", parts: text("Hi") },
        { role: "assistant", parts: text("") },
        { role: "user", parts: text(" ") },
      ],
    }),
    UPSTREAM,
  );
  assert.deepEqual(body.messages, [{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
  // After the assistant's turn it stays: dropped, that turn would become a prefill.
  const kept = fromInternal(
    req({
      messages: [
        { role: "user", parts: text("Hi") },
        { role: "assistant", parts: text("Hello") },
        { role: "user", parts: text(" ") },
      ],
    }),
    UPSTREAM,
  ).messages as { role: string }[];
  assert.equal(kept.at(-1)?.role, "user");
});

Deno.test("fromInternal: a last user message of no content at all stays too, never leaving a prefill", () => {
  // Chat's `content: []`: OpenAI refuses it, and so does Claude; left out, the assistant's
  // answer before it would be continued as a prefill instead.
  const sent = fromInternal(
    req({
      messages: [
        { role: "user", parts: [{ type: "text", text: "Hi" }] },
        { role: "assistant", parts: [{ type: "text", text: "Hello" }] },
        { role: "user", parts: [] },
      ],
    }),
    UPSTREAM,
  ).messages as { role: string; content: unknown }[];
  assert.deepEqual(sent.at(-1), { role: "user", content: [{ type: "text", text: "" }] });
});

Deno.test("fromInternal: a named prompt cache asks Claude for its automatic breakpoint, unless the client marked its own", () => {
  assert.deepEqual(fromInternal(req({ promptCacheKey: "k" }), UPSTREAM).cache_control, {
    type: "ephemeral",
  });
  assert.equal(fromInternal(req({}), UPSTREAM).cache_control, undefined);
  const marked = req({
    promptCacheKey: "k",
    system: [{ type: "text", text: "sys", cacheControl: { type: "ephemeral" } }],
  });
  const body = fromInternal(marked, UPSTREAM);
  assert.equal(body.cache_control, undefined);
  assert.deepEqual((body.system as Record<string, unknown>[])[0].cache_control, {
    type: "ephemeral",
  });
  const markedTurn = req({
    promptCacheKey: "k",
    messages: [{
      role: "user",
      parts: [{ type: "text", text: "hi", cacheControl: { type: "ephemeral", ttl: "1h" } }],
    }],
  });
  assert.equal(fromInternal(markedTurn, UPSTREAM).cache_control, undefined);
});

Deno.test("fromInternal: model, max_tokens (with fallback), stream", () => {
  const body = fromInternal(req({ maxTokens: 50, stream: true }), UPSTREAM);
  assert.equal(body.model, UPSTREAM);
  assert.equal(body.max_tokens, 50);
  assert.equal(body.stream, true);
  // No client max_tokens: the model's output cap (what the hold covers), else a default; a
  // whole answer no more than ten minutes hold.
  assert.equal(fromInternal(req({ stream: true }), UPSTREAM, 64000).max_tokens, 64000);
  assert.equal(fromInternal(req({}), UPSTREAM, 64000).max_tokens, NON_STREAMING_MAX_TOKENS);
  assert.equal(fromInternal(req({}), UPSTREAM, 8192).max_tokens, 8192);
  assert.equal(fromInternal(req({ maxTokens: 30000 }), UPSTREAM, 64000).max_tokens, 30000);
  assert.equal(fromInternal(req({}), UPSTREAM).max_tokens, 4096);
  // Thinking's budget comes out of the cap, never on top of it.
  const high = { reasoning: { effort: "high" as const }, stream: true };
  const thinking = fromInternal(req(high), UPSTREAM, 64000);
  assert.equal(thinking.max_tokens, 64000);
  assert.deepEqual(thinking.thinking, { type: "enabled", budget_tokens: 16384 });
  const small = fromInternal(req(high), UPSTREAM, 8192);
  assert.equal(small.max_tokens, 8192);
  assert.deepEqual(small.thinking, { type: "enabled", budget_tokens: 4096 });
});

/** A tool round another vendor's model opened: its call carries no signed thinking. */
function unsignedToolRound() {
  const call = { type: "tool_call" as const, id: "c1", name: "f", arguments: "{}" };
  const result = { type: "tool_result" as const, callId: "c1", content: [] };
  const history = [
    { role: "user" as const, parts: [{ type: "text" as const, text: "go" }] },
    { role: "assistant" as const, parts: [call] },
    { role: "user" as const, parts: [result] },
  ];
  return { call, result, history };
}

Deno.test("fromInternal: thinking stays off only while the final assistant turn's unsigned tool round is open", () => {
  const { call, result, history } = unsignedToolRound();
  const reasoning = { effort: "medium" as const };
  const thinkingOf = (messages: TextRequest["messages"]) =>
    fromInternal(req({ messages, reasoning, maxTokens: 20000 }), UPSTREAM).thinking;
  assert.equal(thinkingOf(history), undefined, "the open round has no thinking to replay");
  const signed = structuredClone(history);
  signed[1].parts.unshift({ type: "reasoning", text: "t", signature: "sig" } as never);
  assert.deepEqual(thinkingOf(signed), { type: "enabled", budget_tokens: 4096 });
  // A loop whose first step thought keeps thinking on for its later steps.
  const loop = [
    ...signed,
    { role: "assistant" as const, parts: [{ ...call, id: "c2" }] },
    { role: "user" as const, parts: [{ ...result, callId: "c2" }] },
  ];
  assert.deepEqual(thinkingOf(loop), { type: "enabled", budget_tokens: 4096 });
  // The round closed with an answer and a new question: thinking is back on.
  const later = [
    ...history,
    { role: "assistant" as const, parts: [{ type: "text" as const, text: "Done." }] },
    { role: "user" as const, parts: [{ type: "text" as const, text: "next?" }] },
  ];
  assert.deepEqual(thinkingOf(later), { type: "enabled", budget_tokens: 4096 });
});

Deno.test("fromInternal: a prefill (a last assistant message) turns thinking off unless it starts signed", () => {
  const reasoning = { effort: "medium" as const };
  const question = { role: "user" as const, parts: [{ type: "text" as const, text: "q" }] };
  const thinkingOf = (messages: TextRequest["messages"]) =>
    fromInternal(req({ messages, reasoning, maxTokens: 20000 }), UPSTREAM).thinking;
  assert.deepEqual(thinkingOf([question]), { type: "enabled", budget_tokens: 4096 });
  // Anthropic: "a final assistant message must start with a thinking block".
  const prefill = { role: "assistant" as const, parts: [{ type: "text" as const, text: "Sure" }] };
  assert.equal(thinkingOf([question, prefill]), undefined);
  const signed = structuredClone(prefill) as TextRequest["messages"][number];
  signed.parts.unshift({ type: "reasoning", text: "t", signature: "sig" } as never);
  assert.deepEqual(thinkingOf([question, signed]), { type: "enabled", budget_tokens: 4096 });
});

Deno.test("fromInternal: tool call ids Anthropic would refuse are rewritten, the same on both sides", () => {
  const id = "functions.get_weather:0";
  const body = fromInternal(
    req({
      messages: [
        { role: "user", parts: [{ type: "text", text: "weather?" }] },
        {
          role: "assistant",
          parts: [{ type: "tool_call", id, name: "get_weather", arguments: "{}" }],
        },
        { role: "user", parts: [{ type: "tool_result", callId: id, content: [] }] },
        {
          role: "assistant",
          parts: [{ type: "tool_call", id: "toolu_01A-b_c", name: "f", arguments: "{}" }],
        },
        { role: "user", parts: [{ type: "tool_result", callId: "toolu_01A-b_c", content: [] }] },
      ],
    }),
    UPSTREAM,
  );
  const blocks = (body.messages as { content: Record<string, string>[] }[]).flatMap((m) =>
    m.content
  );
  const uses = blocks.filter((b) => b.type === "tool_use").map((b) => b.id);
  const results = blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
  assert.deepEqual(results, uses, "each result still names its call");
  assert.match(uses[0], /^functions_get_weather_0_[0-9a-f]{8}$/);
  assert.equal(uses[1], "toolu_01A-b_c", "an id Anthropic takes is left as it is");
  for (const u of uses) assert.match(u, /^[a-zA-Z0-9_-]+$/);
  const other = fromInternal(
    req({
      messages: [
        { role: "user", parts: [{ type: "text", text: "x" }] },
        {
          role: "assistant",
          parts: [{ type: "tool_call", id: "functions.get_weather.0", name: "g", arguments: "{}" }],
        },
        {
          role: "user",
          parts: [{ type: "tool_result", callId: "functions.get_weather.0", content: [] }],
        },
      ],
    }),
    UPSTREAM,
  );
  const otherId = (other.messages as { content: Record<string, string>[] }[])[1].content[0].id;
  assert.notEqual(otherId, uses[0], "ids that differ only in rewritten characters stay apart");
});

Deno.test("fromInternal: system parts become system blocks, empty ones dropped", () => {
  const body = fromInternal(
    req({
      system: [{ type: "text", text: "" }, {
        type: "text",
        text: "s",
        cacheControl: { type: "ephemeral" },
      }],
    }),
    UPSTREAM,
  );
  assert.deepEqual(body.system, [{
    type: "text",
    text: "s",
    cache_control: { type: "ephemeral" },
  }]);
  assert.equal("system" in fromInternal(req({}), UPSTREAM), false);
});

Deno.test("fromInternal: consecutive same-role messages merge, tool results first", () => {
  const body = fromInternal(
    req({
      messages: [
        { role: "user", parts: [{ type: "text", text: "q" }] },
        {
          role: "assistant",
          parts: [
            { type: "text", text: "" },
            { type: "tool_call", id: "c1", name: "f", arguments: '{"a":1}' },
          ],
        },
        {
          role: "assistant",
          parts: [{ type: "tool_call", id: "c2", name: "g", arguments: "not json" }],
        },
        { role: "user", parts: [{ type: "text", text: "also this" }] },
        {
          role: "user",
          parts: [{ type: "tool_result", callId: "c1", content: [{ type: "text", text: "r1" }] }],
        },
        {
          role: "user",
          parts: [{ type: "tool_result", callId: "c2", content: [], isError: true }],
        },
        { role: "assistant", parts: [{ type: "text", text: "" }] },
      ],
    }),
    UPSTREAM,
  );
  assert.deepEqual(body.messages, [
    { role: "user", content: [{ type: "text", text: "q" }] },
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "c1", name: "f", input: { a: 1 } },
        { type: "tool_use", id: "c2", name: "g", input: {} },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "c1", content: [{ type: "text", text: "r1" }] },
        { type: "tool_result", tool_use_id: "c2", is_error: true },
        { type: "text", text: "also this" },
      ],
    },
  ]);
});

Deno.test("fromInternal: a trailing assistant prefill loses its trailing whitespace", () => {
  const prefill = (text: string) =>
    fromInternal(
      req({
        messages: [
          { role: "user", parts: [{ type: "text", text: "q" }] },
          { role: "assistant", parts: [{ type: "text", text }] },
        ],
      }),
      UPSTREAM,
    ).messages as { role: string; content: { text: string }[] }[];
  assert.equal(prefill("The answer is ")[1].content[0].text, "The answer is");
  assert.equal(prefill(" \n").length, 1);
});

Deno.test("fromInternal: images from data URLs and http URLs", () => {
  const body = fromInternal(
    req({
      messages: [{
        role: "user",
        parts: [
          { type: "image", url: "data:image/jpeg;base64,/9j/4AAQ" },
          {
            type: "image",
            url: "https://example.com/cat.png",
            cacheControl: { type: "ephemeral" },
          },
          { type: "image", url: "data:application/pdf;base64,JVBERi0" },
          { type: "image", url: "ftp://example.com/x.png" },
        ],
      }],
    }),
    UPSTREAM,
  );
  assert.deepEqual((body.messages as { content: unknown[] }[])[0].content, [
    { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } },
    {
      type: "image",
      source: { type: "url", url: "https://example.com/cat.png" },
      cache_control: { type: "ephemeral" },
    },
    {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: "JVBERi0" },
    },
  ]);
});

Deno.test("fromInternal: a data URL whose percent-encoding is malformed is the client's 400", () => {
  for (const url of ["data:application/pdf,%ZZ", "data:image/svg+xml,%E0%A4%A"]) {
    assert.throws(
      () =>
        fromInternal(
          req({ messages: [{ role: "user", parts: [{ type: "image", url }] }] }),
          UPSTREAM,
        ),
      (e: unknown) => isGatewayError(e) && e.status === 400 && /percent-encoding/.test(e.message),
      url,
    );
  }
  // Well-formed, it is sent as base64.
  const body = fromInternal(
    req({
      messages: [{
        role: "user",
        parts: [{ type: "image", url: "data:image/svg+xml,%3Csvg%2F%3E" }],
      }],
    }),
    UPSTREAM,
  );
  const source = (body.messages as { content: { source: { data: string } }[] }[])[0].content[0]
    .source;
  assert.equal(atob(source.data), "<svg/>");
});

Deno.test("fromInternal: an image's media type is what its bytes are, jpg spelled jpeg, base64 without spaces", () => {
  const sent = (url: string) => {
    const body = fromInternal(
      req({ messages: [{ role: "user", parts: [{ type: "image", url }] }] }),
      UPSTREAM,
    );
    return (body.messages as { content: { source: Record<string, string> }[] }[])[0].content[0]
      .source;
  };
  // OpenAI takes image/jpg; Anthropic only image/jpeg, and refuses a type the bytes contradict.
  assert.equal(sent("data:image/jpg;base64,/9j/4AAQ").media_type, "image/jpeg");
  assert.equal(sent("data:image/jpeg;base64,iVBORw0KGgoAAAA").media_type, "image/png");
  assert.equal(sent("data:image/png;base64,R0lGODlhAQAB").media_type, "image/gif");
  assert.equal(sent("data:image/png;base64,UklGRhAAAABXRUJQVlA4").media_type, "image/webp");
  // Bytes of no known kind: the declared type, spelled as Anthropic takes it.
  assert.equal(sent("data:image/JPG;base64,AAAA").media_type, "image/jpeg");
  assert.equal(sent("data:image/webp;base64,AAAA").media_type, "image/webp");
  assert.deepEqual(sent("data:image/png;base64, iVBORw0K\nGgoAAAA "), {
    type: "base64",
    media_type: "image/png",
    data: "iVBORw0KGgoAAAA",
  });
});

Deno.test("fromInternal: reasoning keeps only Anthropic's own (signed or redacted) blocks", () => {
  const body = fromInternal(
    req({
      messages: [
        { role: "user", parts: [{ type: "text", text: "q" }] },
        {
          role: "assistant",
          parts: [
            { type: "reasoning", text: "signed", signature: "sig" },
            { type: "reasoning", text: "", redacted: "blob" },
            { type: "reasoning", text: "from another vendor" },
            { type: "text", text: "a" },
          ],
        },
      ],
    }),
    UPSTREAM,
  );
  assert.deepEqual((body.messages as { content: unknown[] }[])[1].content, [
    { type: "thinking", thinking: "signed", signature: "sig" },
    { type: "redacted_thinking", data: "blob" },
    { type: "text", text: "a" },
  ]);
});

Deno.test("fromInternal: a history of tool calls with no tools declared declares them, none to be called", () => {
  const body = fromInternal(
    req({
      messages: [
        { role: "user", parts: [{ type: "text", text: "go" }] },
        {
          role: "assistant",
          parts: [
            { type: "tool_call", id: "a", name: "read", arguments: "{}" },
            { type: "tool_call", id: "b", name: "read", arguments: "{}" },
            { type: "tool_call", id: "c", name: "grep", arguments: "{}" },
          ],
        },
        {
          role: "user",
          parts: ["a", "b", "c"].map((id) => ({
            type: "tool_result" as const,
            callId: id,
            content: [],
          })),
        },
        { role: "user", parts: [{ type: "text", text: "Summarise the above." }] },
      ],
    }),
    UPSTREAM,
  );
  assert.deepEqual(body.tools, [
    { name: "read", input_schema: { type: "object" } },
    { name: "grep", input_schema: { type: "object" } },
  ]);
  assert.deepEqual(body.tool_choice, { type: "none" });
  // Without calls in the history, nothing is declared.
  assert.equal(fromInternal(req({}), UPSTREAM).tools, undefined);
});

Deno.test("fromInternal: at most four cache marks, the last ones, and no one-hour mark after a five-minute one", () => {
  const five = { type: "ephemeral" as const };
  const hour = { type: "ephemeral" as const, ttl: "1h" as const };
  const text = (t: string, cacheControl?: typeof five) => ({
    type: "text" as const,
    text: t,
    ...(cacheControl ? { cacheControl } : {}),
  });
  const body = fromInternal(
    req({
      system: [text("sys", hour)],
      messages: [
        { role: "user", parts: [text("1", five)] },
        { role: "assistant", parts: [text("2", five)] },
        { role: "user", parts: [text("3", hour)] },
        { role: "assistant", parts: [text("4", five)] },
        { role: "user", parts: [text("5", hour)] },
      ],
    }),
    UPSTREAM,
  );
  const marks = (body.messages as { content: { cache_control?: unknown }[] }[])
    .map((m) => m.content[0].cache_control);
  assert.equal((body.system as { cache_control?: unknown }[])[0].cache_control, undefined);
  // Six marks: the first two go; the one-hour marks after a five-minute one become five-minute.
  assert.deepEqual(marks, [undefined, five, five, five, five]);

  // Marks inside a tool result count too.
  const nested = fromInternal(
    req({
      system: [text("sys", five)],
      messages: [
        { role: "user", parts: [text("1", five)] },
        { role: "assistant", parts: [{ type: "tool_call", id: "c", name: "f", arguments: "{}" }] },
        {
          role: "user",
          parts: [
            { type: "tool_result", callId: "c", content: [text("out", five)] },
            text("2", five),
          ],
        },
        { role: "assistant", parts: [text("3", five)] },
      ],
    }),
    UPSTREAM,
  );
  const all = JSON.stringify(nested).match(/cache_control/g) ?? [];
  assert.equal(all.length, 4);
  assert.equal((nested.system as { cache_control?: unknown }[])[0].cache_control, undefined);
});

Deno.test("fromInternal: tools and tool choice", () => {
  const tools = [
    { name: "f", description: "d", parameters: { type: "object", properties: {} }, strict: true },
    { name: "g", parameters: {}, cacheControl: { type: "ephemeral" } },
  ];
  const body = fromInternal(
    req({ tools, toolChoice: { type: "required" }, parallelToolCalls: false }),
    UPSTREAM,
  );
  assert.deepEqual(body.tools, [
    { name: "f", description: "d", input_schema: { type: "object", properties: {} } },
    { name: "g", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } },
  ]);
  assert.deepEqual(body.tool_choice, { type: "any", disable_parallel_tool_use: true });
  const choice = (toolChoice: TextRequest["toolChoice"], parallelToolCalls?: boolean) =>
    fromInternal(req({ tools, toolChoice, parallelToolCalls }), UPSTREAM).tool_choice;
  assert.deepEqual(choice({ type: "tool", name: "f" }), { type: "tool", name: "f" });
  assert.deepEqual(choice({ type: "none" }), { type: "none" });
  assert.deepEqual(choice({ type: "auto" }), { type: "auto" });
  assert.deepEqual(choice(undefined, false), { type: "auto", disable_parallel_tool_use: true });
  assert.equal(choice(undefined), undefined);
  assert.equal(
    "tool_choice" in fromInternal(req({ toolChoice: { type: "required" } }), UPSTREAM),
    false,
  );
});

Deno.test("fromInternal: a hosted web search becomes Anthropic's server tool beside the functions", () => {
  const webSearch = {
    maxUses: 10,
    allowedDomains: ["example.com"],
    userLocation: { country: "GB", timezone: "Europe/London" },
  };
  const server = {
    type: "web_search_20250305",
    name: "web_search",
    max_uses: 10,
    allowed_domains: ["example.com"],
    user_location: { type: "approximate", country: "GB", timezone: "Europe/London" },
  };
  assert.deepEqual(fromInternal(req({ webSearch }), UPSTREAM).tools, [server]);
  const tools = [{ name: "f", parameters: { type: "object" } }];
  const body = fromInternal(req({ tools, webSearch, toolChoice: { type: "auto" } }), UPSTREAM);
  assert.deepEqual(body.tools, [{ name: "f", input_schema: { type: "object" } }, server]);
  assert.deepEqual(body.tool_choice, { type: "auto" });
  // A client function already called web_search keeps the name: no duplicate tool.
  const own = [{ name: "web_search", parameters: { type: "object" } }];
  assert.deepEqual(fromInternal(req({ tools: own, webSearch }), UPSTREAM).tools, [
    { name: "web_search", input_schema: { type: "object" } },
  ]);
});

Deno.test("fromInternal: effort becomes a thinking budget below max_tokens", () => {
  const thinking = (over: Partial<TextRequest>) => {
    const b = fromInternal(req(over), UPSTREAM);
    return [b.thinking, b.max_tokens];
  };
  assert.deepEqual(thinking({ maxTokens: 20000, reasoning: { effort: "low" } }), [
    { type: "enabled", budget_tokens: 1024 },
    20000,
  ]);
  assert.deepEqual(thinking({ maxTokens: 20000, reasoning: { effort: "medium" } }), [
    { type: "enabled", budget_tokens: 4096 },
    20000,
  ]);
  // At most half of max_tokens, so that the answer keeps room (not below Anthropic's 1024).
  assert.deepEqual(thinking({ maxTokens: 8000, reasoning: { effort: "high" } }), [
    { type: "enabled", budget_tokens: 4000 },
    8000,
  ]);
  assert.deepEqual(thinking({ maxTokens: 1500, reasoning: { effort: "medium" } }), [
    { type: "enabled", budget_tokens: 1024 },
    1500,
  ]);
  assert.deepEqual(thinking({ maxTokens: 1024, reasoning: { effort: "low" } }), [undefined, 1024]);
  // A budget the client named is kept, below max_tokens.
  assert.deepEqual(thinking({ maxTokens: 5000, reasoning: { budgetTokens: 4500 } }), [
    { type: "enabled", budget_tokens: 4500 },
    5000,
  ]);
  // No client max_tokens: the budget is added to the default so the answer keeps its room.
  assert.deepEqual(thinking({ reasoning: { effort: "high" } }), [
    { type: "enabled", budget_tokens: 16384 },
    4096 + 16384,
  ]);
  assert.deepEqual(thinking({ maxTokens: 20000, reasoning: { budgetTokens: 3000 } }), [
    { type: "enabled", budget_tokens: 3000 },
    20000,
  ]);
  assert.deepEqual(thinking({ maxTokens: 20000, reasoning: { enabled: true } }), [
    { type: "enabled", budget_tokens: 4096 },
    20000,
  ]);
  assert.deepEqual(thinking({ maxTokens: 500, reasoning: { effort: "high" } }), [undefined, 500]);
  assert.deepEqual(thinking({ maxTokens: 20000, reasoning: { effort: "none" } }), [
    undefined,
    20000,
  ]);
  assert.deepEqual(thinking({ maxTokens: 20000, reasoning: { enabled: false, effort: "high" } }), [
    undefined,
    20000,
  ]);
});

Deno.test("fromInternal: thinking is left off with a forced tool choice", () => {
  const tools = [{ name: "f", parameters: { type: "object" } }];
  const body = fromInternal(
    req({
      maxTokens: 20000,
      tools,
      toolChoice: { type: "required" },
      reasoning: { effort: "high" },
    }),
    UPSTREAM,
  );
  assert.equal(body.thinking, undefined);
});

Deno.test("fromInternal: temperature is clamped to [0, 1] and wins over top_p", () => {
  const b = fromInternal(req({ temperature: 1.7, topP: 0.5, topK: 5 }), UPSTREAM);
  assert.equal(b.temperature, 1);
  assert.equal(b.top_p, undefined);
  assert.equal(b.top_k, 5);
  assert.equal(fromInternal(req({ topP: 0.5 }), UPSTREAM).top_p, 0.5);
});

Deno.test("fromInternal: sampling parameters are dropped when thinking is on", () => {
  const b = fromInternal(
    req({ maxTokens: 20000, temperature: 0.2, topK: 5, reasoning: { effort: "low" } }),
    UPSTREAM,
  );
  assert.equal(b.temperature, undefined);
  assert.equal(b.top_k, undefined);
});

Deno.test("fromInternal: json response formats become a system instruction", () => {
  const obj = fromInternal(
    req({ system: [{ type: "text", text: "s" }], responseFormat: { type: "json_object" } }),
    UPSTREAM,
  );
  const sys = obj.system as { text: string }[];
  assert.equal(sys.length, 2);
  assert.match(sys[1].text, /single valid JSON object/);
  const schema = fromInternal(
    req({
      responseFormat: {
        type: "json_schema",
        name: "person",
        schema: { type: "object", required: ["name"] },
      },
    }),
    UPSTREAM,
  );
  assert.match(
    (schema.system as { text: string }[])[0].text,
    /\(person\):\n\{"type":"object","required":\["name"\]\}/,
  );
  assert.equal(
    "system" in fromInternal(req({ responseFormat: { type: "text" } }), UPSTREAM),
    false,
  );
});

Deno.test("fromInternal: stop, user kept; penalties and seed dropped", () => {
  const b = fromInternal(
    req({ stop: ["END", " "], user: "u", frequencyPenalty: 1, presencePenalty: 1, seed: 3 }),
    UPSTREAM,
  );
  assert.deepEqual(b.stop_sequences, ["END"]);
  assert.deepEqual(b.metadata, { user_id: "u" });
  for (const k of ["frequency_penalty", "presence_penalty", "seed"]) assert.equal(k in b, false);
});

Deno.test("fromInternal output is a valid messages body, and maps back to the same request", () => {
  const original = internal({
    system: "s",
    messages: [
      {
        role: "user",
        content: [{ type: "text", text: "q", cache_control: { type: "ephemeral" } }],
      },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "t1", name: "f", input: { a: [1, 2] } }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "done" }] },
    ],
    tools: [{ name: "f", input_schema: { type: "object" } }],
    tool_choice: { type: "tool", name: "f" },
    temperature: 0.3,
    stop_sequences: ["X"],
    metadata: { user_id: "u" },
  });
  const body = fromInternal(original, UPSTREAM);
  const back = toInternal(validateMessagesRequest(body), SLUG);
  assert.deepEqual(back, original);
});

Deno.test("passThroughRequest replaces the model and nothing else", () => {
  const body = { max_tokens: 5, model: SLUG, messages: [], context_management: { edits: [] } };
  const out = passThroughRequest(body, UPSTREAM);
  assert.deepEqual(Object.keys(out), Object.keys(body));
  assert.deepEqual(out, { ...body, model: UPSTREAM });
  assert.equal(body.model, SLUG);
});

Deno.test("passThroughRequest: empty text blocks (another vendor's empty answer, kept) are left out", () => {
  const body = {
    max_tokens: 50,
    model: SLUG,
    messages: [
      { role: "user", content: "q" },
      {
        role: "assistant",
        content: [{ type: "text", text: "" }, { type: "tool_use", id: "c", name: "f", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "c", content: "ok" }] },
      { role: "assistant", content: [{ type: "text", text: " " }] },
      { role: "user", content: [{ type: "text", text: "more" }] },
    ],
  };
  const out = passThroughRequest(body, UPSTREAM);
  assert.deepEqual(out.messages, [
    { role: "user", content: "q" },
    { role: "assistant", content: [{ type: "tool_use", id: "c", name: "f", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "c", content: "ok" }] },
    { role: "user", content: [{ type: "text", text: "more" }] },
  ]);
  // The string form too; but a blank last user turn stays (without it the answer before would
  // be a prefill to continue, thinking off): Anthropic's own 400 says what is wrong.
  const blankLast = {
    max_tokens: 5000,
    model: SLUG,
    thinking: { type: "enabled", budget_tokens: 2048 },
    messages: [
      { role: "user", content: "Write a haiku" },
      { role: "assistant", content: "" },
      { role: "user", content: "again" },
      { role: "assistant", content: [{ type: "text", text: "Leaves fall" }] },
      { role: "user", content: [{ type: "text", text: "" }] },
    ],
  };
  const kept = passThroughRequest(blankLast, UPSTREAM);
  assert.deepEqual(kept.messages, [
    { role: "user", content: "Write a haiku" },
    { role: "user", content: "again" },
    { role: "assistant", content: [{ type: "text", text: "Leaves fall" }] },
    { role: "user", content: [{ type: "text", text: "" }] },
  ]);
  assert.deepEqual(kept.thinking, blankLast.thinking);
});

Deno.test("passThroughRequest: another vendor's reasoning is left out of the history, and thinking off for its tool turn", () => {
  const openai = "gAAAAABoFernetTokenOfOpenAI";
  const toolTurn = (content: unknown[]) => ({
    max_tokens: 5000,
    model: SLUG,
    thinking: { type: "enabled", budget_tokens: 2000 },
    messages: [
      { role: "user", content: "first" },
      { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "" }] },
      { role: "user", content: "second" },
      { role: "assistant", content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "c1", content: "ok" }] },
    ],
  });
  const use = { type: "tool_use", id: "c1", name: "sh", input: {} };
  // Claude Code after a turn on an OpenAI model: an unsigned thinking block, OpenAI's
  // encrypted reasoning as redacted data.
  const out = passThroughRequest(
    toolTurn([
      { type: "thinking", thinking: "o", signature: "" },
      { type: "redacted_thinking", data: openai },
      use,
    ]),
    UPSTREAM,
  );
  const msgs = out.messages as { role: string; content: unknown }[];
  // The turn that was only foreign reasoning is gone; the tool turn keeps its call.
  assert.deepEqual(msgs.map((m) => m.role), ["user", "user", "assistant", "user"]);
  assert.deepEqual(msgs[2].content, [use]);
  assert.equal(out.thinking, undefined);

  // Anthropic's own signed thinking stays, and so does thinking.
  const signed = { type: "thinking", thinking: "c", signature: "EqQBCkgIARABGAIiQL" };
  const own = passThroughRequest(toolTurn([signed, use]), UPSTREAM);
  assert.deepEqual((own.messages as { content: unknown }[])[2].content, [signed, use]);
  assert.deepEqual(own.thinking, { type: "enabled", budget_tokens: 2000 });
  // Adaptive thinking takes a tool turn without thinking: it stays on.
  const adaptive = passThroughRequest(
    {
      ...toolTurn([{ type: "redacted_thinking", data: openai }, use]),
      thinking: { type: "adaptive" },
    },
    UPSTREAM,
  );
  assert.deepEqual(adaptive.thinking, { type: "adaptive" });
  // A history with nothing foreign is passed as it came.
  const clean = { ...toolTurn([signed, use]), messages: toolTurn([signed, use]).messages.slice(2) };
  assert.equal(passThroughRequest(clean, UPSTREAM).messages, clean.messages);
});

Deno.test("fromInternal: OpenAI's encrypted reasoning (a Codex history) is not sent to Anthropic, thinking off for its tool turn", () => {
  const out = fromInternal(
    req({
      reasoning: { effort: "medium" },
      messages: [
        { role: "user", parts: [{ type: "text", text: "go" }] },
        {
          role: "assistant",
          parts: [
            { type: "reasoning", text: "plan", redacted: "gAAAAABoOpenAIFernet" },
            { type: "tool_call", id: "call_1", name: "sh", arguments: "{}" },
          ],
        },
        {
          role: "user",
          parts: [{
            type: "tool_result",
            callId: "call_1",
            content: [{ type: "text", text: "ok" }],
          }],
        },
      ],
    }),
    UPSTREAM,
  );
  assert.ok(!JSON.stringify(out.messages).includes("gAAAAA"));
  assert.equal(out.thinking, undefined);
});

Deno.test("toInternal: a JSON schema output format, as output_config.format or the beta's output_format", () => {
  const schema = { type: "object", properties: { a: { type: "string" } } };
  for (
    const field of [{ output_config: { format: { type: "json_schema", schema } } }, {
      output_format: { type: "json_schema", schema },
    }]
  ) {
    const r = internal({ ...field, messages: [{ role: "user", content: "x" }] });
    assert.deepEqual(r.responseFormat, { type: "json_schema", name: "output", schema });
  }
  assert.equal(internal({ messages: [{ role: "user", content: "x" }] }).responseFormat, undefined);
});

Deno.test("toInternal: an output format OpenAI's strict mode takes is strict, as Anthropic holds every answer to it", () => {
  const formatOf = (schema: Record<string, unknown>) =>
    internal({
      output_config: { format: { type: "json_schema", schema } },
      messages: [{ role: "user", content: "x" }],
    }).responseFormat;
  const closed = {
    type: "object",
    properties: { a: { type: "string" } },
    required: ["a"],
    additionalProperties: false,
  };
  assert.deepEqual(formatOf(closed), {
    type: "json_schema",
    name: "output",
    schema: closed,
    strict: true,
  });
  // An optional property: OpenAI's strict mode refuses the schema, so it goes as a request.
  const optional = { ...closed, required: [] };
  assert.deepEqual(formatOf(optional), { type: "json_schema", name: "output", schema: optional });
});

Deno.test("toInternal: a document's title and context go before it as text", () => {
  const r = internal({
    messages: [{
      role: "user",
      content: [
        {
          type: "document",
          title: "Q3 report",
          context: "from finance",
          source: { type: "text", media_type: "text/plain", data: "revenue up" },
        },
        { type: "document", source: { type: "text", media_type: "text/plain", data: "bare" } },
      ],
    }],
  });
  assert.deepEqual(r.messages[0].parts.map((p) => p.type === "text" && p.text), [
    "Q3 report\n\nfrom finance",
    "revenue up",
    "bare",
  ]);
});

// ---------------------------------------------------------------------------------------------
// Recorded Claude Code requests

const CLAUDE_CODE = new URL("../../../../shared/fixtures/clients/claude-code/", import.meta.url);

function recordedRequests(): { name: string; body: Record<string, unknown> }[] {
  try {
    return [...Deno.readDirSync(CLAUDE_CODE)]
      .filter((e) => /^messages-.*\.request\.json$/.test(e.name))
      .map((e) => ({
        name: e.name,
        body: JSON.parse(Deno.readTextFileSync(new URL(e.name, CLAUDE_CODE))).body,
      }));
  } catch {
    return [];
  }
}

const recorded = recordedRequests();

Deno.test({
  name: "recorded Claude Code requests validate, map to internal and back to a valid body",
  ignore: recorded.length === 0,
  fn() {
    for (const { name, body } of recorded) {
      const valid: MessagesRequest = validateMessagesRequest(body);
      const r = toInternal(valid, SLUG);
      assert.equal(r.model, SLUG, name);
      assert.ok(r.system.length >= 3, name);
      assert.ok(r.system.some((p) => p.cacheControl?.type === "ephemeral"), name);
      assert.equal(r.tools?.length, (body.tools as unknown[]).length, name);
      assert.equal(r.user, (body.metadata as { user_id: string }).user_id, name);
      assert.deepEqual(r.reasoning, { enabled: true, effort: "high" }, name);
      assert.equal(r.stream, true, name);
      const out = fromInternal(r, "claude-opus-4-8");
      validateMessagesRequest(out);
      const roles = (out.messages as { role: string }[]).map((m) => m.role);
      for (let i = 1; i < roles.length; i++) assert.notEqual(roles[i], roles[i - 1], name);
      assert.deepEqual(passThroughRequest(body, "claude-opus-4-8"), {
        ...body,
        model: "claude-opus-4-8",
      });
    }
  },
});

Deno.test({
  name: "a recorded Claude Code tool result round-trips through the internal form",
  ignore: !recorded.some((r) => r.name.includes("tool-result")),
  fn() {
    const { body } = recorded.find((r) => r.name.includes("tool-result"))!;
    const r = toInternal(validateMessagesRequest(body), SLUG);
    const call = r.messages.flatMap((m) => m.parts).find((p) => p.type === "tool_call");
    const result = r.messages.flatMap((m) => m.parts).find((p) => p.type === "tool_result");
    assert.ok(call?.type === "tool_call" && result?.type === "tool_result");
    assert.equal(result.callId, call.id);
    assert.deepEqual(result.content, [{ type: "text", text: "tool-ran-ok" }]);
    assert.deepEqual(result.cacheControl, { type: "ephemeral" });
    const out = fromInternal(r, "claude-opus-4-8");
    const last = (out.messages as { role: string; content: Record<string, unknown>[] }[]).at(-1)!;
    assert.equal(last.role, "user");
    assert.deepEqual(last.content[0], {
      type: "tool_result",
      tool_use_id: call.id,
      content: [{ type: "text", text: "tool-ran-ok" }],
      cache_control: { type: "ephemeral" },
    });
  },
});

// ---------------------------------------------------------------------------------------------
// Blocks another model can read, and the ones only Anthropic can

Deno.test("toInternal: a search result and a document of content blocks become their text", () => {
  const r = internal({
    messages: [{
      role: "user",
      content: [
        {
          type: "search_result",
          source: "https://example.com/a",
          title: "Page A",
          content: [{ type: "text", text: "first" }, { type: "text", text: "second" }],
        },
        {
          type: "document",
          source: { type: "content", content: [{ type: "text", text: "doc text" }] },
        },
        { type: "document", source: { type: "content", content: "plain doc" } },
      ],
    }],
  });
  assert.deepEqual(r.messages[0].parts, [
    { type: "text", text: "Page A\n\nhttps://example.com/a\n\nfirst\nsecond" },
    { type: "text", text: "doc text" },
    { type: "text", text: "plain doc" },
  ]);
});

const need = (content: unknown[]) =>
  upstreamsFor(validateMessagesRequest({
    model: SLUG,
    max_tokens: 10,
    messages: [{ role: "user", content: "q" }, { role: "assistant", content: "a" }, {
      role: "user",
      content,
    }],
  }));

Deno.test("upstreamsFor: blocks the internal form carries need no particular upstream", () => {
  assert.equal(need([{ type: "text", text: "x" }]), undefined);
  assert.equal(
    need([{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }]),
    undefined,
  );
  assert.equal(
    need([{
      type: "search_result",
      source: "s",
      title: "t",
      content: [{ type: "text", text: "x" }],
    }]),
    undefined,
  );
  assert.equal(
    need([{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "ok" }] }]),
    undefined,
  );
  // The vendor's server tool history is dropped for other models, not refused.
  assert.equal(
    need([{ type: "web_search_tool_result", tool_use_id: "s1", content: [] }]),
    undefined,
  );
});

Deno.test("upstreamsFor: other blocks reach only Anthropic, and the reason names the block", () => {
  for (
    const [block, where, what] of [
      [{ type: "bogus" }, "messages[2].content[0]", /content block type "bogus"/],
      [
        { type: "container_upload", file_id: "file_1" },
        "messages[2].content[0]",
        /container_upload/,
      ],
      [
        { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
        "messages[2].content[0]",
        /document from source type "url"/,
      ],
      [
        { type: "image", source: { type: "file", file_id: "file_1" } },
        "messages[2].content[0]",
        /image from source type "file"/,
      ],
      [
        {
          type: "tool_result",
          tool_use_id: "t1",
          content: [{ type: "image", source: { type: "file", file_id: "f" } }],
        },
        "messages[2].content[0].content[0]",
        /image/,
      ],
    ] as const
  ) {
    const n = need([block]);
    assert.deepEqual(n?.protocols, ["anthropic-messages"], JSON.stringify(block));
    assert.ok(n.reason.startsWith(`${where}: `), n.reason);
    assert.match(n.reason, what);
  }
});

Deno.test("upstreamsFor: server tools other than web search, MCP servers, a container and a compaction request reach only Anthropic", () => {
  const needOf = (extra: Record<string, unknown>) =>
    upstreamsFor(validateMessagesRequest({
      model: SLUG,
      max_tokens: 10,
      messages: [{ role: "user", content: "q" }],
      ...extra,
    }));
  const custom = { name: "f", input_schema: { type: "object" } };
  for (
    const [extra, what] of [
      [
        { tools: [custom, { type: "bash_20250124", name: "bash" }] },
        /^tools\[1\]: tool type "bash_20250124"/,
      ],
      [
        { tools: [{ type: "text_editor_20250728", name: "str_replace_based_edit_tool" }] },
        /text_editor/,
      ],
      [{ tools: [{ type: "code_execution_20250825", name: "code_execution" }] }, /code_execution/],
      [{ tools: [{ type: "web_fetch_20250910", name: "web_fetch" }] }, /web_fetch/],
      [
        { mcp_servers: [{ type: "url", url: "https://mcp.example.com", name: "m" }] },
        /^mcp_servers/,
      ],
      [{ container: "container_1" }, /^container/],
      [{ compaction: { type: "summarize" } }, /^compaction/],
    ] as const
  ) {
    const n = needOf(extra);
    assert.deepEqual(n?.protocols, ["anthropic-messages"], JSON.stringify(extra));
    assert.match(n.reason, what);
    assert.match(n.reason, /can be sent only to an Anthropic model$/);
  }
  // Custom tools, the web search (carried as the hosted search) and Claude Code's
  // context_management go to any model.
  assert.equal(
    needOf({
      tools: [custom, { type: "custom", ...custom, name: "g" }, {
        type: "web_search_20250305",
        name: "web_search",
      }],
      context_management: { edits: [{ type: "clear_thinking_20251015" }] },
      mcp_servers: [],
    }),
    undefined,
  );
});

Deno.test("passThroughRequest: enabled thinking goes when the last tool turn or a prefill has none (a session begun on another vendor)", () => {
  const thinking = { type: "enabled", budget_tokens: 31999 };
  const toolTurn = {
    role: "assistant",
    content: [{ type: "tool_use", id: "call_abc", name: "Bash", input: {} }],
  };
  const results = {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "call_abc", content: "ok" }],
  };
  const ask = { role: "user", content: "go" };
  const pass = (messages: unknown[], t: unknown = thinking) =>
    passThroughRequest({ model: SLUG, max_tokens: 32000, thinking: t, messages }, UPSTREAM);
  assert.equal(pass([ask, toolTurn, results]).thinking, undefined);
  assert.equal(
    pass([ask, { role: "assistant", content: "Sure" }]).thinking,
    undefined,
    "a prefill",
  );
  const signed = {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "t", signature: "EqQBCkYIBxgCKkAx" },
      ...toolTurn.content,
    ],
  };
  assert.deepEqual(pass([ask, signed, results]).thinking, thinking, "Claude's own turn keeps it");
  assert.deepEqual(pass([ask, toolTurn, results], { type: "adaptive" }).thinking, {
    type: "adaptive",
  });
  // Context editing that clears thinking needs thinking: it goes with it.
  const edits = (extra: unknown[]) =>
    passThroughRequest({
      model: SLUG,
      max_tokens: 32000,
      thinking,
      context_management: {
        edits: [{ type: "clear_thinking_20251015", keep: "all" }, ...extra],
      },
      messages: [ask, toolTurn, results],
    }, UPSTREAM);
  assert.equal(edits([]).context_management, undefined);
  assert.deepEqual(edits([{ type: "clear_tool_uses_20250919" }]).context_management, {
    edits: [{ type: "clear_tool_uses_20250919" }],
  });
  // Claude's own tool loop is one turn: only its first step thinks.
  const loop = [ask, signed, results, toolTurn, results];
  assert.deepEqual(pass(loop).thinking, thinking, "later steps of a loop start with tool_use");
  assert.equal(pass([ask, toolTurn, results, signed, results]).thinking, undefined);
  const answered = [ask, toolTurn, results, {
    role: "assistant",
    content: [{ type: "text", text: "done" }],
  }, ask];
  assert.deepEqual(pass(answered).thinking, thinking, "the round closed: thinking is back");
});

Deno.test("passThroughRequest: tool ids Anthropic would refuse are rewritten on both sides, others left alone", () => {
  const body = {
    model: SLUG,
    max_tokens: 100,
    messages: [
      { role: "user", content: "weather?" },
      {
        role: "assistant",
        content: [{
          type: "tool_use",
          id: "functions.get_weather:0",
          name: "get_weather",
          input: {},
        }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "functions.get_weather:0", content: "ok" }],
      },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_01", name: "f", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "ok" }] },
    ],
  };
  const out = passThroughRequest(body, UPSTREAM).messages as {
    content: Record<string, string>[];
  }[];
  assert.match(out[1].content[0].id, /^functions_get_weather_0_[0-9a-f]{8}$/);
  assert.equal(out[2].content[0].tool_use_id, out[1].content[0].id);
  assert.equal(out[3], body.messages[3], "a message with valid ids is passed as it is");
  assert.equal(
    (body.messages[1].content as { id: string }[])[0].id,
    "functions.get_weather:0",
    "the client's body is not changed",
  );
});

Deno.test("passThroughRequest: a tool id repeated across turns (Kimi's, as a session on it kept it) is made unique with its results", () => {
  // Kimi restarts its ids with every answer, and a Claude client was sent each one rewritten
  // the same way: switched to a Claude model, the history holds one id twice, which Anthropic
  // refuses ("tool_use ids must be unique").
  const id = "functions_get_weather_0_1a2b3c4d";
  const turn = (result: string) => [
    { role: "assistant", content: [{ type: "tool_use", id, name: "get_weather", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: result }] },
  ];
  const body = {
    model: SLUG,
    max_tokens: 100,
    messages: [{ role: "user", content: "weather?" }, ...turn("rain"), ...turn("sun")],
  };
  const out = passThroughRequest(body, UPSTREAM).messages as {
    content: Record<string, string>[];
  }[];
  const uses = [out[1].content[0].id, out[3].content[0].id];
  assert.equal(new Set(uses).size, 2, `tool_use ids ${uses} are unique`);
  assert.equal(out[2].content[0].tool_use_id, uses[0]);
  assert.equal(out[4].content[0].tool_use_id, uses[1]);
  assert.equal(uses[0], id, "the first use keeps its id");
  assert.match(uses[1], /^[a-zA-Z0-9_-]+$/);
  assert.equal(
    (body.messages[3].content as { id: string }[])[0].id,
    id,
    "the client's body is not changed",
  );
});

Deno.test("passThroughRequest leaves out another vendor's searches, which Anthropic would refuse", () => {
  const own = [
    { type: "server_tool_use", id: "srvtoolu_a", name: "web_search", input: { query: "q" } },
    {
      type: "web_search_tool_result",
      tool_use_id: "srvtoolu_a",
      content: [{
        type: "web_search_result",
        url: "https://a",
        title: "A",
        encrypted_content: "x",
      }],
    },
  ];
  const foreign = [
    { type: "server_tool_use", id: "srvtoolu_ws_1", name: "web_search", input: { query: "q" } },
    {
      type: "web_search_tool_result",
      tool_use_id: "srvtoolu_ws_1",
      content: [{ type: "web_search_result", url: "https://b", title: "B", encrypted_content: "" }],
    },
  ];
  const text = { type: "text", text: "found it" };
  const body = {
    model: SLUG,
    max_tokens: 10,
    messages: [
      { role: "user", content: "search" },
      { role: "assistant", content: [...own, ...foreign, text] },
      { role: "user", content: "thanks" },
    ],
  };
  const out = passThroughRequest(body, UPSTREAM) as typeof body;
  assert.deepEqual(out.messages[1].content, [...own, text]);
  assert.equal(out.messages[0], body.messages[0], "other turns are passed as they are");
  assert.equal(body.messages[1].content.length, 5, "the client's body is not changed");
});

Deno.test("fromInternal: instructions alone (a system-only chat call) become the one user turn Anthropic needs", () => {
  const system = [{ type: "text" as const, text: "Reply with the word pong." }];
  const alone = fromInternal(req({ system, messages: [] }), UPSTREAM);
  assert.equal(alone.system, undefined);
  assert.deepEqual(alone.messages, [
    { role: "user", content: [{ type: "text", text: "Reply with the word pong." }] },
  ]);
  // Beside a conversation, the system prompt stays where it was.
  const body = fromInternal(req({ system }), UPSTREAM);
  assert.deepEqual(body.system, [{ type: "text", text: "Reply with the word pong." }]);
  assert.deepEqual(body.messages, [{ role: "user", content: [{ type: "text", text: "hi" }] }]);
});

Deno.test("fromInternal: adaptive thinking stays on, at the effort asked, over an unsigned tool round and a forced tool", () => {
  const { history } = unsignedToolRound();
  const reasoning = { effort: "medium" as const };
  const tools = [{ name: "f", parameters: { type: "object" } }] as TextRequest["tools"];
  const adaptive = (over: Partial<TextRequest>) =>
    fromInternal(req({ reasoning, maxTokens: 20000, ...over }), "claude-opus-4-7", 128000, {
      xhigh: true,
    });
  for (
    const body of [
      adaptive({ messages: history }),
      adaptive({ tools, toolChoice: { type: "tool", name: "f" } }),
    ]
  ) {
    assert.deepEqual(body.thinking, { type: "adaptive", display: "summarized" });
    assert.deepEqual(body.output_config, { effort: "medium" });
  }
  // A prefill the client wrote, unsigned, still turns it off.
  const prefill = adaptive({
    messages: [history[0], { role: "assistant", parts: [{ type: "text", text: "Sure" }] }],
  });
  assert.equal(prefill.thinking, undefined);
});

Deno.test("fromInternal: a client's mark inside a tool result counts as its own: no automatic breakpoint beside it", () => {
  const body = fromInternal(
    req({
      promptCacheKey: "k",
      messages: [
        { role: "user", parts: [{ type: "text", text: "go" }] },
        { role: "assistant", parts: [{ type: "tool_call", id: "c1", name: "f", arguments: "{}" }] },
        {
          role: "user",
          parts: [{
            type: "tool_result",
            callId: "c1",
            content: [{ type: "text", text: "out", cacheControl: { type: "ephemeral" } }],
          }],
        },
      ],
    }),
    UPSTREAM,
  );
  assert.equal(body.cache_control, undefined);
});

Deno.test("adaptiveAsBudget: the effort's budget, at most half of max_tokens; a schema stays", () => {
  const body = (effort: string | undefined, max: number): Record<string, unknown> => ({
    max_tokens: max,
    thinking: { type: "adaptive" },
    output_config: { effort, format: { type: "json_schema", schema: {} } },
    messages: [{ role: "user", content: "q" }],
  });
  const low = body("low", 32000);
  adaptiveAsBudget(low);
  assert.deepEqual(low.thinking, { type: "enabled", budget_tokens: 1024 });
  assert.deepEqual(low.output_config, { format: { type: "json_schema", schema: {} } });
  const max = body("max", 100000);
  adaptiveAsBudget(max);
  assert.deepEqual(max.thinking, { type: "enabled", budget_tokens: 32768 });
  // No budget of 1 024 or more fits half of this limit: thinking is off.
  const tight = body(undefined, 2000);
  adaptiveAsBudget(tight);
  assert.equal(tight.thinking, undefined);
  // A budget the client set is its own.
  const own = { max_tokens: 9000, thinking: { type: "enabled", budget_tokens: 8000 } };
  adaptiveAsBudget(own);
  assert.deepEqual(own.thinking, { type: "enabled", budget_tokens: 8000 });
});

Deno.test("midSystemAsUser: system text joins the user turn before it, or stands as one", () => {
  const out: Record<string, unknown> = {
    messages: [
      { role: "system", content: "first" },
      { role: "user", content: "q" },
      {
        role: "system",
        content: [{ type: "text", text: "env", cache_control: { type: "ephemeral" } }],
      },
      { role: "assistant", content: "a" },
      { role: "system", content: "" },
    ],
  };
  midSystemAsUser(out);
  assert.deepEqual(out.messages, [
    { role: "user", content: [{ type: "text", text: "first" }] },
    {
      role: "user",
      content: [
        { type: "text", text: "q" },
        { type: "text", text: "env", cache_control: { type: "ephemeral" } },
      ],
    },
    { role: "assistant", content: "a" },
  ]);
  // After a tool call: at the end of the turn with its result, which must come first.
  const tool: Record<string, unknown> = {
    messages: [
      { role: "user", content: "q" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
      { role: "system", content: "reminder" },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] },
      { role: "assistant", content: "a" },
      { role: "system", content: "last" },
    ],
  };
  midSystemAsUser(tool);
  assert.deepEqual(tool.messages, [
    { role: "user", content: "q" },
    { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: "ok" },
        { type: "text", text: "reminder" },
      ],
    },
    { role: "assistant", content: "a" },
    { role: "user", content: [{ type: "text", text: "last" }] },
  ]);
});

Deno.test("fromInternal: an assistant turn never ends in thinking (Anthropic: the final block cannot be thinking)", () => {
  // Codex's history after a turn interrupted once its thinking had come: the signed reasoning
  // item, then the user's next message; and one cut off after the text that followed.
  const signed = { type: "reasoning" as const, text: "hmm", signature: "EqQBsig" };
  const body = fromInternal(
    req({
      reasoning: { enabled: true, budgetTokens: 2048 },
      messages: [
        { role: "user", parts: [{ type: "text", text: "go" }] },
        { role: "assistant", parts: [signed] },
        { role: "user", parts: [{ type: "text", text: "again" }] },
        { role: "assistant", parts: [signed, { type: "text", text: "ok" }, signed] },
        { role: "user", parts: [{ type: "text", text: "more" }] },
      ],
    }),
    UPSTREAM,
  );
  const msgs = body.messages as { role: string; content: { type: string }[] }[];
  assert.deepEqual(
    msgs.map((m) => [m.role, m.content.map((b) => b.type)]),
    [
      ["user", ["text", "text"]],
      ["assistant", ["thinking", "text"]],
      ["user", ["text"]],
    ],
  );
});

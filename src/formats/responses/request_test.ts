import assert from "node:assert/strict";
import type { TextRequest } from "../../events/text_request.ts";
import {
  builtInTools,
  fromInternal,
  passThroughRequest,
  toInternal,
  toOpenAIResponsesDialect,
  upstreamsFor,
  withoutUnreadableReasoning,
} from "./request.ts";
import { validateResponsesRequest } from "./schema.ts";
import { sealReasoning } from "./sealed_reasoning.ts";
import { fromInternal as messagesFromInternal } from "../messages/request.ts";

const CODEX = new URL("../../../../shared/fixtures/clients/codex/", import.meta.url);
const hasCodex = (() => {
  try {
    return Deno.statSync(CODEX).isDirectory;
  } catch {
    return false;
  }
})();
const codex = (name: string) =>
  JSON.parse(Deno.readTextFileSync(new URL(`${name}.request.json`, CODEX))).body;

Deno.test("toInternal: a string input is one user message", () => {
  const req = toInternal(
    validateResponsesRequest({ model: "x", input: "Hi", stream: true }),
    "a/b",
  );
  assert.deepEqual(req, {
    model: "a/b",
    system: [],
    messages: [{ role: "user", parts: [{ type: "text", text: "Hi" }] }],
    stream: true,
  });
});

Deno.test("toInternal: items map to messages, a turn's items merge into one assistant message", () => {
  const body = validateResponsesRequest({
    model: "x",
    instructions: "Be brief.",
    input: [
      { role: "developer", content: "Use tools." },
      {
        role: "user",
        content: [
          { type: "input_text", text: "Weather?" },
          { type: "input_image", image_url: "https://example.com/sky.png", detail: "auto" },
          { type: "input_image", file_id: "file-1" },
        ],
      },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "a" }, { type: "summary_text", text: "b" }],
        encrypted_content: "gAAAAAxyz",
      },
      { role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
      { type: "function_call", call_id: "c1", name: "w", arguments: '{"c":"Riga"}' },
      { type: "function_call", call_id: "c2", name: "w", arguments: '{"c":"Oslo"}' },
      { type: "function_call_output", call_id: "c1", output: "sunny" },
      {
        type: "function_call_output",
        call_id: "c2",
        output: [{ type: "input_text", text: "rain" }],
      },
      { type: "web_search_call", id: "ws_1", status: "completed" },
      { role: "user", content: "Thanks" },
    ],
    tools: [
      { type: "function", name: "w", parameters: { type: "object" }, strict: false },
      { type: "function", name: "bare" },
      { type: "web_search" },
    ],
    tool_choice: "required",
    parallel_tool_calls: true,
    max_output_tokens: 500,
    temperature: 0.2,
    top_p: 0.9,
    reasoning: { effort: "low", summary: "auto" },
    text: {
      format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true },
    },
    user: "u-1",
    stream: false,
  });
  const expected: TextRequest = {
    model: "a/b",
    system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Use tools." }],
    messages: [
      {
        role: "user",
        parts: [
          { type: "text", text: "Weather?" },
          { type: "image", url: "https://example.com/sky.png", detail: "auto" },
        ],
      },
      {
        role: "assistant",
        parts: [
          { type: "reasoning", text: "a\n\nb", redacted: "gAAAAAxyz" },
          { type: "text", text: "Checking." },
          { type: "tool_call", id: "c1", name: "w", arguments: '{"c":"Riga"}' },
          { type: "tool_call", id: "c2", name: "w", arguments: '{"c":"Oslo"}' },
        ],
      },
      {
        role: "user",
        parts: [
          { type: "tool_result", callId: "c1", content: [{ type: "text", text: "sunny" }] },
          { type: "tool_result", callId: "c2", content: [{ type: "text", text: "rain" }] },
          { type: "text", text: "Thanks" },
        ],
      },
    ],
    tools: [
      { name: "w", parameters: { type: "object" }, strict: false },
      { name: "bare", parameters: { type: "object", properties: {} } },
    ],
    toolChoice: { type: "required" },
    parallelToolCalls: true,
    maxTokens: 500,
    temperature: 0.2,
    topP: 0.9,
    responseFormat: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true },
    reasoning: { effort: "low", summary: "auto" },
    user: "u-1",
    stream: false,
    webSearch: { maxUses: 10 },
  };
  assert.deepEqual(toInternal(body, "a/b"), expected);
});

Deno.test("toInternal: a named tool choice", () => {
  const req = toInternal(
    validateResponsesRequest({
      model: "x",
      input: "a",
      tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
      tool_choice: { type: "function", name: "f" },
    }),
    "a/b",
  );
  assert.deepEqual(req.toolChoice, { type: "tool", name: "f" });
});

Deno.test(
  "toInternal: the Codex CLI requests give sensible messages",
  { ignore: !hasCodex },
  () => {
    const turn1 = toInternal(validateResponsesRequest(codex("responses-turn1")), "openai/gpt-5");
    // Codex sends its system prompt as developer messages.
    assert.ok(turn1.system.length >= 2);
    assert.match(turn1.system[0].text, /^You are Codex/);
    assert.equal(turn1.messages.length, 1);
    assert.equal(turn1.messages[0].role, "user");
    assert.deepEqual(turn1.messages[0].parts.at(-1), {
      type: "text",
      text: "Run the marker command",
    });
    assert.equal(turn1.stream, true);
    assert.deepEqual(turn1.reasoning, { effort: "medium" });
    assert.ok(turn1.tools!.some((t) => t.name === "exec_command"));
    // The custom tool is a function taking its free text; the client-run tool search is a
    // function; web_search has no function form.
    const patch = turn1.tools!.find((t) => t.name === "apply_patch");
    assert.deepEqual(patch?.parameters.required, ["input"]);
    assert.match(patch!.description!, /free-form/);
    assert.match(patch!.description!, /lark grammar:\nstart: begin_patch/);
    const search = turn1.tools!.find((t) => t.name === "tool_search");
    assert.deepEqual(search?.parameters.required, ["query"]);
    assert.ok(!turn1.tools!.some((t) => t.name === "web_search"));
    for (const t of turn1.tools!) assert.match(t.name, /^[a-zA-Z0-9_-]{1,64}$/);

    const turn2 = toInternal(
      validateResponsesRequest(codex("responses-turn2-function-call-output")),
      "openai/gpt-5",
    );
    const roles = turn2.messages.map((m) => [m.role, m.parts.map((p) => p.type)]);
    assert.deepEqual(roles, [
      ["user", ["text", "text"]],
      ["assistant", ["tool_call"]],
      ["user", ["tool_result"]],
    ]);
    const call = turn2.messages[1].parts[0];
    const result = turn2.messages[2].parts[0];
    assert.ok(call.type === "tool_call" && result.type === "tool_result");
    assert.equal(call.name, "exec_command");
    assert.equal(result.callId, call.id);
  },
);

const SEARCHERS = ["openai-responses", "anthropic-messages"];
const responsesOnly = (what: string) => ({
  protocols: ["openai-responses"],
  reason: `${what} requires an upstream that speaks the responses format`,
});

Deno.test(
  "builtInTools and upstreamsFor: Codex's live web search needs an upstream that searches; its cached one none",
  {
    ignore: !hasCodex,
  },
  () => {
    const recorded = codex("responses-turn1");
    // apply_patch (custom) and the client-executed tool_search have function forms.
    assert.deepEqual(builtInTools(recorded), ["web_search"]);
    // Codex's default search asks for no live web access: any upstream may go without it.
    const cached = recorded.tools.find((t: { type: string }) => t.type === "web_search");
    assert.equal(cached.external_web_access, false);
    assert.equal(upstreamsFor(recorded), undefined);
    const body = {
      ...recorded,
      tools: recorded.tools.map((t: { type: string }) =>
        t.type === "web_search" ? { ...t, external_web_access: true } : t
      ),
    };
    const need = upstreamsFor(body)!;
    assert.deepEqual(need.protocols, SEARCHERS);
    assert.match(need.reason, /^tool web_search requires an upstream that runs web searches/);
    const withoutWebSearch = {
      ...body,
      tools: body.tools.filter((t: { type: string }) => t.type !== "web_search"),
    };
    assert.equal(upstreamsFor(withoutWebSearch), undefined);
    const turn2 = codex("responses-turn2-function-call-output");
    assert.equal(
      upstreamsFor({
        ...turn2,
        tools: turn2.tools.filter((t: { type: string }) => t.type !== "web_search"),
      }),
      undefined,
    );
  },
);

Deno.test("upstreamsFor: an item of an unknown type holding non-objects needs a responses upstream, no crash", () => {
  // The schema takes any item of a type it does not know, content and all: `[null]` and
  // strings are no parts to look into, and the item's type alone routes it.
  for (const content of [[null], ["text", 1]]) {
    const body = validateResponsesRequest({
      model: "x",
      input: [{ type: "newer_item", role: "user", content }],
    });
    assert.deepEqual(upstreamsFor(body), responsesOnly("input item type newer_item"));
  }
  const image = validateResponsesRequest({
    model: "x",
    input: [{ type: "newer_item", content: [null, { type: "input_image", file_id: "f" }] }],
  });
  assert.deepEqual(upstreamsFor(image), responsesOnly("input_image by file id"));
  const output = validateResponsesRequest({
    model: "x",
    input: [{ type: "newer_item_output", output: [null] }],
  });
  assert.deepEqual(upstreamsFor(output), responsesOnly("input item type newer_item_output"));
});

Deno.test("builtInTools: hosted tools, a hosted tool_search and non-function namespace members", () => {
  assert.deepEqual(
    builtInTools({
      model: "x",
      tools: [
        { type: "function", name: "f" },
        { type: "custom", name: "c" },
        { type: "tool_search", execution: "client", parameters: { type: "object" } },
        { type: "namespace", name: "ns", tools: [{ type: "function", name: "g" }] },
        { type: "file_search", vector_store_ids: ["vs_1"] },
        { type: "tool_search" },
        { type: "namespace", name: "odd", tools: [{ type: "code_interpreter" }] },
      ],
    }),
    ["file_search", "tool_search", "code_interpreter"],
  );
});

Deno.test("upstreamsFor: web search beside another hosted tool needs the responses format", () => {
  const tools = [{ type: "web_search_preview" }, { type: "file_search", vector_store_ids: ["v"] }];
  assert.deepEqual(upstreamsFor({ model: "x", tools }), responsesOnly("tool file_search"));
  assert.deepEqual(upstreamsFor({ model: "x", tools: [tools[0]] })!.protocols, SEARCHERS);
  // A past search in the history is served by either searcher (its results are not in it).
  const input = [
    { role: "user", content: "news?" },
    { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search" } },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Here." }] },
  ];
  assert.deepEqual(upstreamsFor({ model: "x", input })!.protocols, SEARCHERS);
  assert.deepEqual(
    upstreamsFor({ model: "x", input: [...input, { type: "compaction", encrypted_content: "z" }] }),
    responsesOnly("input item type compaction"),
  );
});

Deno.test("toInternal: the hosted web search becomes the request's webSearch, capped", () => {
  const req = toInternal(
    validateResponsesRequest({
      model: "anthropic/claude-sonnet-4.5",
      input: [
        { role: "user", content: "news?" },
        { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search" } },
      ],
      tools: [{
        type: "web_search",
        filters: { allowed_domains: ["example.com"] },
        user_location: { type: "approximate", country: "GB", city: "London", region: "" },
        external_web_access: false,
      }],
    }),
    "anthropic/claude-sonnet-4.5",
  );
  assert.deepEqual(req.webSearch, {
    maxUses: 10,
    allowedDomains: ["example.com"],
    userLocation: { city: "London", country: "GB" },
    optional: true,
  });
  assert.equal(req.tools, undefined);
  assert.deepEqual(req.messages, [{ role: "user", parts: [{ type: "text", text: "news?" }] }]);
  const plain = toInternal(validateResponsesRequest({ model: "m", input: "hi" }), "m");
  assert.equal(plain.webSearch, undefined);
});

Deno.test("upstreamsFor: plain requests need nothing; items of built-in tools do", () => {
  assert.equal(upstreamsFor({ model: "x", input: "hi", tools: [] }), undefined);
  assert.equal(
    upstreamsFor({
      model: "x",
      input: [
        { role: "user", content: "hi" },
        { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
      ],
      tools: [{ type: "function", name: "f" }],
    }),
    undefined,
  );
  assert.deepEqual(
    upstreamsFor({ model: "x", input: [{ type: "compaction", encrypted_content: "z" }] }),
    responsesOnly("input item type compaction"),
  );
  // A search the client ran maps to a tool call and its result; a hosted one does not.
  assert.equal(
    upstreamsFor({
      model: "x",
      input: [
        { type: "tool_search_call", call_id: "t1", execution: "client", arguments: {} },
        { type: "tool_search_output", call_id: "t1", execution: "client", tools: [] },
      ],
    }),
    undefined,
  );
  assert.deepEqual(
    upstreamsFor({
      model: "x",
      input: [{ type: "tool_search_call", execution: "server", arguments: { query: "q" } }],
    }),
    responsesOnly("input item type tool_search_call"),
  );
});

Deno.test("passThroughRequest: model replaced, store false, the client's body untouched", () => {
  const body = {
    model: "openai/gpt-5",
    store: true,
    input: [
      { role: "user", content: "hi" },
      { type: "reasoning", id: "rs_stored", summary: [] },
      { type: "reasoning", id: "rs_ok", summary: [], encrypted_content: "gAAAAAe" },
    ],
    client_metadata: { x: 1 },
  };
  const before = structuredClone(body);
  const out = passThroughRequest(body, "gpt-5-2025-08-07");
  assert.deepEqual(body, before);
  assert.deepEqual(out, {
    model: "gpt-5-2025-08-07",
    store: false,
    input: [
      { role: "user", content: "hi" },
      { type: "reasoning", id: "rs_ok", summary: [], encrypted_content: "gAAAAAe" },
    ],
    client_metadata: { x: 1 },
  });
  const plain = { model: "a/b", input: "x" };
  assert.equal(passThroughRequest(plain, "m").input, "x");
});

Deno.test("reasoning the gateway sealed: its signature comes back; never sent on to a responses upstream", () => {
  const sealed = sealReasoning({ text: "Summed up.", signature: "EqSIG" });
  const body = {
    model: "anthropic/claude-sonnet-4.5",
    input: [
      { role: "user", content: "hi" },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Summed up." }],
        encrypted_content: sealed,
      },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "ok" },
      {
        type: "reasoning",
        id: "rs_2",
        summary: [{ type: "summary_text", text: "Hm." }],
        encrypted_content: "tg.rs.broken",
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
    ],
  };
  const req = toInternal(validateResponsesRequest(body), "anthropic/claude-sonnet-4.5");
  assert.deepEqual(req.messages[1], {
    role: "assistant",
    parts: [
      { type: "reasoning", text: "Summed up.", signature: "EqSIG" },
      { type: "tool_call", id: "c1", name: "f", arguments: "{}" },
    ],
  });
  // A seal that does not open is the summary text alone: nothing to replay as signed.
  assert.deepEqual(req.messages[3].parts[0], { type: "reasoning", text: "Hm." });

  const out = passThroughRequest(body, "gpt-5");
  assert.deepEqual(
    (out.input as Record<string, unknown>[]).map((i) => i.type ?? i.role),
    ["user", "function_call", "function_call_output", "message"],
  );
});

Deno.test("passThroughRequest: the Codex requests keep every field", { ignore: !hasCodex }, () => {
  const body = codex("responses-turn2-function-call-output");
  const out = passThroughRequest(body, "gpt-5.5");
  assert.deepEqual({ ...out, model: body.model, store: body.store }, body);
});

const INTERNAL: TextRequest = {
  model: "openai/gpt-5",
  system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Really." }],
  messages: [
    {
      role: "user",
      parts: [
        { type: "text", text: "Look" },
        { type: "image", url: "data:image/png;base64,iVBORw0KGgo=" },
      ],
    },
    {
      role: "assistant",
      parts: [
        { type: "reasoning", text: "hm", signature: "anthropic-sig" },
        { type: "reasoning", text: "", redacted: "anthropic-redacted" },
        { type: "reasoning", text: "ok", redacted: "gAAAAAopenai" },
        { type: "text", text: "Let me check." },
        { type: "tool_call", id: "c1", name: "f", arguments: '{"a":1}' },
      ],
    },
    {
      role: "user",
      parts: [
        { type: "tool_result", callId: "c1", content: [{ type: "text", text: "42" }] },
        {
          type: "tool_result",
          callId: "c2",
          content: [{ type: "text", text: "see" }, { type: "image", url: "https://x/y.png" }],
        },
        { type: "text", text: "And?" },
      ],
    },
  ],
  tools: [{ name: "f", description: "d", parameters: { type: "object" } }],
  toolChoice: { type: "tool", name: "f" },
  parallelToolCalls: false,
  maxTokens: 8,
  temperature: 0.5,
  topP: 0.5,
  stop: ["END"],
  seed: 7,
  responseFormat: { type: "json_object" },
  reasoning: { budgetTokens: 4000 },
  user: "u",
  stream: true,
};

Deno.test("fromInternal: a Responses body the schema accepts, with store false", () => {
  const body = fromInternal(INTERNAL, "gpt-5-2025-08-07");
  validateResponsesRequest(body);
  assert.deepEqual(body, {
    model: "gpt-5-2025-08-07",
    instructions: "Be brief.\n\nReally.",
    input: [
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "Look" },
          { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
        ],
      },
      {
        type: "reasoning",
        summary: [{ type: "summary_text", text: "ok" }],
        encrypted_content: "gAAAAAopenai",
      },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "Let me check.", annotations: [] }],
      },
      { type: "function_call", call_id: "c1", name: "f", arguments: '{"a":1}' },
      { type: "function_call_output", call_id: "c1", output: "42" },
      {
        type: "function_call_output",
        call_id: "c2",
        output: [
          { type: "input_text", text: "see" },
          { type: "input_image", image_url: "https://x/y.png", detail: "auto" },
        ],
      },
      { type: "message", role: "user", content: [{ type: "input_text", text: "And?" }] },
    ],
    tools: [{
      type: "function",
      name: "f",
      description: "d",
      parameters: { type: "object" },
      strict: false,
    }],
    tool_choice: { type: "function", name: "f" },
    parallel_tool_calls: false,
    max_output_tokens: 16,
    temperature: 0.5,
    top_p: 0.5,
    text: { format: { type: "json_object" } },
    reasoning: { effort: "medium", summary: "auto" },
    include: ["reasoning.encrypted_content"],
    user: "u",
    stream: true,
    store: false,
  });
});

Deno.test("fromInternal ∘ toInternal keeps a responses conversation", () => {
  const client = validateResponsesRequest({
    model: "x",
    instructions: "sys",
    input: [
      { role: "user", content: [{ type: "input_text", text: "q" }] },
      { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c", output: "r" },
    ],
    tools: [{ type: "function", name: "f", parameters: { type: "object" }, strict: true }],
    max_output_tokens: 100,
    stream: false,
  });
  const back = fromInternal(toInternal(client, "a/b"), "up");
  validateResponsesRequest(back);
  assert.deepEqual(toInternal(validateResponsesRequest(back), "a/b"), toInternal(client, "a/b"));
});

Deno.test("toInternal: a reasoning object without an effort asks for the model's default reasoning", () => {
  const reasoningOf = (reasoning: unknown) =>
    toInternal(validateResponsesRequest({ model: "m", input: "hi", reasoning }), "m").reasoning;
  assert.deepEqual(reasoningOf({ summary: "auto" }), { enabled: true, summary: "auto" });
  assert.deepEqual(reasoningOf({}), { enabled: true });
  assert.deepEqual(reasoningOf({ effort: "low" }), { effort: "low" });
  assert.deepEqual(reasoningOf({ effort: "none" }), { effort: "none" });
  assert.equal(reasoningOf(undefined), undefined);
  // On Claude, that is thinking at the medium budget.
  const req = toInternal(
    validateResponsesRequest({ model: "m", input: "hi", reasoning: { summary: "auto" } }),
    "m",
  );
  assert.deepEqual(messagesFromInternal(req, "claude", 64000).thinking, {
    type: "enabled",
    budget_tokens: 4096,
  });
});

Deno.test("toInternal: allowed_tools offers only the allowed tools, one required one by name", () => {
  const fn = (name: string) => ({ type: "function", name, parameters: { type: "object" } });
  const internal = (choice: unknown) =>
    toInternal(
      validateResponsesRequest({
        model: "x",
        input: "hi",
        tools: [fn("get_weather"), fn("get_time"), fn("get_date")],
        tool_choice: choice,
      }),
      "a/b",
    );
  const one = internal({
    type: "allowed_tools",
    mode: "required",
    tools: [{ type: "function", name: "get_time" }],
  });
  assert.deepEqual(one.tools?.map((t) => t.name), ["get_time"]);
  assert.deepEqual(one.toolChoice, { type: "tool", name: "get_time" });
  const two = internal({
    type: "allowed_tools",
    mode: "auto",
    tools: [{ type: "function", name: "get_time" }, { type: "function", name: "get_date" }],
  });
  assert.deepEqual(two.tools?.map((t) => t.name), ["get_time", "get_date"]);
  assert.deepEqual(two.toolChoice, { type: "auto" });
});

Deno.test("fromInternal: a failed tool call's output says so (responses has no is_error)", () => {
  const body = fromInternal({
    model: "m",
    system: [],
    stream: false,
    messages: [
      { role: "assistant", parts: [{ type: "tool_call", id: "c", name: "f", arguments: "{}" }] },
      {
        role: "user",
        parts: [{
          type: "tool_result",
          callId: "c",
          content: [{ type: "text", text: "permission denied" }],
          isError: true,
        }],
      },
    ],
  }, "gpt-5");
  const output = (body.input as { type: string; output?: unknown }[])
    .find((i) => i.type === "function_call_output")?.output;
  assert.equal(output, "Error: permission denied");
});

Deno.test("the end-user id reaches OpenAI within its 64 characters", () => {
  const long = `{"device_id":"${"a".repeat(64)}","account_uuid":"","session_id":"s"}`;
  const body = fromInternal({
    model: "m",
    system: [],
    stream: false,
    user: long,
    messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
  }, "gpt-5");
  assert.match(body.user as string, /^[0-9a-f]{64}$/);
  assert.equal(passThroughRequest({ input: "hi", user: long }, "gpt-5").user, body.user);
  assert.equal(passThroughRequest({ input: "hi", user: "u1" }, "gpt-5").user, "u1");
});

Deno.test("toInternal and upstreamsFor: a text file given inline is its text; a file by URL or id needs a responses upstream", () => {
  const body = (part: Record<string, unknown>) =>
    validateResponsesRequest({
      model: "x",
      input: [{ role: "user", content: [{ type: "input_text", text: "read" }, part] }],
    });
  const text = body({
    type: "input_file",
    filename: "a.txt",
    file_data: "data:text/plain;base64,aGVsbG8K",
  });
  assert.equal(upstreamsFor(text), undefined);
  assert.deepEqual(toInternal(text, "a/b").messages[0].parts, [
    { type: "text", text: "read" },
    { type: "text", text: "a.txt:\nhello\n" },
  ]);
  const csv = body({ type: "input_file", file_data: "data:text/csv,a%2Cb%0A1%2C2" });
  assert.deepEqual(toInternal(csv, "a/b").messages[0].parts[1], {
    type: "text",
    text: "file:\na,b\n1,2",
  });
  for (
    const [part, what] of [
      [{ type: "input_file", file_url: "https://example.com/a.pdf" }, "input_file by URL"],
      [{ type: "input_file", file_id: "file-123" }, "input_file by file id"],
      [{ type: "input_image", file_id: "file-9" }, "input_image by file id"],
      [{ type: "input_file", file_data: "data:application/zip;base64,UEsDBA==" }, "input_file of"],
    ] as const
  ) {
    const need = upstreamsFor(body(part));
    assert.deepEqual(need?.protocols, ["openai-responses"], what);
    assert.ok(need?.reason.startsWith(what), need?.reason);
  }
  // In a tool's output too.
  const output = validateResponsesRequest({
    model: "x",
    input: [
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      {
        type: "function_call_output",
        call_id: "c1",
        output: [{ type: "input_image", file_id: "file-9" }],
      },
    ],
  });
  assert.deepEqual(upstreamsFor(output)?.protocols, ["openai-responses"]);
});

Deno.test("upstreamsFor: audio input needs a responses upstream, never left out of the turn", () => {
  // Transcoded (to Claude's messages API, say), the audio vanished and the model answered
  // the text alone as if it had heard it; chat's `input_audio` goes to a chat upstream alike.
  const body = validateResponsesRequest({
    model: "x",
    input: [{
      role: "user",
      content: [
        { type: "input_text", text: "what is said here?" },
        { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
      ],
    }],
  });
  const need = upstreamsFor(body);
  assert.deepEqual(need?.protocols, ["openai-responses"]);
  assert.ok(need?.reason.startsWith("input_audio requires"), need?.reason);
});

Deno.test("toInternal: a text file that is not UTF-8 is the client's 400, naming the file", () => {
  const body = validateResponsesRequest({
    model: "x",
    input: [{
      role: "user",
      content: [{
        type: "input_file",
        filename: "latin1.csv",
        file_data: "data:text/csv;base64,6Q==",
      }],
    }],
  });
  assert.equal(upstreamsFor(body), undefined);
  assert.throws(() => toInternal(body, "a/b"), (e: Error & { status?: number }) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /"latin1\.csv" \(text\/csv\) is not UTF-8 text/);
    return true;
  });
});

Deno.test("fromInternal: no tool choice or parallel_tool_calls without tools (OpenAI refuses them)", () => {
  const base: TextRequest = {
    model: "m",
    system: [],
    stream: false,
    messages: [{ role: "user", parts: [{ type: "text", text: "q" }] }],
    toolChoice: { type: "required" },
    parallelToolCalls: false,
  };
  for (const tools of [undefined, []]) {
    const body = fromInternal({ ...base, tools }, "up");
    assert.equal(body.tools, undefined);
    assert.equal(body.tool_choice, undefined);
    assert.equal(body.parallel_tool_calls, undefined);
  }
  const withTool = fromInternal({
    ...base,
    tools: [{ name: "f", parameters: { type: "object" } }],
  }, "up");
  assert.equal(withTool.tool_choice, "required");
  assert.equal(withTool.parallel_tool_calls, false);
});

Deno.test("toOpenAIResponsesDialect: call ids over 64 characters (another vendor's, as a client kept them) are shortened on both sides", () => {
  // OpenAI refuses them: "Invalid 'input[1].call_id': string too long. Expected a string
  // with maximum length 64".
  const long = "tool_0_get_weather_" + "a".repeat(70);
  const input = [
    { role: "user", content: "hi" },
    { type: "function_call", call_id: long, name: "f", arguments: "{}" },
    { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: long, output: "ok" },
    { type: "function_call_output", call_id: "call_1", output: "ok" },
  ];
  const before = structuredClone(input);
  const body: Record<string, unknown> = { model: "gpt-5.1", input };
  toOpenAIResponsesDialect(body);
  assert.deepEqual(input, before, "the client's items are not modified");
  const out = body.input as { call_id?: string }[];
  const id = out[1].call_id!;
  assert.ok(id.length <= 64, `${id} is at most 64 characters`);
  assert.equal(out[3].call_id, id, "the output keeps pairing with its call");
  assert.equal(out[2].call_id, "call_1");
  assert.equal(out[4].call_id, "call_1");
});

Deno.test("toOpenAIResponsesDialect: OpenRouter's extensions dropped, reasoning kept to what OpenAI takes", () => {
  const body: Record<string, unknown> = {
    model: "gpt-5.1",
    input: "hi",
    usage: { include: true },
    provider: { order: ["openai"] },
    plugins: [{ id: "web" }],
    top_k: 4,
    reasoning: { effort: "low", max_tokens: 2000, exclude: true, summary: "auto" },
    temperature: 0.2,
  };
  toOpenAIResponsesDialect(body);
  assert.deepEqual(body, {
    model: "gpt-5.1",
    input: "hi",
    reasoning: { effort: "low", summary: "auto" },
    temperature: 0.2,
  });
  const own = { model: "m", reasoning: { effort: "high" } };
  toOpenAIResponsesDialect(own);
  assert.deepEqual(own, { model: "m", reasoning: { effort: "high" } });
  // Codex's `low` verbosity: for GPT-5, not for the o-series, which take only the default.
  const o3: Record<string, unknown> = {
    model: "o3",
    text: { verbosity: "low", format: { type: "text" } },
  };
  toOpenAIResponsesDialect(o3);
  assert.deepEqual(o3.text, { format: { type: "text" } });
  for (const model of ["gpt-5.1", "gpt-5.5"]) {
    const gpt5: Record<string, unknown> = { model, text: { verbosity: "low" } };
    toOpenAIResponsesDialect(gpt5);
    assert.deepEqual(gpt5.text, { verbosity: "low" }, model);
  }
  // Nor for the GPT-5 codex models up to 5.2, which OpenAI also holds to `medium` ("Unsupported
  // value: 'low' is not supported with the 'gpt-5.2-codex' model"): a Codex whose model
  // catalogue says otherwise would get that 400 on every call.
  for (
    const model of [
      "gpt-5-codex",
      "gpt-5.1-codex",
      "gpt-5.1-codex-max",
      "gpt-5.1-codex-mini",
      "gpt-5.2-codex",
      "codex-mini-latest",
    ]
  ) {
    const codex: Record<string, unknown> = { model, text: { verbosity: "high" } };
    toOpenAIResponsesDialect(codex);
    assert.deepEqual(codex.text, {}, model);
  }
});

Deno.test("another vendor's reasoning from OpenRouter's responses API goes back only to OpenRouter", () => {
  const item = {
    type: "reasoning",
    id: "rs_g",
    summary: [{ type: "summary_text", text: "thought" }],
    encrypted_content: "CiQBgeminiSignature",
    format: "google-gemini-v1",
  };
  const body = {
    model: "google/gemini-2.5-flash",
    input: [
      { role: "user", content: "q" },
      item,
      { role: "assistant", content: "a" },
      { role: "user", content: "next" },
    ],
  };
  const req = toInternal(
    validateResponsesRequest(structuredClone(body)),
    "anthropic/claude-sonnet-4.5",
  );
  // Claude is sent no thinking block of Gemini's.
  const claude = messagesFromInternal(
    { ...req, reasoning: { effort: "high" } },
    "claude-sonnet-4-5",
    64000,
  );
  const blocks = (claude.messages as { content: { type: string }[] }[]).flatMap((m) => m.content);
  assert.deepEqual(blocks.filter((b) => b.type.includes("thinking")), []);
  // OpenAI's own API: the foreign item goes, an OpenAI one stays without OpenRouter's field.
  const own = {
    ...item,
    id: "rs_o",
    encrypted_content: "gAAAAAown",
    format: "openai-responses-v1",
  };
  const openai: Record<string, unknown> = { ...body, input: [...body.input, own] };
  toOpenAIResponsesDialect(openai);
  const items = openai.input as Record<string, unknown>[];
  assert.equal(items.some((i) => i.id === "rs_g"), false);
  assert.deepEqual(items.find((i) => i.id === "rs_o"), {
    type: "reasoning",
    id: "rs_o",
    summary: [{ type: "summary_text", text: "thought" }],
    encrypted_content: "gAAAAAown",
  });
  // A format that names no vendor (null) is read as OpenAI's, here as in toInternal.
  const unnamed: Record<string, unknown> = {
    model: "gpt-5.1",
    input: [{ ...own, id: "rs_n", format: null }],
  };
  toOpenAIResponsesDialect(unnamed);
  assert.deepEqual((unnamed.input as Record<string, unknown>[]).map((i) => [i.id, "format" in i]), [
    ["rs_n", false],
  ]);
});

Deno.test("another vendor's reasoning whose format the client dropped reaches neither OpenAI nor Claude", () => {
  // Gemini's reasoning from OpenRouter's responses API, as Codex keeps it: no `format`.
  const gemini = {
    type: "reasoning",
    id: "rs_g",
    summary: [{ type: "summary_text", text: "thought" }],
    encrypted_content: "CiQBgeminiSignature",
  };
  const own = { ...gemini, id: "rs_o", encrypted_content: "gAAAAAown" };
  const call = {
    type: "function_call",
    call_id: "call_1",
    name: "f",
    arguments: "{}",
  };
  const body = {
    model: "x",
    tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
    input: [
      { role: "user", content: "q" },
      gemini,
      call,
      { type: "function_call_output", call_id: "call_1", output: "ok" },
    ],
  };
  const req = toInternal(validateResponsesRequest(structuredClone(body)), "anthropic/claude-x");
  const claude = messagesFromInternal(
    { ...req, reasoning: { budgetTokens: 2048 } },
    "claude-sonnet-4-5",
    64000,
  );
  const blocks = (claude.messages as { content: { type: string }[] }[]).flatMap((m) => m.content);
  assert.deepEqual(blocks.filter((b) => b.type.includes("thinking")), []);
  // Its text is still the turn's reasoning; with no signed thinking, the tool turn thinks not.
  assert.deepEqual(req.messages[1].parts[0], { type: "reasoning", text: "thought" });
  assert.equal(claude.thinking, undefined);
  // OpenAI's own API: the unnamed foreign item goes, OpenAI's stays.
  const openai: Record<string, unknown> = { ...body, input: [...body.input, own] };
  toOpenAIResponsesDialect(openai);
  const ids = (openai.input as Record<string, unknown>[]).map((i) => i.id ?? i.type ?? i.role);
  assert.deepEqual(ids, ["user", "function_call", "function_call_output", "rs_o"]);
});

Deno.test("fromInternal: a hosted search gets at least low effort (OpenAI refuses it with minimal)", () => {
  const base: TextRequest = {
    model: "openai/gpt-5",
    system: [],
    stream: true,
    messages: [{ role: "user", parts: [{ type: "text", text: "search" }] }],
    reasoning: { effort: "minimal" },
  };
  const searched = fromInternal({ ...base, webSearch: { maxUses: 8 } }, "gpt-5");
  assert.deepEqual(searched.reasoning, { effort: "low" });
  assert.deepEqual(searched.tools, [{ type: "web_search" }]);
  // Without the search, the least effort is what was asked.
  assert.deepEqual(fromInternal(base, "gpt-5").reasoning, { effort: "minimal" });
});

Deno.test("withoutUnreadableReasoning: only after invalid_encrypted_content, compactions kept whole", () => {
  const sent = {
    model: "gpt-5.4",
    input: [
      { type: "compaction", id: "cmp_1", encrypted_content: "gAAAAAc" },
      { type: "message", id: "msg_1", role: "user", content: "q" },
      { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAAAr" },
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: "ok" },
    ],
  };
  const refusal = {
    error: {
      message: "The encrypted content gAAA...AAr could not be verified.",
      type: "invalid_request_error",
      param: null,
      code: "invalid_encrypted_content",
    },
  };
  assert.deepEqual(withoutUnreadableReasoning(400, refusal, sent)?.input, [
    { type: "compaction", id: "cmp_1", encrypted_content: "gAAAAAc" },
    { type: "message", role: "user", content: "q" },
    { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: "call_1", output: "ok" },
  ]);
  // OpenRouter passes OpenAI's refusal on in its own envelope, as text.
  assert.ok(withoutUnreadableReasoning(400, JSON.stringify(refusal), sent));
  assert.equal(withoutUnreadableReasoning(400, { error: { message: "other" } }, sent), undefined);
  assert.equal(withoutUnreadableReasoning(500, refusal, sent), undefined);
  // Nothing to leave out: the refusal is the client's to see (a compaction it cannot open).
  const bare = { ...sent, input: sent.input.filter((i) => i.type !== "reasoning") };
  assert.equal(withoutUnreadableReasoning(400, refusal, bare), undefined);
});

Deno.test("passThroughRequest: reasoning left out takes the items' ids with it (OpenAI refuses a call's id without its reasoning)", () => {
  const body = {
    model: "openai/gpt-5",
    input: [
      { role: "user", content: "hi" },
      // Stored reasoning named by id only: refused with store false, so left out.
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "function_call", id: "fc_1", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "ok" },
      { type: "message", id: "msg_1", role: "assistant", content: "Done." },
      { type: "item_reference", id: "ref_1" },
      { type: "web_search_call", id: "ws_1", status: "completed" },
    ],
  };
  const out = passThroughRequest(body, "gpt-5");
  assert.deepEqual(out.input, [
    { role: "user", content: "hi" },
    { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: "c1", output: "ok" },
    { type: "message", role: "assistant", content: "Done." },
    { type: "item_reference", id: "ref_1" },
    // The API takes a hosted tool's call only with its id.
    { type: "web_search_call", id: "ws_1", status: "completed" },
  ]);
  // Reasoning the upstream can read keeps every id.
  const kept = {
    ...body,
    input: [
      { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAAB" },
      ...body
        .input.slice(2),
    ],
  };
  assert.deepEqual(passThroughRequest(kept, "gpt-5").input, kept.input);
});

Deno.test("toInternal: a blank or empty last user message is kept, so Claude is not sent a prefill", () => {
  // As chat's `content: ""` and a string `input: ""`: the message stays with its blank text;
  // `content: []` stays as a message of nothing.
  // Left out, the assistant's answer before it would become the last message, which Anthropic
  // continues as a prefill instead of answering (Claude's own 400 says what is wrong).
  for (const content of ["", [{ type: "input_text", text: "" }], []]) {
    const req = toInternal(
      validateResponsesRequest({
        model: "x",
        input: [
          { role: "user", content: "Hi" },
          { role: "assistant", content: "Hello" },
          { role: "user", content },
        ],
      }),
      "a/b",
    );
    assert.deepEqual(req.messages.at(-1), {
      role: "user",
      parts: Array.isArray(content) && content.length === 0 ? [] : [{ type: "text", text: "" }],
    });
    const sent = messagesFromInternal(req, "claude-x").messages as { role: string }[];
    assert.deepEqual(
      sent.at(-1),
      { role: "user", content: [{ type: "text", text: "" }] },
      JSON.stringify(content),
    );
  }
});

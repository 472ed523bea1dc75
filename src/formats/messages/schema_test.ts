import assert from "node:assert/strict";
import { GatewayError } from "../../http/gateway_error.ts";
import { validateMessagesRequest } from "./schema.ts";

const base = {
  model: "anthropic/claude-sonnet-4.5",
  max_tokens: 64,
  messages: [{ role: "user", content: "hi" }],
};

function rejects(body: unknown, message: string): void {
  assert.throws(() => validateMessagesRequest(body), (e: unknown) => {
    assert.ok(e instanceof GatewayError);
    assert.equal(e.status, 400);
    assert.equal(e.message, message);
    return true;
  });
}

const user = (content: unknown) => ({ ...base, messages: [{ role: "user", content }] });

Deno.test("a body that is not a JSON object is rejected", () => {
  rejects([], "request body must be a JSON object");
});

Deno.test("model is required and must be a non-empty string", () => {
  rejects({ ...base, model: undefined }, "model: is required");
  rejects({ ...base, model: "" }, "model: must not be empty");
  rejects({ ...base, model: 7 }, "model: must be a string");
});

Deno.test("max_tokens is a required integer of at least 1", () => {
  rejects({ ...base, max_tokens: undefined }, "max_tokens: is required");
  rejects({ ...base, max_tokens: 0 }, "max_tokens: must be >= 1");
  rejects({ ...base, max_tokens: 1.5 }, "max_tokens: must be an integer");
});

Deno.test("messages is a required non-empty array", () => {
  rejects({ ...base, messages: undefined }, "messages: is required");
  rejects({ ...base, messages: [] }, "messages: must have at least 1 item(s)");
});

Deno.test("message role must be user, assistant or (mid-conversation) system", () => {
  rejects(
    { ...base, messages: [{ role: "tool", content: "x" }] },
    'messages[0].role: must be one of "user", "assistant", "system"',
  );
  validateMessagesRequest({ ...base, messages: [{ role: "system", content: "be brief" }] });
});

Deno.test("message content is a string or an array of blocks", () => {
  rejects(user(5), "messages[0].content: must be a string or an array");
});

Deno.test("text blocks need a string text, which may be empty", () => {
  rejects(user([{ type: "text", text: 5 }]), "messages[0].content[0].text: must be a string");
  validateMessagesRequest(user([{ type: "text", text: "" }]));
});

Deno.test("image blocks take a base64, url or file source", () => {
  validateMessagesRequest(
    user([{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBO" } }]),
  );
  validateMessagesRequest(
    user([{ type: "image", source: { type: "url", url: "https://x/y.png" } }]),
  );
  rejects(
    user([{ type: "image", source: { type: "base64", media_type: "image/png" } }]),
    "messages[0].content[0].source.data: is required",
  );
  rejects(
    user([{ type: "image", source: { type: "ftp" } }]),
    "messages[0].content[0].source.type: has an unsupported value",
  );
});

Deno.test("tool_use blocks need an object input", () => {
  rejects(
    {
      ...base,
      messages: [{
        role: "assistant",
        content: [{ type: "tool_use", id: "t", name: "n", input: "x" }],
      }],
    },
    "messages[0].content[0].input: must be an object",
  );
});

Deno.test("tool_result content is a string or blocks, checked recursively", () => {
  validateMessagesRequest(
    user([{ type: "tool_result", tool_use_id: "t", content: "ok", is_error: false }]),
  );
  rejects(
    user([{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: null }] }]),
    "messages[0].content[0].content[0].text: must be a string",
  );
  rejects(user([{ type: "tool_result" }]), "messages[0].content[0].tool_use_id: is required");
});

Deno.test("thinking and redacted_thinking blocks need their fields", () => {
  rejects(
    { ...base, messages: [{ role: "assistant", content: [{ type: "thinking", thinking: "x" }] }] },
    "messages[0].content[0].signature: is required",
  );
  rejects(
    { ...base, messages: [{ role: "assistant", content: [{ type: "redacted_thinking" }] }] },
    "messages[0].content[0].data: is required",
  );
});

Deno.test("unknown block types are accepted for pass-through", () => {
  validateMessagesRequest(user([
    { type: "search_result", source: "https://x", title: "t", content: [] },
    { type: "server_tool_use", id: "srv", name: "web_search", input: {} },
  ]));
});

Deno.test("cache_control is allowed on any block and needs a type", () => {
  validateMessagesRequest(
    user([{ type: "text", text: "x", cache_control: { type: "ephemeral", ttl: "1h" } }]),
  );
  validateMessagesRequest(
    user([{ type: "document", source: { type: "text", data: "d" }, cache_control: null }]),
  );
  rejects(
    user([{ type: "text", text: "x", cache_control: { ttl: "5m" } }]),
    "messages[0].content[0].cache_control.type: is required",
  );
});

Deno.test("system is a string or an array of text blocks", () => {
  validateMessagesRequest({ ...base, system: "s" });
  validateMessagesRequest({
    ...base,
    system: [{ type: "text", text: "s", cache_control: { type: "ephemeral" } }],
  });
  rejects({ ...base, system: [{ type: "image" }] }, 'system[0].type: must be one of "text"');
});

Deno.test("temperature is in [0, 1]", () => {
  rejects({ ...base, temperature: 1.5 }, "temperature: must be <= 1");
  rejects({ ...base, temperature: -0.1 }, "temperature: must be >= 0");
});

Deno.test("top_p is in (0, 1]", () => {
  rejects({ ...base, top_p: 0 }, "top_p: must be > 0");
  validateMessagesRequest({ ...base, top_p: 1 });
});

Deno.test("top_k is an integer >= 0", () => {
  rejects({ ...base, top_k: -1 }, "top_k: must be >= 0");
  rejects({ ...base, top_k: 2.5 }, "top_k: must be an integer");
});

Deno.test("stop_sequences is an array of strings", () => {
  rejects({ ...base, stop_sequences: "x" }, "stop_sequences: must be an array");
  rejects({ ...base, stop_sequences: [1] }, "stop_sequences[0]: must be a string");
  // The gateway scans a stream for every sequence an upstream does not take, delta by delta: a
  // million of them, sent in one cheap call, held its event loop for seconds at a time.
  const many = Array.from({ length: 256 }, (_, i) => `s${i}`);
  validateMessagesRequest({ ...base, stop_sequences: many });
  rejects(
    { ...base, stop_sequences: [...many, "one more"] },
    "stop_sequences: must have at most 256 item(s)",
  );
  validateMessagesRequest({ ...base, stop_sequences: ["x".repeat(1000)] });
  rejects(
    { ...base, stop_sequences: ["x".repeat(1001)] },
    "stop_sequences[0]: must be at most 1000 character(s)",
  );
});

Deno.test("stream is a boolean", () => {
  rejects({ ...base, stream: "yes" }, "stream: must be a boolean");
});

Deno.test("client tools need a name and an input_schema; server tools only a type", () => {
  rejects({ ...base, tools: [{ name: "x" }] }, "tools[0].input_schema: must be an object");
  rejects({ ...base, tools: [{ input_schema: {} }] }, "tools[0].name: is required");
  validateMessagesRequest({
    ...base,
    tools: [
      {
        name: "get_weather",
        input_schema: { type: "object" },
        cache_control: { type: "ephemeral" },
      },
      { type: "custom", name: "x", input_schema: { type: "object" } },
      { type: "web_search_20250305", name: "web_search", max_uses: 3 },
    ],
  });
});

Deno.test("tool_choice type is auto, any, tool or none; tool needs a name", () => {
  rejects(
    { ...base, tool_choice: { type: "maybe" } },
    'tool_choice.type: must be one of "auto", "any", "tool", "none"',
  );
  rejects(
    { ...base, tool_choice: { type: "tool" } },
    'tool_choice.name: is required when type is "tool"',
  );
  validateMessagesRequest({
    ...base,
    tool_choice: { type: "any", disable_parallel_tool_use: true },
  });
});

Deno.test("thinking is enabled with a budget of at least 1024, disabled or adaptive", () => {
  rejects({ ...base, thinking: { type: "enabled" } }, "thinking.budget_tokens: is required");
  rejects(
    { ...base, thinking: { type: "enabled", budget_tokens: 100 } },
    "thinking.budget_tokens: must be >= 1024",
  );
  rejects({ ...base, thinking: { type: "sometimes" } }, "thinking.type: has an unsupported value");
  validateMessagesRequest({ ...base, thinking: { type: "adaptive" } });
  validateMessagesRequest({ ...base, thinking: { type: "disabled" } });
});

Deno.test("metadata.user_id is a string", () => {
  rejects({ ...base, metadata: { user_id: 5 } }, "metadata.user_id: must be a string");
});

Deno.test("unknown top-level fields are accepted and the client's object is returned as is", () => {
  const body = {
    ...base,
    context_management: { edits: [] },
    output_config: { effort: "high" },
    x: 1,
  };
  assert.equal(validateMessagesRequest(body), body);
});

Deno.test("validate: tool_choice names one of the tools", () => {
  const tools = [
    { name: "get_weather", input_schema: { type: "object" } },
    { type: "web_search_20250305", name: "web_search" },
  ];
  validateMessagesRequest({ ...base, tools, tool_choice: { type: "tool", name: "get_weather" } });
  validateMessagesRequest({ ...base, tools, tool_choice: { type: "tool", name: "web_search" } });
  rejects(
    { ...base, tools, tool_choice: { type: "tool", name: "get_time" } },
    'tool_choice.name: "get_time" is not the name of one of the tools',
  );
  rejects(
    { ...base, tool_choice: { type: "tool", name: "get_weather" } },
    'tool_choice.name: "get_weather" is not the name of one of the tools',
  );
});

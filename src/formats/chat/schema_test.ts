import assert from "node:assert/strict";
import { GatewayError } from "../../http/gateway_error.ts";
import { checkAgainstModel, validateChatRequest } from "./schema.ts";

const user = (content: unknown) => ({ role: "user", content });
const base = { model: "openai/gpt-4o", messages: [user("hi")] };
const img = (url: string) => ({ type: "image_url", image_url: { url } });
const tool = (fn: unknown, type = "function") => ({ type, function: fn });

function rejects(body: unknown, message: string) {
  assert.throws(() => validateChatRequest(body), (e: unknown) => {
    assert.ok(e instanceof GatewayError, `not a GatewayError: ${e}`);
    assert.equal(e.status, 400);
    assert.equal(e.message, message);
    return true;
  });
}

const REJECTED: [string, unknown, string][] = [
  ["a non-object body", "hello", "request body must be an object"],
  ["a null body", null, "request body must be an object"],
  ["missing messages", { model: "m" }, "messages is required"],
  ["messages not an array", { messages: "hi" }, "messages must be an array"],
  ["empty messages", { messages: [] }, "messages must be a non-empty array"],
  ["a message not an object", { messages: ["hi"] }, "messages[0] must be an object"],
  [
    "an unknown role",
    { messages: [{ role: "bot", content: "x" }] },
    "messages[0].role must be one of system, developer, user, assistant, tool, function",
  ],
  [
    "content of a wrong type",
    { messages: [user(5)] },
    "messages[0].content must be a string or an array",
  ],
  [
    "an unknown part type",
    { messages: [user([{ type: "video_url" }])] },
    "messages[0].content[0].type must be one of text, image_url, file, input_audio",
  ],
  [
    "a text part without text",
    { messages: [user([{ type: "text" }])] },
    "messages[0].content[0].text is required",
  ],
  [
    "an image URL of another scheme",
    { messages: [user([img("ftp://example.com/a.png")])] },
    "messages[0].content[0].image_url.url must be an http(s) URL or a base64 data:image URL",
  ],
  [
    "a data URL that is not a base64 image",
    { messages: [user([img("data:text/plain;base64,aGk=")])] },
    "messages[0].content[0].image_url.url must be an http(s) URL or a base64 data:image URL",
  ],
  [
    "image_url as a bare string",
    { messages: [user([{ type: "image_url", image_url: "https://x/a.png" }])] },
    "messages[0].content[0].image_url must be an object",
  ],
  [
    "an image detail out of the enum",
    {
      messages: [user([{ type: "image_url", image_url: { url: "https://x/a", detail: "max" } }])],
    },
    'messages[0].content[0].image_url.detail must be one of "auto", "low", "high", "original"',
  ],
  [
    "an image in a system message",
    { messages: [{ role: "system", content: [img("https://x/a.png")] }] },
    'messages[0].content[0].type must be "text"',
  ],
  [
    "an assistant message with null content and no tool calls",
    { messages: [user("q"), { role: "assistant", content: null }] },
    "messages[1].content must be given unless the message has tool_calls",
  ],
  [
    "an assistant tool call without an id",
    {
      messages: [{
        role: "assistant",
        content: null,
        tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }],
      }],
    },
    "messages[0].tool_calls[0].id is required",
  ],
  [
    "a tool message without tool_call_id",
    { messages: [{ role: "tool", content: "42" }] },
    "messages[0].tool_call_id is required",
  ],
  ["temperature above 2", { ...base, temperature: 2.5 }, "temperature must be between 0 and 2"],
  ["temperature below 0", { ...base, temperature: -0.1 }, "temperature must be between 0 and 2"],
  ["temperature as a string", { ...base, temperature: "1" }, "temperature must be a number"],
  ["top_p of 0", { ...base, top_p: 0 }, "top_p must be greater than 0 and at most 1"],
  [
    "top_logprobs above 20",
    { ...base, top_logprobs: 30 },
    "top_logprobs must be an integer from 0 to 20",
  ],
  ["logprobs as a string", { ...base, logprobs: "yes" }, "logprobs must be a boolean"],
  [
    "a logit_bias past 100",
    { ...base, logit_bias: { "50256": 500 } },
    "logit_bias.50256 must be between -100 and 100",
  ],
  [
    "an assistant turn by audio id",
    { messages: [{ role: "user", content: "q" }, { role: "assistant", audio: { id: "audio_1" } }] },
    "messages[1]: an assistant message's audio by id is not kept by this gateway; send its " +
    "transcript as content",
  ],
  ["top_p above 1", { ...base, top_p: 1.01 }, "top_p must be greater than 0 and at most 1"],
  [
    "frequency_penalty out of range",
    { ...base, frequency_penalty: 2.1 },
    "frequency_penalty must be between -2 and 2",
  ],
  [
    "presence_penalty out of range",
    { ...base, presence_penalty: -3 },
    "presence_penalty must be between -2 and 2",
  ],
  ["max_tokens of 0", { ...base, max_tokens: 0 }, "max_tokens must be an integer of at least 1"],
  ["max_tokens fractional", { ...base, max_tokens: 10.5 }, "max_tokens must be an integer"],
  [
    "max_tokens past 2^53",
    { ...base, max_tokens: 1e300 },
    "max_tokens must be less than the model's context length",
  ],
  [
    "max_completion_tokens past 2^53",
    { ...base, max_completion_tokens: 2 ** 53 },
    "max_completion_tokens must be less than the model's context length",
  ],
  [
    "max_completion_tokens of 0",
    { ...base, max_completion_tokens: 0 },
    "max_completion_tokens must be an integer of at least 1",
  ],
  [
    "five stop sequences",
    { ...base, stop: ["a", "b", "c", "d", "e"] },
    "stop must hold at most 4 sequences",
  ],
  ["stop as a number", { ...base, stop: 1 }, "stop must be a string or an array"],
  ["a stop sequence not a string", { ...base, stop: ["a", 2] }, "stop[1] must be a string"],
  ["n of 0", { ...base, n: 0 }, "n must be an integer from 1 to 128"],
  ["n of 129", { ...base, n: 129 }, "n must be an integer from 1 to 128"],
  ["tools not an array", { ...base, tools: {} }, "tools must be an array"],
  [
    "a tool of another type",
    { ...base, tools: [tool({ name: "f" }, "retrieval")] },
    "tools[0].type must be one of function, custom",
  ],
  ["a tool without a name", { ...base, tools: [tool({})] }, "tools[0].function.name is required"],
  [
    "tool parameters not an object",
    { ...base, tools: [tool({ name: "f", parameters: "x" })] },
    "tools[0].function.parameters must be an object",
  ],
  [
    "tool strict not a boolean",
    { ...base, tools: [tool({ name: "f", strict: "yes" })] },
    "tools[0].function.strict must be a boolean",
  ],
  [
    "an unknown tool_choice string",
    { ...base, tool_choice: "any" },
    'tool_choice must be one of "auto", "none", "required" or an object',
  ],
  [
    "a tool_choice object without the function",
    { ...base, tool_choice: { type: "function" } },
    "tool_choice.function is required",
  ],
  [
    "an unknown response_format type",
    { ...base, response_format: { type: "xml" } },
    "response_format.type must be one of text, json_object, json_schema",
  ],
  [
    "a json_schema format without a schema",
    { ...base, response_format: { type: "json_schema", json_schema: { name: "x" } } },
    "response_format.json_schema.schema is required",
  ],
  [
    "a json_schema format without a name",
    { ...base, response_format: { type: "json_schema", json_schema: { schema: {} } } },
    "response_format.json_schema.name is required",
  ],
  ["stream as a string", { ...base, stream: "true" }, "stream must be a boolean"],
  [
    "stream_options.include_usage as a string",
    { ...base, stream_options: { include_usage: "yes" } },
    "stream_options.include_usage must be a boolean",
  ],
  [
    "an unknown reasoning effort",
    { ...base, reasoning: { effort: "max" } },
    'reasoning.effort must be one of "none", "minimal", "low", "medium", "high", "xhigh"',
  ],
  [
    "a negative reasoning budget",
    { ...base, reasoning: { max_tokens: -1 } },
    "reasoning.max_tokens must be a non-negative integer",
  ],
  [
    "reasoning.exclude as a string",
    { ...base, reasoning: { exclude: "1" } },
    "reasoning.exclude must be a boolean",
  ],
  [
    "reasoning.enabled as a number",
    { ...base, reasoning: { enabled: 1 } },
    "reasoning.enabled must be a boolean",
  ],
  [
    "an unknown reasoning_effort",
    { ...base, reasoning_effort: "huge" },
    'reasoning_effort must be one of "none", "minimal", "low", "medium", "high", "xhigh"',
  ],
  ["user as a number", { ...base, user: 7 }, "user must be a string"],
  ["a fractional seed", { ...base, seed: 1.5 }, "seed must be an integer"],
  [
    "parallel_tool_calls as a string",
    { ...base, parallel_tool_calls: "no" },
    "parallel_tool_calls must be a boolean",
  ],
  ["model as a number", { ...base, model: 4 }, "model must be a string"],
];

for (const [what, body, message] of REJECTED) {
  Deno.test(`chat schema rejects ${what}: "${message}"`, () => rejects(body, message));
}

Deno.test("chat schema accepts a full request and keeps unknown fields at every level", () => {
  const body = {
    model: "openai/gpt-4o",
    messages: [
      { role: "developer", content: "be brief" },
      {
        role: "system",
        content: [{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          img("https://example.com/cat.png"),
          {
            type: "image_url",
            image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" },
          },
        ],
        name: "alice",
      },
      {
        role: "assistant",
        content: null,
        reasoning_content: "thinking",
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "42" },
      { role: "assistant", content: "The answer is" },
    ],
    temperature: 0,
    top_p: 1,
    frequency_penalty: -2,
    presence_penalty: 2,
    max_tokens: 1,
    max_completion_tokens: 100,
    stop: ["\n\n", "END", "x", "y"],
    n: 1,
    tools: [tool({ name: "f", description: "d", parameters: { type: "object" }, strict: true })],
    tool_choice: { type: "function", function: { name: "f" } },
    parallel_tool_calls: false,
    response_format: { type: "json_schema", json_schema: { name: "r", schema: {}, strict: true } },
    stream: true,
    stream_options: { include_usage: true },
    reasoning: { effort: "high", max_tokens: 0, exclude: false, enabled: true },
    reasoning_effort: "minimal",
    include_reasoning: true,
    user: "u-1",
    seed: -3,
    provider: { order: ["openai"] },
    top_k: 40,
  };
  assert.deepEqual(validateChatRequest(structuredClone(body)), body);
});

Deno.test("chat schema accepts null for optional fields and a string stop", () => {
  const body = { ...base, temperature: null, stop: "END", tools: null, seed: null, n: null };
  assert.deepEqual(validateChatRequest(body), body);
});

Deno.test("chat schema accepts every image detail OpenAI takes, original included", () => {
  // The openai SDK (7.57) types `detail` as auto, low, high or original; the responses
  // schema already took all four, chat refused the SDK's own value with a 400.
  for (const detail of ["auto", "low", "high", "original"]) {
    const body = {
      ...base,
      messages: [user([{ type: "image_url", image_url: { url: "https://x/a.png", detail } }])],
    };
    assert.deepEqual(validateChatRequest(structuredClone(body)), body, detail);
  }
});

Deno.test("chat schema: reasoning_effort past xhigh (the SDK's max, Codex's ultra) asks for xhigh", () => {
  // The openai SDK (7.57) types reasoning_effort "max"; no model of the catalogue takes it,
  // and the responses format already read it as the most thought there is (xhigh, then the
  // nearest effort the model takes) where chat gave a 400. OpenRouter's `reasoning` object
  // names no such effort and keeps its own enum.
  for (const effort of ["max", "ultra"]) {
    const body = validateChatRequest({ ...base, reasoning_effort: effort });
    assert.equal(body.reasoning_effort, "xhigh", effort);
  }
  assert.throws(() => validateChatRequest({ ...base, reasoning_effort: "huge" }), GatewayError);
});

Deno.test("chat schema accepts every tool_choice and response_format form", () => {
  for (const tool_choice of ["auto", "none", "required"]) {
    validateChatRequest({ ...base, tool_choice });
  }
  for (const type of ["text", "json_object"]) {
    validateChatRequest({ ...base, response_format: { type } });
  }
});

// ---- model-dependent rules -----------------------------------------------------------------

const MODEL = {
  contextLength: 8192,
  acceptsImages: true,
  acceptsFiles: true,
  acceptsAudio: true,
  supportsJsonObject: true,
};

function rejectsFor(body: Record<string, unknown>, model: typeof MODEL, message: string) {
  assert.throws(() => checkAgainstModel(validateChatRequest(body), model), (e: unknown) => {
    assert.ok(e instanceof GatewayError);
    assert.equal(e.status, 400);
    assert.equal(e.message, message);
    return true;
  });
}

Deno.test("chat model check: max_tokens must be below the context length", () => {
  checkAgainstModel(validateChatRequest({ ...base, max_tokens: 8191 }), MODEL);
  rejectsFor(
    { ...base, max_tokens: 8192 },
    MODEL,
    "max_tokens must be less than the model's context length (8192)",
  );
  rejectsFor(
    { ...base, max_completion_tokens: 9000 },
    MODEL,
    "max_completion_tokens must be less than the model's context length (8192)",
  );
});

Deno.test("chat model check: image parts need a model with image input", () => {
  const body = {
    ...base,
    messages: [user("a"), user([{ type: "text", text: "b" }, img("https://x/y.png")])],
  };
  checkAgainstModel(validateChatRequest(body), MODEL);
  rejectsFor(
    body,
    { ...MODEL, acceptsImages: false },
    "messages[1].content[1]: this model does not accept image input",
  );
  checkAgainstModel(validateChatRequest(base), { ...MODEL, acceptsImages: false });
});

Deno.test("chat model check: file and audio parts only on models that take them", () => {
  const pdf = {
    type: "file",
    file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBE" },
  };
  const audio = { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } };
  const body = { ...base, messages: [user([{ type: "text", text: "b" }, pdf, audio])] };
  checkAgainstModel(validateChatRequest(body), MODEL);
  rejectsFor(
    body,
    { ...MODEL, acceptsFiles: false },
    "messages[0].content[1]: this model does not accept file input",
  );
  rejectsFor(
    body,
    { ...MODEL, acceptsAudio: false },
    "messages[0].content[2]: this model does not accept audio input",
  );
});

Deno.test("chat model check: json_object needs response_format or structured_outputs", () => {
  const body = { ...base, response_format: { type: "json_object" } };
  checkAgainstModel(validateChatRequest(body), MODEL);
  rejectsFor(
    body,
    { ...MODEL, supportsJsonObject: false },
    "response_format json_object is not supported by this model",
  );
  checkAgainstModel(
    validateChatRequest({ ...base, response_format: { type: "text" } }),
    { ...MODEL, supportsJsonObject: false },
  );
});

Deno.test("chat schema: any value in any field gives a result or a 400, never another error", () => {
  const fields = [
    "model",
    "messages",
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "n",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "stream",
    "stream_options",
    "reasoning",
    "reasoning_effort",
    "include_reasoning",
    "user",
    "seed",
    "__proto__",
    "constructor",
  ];
  const values = [
    "x",
    "",
    0,
    -1,
    1.5,
    1e308,
    true,
    [],
    [1],
    ["a"],
    {},
    { type: 1 },
    [{ role: "user" }],
    [{ role: "user", content: [{ type: "image_url", image_url: { url: 5 } }] }],
    [{ role: "assistant", tool_calls: [{}] }],
  ];
  for (const field of fields) {
    for (const value of values) {
      const body = JSON.parse(
        `{"messages":[{"role":"user","content":"q"}],${JSON.stringify(field)}:${
          JSON.stringify(value)
        }}`,
      );
      try {
        validateChatRequest(body);
      } catch (e) {
        assert.ok(e instanceof GatewayError, `${field}=${JSON.stringify(value)}: ${e}`);
        assert.equal(e.status, 400);
        assert.match(e.message, /^(request body|[a-z_]+)[\s.[]/, e.message);
      }
    }
  }
});

Deno.test("validate: a tool choice may name only declared tools", () => {
  const tools = [tool({ name: "f" }), { type: "custom", custom: { name: "g" } }];
  const fine = [
    { type: "function", function: { name: "f" } },
    { type: "custom", custom: { name: "g" } },
    {
      type: "allowed_tools",
      allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "f" } }] },
    },
  ];
  for (const tool_choice of fine) validateChatRequest({ ...base, tools, tool_choice });
  rejects(
    { ...base, tools, tool_choice: { type: "function", function: { name: "g" } } },
    'tool_choice names the function tool "g", which is not among the request\'s tools',
  );
  rejects(
    { ...base, tool_choice: { type: "function", function: { name: "f" } } },
    'tool_choice names the function tool "f", which is not among the request\'s tools',
  );
  rejects(
    {
      ...base,
      tools,
      tool_choice: {
        type: "allowed_tools",
        allowed_tools: {
          mode: "required",
          tools: [
            { type: "function", function: { name: "f" } },
            { type: "function", function: { name: "zzz" } },
          ],
        },
      },
    },
    'tool_choice.allowed_tools.tools[1] names the function tool "zzz", which is not among ' +
      "the request's tools",
  );
});

Deno.test("chat model check: an inline text file is text, taken by a model without file input", () => {
  const csv = { type: "file", file: { filename: "a.csv", file_data: "data:text/csv,a%2Cb" } };
  const body = { ...base, messages: [user([{ type: "text", text: "b" }, csv])] };
  checkAgainstModel(validateChatRequest(body), { ...MODEL, acceptsFiles: false });
  const zip = { type: "file", file: { file_data: "data:application/zip;base64,UEsDBA==" } };
  rejectsFor(
    { ...base, messages: [user([zip])] },
    { ...MODEL, acceptsFiles: false },
    "messages[0].content[0]: this model does not accept file input",
  );
});

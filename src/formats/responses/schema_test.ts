import assert from "node:assert/strict";
import { GatewayError } from "../../http/gateway_error.ts";
import { validateResponsesRequest } from "./schema.ts";

const CLIENTS = new URL("../../../../shared/fixtures/clients/", import.meta.url);
const exists = (u: URL) => {
  try {
    Deno.statSync(u);
    return true;
  } catch {
    return false;
  }
};

function rejects(body: unknown, message: RegExp): void {
  assert.throws(() => validateResponsesRequest(body), (e: unknown) => {
    assert.ok(e instanceof GatewayError);
    assert.equal(e.status, 400);
    assert.match(e.message, message);
    return true;
  });
}

const ok = { model: "openai/gpt-5-mini", input: "Hi" };

Deno.test("schema: previous_response_id is refused: the gateway is stateless", () => {
  rejects({ ...ok, previous_response_id: "resp_123" }, /previous_response_id.*stateless.*`input`/);
  rejects({ ...ok, conversation: "conv_1" }, /conversation.*stateless/);
  rejects({ ...ok, prompt: { id: "pmpt_1" } }, /prompt.*stored prompt template.*not supported/);
  rejects({ ...ok, background: true }, /background.*stateless/);
  rejects(
    { ...ok, input: [{ type: "item_reference", id: "msg_1" }] },
    /input\[0\]\.type.*stateless/,
  );
  validateResponsesRequest({ ...ok, previous_response_id: null, background: false });
});

Deno.test("schema: an item reference's refusal names the switch that sends the items", () => {
  // The Vercel AI SDK sends `item_reference` for earlier output items unless `store: false`.
  rejects(
    {
      ...ok,
      input: [
        { role: "user", content: [{ type: "input_text", text: "Weather?" }] },
        { type: "item_reference", id: "fc_1" },
        { type: "function_call_output", call_id: "call_1", output: "20C" },
      ],
    },
    /input\[1\]\.type.*`store: false`/,
  );
});

Deno.test("schema: store is accepted with any value", () => {
  for (const store of [true, false, null, "yes", 1]) validateResponsesRequest({ ...ok, store });
});

Deno.test("schema: validation failures name the field", () => {
  const cases: [unknown, RegExp][] = [
    [{ input: "x" }, /^model is required/],
    [{ ...ok, model: 5 }, /^model must be a string/],
    [{ ...ok, input: 5 }, /^input must be a string or an array/],
    [{ ...ok, input: [{ role: "robot", content: "x" }] }, /^input\[0\]\.role must be one of/],
    [
      { ...ok, input: [{ role: "user", content: [{ type: "input_text" }] }] },
      /^input\[0\]\.content\[0\]\.text is required/,
    ],
    [
      {
        ...ok,
        input: [{ role: "user", content: [{ type: "input_image", image_url: "ftp://x" }] }],
      },
      /^input\[0\]\.content\[0\]\.image_url must be an http\(s\) URL or a data: URL/,
    ],
    [
      { ...ok, input: [{ role: "user", content: [{ type: "input_image", detail: "auto" }] }] },
      /^input\[0\]\.content\[0\] needs image_url or file_id/,
    ],
    [
      { ...ok, input: [{ type: "function_call", call_id: "c", name: "f" }] },
      /^input\[0\]\.arguments is required/,
    ],
    [{ ...ok, input: [{ type: "function_call_output", output: "x" }] }, /^input\[0\]\.call_id/],
    [
      { ...ok, input: [{ type: "reasoning", summary: "x" }] },
      /^input\[0\]\.summary must be an array/,
    ],
    [{ ...ok, tools: [{ type: "function" }] }, /^tools\[0\]\.name is required/],
    [{ ...ok, tools: [{ name: "f" }] }, /^tools\[0\]\.type is required/],
    [{ ...ok, tools: [{ type: "namespace", name: "ns" }] }, /^tools\[0\]\.tools is required/],
    [
      { ...ok, tools: [{ type: "namespace", name: "ns", tools: [{ type: "function" }] }] },
      /^tools\[0\]\.tools\[0\]\.name is required/,
    ],
    [
      {
        ...ok,
        input: [{ type: "function_call", call_id: "c", name: "f", arguments: "{}", namespace: 1 }],
      },
      /^input\[0\]\.namespace must be a string/,
    ],
    [{ ...ok, tool_choice: "sometimes" }, /^tool_choice must be one of "auto", "none", "required"/],
    [{ ...ok, tool_choice: { type: "function" } }, /^tool_choice\.name is required/],
    [{ ...ok, temperature: -1 }, /^temperature must be between 0 and 2/],
    [{ ...ok, temperature: 2.5 }, /^temperature must be between 0 and 2/],
    [{ ...ok, top_p: 0 }, /^top_p must be greater than 0 and at most 1/],
    [{ ...ok, max_output_tokens: 0 }, /^max_output_tokens must be at least 1/],
    [{ ...ok, max_output_tokens: 1.5 }, /^max_output_tokens must be an integer/],
    [{ ...ok, parallel_tool_calls: "yes" }, /^parallel_tool_calls must be a boolean/],
    [{ ...ok, reasoning: { effort: "extreme" } }, /^reasoning\.effort must be one of/],
    [{ ...ok, text: { format: { type: "json_schema", name: "x" } } }, /^text\.format\.schema/],
    [{ ...ok, text: { format: { type: "xml" } } }, /^text\.format\.type must be one of/],
    [{ ...ok, include: "all" }, /^include must be an array/],
    [{ ...ok, stream: "true" }, /^stream must be a boolean/],
    [[ok], /^request body must be an object/],
  ];
  for (const [body, message] of cases) rejects(body, message);
});

Deno.test("schema: every documented input shape is accepted", () => {
  validateResponsesRequest({
    model: "openai/gpt-5-mini",
    instructions: "Be brief.",
    input: [
      { role: "system", content: "sys" },
      { role: "developer", content: [{ type: "input_text", text: "dev" }] },
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "look" },
          { type: "input_image", image_url: "https://example.com/a.png", detail: "high" },
          { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" },
          { type: "input_image", file_id: "file-1" },
          { type: "input_file", file_id: "file-2" },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "output_text", text: "ok", annotations: [] },
          { type: "refusal", refusal: "no" },
        ],
      },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "s" }],
        encrypted_content: "gAAAAA",
      },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}", id: "fc_1" },
      { type: "function_call_output", call_id: "c1", output: "done" },
      {
        type: "function_call_output",
        call_id: "c2",
        output: [{ type: "input_text", text: "t" }],
      },
      { type: "custom_tool_call", call_id: "c3", name: "apply_patch", input: "*** Begin Patch" },
      { type: "custom_tool_call_output", call_id: "c3", output: "applied" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search" } },
    ],
    tools: [
      {
        type: "function",
        name: "f",
        description: "d",
        parameters: { type: "object" },
        strict: true,
      },
      { type: "custom", name: "apply_patch", format: { type: "grammar", syntax: "lark" } },
      { type: "web_search" },
      { type: "web_search_preview" },
      { type: "mcp", server_label: "docs", server_url: "https://example.com/mcp" },
      { type: "local_shell" },
    ],
    tool_choice: { type: "function", name: "f" },
    parallel_tool_calls: false,
    max_output_tokens: 100,
    temperature: 0,
    top_p: 1,
    reasoning: { effort: "high", summary: "auto" },
    text: {
      format: { type: "json_schema", name: "x", schema: { type: "object" }, strict: true },
      verbosity: "low",
    },
    include: ["reasoning.encrypted_content"],
    metadata: { a: "b" },
    stream: true,
    store: true,
    prompt_cache_key: "k",
    service_tier: "auto",
    user: "u",
    truncation: "auto",
    client_metadata: { anything: true },
  });
  for (const tool_choice of ["auto", "none", "required", { type: "web_search" }]) {
    validateResponsesRequest({ ...ok, tool_choice });
  }
  validateResponsesRequest({ ...ok, instructions: null, temperature: null, text: {} });
});

Deno.test("schema: the recorded Codex CLI requests are valid", {
  ignore: !exists(new URL("codex/", CLIENTS)),
}, () => {
  for (const f of Deno.readDirSync(new URL("codex/", CLIENTS))) {
    if (!f.name.endsWith(".request.json")) continue;
    const rec = JSON.parse(Deno.readTextFileSync(new URL(`codex/${f.name}`, CLIENTS)));
    assert.equal(validateResponsesRequest(rec.body), rec.body, f.name);
  }
});

Deno.test("schema: the recorded SDK responses requests are valid", {
  ignore: !exists(new URL("sdks/requests.json", CLIENTS)),
}, () => {
  const recs = JSON.parse(Deno.readTextFileSync(new URL("sdks/requests.json", CLIENTS)));
  const bodies = recs.requests.filter((r: { path: string }) => r.path === "/v1/responses");
  assert.ok(bodies.length > 0);
  for (const r of bodies) validateResponsesRequest(r.body);
});

Deno.test("responses schema: a content part of no Responses type is refused, naming the types", () => {
  assert.throws(
    () =>
      validateResponsesRequest({
        model: "m",
        input: [{ role: "user", content: [{ type: "banana", text: "x" }] }],
      }),
    /input\[0\]\.content\[0\]\.type "banana" is not a content part type; use one of "input_text"/,
  );
  // The Responses API's other types go on as sent.
  validateResponsesRequest({
    model: "m",
    input: [{
      role: "user",
      content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }],
    }],
  });
});

Deno.test("validate: a tool choice may name only declared tools", () => {
  const base = {
    model: "openai/gpt-5",
    input: "hi",
    tools: [
      { type: "function", name: "f", parameters: { type: "object" } },
      { type: "web_search" },
    ],
  };
  validateResponsesRequest({ ...base, tool_choice: { type: "function", name: "f" } });
  validateResponsesRequest({
    ...base,
    tool_choice: {
      type: "allowed_tools",
      mode: "auto",
      tools: [{ type: "function", name: "f" }, { type: "web_search" }],
    },
  });
  rejects(
    { ...base, tool_choice: { type: "function", name: "g" } },
    /^tool_choice names the function tool "g", which is not among the request's tools$/,
  );
  rejects(
    {
      ...base,
      tool_choice: {
        type: "allowed_tools",
        mode: "required",
        tools: [{ type: "web_search" }, { type: "custom", name: "h" }],
      },
    },
    /^tool_choice\.tools\[1\] names the custom tool "h"/,
  );
});

Deno.test("responses schema: built-in tools billed apart from tokens are refused, naming the tool", () => {
  for (const tool of ["image_generation", "code_interpreter", "file_search"]) {
    assert.throws(
      () =>
        validateResponsesRequest({
          model: "openai/gpt-5.4",
          input: "x",
          tools: [{ type: "function", name: "f", parameters: { type: "object" } }, { type: tool }],
        }),
      (e: unknown) => {
        const err = e as { status: number; message: string };
        return err.status === 400 && err.message.startsWith(`tool ${tool} is not supported`);
      },
    );
  }
});

Deno.test("schema: Codex's efforts past xhigh (max, ultra) are taken as xhigh", () => {
  for (const effort of ["max", "ultra"]) {
    const body = validateResponsesRequest({
      model: "m",
      input: "hi",
      reasoning: { effort, summary: "auto" },
    });
    assert.deepEqual(body.reasoning, { effort: "xhigh", summary: "auto" });
  }
});

import assert from "node:assert/strict";
import { toInternal } from "./request.ts";
import { validateResponsesRequest } from "./schema.ts";
import { customInput, searchArguments, TOOL_NAME_MAX, ToolMap } from "./tools.ts";

const VALID = /^[a-zA-Z0-9_-]{1,64}$/;

const NAMESPACES = [
  {
    type: "namespace",
    name: "collaboration",
    description: "Tools for spawning agents",
    tools: [
      {
        type: "function",
        name: "spawn_agent",
        description: "Start a sub-agent",
        parameters: { type: "object", properties: { task_name: { type: "string" } } },
        strict: false,
      },
      { type: "function", name: "wait_agent", parameters: { type: "object" } },
    ],
  },
  {
    type: "namespace",
    name: "mcp__docs__",
    description: "",
    tools: [{ type: "function", name: "search", parameters: { type: "object" } }],
  },
];

Deno.test("ToolMap: namespace members become functions named <namespace>__<name>, and map back", () => {
  const body = validateResponsesRequest({
    model: "x",
    input: "hi",
    tools: [{ type: "function", name: "exec_command" }, ...NAMESPACES],
  });
  const map = new ToolMap(body);
  assert.deepEqual(map.tools.map((t) => t.name), [
    "exec_command",
    "collaboration__spawn_agent",
    "collaboration__wait_agent",
    "mcp__docs__search", // a namespace ending in "__" is joined as is (Codex's MCP naming)
  ]);
  assert.deepEqual(map.tools[1], {
    name: "collaboration__spawn_agent",
    description: "Start a sub-agent\n\nPart of collaboration: Tools for spawning agents",
    parameters: { type: "object", properties: { task_name: { type: "string" } } },
    strict: false,
  });
  assert.deepEqual(map.target("collaboration__spawn_agent"), {
    kind: "function",
    name: "spawn_agent",
    namespace: "collaboration",
  });
  assert.deepEqual(map.target("mcp__docs__search"), {
    kind: "function",
    name: "search",
    namespace: "mcp__docs__",
  });
  assert.deepEqual(map.target("exec_command"), { kind: "function", name: "exec_command" });
  assert.equal(map.target("unknown"), undefined);
  assert.equal(map.name("wait_agent", "collaboration"), "collaboration__wait_agent");
  assert.equal(map.name("exec_command"), "exec_command");
  assert.deepEqual(map.builtIns, []);
});

Deno.test("ToolMap: long, invalid and clashing names get a unique valid name that maps back", () => {
  const long = "x".repeat(60);
  const map = new ToolMap({
    model: "x",
    tools: [
      // The flattened name of the first member is this plain function's name: the plain one keeps it.
      { type: "namespace", name: "a", tools: [{ type: "function", name: "b" }] },
      { type: "function", name: "a__b" },
      { type: "namespace", name: long, tools: [{ type: "function", name: "tool_one" }] },
      { type: "namespace", name: "srv.v2", tools: [{ type: "custom", name: "run cmd" }] },
    ],
  });
  const names = map.tools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length, "unique");
  for (const n of names) assert.match(n, VALID);
  assert.equal(names[1], "a__b");
  assert.deepEqual(map.target("a__b"), { kind: "function", name: "a__b" });
  assert.notEqual(names[0], "a__b");
  assert.deepEqual(map.target(names[0]), { kind: "function", name: "b", namespace: "a" });
  assert.equal(names[2].length, TOOL_NAME_MAX);
  assert.deepEqual(map.target(names[2]), { kind: "function", name: "tool_one", namespace: long });
  assert.match(names[3], /^srv_v2__run_cmd$/);
  assert.deepEqual(map.target(names[3]), { kind: "custom", name: "run cmd", namespace: "srv.v2" });
  // The same body always gives the same names (the encoder rebuilds the map).
  const again = new ToolMap({
    model: "x",
    tools: [
      { type: "namespace", name: "a", tools: [{ type: "function", name: "b" }] },
      { type: "function", name: "a__b" },
      { type: "namespace", name: long, tools: [{ type: "function", name: "tool_one" }] },
      { type: "namespace", name: "srv.v2", tools: [{ type: "custom", name: "run cmd" }] },
    ],
  });
  assert.deepEqual(again.tools.map((t) => t.name), names);
});

Deno.test("ToolMap: a custom tool is a function of {input: string} quoting its grammar", () => {
  const map = new ToolMap({
    tools: [
      {
        type: "custom",
        name: "apply_patch",
        description: "Edit files.",
        format: { type: "grammar", syntax: "lark", definition: "start: line+" },
      },
      {
        type: "custom",
        name: "digits",
        format: { type: "grammar", syntax: "regex", definition: "^\\d+$" },
      },
      { type: "custom", name: "notes", format: { type: "text" } },
    ],
  });
  const [patch, digits, notes] = map.tools;
  assert.deepEqual(patch.parameters, {
    type: "object",
    properties: { input: { type: "string", description: "The tool's free-form input text." } },
    required: ["input"],
    additionalProperties: false,
  });
  assert.match(
    patch.description!,
    /^Edit files\.\n\nThis free-form tool is called as a function here/,
  );
  assert.match(patch.description!, /lark grammar:\nstart: line\+$/);
  assert.match(digits.description!, /regular expression:\n\^\\d\+\$$/);
  assert.match(notes.description!, /^This free-form tool is called as a function/);
  assert.deepEqual(map.target("apply_patch"), { kind: "custom", name: "apply_patch" });
});

Deno.test("customInput and searchArguments read what the model wrote", () => {
  assert.equal(
    customInput('{"input":"*** Begin Patch\\n*** End Patch\\n"}'),
    "*** Begin Patch\n*** End Patch\n",
  );
  assert.equal(customInput('{"q":"x"}'), '{"q":"x"}', "no input field: the text as written");
  assert.equal(customInput("raw text"), "raw text");
  assert.deepEqual(searchArguments('{"query":"slack","limit":3}'), { query: "slack", limit: 3 });
  assert.deepEqual(searchArguments('{"query":'), {});
  assert.deepEqual(searchArguments("[1]"), {});
});

Deno.test("toInternal: namespaced and custom calls in the history use the internal names", () => {
  const req = toInternal(
    validateResponsesRequest({
      model: "x",
      tools: NAMESPACES,
      tool_choice: { type: "function", name: "spawn_agent", namespace: "collaboration" },
      input: [
        { role: "user", content: "go" },
        {
          type: "function_call",
          call_id: "c1",
          namespace: "collaboration",
          name: "spawn_agent",
          arguments: '{"task_name":"t"}',
        },
        { type: "custom_tool_call", call_id: "c2", name: "apply_patch", input: "*** Begin Patch" },
        { type: "function_call_output", call_id: "c1", output: "spawned" },
        { type: "custom_tool_call_output", call_id: "c2", output: "Done!" },
      ],
    }),
    "a/b",
  );
  assert.deepEqual(req.toolChoice, { type: "tool", name: "collaboration__spawn_agent" });
  assert.deepEqual(req.messages.slice(1), [
    {
      role: "assistant",
      parts: [
        {
          type: "tool_call",
          id: "c1",
          name: "collaboration__spawn_agent",
          arguments: '{"task_name":"t"}',
        },
        {
          type: "tool_call",
          id: "c2",
          name: "apply_patch",
          arguments: '{"input":"*** Begin Patch"}',
        },
      ],
    },
    {
      role: "user",
      parts: [
        { type: "tool_result", callId: "c1", content: [{ type: "text", text: "spawned" }] },
        { type: "tool_result", callId: "c2", content: [{ type: "text", text: "Done!" }] },
      ],
    },
  ]);
});

Deno.test("toInternal: a client-run tool search is a function; the tools it loaded join the tools", () => {
  const body = validateResponsesRequest({
    model: "x",
    tools: [
      {
        type: "tool_search",
        execution: "client",
        description: "Find deferred tools.",
        parameters: { type: "object", properties: { query: { type: "string" } } },
      },
    ],
    input: [
      { role: "user", content: "post to slack" },
      {
        type: "tool_search_call",
        call_id: "ts1",
        execution: "client",
        arguments: { query: "slack" },
        status: "completed",
      },
      {
        type: "tool_search_output",
        call_id: "ts1",
        execution: "client",
        status: "completed",
        tools: [{
          type: "namespace",
          name: "mcp__slack__",
          description: "Slack",
          tools: [{
            type: "function",
            name: "post",
            parameters: { type: "object" },
            defer_loading: true,
          }],
        }],
      },
    ],
  });
  const req = toInternal(body, "a/b");
  assert.deepEqual(req.tools!.map((t) => t.name), ["tool_search", "mcp__slack__post"]);
  assert.equal(req.tools![0].description, "Find deferred tools.");
  assert.deepEqual(req.messages.slice(1), [
    {
      role: "assistant",
      parts: [{
        type: "tool_call",
        id: "ts1",
        name: "tool_search",
        arguments: '{"query":"slack"}',
      }],
    },
    {
      role: "user",
      parts: [{
        type: "tool_result",
        callId: "ts1",
        content: [{
          type: "text",
          text: "Loaded 1 tool, now available to call: mcp__slack__post",
        }],
      }],
    },
  ]);
});

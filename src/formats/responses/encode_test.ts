import assert from "node:assert/strict";
import type { Event } from "../../events/event.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import type { EncodeContext } from "../codec.ts";
import { createResponsesDecoder } from "./decode.ts";
import { createResponsesEncoder, encodeResponsesBody } from "./encode.ts";
import {
  assertWellFormed,
  decodeStream,
  fakeCost,
  frames,
  readGolden,
  toGolden,
} from "./test_helpers.ts";
import { isSealedReasoning, openSealedReasoning } from "./sealed_reasoning.ts";

const FIXTURES = new URL("../../../tests/fixtures/openai-responses/", import.meta.url);
const ctx: EncodeContext = {
  id: "gen_7f3a",
  model: "openai/gpt-5-mini",
  created: 1767225600,
  clientBody: { model: "openai/gpt-5-mini", instructions: "Be brief.", tools: [], stream: true },
};
const cost0 = fakeCost({ input: 10, output: 3, cacheRead: 0, reasoning: 0 });

function encodeAll(events: Event[], cost = cost0, c = ctx): string {
  const enc = createResponsesEncoder(c);
  let out = "";
  for (const e of events) out += enc.event(e);
  return out + enc.event({ type: "cost", cost });
}

const TEXT: Event[] = [
  { type: "response_start", id: "up_1" },
  { type: "text_start" },
  { type: "text_delta", delta: "Hel" },
  { type: "text_delta", delta: "lo" },
  { type: "text_end" },
  { type: "usage", usage: { input: 10, output: 3 } },
  { type: "finish", reason: "stop" },
];

Deno.test("encoder: a text answer comes in the API's event order with increasing sequence numbers", () => {
  const fs = frames(encodeAll(TEXT));
  assert.deepEqual(fs.map(([name]) => name), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  fs.forEach(([name, data], i) => {
    assert.equal(data.type, name, "event name equals the payload type");
    assert.equal(data.sequence_number, i);
  });
  const created = fs[0][1].response as Record<string, unknown>;
  assert.equal(created.id, "gen_7f3a");
  assert.equal(created.model, "openai/gpt-5-mini");
  assert.equal(created.status, "in_progress");
  assert.equal(created.instructions, "Be brief.");
  assert.deepEqual(created.output, []);
  const added = fs[2][1].item as Record<string, unknown>;
  assert.equal(added.type, "message");
  assert.equal(added.status, "in_progress");
  assert.match(String(added.id), /^msg_/);
  assert.deepEqual(fs[6][1].text, "Hello");
});

Deno.test("encoder: response.completed carries the final object with usage, cost and output_text", () => {
  const fs = frames(encodeAll(TEXT));
  const r = fs.at(-1)![1].response as Record<string, unknown>;
  assert.equal(r.status, "completed");
  assert.equal(r.output_text, "Hello");
  assert.equal(r.store, false);
  assert.deepEqual(r.output, [{
    id: "msg_7f3a_0",
    type: "message",
    status: "completed",
    content: [{ type: "output_text", annotations: [], logprobs: [], text: "Hello" }],
    role: "assistant",
  }]);
  assert.deepEqual(r.usage, {
    input_tokens: 10,
    // Both required by the SDKs' Response type, so written when 0.
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: 3,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 13,
    cost: cost0.cost,
    cost_details: cost0.details,
  });
});

Deno.test("encoder: a billed cache write is reported beside the cached tokens", () => {
  const cost = fakeCost({ input: 5_000, output: 3, cacheRead: 1_000, cacheWrite: 3_500 });
  const r = frames(encodeAll(TEXT, cost)).at(-1)![1].response as {
    usage: { input_tokens_details: unknown };
  };
  assert.deepEqual(r.usage.input_tokens_details, {
    cached_tokens: 1_000,
    cache_write_tokens: 3_500,
  });
});

Deno.test("encoder: the non-streaming body is the stream's final response object", () => {
  const fs = frames(encodeAll(TEXT));
  assert.deepEqual(encodeResponsesBody(TEXT, cost0, ctx), fs.at(-1)![1].response);
});

for (const name of ["text", "function-call", "reasoning", "incomplete"]) {
  Deno.test(`encoder → decoder round trip gives back the events of ${name}`, () => {
    const golden = readGolden(new URL(`${name}.events.jsonl`, FIXTURES)) as Event[];
    const usage = golden.find((e) => e.type === "usage")!;
    const cost = fakeCost(usage.type === "usage" ? usage.usage : {});
    const wire = encodeAll(golden, cost);
    const back = decodeStream(createResponsesDecoder(), new TextEncoder().encode(wire), "bytes");
    assertWellFormed(back);
    // The gateway's own `usage.cost` reads back as an upstream-reported cost: drop it.
    for (const e of back) if (e.type === "usage") delete e.usage.costUsd;
    // The wire always carries `cache_write_tokens`: a write not reported reads back as 0.
    const expected = golden.map((e) =>
      e.type === "response_start"
        ? { type: "response_start", id: ctx.id, model: ctx.model }
        : e.type === "usage"
        ? { ...e, usage: { ...e.usage, cacheWrite: e.usage.cacheWrite ?? 0 } }
        : e
    );
    assert.deepEqual(toGolden(back), expected);
  });
}

for (const name of ["failed", "cut"]) {
  Deno.test(`encoder: ${name} ends in an error frame and response.failed`, () => {
    const golden = readGolden(new URL(`${name}.events.jsonl`, FIXTURES)) as unknown[];
    const events = golden.map((e) => {
      const g = e as { type: string; error?: { status: number; message: string } };
      return g.type === "error"
        ? { type: "error", error: new GatewayError(g.error!.status, g.error!.message) }
        : e;
    }) as Event[];
    const enc = createResponsesEncoder(ctx);
    let out = "";
    for (const e of events) {
      const s = enc.event(e);
      if (e.type === "error") assert.equal(s, "", "nothing is written for the error itself");
      out += s;
    }
    out += enc.event({ type: "cost", cost: cost0 });
    const fs = frames(out);
    fs.forEach(([, d], i) => assert.equal(d.sequence_number, i));
    const [errName, errData] = fs.at(-2)!;
    assert.equal(errName, "error");
    const err = golden.find((e) => (e as { type: string }).type === "error") as {
      error: { status: number; message: string };
    };
    assert.deepEqual(errData.error, {
      code: err.error.status,
      message: err.error.message,
      metadata: {},
    });
    // OpenAI's own fields of the event, at its top level.
    assert.deepEqual([errData.code, errData.message, errData.param], [
      "server_error",
      err.error.message,
      null,
    ]);
    const [failName, failData] = fs.at(-1)!;
    assert.equal(failName, "response.failed");
    const r = failData.response as Record<string, unknown>;
    assert.equal(r.status, "failed");
    assert.deepEqual(r.error, { code: "server_error", message: err.error.message });
    assert.equal((r.usage as Record<string, unknown>).cost, cost0.cost);
    for (const item of r.output as Record<string, unknown>[]) {
      assert.equal(item.status, "incomplete");
    }
  });
}

Deno.test("encoder: an error before anything still opens the stream, then fails it", () => {
  const enc = createResponsesEncoder(ctx);
  assert.equal(enc.event({ type: "error", error: new GatewayError(429, "slow down") }), "");
  const fs = frames(enc.event({ type: "cost", cost: cost0 }));
  assert.deepEqual(fs.map(([n]) => n), [
    "response.created",
    "response.in_progress",
    "error",
    "response.failed",
  ]);
  assert.deepEqual((fs[3][1].response as Record<string, unknown>).error, {
    code: "rate_limit_exceeded",
    message: "slow down. Please try again in 5s.", // the wait, where Codex reads it
  });
});

Deno.test("encoder: reasoning becomes a reasoning item with its summary and encrypted content", () => {
  const fs = frames(encodeAll([
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "Think" },
    { type: "reasoning_signature", signature: "sig-from-another-vendor" },
    { type: "reasoning_redacted", data: "EmwKAhgBEgy3" },
    { type: "reasoning_end" },
    { type: "finish", reason: "stop" },
  ]));
  assert.deepEqual(fs.map(([n]) => n), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  const item = fs[7][1].item as Record<string, unknown>;
  assert.deepEqual({ ...item, encrypted_content: undefined }, {
    id: "rs_7f3a_0",
    type: "reasoning",
    summary: [{ type: "summary_text", text: "Think" }],
    encrypted_content: undefined,
  });
  // Another vendor's opaque reasoning, sealed: never sent on to a responses upstream as is.
  assert.deepEqual(openSealedReasoning(item.encrypted_content as string), {
    text: "Think",
    redacted: "EmwKAhgBEgy3",
  });
  assert.doesNotMatch(JSON.stringify(fs), /sig-from-another-vendor/);
});

Deno.test("encoder: a signed thinking block travels sealed in encrypted_content", () => {
  const events: Event[] = [
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "Think " },
    { type: "reasoning_delta", delta: "twice" },
    { type: "reasoning_signature", signature: "EqSIGNATURE==" },
    { type: "reasoning_end" },
    { type: "finish", reason: "stop" },
  ];
  const fs = frames(encodeAll(events));
  const item = fs.find(([n]) => n === "response.output_item.done")![1].item as Record<
    string,
    unknown
  >;
  assert.deepEqual(item.summary, [{ type: "summary_text", text: "Think twice" }]);
  assert.ok(isSealedReasoning(item.encrypted_content));
  assert.deepEqual(openSealedReasoning(item.encrypted_content as string), {
    text: "Think twice",
    signature: "EqSIGNATURE==",
  });
  const body = encodeResponsesBody(events, cost0, ctx) as Record<string, unknown>;
  assert.deepEqual((body.output as Record<string, unknown>[])[0], item);
});

Deno.test("encoder: a search the upstream ran is a completed web_search_call item before the answer", () => {
  const events: Event[] = [
    { type: "web_search", id: "srvtoolu_1", query: "deno 2.9" },
    ...TEXT,
  ];
  const fs = frames(encodeAll(events));
  assert.deepEqual(fs.slice(2, 8).map(([n, d]) => [n, d.output_index]), [
    ["response.output_item.added", 0],
    ["response.web_search_call.in_progress", 0],
    ["response.web_search_call.searching", 0],
    ["response.web_search_call.completed", 0],
    ["response.output_item.done", 0],
    ["response.output_item.added", 1],
  ]);
  const item = {
    id: "ws_7f3a_0",
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: "deno 2.9" },
  };
  assert.deepEqual(fs[2][1].item, { ...item, status: "in_progress" });
  assert.equal(fs[3][1].item_id, item.id);
  assert.deepEqual(fs[6][1].item, item);
  const done = fs.at(-1)![1].response as Record<string, unknown>;
  assert.deepEqual((done.output as unknown[])[0], item);
  assert.equal(done.output_text, "Hello");
  const body = encodeResponsesBody(events, cost0, ctx) as Record<string, unknown>;
  assert.deepEqual((body.output as unknown[])[0], item);
});

Deno.test("encoder: consecutive text blocks are one message; a block after a tool call is another", () => {
  const block = (t: string): Event[] => [
    { type: "text_start" },
    { type: "text_delta", delta: t },
    { type: "text_end" },
  ];
  const fs = frames(encodeAll([
    ...block("According to the docs, "),
    ...block("it is out."),
    { type: "tool_call_start", index: 0, id: "call_a", name: "f" },
    { type: "tool_call_delta", index: 0, json: "{}" },
    { type: "tool_call_end", index: 0 },
    ...block("Then more."),
    { type: "finish", reason: "stop" },
  ]));
  const done = fs.filter(([n]) => n === "response.output_item.done").map(([, d]) =>
    d.item as Record<string, unknown>
  );
  assert.deepEqual(done.map((i) => i.type), ["message", "function_call", "message"]);
  assert.deepEqual((done[0].content as Record<string, unknown>[]).map((p) => p.text), [
    "According to the docs, it is out.",
  ]);
  assert.equal(fs.filter(([n]) => n === "response.content_part.added").length, 2);
  const final = fs.at(-1)![1].response as Record<string, unknown>;
  assert.equal(final.output_text, "According to the docs, it is out.Then more.");
});

Deno.test("encoder: interleaved parallel tool calls come out one item at a time, in start order", () => {
  const fs = frames(encodeAll([
    { type: "tool_call_start", index: 0, id: "call_a", name: "f" },
    { type: "tool_call_start", index: 1, id: "call_b", name: "g" },
    { type: "tool_call_delta", index: 1, json: '{"b"' },
    { type: "tool_call_delta", index: 0, json: '{"a"' },
    { type: "tool_call_delta", index: 1, json: ":1}" },
    { type: "tool_call_delta", index: 0, json: ":2}" },
    { type: "tool_call_end", index: 1 },
    { type: "tool_call_end", index: 0 },
    { type: "finish", reason: "tool_calls" },
  ]));
  const items = fs.slice(2, -1).map(([n, d]) => [n, d.output_index, d.delta ?? d.arguments]);
  assert.deepEqual(items, [
    ["response.output_item.added", 0, undefined],
    ["response.function_call_arguments.delta", 0, '{"a"'],
    ["response.function_call_arguments.delta", 0, ":2}"],
    ["response.function_call_arguments.done", 0, '{"a":2}'],
    ["response.output_item.done", 0, undefined],
    ["response.output_item.added", 1, undefined],
    ["response.function_call_arguments.delta", 1, '{"b":1}'],
    ["response.function_call_arguments.done", 1, '{"b":1}'],
    ["response.output_item.done", 1, undefined],
  ]);
  const r = fs.at(-1)![1].response as { output: Record<string, unknown>[]; status: string };
  assert.equal(r.status, "completed");
  assert.deepEqual(r.output.map((i) => [i.call_id, i.name, i.arguments, i.status]), [
    ["call_a", "f", '{"a":2}', "completed"],
    ["call_b", "g", '{"b":1}', "completed"],
  ]);
});

Deno.test("encoder: a length finish ends in response.incomplete", () => {
  const events: Event[] = [...TEXT.slice(0, -1), { type: "finish", reason: "length" }];
  const [name, data] = frames(encodeAll(events)).at(-1)!;
  assert.equal(name, "response.incomplete");
  const r = data.response as Record<string, unknown>;
  assert.equal(r.status, "incomplete");
  assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
  const body = encodeResponsesBody(events, cost0, ctx) as Record<string, unknown>;
  assert.equal(body.status, "incomplete");
});

Deno.test("encoder: the body of a failed call is a failed response object", () => {
  const body = encodeResponsesBody(
    [{ type: "response_start" }, { type: "error", error: new GatewayError(502, "provider down") }],
    cost0,
    ctx,
  ) as Record<string, unknown>;
  assert.equal(body.status, "failed");
  assert.deepEqual(body.error, { code: "server_error", message: "provider down" });
});

Deno.test("encoder: a finish of `error` without an error event still fails the response", () => {
  const events: Event[] = [...TEXT.slice(0, -1), { type: "finish", reason: "error" }];
  const fs = frames(encodeAll(events));
  assert.deepEqual(fs.slice(-2).map(([n]) => n), ["error", "response.failed"]);
});

// ---- calls mapped back to the client's tools (tools.ts) ----------------------------------------

const codexCtx: EncodeContext = {
  ...ctx,
  clientBody: {
    model: "anthropic/claude-sonnet-4.5",
    stream: true,
    tools: [
      { type: "function", name: "exec_command", parameters: { type: "object" } },
      {
        type: "custom",
        name: "apply_patch",
        format: { type: "grammar", syntax: "lark", definition: "start: x" },
      },
      { type: "tool_search", execution: "client", parameters: { type: "object" } },
      {
        type: "namespace",
        name: "collaboration",
        description: "Agents",
        tools: [{ type: "function", name: "spawn_agent", parameters: { type: "object" } }],
      },
    ],
  },
};

const MAPPED_CALLS: Event[] = [
  { type: "response_start", id: "up_1" },
  { type: "tool_call_start", index: 0, id: "call_ns", name: "collaboration__spawn_agent" },
  { type: "tool_call_delta", index: 0, json: '{"task_name"' },
  { type: "tool_call_delta", index: 0, json: ':"probe"}' },
  { type: "tool_call_end", index: 0 },
  { type: "tool_call_start", index: 1, id: "call_patch", name: "apply_patch" },
  { type: "tool_call_delta", index: 1, json: '{"input":"*** Begin' },
  { type: "tool_call_delta", index: 1, json: ' Patch\\n*** End Patch\\n"}' },
  { type: "tool_call_end", index: 1 },
  { type: "tool_call_start", index: 2, id: "call_ts", name: "tool_search" },
  { type: "tool_call_delta", index: 2, json: '{"query":"slack"}' },
  { type: "tool_call_end", index: 2 },
  { type: "tool_call_start", index: 3, id: "call_plain", name: "exec_command" },
  { type: "tool_call_delta", index: 3, json: '{"cmd":"ls"}' },
  { type: "tool_call_end", index: 3 },
  { type: "finish", reason: "tool_calls" },
];

Deno.test("encoder: calls come back as the client's namespaced, custom and tool-search items", () => {
  assertWellFormed(MAPPED_CALLS);
  const fs = frames(encodeAll(MAPPED_CALLS, cost0, codexCtx));
  const seqs = fs.map(([, d]) => d.sequence_number);
  assert.deepEqual(seqs, seqs.map((_, i) => i));
  const middle = fs.slice(2, -1).map(([n, d]) => [n, d.output_index, d.delta ?? d.input]);
  assert.deepEqual(middle, [
    ["response.output_item.added", 0, undefined],
    ["response.function_call_arguments.delta", 0, '{"task_name"'],
    ["response.function_call_arguments.delta", 0, ':"probe"}'],
    ["response.function_call_arguments.done", 0, undefined],
    ["response.output_item.done", 0, undefined],
    ["response.output_item.added", 1, undefined],
    ["response.custom_tool_call_input.delta", 1, "*** Begin Patch\n*** End Patch\n"],
    ["response.custom_tool_call_input.done", 1, "*** Begin Patch\n*** End Patch\n"],
    ["response.output_item.done", 1, undefined],
    ["response.output_item.added", 2, undefined],
    ["response.output_item.done", 2, undefined],
    ["response.output_item.added", 3, undefined],
    ["response.function_call_arguments.delta", 3, '{"cmd":"ls"}'],
    ["response.function_call_arguments.done", 3, undefined],
    ["response.output_item.done", 3, undefined],
  ]);
  const added = fs.filter(([n]) => n === "response.output_item.added").map(([, d]) => d.item);
  assert.deepEqual(added[1], {
    id: "ctc_7f3a_1",
    type: "custom_tool_call",
    status: "in_progress",
    call_id: "call_patch",
    name: "apply_patch",
    input: "",
  });
  const [name, data] = fs.at(-1)!;
  assert.equal(name, "response.completed");
  const output = (data.response as { output: unknown[] }).output;
  assert.deepEqual(output, [
    {
      id: "fc_7f3a_0",
      type: "function_call",
      status: "completed",
      arguments: '{"task_name":"probe"}',
      call_id: "call_ns",
      namespace: "collaboration",
      name: "spawn_agent",
    },
    {
      id: "ctc_7f3a_1",
      type: "custom_tool_call",
      status: "completed",
      call_id: "call_patch",
      name: "apply_patch",
      input: "*** Begin Patch\n*** End Patch\n",
    },
    {
      id: "tsc_7f3a_2",
      type: "tool_search_call",
      status: "completed",
      call_id: "call_ts",
      execution: "client",
      arguments: { query: "slack" },
    },
    {
      id: "fc_7f3a_3",
      type: "function_call",
      status: "completed",
      arguments: '{"cmd":"ls"}',
      call_id: "call_plain",
      name: "exec_command",
    },
  ]);
  // Item done events carry the same items as the final output.
  const done = fs.filter(([n]) => n === "response.output_item.done").map(([, d]) => d.item);
  assert.deepEqual(done, output);
  // The non-streaming body is the same response.
  const body = encodeResponsesBody(MAPPED_CALLS, cost0, codexCtx) as { output: unknown[] };
  assert.deepEqual(body.output, output);
});

Deno.test("encoder: without the client's tools a call stays a function call under its own name", () => {
  const fs = frames(encodeAll(MAPPED_CALLS.slice(0, 9).concat(MAPPED_CALLS.at(-1)!)));
  const output = (fs.at(-1)![1].response as { output: Record<string, unknown>[] }).output;
  assert.deepEqual(output.map((i) => [i.type, i.name, i.namespace]), [
    ["function_call", "collaboration__spawn_agent", undefined],
    ["function_call", "apply_patch", undefined],
  ]);
});

Deno.test("encoder: a custom call cut by an error stays incomplete with the input so far", () => {
  const fs = frames(encodeAll(
    [
      { type: "response_start", id: "up_1" },
      { type: "tool_call_start", index: 0, id: "call_patch", name: "apply_patch" },
      { type: "tool_call_delta", index: 0, json: '{"input":"*** Beg' },
      { type: "error", error: new GatewayError(502, "cut") },
    ],
    cost0,
    codexCtx,
  ));
  assert.deepEqual(fs.map(([n]) => n), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "error",
    "response.failed",
  ]);
  const output = (fs.at(-1)![1].response as { output: Record<string, unknown>[] }).output;
  assert.equal(output[0].type, "custom_tool_call");
  assert.equal(output[0].status, "incomplete");
  assert.equal(output[0].input, '{"input":"*** Beg', "unparsable so far: the text as it came");
});

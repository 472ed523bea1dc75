import assert from "node:assert/strict";
import type { Event } from "../../events/event.ts";
import { createResponsesDecoder, decodeResponsesBody } from "./decode.ts";
import { assertWellFormed, CUTS, decodeStream, readGolden, toGolden } from "./test_helpers.ts";

const FIXTURES = new URL("../../../tests/fixtures/openai-responses/", import.meta.url);
const fixture = (name: string) => new URL(name, FIXTURES);
const enc = new TextEncoder();

const STREAMS = [
  "text",
  "function-call",
  "reasoning",
  "failed",
  "cut",
  "incomplete",
  "quota-error",
];

const decode = (text: string) => decodeStream(createResponsesDecoder(), enc.encode(text), "whole");

for (const name of STREAMS) {
  Deno.test(`decoder: ${name}.sse gives its golden events whole, line by line and byte by byte`, () => {
    const bytes = Deno.readFileSync(fixture(`${name}.sse`));
    const golden = readGolden(fixture(`${name}.events.jsonl`));
    for (const cut of CUTS) {
      const events = decodeStream(createResponsesDecoder(), bytes, cut);
      assert.deepEqual(toGolden(events), golden, `cut: ${cut}`);
      assertWellFormed(events);
    }
  });
}

Deno.test("decoder: streams without `event:` lines and with CRLF give the same events", () => {
  const text = Deno.readTextFileSync(fixture("function-call.sse"));
  const golden = readGolden(fixture("function-call.events.jsonl"));
  const dataOnly = text.replace(/^event: .*\n/gm, "");
  assert.deepEqual(toGolden(decode(dataOnly)), golden);
  assert.deepEqual(toGolden(decode(text.replaceAll("\n", "\r\n"))), golden);
});

Deno.test("decoder: unknown events, comments and [DONE] are skipped", () => {
  const text = Deno.readTextFileSync(fixture("text.sse"));
  const noisy = ": keep-alive\n\n" +
    text.replace(
      "event: response.content_part.added",
      'event: response.web_search_call.searching\ndata: {"type":"response.web_search_call.searching","output_index":0}\n\n' +
        'event: response.future_thing\ndata: {"type":"response.future_thing","x":[1,2]}\n\n' +
        "event: response.content_part.added",
    ) + "data: [DONE]\n\n";
  assert.deepEqual(toGolden(decode(noisy)), readGolden(fixture("text.events.jsonl")));
});

Deno.test("decoder: a whole-body answer gives its golden events", () => {
  const body = JSON.parse(Deno.readTextFileSync(fixture("body-reasoning-call.json")));
  const events: Event[] = [];
  decodeResponsesBody(body, (e) => events.push(e));
  assert.deepEqual(toGolden(events), readGolden(fixture("body-reasoning-call.events.jsonl")));
  assertWellFormed(events);
});

Deno.test("decoder: body and stream of one response give the same events", () => {
  const stream = decode(Deno.readTextFileSync(fixture("reasoning.sse")));
  const completed = Deno.readTextFileSync(fixture("reasoning.sse")).split("\n\n").find((f) =>
    f.startsWith("event: response.completed")
  )!;
  const body = JSON.parse(completed.slice(completed.indexOf("data: ") + 6)).response;
  const events: Event[] = [];
  decodeResponsesBody(body, (e) => events.push(e));
  // The stream gives reasoning and text in deltas, the body in one delta each.
  const joined = (es: Event[]) => {
    const out: Event[] = [];
    for (const e of es) {
      const last = out[out.length - 1];
      if (e.type === "text_delta" && last?.type === "text_delta") last.delta += e.delta;
      else if (e.type === "reasoning_delta" && last?.type === "reasoning_delta") {
        last.delta += e.delta;
      } else out.push({ ...e });
    }
    return out;
  };
  assert.deepEqual(joined(events), joined(stream));
});

Deno.test("decoder: items sent only whole in `.done` are read from the item", () => {
  const events = decode([
    frame({ type: "response.created", response: { id: "resp_1", model: "m" } }),
    frame({
      type: "response.output_item.done",
      output_index: 0,
      item: { type: "reasoning", summary: [{ type: "summary_text", text: "hm" }] },
    }),
    frame({
      type: "response.output_item.done",
      output_index: 1,
      item: { type: "message", content: [{ type: "output_text", text: "hi" }] },
    }),
    frame({
      type: "response.output_item.added",
      output_index: 2,
      item: { type: "function_call", call_id: "c1", name: "f", arguments: "" },
    }),
    frame({
      type: "response.output_item.done",
      output_index: 2,
      item: { type: "function_call", call_id: "c1", name: "f", arguments: '{"a":1}' },
    }),
    frame({ type: "response.completed", response: { status: "completed", usage: null } }),
  ].join(""));
  assert.deepEqual(events, [
    { type: "response_start", id: "resp_1", model: "m" },
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "hm" },
    { type: "reasoning_end" },
    { type: "text_start" },
    { type: "text_delta", delta: "hi" },
    { type: "text_end" },
    { type: "tool_call_start", index: 0, id: "c1", name: "f" },
    { type: "tool_call_delta", index: 0, json: '{"a":1}' },
    { type: "tool_call_end", index: 0 },
    { type: "finish", reason: "tool_calls" },
  ]);
  assertWellFormed(events);
});

Deno.test("decoder: refusals read as text, custom tool input as a tool call", () => {
  const events = decode([
    frame({
      type: "response.output_item.added",
      output_index: 0,
      item: { type: "message", content: [] },
    }),
    frame({ type: "response.refusal.delta", output_index: 0, delta: "I can't" }),
    frame({ type: "response.refusal.done", output_index: 0, refusal: "I can't" }),
    frame({
      type: "response.output_item.added",
      output_index: 1,
      item: { type: "custom_tool_call", call_id: "c9", name: "apply_patch", input: "" },
    }),
    frame({ type: "response.custom_tool_call_input.delta", output_index: 1, delta: "*** Begin" }),
    frame({
      type: "response.output_item.done",
      output_index: 1,
      item: { type: "custom_tool_call", call_id: "c9", name: "apply_patch", input: "*** Begin" },
    }),
    frame({
      type: "response.incomplete",
      response: { status: "incomplete", incomplete_details: { reason: "content_filter" } },
    }),
  ].join(""));
  assert.deepEqual(events.map((e) => e.type), [
    "response_start",
    "text_start",
    "text_delta",
    "text_end",
    "tool_call_start",
    "tool_call_delta",
    "tool_call_delta", // the closing of the input's JSON form
    "tool_call_end",
    "finish",
  ]);
  assert.deepEqual(events.at(-1), { type: "finish", reason: "content_filter" });
  assertWellFormed(events);
});

Deno.test("decoder: an unreadable event is an error and ends the stream", () => {
  const events = decode(
    frame({ type: "response.created", response: { id: "r" } }) + "data: {not json\n\n" +
      frame({ type: "response.completed", response: { status: "completed" } }),
  );
  assert.equal(events.at(-1)?.type, "error");
  assert.equal(events.filter((e) => e.type === "finish").length, 0);
  assertWellFormed(events);
});

Deno.test("decoder: an old-style error event (code at top level) is mapped by its code", () => {
  const events = decode(
    frame({ type: "error", code: "rate_limit_exceeded", message: "Slow down", param: null }),
  );
  const last = events.at(-1)!;
  assert.equal(last.type, "error");
  if (last.type === "error") {
    assert.equal(last.error.status, 429);
    assert.equal(last.error.message, "Slow down");
  }
});

Deno.test("decoder: a failed body is an error event", () => {
  const events: Event[] = [];
  decodeResponsesBody({
    id: "resp_x",
    status: "failed",
    error: { code: "server_error", message: "boom" },
    output: [],
    usage: null,
  }, (e) => events.push(e));
  assert.deepEqual(toGolden(events), [
    { type: "response_start", id: "resp_x" },
    { type: "error", error: { status: 502, message: "boom" } },
  ]);
});

function frame(data: Record<string, unknown>): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

Deno.test("decoder: each web_search_call item of the finished response is a web search in its usage", () => {
  const search = (id: string) => ({
    id,
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: "tallinn" },
  });
  const response = {
    id: "resp_1",
    object: "response",
    status: "completed",
    model: "gpt-5-mini",
    output: [
      search("ws_1"),
      search("ws_2"),
      {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "Tallinn." }],
      },
    ],
    usage: { input_tokens: 10, output_tokens: 2 },
  };
  const usageOf = (events: Event[]) =>
    events.filter((e) => e.type === "usage").map((e) => e.type === "usage" && e.usage);
  const whole: Event[] = [];
  decodeResponsesBody(response, (e) => whole.push(e));
  assert.deepEqual(usageOf(whole), [{ input: 10, output: 2, webSearches: 2 }]);
  const streamed = decode(
    `event: response.created\ndata: ${
      JSON.stringify({
        type: "response.created",
        response: { ...response, status: "in_progress", output: [], usage: null },
      })
    }\n\n` +
      `event: response.completed\ndata: ${
        JSON.stringify({ type: "response.completed", response })
      }\n\n`,
  );
  assert.deepEqual(usageOf(streamed), [{ input: 10, output: 2, webSearches: 2 }]);
  // No searches: the usage is as reported.
  const plain: Event[] = [];
  decodeResponsesBody({ ...response, output: response.output.slice(2) }, (e) => plain.push(e));
  assert.deepEqual(usageOf(plain), [{ input: 10, output: 2 }]);
});

Deno.test("decoder: the usage of a response.failed after an error event is kept; nothing else", () => {
  const events = decode(
    frame({ type: "response.created", response: { id: "resp_e", model: "gpt-5" } }) +
      frame({ type: "error", code: "server_error", message: "boom" }) +
      frame({ type: "response.output_text.delta", output_index: 0, delta: "late" }) +
      frame({
        type: "response.failed",
        response: {
          id: "resp_e",
          status: "failed",
          usage: { input_tokens: 1000, output_tokens: 2000 },
        },
      }),
  );
  assert.deepEqual(events.map((e) => e.type), ["response_start", "error", "usage"]);
  assert.deepEqual((events[2] as { usage: unknown }).usage, { input: 1000, output: 2000 });
});

Deno.test("decoder: a message whose text part stayed empty is one block at most, and an empty body none", () => {
  const stream = (text: string) =>
    decode([
      frame({ type: "response.created", response: { id: "resp_1", model: "m" } }),
      frame({
        type: "response.output_item.added",
        output_index: 0,
        item: { type: "message", content: [] },
      }),
      frame({
        type: "response.content_part.added",
        output_index: 0,
        part: { type: "output_text", text: "" },
      }),
      frame({
        type: "response.output_item.done",
        output_index: 0,
        item: { type: "message", content: [{ type: "output_text", text }] },
      }),
      frame({ type: "response.completed", response: { status: "completed", usage: null } }),
    ].join("")).filter((e) => (e as { type: string }).type.startsWith("text"));
  const starts = (events: unknown[]) =>
    events.filter((e) => (e as { type: string }).type === "text_start").length;
  assert.equal(starts(stream("")), 1);
  // Text that came only with the finished item goes into the block the stream opened.
  assert.deepEqual(stream("late"), [
    { type: "text_start" },
    { type: "text_delta", delta: "late" },
    { type: "text_end" },
  ]);
  const body: unknown[] = [];
  decodeResponsesBody({
    id: "r",
    status: "completed",
    output: [{ type: "message", content: [{ type: "output_text", text: "" }] }],
  }, (e) => body.push(e));
  assert.equal(starts(body), 0);
});

/** The JSON arguments of each tool call the events give, by internal index. */
function toolJson(events: Event[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.type === "tool_call_start") out[e.index] = "";
    if (e.type === "tool_call_delta") out[e.index] += e.json;
  }
  return out;
}

Deno.test("decoder: a custom tool's free-form input is the JSON {input} of its function form, streamed and whole", () => {
  // Other formats carry JSON arguments only: a messages client's SDK parses them, and a
  // responses client's custom call is read back from `{"input": …}` (tools.ts customInput).
  const input = 'SELECT "a"\n\\ 1';
  const custom = { type: "custom_tool_call", call_id: "c9", name: "run_sql", input };
  const streamed = decode([
    frame({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...custom, input: "" },
    }),
    frame({ type: "response.custom_tool_call_input.delta", output_index: 0, delta: 'SELECT "a"' }),
    frame({ type: "response.custom_tool_call_input.delta", output_index: 0, delta: "\n\\ 1" }),
    frame({ type: "response.output_item.done", output_index: 0, item: custom }),
    frame({ type: "response.completed", response: { status: "completed" } }),
  ].join(""));
  const onlyDone = decode([
    frame({ type: "response.output_item.added", output_index: 0, item: { ...custom, input: "" } }),
    frame({ type: "response.output_item.done", output_index: 0, item: custom }),
    frame({ type: "response.completed", response: { status: "completed" } }),
  ].join(""));
  const empty = decode([
    frame({ type: "response.output_item.added", output_index: 0, item: { ...custom, input: "" } }),
    frame({ type: "response.completed", response: { status: "completed" } }),
  ].join(""));
  const body: Event[] = [];
  decodeResponsesBody({ status: "completed", output: [custom] }, (e) => body.push(e));
  for (const events of [streamed, onlyDone, body]) {
    assert.deepEqual(toolJson(events).map((j) => JSON.parse(j)), [{ input }]);
    assertWellFormed(events);
  }
  assert.deepEqual(toolJson(empty).map((j) => JSON.parse(j)), [{ input: "" }]);
});

Deno.test("decoder: a reasoning item's reasoning_text content (raw reasoning, gpt-oss) is its reasoning when it has no summary, whole or done-only", () => {
  const item = {
    id: "rs_1",
    type: "reasoning",
    summary: [],
    content: [{ type: "reasoning_text", text: "Think step " }, {
      type: "reasoning_text",
      text: "by step.",
    }],
  };
  const reasoning = (events: Event[]) =>
    events.flatMap((e) => e.type === "reasoning_delta" ? [e.delta] : []).join("");
  const body: Event[] = [];
  decodeResponsesBody({ status: "completed", output: [item] }, (e) => body.push(e));
  const doneOnly = decode([
    frame({ type: "response.output_item.added", output_index: 0, item: { ...item, content: [] } }),
    frame({ type: "response.output_item.done", output_index: 0, item }),
    frame({ type: "response.completed", response: { status: "completed" } }),
  ].join(""));
  for (const events of [body, doneOnly]) {
    assert.equal(reasoning(events), "Think step by step.");
    assertWellFormed(events);
  }
});

Deno.test("responses decoder: an annotation past its part's text so far is left out, streamed as whole", () => {
  // The body decoder drops an annotation whose end is past its part's text; a stream must too,
  // or a chat or responses client is given a span beyond the text it has.
  const stream = [
    { type: "response.created", response: { id: "r1", model: "m" } },
    {
      type: "response.output_item.added",
      output_index: 0,
      item: { id: "msg_1", type: "message", role: "assistant", content: [] },
    },
    {
      type: "response.content_part.added",
      output_index: 0,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] },
    },
    { type: "response.output_text.delta", output_index: 0, content_index: 0, delta: "Hello" },
    ...[[0, 5], [2, 40]].map(([start_index, end_index]) => ({
      type: "response.output_text.annotation.added",
      output_index: 0,
      content_index: 0,
      annotation: { type: "url_citation", url: "https://a.example", start_index, end_index },
    })),
    { type: "response.output_text.done", output_index: 0, content_index: 0, text: "Hello" },
    {
      type: "response.completed",
      response: { id: "r1", status: "completed", output: [], usage: { input_tokens: 1 } },
    },
  ].map((d) => `event: ${d.type}\ndata: ${JSON.stringify(d)}\n\n`).join("");
  const events = decodeStream(createResponsesDecoder(), new TextEncoder().encode(stream), "whole");
  const cites = events.filter((e) => e.type === "citation");
  assert.deepEqual(cites.map((c) => [c.start, c.end]), [[0, 5]]);
});

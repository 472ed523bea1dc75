import assert from "node:assert/strict";
import type { Event } from "../../events/event.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import type { EncodeContext } from "../codec.ts";
import { createMessagesDecoder, decodeMessagesBody } from "./decode.ts";
import {
  createMessagesEncoder,
  createMessagesPassThrough,
  encodeMessagesBody,
  messagesPassThroughBody,
} from "./encode.ts";
import { chunksOf, costOf, decodeSse, FIXTURES, normalizeEvents, splitSse } from "./test_util.ts";

const ctx: EncodeContext = {
  id: "gen-123",
  model: "anthropic/claude-sonnet-4.5",
  created: 1_700_000_000,
};
const read = (name: string) => Deno.readTextFileSync(new URL(name, FIXTURES));

function encodeAll(events: Event[]): string {
  const enc = createMessagesEncoder(ctx);
  return events.map((e) => enc.event(e)).join("");
}

/** The SSE frames of a text as [event, parsed data]. */
function frames(sse: string): [string | undefined, Record<string, unknown>][] {
  return splitSse(chunksOf(sse, "whole")).map((e) => [e.event, JSON.parse(e.data)]);
}

Deno.test("encoder: a text stream in the native event format", () => {
  const usage = { input: 1300, output: 5, cacheRead: 1000, cacheWrite: 200 };
  const sse = encodeAll([
    { type: "response_start", id: "up-1", model: "claude-x" },
    { type: "usage", usage: { input: 1300, cacheRead: 1000, cacheWrite: 200 } },
    { type: "text_start" },
    { type: "text_delta", delta: "Hi" },
    { type: "text_end" },
    { type: "usage", usage },
    { type: "finish", reason: "stop" },
    { type: "cost", cost: costOf(usage, 0.5) },
  ]);
  assert.deepEqual(frames(sse), [
    ["message_start", {
      type: "message_start",
      message: {
        id: "gen-123",
        type: "message",
        role: "assistant",
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 100,
          output_tokens: 0,
          cache_creation_input_tokens: 200,
          cache_read_input_tokens: 1000,
        },
      },
    }],
    ["ping", { type: "ping" }],
    ["content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    }],
    ["content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "Hi" },
    }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: {
        input_tokens: 100,
        output_tokens: 5,
        cache_creation_input_tokens: 200,
        cache_read_input_tokens: 1000,
        cost: 0.5,
        cost_details: {
          upstream_inference_input_cost: 0.5 / 3,
          upstream_inference_output_cost: 0.25,
        },
      },
    }],
    ["message_stop", { type: "message_stop" }],
  ]);
});

Deno.test("encoder: usage unknown at start (chat upstream) is 0 in message_start, full at the end", () => {
  const usage = { input: 40, output: 2 };
  const sse = encodeAll([
    { type: "response_start" },
    { type: "text_delta", delta: "a" },
    { type: "text_delta", delta: "b" },
    { type: "finish", reason: "length" },
    { type: "usage", usage },
    { type: "cost", cost: costOf(usage) },
  ]);
  const f = frames(sse);
  assert.deepEqual(f.map(([e]) => e), [
    "message_start",
    "ping",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  const start = f[0][1].message as { usage: Record<string, number> };
  assert.equal(start.usage.input_tokens, 0);
  const delta = f[6][1] as { delta: { stop_reason: string }; usage: Record<string, number> };
  assert.equal(delta.delta.stop_reason, "max_tokens");
  assert.equal(delta.usage.input_tokens, 40);
  assert.equal(delta.usage.output_tokens, 2);
});

Deno.test("encoder: an answer without content reports its thinking tokens at the end, not in message_start's output of 0", () => {
  // All of it reasoning, none shown: the final usage is the first event that starts the message.
  const usage = { input: 5, output: 20, reasoning: 20 };
  const f = frames(encodeAll([
    { type: "response_start" },
    { type: "usage", usage },
    { type: "finish", reason: "length" },
    { type: "cost", cost: costOf(usage) },
  ]));
  const start = (f[0][1].message as { usage: Record<string, unknown> }).usage;
  assert.equal(start.output_tokens, 0);
  assert.equal(start.output_tokens_details, undefined);
  const delta = f.find(([e]) => e === "message_delta")![1].usage as Record<string, unknown>;
  assert.equal(delta.output_tokens, 20);
  assert.deepEqual(delta.output_tokens_details, { thinking_tokens: 20 });
});

Deno.test("encoder: interleaved tool calls become consecutive tool_use blocks", () => {
  const sse = encodeAll([
    { type: "response_start" },
    { type: "tool_call_start", index: 0, id: "c0", name: "f" },
    { type: "tool_call_start", index: 1, id: "c1", name: "g" },
    { type: "tool_call_delta", index: 0, json: '{"a"' },
    { type: "tool_call_delta", index: 1, json: '{"b":2}' },
    { type: "tool_call_delta", index: 0, json: ":1}" },
    { type: "tool_call_start", index: 2, id: "c2", name: "h" },
    { type: "tool_call_end", index: 0 },
    { type: "tool_call_end", index: 1 },
    { type: "tool_call_delta", index: 2, json: "{}" },
    { type: "finish", reason: "tool_calls" },
    { type: "cost", cost: costOf({}) },
  ]);
  const decoded = decodeSse(createMessagesDecoder(), sse);
  assert.deepEqual(normalizeEvents(decoded.filter((e) => e.type.startsWith("tool_call"))), [
    { type: "tool_call_start", index: 0, id: "c0", name: "f" },
    { type: "tool_call_delta", index: 0, json: '{"a"' },
    { type: "tool_call_delta", index: 0, json: ":1}" },
    { type: "tool_call_end", index: 0 },
    { type: "tool_call_start", index: 1, id: "c1", name: "g" },
    { type: "tool_call_delta", index: 1, json: '{"b":2}' },
    { type: "tool_call_end", index: 1 },
    { type: "tool_call_start", index: 2, id: "c2", name: "h" },
    { type: "tool_call_delta", index: 2, json: "{}" },
    { type: "tool_call_end", index: 2 },
  ]);
  const indices = frames(sse).filter(([e]) => e === "content_block_start").map(([, d]) => d.index);
  assert.deepEqual(indices, [0, 1, 2]);
});

Deno.test("encoder: an error before the cost ends the stream with only event: error", () => {
  const error = new GatewayError(503, "upstream provider is overloaded, retry later");
  const sse = encodeAll([
    { type: "response_start" },
    { type: "text_delta", delta: "part" },
    { type: "error", error },
    { type: "usage", usage: { input: 3 } },
    { type: "cost", cost: costOf({ input: 3 }) },
    { type: "text_delta", delta: "ignored" },
  ]);
  const f = frames(sse);
  assert.deepEqual(f.at(-1), ["error", {
    type: "error",
    error: { type: "overloaded_error", message: "upstream provider is overloaded, retry later" },
  }]);
  assert.equal(f.filter(([e]) => e === "message_delta" || e === "message_stop").length, 0);
  assert.ok(sse.endsWith("\n\n"));
});

const ROUND_TRIP = ["text", "thinking", "tool_use", "cache_usage", "midstream_error", "cut_stream"];

for (const scenario of ROUND_TRIP) {
  Deno.test(`encoder → decoder round trip keeps the events of ${scenario}`, () => {
    const events = decodeSse(createMessagesDecoder(), read(`${scenario}.sse`));
    const final = events.filter((e) => e.type === "usage").at(-1)!;
    const usage = final.type === "usage" ? final.usage : {};
    const sse = encodeAll([...events, { type: "cost", cost: costOf(usage) }]);
    const back = decodeSse(createMessagesDecoder(), sse);
    // A hosted search is not re-encoded: only an Anthropic upstream searches, and a messages
    // client on one gets its stream passed through.
    const skipped = new Set(["usage", "response_start", "web_search"]);
    const content = (es: Event[]) =>
      normalizeEvents(es.filter((e) => !skipped.has(e.type)))
        .map((e) =>
          (e as { type: string }).type === "error"
            ? { type: "error", status: (e as { status: number }).status }
            : e
        );
    assert.deepEqual(content(back), content(events));
    assert.deepEqual(back[0], { type: "response_start", id: ctx.id, model: ctx.model });
    if (!events.some((e) => e.type === "error")) {
      // The thinking count travels too (Anthropic's `output_tokens_details.thinking_tokens`).
      const got = back.filter((e) => e.type === "usage").at(-1);
      assert.deepEqual(got, { type: "usage", usage: { cacheRead: 0, cacheWrite: 0, ...usage } });
    }
  });
}

Deno.test("body encoder: events fold into a message object with cost in its usage", () => {
  const events: Event[] = [];
  decodeMessagesBody(JSON.parse(read("body_thinking_tool_use.json")), (e) => events.push(e));
  const usage = { input: 1532, output: 88, cacheRead: 1111, cacheWrite: 418 };
  const body = encodeMessagesBody(events, costOf(usage, 1.25), ctx);
  assert.deepEqual(body, {
    id: "gen-123",
    type: "message",
    role: "assistant",
    model: ctx.model,
    content: [
      {
        type: "thinking",
        thinking: "Need the weather tool.",
        signature: "EqQBCkYIBRgCTollgateBodySignature==",
      },
      { type: "text", text: "Checking the weather." },
      {
        type: "tool_use",
        id: "toolu_01TollgateBodyTool01",
        name: "get_weather",
        input: { city: "Paris" },
      },
      { type: "tool_use", id: "toolu_01TollgateBodyTool02", name: "get_time", input: {} },
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: {
      input_tokens: 3,
      output_tokens: 88,
      cache_creation_input_tokens: 418,
      cache_read_input_tokens: 1111,
      cost: 1.25,
      cost_details: {
        upstream_inference_input_cost: 1.25 / 3,
        upstream_inference_output_cost: 0.625,
      },
    },
  });
});

Deno.test("body encoder: the pages an answer cites are shown as a search after its thinking, before its text, as Anthropic orders its own", () => {
  const asked: EncodeContext = {
    ...ctx,
    clientBody: { tools: [{ type: "web_search_20250305", name: "web_search" }] },
  };
  const body = encodeMessagesBody(
    [
      { type: "response_start" },
      { type: "reasoning_start" },
      { type: "reasoning_delta", delta: "Let me look." },
      { type: "reasoning_end" },
      { type: "text_start" },
      { type: "text_delta", delta: "Found it." },
      { type: "citation", url: "https://example.com/a", start: 0, end: 9 },
      { type: "text_end" },
      { type: "finish", reason: "stop" },
    ],
    costOf({ input: 3, output: 5 }),
    asked,
  ) as { content: { type: string }[] };
  assert.deepEqual(body.content.map((b) => b.type), [
    "thinking",
    "server_tool_use",
    "web_search_tool_result",
    "text",
  ]);
});

Deno.test("body encoder: redacted thinking, stop sequence, and tool input that is not JSON", () => {
  const body = encodeMessagesBody(
    [
      { type: "reasoning_start" },
      { type: "reasoning_redacted", data: "blob" },
      { type: "reasoning_end" },
      { type: "text_delta", delta: "x" },
      { type: "tool_call_start", index: 0, id: "c", name: "f" },
      { type: "tool_call_delta", index: 0, json: '{"cut' },
      { type: "finish", reason: "stop_sequence", stopSequence: "END" },
    ],
    costOf({}),
    ctx,
  ) as Record<string, unknown>;
  assert.deepEqual(body.content, [
    { type: "redacted_thinking", data: "blob" },
    { type: "text", text: "x" },
    { type: "tool_use", id: "c", name: "f", input: {} },
  ]);
  assert.equal(body.stop_reason, "stop_sequence");
  assert.equal(body.stop_sequence, "END");
});

// ---------------------------------------------------------------------------------------------
// Pass-through

function passThrough(sse: string): string {
  const decoder = createMessagesDecoder();
  const pt = createMessagesPassThrough(ctx);
  let out = "";
  let error: (Event & { type: "error" }) | undefined;
  const collect = (events: Event[]) => {
    for (const e of events) if (e.type === "error") error = e;
  };
  for (const ev of splitSse(chunksOf(sse, "bytes"))) {
    const events: Event[] = [];
    decoder.event(ev, (e) => events.push(e));
    collect(events);
    out += pt.raw(ev, events);
  }
  const tail: Event[] = [];
  decoder.end((e) => tail.push(e));
  collect(tail);
  return out + pt.end(costOf({ input: 1 }, 0.25), error);
}

for (const scenario of ["text", "thinking", "tool_use", "cache_usage"]) {
  Deno.test(`pass-through: ${scenario} is byte-exact except message_start (the id and slug) and message_delta, which gains the cost and any token count it lacks`, () => {
    const sse = read(`${scenario}.sse`);
    const out = passThrough(sse);
    /** message_start, what lies between, message_delta, the rest. */
    const cut = (s: string) => {
      const a = s.indexOf("\n\n", s.indexOf("event: message_start")) + 2;
      const i = s.indexOf("event: message_delta");
      const j = s.indexOf("\n\n", i) + 2;
      return [s.slice(0, a), s.slice(a, i), s.slice(i, j), s.slice(j)];
    };
    const data = (frame: string) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6));
    const [startIn, beforeIn, deltaIn, afterIn] = cut(sse);
    const [startOut, beforeOut, deltaOut, afterOut] = cut(out);
    const start = data(startIn);
    assert.deepEqual(data(startOut), {
      ...start,
      message: { ...start.message, id: ctx.id, model: ctx.model },
    });
    assert.equal(beforeOut, beforeIn);
    assert.equal(afterOut, afterIn);
    const dataIn = JSON.parse(deltaIn.slice(deltaIn.indexOf("data: ") + 6));
    const dataOut = JSON.parse(deltaOut.slice(deltaOut.indexOf("data: ") + 6));
    // The billed usage here is { input: 1 }: 1 uncached input token, nothing else.
    const billed = {
      input_tokens: 1,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    assert.deepEqual(dataOut, {
      ...dataIn,
      usage: { ...billed, ...dataIn.usage, cost: 0.25, cost_details: costOf({}, 0.25).details },
    });
    // The upstream's own figures are never overwritten.
    for (const [k, v] of Object.entries(dataIn.usage)) assert.deepEqual(dataOut.usage[k], v, k);
  });
}

Deno.test("pass-through: an upstream error is replaced by the gateway's own error frame", () => {
  const out = passThrough(read("midstream_error.sse"));
  assert.equal(out.includes('"Overloaded"'), false);
  assert.ok(out.endsWith(
    'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",' +
      '"message":"upstream provider is overloaded, retry later"}}\n\n',
  ));
  const cut = passThrough(read("cut_stream.sse"));
  const original = read("cut_stream.sse");
  const afterStart = (s: string) => s.slice(s.indexOf("\n\n") + 2);
  assert.ok(afterStart(cut).startsWith(afterStart(original).slice(0, 100)));
  assert.match(cut, /event: error\ndata: \{"type":"error","error":\{"type":"api_error",/);
});

Deno.test("pass-through body: the generation's id, the requested slug, usage with the cost, rest untouched", () => {
  const upstream = JSON.parse(read("body_thinking_tool_use.json"));
  const out = messagesPassThroughBody(upstream, costOf({}, 2), ctx);
  assert.notEqual(upstream.id, ctx.id);
  assert.deepEqual(out, {
    ...upstream,
    id: ctx.id,
    model: ctx.model,
    usage: { ...upstream.usage, cost: 2, cost_details: costOf({}, 2).details },
  });
  assert.deepEqual(Object.keys(out), Object.keys(upstream));
});

Deno.test("encoders: another vendor's tool call id reaches a messages client as Anthropic takes it", () => {
  const events: Event[] = [
    { type: "response_start" },
    { type: "tool_call_start", index: 0, id: "functions.get_weather:0", name: "get_weather" },
    { type: "tool_call_delta", index: 0, json: "{}" },
    { type: "tool_call_end", index: 0 },
    { type: "finish", reason: "tool_calls" },
    { type: "cost", cost: costOf({}) },
  ];
  const body = encodeMessagesBody(events, costOf({}), ctx) as { content: { id: string }[] };
  const streamed = frames(encodeAll(events))
    .filter(([e]) => e === "content_block_start")
    .map(([, d]) => (d.content_block as { id: string }).id);
  assert.match(body.content[0].id, /^functions_get_weather_0_[0-9a-f]{8}$/);
  assert.deepEqual(streamed, [body.content[0].id], "the same id, streamed or whole");
});

Deno.test("pass-through: a stream that ends without message_stop gets one; a repeated message_delta is sent once, with the cost", () => {
  const sse = read("text.sse");
  const noStop = sse.replace(/event: message_stop\ndata: [^\n]*\n\n/, "");
  assert.notEqual(noStop, sse);
  const frames = (s: string) => splitSse(chunksOf(s, "whole")).map((e) => e.event);
  assert.deepEqual(frames(passThrough(noStop)).slice(-2), ["message_delta", "message_stop"]);
  assert.deepEqual(frames(passThrough(sse)).filter((e) => e === "message_stop"), ["message_stop"]);
  const delta = sse.slice(sse.indexOf("event: message_delta"));
  const twice = sse.replace(delta, delta.slice(0, delta.indexOf("\n\n") + 2) + delta);
  const out = splitSse(chunksOf(passThrough(twice), "whole"));
  const deltas = out.filter((e) => e.event === "message_delta");
  assert.equal(deltas.length, 1);
  assert.equal(JSON.parse(deltas[0].data).usage.cost, 0.25);
});

Deno.test("pass-through: unnamed events' message_stop counts (no second one), and a usage-only repeat of message_delta keeps the stop reason", () => {
  const unnamed = read("text.sse").replace(/^event: [^\n]*\n/gm, "");
  const out = splitSse(chunksOf(passThrough(unnamed), "whole"));
  const stops = out.filter((e) => e.event === "message_stop" || e.data.includes('"message_stop"'));
  assert.equal(stops.length, 1);
  const sse = read("text.sse");
  const delta = sse.slice(sse.indexOf("event: message_delta"));
  const usageOnly =
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":9}}\n\n';
  const twice = sse.replace(
    delta,
    delta.slice(0, delta.indexOf("\n\n") + 2) + usageOnly + delta.slice(delta.indexOf("\n\n") + 2),
  );
  const kept = splitSse(chunksOf(passThrough(twice), "whole")).filter((e) =>
    e.event === "message_delta"
  );
  assert.equal(kept.length, 1);
  const data = JSON.parse(kept[0].data);
  assert.equal(data.delta.stop_reason, "end_turn");
  assert.equal(data.usage.output_tokens, 9);
});

import assert from "node:assert/strict";
import type { CostReport, Event } from "../../events/event.ts";
import { mergeUsage, type Usage } from "../../events/usage.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import type { EncodeContext } from "../codec.ts";
import { createChatDecoder } from "./decode.ts";
import {
  chatPassThroughBody,
  createChatEncoder,
  createChatPassThrough,
  encodeChatBody,
} from "./encode.ts";
import {
  assertForwarded,
  assertHead,
  decodeStream,
  eventJson,
  maskHead,
  maskHeads,
  sseEvents,
} from "./test_support.ts";

const FIXTURES = new URL("../../../tests/fixtures/openai-chat/", import.meta.url);
const SCENARIOS = [
  "text",
  "tool_call_split_args",
  "parallel_tool_calls",
  "usage_cached_reasoning",
  "mid_stream_error",
  "stream_cut",
];

/** A client that asked for OpenAI's usage chunk; `BARE` did not (usage rides the finish). */
const CTX: EncodeContext = {
  id: "gen-tg-1",
  model: "openai/gpt-4o-mini",
  created: 1767225999,
  clientBody: { stream_options: { include_usage: true } },
};
const BARE: EncodeContext = { ...CTX, clientBody: {} };

const costOf = (usage: Usage): CostReport => ({
  cost: 1.234567891,
  details: { upstream_inference_input_cost: 0.5, upstream_inference_output_cost: 0.6 },
  usage,
});

const readFixture = (name: string) => Deno.readTextFile(new URL(`${name}.sse`, FIXTURES));

function decodeFixture(text: string): Event[] {
  return decodeStream(createChatDecoder(), text, "whole");
}

function usageOf(events: Event[]): Usage {
  let u: Usage = {};
  for (const e of events) if (e.type === "usage") u = mergeUsage(u, e.usage);
  return u;
}

function encodeAll(events: Event[], cost: CostReport, ctx = CTX): string {
  const enc = createChatEncoder(ctx);
  return events.map((e) => enc.event(e)).join("") + enc.event({ type: "cost", cost });
}

/** The data payloads of an SSE text, JSON-parsed ("[DONE]" kept as a string). */
function payloads(text: string): unknown[] {
  return sseEvents([text]).map((e) => e.data === "[DONE]" ? e.data : JSON.parse(e.data));
}

for (const name of SCENARIOS) {
  Deno.test(`chat encoder round trip: ${name} decodes back to the same events`, async () => {
    const original = decodeFixture(await readFixture(name));
    const usage = usageOf(original);
    const text = encodeAll(original, costOf(usage));
    const again = decodeStream(createChatDecoder(), text, "bytes");

    const content = (es: Event[]) =>
      es.filter((e) => e.type !== "usage" && e.type !== "response_start").map(eventJson);
    assert.deepEqual(content(again), content(original));
    assert.deepEqual(again[0], { type: "response_start", id: CTX.id, model: CTX.model });
    const back = again.filter((e) => e.type === "usage");
    assert.equal(back.length, 1);
    assert.deepEqual(back[0], {
      type: "usage",
      usage: {
        input: usage.input ?? 0,
        output: usage.output ?? 0,
        cacheRead: usage.cacheRead ?? 0,
        ...(usage.cacheWrite !== undefined ? { cacheWrite: usage.cacheWrite } : {}),
        reasoning: usage.reasoning ?? 0,
        // Our `cost` (roubles) sits where OpenRouter puts its USD cost.
        costUsd: "1.234567891",
      },
    });
  });
}

Deno.test("chat encoder: chunk shape, role first, usage with cost, [DONE] last", async () => {
  const events = decodeFixture(await readFixture("text"));
  const out = payloads(encodeAll(events, costOf(usageOf(events))));
  assert.equal(out.at(-1), "[DONE]");
  const chunks = out.slice(0, -1) as Record<string, unknown>[];
  for (const c of chunks) {
    assert.equal(c.id, CTX.id);
    assert.equal(c.object, "chat.completion.chunk");
    assert.equal(c.created, CTX.created);
    assert.equal(c.model, CTX.model);
  }
  assert.deepEqual(chunks[0].choices, [
    { index: 0, delta: { role: "assistant", content: "" }, finish_reason: null },
  ]);
  assert.deepEqual(chunks.at(-2)!.choices, [{ index: 0, delta: {}, finish_reason: "stop" }]);
  assert.deepEqual(chunks.at(-1), {
    id: CTX.id,
    object: "chat.completion.chunk",
    created: CTX.created,
    model: CTX.model,
    choices: [],
    usage: {
      prompt_tokens: 19,
      completion_tokens: 12,
      total_tokens: 31,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 1.234567891,
      cost_details: { upstream_inference_input_cost: 0.5, upstream_inference_output_cost: 0.6 },
    },
  });
});

Deno.test("chat encoder: an error ends with finish_reason error, the error and cost, no [DONE]", () => {
  const enc = createChatEncoder(CTX);
  let out = "";
  for (
    const e of [
      { type: "response_start" },
      { type: "text_start" },
      { type: "text_delta", delta: "Hi" },
      { type: "error", error: new GatewayError(502, "upstream stream ended early") },
      { type: "cost", cost: costOf({ input: 3 }) },
    ] as Event[]
  ) out += enc.event(e);
  const chunks = payloads(out) as Record<string, unknown>[];
  assert.ok(!out.includes("[DONE]"));
  const last = chunks.at(-1)!;
  assert.deepEqual(last.choices, [{ index: 0, delta: {}, finish_reason: "error" }]);
  assert.deepEqual(last.error, { code: 502, message: "upstream stream ended early", metadata: {} });
  assert.equal((last.usage as Record<string, unknown>).cost, 1.234567891);
  assert.equal((last.usage as Record<string, unknown>).prompt_tokens, 3);
});

Deno.test("chat encoder: tool call indices are dense whatever the internal index", () => {
  const enc = createChatEncoder(CTX);
  const out = [
    { type: "tool_call_start", index: 3, id: "t3", name: "a" },
    { type: "tool_call_start", index: 7, id: "t7", name: "b" },
    { type: "tool_call_delta", index: 7, json: "{}" },
    { type: "tool_call_delta", index: 3, json: "[]" },
  ].map((e) => enc.event(e as Event)).join("");
  const calls = (payloads(out) as { choices: { delta: { tool_calls?: unknown[] } }[] }[])
    .flatMap((c) => c.choices[0].delta.tool_calls ?? []);
  assert.deepEqual(calls, [
    { index: 0, id: "t3", type: "function", function: { name: "a", arguments: "" } },
    { index: 1, id: "t7", type: "function", function: { name: "b", arguments: "" } },
    { index: 1, function: { arguments: "{}" } },
    { index: 0, function: { arguments: "[]" } },
  ]);
});

Deno.test("chat encoder: reasoning is sent as delta.reasoning unless the client excluded it", () => {
  const events: Event[] = [
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "hmm" },
    { type: "reasoning_end" },
  ];
  const shown = events.map((e) => createChatEncoder(CTX).event(e)).join("");
  assert.match(shown, /"delta":\{"reasoning":"hmm"\}/);
  for (const clientBody of [{ reasoning: { exclude: true } }, { include_reasoning: false }]) {
    const enc = createChatEncoder({ ...CTX, clientBody });
    assert.equal(events.map((e) => enc.event(e)).join("").includes("hmm"), false);
  }
});

Deno.test("chat encoder: stop_sequence is reported as stop", () => {
  const out = createChatEncoder(CTX).event({ type: "finish", reason: "stop_sequence" });
  assert.match(out, /"finish_reason":"stop"/);
});

// ---- non-streaming -------------------------------------------------------------------------

Deno.test("chat body encoder: text, reasoning, tool calls, finish and usage", () => {
  const events: Event[] = [
    { type: "response_start", id: "up", model: "gpt" },
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "r1" },
    { type: "reasoning_end" },
    { type: "text_start" },
    { type: "text_delta", delta: "Hel" },
    { type: "text_delta", delta: "lo" },
    { type: "text_end" },
    { type: "tool_call_start", index: 1, id: "c1", name: "f" },
    { type: "tool_call_delta", index: 1, json: '{"a"' },
    { type: "tool_call_delta", index: 1, json: ":1}" },
    { type: "tool_call_end", index: 1 },
    { type: "finish", reason: "tool_calls" },
    { type: "usage", usage: { input: 10, output: 5 } },
  ];
  const body = encodeChatBody(events, costOf({ input: 10, output: 5, cacheRead: 4 }), CTX);
  assert.deepEqual(body, {
    id: CTX.id,
    object: "chat.completion",
    created: CTX.created,
    model: CTX.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: "Hello",
        refusal: null,
        reasoning: "r1",
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } }],
      },
      logprobs: null,
      finish_reason: "tool_calls",
    }],
    usage: {
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 1.234567891,
      cost_details: { upstream_inference_input_cost: 0.5, upstream_inference_output_cost: 0.6 },
    },
  });
});

Deno.test('chat body encoder: no text gives content "" (the spec\'s string); an error event throws it', () => {
  const body = encodeChatBody([{ type: "finish", reason: "length" }], costOf({}), CTX) as {
    choices: { message: { content: unknown }; finish_reason: string }[];
  };
  assert.equal(body.choices[0].message.content, "");
  assert.equal(body.choices[0].finish_reason, "length");
  const err = new GatewayError(502, "bad");
  assert.throws(() => encodeChatBody([{ type: "error", error: err }], costOf({}), CTX), err);
});

Deno.test("chat body encoder: a turn of tool calls alone keeps content null, as OpenAI writes it", () => {
  const body = encodeChatBody(
    [
      { type: "text_start" },
      { type: "text_end" },
      { type: "tool_call_start", index: 0, id: "call_1", name: "f" },
      { type: "tool_call_delta", index: 0, json: "{}" },
      { type: "tool_call_end", index: 0 },
      { type: "finish", reason: "tool_calls" },
    ],
    costOf({}),
    CTX,
  ) as { choices: { message: { content: unknown; tool_calls: unknown[] } }[] };
  assert.equal(body.choices[0].message.content, null);
  assert.equal(body.choices[0].message.tool_calls.length, 1);
});

// ---- pass-through --------------------------------------------------------------------------

/** Runs a fixture through the pass-through the way the pipeline does. */
function passThrough(text: string, cost: CostReport, ctx = CTX): string {
  const dec = createChatDecoder();
  const pt = createChatPassThrough(ctx);
  let out = "";
  let error: (Event & { type: "error" }) | undefined;
  const sink = (evs: Event[]) => {
    for (const e of evs) if (e.type === "error") error ??= e;
  };
  for (const ev of sseEvents([text])) {
    const evs: Event[] = [];
    dec.event(ev, (e) => evs.push(e));
    sink(evs);
    out += pt.raw(ev, evs);
  }
  const tail: Event[] = [];
  dec.end((e) => tail.push(e));
  sink(tail);
  return out + pt.end(cost, error);
}

for (
  const name of ["text", "tool_call_split_args", "parallel_tool_calls", "usage_cached_reasoning"]
) {
  Deno.test(`chat pass-through: ${name} is forwarded byte for byte but id, model and usage`, async () => {
    const text = await readFixture(name);
    const cost = costOf(usageOf(decodeFixture(text)));
    const out = passThrough(text, cost);
    const inEvents = sseEvents([text]);
    const outEvents = sseEvents([out]);
    assert.equal(outEvents.map((e) => e.raw).join(""), out);
    const usageAt = inEvents.findIndex((e) => e.data.includes('"usage":{'));
    assert.ok(usageAt > 0);
    assert.equal(outEvents.length, inEvents.length);
    outEvents.forEach((e, i) => {
      if (i !== usageAt) return assertForwarded(e, inEvents[i], CTX);
      const edited = JSON.parse(e.data);
      const original = JSON.parse(inEvents[i].data);
      assert.deepEqual(edited, {
        ...original,
        id: CTX.id,
        model: CTX.model,
        usage: { ...original.usage, cost: cost.cost, cost_details: cost.details },
      });
      // Re-serialised in the upstream's key order.
      assert.deepEqual(Object.keys(edited), Object.keys(original));
    });
    // The upstream's own id and model appear nowhere any more (tool call ids are kept).
    const upstream = JSON.parse(inEvents[0].data);
    assert.ok(!out.includes(JSON.stringify(upstream.id)), out);
    assert.ok(!out.includes(JSON.stringify(upstream.model)), out);
    assert.equal(outEvents.at(-1)!.data, "[DONE]");
  });
}

Deno.test("chat pass-through: the usage chunk and [DONE] are held until end", async () => {
  const text = await readFixture("text");
  const dec = createChatDecoder();
  const pt = createChatPassThrough(CTX);
  const sent: string[] = [];
  for (const ev of sseEvents([text])) {
    const evs: Event[] = [];
    dec.event(ev, (e) => evs.push(e));
    sent.push(pt.raw(ev, evs));
  }
  assert.deepEqual(sent.slice(-2), ["", ""]);
  assert.ok(sent.slice(0, -2).every((s) => s !== ""));
});

Deno.test("chat pass-through: an upstream error chunk is replaced by ours, no [DONE]", async () => {
  const text = await readFixture("mid_stream_error");
  const out = passThrough(text, costOf({ input: 7 }));
  assert.ok(!out.includes("Abc123Def456"), out);
  assert.ok(!out.includes("[DONE]"));
  const inEvents = sseEvents([text]);
  const outEvents = sseEvents([out]);
  assert.equal(outEvents.map((e) => e.raw).join(""), out);
  outEvents.slice(0, -2).forEach((e, i) => assertForwarded(e, inEvents[i], CTX));
  const last = JSON.parse(outEvents.at(-1)!.data);
  assert.equal(last.id, CTX.id);
  assert.equal(last.model, CTX.model);
  assert.equal(last.created, CTX.created);
  assert.deepEqual(last.choices, [{ index: 0, delta: {}, finish_reason: "error" }]);
  assert.equal(last.error.code, 502);
  assert.match(last.error.message, /invalid key \*\*\*/);
  assert.equal(last.usage.cost, 1.234567891);
  // Before it, the error object alone (OpenAI's in-stream error).
  assert.deepEqual(JSON.parse(outEvents.at(-2)!.data), { error: last.error });
  assert.equal(sseEvents([out]).length, 4);
});

Deno.test("chat pass-through: a cut stream ends with the error chunk", async () => {
  const text = await readFixture("stream_cut");
  const out = passThrough(text, costOf({ input: 7, output: 3 }));
  assert.ok(maskHeads(out).startsWith(maskHeads(text)));
  const inEvents = sseEvents([text]);
  const outEvents = sseEvents([out]);
  assert.equal(outEvents.map((e) => e.raw).join(""), out);
  assert.equal(outEvents.length, inEvents.length + 2);
  inEvents.forEach((e, i) => assertForwarded(outEvents[i], e, CTX));
  const last = JSON.parse(outEvents.at(-1)!.data);
  assert.deepEqual(JSON.parse(outEvents.at(-2)!.data), { error: last.error });
  assert.equal(last.id, CTX.id);
  assert.equal(last.model, CTX.model);
  assert.equal(last.error.message, "upstream stream ended early");
  assert.equal(last.usage.completion_tokens, 3);
  assert.ok(!out.includes("[DONE]"));
});

Deno.test("chat pass-through: without an upstream usage chunk one is written before [DONE]", () => {
  const chunk = (d: unknown, f: string | null = null) =>
    `data: ${
      JSON.stringify({ id: "u1", model: "up", choices: [{ index: 0, delta: d, finish_reason: f }] })
    }\n\n`;
  const text = chunk({ content: "x" }) + chunk({}, "stop") + "data: [DONE]\n\n";
  const out = passThrough(text, costOf({ input: 2, output: 1 }));
  const forwarded = chunk({ content: "x" }) + chunk({}, "stop");
  assert.ok(out.startsWith(
    forwarded.replaceAll('"u1"', '"gen-tg-1"').replaceAll(
      '"up"',
      '"openai/gpt-4o-mini"',
    ),
  ));
  assert.ok(maskHeads(out).startsWith(maskHeads(forwarded)));
  const evs = sseEvents([out]);
  assert.equal(evs.length, 4);
  evs.slice(0, 2).forEach((e) => assertHead(e, CTX));
  assert.equal(evs.at(-1)!.data, "[DONE]");
  const usage = JSON.parse(evs.at(-2)!.data);
  assert.equal(usage.id, CTX.id);
  assert.equal(usage.model, CTX.model);
  assert.equal(usage.created, CTX.created);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.total_tokens, 3);
  assert.equal(usage.usage.cost, 1.234567891);
});

Deno.test("chat pass-through: usage on every chunk does not hold the stream back", () => {
  const chunk = (d: unknown, f: string | null, n: number) =>
    `data: ${
      JSON.stringify({
        id: "u",
        choices: [{ index: 0, delta: d, finish_reason: f }],
        usage: { prompt_tokens: 2, completion_tokens: n },
      })
    }\n\n`;
  const dec = createChatDecoder();
  const pt = createChatPassThrough(CTX);
  const sent: string[] = [];
  const text = chunk({ content: "a" }, null, 1) + chunk({ content: "b" }, null, 2) +
    chunk({}, "stop", 2) + "data: [DONE]\n\n";
  for (const ev of sseEvents([text])) {
    const evs: Event[] = [];
    dec.event(ev, (e) => evs.push(e));
    sent.push(pt.raw(ev, evs));
  }
  // Forwarded at once, the id now the generation's (the upstream sent no model: none added).
  for (
    const [i, want] of [chunk({ content: "a" }, null, 1), chunk({ content: "b" }, null, 2)]
      .entries()
  ) {
    assert.equal(maskHead(sent[i]), maskHead(want));
    assert.equal(sent[i], want.replace('"id":"u"', `"id":${JSON.stringify(CTX.id)}`));
  }
  const end = pt.end(costOf({ input: 2, output: 2 }));
  const last = sseEvents([end]);
  assert.equal(last.at(-1)!.data, "[DONE]");
  assert.equal(last.length, 2);
  assert.equal(JSON.parse(last[0].data).usage.cost, 1.234567891);
  // The held finish chunk, re-serialised with cost: the generation's id, still no model.
  assert.deepEqual(JSON.parse(last[0].data), {
    ...JSON.parse(sseEvents([chunk({}, "stop", 2)])[0].data),
    id: CTX.id,
    usage: {
      prompt_tokens: 2,
      completion_tokens: 2,
      cost: 1.234567891,
      cost_details: { upstream_inference_input_cost: 0.5, upstream_inference_output_cost: 0.6 },
    },
  });
});

Deno.test("chat pass-through body: id and model set to ours, cost added, the rest kept", () => {
  const upstream = {
    id: "chatcmpl-x",
    object: "chat.completion",
    model: "gpt-4o-2024-08-06",
    choices: [{ index: 0, message: { role: "assistant", content: "hi", annotations: [] } }],
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, extra: true },
    system_fingerprint: "fp",
  };
  const cost = costOf({ input: 1, output: 2 });
  assert.deepEqual(chatPassThroughBody(structuredClone(upstream), cost, CTX), {
    ...upstream,
    id: CTX.id,
    model: CTX.model,
    usage: { ...upstream.usage, cost: cost.cost, cost_details: cost.details },
  });
  const noUsage = chatPassThroughBody({ id: "x", choices: [] }, cost, CTX);
  assert.equal((noUsage.usage as Record<string, unknown>).total_tokens, 3);
  assert.equal(noUsage.id, CTX.id);
  assert.equal(noUsage.model, CTX.model);
});

Deno.test("chat pass-through: nothing upstream sends after a malformed chunk goes out", () => {
  const chunk = (content: string) =>
    `data: ${JSON.stringify({ id: "u", choices: [{ index: 0, delta: { content } }] })}\n\n`;
  const text = chunk("a") + "data: {oops\n\n" + chunk("b") + "data: [DONE]\n\n";
  const out = passThrough(text, costOf({ input: 1 }));
  const evs = sseEvents([out]);
  assert.equal(evs.length, 3);
  assert.equal(maskHead(evs[0].raw), maskHead(chunk("a")));
  assert.equal(evs[0].raw, chunk("a").replace('"id":"u"', `"id":${JSON.stringify(CTX.id)}`));
  assert.equal(JSON.parse(evs[1].data).error.message, "upstream sent a malformed chunk");
  assertHead(evs[2], CTX);
  assert.equal(JSON.parse(evs[2].data).error.message, "upstream sent a malformed chunk");
});

Deno.test("chat pass-through: ids and models the upstream changes mid-stream are all ours", () => {
  // Azure's shape: keys sorted (choices before id, so tool call ids come first), a first
  // content-filter chunk with empty id and model, then the real ones; and an id that changes.
  const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const text = [
    frame({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: [] }),
    frame({
      choices: [{
        delta: {
          role: "assistant",
          tool_calls: [{
            function: { arguments: "", name: "f" },
            id: "call_1",
            index: 0,
            type: "function",
          }],
        },
        finish_reason: null,
        index: 0,
      }],
      created: 5,
      id: "chatcmpl-a",
      model: "gpt-4o-2024-11-20",
      object: "chat.completion.chunk",
    }),
    frame({
      choices: [{
        delta: { tool_calls: [{ function: { arguments: "{}" }, index: 0 }] },
        finish_reason: null,
        index: 0,
      }],
      created: 5,
      id: "chatcmpl-b",
      model: "gpt-4o-2024-11-20",
      object: "chat.completion.chunk",
    }),
    frame({
      choices: [{ delta: {}, finish_reason: "tool_calls", index: 0 }],
      created: 5,
      id: "chatcmpl-b",
      model: "gpt-4o-2024-11-20",
      object: "chat.completion.chunk",
    }),
    frame({
      choices: [],
      created: 5,
      id: "chatcmpl-b",
      model: "gpt-4o-2024-11-20",
      object: "chat.completion.chunk",
      usage: { completion_tokens: 1, prompt_tokens: 2, total_tokens: 3 },
    }),
    "data: [DONE]\n\n",
  ].join("");
  const out = passThrough(text, costOf({ input: 2, output: 1 }));
  const inEvents = sseEvents([text]);
  const outEvents = sseEvents([out]);
  assert.equal(outEvents.length, inEvents.length);
  outEvents.slice(0, -2).forEach((e, i) => assertForwarded(e, inEvents[i], CTX));
  assertHead(outEvents.at(-2)!, CTX);
  assert.equal(JSON.parse(outEvents.at(-2)!.data).usage.cost, 1.234567891);
  assert.equal(outEvents.at(-1)!.raw, "data: [DONE]\n\n");
  assert.ok(out.includes('"id":"call_1"'));
  assert.ok(!/chatcmpl|gpt-4o-2024|"id":""|"model":""/.test(out), out);
});

Deno.test("chat pass-through: an upstream model already the slug (OpenRouter) is left as sent", async () => {
  const text = await readFixture("usage_cached_reasoning");
  const ctx = { ...CTX, model: "deepseek/deepseek-r1" };
  const cost = costOf(usageOf(decodeFixture(text)));
  const out = passThrough(text, cost, ctx);
  const inEvents = sseEvents([text]);
  const outEvents = sseEvents([out]);
  assert.equal(outEvents.length, inEvents.length);
  const usageAt = inEvents.findIndex((e) => e.data.includes('"usage":{'));
  outEvents.forEach((e, i) => {
    if (i === usageAt) return assertHead(e, ctx);
    assertForwarded(e, inEvents[i], ctx);
    // Only the id differs from the upstream's bytes.
    assert.equal(e.raw, inEvents[i].raw.replace('"gen-1767225603-tgReasonXYZ"', '"gen-tg-1"'));
  });
});

// ---- a client that asked for no usage chunk ----------------------------------------------

/** Every chunk has a first choice (the loop `chunk.choices[0].delta` runs on each), and the
 * last before [DONE] is the finish, carrying the usage with cost. */
function assertUsageOnFinish(out: string, finish: string, cost: CostReport, finishes = 1) {
  const evs = sseEvents([out]);
  assert.equal(evs.at(-1)!.data, "[DONE]");
  const chunks = evs.slice(0, -1).map((e) => JSON.parse(e.data));
  for (const c of chunks) assert.ok(c.choices.length > 0, JSON.stringify(c));
  const last = chunks.at(-1);
  assert.equal(last.id, CTX.id);
  assert.equal(last.model, CTX.model);
  assert.equal(last.choices[0].finish_reason, finish);
  assert.equal(last.usage.cost, cost.cost);
  assert.deepEqual(last.usage.cost_details, cost.details);
  // Only the last chunk carries usage, and no chunk after the finish adds content.
  assert.equal(chunks.filter((c) => c.choices[0].finish_reason).length, finishes);
  assert.equal(chunks.filter((c) => c.usage).length, 1);
  return last;
}

for (const [name, finish] of [["text", "stop"], ["parallel_tool_calls", "tool_calls"]]) {
  Deno.test(`chat encoder, no include_usage: ${name} ends with its finish chunk carrying usage`, async () => {
    const events = decodeFixture(await readFixture(name));
    const cost = costOf(usageOf(events));
    const last = assertUsageOnFinish(encodeAll(events, cost, BARE), finish, cost);
    assert.equal(last.usage.prompt_tokens, usageOf(events).input);
  });

  Deno.test(`chat pass-through, no include_usage: ${name} puts the usage on the upstream's finish chunk`, async () => {
    const text = await readFixture(name);
    const cost = costOf(usageOf(decodeFixture(text)));
    const out = passThrough(text, cost, BARE);
    const last = assertUsageOnFinish(out, finish, cost);
    // The upstream's own usage figures, cost added; everything before the finish as sent.
    const inEvents = sseEvents([text]);
    const upstreamUsage = JSON.parse(inEvents.find((e) => e.data.includes('"usage":{'))!.data);
    assert.deepEqual(last.usage, {
      ...upstreamUsage.usage,
      cost: cost.cost,
      cost_details: cost.details,
    });
    const outEvents = sseEvents([out]);
    const finishAt = inEvents.findIndex((e) => /"finish_reason":"/.test(e.data));
    assert.equal(outEvents.length, inEvents.length - 1);
    outEvents.slice(0, finishAt).forEach((e, i) => assertForwarded(e, inEvents[i], CTX));
  });
}

Deno.test("chat pass-through, no include_usage: a finish on a content chunk is repeated with the usage", () => {
  const chunk = (d: unknown, f: string | null = null, usage?: unknown) =>
    `data: ${
      JSON.stringify({
        id: "u1",
        model: "up",
        choices: [{ index: 0, delta: d, finish_reason: f }],
        ...(usage ? { usage } : {}),
      })
    }\n\n`;
  const usage = { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 };
  const text = chunk({ content: "x" }) + chunk({ content: "y" }, "length") +
    `data: ${JSON.stringify({ id: "u1", model: "up", choices: [], usage })}\n\n` +
    "data: [DONE]\n\n";
  const cost = costOf({ input: 2, output: 1 });
  const last = assertUsageOnFinish(passThrough(text, cost, BARE), "length", cost, 2);
  assert.deepEqual(last.choices, [{
    index: 0,
    delta: {},
    logprobs: null,
    finish_reason: "length",
  }]);
  assert.equal(last.usage.total_tokens, 3);
});

Deno.test("chat pass-through, no include_usage: a usage chunk with choices keeps its place", () => {
  // Vendors that report usage on a chunk that has choices: nothing to move.
  const body = (choices: unknown[], usage?: unknown) =>
    `data: ${JSON.stringify({ id: "u1", model: "up", choices, ...(usage ? { usage } : {}) })}\n\n`;
  const text = body([{ index: 0, delta: { content: "x" }, finish_reason: null }]) +
    body([{ index: 0, delta: {}, finish_reason: "stop" }]) +
    body([{ index: 0, delta: { content: "" }, finish_reason: null }], { prompt_tokens: 1 }) +
    "data: [DONE]\n\n";
  const out = passThrough(text, costOf({ input: 1 }), BARE);
  const chunks = sseEvents([out]).slice(0, -1).map((e) => JSON.parse(e.data));
  assert.equal(chunks.length, 3);
  assert.equal(chunks[1].choices[0].finish_reason, "stop");
  assert.equal(chunks[1].usage, undefined);
  assert.equal(chunks[2].usage.cost, 1.234567891);
});

Deno.test("chat pass-through, no include_usage: n = 2 puts the usage on the last finish; a chunk without choices is dropped", () => {
  const frame = (o: unknown) =>
    `data: ${JSON.stringify({ id: "u1", model: "up", ...o as object })}\n\n`;
  const choice = (index: number, delta: unknown, finish: string | null = null) => ({
    index,
    delta,
    finish_reason: finish,
  });
  const text = frame({ choices: [], prompt_filter_results: [] }) +
    frame({ choices: [choice(0, { content: "a" })] }) +
    frame({ choices: [choice(1, { content: "b" })] }) +
    frame({ choices: [choice(0, {}, "stop")] }) +
    frame({ choices: [choice(1, {}, "length")] }) +
    frame({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 2 } }) +
    "data: [DONE]\n\n";
  const cost = costOf({ input: 2, output: 2 });
  const out = passThrough(text, cost, BARE);
  const chunks = sseEvents([out]).slice(0, -1).map((e) => JSON.parse(e.data));
  for (const c of chunks) assert.ok(c.choices.length > 0, JSON.stringify(c));
  assert.deepEqual(
    chunks.map((c) => c.choices[0].finish_reason ?? null),
    [null, null, "stop", "length"],
  );
  const last = chunks.at(-1);
  assert.equal(last.choices[0].index, 1);
  assert.equal(last.usage.cost, cost.cost);
  assert.equal(chunks.filter((c) => c.usage).length, 1);
});

Deno.test("chat pass-through, no include_usage: a usage report repeated still ends with one finish chunk carrying it", () => {
  const chunk = (choices: unknown[], usage?: unknown) =>
    `data: ${JSON.stringify({ id: "u1", model: "up", choices, ...(usage ? { usage } : {}) })}\n\n`;
  const first = { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 };
  const later = { prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 };
  const cost = costOf({ input: 2, output: 5 });
  // OpenAI's shape (a usage chunk without choices), and OpenRouter's (with an empty delta).
  for (const choices of [[], [{ index: 0, delta: { content: "" }, finish_reason: null }]]) {
    const text = chunk([{ index: 0, delta: { content: "x" }, finish_reason: null }]) +
      chunk([{ index: 0, delta: {}, finish_reason: "stop" }]) +
      chunk(choices, first) + chunk([], later) + "data: [DONE]\n\n";
    const last = assertUsageOnFinish(passThrough(text, cost, BARE), "stop", cost);
    assert.equal(last.usage.completion_tokens, 5, "the later report");
  }
});

import assert from "node:assert/strict";
import { openDetail } from "./reasoning_details.ts";
import type { Event } from "../../events/event.ts";
import { createChatDecoder, decodeChatBody } from "./decode.ts";
import { CUTS, decodeStream, eventJson, parseGolden } from "./test_support.ts";
import { SseSplitter } from "../sse.ts";

const FIXTURES = new URL("../../../tests/fixtures/openai-chat/", import.meta.url);
const SCENARIOS = [
  "text",
  "tool_call_split_args",
  "parallel_tool_calls",
  "usage_cached_reasoning",
  "mid_stream_error",
  "stream_cut",
];

const decode = (text: string, cut: "whole" | "lines" | "bytes" = "whole") =>
  decodeStream(createChatDecoder(), text, cut).map(eventJson);

const sse = (...chunks: unknown[]) =>
  chunks.map((c) => `data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`).join("");

const delta = (d: unknown, finish: string | null = null) => ({
  id: "c1",
  model: "m",
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});

for (const name of SCENARIOS) {
  for (const cut of CUTS) {
    Deno.test(`chat decoder: ${name} cut ${cut} gives the golden events`, async () => {
      const text = await Deno.readTextFile(new URL(`${name}.sse`, FIXTURES));
      const golden = parseGolden(
        await Deno.readTextFile(new URL(`${name}.events.jsonl`, FIXTURES)),
      );
      assert.deepEqual(decode(text, cut), golden);
    });
  }
}

Deno.test("chat decoder: a mid-stream error never carries the upstream's key", async () => {
  const text = await Deno.readTextFile(new URL("mid_stream_error.sse", FIXTURES));
  const out = JSON.stringify(decode(text));
  assert.ok(!out.includes("Abc123Def456"), out);
});

Deno.test("chat decoder: calls sharing index 0 but with new ids are separate calls", () => {
  const call = (id: string, name: string, args: string) =>
    delta({
      tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: args } }],
    });
  const events = decode(
    sse(call("a", "f", '{"x":1}'), call("b", "g", "{}"), delta({}, "tool_calls"), "[DONE]"),
  );
  assert.deepEqual(events.filter((e) => (e as Event).type.startsWith("tool_call")), [
    { type: "tool_call_start", index: 0, id: "a", name: "f" },
    { type: "tool_call_delta", index: 0, json: '{"x":1}' },
    { type: "tool_call_start", index: 1, id: "b", name: "g" },
    { type: "tool_call_delta", index: 1, json: "{}" },
    { type: "tool_call_end", index: 0 },
    { type: "tool_call_end", index: 1 },
  ]);
});

Deno.test("chat decoder: reasoning_content (DeepSeek) and refusal are read", () => {
  const events = decode(
    sse(
      delta({ reasoning_content: "think" }),
      delta({ refusal: "I can't help with that." }),
      delta({}, "content_filter"),
      "[DONE]",
    ),
  );
  assert.deepEqual(events.slice(1), [
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "think" },
    { type: "reasoning_end" },
    { type: "text_start", refusal: true },
    { type: "text_delta", delta: "I can't help with that." },
    { type: "text_end" },
    { type: "finish", reason: "content_filter" },
  ]);
});

Deno.test("chat decoder: OpenRouter reasoning_details signatures and encrypted data", () => {
  const events = decode(
    sse(
      delta({
        reasoning: "abc",
        reasoning_details: [{ type: "reasoning.text", text: "abc", signature: "sig1" }],
      }),
      delta({ reasoning_details: [{ type: "reasoning.encrypted", data: "ENC" }] }),
      delta({ content: "ok" }, "stop"),
      "[DONE]",
    ),
  );
  // Each value sealed with its entry, to go back to OpenRouter as it came; each ends its block.
  const sig = events[3] as { signature: string };
  const data = events[6] as { data: string };
  assert.deepEqual(events.slice(1, 8), [
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "abc" },
    { type: "reasoning_signature", signature: sig.signature },
    { type: "reasoning_end" },
    { type: "reasoning_start" },
    { type: "reasoning_redacted", data: data.data },
    { type: "reasoning_end" },
  ]);
  assert.deepEqual(openDetail(sig.signature), { type: "reasoning.text", signature: "sig1" });
  assert.deepEqual(openDetail(data.data), { type: "reasoning.encrypted", data: "ENC" });
});

Deno.test("chat decoder: content and finish in one chunk close the block before finish", () => {
  const events = decode(sse(delta({ content: "hi" }, "length")));
  assert.deepEqual(events, [
    { type: "response_start", id: "c1", model: "m" },
    { type: "text_start" },
    { type: "text_delta", delta: "hi" },
    { type: "text_end" },
    { type: "finish", reason: "length" },
  ]);
});

Deno.test("chat decoder: usage in the finish chunk and after it are both reported", () => {
  const events = decode(
    sse(
      { ...delta({}, "stop"), usage: { prompt_tokens: 1, completion_tokens: 2 } },
      { id: "c1", choices: [], usage: { prompt_tokens: 1, completion_tokens: 3 } },
      "[DONE]",
    ),
  );
  assert.deepEqual(events.slice(1), [
    { type: "finish", reason: "stop" },
    { type: "usage", usage: { input: 1, output: 2 } },
    { type: "usage", usage: { input: 1, output: 3 } },
  ]);
});

Deno.test("chat decoder: [DONE] without a finish_reason is a natural stop", () => {
  const events = decode(sse(delta({ content: "x" }), "[DONE]"));
  assert.deepEqual(events.slice(-2), [{ type: "text_end" }, { type: "finish", reason: "stop" }]);
});

Deno.test("chat decoder: a finish without [DONE] is a clean end", () => {
  const events = decode(sse(delta({ content: "x" }, "stop")));
  assert.equal(events.some((e) => (e as Event).type === "error"), false);
});

Deno.test("chat decoder: malformed JSON becomes one error event, then only usage", () => {
  const events = decode(
    sse(delta({ content: "x" }), "{not json", delta({ content: "y" }), {
      choices: [],
      usage: { prompt_tokens: 5, completion_tokens: 1 },
    }),
  );
  assert.deepEqual(events.slice(3), [
    { type: "error", status: 502, message: "upstream sent a malformed chunk" },
    { type: "usage", usage: { input: 5, output: 1 } },
  ]);
});

Deno.test("chat decoder: unknown named events and keep-alive comments are skipped", () => {
  const text = ': ping\n\nevent: vendor_stats\ndata: {"x":1}\n\n' +
    sse(delta({ content: "a" }, "stop"), "[DONE]");
  assert.deepEqual(decode(text).map((e) => (e as Event).type), [
    "response_start",
    "text_start",
    "text_delta",
    "text_end",
    "finish",
  ]);
});

Deno.test("chat decoder: an error as the first chunk emits no response_start", () => {
  const events = decode(sse({ error: { message: "overloaded", code: 503 } }));
  assert.deepEqual(events, [{ type: "error", status: 502, message: "overloaded" }]);
});

Deno.test("chat decoder: nothing after [DONE] is read", () => {
  const events = decode(sse(delta({}, "stop"), "[DONE]", delta({ content: "late" })));
  assert.deepEqual(events.map((e) => (e as Event).type), ["response_start", "finish"]);
});

Deno.test("chat decoder: an empty stream ended early is an error", () => {
  assert.deepEqual(decode(""), [
    { type: "error", status: 502, message: "upstream stream ended early" },
  ]);
});

// ---- bodies --------------------------------------------------------------------------------

const body = (message: unknown, finish = "stop", usage?: unknown) => ({
  id: "chatcmpl-b",
  object: "chat.completion",
  created: 1,
  model: "gpt-x",
  choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
  ...(usage ? { usage } : {}),
});

const decodeBody = (b: unknown) => {
  const out: Event[] = [];
  decodeChatBody(b, (e) => out.push(e));
  return out.map(eventJson);
};

Deno.test("chat body decoder: text body gives the same events as its stream", async () => {
  const text = await Deno.readTextFile(new URL("text.sse", FIXTURES));
  const stream = decode(text);
  const content = stream.flatMap((e) => (e as { delta?: string }).delta ?? []).join("");
  const events = decodeBody({
    ...body({ role: "assistant", content, refusal: null }, "stop", {
      prompt_tokens: 19,
      completion_tokens: 12,
      total_tokens: 31,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    }),
    id: "chatcmpl-tg0001text",
    model: "gpt-4o-mini-2024-07-18",
  });
  // One delta instead of five; otherwise the same sequence.
  const squash = (es: unknown[]) => {
    const out: unknown[] = [];
    for (const e of es) {
      const last = out.at(-1) as { type: string; delta: string } | undefined;
      const ev = e as { type: string; delta: string };
      if (ev.type === "text_delta" && last?.type === "text_delta") last.delta += ev.delta;
      else out.push({ ...ev });
    }
    return out;
  };
  assert.deepEqual(events, squash(stream));
});

Deno.test("chat body decoder: tool calls, reasoning and usage", () => {
  const events = decodeBody(body(
    {
      role: "assistant",
      content: null,
      reasoning: "plan",
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "a", arguments: '{"p":1}' } },
        { id: "call_2", type: "function", function: { name: "b", arguments: "{}" } },
      ],
    },
    "tool_calls",
    { prompt_tokens: 71, completion_tokens: 46, prompt_tokens_details: { cached_tokens: 64 } },
  ));
  assert.deepEqual(events, [
    { type: "response_start", id: "chatcmpl-b", model: "gpt-x" },
    { type: "reasoning_start" },
    { type: "reasoning_delta", delta: "plan" },
    { type: "reasoning_end" },
    { type: "tool_call_start", index: 0, id: "call_1", name: "a" },
    { type: "tool_call_delta", index: 0, json: '{"p":1}' },
    { type: "tool_call_start", index: 1, id: "call_2", name: "b" },
    { type: "tool_call_delta", index: 1, json: "{}" },
    { type: "tool_call_end", index: 0 },
    { type: "tool_call_end", index: 1 },
    { type: "finish", reason: "tool_calls" },
    { type: "usage", usage: { input: 71, output: 46, cacheRead: 64 } },
  ]);
});

Deno.test("chat body decoder: an error body and a body without choices are errors", () => {
  assert.deepEqual(decodeBody({ error: { message: "boom Bearer abc.def", code: 500 } }), [
    { type: "error", status: 502, message: "boom Bearer ***" },
  ]);
  assert.deepEqual(decodeBody({ id: "x", model: "m", choices: [] }), [
    { type: "response_start", id: "x", model: "m" },
    { type: "error", status: 502, message: "upstream returned no choices" },
  ]);
  assert.deepEqual(decodeBody("nope"), [
    { type: "error", status: 502, message: "upstream returned an invalid body" },
  ]);
});

Deno.test("decoder: plain text chunks in OpenAI's layout decode exactly, escapes included", () => {
  const texts = ["Hel", 'lo "quoted"\n', "\\back\\slash", "caf\u00e9 \ud83d\ude00", ""];
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, id = "c1") =>
    `data: ${
      JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        service_tier: "default",
        system_fingerprint: null,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        usage: null,
        obfuscation: "x",
      })
    }\n\n`;
  const sse = chunk({ role: "assistant", content: "" }) +
    texts.map((t) => chunk({ content: t })).join("") +
    chunk({ content: "other stream" }, null, "c2") +
    chunk({}, "stop") + "data: [DONE]\n\n";
  const d = createChatDecoder();
  const events: Event[] = [];
  const s = new SseSplitter();
  s.push(sse, (ev) => d.event(ev, (e) => events.push(e)));
  d.end((e) => events.push(e));
  const text = events.flatMap((e) => e.type === "text_delta" ? [e.delta] : []).join("");
  assert.equal(text, texts.join("") + "other stream");
  assert.deepEqual(events.at(-1), { type: "finish", reason: "stop" });
});

Deno.test("chat decoder: a tool call the upstream sent without an id gets one of its own, unique across answers", () => {
  const answer = () =>
    decode(sse(
      delta({
        tool_calls: [{ index: 0, type: "function", function: { name: "f", arguments: "{}" } }],
      }),
      delta({}, "tool_calls"),
    )).filter((e) => (e as { type?: string }).type === "tool_call_start") as { id: string }[];
  const [a] = answer();
  const [b] = answer();
  assert.match(a.id, /^call_[A-Za-z0-9]{10,}$/);
  assert.notEqual(a.id, b.id);
});

Deno.test("chat decoder: a plain text chunk that is not valid JSON is malformed, not a throw", () => {
  const chunk = (text: string) =>
    `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",` +
    `"choices":[{"index":0,"delta":{"content":"${text}"},"finish_reason":null}]}`;
  // A raw line feed: a data payload split over two `data:` lines; and a bad escape.
  for (const bad of ["line1\nline2", "bad \\x escape"]) {
    const d = createChatDecoder();
    const events: Event[] = [];
    d.event({ data: chunk("a"), raw: "" }, (e) => events.push(e));
    d.event({ data: chunk(bad), raw: "" }, (e) => events.push(e));
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    assert.match(last.type === "error" ? last.error.message : "", /malformed/);
  }
});

Deno.test("chat decoder: a custom tool's free-form input is the JSON {input} of its function form, streamed and whole", () => {
  // Other formats carry JSON arguments only (a messages client's SDK parses them; a responses
  // client's custom call is read back from `{"input": …}`, responses/tools.ts customInput).
  const input = 'SELECT "a"\n\\ 1';
  const call = { id: "call_1", type: "custom", custom: { name: "run_sql", input } };
  const json = (events: Event[]) =>
    events.flatMap((e) => e.type === "tool_call_delta" ? [e.json] : []).join("");
  const streamed = decodeStream(
    createChatDecoder(),
    sse(
      delta({ tool_calls: [{ index: 0, ...call, custom: { name: "run_sql", input: "" } }] }),
      delta({ tool_calls: [{ index: 0, custom: { input: 'SELECT "a"' } }] }),
      delta({ tool_calls: [{ index: 0, custom: { input: "\n\\ 1" } }] }),
      delta({}, "tool_calls"),
      "[DONE]",
    ),
    "whole",
  );
  const body: Event[] = [];
  decodeChatBody({
    id: "c1",
    model: "m",
    choices: [{
      index: 0,
      message: { role: "assistant", content: null, tool_calls: [call] },
      finish_reason: "tool_calls",
    }],
  }, (e) => body.push(e));
  for (const events of [streamed, body]) {
    assert.deepEqual(JSON.parse(json(events)), { input });
    assert.deepEqual(events.filter((e) => e.type === "tool_call_end").length, 1);
  }
});

Deno.test("chat decoder: the deprecated function_call is a tool call, streamed and whole", () => {
  // Finished `function_call`, it must not leave a `tool_calls` finish without any call.
  const calls = (events: Event[]) =>
    events.flatMap((e) =>
      e.type === "tool_call_start"
        ? [`${e.name}:`]
        : e.type === "tool_call_delta"
        ? [e.json]
        : e.type === "tool_call_end"
        ? ["|"]
        : []
    ).join("");
  const streamed = decodeStream(
    createChatDecoder(),
    sse(
      delta({ role: "assistant", content: null, function_call: { name: "f", arguments: "" } }),
      delta({ function_call: { arguments: '{"a":' } }),
      delta({ function_call: { arguments: "1}" } }),
      delta({}, "function_call"),
      "[DONE]",
    ),
    "whole",
  );
  const body: Event[] = [];
  decodeChatBody({
    id: "c1",
    model: "m",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        function_call: { name: "f", arguments: '{"a":1}' },
      },
      finish_reason: "function_call",
    }],
  }, (e) => body.push(e));
  for (const events of [streamed, body]) {
    assert.equal(calls(events), 'f:{"a":1}|');
    assert.deepEqual(events.at(-1), { type: "finish", reason: "tool_calls" });
  }
});

Deno.test("chat decoder: an empty function_call stub (Go-SDK proxies send one on every chunk) is no call", () => {
  // Servers built on the Go SDK serialise every field: `function_call: {name: "", arguments: ""}`
  // beside the text, and beside real tool calls. Read as a call, the answer gained a call of
  // no name (and the text was cut into a block per chunk).
  const stub = { name: "", arguments: "" };
  const streamed = decode(
    sse(
      delta({ role: "assistant", content: "", function_call: stub, tool_calls: [] }),
      delta({ content: "Hel", function_call: stub }),
      delta({ content: "lo", function_call: stub }),
      delta({ function_call: stub, tool_calls: [] }, "stop"),
      "[DONE]",
    ),
    "whole",
  ) as Event[];
  const body: Event[] = [];
  decodeChatBody({
    id: "c1",
    model: "m",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "Hello", function_call: stub },
      finish_reason: "stop",
    }],
  }, (e) => body.push(e));
  for (const events of [streamed, body]) {
    assert.equal(events.filter((e) => e.type.startsWith("tool_call")).length, 0);
    assert.equal(events.filter((e) => e.type === "text_start").length, 1);
  }
});

Deno.test("chat decoder: a tool call is read by its type, beside another kind's empty stub (Go SDK)", () => {
  // The Go SDK's tool call union serialises both kinds: a function call carries an empty
  // `custom`, a custom call an empty `function`.
  const body: Event[] = [];
  decodeChatBody({
    id: "c1",
    model: "m",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "f", arguments: '{"a":1}' },
            custom: { name: "", input: "" },
          },
          {
            id: "call_2",
            type: "custom",
            function: { name: "", arguments: "" },
            custom: { name: "g", input: 'say "hi"' },
          },
        ],
      },
      finish_reason: "tool_calls",
    }],
  }, (e) => body.push(e));
  const calls = new Map<number, { name: string; json: string }>();
  for (const e of body) {
    if (e.type === "tool_call_start") calls.set(e.index, { name: e.name, json: "" });
    if (e.type === "tool_call_delta") calls.get(e.index)!.json += e.json;
  }
  assert.deepEqual([...calls.values()], [
    { name: "f", json: '{"a":1}' },
    { name: "g", json: JSON.stringify({ input: 'say "hi"' }) },
  ]);
});

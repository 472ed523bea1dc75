import assert from "node:assert/strict";
import type { Event } from "../../events/event.ts";
import { createMessagesDecoder, decodeMessagesBody, quickTextDelta } from "./decode.ts";
import {
  type Chunking,
  chunksOf,
  decodeSse,
  FIXTURES,
  normalizeEvents,
  parseJsonl,
  splitSse,
} from "./test_util.ts";

const SCENARIOS = ["text", "thinking", "tool_use", "cache_usage", "midstream_error", "cut_stream"];
const CHUNKINGS: Chunking[] = ["whole", "lines", "bytes"];

const read = (name: string) => Deno.readTextFileSync(new URL(name, FIXTURES));

for (const scenario of SCENARIOS) {
  Deno.test(`decoder: ${scenario}.sse gives its golden events whole, line by line and byte by byte`, () => {
    const sse = read(`${scenario}.sse`);
    const golden = parseJsonl(read(`${scenario}.events.jsonl`));
    for (const how of CHUNKINGS) {
      assert.deepEqual(normalizeEvents(decodeSse(createMessagesDecoder(), sse, how)), golden, how);
    }
  });
}

Deno.test("body decoder: a message body gives its golden events", () => {
  const events: Event[] = [];
  decodeMessagesBody(JSON.parse(read("body_thinking_tool_use.json")), (e) => events.push(e));
  assert.deepEqual(
    normalizeEvents(events),
    parseJsonl(read("body_thinking_tool_use.events.jsonl")),
  );
});

Deno.test("body decoder: an error body becomes an error event", () => {
  const events: Event[] = [];
  decodeMessagesBody(
    { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    (e) => events.push(e),
  );
  assert.deepEqual(normalizeEvents(events), [
    { type: "error", status: 503, message: "upstream provider is overloaded, retry later" },
  ]);
});

const frame = (data: unknown, event?: string) => {
  const json = JSON.stringify(data);
  return (event ? `event: ${event}\n` : "") + `data: ${json}\n\n`;
};
const START = frame({
  type: "message_start",
  message: { id: "msg_1", model: "m", usage: { input_tokens: 5, output_tokens: 1 } },
}, "message_start");
/** Block 0 closes and the message ends its turn, three output tokens in all. */
const BLOCK_STOP_AND_END_TURN =
  frame({ type: "content_block_stop", index: 0 }, "content_block_stop") +
  frame({
    type: "message_delta",
    delta: { stop_reason: "end_turn" },
    usage: { output_tokens: 3 },
  }, "message_delta");

Deno.test("decoder: unknown events and delta types are skipped, not errors", () => {
  const sse = START +
    frame(
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      "content_block_start",
    ) +
    frame({
      type: "content_block_delta",
      index: 0,
      delta: { type: "citations_delta", citation: {} },
    }, "content_block_delta") +
    frame({ type: "future_event", x: 1 }, "future_event") +
    BLOCK_STOP_AND_END_TURN +
    frame({ type: "message_stop" }, "message_stop");
  assert.deepEqual(normalizeEvents(decodeSse(createMessagesDecoder(), sse)), [
    { type: "response_start", id: "msg_1", model: "m" },
    { type: "usage", usage: { input: 5 } },
    { type: "text_start" },
    { type: "text_end" },
    { type: "usage", usage: { input: 5, output: 3 } },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("decoder: a web search block is one web_search event with its query; its results are skipped", () => {
  const search = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} };
  const result = {
    type: "web_search_tool_result",
    tool_use_id: "srvtoolu_1",
    content: [{ type: "web_search_result", url: "https://example.com", title: "t" }],
  };
  const fetch = { type: "server_tool_use", id: "srvtoolu_2", name: "web_fetch", input: {} };
  const block = (index: number, content_block: unknown) =>
    frame({ type: "content_block_start", index, content_block }, "content_block_start");
  const json = (index: number, partial_json: string) =>
    frame(
      { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } },
      "content_block_delta",
    );
  const stop = (index: number) =>
    frame({ type: "content_block_stop", index }, "content_block_stop");
  const sse = START + block(0, search) + json(0, '{"query": "deno') + json(0, ' 2.9"}') +
    stop(0) + block(1, result) + stop(1) + block(2, fetch) + json(2, '{"url":"x"}') + stop(2) +
    block(3, { type: "text", text: "" }) +
    frame({
      type: "content_block_delta",
      index: 3,
      delta: { type: "text_delta", text: "It is out." },
    }, "content_block_delta") +
    frame({ type: "content_block_stop", index: 3 }, "content_block_stop") +
    frame({
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 3, server_tool_use: { web_search_requests: 1 } },
    }, "message_delta");
  const events = normalizeEvents(decodeSse(createMessagesDecoder(), sse));
  assert.deepEqual(events.slice(2), [
    { type: "web_search", id: "srvtoolu_1", query: "deno 2.9" },
    { type: "text_start" },
    { type: "text_delta", delta: "It is out." },
    { type: "text_end" },
    { type: "usage", usage: { input: 5, output: 3, webSearches: 1 } },
    { type: "finish", reason: "stop" },
  ]);

  const body: Event[] = [];
  decodeMessagesBody({
    id: "msg_1",
    content: [{ ...search, input: { query: "deno 2.9" } }, result, fetch, {
      type: "text",
      text: "It is out.",
    }],
    stop_reason: "end_turn",
  }, (e) => body.push(e));
  assert.deepEqual(body.slice(1, 3), [
    { type: "web_search", id: "srvtoolu_1", query: "deno 2.9" },
    { type: "text_start" },
  ]);
});

Deno.test("decoder: events without an event line are read by their payload type", () => {
  const sse = frame({ type: "message_start", message: { id: "a", model: "m" } }) +
    frame({ type: "message_delta", delta: { stop_reason: "refusal" } }) +
    frame({ type: "message_stop" });
  assert.deepEqual(normalizeEvents(decodeSse(createMessagesDecoder(), sse)), [
    { type: "response_start", id: "a", model: "m" },
    { type: "finish", reason: "content_filter" },
  ]);
});

Deno.test("decoder: a malformed event is an error and ends decoding", () => {
  const sse = START + "event: content_block_start\ndata: {not json\n\n" +
    frame({ type: "message_stop" }, "message_stop");
  const events = normalizeEvents(decodeSse(createMessagesDecoder(), sse));
  assert.deepEqual(events.at(-1), {
    type: "error",
    status: 502,
    message: "upstream provider sent a malformed stream event",
  });
  assert.equal(events.filter((e) => (e as Event).type === "error").length, 1);
});

Deno.test("decoder: message_stop without message_delta still finishes, closing open blocks", () => {
  const sse = START +
    frame({
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: "t", name: "f", input: { a: 1 } },
    }) +
    frame({ type: "message_stop" });
  assert.deepEqual(normalizeEvents(decodeSse(createMessagesDecoder(), sse)).slice(2), [
    { type: "tool_call_start", index: 0, id: "t", name: "f" },
    { type: "tool_call_delta", index: 0, json: '{"a":1}' },
    { type: "tool_call_end", index: 0 },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("decoder: compaction iterations are summed into the usage", () => {
  const sse = frame({
    type: "message_start",
    message: {
      id: "a",
      model: "m",
      usage: { input_tokens: 100, cache_read_input_tokens: 5000, output_tokens: 7 },
    },
  }) +
    frame({
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: {
        input_tokens: 181,
        cache_read_input_tokens: 0,
        output_tokens: 8,
        iterations: [
          {
            type: "compaction",
            input_tokens: 100,
            cache_read_input_tokens: 5000,
            output_tokens: 83,
          },
          { type: "message", input_tokens: 181, cache_read_input_tokens: 0, output_tokens: 8 },
        ],
      },
    }) + frame({ type: "message_stop" });
  const usage = decodeSse(createMessagesDecoder(), sse).filter((e) => e.type === "usage").at(-1);
  assert.deepEqual(usage, {
    type: "usage",
    usage: { input: 100 + 5000 + 181, cacheRead: 5000, output: 91 },
  });
});

Deno.test("decoder: only usage is read after the finish", () => {
  const sse = START +
    frame({
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 2 },
    }) +
    frame({
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "late" },
    }) +
    frame({ type: "message_delta", delta: {}, usage: { output_tokens: 4 } });
  const types = decodeSse(createMessagesDecoder(), sse).map((e) => e.type);
  assert.deepEqual(types, ["response_start", "usage", "usage", "finish", "usage"]);
});

Deno.test("quick text delta: what it reads is what JSON.parse reads, and it declines the rest", () => {
  const head = '{"type":"content_block_delta","index":';
  const texts = [
    "Hello",
    " world",
    "",
    "日本語 🙂",
    'say "hi"',
    "a\\b",
    "line\nbreak",
    "tab\t",
    "\u0001",
    "/",
  ];
  const cases: string[] = [];
  for (const text of texts) {
    for (const index of [0, 7, 123456]) {
      const canonical = JSON.stringify({
        type: "content_block_delta",
        index,
        delta: { type: "text_delta", text },
      });
      cases.push(canonical, canonical.replace(/}}$/, "}   }"));
    }
  }
  cases.push(
    head + '01,"delta":{"type":"text_delta","text":"x"}}', // leading zero: not JSON
    head + '1234567,"delta":{"type":"text_delta","text":"x"}}',
    head + ',"delta":{"type":"text_delta","text":"x"}}',
    head + '0,"delta":{"type":"text_delta","text":"a"b"}}', // broken string
    head + '0,"delta":{"type":"text_delta","text":"x\u0007"}}', // raw control character
    head + '0,"delta":{"type":"text_delta","text":"}}', // the text's quote is the tail's
    head + '0,"delta":{"type":"thinking_delta","thinking":"x"}}',
    '{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}',
  );
  let quick = 0;
  for (const data of cases) {
    const got = quickTextDelta(data);
    if (got === undefined) continue;
    quick++;
    const parsed = JSON.parse(data);
    assert.deepEqual(got, { index: parsed.index, text: parsed.delta.text }, data);
  }
  // Plain texts in the canonical shape are read quickly (5 texts × 3 indexes); escapes,
  // padding and every odd case above go to the full parse.
  assert.equal(quick, 15);
});

Deno.test("decoder: text deltas read quickly give the same events as fully parsed ones", () => {
  const text = (i: number, t: string, padded: boolean) => {
    const json = JSON.stringify({
      type: "content_block_delta",
      index: i,
      delta: { type: "text_delta", text: t },
    });
    return `event: content_block_delta\ndata: ${padded ? json.replace(/}}$/, "} }") : json}\n\n`;
  };
  const stream = (padded: boolean) =>
    START +
    frame(
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      "content_block_start",
    ) +
    text(0, "Hi", padded) + text(0, 'a "quote"', padded) + text(0, "", padded) +
    text(5, "no such block", padded) +
    BLOCK_STOP_AND_END_TURN +
    text(0, "after the finish", padded) +
    frame({ type: "message_stop" }, "message_stop");
  const quick = normalizeEvents(decodeSse(createMessagesDecoder(), stream(false)));
  assert.deepEqual(quick, normalizeEvents(decodeSse(createMessagesDecoder(), stream(true))));
  assert.deepEqual(
    quick.filter((e) => (e as Event).type === "text_delta"),
    [{ type: "text_delta", delta: "Hi" }, { type: "text_delta", delta: 'a "quote"' }],
  );
});

Deno.test("stream decoder: complete once message_stop came, not before (nor after message_delta alone)", () => {
  for (const named of [true, false]) {
    const d = createMessagesDecoder();
    const events = splitSse(chunksOf(read("text.sse"), "whole"));
    assert.ok(events.length > 0);
    const seen: boolean[] = [];
    for (const ev of events) {
      d.event(named ? ev : { ...ev, event: undefined }, () => {});
      seen.push(d.complete === true);
    }
    assert.deepEqual(seen.slice(-2), [false, true], named ? "named events" : "unnamed events");
  }
});

import assert from "node:assert/strict";
import type { FinishReason } from "../../events/event.ts";
import { fromMessagesStopReason, toMessagesStopReason } from "./finish_reason.ts";
import { fromMessagesUsage, toMessagesUsage } from "./usage.ts";

Deno.test("cache accounting: internal input includes cache reads and writes", () => {
  const wire = {
    input_tokens: 3,
    output_tokens: 33,
    cache_creation_input_tokens: 418,
    cache_read_input_tokens: 1111,
  };
  const usage = fromMessagesUsage(wire);
  assert.deepEqual(usage, { input: 1532, output: 33, cacheRead: 1111, cacheWrite: 418 });
  assert.deepEqual(toMessagesUsage(usage), wire);
});

Deno.test("cache accounting: one-hour cache writes are told apart from five-minute ones", () => {
  const usage = fromMessagesUsage({
    input_tokens: 3,
    output_tokens: 33,
    cache_creation_input_tokens: 418,
    cache_creation: { ephemeral_5m_input_tokens: 18, ephemeral_1h_input_tokens: 400 },
    cache_read_input_tokens: 0,
  } as never);
  assert.deepEqual(usage, {
    input: 421,
    output: 33,
    cacheRead: 0,
    cacheWrite: 418,
    cacheWrite1h: 400,
  });
  // No one-hour writes: nothing extra in the internal usage.
  assert.equal(
    fromMessagesUsage({
      input_tokens: 3,
      cache_creation_input_tokens: 18,
      cache_creation: { ephemeral_1h_input_tokens: 0 },
    }).cacheWrite1h,
    undefined,
  );
});

Deno.test("cache accounting: the same prompt gives the same internal numbers however reported", () => {
  // A chat-style report (prompt_tokens includes cached tokens) and the messages report of it.
  const chatStyle = { input: 1532, output: 33, cacheRead: 1111, cacheWrite: 418 };
  assert.deepEqual(fromMessagesUsage(toMessagesUsage(chatStyle)), chatStyle);
});

Deno.test("usage: unreported fields stay unknown when decoding and are 0 when encoding", () => {
  assert.deepEqual(fromMessagesUsage({ output_tokens: 5 }), { output: 5 });
  assert.deepEqual(fromMessagesUsage({ input_tokens: null, output_tokens: 5 } as never), {
    output: 5,
  });
  assert.deepEqual(toMessagesUsage({}), {
    input_tokens: 0,
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  });
});

Deno.test("usage: thinking tokens are the reasoning part of the output", () => {
  assert.deepEqual(
    fromMessagesUsage({
      input_tokens: 1,
      output_tokens: 9,
      output_tokens_details: { thinking_tokens: 4 },
    }),
    { input: 1, output: 9, reasoning: 4 },
  );
});

Deno.test("usage: compaction iterations are summed", () => {
  assert.deepEqual(
    fromMessagesUsage({
      input_tokens: 181,
      output_tokens: 8,
      iterations: [
        {
          input_tokens: 100,
          output_tokens: 83,
          cache_read_input_tokens: 55096,
          cache_creation_input_tokens: 0,
        },
        {
          input_tokens: 181,
          output_tokens: 8,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: 0,
        },
      ],
    }),
    { input: 55377, output: 91, cacheRead: 55096, cacheWrite: 0 },
  );
});

Deno.test("stop reasons map to finish reasons and back", () => {
  const table: [string, FinishReason, string][] = [
    ["end_turn", "stop", "end_turn"],
    ["stop_sequence", "stop_sequence", "stop_sequence"],
    ["max_tokens", "length", "max_tokens"],
    ["tool_use", "tool_calls", "tool_use"],
    ["refusal", "content_filter", "refusal"],
    ["pause_turn", "stop", "end_turn"],
    ["model_context_window_exceeded", "length", "max_tokens"],
    ["something_new", "stop", "end_turn"],
  ];
  for (const [wire, internal, back] of table) {
    assert.equal(fromMessagesStopReason(wire), internal, wire);
    assert.equal(toMessagesStopReason(internal), back, wire);
  }
  assert.equal(fromMessagesStopReason(null), "stop");
  assert.equal(toMessagesStopReason("error"), "end_turn");
});

Deno.test("usage: web searches the upstream ran are counted, also beside compaction iterations", () => {
  assert.equal(
    fromMessagesUsage({
      input_tokens: 10,
      output_tokens: 5,
      server_tool_use: { web_search_requests: 3 },
    }).webSearches,
    3,
  );
  // Zero (what every answer without searches reports) stays unset: reports are unchanged.
  assert.equal(
    "webSearches" in
      fromMessagesUsage({ input_tokens: 1, server_tool_use: { web_search_requests: 0 } }),
    false,
  );
  const summed = fromMessagesUsage({
    input_tokens: 181,
    output_tokens: 8,
    server_tool_use: { web_search_requests: 2 },
    iterations: [{ input_tokens: 100, output_tokens: 83 }, { input_tokens: 181, output_tokens: 8 }],
  });
  assert.deepEqual(summed, { input: 281, output: 91, webSearches: 2 });
  // And written back out for a messages client when a search ran.
  assert.deepEqual(toMessagesUsage({ input: 1, output: 1, webSearches: 2 }).server_tool_use, {
    web_search_requests: 2,
    web_fetch_requests: 0,
  });
  assert.equal("server_tool_use" in toMessagesUsage({ input: 1, output: 1 }), false);
});

import assert from "node:assert/strict";
import type { FinishReason } from "../../events/event.ts";
import { finishFromChat, finishToChat } from "./finish_reason.ts";

Deno.test("finishFromChat maps OpenAI's and vendors' reasons", () => {
  const cases: [string, FinishReason][] = [
    ["stop", "stop"],
    ["length", "length"],
    ["tool_calls", "tool_calls"],
    ["function_call", "tool_calls"],
    ["content_filter", "content_filter"],
    ["error", "error"],
    ["max_tokens", "length"],
    ["tool_use", "tool_calls"],
    ["end_turn", "stop"],
    ["something_new", "stop"],
  ];
  for (const [chat, internal] of cases) assert.equal(finishFromChat(chat), internal, chat);
});

Deno.test("finishToChat folds stop_sequence into stop and keeps the rest", () => {
  const cases: [FinishReason, string][] = [
    ["stop", "stop"],
    ["stop_sequence", "stop"],
    ["length", "length"],
    ["tool_calls", "tool_calls"],
    ["content_filter", "content_filter"],
    ["error", "error"],
  ];
  for (const [internal, chat] of cases) assert.equal(finishToChat(internal), chat);
});

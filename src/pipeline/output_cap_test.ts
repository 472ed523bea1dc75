import assert from "node:assert/strict";
import { capBodyOutput } from "./pipeline.ts";

Deno.test("output cap: every format's limit field held at the model's cap, a thinking budget below it", () => {
  const chat: Record<string, unknown> = { max_tokens: 9000, max_completion_tokens: 9000 };
  capBodyOutput(chat, 4096);
  assert.deepEqual(chat, { max_tokens: 4096, max_completion_tokens: 4096 });
  const under: Record<string, unknown> = { max_output_tokens: 100 };
  capBodyOutput(under, 4096);
  assert.deepEqual(under, { max_output_tokens: 100 });
  const messages: Record<string, unknown> = {
    max_tokens: 9000,
    thinking: { type: "enabled", budget_tokens: 8000 },
  };
  capBodyOutput(messages, 4096);
  assert.deepEqual(messages, {
    max_tokens: 4096,
    thinking: { type: "enabled", budget_tokens: 4095 },
  });
  // No room for Anthropic's least budget: thinking goes, with the edits that need it.
  const tight: Record<string, unknown> = {
    max_tokens: 9000,
    thinking: { type: "enabled", budget_tokens: 8000 },
    context_management: { edits: [{ type: "clear_thinking_20251015" }] },
  };
  capBodyOutput(tight, 1000);
  assert.equal(tight.max_tokens, 1000);
  assert.equal(tight.thinking, undefined);
  assert.equal(JSON.stringify(tight).includes("clear_thinking"), false);
  // A body whose limit was within the cap keeps its budget as sent.
  const own: Record<string, unknown> = { max_tokens: 900, thinking: { budget_tokens: 2000 } };
  capBodyOutput(own, 1000);
  assert.deepEqual(own, { max_tokens: 900, thinking: { budget_tokens: 2000 } });
});

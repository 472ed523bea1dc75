import assert from "node:assert/strict";
import type { Event } from "../../events/event.ts";
import { validateMessagesRequest } from "../messages/schema.ts";
import * as messages from "../messages/request.ts";
import { createMessagesEncoder } from "../messages/encode.ts";
import { createChatDecoder } from "./decode.ts";
import { fromInternal } from "./request.ts";
import {
  detailsOut,
  forAnthropic,
  forOpenAI,
  openDetail,
  partsFromDetails,
  sealDetail,
} from "./reasoning_details.ts";
import { decodeStream } from "./test_support.ts";
import { encodeResponsesBody } from "../responses/encode.ts";
import * as responses from "../responses/request.ts";

/** A Gemini tool round as OpenRouter streams it: signed text, an encrypted thought signature. */
const GEMINI_DETAILS = [
  {
    type: "reasoning.text",
    text: "Let me look",
    signature: "gsig",
    format: "google-gemini-v1",
    index: 0,
  },
  { type: "reasoning.encrypted", data: "gENC", id: "tool_0", format: "google-gemini-v1", index: 1 },
];

function openRouterStream(): string {
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${
      JSON.stringify({
        id: "or1",
        model: "g",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
    }\n\n`;
  return chunk({
    role: "assistant",
    reasoning: "Let me look",
    reasoning_details: [GEMINI_DETAILS[0]],
  }) +
    chunk({ reasoning_details: [GEMINI_DETAILS[1]] }) +
    chunk({
      tool_calls: [{
        index: 0,
        id: "tool_0",
        type: "function",
        function: { name: "ls", arguments: "{}" },
      }],
    }, "tool_calls") + "data: [DONE]\n\n";
}

/** The Claude client's view: the messages stream's content blocks, folded. */
function claudeBlocks(events: Event[]): Record<string, unknown>[] {
  const enc = createMessagesEncoder({ id: "gen-1", model: "google/gemini-3.7-flash", created: 0 });
  let text = "";
  for (const e of events) text += enc.event(e);
  text += enc.event({ type: "cost", cost: { cost: 0, details: {}, usage: {} } });
  const blocks: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    const d = JSON.parse(line.slice(6));
    if (d.type === "content_block_start") blocks[d.index] = { ...d.content_block };
    if (d.type === "content_block_delta") {
      const b = blocks[d.index];
      if (d.delta.type === "thinking_delta") b.thinking = `${b.thinking ?? ""}${d.delta.thinking}`;
      if (d.delta.type === "signature_delta") b.signature = d.delta.signature;
      if (d.delta.type === "input_json_delta") {
        b.partial = `${b.partial ?? ""}${d.delta.partial_json}`;
      }
    }
  }
  return blocks.map(({ partial, ...b }) =>
    b.type === "tool_use" ? { ...b, input: JSON.parse(String(partial || "{}")) } : b
  );
}

Deno.test("reasoning details: a Claude client's tool round on Gemini goes back to OpenRouter as it came", () => {
  const events = decodeStream(createChatDecoder(), openRouterStream(), "whole");
  const blocks = claudeBlocks(events);
  // Claude Code sends the turn back as it got it, with the tool's result.
  const req = messages.toInternal(
    validateMessagesRequest({
      model: "google/gemini-3.7-flash",
      max_tokens: 100,
      messages: [
        { role: "user", content: "list files" },
        { role: "assistant", content: blocks },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "tool_0", content: "a.txt" }],
        },
      ],
    }),
    "google/gemini-3.7-flash",
  );
  const body = fromInternal(req, "google/gemini-3.7-flash", { openrouterReasoning: true });
  const assistant = (body.messages as Record<string, unknown>[])[1];
  assert.deepEqual(assistant.reasoning_details, GEMINI_DETAILS);
  assert.equal(assistant.reasoning, "Let me look");

  // The same turn to Anthropic: Gemini's signatures cannot be verified there, so they are not
  // sent, and thinking stays off for the open tool round rather than earn a 400.
  const toClaude = messages.fromInternal(
    { ...req, reasoning: { effort: "high" } },
    "claude-x",
    64000,
  );
  const sent = JSON.stringify(toClaude);
  assert.ok(!sent.includes('thinking"'), sent);
  assert.ok(!sent.includes("redacted_thinking"), sent);
  assert.equal(toClaude.thinking, undefined);
});

Deno.test("reasoning details: a responses client's tool round on Gemini goes back to OpenRouter whole", () => {
  const events = decodeStream(createChatDecoder(), openRouterStream(), "whole");
  const tools = [{ type: "function", name: "ls", parameters: { type: "object" } }];
  const answer = encodeResponsesBody(events, { cost: 0, details: {}, usage: {} }, {
    id: "gen-1",
    model: "google/gemini-3.7-flash",
    created: 0,
    clientBody: { tools },
  }) as { output: unknown[] };
  // Codex sends the answer's items back with the tool's output.
  const req = responses.toInternal(
    {
      model: "google/gemini-3.7-flash",
      input: [
        { type: "message", role: "user", content: "list files" },
        ...answer.output,
        { type: "function_call_output", call_id: "tool_0", output: "a.txt" },
      ],
      tools,
    } as Parameters<typeof responses.toInternal>[0],
    "google/gemini-3.7-flash",
  );
  const body = fromInternal(req, "google/gemini-3.7-flash", { openrouterReasoning: true });
  const assistant = (body.messages as Record<string, unknown>[])[1];
  assert.deepEqual(assistant.reasoning_details, GEMINI_DETAILS);
});

Deno.test("reasoning details: a client that switched models sends OpenRouter no other vendor's entries", () => {
  const events = decodeStream(createChatDecoder(), openRouterStream(), "whole");
  const req = messages.toInternal(
    validateMessagesRequest({
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 100,
      messages: [
        { role: "user", content: "list files" },
        { role: "assistant", content: claudeBlocks(events) },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "tool_0", content: "a.txt" }],
        },
      ],
    }),
    "anthropic/claude-sonnet-4.5",
  );
  // Gemini's thought signatures, to Claude through OpenRouter: Anthropic cannot verify them.
  for (const slug of ["anthropic/claude-sonnet-4.5", "openai/gpt-5", "deepseek/deepseek-r1"]) {
    const body = fromInternal(req, slug, { openrouterReasoning: true });
    const assistant = (body.messages as Record<string, unknown>[])[1];
    assert.equal(assistant.reasoning_details, undefined, slug);
    assert.equal(assistant.reasoning, "Let me look", "the text is still the model's to read");
  }
  // A router may pick Gemini again; and Gemini itself gets them.
  for (const slug of ["openrouter/auto", "google/gemini-2.5-pro"]) {
    const body = fromInternal(req, slug, { openrouterReasoning: true });
    const assistant = (body.messages as Record<string, unknown>[])[1];
    assert.deepEqual(assistant.reasoning_details, GEMINI_DETAILS, slug);
  }
  // OpenAI's encrypted reasoning (a turn of openai/* through OpenRouter) goes to OpenAI only.
  const openai = partsFromDetails([
    { type: "reasoning.encrypted", data: "gAAAAAx", format: "openai-responses-v1", id: "rs_1" },
  ], undefined);
  assert.deepEqual(detailsOut(openai, { anthropic: false, openai: false, slug: "google/g" }), []);
  assert.equal(
    detailsOut(openai, { anthropic: false, openai: true, slug: "openai/gpt-5" }).length,
    1,
  );
  assert.equal(detailsOut(openai, { anthropic: true, openai: true }).length, 1, "to a client");
});

Deno.test("reasoning details: Anthropic's own entries through OpenRouter replay to Anthropic", () => {
  const sig = sealDetail({
    type: "reasoning.text",
    signature: "EqAnth",
    format: "anthropic-claude-v1",
  });
  const enc = sealDetail({
    type: "reasoning.encrypted",
    data: "RED",
    format: "anthropic-claude-v1",
  });
  assert.equal(forAnthropic(sig), "EqAnth");
  assert.equal(forAnthropic(enc), "RED");
  assert.equal(forAnthropic("EqRaw"), "EqRaw"); // Anthropic's, issued directly
  assert.equal(
    forAnthropic(
      sealDetail({ type: "reasoning.text", signature: "g", format: "google-gemini-v1" }),
    ),
    undefined,
  );
  assert.equal(forAnthropic("tg.rd.@@@"), undefined); // a broken seal
  assert.equal(openDetail("EqRaw"), undefined);
});

Deno.test("reasoning details: raw signatures go to OpenRouter only for an Anthropic model", () => {
  const parts = [
    { type: "reasoning" as const, text: "t", signature: "EqRaw" },
    { type: "reasoning" as const, text: "", redacted: "RED" },
    { type: "reasoning" as const, text: "", redacted: "gAAAAAfernet" },
    { type: "reasoning" as const, text: "plain" },
  ];
  assert.deepEqual(detailsOut(parts, { anthropic: true, openai: false }), [
    {
      type: "reasoning.text",
      text: "t",
      signature: "EqRaw",
      format: "anthropic-claude-v1",
      index: 0,
    },
    { type: "reasoning.encrypted", data: "RED", format: "anthropic-claude-v1", index: 1 },
  ]);
  assert.deepEqual(detailsOut(parts, { anthropic: false, openai: false }), []);
  // OpenAI's encrypted reasoning, for an OpenAI model (or a client, which may send it back).
  assert.deepEqual(detailsOut(parts, { anthropic: false, openai: true }), [
    { type: "reasoning.encrypted", data: "gAAAAAfernet", format: "openai-responses-v1", index: 0 },
  ]);
});

Deno.test("reasoning details: OpenAI's entry a chat client sends back reaches the responses API as it was", () => {
  const [part] = partsFromDetails([
    { type: "reasoning.encrypted", data: "gAAAAAfernet", format: "openai-responses-v1", index: 0 },
  ], undefined);
  assert.equal(forOpenAI(part.redacted), "gAAAAAfernet");
  assert.equal(forOpenAI("gAAAAAraw"), "gAAAAAraw");
  assert.equal(forOpenAI("RED"), undefined, "another vendor's opaque data is not OpenAI's");
  assert.equal(forAnthropic(part.redacted), undefined);
});

Deno.test("reasoning details: entries sent back as they streamed join by index, each block its own text", () => {
  // A client that keeps every streamed entry (OpenRouter's shape: the text in pieces, the
  // signature in an entry of its own) sends back two signed blocks' worth of fragments.
  const streamed = [
    { type: "reasoning.text", text: "think0", index: 0 },
    { type: "reasoning.text", text: " think1", index: 0 },
    { type: "reasoning.text", signature: "SIG", format: "anthropic-claude-v1", index: 0 },
    { type: "reasoning.text", text: "again", index: 1 },
    { type: "reasoning.text", signature: "SIG2", format: "anthropic-claude-v1", index: 1 },
  ];
  const parts = partsFromDetails(streamed, "think0 think1again");
  assert.deepEqual(parts.map((p) => [p.text, forAnthropic(p.signature)]), [
    ["think0 think1", "SIG"],
    ["again", "SIG2"],
  ]);
});

Deno.test("reasoning details: two signed entries of one index stay two blocks", () => {
  const parts = partsFromDetails([
    { type: "reasoning.text", text: "a", signature: "S1", format: "anthropic-claude-v1", index: 0 },
    { type: "reasoning.text", text: "b", signature: "S2", format: "anthropic-claude-v1", index: 0 },
  ], undefined);
  assert.deepEqual(parts.map((p) => [p.text, forAnthropic(p.signature)]), [["a", "S1"], [
    "b",
    "S2",
  ]]);
});

/**
 * A tool choice that forces a call (messages' `any` or a named tool, chat's and responses'
 * `required` or a named function) gets a tool call with no marker in the prompt, through every
 * upstream protocol, as the vendors answer it. Structured output over a forced tool depends on
 * it: LangChain's `withStructuredOutput` on ChatAnthropic and the AI SDK's Anthropic provider
 * on a model it does not know send `tool_choice: {type: "tool"}` / `{type: "any"}` and read the
 * answer from the call alone — against `deno task dev` they failed with "No parseable tool
 * calls" while the mock answered text.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { withGateway } from "../helpers/gateway.ts";
import { ALL_VIA_ANTHROPIC, ALL_VIA_CHAT, ALL_VIA_RESPONSES } from "../helpers/providers.ts";

const schema = {
  type: "object",
  properties: { answer: { type: "string" }, score: { type: "integer" } },
  required: ["answer", "score"],
  additionalProperties: false,
};

const upstreams = [
  ["anthropic-messages", ALL_VIA_ANTHROPIC],
  ["openai-chat", ALL_VIA_CHAT],
  ["openai-responses", ALL_VIA_RESPONSES],
] as const;

function fits(input: unknown): void {
  const o = input as Record<string, unknown>;
  assert.equal(typeof o.answer, "string", JSON.stringify(input));
  assert.equal(typeof o.score, "number", JSON.stringify(input));
}

for (const [protocol, providers] of upstreams) {
  Deno.test(`forced tool choice (${protocol} upstream): the messages, chat and responses clients get the call`, () =>
    withGateway(async (g) => {
      const client = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
      const tools = [
        { name: "lookup", input_schema: { type: "object" as const, properties: {} } },
        { name: "extract", input_schema: schema as Anthropic.Tool.InputSchema },
      ];
      const named = await client.messages.create({
        model: "openai/gpt-4o-mini",
        max_tokens: 200,
        tools,
        tool_choice: { type: "tool", name: "extract" },
        messages: [{ role: "user", content: "Extract the answer." }],
      });
      assert.equal(named.stop_reason, "tool_use");
      const use = named.content.find((b) => b.type === "tool_use");
      assert.ok(use?.type === "tool_use", JSON.stringify(named.content));
      assert.equal(use.name, "extract");
      fits(use.input);

      const stream = client.messages.stream({
        model: "anthropic/claude-sonnet-4.5",
        max_tokens: 200,
        tools: [tools[1]],
        tool_choice: { type: "any", disable_parallel_tool_use: true },
        messages: [{ role: "user", content: "Extract the answer." }],
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, "tool_use");
      const streamed = final.content.find((b) => b.type === "tool_use");
      assert.ok(streamed?.type === "tool_use", JSON.stringify(final.content));
      assert.equal(streamed.name, "extract");
      fits(streamed.input);

      const openai = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
      const chat = await openai.chat.completions.create({
        model: "google/gemini-2.5-flash",
        tools: [{ type: "function", function: { name: "extract", parameters: schema } }],
        tool_choice: "required",
        messages: [{ role: "user", content: "Extract the answer." }],
      });
      assert.equal(chat.choices[0].finish_reason, "tool_calls");
      const call = chat.choices[0].message.tool_calls?.[0];
      assert.ok(call?.type === "function", JSON.stringify(chat.choices[0].message));
      assert.equal(call.function.name, "extract");
      fits(JSON.parse(call.function.arguments));

      const res = await openai.responses.create({
        model: "openai/gpt-5.4-mini",
        tools: [
          { type: "function", name: "lookup", parameters: {}, strict: false },
          { type: "function", name: "extract", parameters: schema, strict: true },
        ],
        tool_choice: { type: "function", name: "extract" },
        input: "Extract the answer.",
      });
      const item = res.output.find((o) => o.type === "function_call");
      assert.ok(item?.type === "function_call", JSON.stringify(res.output));
      assert.equal(item.name, "extract");
      fits(JSON.parse(item.arguments));
    }, { providers }));
}

Deno.test("forced tool choice: none still wins over a marker, and auto without one answers text", () =>
  withGateway(async (g) => {
    const client = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const tools = [{ name: "extract", input_schema: schema as Anthropic.Tool.InputSchema }];
    for (const tool_choice of [{ type: "auto" }, { type: "none" }] as const) {
      const r = await client.messages.create({
        model: "anthropic/claude-sonnet-4.5",
        max_tokens: 50,
        tools,
        tool_choice,
        messages: [{
          role: "user",
          content: tool_choice.type === "none" ? "Sum up [[mock:tool=extract]]" : "Hello",
        }],
      });
      assert.equal(r.stop_reason, "end_turn", tool_choice.type);
      assert.deepEqual(r.content.map((b) => b.type), ["text"]);
    }
  }));

/**
 * What a chat request carries to the upstream, end to end through the real `openai` SDK:
 * image parts, prefill, unknown fields, `stream_options.include_usage`, the default model.
 * The upstream side is read from `mock.stats.calls[..].body`.
 */
import assert from "node:assert/strict";
import { heldByGenerations } from "../helpers/gateway.ts";
import type OpenAI from "openai";
import {
  ANTHROPIC_MODEL,
  client,
  mockProvider,
  MODEL,
  sdk400,
  TEXT_ONLY_MODEL,
  withGateway,
} from "../helpers/chat.ts";
import type { TestGateway } from "../helpers/gateway.ts";

type Obj = Record<string, unknown>;
type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;

/** A 1×1 PNG. */
const PNG_DATA_URL = "data:image/png;base64," +
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const HTTP_IMAGE = "https://example.com/images/cat.png";

function imageMessage(url: string): OpenAI.Chat.ChatCompletionMessageParam {
  return {
    role: "user",
    content: [
      { type: "text", text: "What is in this picture? [[mock:tokens=4]]" },
      { type: "image_url", image_url: { url } },
    ],
  };
}

function upstreamBody(g: TestGateway, i = -1): Obj {
  const call = g.mock.stats.calls.at(i);
  assert.ok(call, "the upstream was called");
  return call.body as Obj;
}

for (const [label, url] of [["http URL", HTTP_IMAGE], ["data URL", PNG_DATA_URL]] as const) {
  Deno.test(`chat input: an image part (${label}) reaches an image-capable model (same format)`, () =>
    withGateway(async (g) => {
      const r = await client(g).chat.completions.create({
        model: MODEL,
        messages: [imageMessage(url)],
      });
      assert.equal(r.choices[0].finish_reason, "stop");
      assert.ok(r.choices[0].message.content!.length > 0);
      const sent = upstreamBody(g).messages as { content: Obj[] }[];
      assert.deepEqual(sent[0].content[1], { type: "image_url", image_url: { url } });
    }));

  Deno.test(`chat input: an image part (${label}) is translated for an anthropic upstream`, () =>
    withGateway(async (g) => {
      const r = await client(g).chat.completions.create({
        model: ANTHROPIC_MODEL,
        messages: [imageMessage(url)],
      });
      assert.equal(r.choices[0].finish_reason, "stop");
      const call = g.mock.stats.calls.at(-1)!;
      assert.equal(call.protocol, "messages");
      const sent = (call.body as Obj).messages as { content: Obj[] }[];
      const image = sent[0].content.find((b) => b.type === "image");
      assert.ok(image, `an image block upstream: ${JSON.stringify(sent)}`);
      const source = image.source as Obj;
      if (url.startsWith("data:")) {
        assert.equal(source.type, "base64");
        assert.equal(source.media_type, "image/png");
        assert.equal(source.data, url.slice(url.indexOf(",") + 1));
      } else {
        assert.deepEqual(source, { type: "url", url });
      }
    }));
}

Deno.test("chat input: an image part on a model without image input → 400, no upstream call", () =>
  withGateway(async (g) => {
    const message = await sdk400(
      client(g).chat.completions.create({
        model: TEXT_ONLY_MODEL,
        messages: [imageMessage(HTTP_IMAGE)],
      }),
      /image/,
    );
    assert.match(message, /messages\[0\]\.content\[1\]/);
    assert.equal(g.mock.stats.calls.length, 0);
    assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
  }));

Deno.test("chat input: a trailing assistant message (prefill) is the last message upstream", () =>
  withGateway(async (g) => {
    const r = await client(g).chat.completions.create({
      model: MODEL,
      messages: [
        { role: "system", content: "Answer in one word." },
        { role: "user", content: "Capital of Norway? [[mock:tokens=3]]" },
        { role: "assistant", content: "The capital is" },
      ],
    });
    assert.ok(r.choices[0].message.content!.length > 0);
    const sent = upstreamBody(g).messages as Obj[];
    assert.deepEqual(sent.at(-1), { role: "assistant", content: "The capital is" });
  }));

Deno.test("chat input: prefill reaches an anthropic upstream as the last (assistant) message", () =>
  withGateway(async (g) => {
    const stream = await client(g).chat.completions.create({
      model: ANTHROPIC_MODEL,
      messages: [
        { role: "user", content: "Capital of Norway? [[mock:tokens=3]]" },
        { role: "assistant", content: "The capital is" },
      ],
      stream: true,
    });
    let text = "";
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? "";
    assert.ok(text.length > 0);
    const sent = upstreamBody(g).messages as { role: string; content: unknown }[];
    const last = sent.at(-1)!;
    assert.equal(last.role, "assistant");
    const lastText = typeof last.content === "string"
      ? last.content
      : (last.content as Obj[]).map((b) => b.text).join("");
    assert.equal(lastText, "The capital is");
  }));

Deno.test("chat input: unknown fields pass on; OpenRouter's extensions are put in OpenAI's terms for OpenAI", () =>
  withGateway(async (g) => {
    const params = {
      model: "openai/gpt-5.1",
      messages: [
        {
          role: "system",
          content: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
        },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello", reasoning: "the user greets" },
        { role: "user", content: "Again [[mock:tokens=2]]" },
      ],
      seed: 42,
      max_tokens: 50,
      reasoning: { effort: "low" },
      include_reasoning: true,
      top_k: 7,
      provider: { order: ["openai"], allow_fallbacks: false },
      structured_outputs: true,
      x_vendor_flag: { nested: [1, 2, 3] },
      logit_bias: { "50256": -100 },
      verbosity: "low",
    } as unknown as Params;
    const r = await client(g).chat.completions.create(params);
    assert.equal(r.object, "chat.completion");
    const sent = upstreamBody(g);
    assert.equal(sent.seed, 42);
    assert.deepEqual(sent.x_vendor_flag, { nested: [1, 2, 3] });
    assert.equal("logit_bias" in sent, false, "a reasoning model takes no logit_bias");
    assert.equal(sent.model, "gpt-5.1", "the upstream gets its own model name");
    assert.equal(sent.verbosity, "low");
    // OpenAI answers 400 "Unknown parameter" to OpenRouter's fields: translated or dropped.
    assert.equal(sent.reasoning_effort, "low");
    assert.equal(sent.max_completion_tokens, 50);
    const extensions = [
      "reasoning",
      "include_reasoning",
      "top_k",
      "provider",
      "structured_outputs",
    ];
    for (const k of [...extensions, "max_tokens"]) {
      assert.equal(k in sent, false, k);
    }
    const messages = sent.messages as Obj[];
    assert.deepEqual(messages[0].content, [{ type: "text", text: "Be brief." }]);
    assert.deepEqual(messages[2], { role: "assistant", content: "Hello" });
    // A model without reasoning is sent no reasoning setting (OpenAI answers 400 to it).
    await client(g).chat.completions.create({ ...params, model: MODEL });
    const plain = upstreamBody(g);
    assert.equal(plain.model, "gpt-4o-mini");
    assert.equal("reasoning_effort" in plain || "reasoning" in plain, false);
    // Nor GPT-5's verbosity, of which earlier models take only the default.
    assert.equal("verbosity" in plain, false);
    assert.equal(plain.seed, 42);
    assert.deepEqual(plain.logit_bias, { "50256": -100 });
  }));

Deno.test("chat input: OpenRouter's reasoning budget reaches OpenAI as the effort nearest it", async () => {
  const ask = async (g: TestGateway, max_tokens: number) => {
    await client(g).chat.completions.create({
      model: "openai/gpt-5.1",
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      reasoning: { max_tokens },
    } as unknown as Params);
    return upstreamBody(g).reasoning_effort;
  };
  await withGateway(async (g) => {
    assert.equal(await ask(g, 2_000), "low");
    assert.equal(await ask(g, 30_000), "high");
  });
  // Then fitted to the efforts the model takes, as a named effort is.
  await withGateway(async (g) => {
    assert.equal(await ask(g, 2_000), "medium");
  }, {
    providers: {
      providers: [
        mockProvider("openai", {
          reasoningEfforts: [{ models: ["openai/gpt-5.1"], efforts: ["medium"] }],
        }),
      ],
    },
  });
});

Deno.test("chat input: unknown fields reach an OpenRouter-style upstream too", () =>
  withGateway(async (g) => {
    const params = {
      model: "deepseek/deepseek-v3.2",
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      seed: 7,
      min_p: 0.1,
      transforms: ["middle-out"],
      reasoning: { effort: "low" },
      max_tokens: 40,
    } as unknown as Params;
    const r = await client(g).chat.completions.create(params);
    assert.equal(r.model, "deepseek/deepseek-v3.2");
    const sent = upstreamBody(g);
    assert.equal(sent.model, "deepseek/deepseek-v3.2");
    assert.equal(sent.seed, 7);
    assert.equal(sent.min_p, 0.1);
    assert.deepEqual(sent.transforms, ["middle-out"]);
    // OpenRouter's own dialect, as sent.
    assert.deepEqual(sent.reasoning, { effort: "low" });
    assert.equal(sent.max_tokens, 40);
  }));

Deno.test("chat input: a streaming same-format call asks the upstream for usage", () =>
  withGateway(async (g) => {
    const stream = await client(g).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Hi [[mock:tokens=3]]" }],
      stream: true,
    });
    let usage: Obj | undefined;
    for await (const c of stream) if (c.usage) usage = c.usage as unknown as Obj;
    const sent = upstreamBody(g);
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { include_usage: true });
    assert.equal(usage?.completion_tokens, 3, "the client gets usage without asking for it");
  }));

Deno.test("chat input: include_usage is forced on even when the client turns it off", () =>
  withGateway(async (g) => {
    const stream = await client(g).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Hi [[mock:tokens=3]]" }],
      stream: true,
      stream_options: { include_usage: false },
    });
    for await (const _ of stream) { /* drain */ }
    assert.equal((upstreamBody(g).stream_options as Obj).include_usage, true);
    await g.settled();
    const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    assert.equal(gen.usageSource, "upstream");
  }));

Deno.test("chat input: an omitted model uses the account's default model", () =>
  withGateway(async (g) => {
    const a = await g.account("100", { defaultModel: MODEL });
    const params = {
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
    } as unknown as Params;
    const raw = await client(g, a.key).chat.completions.create(params).withResponse();
    assert.equal(raw.data.model, MODEL);
    assert.equal(upstreamBody(g).model, "gpt-4o-mini");
    await g.settled();
    const gen = await g.store.getGeneration(
      a.accountId,
      raw.response.headers.get("x-generation-id")!,
    );
    assert.equal(gen?.model, MODEL);
    assert.equal(gen?.status, "completed");
  }));

Deno.test("chat input: an omitted model with no default model set → 400 naming model", () =>
  withGateway(async (g) => {
    const params = {
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
    } as unknown as Params;
    await sdk400(client(g).chat.completions.create(params), "model");
    assert.equal(g.mock.stats.calls.length, 0);
  }));

Deno.test("chat input: tools: [] (every tool turned off) is sent as no tools, which OpenAI requires", () =>
  withGateway(async (g) => {
    await client(g).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      tools: [],
      tool_choice: "none",
      parallel_tool_calls: false,
    });
    const sent = upstreamBody(g);
    for (const k of ["tools", "tool_choice", "parallel_tool_calls"]) {
      assert.equal(k in sent, false, k);
    }
    assert.equal((sent.messages as Obj[]).length, 1);
  }));

Deno.test("chat input: sampling settings the model does not take are left out (OpenAI's reasoning models refuse them)", () =>
  withGateway(async (g) => {
    const sampling = { temperature: 0.2, top_p: 0.5, logprobs: true, presence_penalty: 0.1 };
    await client(g).chat.completions.create({
      model: "openai/gpt-5.4",
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      reasoning_effort: "high",
      ...sampling,
    });
    const reasoningModel = upstreamBody(g);
    assert.match(g.mock.stats.calls.at(-1)!.path, /\/chat\/completions$/, "still the pass-through");
    for (const k of Object.keys(sampling)) assert.equal(k in reasoningModel, false, k);
    assert.equal(reasoningModel.reasoning_effort, "high");
    await client(g).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
      ...sampling,
    });
    const plain = upstreamBody(g);
    for (const [k, v] of Object.entries(sampling)) assert.equal(plain[k], v, k);
  }));

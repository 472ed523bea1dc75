/**
 * Claude models that think only adaptively (the provider's `adaptiveThinking`): a transcoded
 * call asking for reasoning reaches Anthropic as `thinking: {type: "adaptive"}` with
 * `output_config.effort`, never a budget they refuse; older models keep their budget; and a
 * `-fast` slug (Anthropic's fast mode, a setting rather than a model name) goes to the
 * aggregator, never to Anthropic under a name it does not know.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });

type Sent = {
  thinking?: { type: string; budget_tokens?: number; display?: string };
  output_config?: { effort?: string; format?: unknown };
};

Deno.test("adaptive thinking: an effort on Claude Opus 4.7 goes as adaptive thinking with that effort", async () => {
  await withGateway(async (g) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ reasoning_effort: "high" }, "high"],
      [{ reasoning_effort: "minimal" }, "low"],
      // Opus 4.7 takes xhigh (Opus 4.6 is sent high: providers.json's effort sets).
      [{ reasoning_effort: "xhigh" }, "xhigh"],
      // OpenRouter's reasoning budget: the effort whose budget covers it.
      [{ reasoning: { max_tokens: 3000 } }, "medium"],
    ];
    // A small max_tokens does not turn adaptive thinking off (a budget would not fit it).
    cases.push([{ reasoning_effort: "high", max_tokens: 1000 }, "high"]);
    for (const [extra, effort] of cases) {
      g.mock.reset();
      await openai(g).chat.completions.create({
        model: "anthropic/claude-opus-4.7",
        messages: [{ role: "user", content: "Think. [[mock:tokens=2]]" }],
        ...extra,
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
      const call = g.mock.stats.calls[0];
      assert.equal(call.protocol, "messages");
      const body = call.body as Sent;
      assert.deepEqual(
        body.thinking,
        { type: "adaptive", display: "summarized" },
        JSON.stringify(extra),
      );
      assert.equal(body.output_config?.effort, effort, JSON.stringify(extra));
    }
  });
});

Deno.test("adaptive thinking: the responses API on Claude Opus 4.7 with a schema keeps both the format and the effort", async () => {
  await withGateway(async (g) => {
    await openai(g).responses.create({
      model: "anthropic/claude-opus-4.7",
      input: "Think.",
      reasoning: { effort: "low" },
      text: {
        format: {
          type: "json_schema",
          name: "out",
          schema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
        },
      },
    });
    const body = g.mock.stats.calls[0].body as Sent;
    assert.deepEqual(body.thinking, { type: "adaptive", display: "summarized" });
    assert.equal(body.output_config?.effort, "low");
    assert.ok(body.output_config?.format, "the schema is kept beside the effort");
  });
});

Deno.test("adaptive thinking: Claude Sonnet 4.5 keeps a thinking budget", async () => {
  await withGateway(async (g) => {
    await openai(g).chat.completions.create({
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: "Think. [[mock:tokens=2]]" }],
      reasoning_effort: "high",
    });
    const body = g.mock.stats.calls[0].body as Sent;
    assert.equal(body.thinking?.type, "enabled");
    assert.ok((body.thinking?.budget_tokens ?? 0) >= 1024);
    assert.equal(body.output_config, undefined);
  });
});

Deno.test("fast mode: a -fast Claude slug is served by the aggregator under its own slug", async () => {
  await withGateway(async (g) => {
    await openai(g).chat.completions.create({
      model: "anthropic/claude-opus-4.7-fast",
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
    });
    const call = g.mock.stats.calls[0];
    assert.equal(call.protocol, "chat");
    assert.equal((call.body as { model: string }).model, "anthropic/claude-opus-4.7-fast");
  });
});

/**
 * One messages call through the gateway, answered whole; the upstream body the mock received.
 */
async function messagesUpstreamBody(g: TestGateway, body: Record<string, unknown>) {
  g.mock.reset();
  const res = await fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
  await g.mock.idle();
  return g.mock.stats.calls[0];
}

Deno.test("efforts: Claude Code's max on OpenAI models reaches each as an effort it takes", async () => {
  await withGateway(async (g) => {
    const cases: [string, string, string][] = [
      ["openai/gpt-5.1-codex", "responses", "high"],
      ["openai/gpt-5.1", "chat", "high"],
      ["openai/o3-mini", "chat", "high"],
      ["openai/gpt-5.4", "chat", "xhigh"],
    ];
    for (const [model, protocol, effort] of cases) {
      const call = await messagesUpstreamBody(g, {
        model,
        max_tokens: 2048,
        output_config: { effort: "max" },
        thinking: { type: "adaptive" },
        messages: [{ role: "user", content: "Think [[mock:tokens=1]]" }],
      });
      assert.equal(call.protocol, protocol, model);
      const body = call.body as { reasoning_effort?: string; reasoning?: { effort?: string } };
      assert.equal(body.reasoning_effort ?? body.reasoning?.effort, effort, model);
    }
  });
});

/**
 * The upstream calls of a messages request on `model` with thinking off, in both of its ways:
 * `thinking: {type: "disabled"}`, and an effort with no `thinking` (how Claude Code turns
 * thinking off on models it does not know). Each with a label naming the way.
 */
async function thinkingOff(g: TestGateway, model: string) {
  const calls: [string, Awaited<ReturnType<typeof messagesUpstreamBody>>][] = [];
  for (const off of [{ thinking: { type: "disabled" } }, { output_config: { effort: "high" } }]) {
    const call = await messagesUpstreamBody(g, {
      model,
      max_tokens: 256,
      ...off,
      messages: [{ role: "user", content: "Quick [[mock:tokens=1]]" }],
    });
    calls.push([JSON.stringify(off), call]);
  }
  return calls;
}

Deno.test("efforts: thinking turned off in messages asks an OpenAI reasoning model for its least", async () => {
  await withGateway(async (g) => {
    const cases: [string, string][] = [
      ["openai/gpt-5", "minimal"],
      ["openai/o3-mini", "low"],
      ["openai/gpt-5.4", "none"],
    ];
    for (const [model, effort] of cases) {
      for (const [off, call] of await thinkingOff(g, model)) {
        const body = call.body as { reasoning_effort?: string };
        assert.equal(body.reasoning_effort, effort, `${model} ${off}`);
      }
    }
  });
});

Deno.test("efforts: thinking turned off on an OpenRouter model that cannot stop reasoning asks for its least; elsewhere it is turned off", async () => {
  await withGateway(async (g) => {
    const cases: [string, unknown][] = [
      ["google/gemini-3.1-pro-preview", { effort: "low" }],
      ["deepseek/deepseek-r1", { effort: "low" }],
      ["google/gemini-2.5-flash", { enabled: false }],
    ];
    for (const [model, reasoning] of cases) {
      for (const [off, call] of await thinkingOff(g, model)) {
        assert.equal(call.protocol, "chat", model);
        assert.deepEqual(
          (call.body as { reasoning?: unknown }).reasoning,
          reasoning,
          `${model} ${off}`,
        );
      }
    }
    // A chat client's own body, passed through, is fitted the same way.
    for (
      const [sent, expected] of [
        [{ reasoning: { effort: "none" } }, { reasoning: { effort: "low" } }],
        [{ reasoning: { enabled: false, exclude: true } }, {
          reasoning: { exclude: true, effort: "low" },
        }],
        [{ reasoning_effort: "none" }, { reasoning_effort: "low" }],
      ] as const
    ) {
      g.mock.reset();
      const res = await fetch(`${g.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "google/gemini-3.1-pro-preview",
          ...sent,
          messages: [{ role: "user", content: "Quick [[mock:tokens=1]]" }],
        }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      await g.mock.idle();
      const body = g.mock.stats.calls[0].body as Record<string, unknown>;
      for (const [k, v] of Object.entries(expected)) {
        assert.deepEqual(body[k], v, JSON.stringify(sent));
      }
    }
  });
});

Deno.test("efforts: a model that must reason on OpenRouter may still have thinking off where its own vendor serves it", async () => {
  await withGateway(async (g) => {
    // A chat client's reasoning off, transcoded for Anthropic itself.
    const res = await fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "anthropic/claude-fable-5",
        reasoning: { enabled: false },
        messages: [{ role: "user", content: "Quick [[mock:tokens=1]]" }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const call = g.mock.stats.calls[0];
    assert.equal(call.protocol, "messages");
    const body = call.body as { thinking?: { type: string }; output_config?: unknown };
    assert.notEqual(body.thinking?.type, "adaptive", JSON.stringify(body.thinking));
    assert.notEqual(body.thinking?.type, "enabled", JSON.stringify(body.thinking));
  }, { withoutKeys: ["OPENROUTER_API_KEY"] });
});

/** Claude Code's request to a model it does not know by name (an alias): the newest shape. */
const claudeCodeBody = (model: string, messages: unknown[]) => ({
  model,
  max_tokens: 32000,
  thinking: { type: "adaptive", display: "omitted" },
  output_config: { effort: "high" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  tools: [{ name: "Bash", input_schema: { type: "object", properties: {} } }],
  messages,
});

async function passThrough(g: TestGateway, body: unknown): Promise<Sent & Record<string, unknown>> {
  g.mock.reset();
  const r = await fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": g.key,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, await r.text());
  return g.mock.stats.calls[0].body as Sent & Record<string, unknown>;
}

Deno.test("adaptive thinking: a messages client's adaptive thinking reaches an older Claude model as a budget", async () => {
  await withGateway(async (g) => {
    const hi = [{ role: "user", content: "Think. [[mock:tokens=2]]" }];
    // `~anthropic/claude-haiku-latest` is Haiku 4.5, which refuses adaptive thinking and effort.
    const old = await passThrough(g, claudeCodeBody("~anthropic/claude-haiku-latest", hi));
    assert.deepEqual(old.thinking, { type: "enabled", budget_tokens: 16000 });
    assert.equal(old.output_config, undefined, "the effort goes with the adaptive thinking");
    assert.ok(old.context_management, "thinking is on: its edits stay");

    // A model that thinks adaptively gets the body as sent.
    const opus = await passThrough(g, claudeCodeBody("anthropic/claude-opus-4.7", hi));
    assert.deepEqual(opus.thinking, { type: "adaptive", display: "omitted" });
    assert.deepEqual(opus.output_config, { effort: "high" });

    // A last tool turn without signed thinking takes no budget's thinking (Anthropic's 400).
    const toolTurn = [
      ...hi,
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] },
    ];
    const tool = await passThrough(g, claudeCodeBody("~anthropic/claude-haiku-latest", toolTurn));
    assert.equal(tool.thinking, undefined);
    assert.equal(tool.context_management, undefined, "clear_thinking needs thinking on");
  });
});

Deno.test("mid-conversation system messages: an older Claude model gets their text in the user turn they follow", async () => {
  await withGateway(async (g) => {
    // Claude Code's first turn on a model it does not know by name.
    const turn = [
      { role: "user", content: [{ type: "text", text: "Hi. [[mock:tokens=2]]" }] },
      { role: "system", content: [{ type: "text", text: "# Environment" }] },
    ];
    const old = await passThrough(g, claudeCodeBody("~anthropic/claude-haiku-latest", turn));
    assert.deepEqual(old.messages, [{
      role: "user",
      content: [
        { type: "text", text: "Hi. [[mock:tokens=2]]" },
        { type: "text", text: "# Environment" },
      ],
    }]);
    // The newest models take them: the body goes as sent.
    const opus = await passThrough(g, claudeCodeBody("anthropic/claude-opus-4.8", turn));
    assert.deepEqual(opus.messages, turn);
  });
});

Deno.test("effort: a messages pass-through leaves out output_config.effort for a Claude model before Opus 4.5, keeps it for Opus 4.5 and later", async () => {
  await withGateway(async (g) => {
    // Claude Code's WebSearch call to a model it does not know by name: an effort, no thinking.
    const body = (model: string) => ({
      model,
      max_tokens: 4000,
      output_config: {
        effort: "high",
        format: { type: "json_schema", schema: { type: "object" } },
      },
      messages: [{ role: "user", content: "Search. [[mock:tokens=2]]" }],
    });
    const haiku = await passThrough(g, body("~anthropic/claude-haiku-latest"));
    assert.deepEqual(haiku.output_config, {
      format: { type: "json_schema", schema: { type: "object" } },
    });
    const sonnet = await passThrough(g, {
      ...body("anthropic/claude-sonnet-4.5"),
      output_config: { effort: "low" },
    });
    assert.equal(sonnet.output_config, undefined);
    const opus45 = await passThrough(g, body("anthropic/claude-opus-4.5"));
    assert.equal((opus45.output_config as { effort?: string }).effort, "high");
    const opus47 = await passThrough(g, body("anthropic/claude-opus-4.7"));
    assert.equal((opus47.output_config as { effort?: string }).effort, "high");
  });
});

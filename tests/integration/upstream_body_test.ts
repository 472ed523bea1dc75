/**
 * What reaches the upstream of a call in the client's own format:
 * - chat's `stop` on a model that takes none (OpenAI's reasoning models refuse it) is not
 *   passed through in a body the upstream would refuse: the call is transcoded to the same
 *   API, with the gateway keeping the sequences, streaming or not, as a messages client's
 *   `stop_sequences` are kept;
 * - settings a vendor bills at other than the catalogue's prices (`service_tier`, `speed`,
 *   `inference_geo`) are left out;
 * - OpenRouter's model fallbacks (`models`, `route`) and Anthropic's server-side ones
 *   (`fallbacks`), billed at the model that answered, are left out;
 * - reasoning items of another vendor than the model's (a client that switched models) do
 *   not reach OpenRouter's responses API;
 * - a request whose every message is empty (content `[]`, no input) is refused by the
 *   gateway, not sent on with no messages.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { shortToolName } from "../../src/formats/tool_names.ts";

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });

for (const model of ["openai/gpt-5.4", "openai/o3-mini"]) {
  Deno.test(`chat stop on ${model} (takes none): kept by the gateway, not sent upstream`, async () => {
    await withGateway(async (g) => {
      const r = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
        stop: [" tok3"],
      });
      assert.equal(r.choices[0].message.content, "tok0 tok1 tok2");
      assert.equal(r.choices[0].finish_reason, "stop");
      assert.equal(r.model, model);
      const call = g.mock.stats.calls[0];
      assert.equal(call.protocol, "chat");
      assert.equal((call.body as { stop?: unknown }).stop, undefined);

      let text = "";
      let finish: string | null = null;
      const stream = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Count again [[mock:tokens=6]]" }],
        stop: " tok3",
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: unknown;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        finish = chunk.choices[0]?.finish_reason ?? finish;
        usage ??= chunk.usage ?? undefined;
      }
      assert.equal(text, "tok0 tok1 tok2");
      assert.equal(finish, "stop");
      assert.ok(usage, "usage arrives on the stream");
      assert.equal((g.mock.stats.calls[1].body as { stop?: unknown }).stop, undefined);
    });
  });
}

Deno.test("chat stop on a model that takes it stays a pass-through", async () => {
  await withGateway(async (g) => {
    const r = await openai(g).chat.completions.create({
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
      stop: [" tok3"],
    });
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.deepEqual((g.mock.stats.calls[0].body as { stop?: unknown }).stop, [" tok3"]);
  });
});

Deno.test("pass-through: settings billed at other than the catalogue's prices do not reach the upstream", async () => {
  await withGateway(async (g) => {
    const post = (path: string, body: unknown) =>
      fetch(`${g.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (r) => {
        assert.equal(r.status, 200, await r.clone().text());
        await r.body?.cancel();
      });
    await post("/v1/chat/completions", {
      model: "openai/gpt-4o-mini",
      service_tier: "priority",
      messages: [{ role: "user", content: "Hi [[mock:tokens=1]]" }],
    });
    await post("/v1/responses", {
      model: "openai/gpt-4o-mini",
      service_tier: "flex",
      input: "Hi [[mock:tokens=1]]",
    });
    await post("/v1/messages", {
      model: "anthropic/claude-opus-4.6",
      max_tokens: 16,
      speed: "fast",
      inference_geo: "us",
      service_tier: "auto",
      messages: [{ role: "user", content: "Hi [[mock:tokens=1]]" }],
    });
    await g.mock.idle();
    const calls = g.mock.stats.calls;
    assert.deepEqual(calls.map((c) => c.protocol), ["chat", "responses", "messages"]);
    for (const c of calls) {
      const body = c.body as Record<string, unknown>;
      for (const k of ["service_tier", "speed", "inference_geo"]) {
        assert.equal(body[k], undefined, `${c.protocol} ${k}`);
      }
    }
  });
});

Deno.test("pass-through: Anthropic's server-side model fallbacks do not reach Anthropic", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    // A request Haiku declines would be served by Opus, with its own larger output limit:
    // the gateway holds and bills the model the client named, at that model's prices.
    const params: Anthropic.Beta.MessageCreateParamsNonStreaming = {
      model: "anthropic/claude-haiku-4.5",
      max_tokens: 16,
      fallbacks: [{ model: "claude-opus-4-6", max_tokens: 32000 }],
      messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
    };
    const m = await c.beta.messages.create(params);
    assert.equal(m.model, "anthropic/claude-haiku-4.5");
    await c.beta.messages.stream({ ...params, fallbacks: "default" }).finalMessage();
    await g.mock.idle();
    const calls = g.mock.stats.calls;
    assert.deepEqual(calls.map((c) => c.protocol), ["messages", "messages"]);
    for (const call of calls) {
      const body = call.body as Record<string, unknown>;
      assert.equal(body.model, "claude-haiku-4-5");
      assert.equal(body.fallbacks, undefined);
    }
  });
});

Deno.test("chat stop on an OpenRouter model that takes none stays a pass-through (OpenRouter drops it)", async () => {
  await withGateway(async (g) => {
    await openai(g).chat.completions.create({
      model: "perplexity/sonar",
      messages: [{ role: "user", content: "Count [[mock:tokens=3]]" }],
      stop: [" tok2"],
      // An OpenRouter request extension, which a transcoded call would lose.
      provider: { order: ["perplexity"] },
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    const body = g.mock.stats.calls[0].body as Record<string, unknown>;
    assert.deepEqual(body.stop, [" tok2"]);
    assert.deepEqual(body.provider, { order: ["perplexity"] });
  });
});

Deno.test("tool names outside [a-zA-Z0-9_-] reach a transcoded upstream fitted, and come back as sent", async () => {
  await withGateway(async (g) => {
    const tool = (name: string) => ({
      type: "function" as const,
      function: { name, parameters: { type: "object", properties: { q: { type: "string" } } } },
    });
    for (const model of ["anthropic/claude-sonnet-4.5", "openai/gpt-5.4"]) {
      g.mock.reset();
      const r = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Go [[mock:tools=1]]" }],
        tools: [tool("search.web"), tool("wetter-äöü")],
        tool_choice: { type: "function", function: { name: "search.web" } },
      });
      const call = r.choices[0].message.tool_calls?.[0];
      assert.ok(call?.type === "function");
      assert.equal(call.function.name, "search.web", model);
      const sent = JSON.stringify(g.mock.stats.calls[0].body);
      assert.ok(!sent.includes("search.web") && !sent.includes("äöü"), `${model}: ${sent}`);
      assert.match(sent, /"search_web_[0-9a-f]{8}"/);
    }
  });
});

Deno.test("an image's detail and a PDF's file name survive a transcoding", async () => {
  await withGateway(async (g) => {
    const png = "data:image/png;base64,iVBORw0KGgo=";
    const pdf = "data:application/pdf;base64,JVBERi0xLjQK";
    // gpt-5.4 with tools goes to OpenAI's responses API: transcoded from chat.
    await openai(g).chat.completions.create({
      model: "openai/gpt-5.4",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Look [[mock:tokens=1]]" },
          { type: "image_url", image_url: { url: png, detail: "low" } },
          { type: "file", file: { filename: "Q3-report.pdf", file_data: pdf } },
        ],
      }],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
    });
    const sent = JSON.stringify(g.mock.stats.calls[0].body);
    assert.equal(g.mock.stats.calls[0].protocol, "responses");
    assert.match(sent, /"type":"input_image","image_url":"[^"]+","detail":"low"/);
    assert.match(sent, /"filename":"Q3-report.pdf"/);

    // A responses client's PDF on Claude: its name is the document's title.
    g.mock.reset();
    await openai(g).responses.create({
      model: "anthropic/claude-sonnet-4.5",
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "Read [[mock:tokens=1]]" },
          { type: "input_file", filename: "Q3-report.pdf", file_data: pdf },
        ],
      }],
    });
    assert.match(JSON.stringify(g.mock.stats.calls[0].body), /"title":"Q3-report.pdf"/);
  });
});

Deno.test("legacy function calling reaches chat upstreams as sent; elsewhere it is a 400 saying so", async () => {
  const legacy = (model: string) => ({
    model,
    functions: [{ name: "get_weather", parameters: { type: "object", properties: {} } }],
    function_call: { name: "get_weather" },
    messages: [
      { role: "user", content: "Weather? [[mock:tokens=1]]" },
      { role: "assistant", content: null, function_call: { name: "get_weather", arguments: "{}" } },
      { role: "function", name: "get_weather", content: "sunny" },
    ],
  });
  const post = (g: TestGateway, body: unknown) =>
    fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  await withGateway(async (g) => {
    for (const model of ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5"]) {
      g.mock.reset();
      const res = await post(g, legacy(model));
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      await g.mock.idle();
      const call = g.mock.stats.calls[0];
      assert.equal(call.protocol, "chat", model);
      const body = call.body as Record<string, unknown>;
      assert.deepEqual(body.function_call, { name: "get_weather" });
      assert.equal((body.messages as { role: string }[])[2].role, "function");
    }
  });
  await withGateway(async (g) => {
    const res = await post(g, legacy("anthropic/claude-sonnet-4.5"));
    assert.equal(res.status, 400);
    assert.match((await res.json()).error.message, /functions and function_call/);
    assert.equal(g.mock.stats.calls.length, 0);
  }, { withoutKeys: ["OPENROUTER_API_KEY"] });
});

Deno.test("a refusal replayed in a chat history, and blank text, reach Claude as Anthropic takes them", async () => {
  await withGateway(async (g) => {
    const res = await fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "anthropic/claude-sonnet-4.5",
        messages: [
          { role: "user", content: "Do the thing" },
          { role: "assistant", content: [{ type: "refusal", refusal: "I can't help with that." }] },
          {
            role: "user",
            content: [{ type: "text", text: "   " }, {
              type: "text",
              text: "Why? [[mock:tokens=1]]",
            }],
          },
        ],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as { messages: { content: { text?: string }[] }[] };
    assert.equal(sent.messages[1].content[0].text, "I can't help with that.");
    assert.deepEqual(sent.messages[2].content.map((b) => b.text), ["Why? [[mock:tokens=1]]"]);
  });
});

Deno.test("chat edge cases: functions: [], legacy functions beside stop, the SDK's refusal shape, colliding tool names, a blank last message", async () => {
  await withGateway(async (g) => {
    const post = (body: unknown) =>
      fetch(`${g.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const ask = [{ role: "user", content: "Hi [[mock:tokens=1]]" }];
    // `functions: []` declares nothing: Claude is served by Anthropic itself.
    let res = await post({ model: "anthropic/claude-sonnet-4.5", functions: [], messages: ask });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.at(-1)!.protocol, "messages");

    // Legacy functions go through whole; a model without stop cannot keep it there.
    res = await post({
      model: "openai/gpt-5.4",
      stop: ["END"],
      functions: [{ name: "f", parameters: { type: "object" } }],
      messages: ask,
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error.message, /stop is not supported/);

    // The openai SDK replays a refusal as `refusal` beside null content.
    g.mock.reset();
    res = await post({
      model: "anthropic/claude-sonnet-4.5",
      messages: [
        { role: "user", content: "Do it" },
        { role: "assistant", content: null, refusal: "I can't." },
        ...ask,
      ],
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as { messages: { content: { text?: string }[] }[] };
    assert.equal(sent.messages[1].content[0].text, "I can't.");

    // A client name equal to another's fitted form: the two stay distinct upstream.
    g.mock.reset();
    const fitted = shortToolName("a.b");
    const tool = (name: string) => ({ type: "function", function: { name, parameters: {} } });
    res = await post({
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: `Go [[mock:tool=${fitted}]]` }],
      tools: [tool("a.b"), tool(fitted)],
    });
    const answer = await res.json();
    assert.equal(answer.choices[0].message.tool_calls[0].function.name, fitted);
    const names = (g.mock.stats.calls[0].body as { tools: { name: string }[] }).tools.map((t) =>
      t.name
    );
    assert.equal(new Set(names).size, 2, JSON.stringify(names));

    // A blank last user message is not dropped into a prefill.
    g.mock.reset();
    res = await post({
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello!" }, {
        role: "user",
        content: "  \n",
      }],
    });
    await res.body?.cancel();
    await g.mock.idle();
    const last = (g.mock.stats.calls[0].body as { messages: { role: string }[] }).messages.at(-1)!;
    assert.equal(last.role, "user");
  });
});

Deno.test("Anthropic's server tools (other than web search) reach only Anthropic: elsewhere a 400, nothing sent or debited", async () => {
  await withGateway(async (g) => {
    const post = (model: string) =>
      fetch(`${g.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": g.key, "content-type": "application/json" },
        body: JSON.stringify({
          model,
          max_tokens: 50,
          messages: [{ role: "user", content: "List the files [[mock:tokens=1]]" }],
          tools: [{ type: "bash_20250124", name: "bash" }],
          tool_choice: { type: "tool", name: "bash" },
        }),
      });
    const before = (await g.store.getAccount(g.accountId))!.balance;
    let res = await post("openai/gpt-4o-mini");
    assert.equal(res.status, 400);
    const err = await res.json();
    assert.equal(err.type, "error");
    assert.equal(err.error.type, "invalid_request_error");
    assert.match(err.error.message, /tools\[0\]: tool type "bash_20250124"/);
    assert.equal(g.mock.stats.calls.length, 0);
    await g.settled();
    assert.equal((await g.store.getAccount(g.accountId))!.balance, before);
    // Claude gets the tool as sent.
    res = await post("anthropic/claude-sonnet-4.5");
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as { tools: unknown[] };
    assert.deepEqual(sent.tools, [{ type: "bash_20250124", name: "bash" }]);
  });
});

Deno.test("more stop sequences than OpenAI's chat API takes: the first four go upstream, the gateway keeps them all", async () => {
  await withGateway(async (g) => {
    const client = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const stop_sequences = ["w1", "w2", "w3", "w4", " tok3"];
    const r = await client.messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 50,
      stop_sequences,
      messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
    });
    assert.deepEqual(r.content, [{ type: "text", text: "tok0 tok1 tok2" }]);
    assert.deepEqual([r.stop_reason, r.stop_sequence], ["stop_sequence", " tok3"]);
    const call = g.mock.stats.calls[0];
    assert.equal(call.protocol, "chat");
    assert.deepEqual((call.body as { stop?: unknown }).stop, ["w1", "w2", "w3", "w4"]);

    const stream = client.messages.stream({
      model: "openai/gpt-4o-mini",
      max_tokens: 50,
      stop_sequences,
      messages: [{ role: "user", content: "Count again [[mock:tokens=6]]" }],
    });
    let text = "";
    stream.on("text", (t) => text += t);
    const final = await stream.finalMessage();
    assert.equal(text, "tok0 tok1 tok2");
    assert.deepEqual([final.stop_reason, final.stop_sequence], ["stop_sequence", " tok3"]);
  });
});

Deno.test("stop sequences of whitespace alone, which Anthropic refuses: kept by the gateway on a Claude model, the others sent", async () => {
  await withGateway(async (g) => {
    const client = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const ask = (stream: boolean) =>
      client.chat.completions.create({
        model: "anthropic/claude-sonnet-4.5",
        max_tokens: 50,
        stop: ["\n", "tok9", " "],
        stream,
        messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
      });
    const r = await ask(false) as OpenAI.ChatCompletion;
    assert.equal(r.choices[0].message.content, "tok0");
    assert.equal(r.choices[0].finish_reason, "stop");
    await g.mock.idle();
    const call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "messages");
    assert.deepEqual((call.body as { stop_sequences?: unknown }).stop_sequences, ["tok9"]);
    let text = "";
    for await (const c of await ask(true) as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      text += c.choices[0]?.delta?.content ?? "";
    }
    assert.equal(text, "tok0");
  });
});

Deno.test("a responses client's prompt_cache_key turns on Claude's automatic prompt caching", async () => {
  await withGateway(async (g) => {
    const res = await fetch(`${g.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "anthropic/claude-sonnet-4.5",
        instructions: "You are a coding agent.",
        input: [{ role: "user", content: [{ type: "input_text", text: "Hi [[mock:tokens=1]]" }] }],
        prompt_cache_key: "019a-session",
        stream: true,
      }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await g.mock.idle();
    const call = g.mock.stats.calls[0];
    assert.equal(call.protocol, "messages");
    assert.deepEqual((call.body as { cache_control?: unknown }).cache_control, {
      type: "ephemeral",
    });
  });
});

/**
 * A Claude Code turn after its tool search found `name` (a deferred tool), on gpt-4o-mini: the
 * chat body the upstream was sent.
 */
async function afterToolSearch(g: TestGateway, name: string) {
  const res = await fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": g.key, "content-type": "application/json" },
    body: JSON.stringify({
      model: "openai/gpt-4o-mini",
      max_tokens: 50,
      tools: [{ name: "ToolSearch", input_schema: { type: "object" } }, {
        name,
        input_schema: { type: "object" },
        defer_loading: true,
      }],
      messages: [
        { role: "user", content: "Find the tool" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "ToolSearch", input: {} }],
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [{ type: "tool_reference", tool_name: name }],
          }, { type: "text", text: "go [[mock:tokens=1]]" }],
        },
      ],
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
  await g.mock.idle();
  const sent = g.mock.stats.calls.at(-1)!.body as {
    messages: { role: string; content: unknown }[];
    tools: { function: { name: string } }[];
  };
  return {
    tools: sent.tools.map((t) => t.function.name),
    result: JSON.stringify(sent.messages.find((m) => m.role === "tool")!.content),
  };
}

Deno.test("Claude Code's tool search on another vendor's model: a tool_reference result reaches it as text", async () => {
  await withGateway(async (g) => {
    const sent = await afterToolSearch(g, "mcp__db__query");
    assert.match(sent.result, /Tool loaded: mcp__db__query/);
    assert.deepEqual(sent.tools, ["ToolSearch", "mcp__db__query"]);
  });
});

Deno.test("a tool_reference to a tool whose name is fitted for the upstream names it as fitted", async () => {
  await withGateway(async (g) => {
    const long = "mcp__warehouse__" + "lookup_inventory_levels_by_sku_and_region".repeat(2);
    const sent = await afterToolSearch(g, long);
    const fitted = shortToolName(long);
    assert.deepEqual(sent.tools, ["ToolSearch", fitted]);
    assert.match(sent.result, new RegExp(`Tool loaded: ${fitted}`));
    assert.doesNotMatch(sent.result, /lookup_inventory_levels_by_sku_and_regionlookup/);
  });
});

Deno.test("a client's own reasoning effort reaches OpenAI as the nearest the model takes, passed through", async () => {
  await withGateway(async (g) => {
    const post = (path: string, body: unknown) =>
      fetch(`${g.url}/v1/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    // Codex's model_reasoning_effort = "xhigh" on a model that takes low–high.
    let res = await post("responses", {
      model: "openai/gpt-5.1-codex",
      input: "Hi [[mock:tokens=1]]",
      reasoning: { effort: "xhigh", summary: "auto" },
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    let call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "responses");
    assert.deepEqual((call.body as { reasoning: unknown }).reasoning, {
      effort: "high",
      summary: "auto",
    });
    // `minimal` on gpt-5.1, which takes none–high but not minimal.
    res = await post("chat/completions", {
      model: "openai/gpt-5.1",
      reasoning_effort: "minimal",
      messages: [{ role: "user", content: "Hi [[mock:tokens=1]]" }],
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "chat");
    assert.equal((call.body as { reasoning_effort: string }).reasoning_effort, "low");
  });
});

Deno.test("a responses history with an unpaired tool output and an unanswered call reaches Claude paired", async () => {
  await withGateway(async (g) => {
    const r = await openai(g).responses.create({
      model: "anthropic/claude-sonnet-4.5",
      input: [
        { role: "user", content: "first" },
        // An output whose call the history lost (a cut-short or edited history).
        { type: "function_call_output", call_id: "call_lost", output: "lost output" },
        { type: "function_call", call_id: "call_a", name: "f", arguments: "{}" },
        { type: "function_call", call_id: "call_b", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "call_b", output: "b out" },
        { role: "user", content: "go on [[mock:tokens=3]]" },
      ],
      tools: [{
        type: "function",
        name: "f",
        parameters: { type: "object", properties: {} },
        strict: false,
      }],
    });
    assert.equal(r.status, "completed");
    const body = g.mock.stats.calls[0].body as {
      messages: {
        role: string;
        content: { type: string; tool_use_id?: string; id?: string; text?: string }[];
      }[];
    };
    const uses = body.messages.flatMap((m) =>
      m.content.filter((b) => b.type === "tool_use").map((b) => b.id)
    );
    const results = body.messages.flatMap((m) =>
      m.content.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id)
    );
    // Every result answers a call sent, and every call sent is answered.
    assert.deepEqual([...results].sort(), [...uses].sort());
    assert.equal(uses.length, 2);
    const text = JSON.stringify(body.messages);
    assert.match(text, /Result of tool call call_lost:\\nlost output/);
  });
});

Deno.test("cache marks on whole messages, tool calls and tools: dropped for OpenAI, which refuses them; kept for Claude", async () => {
  await withGateway(async (g) => {
    const mark = { type: "ephemeral" };
    const body = (model: string) => ({
      model,
      max_tokens: 20,
      tools: [{
        type: "function",
        function: { name: "f", parameters: { type: "object" } },
        cache_control: mark,
      }],
      messages: [
        { role: "system", content: "Be brief.", cache_control: mark },
        { role: "user", content: "call f" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "c1",
            type: "function",
            function: { name: "f", arguments: "{}" },
            cache_control: mark,
          }],
        },
        { role: "tool", tool_call_id: "c1", content: "ok", cache_control: mark },
        { role: "user", content: "thanks [[mock:tokens=1]]" },
      ],
    });
    const post = async (model: string) => {
      const res = await fetch(`${g.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body(model)),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      await g.mock.idle();
      return JSON.stringify(g.mock.stats.calls.at(-1)!.body);
    };
    assert.ok(!(await post("openai/gpt-4o-mini")).includes("cache_control"));
    const claude = JSON.parse(await post("anthropic/claude-sonnet-4.5"));
    assert.deepEqual(claude.system.at(-1).cache_control, mark);
    assert.deepEqual(claude.tools[0].cache_control, mark);
    const results = claude.messages.find((m: { content: { type: string }[] }) =>
      Array.isArray(m.content) && m.content.some((b) => b.type === "tool_result")
    );
    assert.deepEqual(results.content[0].cache_control, mark);
  });
});

Deno.test("a responses body with OpenRouter's extensions reaches OpenAI without them (it refuses each as unknown)", async () => {
  await withGateway(async (g) => {
    const post = async (model: string) => {
      const res = await fetch(`${g.baseURL}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model,
          input: "hi [[mock:tokens=1]]",
          usage: { include: true },
          provider: { sort: "price" },
          top_k: 3,
          reasoning: { effort: "low", max_tokens: 512 },
        }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      await g.mock.idle();
      return g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    };
    const openai = await post("openai/gpt-5.1");
    assert.deepEqual(
      ["usage", "provider", "top_k"].filter((k) => k in openai),
      [],
    );
    assert.deepEqual(openai.reasoning, { effort: "low" });
  });
});

for (const path of ["/v1/chat/completions", "/v1/responses"]) {
  Deno.test(`${path} to OpenRouter: the client's model fallbacks (models, route) are not sent`, async () => {
    await withGateway(async (g) => {
      // OpenRouter bills the model that answered: a fallback to a dearer model than the one
      // held for would be debited far past its hold.
      const body = path === "/v1/chat/completions"
        ? {
          model: "deepseek/deepseek-chat",
          max_tokens: 50,
          messages: [{ role: "user", content: "hi [[mock:tokens=3]]" }],
          models: ["openai/o1-pro"],
          route: "fallback",
        }
        : {
          model: "deepseek/deepseek-chat",
          max_output_tokens: 50,
          input: "hi [[mock:tokens=3]]",
          models: ["openai/o1-pro"],
          route: "fallback",
        };
      const res = await fetch(`${g.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200, await res.text());
      const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
      assert.equal(sent.model, "deepseek/deepseek-chat");
      assert.equal(sent.models, undefined);
      assert.equal(sent.route, undefined);
    });
  });
}

Deno.test("a responses client that switched from an OpenAI model: OpenRouter gets no other vendor's reasoning items", async () => {
  await withGateway(async (g) => {
    // Codex's history after turns of openai/gpt-5.x (OpenAI's own items carry no `format`),
    // and one of Gemini through OpenRouter's responses API (which names its format).
    const input = [
      { type: "message", role: "user", content: "list files [[mock:tokens=2]]" },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Listing" }],
        encrypted_content: "gAAAAABfernet-of-openai",
      },
      { type: "function_call", call_id: "call_1", name: "ls", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: "a.txt" },
      {
        type: "reasoning",
        id: "rs_2",
        summary: [],
        encrypted_content: "CiQB-gemini-thought-signature",
        format: "google-gemini-v1",
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "a.txt" }] },
      { type: "message", role: "user", content: "and now?" },
    ];
    const sentFor = async (model: string) => {
      const res = await fetch(`${g.baseURL}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model,
          input,
          tools: [{ type: "function", name: "ls", parameters: { type: "object" } }],
          include: ["reasoning.encrypted_content"],
          reasoning: { effort: "medium" },
        }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      await g.mock.idle();
      const call = g.mock.stats.calls.at(-1)!;
      assert.equal(call.protocol, "responses", "OpenRouter's responses API, passed through");
      const items = (call.body as { input: { type: string; id?: string }[] }).input;
      return items.filter((i) => i.type === "reasoning").map((i) => i.id);
    };
    assert.deepEqual(await sentFor("google/gemini-2.5-pro"), ["rs_2"]);
    assert.deepEqual(await sentFor("anthropic/claude-sonnet-4.5"), []);
    assert.deepEqual(await sentFor("deepseek/deepseek-r1"), []);
    assert.deepEqual(await sentFor("openai/gpt-5.1"), ["rs_1"]);
    // A router may answer with either vendor's model: it gets them all.
    assert.deepEqual(await sentFor("openrouter/auto"), ["rs_1", "rs_2"]);
  }, { withoutKeys: ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"] });
});

Deno.test("a request whose every message is empty is a 400 of the gateway's, in every format: no call goes out with no messages", async () => {
  await withGateway(async (g) => {
    const cases: [path: string, body: Record<string, unknown>][] = [
      ["chat/completions", {
        model: "anthropic/claude-sonnet-4.5",
        messages: [{ role: "user", content: [] }],
      }],
      ["chat/completions", {
        model: "openai/gpt-4.1-mini",
        messages: [{ role: "user", content: [] }],
      }],
      ["messages", {
        model: "openai/gpt-4.1-mini",
        max_tokens: 16,
        messages: [{ role: "user", content: [] }],
      }],
      ["responses", { model: "anthropic/claude-sonnet-4.5", input: [] }],
      ["responses", { model: "anthropic/claude-sonnet-4.5" }],
      ["responses", { model: "openai/gpt-4.1-mini", input: [] }],
    ];
    for (const [path, body] of cases) {
      const res = await fetch(`${g.url}/v1/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}: ${text}`);
      const err = JSON.parse(text);
      if (path === "messages") assert.equal(err.error.type, "invalid_request_error");
      else assert.equal(err.error.code, 400);
      assert.match(err.error.message, /nothing for the model to read/);
    }
    await g.settled();
    assert.equal(g.mock.stats.total, 0, "nothing sent upstream");
    assert.deepEqual(await g.store.listGenerations(g.accountId, { limit: 10 }), []);

    // Instructions alone are something to read.
    const res = await fetch(`${g.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "anthropic/claude-sonnet-4.5",
        instructions: "Hi [[mock:tokens=1]]",
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
  });
});

Deno.test("a blank or empty last user turn reaches Claude from chat and responses alike, never as a prefill", async () => {
  await withGateway(async (g) => {
    for (const content of ["", []]) {
      const history = [
        { role: "user", content: "Hi [[mock:tokens=2]]" },
        { role: "assistant", content: "Hello" },
        { role: "user", content },
      ];
      await openai(g).chat.completions.create({
        model: "anthropic/claude-sonnet-4.5",
        messages: history as OpenAI.Chat.ChatCompletionMessageParam[],
      });
      await openai(g).responses.create({
        model: "anthropic/claude-sonnet-4.5",
        input: history as OpenAI.Responses.ResponseInput,
      });
    }
    const sent = g.mock.stats.calls.map((c) =>
      (c.body as { messages: { role: string; content: unknown }[] }).messages.at(-1)
    );
    // Left out, the assistant's "Hello" would be the last message: Claude would continue it
    // (the real API refuses the blank turn instead, with a 400 that says what is wrong).
    const blank = { role: "user", content: [{ type: "text", text: "" }] };
    assert.deepEqual(sent, [blank, blank, blank, blank]);
  });
});

Deno.test("responses: audio for Claude goes to a responses upstream as sent, or is a 400 — never dropped with its turn", async () => {
  const input = [
    { role: "user", content: "Hi [[mock:tokens=2]]" },
    { role: "assistant", content: "Hello" },
    {
      role: "user",
      content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }],
    },
  ];
  await withGateway(async (g) => {
    await openai(g).responses.create({
      model: "anthropic/claude-sonnet-4.5",
      input: input as unknown as OpenAI.Responses.ResponseInput,
    });
    const call = g.mock.stats.calls[0];
    // OpenRouter's responses API, with the audio turn last as the client sent it.
    assert.equal((call.body as { model: string }).model, "anthropic/claude-sonnet-4.5");
    assert.deepEqual((call.body as { input: unknown[] }).input.at(-1), input.at(-1));
  });
  await withGateway(async (g) => {
    const res = await fetch(`${g.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "anthropic/claude-sonnet-4.5", input }),
    });
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(body.error.message, /input_audio/);
    assert.equal(g.mock.stats.calls.length, 0);
  }, { withoutKeys: ["OPENROUTER_API_KEY"] });
});

Deno.test("messages: a last user turn of nothing reaches a chat upstream blank, never leaving a prefill", async () => {
  await withGateway(async (g) => {
    const res = await fetch(`${g.baseURL}/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "deepseek/deepseek-chat", // OpenRouter's chat API, which continues a prefill
        max_tokens: 16,
        messages: [
          { role: "user", content: "Hi [[mock:tokens=2]]" },
          { role: "assistant", content: "Hello" },
          { role: "user", content: [] },
        ],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const sent = (g.mock.stats.calls[0].body as { messages: unknown[] }).messages;
    assert.deepEqual(sent.at(-1), { role: "user", content: "" });
  });
});

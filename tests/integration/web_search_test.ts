/**
 * Web searches run by the upstream (Anthropic's web_search server tool, responses'
 * web_search tool) are billed per search at the catalogue's `web_search` price, and held for
 * before the call: the real SDKs → a real gateway over HTTP → the mock upstream.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { parseSse } from "../helpers/sse.ts";
import { ceilNano, mul, mulInt, nanoToRub, parseDec } from "../../src/billing/money.ts";

const CLAUDE = "anthropic/claude-sonnet-4.5";
const GPT = "openai/gpt-5.1";
/** Both models' catalogue price per search, USD. */
const SEARCH_PRICE = "0.01";

/**
 * The debit of `n` searches alone, markup included, rounded up as one generation would be:
 * worked out here from the rates, not by the cost code under test.
 */
function searchesNano(g: TestGateway, n: number, markup = true, price = SEARCH_PRICE): bigint {
  const { usdRub, markupFactor } = g.gw.ctx.rates;
  const rub = mul(mulInt(parseDec(price), n), usdRub);
  return ceilNano(markup ? mul(rub, markupFactor) : rub);
}

async function debitOf(g: TestGateway, generationId: string): Promise<bigint> {
  await g.settled();
  const gen = await g.store.getGeneration(g.accountId, generationId);
  assert.equal(gen?.status, "completed");
  return gen!.cost;
}

/** Two generations alike but for their searches differ by the searches' price (±1 rounding). */
function assertSearchDebit(withSearches: bigint, without: bigint, expected: bigint) {
  const diff = withSearches - without;
  assert.ok(
    diff >= expected - 1n && diff <= expected + 1n,
    `searches added ${diff} nano-roubles, expected ${expected}`,
  );
}

Deno.test("web search (messages, anthropic upstream): server_tool_use searches are billed, streamed or not", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const tools = [{
      type: "web_search_20250305" as const,
      name: "web_search" as const,
      max_uses: 5,
    }];
    const ask = (n: number) => ({
      model: CLAUDE,
      max_tokens: 64,
      tools,
      messages: [{ role: "user" as const, content: `news? [[mock:tokens=3,searches=${n}]]` }],
    });
    const searched = await c.messages.create(ask(2)).withResponse();
    const usage = searched.data.usage as unknown as Record<string, unknown>;
    assert.deepEqual(usage.server_tool_use, { web_search_requests: 2, web_fetch_requests: 0 });
    const details = usage.cost_details as Record<string, number>;
    assert.equal(details.upstream_inference_web_search_cost, nanoToRub(searchesNano(g, 2, false)));
    const plain = await c.messages.create(ask(0)).withResponse();
    assert.equal(
      "upstream_inference_web_search_cost" in
        ((plain.data.usage as unknown as Record<string, unknown>).cost_details as object),
      false,
    );
    const withDebit = await debitOf(g, searched.response.headers.get("x-generation-id")!);
    assert.equal(nanoToRub(withDebit), usage.cost);
    assertSearchDebit(
      withDebit,
      await debitOf(g, plain.response.headers.get("x-generation-id")!),
      searchesNano(g, 2),
    );

    // Streamed: the count arrives in message_delta's usage.
    const stream = c.messages.stream(ask(3));
    const final = await stream.finalMessage();
    const streamedUsage = final.usage as unknown as Record<string, unknown>;
    assert.deepEqual(streamedUsage.server_tool_use, {
      web_search_requests: 3,
      web_fetch_requests: 0,
    });
    const id = (await stream.withResponse()).response.headers.get("x-generation-id")!;
    const plainStream = c.messages.stream(ask(0));
    await plainStream.finalMessage();
    const plainId = (await plainStream.withResponse()).response.headers.get("x-generation-id")!;
    assertSearchDebit(await debitOf(g, id), await debitOf(g, plainId), searchesNano(g, 3));
  });
});

Deno.test("web search (responses, responses upstream): web_search_call items are billed, streamed or not", async () => {
  await withGateway(async (g) => {
    const c = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const ask = (n: number) => ({
      model: GPT,
      tools: [{ type: "web_search" as const }],
      input: `news? [[mock:tokens=3,searches=${n}]]`,
    });
    const searched = await c.responses.create(ask(2)).withResponse();
    assert.equal(searched.data.output.filter((i) => i.type === "web_search_call").length, 2);
    const plain = await c.responses.create(ask(0)).withResponse();
    assertSearchDebit(
      await debitOf(g, searched.response.headers.get("x-generation-id")!),
      await debitOf(g, plain.response.headers.get("x-generation-id")!),
      searchesNano(g, 2),
    );

    const streamed = async (n: number) => {
      const { data: stream, response } = await c.responses.create({ ...ask(n), stream: true })
        .withResponse();
      let completed: OpenAI.Responses.Response | undefined;
      for await (const e of stream) if (e.type === "response.completed") completed = e.response;
      assert.ok(completed);
      assert.equal(completed.output.filter((i) => i.type === "web_search_call").length, n);
      return response.headers.get("x-generation-id")!;
    };
    const withId = await streamed(1);
    const withoutId = await streamed(0);
    assertSearchDebit(await debitOf(g, withId), await debitOf(g, withoutId), searchesNano(g, 1));
  });
});

Deno.test("web search: the hold covers the searches a request allows, so a balance short of them is refused", async () => {
  // 15 RUB: enough for a short answer and one search (its price and its results' input),
  // short of 50 searches at 0.01 USD.
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const ask = (maxUses: number) =>
      c.messages.create({
        model: CLAUDE,
        max_tokens: 16,
        tools: [{ type: "web_search_20250305", name: "web_search", max_uses: maxUses }],
        messages: [{ role: "user", content: "news? [[mock:tokens=2]]" }],
      });
    assert.ok(searchesNano(g, 50) > 15_000_000_000n, "the premise: 50 searches cost > 15 RUB");
    await assert.rejects(ask(50), (e: unknown) => {
      assert.ok(e instanceof Anthropic.APIError);
      assert.equal(e.status, 402);
      return true;
    });
    const ok = await ask(1);
    assert.equal(ok.type, "message");
  }, { balanceRub: "15" });
});

Deno.test("web search (messages, anthropic upstream): a search tool naming no max_uses reaches Anthropic capped at the searches held", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    // Held for ten searches (no cap named); without a cap Anthropic may run more, past the hold.
    const ask = (tool: Anthropic.Messages.WebSearchTool20250305, stream: boolean) =>
      c.messages.create({
        model: CLAUDE,
        max_tokens: 64,
        stream,
        tools: [{ name: "get_time", input_schema: { type: "object" } }, tool],
        messages: [{ role: "user", content: "news? [[mock:tokens=2]]" }],
      });
    for (const stream of [false, true]) {
      const r = await ask({ type: "web_search_20250305", name: "web_search" }, stream);
      if (stream) { for await (const _ of r as AsyncIterable<unknown>) { /* drain */ } }
    }
    // A cap the client names goes as sent.
    await ask({ type: "web_search_20250305", name: "web_search", max_uses: 3 }, false);
    await g.mock.idle();
    const sent = g.mock.stats.calls.map((call) =>
      (call.body as { tools: { name: string; max_uses?: number }[] }).tools
        .find((t) => t.name === "web_search")?.max_uses
    );
    assert.deepEqual(sent, [10, 10, 3]);
  });
});

Deno.test("web search (messages, OpenRouter chat upstream): Claude Code's search tool runs as OpenRouter's web plugin", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    // An OpenRouter-only model: the messages request is transcoded to OpenRouter's chat.
    const model = "google/gemini-2.5-flash";
    const r = await c.messages.create({
      model,
      max_tokens: 64,
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }],
      messages: [{ role: "user", content: "news? [[mock:tokens=3]]" }],
    });
    assert.equal(r.stop_reason, "end_turn");
    await g.mock.idle();
    const call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "chat");
    const body = call.body as Record<string, unknown>;
    assert.deepEqual(body.plugins, [{ id: "web" }]);
    // The server tool is not a function the model could call.
    assert.equal(body.tools, undefined);
  });
});

Deno.test("web search (messages, OpenRouter chat upstream): the pages the web plugin cites reach Claude Code as Anthropic's search result blocks, streamed or not", async () => {
  await withGateway(async (g) => {
    // Claude Code's WebSearch tool: it lists the pages from the web_search_tool_result blocks
    // and had none, as the plugin's pages come only as url_citation annotations.
    const body = (stream: boolean) => ({
      model: "moonshotai/kimi-k2.5",
      max_tokens: 32000,
      stream,
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 8 }],
      messages: [{
        role: "user",
        content: [{
          type: "text",
          text: "Perform a web search for the query: tollgate [[mock:tokens=3,searches=2]]",
        }],
      }],
    });
    const post = (stream: boolean) =>
      fetch(`${g.url}/v1/messages?beta=true`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${g.key}`,
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
        },
        body: JSON.stringify(body(stream)),
      });
    const pages = [
      { type: "web_search_result", url: "https://example.com/mock/1", title: "Mock result 1" },
      { type: "web_search_result", url: "https://example.com/mock/2", title: "Mock result 2" },
    ];
    const shown = (content: Record<string, unknown>[]) => {
      const call = content.find((b) => b.type === "server_tool_use");
      const result = content.find((b) => b.type === "web_search_tool_result");
      assert.ok(call && result, JSON.stringify(content));
      assert.equal(call.name, "web_search");
      assert.equal(result.tool_use_id, call.id);
      assert.deepEqual(
        (result.content as Record<string, unknown>[]).map(({ type, url, title }) => ({
          type,
          url,
          title,
        })),
        pages,
      );
      assert.equal(content.filter((b) => b.type === "text").length, 1);
    };

    const whole = await post(false);
    assert.equal(whole.status, 200);
    shown((await whole.json()).content);

    const res = await post(true);
    assert.equal(res.status, 200);
    const blocks: Record<string, unknown>[] = [];
    for (const e of parseSse(await res.text())) {
      const d = JSON.parse(e.data);
      if (d.type === "content_block_start") blocks[d.index] = d.content_block;
    }
    shown(blocks);

    // A turn of Claude Code's own loop declares no search tool: an answer citing pages (the
    // plugin's marker still in its history) ends on its text, never on a result block, which
    // Claude Code takes for a failed turn.
    const { tools: _, ...plain } = body(true);
    const loop = await fetch(`${g.url}/v1/messages`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${g.key}`,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify(plain),
    });
    assert.equal(loop.status, 200);
    const types = parseSse(await loop.text()).map((e) => JSON.parse(e.data))
      .filter((d) => d.type === "content_block_start").map((d) => d.content_block.type);
    assert.deepEqual(types, ["text"]);
  });
});

Deno.test("web search (messages, OpenAI): Claude Code's search tool runs as the responses API's web_search, shown as Anthropic's blocks and billed", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const ask = (n: number, stream: boolean) => ({
      model: GPT,
      max_tokens: 64,
      stream,
      tools: [{ type: "web_search_20250305" as const, name: "web_search" as const, max_uses: 5 }],
      messages: [{ role: "user" as const, content: `news? [[mock:tokens=3,searches=${n}]]` }],
    });
    const whole = await c.messages.create({ ...ask(2, false), stream: false }).withResponse();
    const sent = g.mock.stats.calls[0];
    assert.equal(sent.path, "/v1/responses", "OpenAI's responses API, which has the search tool");
    const body = sent.body as { tools: unknown[]; max_tool_calls: number; include: string[] };
    assert.deepEqual(body.tools, [{ type: "web_search" }]);
    assert.equal(body.max_tool_calls, 5, "no more searches than the hold covers");
    assert.ok(body.include.includes("web_search_call.action.sources"));
    const blocks = whole.data.content.map((b) => b.type);
    assert.deepEqual(blocks.slice(0, 4), [
      "server_tool_use",
      "web_search_tool_result",
      "server_tool_use",
      "web_search_tool_result",
    ]);
    assert.equal(blocks.at(-1), "text");
    // Both counts, as Anthropic sends them: the SDKs type web_fetch_requests as a number.
    assert.deepEqual(whole.data.usage.server_tool_use, {
      web_search_requests: 2,
      web_fetch_requests: 0,
    });
    const call = whole.data.content[0] as { id: string; name: string; input: { query: string } };
    assert.equal(call.name, "web_search");
    assert.equal(call.input.query, "mock search 1");
    assert.match(call.id, /^srvtoolu_[a-zA-Z0-9_]+$/, "an id Anthropic accepts back");
    const result = whole.data.content[1] as { tool_use_id: string; content: unknown[] };
    assert.equal(result.tool_use_id, call.id);
    // The pages found, as Claude Code lists them to the model.
    assert.deepEqual(result.content, [{
      type: "web_search_result",
      url: "https://example.com/mock/1",
      title: "example.com",
      encrypted_content: "",
      page_age: null,
    }]);

    // Streamed, the SDK assembles the same blocks.
    const stream = c.messages.stream({ ...ask(2, true) });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content.map((b) => b.type), blocks);
    assert.deepEqual((final.content[0] as { input: unknown }).input, { query: "mock search 1" });
    assert.deepEqual(final.usage.server_tool_use, {
      web_search_requests: 2,
      web_fetch_requests: 0,
    });

    // Billed per search: two searches cost two searches more than none.
    const none = await c.messages.create({ ...ask(0, false), stream: false }).withResponse();
    assertSearchDebit(
      await debitOf(g, whole.response.headers.get("x-generation-id")!),
      await debitOf(g, none.response.headers.get("x-generation-id")!),
      searchesNano(g, 2),
    );
  });
});

Deno.test("web search (responses, OpenAI): a model whose listing prices searches at 0 is billed OpenAI's per-search price", async () => {
  await withGateway(async (g) => {
    const model = "openai/gpt-4o";
    const listed = g.gw.ctx.catalogue.resolve(model);
    assert.equal(Number(listed?.pricing.web_search), 0, "the listing gives no search price");
    const c = new OpenAI({ apiKey: g.key, baseURL: `${g.url}/v1`, maxRetries: 0 });
    const ask = (n: number) =>
      c.responses.create({
        model,
        tools: [{ type: "web_search" }],
        input: `news? [[mock:tokens=3,searches=${n}]]`,
      }).withResponse();
    const two = await ask(2);
    const none = await ask(0);
    // config/providers.json: OpenAI's price for a search by a non-reasoning model.
    assertSearchDebit(
      await debitOf(g, two.response.headers.get("x-generation-id")!),
      await debitOf(g, none.response.headers.get("x-generation-id")!),
      searchesNano(g, 2, true, "0.025"),
    );
  });
});

Deno.test("web search (chat): web_search_options runs Claude's search tool, billed per search; OpenAI's own model searches through its responses API; OpenRouter gets the option as sent", async () => {
  await withGateway(async (g) => {
    const c = new OpenAI({ apiKey: g.key, baseURL: `${g.url}/v1`, maxRetries: 0 });
    const ask = (model: string, n: number) =>
      c.chat.completions.create({
        model,
        max_tokens: 64,
        web_search_options: {
          search_context_size: "low",
          user_location: { type: "approximate", approximate: { city: "Kazan", country: "RU" } },
        },
        messages: [{ role: "user", content: `news? [[mock:tokens=3,searches=${n}]]` }],
      }).withResponse();
    const searched = await ask(CLAUDE, 2);
    assert.equal(searched.data.choices[0].message.content, "tok0 tok1 tok2");
    await g.mock.idle();
    const call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "messages");
    const tools = (call.body as { tools?: Record<string, unknown>[] }).tools;
    assert.deepEqual(tools?.map((t) => [t.type, t.name]), [["web_search_20250305", "web_search"]]);
    assert.deepEqual(tools?.[0].user_location, {
      type: "approximate",
      city: "Kazan",
      country: "RU",
    });
    const plain = await ask(CLAUDE, 0);
    assertSearchDebit(
      await debitOf(g, searched.response.headers.get("x-generation-id")!),
      await debitOf(g, plain.response.headers.get("x-generation-id")!),
      searchesNano(g, 2),
    );

    // OpenAI's chat API takes web_search_options on its search models alone (any other model:
    // 400 "Web search options not supported with this model"); its responses API searches
    // with any model, and the answer comes back to the chat client.
    const viaResponses = await ask(GPT, 2);
    assert.equal(viaResponses.data.choices[0].message.content, "tok0 tok1 tok2");
    await g.mock.idle();
    const sent = g.mock.stats.calls.at(-1)!;
    assert.equal(sent.path, "/v1/responses");
    const body = sent.body as Record<string, unknown>;
    assert.equal("web_search_options" in body, false);
    assert.deepEqual(
      (body.tools as Record<string, unknown>[]).filter((t) => t.type === "web_search"),
      [{
        type: "web_search",
        search_context_size: "low",
        user_location: { type: "approximate", city: "Kazan", country: "RU" },
      }],
    );
    // Billed per search at the model's price, as a responses client's would be.
    assertSearchDebit(
      await debitOf(g, viaResponses.response.headers.get("x-generation-id")!),
      await debitOf(g, (await ask(GPT, 0)).response.headers.get("x-generation-id")!),
      searchesNano(g, 2),
    );

    // OpenRouter runs the option on any model: it passes through untouched.
    await ask("deepseek/deepseek-chat", 0);
    await g.mock.idle();
    const passed = g.mock.stats.calls.at(-1)!;
    assert.equal(passed.protocol, "chat");
    assert.deepEqual((passed.body as Record<string, unknown>).web_search_options, {
      search_context_size: "low",
      user_location: { type: "approximate", approximate: { city: "Kazan", country: "RU" } },
    });
  });
});

Deno.test("web search (messages, OpenAI gpt-5): Claude Code's search call, thinking off, is sent low effort, not minimal (which OpenAI refuses beside web_search)", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    // Claude Code's WebSearch tool on a model it does not know: an effort and no thinking.
    await c.messages.create({
      model: "openai/gpt-5",
      max_tokens: 4000,
      output_config: { effort: "high" },
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 8 }],
      messages: [{ role: "user", content: "Perform a web search [[mock:tokens=3,searches=1]]" }],
    } as Anthropic.MessageCreateParamsNonStreaming);
    const sent = g.mock.stats.calls[0];
    assert.equal(sent.path, "/v1/responses");
    assert.deepEqual((sent.body as { reasoning?: unknown }).reasoning, { effort: "low" });
  });
});

for (const [path, model] of [["/v1/messages", CLAUDE], ["/v1/responses", GPT]]) {
  Deno.test(`web search (${path}): a stream cut after its searches ran bills them, counted`, async () => {
    await withGateway(async (g) => {
      // The count comes with the answer's last usage, which a cut stream never sends; the
      // searches relayed before the cut were run, and the upstream bills them.
      const cut = async (n: number) => {
        const marker = `[[mock:tokens=20,searches=${n},cut=3]]`;
        const body = path === "/v1/messages"
          ? {
            model,
            max_tokens: 64,
            stream: true,
            tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 5 }],
            messages: [{ role: "user", content: `news? ${marker}` }],
          }
          : { model, stream: true, tools: [{ type: "web_search" }], input: `news? ${marker}` };
        const res = await fetch(`${g.url}${path}`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${g.key}`,
            "content-type": "application/json",
            "anthropic-version": "2023-06-01",
          },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        if (n > 0) assert.match(text, /web_search/, "the searches reached the client");
        await g.settled();
        return (await g.store.getGeneration(g.accountId, res.headers.get("x-generation-id")!))!;
      };
      const searched = await cut(2);
      const plain = await cut(0);
      assert.equal(searched.status, "failed");
      assert.equal(searched.usageSource, "counted");
      assertSearchDebit(searched.cost, plain.cost, searchesNano(g, 2));
    });
  });
}

Deno.test("web search (messages, OpenAI and OpenRouter chat): a tool choice forcing the web_search server tool names no function upstream", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const search = {
      type: "web_search_20250305" as const,
      name: "web_search" as const,
      max_uses: 8,
    };
    const fn = { name: "lookup", input_schema: { type: "object" as const, properties: {} } };
    const sent = async (model: string, tools: Anthropic.ToolUnion[]) => {
      const calls = g.mock.stats.calls.length;
      // Claude Code's WebSearch tool forces its search so.
      await c.messages.create({
        model,
        max_tokens: 64,
        tools,
        tool_choice: { type: "tool", name: "web_search" },
        messages: [{ role: "user", content: "Perform a web search [[mock:tokens=3,searches=1]]" }],
      });
      await g.mock.idle();
      return g.mock.stats.calls[calls].body as Record<string, unknown>;
    };
    // OpenAI's hosted search is no function: a function choice of that name is refused
    // ("Tool choice 'function' not found in 'tools' parameter"). Alone, it is the one tool
    // "required" can call; beside functions the model is left to choose.
    assert.equal((await sent(GPT, [search])).tool_choice, "required");
    assert.equal((await sent(GPT, [search, fn])).tool_choice, "auto");
    // OpenRouter's web plugin searches whatever the choice; a function choice must name a function.
    const chat = await sent("google/gemini-2.5-flash", [search, fn]);
    assert.deepEqual(chat.plugins, [{ id: "web" }]);
    assert.equal(chat.tool_choice, "auto");
  });
});

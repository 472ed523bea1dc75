/**
 * POST /v1/messages end to end: the real `@anthropic-ai/sdk` → a real gateway over HTTP → the
 * mock upstream, served both by an anthropic-messages upstream (pass-through) and by an
 * openai-chat upstream (transcoded); metering checked against the store.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { heldByGenerations, type TestGateway, withGateway } from "../helpers/gateway.ts";
import { ALL_VIA_CHAT } from "../helpers/providers.ts";
import { nanoToRub } from "../../src/billing/money.ts";
import { parseSse } from "../helpers/sse.ts";

/** A catalogue slug; the bundled providers file sends anthropic/* to the anthropic provider. */
const MODEL = "anthropic/claude-sonnet-4.5";
/** What the anthropic provider calls it upstream (dots → dashes). */
const UPSTREAM_NAME = "claude-sonnet-4-5";

type Upstream = "anthropic" | "chat";
const UPSTREAMS: Upstream[] = ["anthropic", "chat"];

/** Gateway options for an upstream kind: the bundled file (anthropic) or everything via chat. */
function upstreamOpts(u: Upstream) {
  return u === "anthropic" ? {} : { providers: ALL_VIA_CHAT };
}

function client(g: TestGateway, key = g.key) {
  return new Anthropic({ apiKey: key, baseURL: g.url, maxRetries: 0 });
}

function post(g: TestGateway, body: unknown, headers: Record<string, string> = {}, key = g.key) {
  return fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function expectError(
  res: Response,
  status: number,
  type: string,
): Promise<{ type: string; error: { type: string; message: string } }> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = JSON.parse(text);
  assert.equal(body.type, "error", text);
  assert.equal(body.error.type, type, text);
  assert.equal(typeof body.error.message, "string");
  return body;
}

// ---- non-streaming -------------------------------------------------------------------------

for (const u of UPSTREAMS) {
  Deno.test(`messages (${u} upstream): non-streaming message with usage and the debited cost`, async () => {
    await withGateway(async (g) => {
      const before = (await g.store.getAccount(g.accountId))!.balance;
      const raw = await client(g).messages.create({
        model: MODEL,
        max_tokens: 256,
        messages: [{ role: "user", content: "Say hello [[mock:tokens=5]]" }],
      }).withResponse();
      const m = raw.data;
      assert.equal(m.type, "message");
      assert.equal(m.role, "assistant");
      assert.equal(m.model, MODEL);
      assert.equal(m.stop_reason, "end_turn");
      assert.equal(m.content.length, 1);
      assert.equal(m.content[0].type, "text");
      assert.equal((m.content[0] as { text: string }).text, "tok0 tok1 tok2 tok3 tok4");
      const usage = m.usage as unknown as Record<string, unknown>;
      assert.equal(usage.output_tokens, 5);
      assert.equal(typeof usage.input_tokens, "number");
      assert.ok((usage.input_tokens as number) > 0);
      assert.equal(usage.cache_creation_input_tokens, 0);
      assert.equal(usage.cache_read_input_tokens, 0);
      assert.equal(typeof usage.cost, "number");
      assert.ok((usage.cost as number) > 0);
      assert.equal(typeof usage.cost_details, "object");

      const genId = raw.response.headers.get("x-generation-id")!;
      assert.match(genId, /^gen_/);
      await g.settled();
      const after = (await g.store.getAccount(g.accountId))!;
      assert.equal(nanoToRub(before - after.balance), usage.cost);
      assert.equal(await heldByGenerations(g.store, after.id), 0n);
      const gen = await g.store.getGeneration(g.accountId, genId);
      assert.equal(gen?.status, "completed");
      assert.equal(gen?.endpoint, "messages");
      assert.equal(gen?.model, MODEL);

      await g.mock.idle();
      const calls = g.mock.stats.calls;
      assert.equal(calls.length, 1);
      const sent = calls[0].body as Record<string, unknown>;
      if (u === "anthropic") {
        assert.equal(calls[0].protocol, "messages");
        assert.equal(sent.model, UPSTREAM_NAME);
        assert.equal(sent.max_tokens, 256);
      } else {
        assert.equal(calls[0].protocol, "chat");
        assert.equal(sent.model, MODEL);
      }
    }, upstreamOpts(u));
  });
}

// ---- streaming -----------------------------------------------------------------------------

for (const u of UPSTREAMS) {
  Deno.test(`messages (${u} upstream): SDK stream gives text events and the final message`, async () => {
    await withGateway(async (g) => {
      const stream = client(g).messages.stream({
        model: MODEL,
        max_tokens: 256,
        messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
      });
      let text = "";
      let deltas = 0;
      stream.on("text", (t) => {
        text += t;
        deltas++;
      });
      let deltaUsage: Record<string, unknown> | undefined;
      stream.on("streamEvent", (e) => {
        if (e.type === "message_delta") deltaUsage = e.usage as unknown as Record<string, unknown>;
      });
      const final = await stream.finalMessage();
      assert.equal(deltas, 6);
      assert.equal(text, "tok0 tok1 tok2 tok3 tok4 tok5");
      assert.equal(final.content.length, 1);
      assert.equal((final.content[0] as { text: string }).text, text);
      assert.equal(final.stop_reason, "end_turn");
      assert.equal(final.usage.output_tokens, 6);
      // The SDK folds message_delta's usage into known fields only; the cost is on the event.
      assert.equal(typeof deltaUsage?.cost, "number");
      assert.ok((deltaUsage!.cost as number) > 0);
      assert.equal(typeof deltaUsage?.cost_details, "object");
    }, upstreamOpts(u));
  });

  Deno.test(`messages (${u} upstream): raw SSE follows the native event sequence`, async () => {
    await withGateway(async (g) => {
      const res = await post(g, {
        model: MODEL,
        max_tokens: 256,
        stream: true,
        messages: [{ role: "user", content: "Count [[mock:tokens=4]]" }],
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      const genId = res.headers.get("x-generation-id")!;
      assert.match(genId, /^gen_/);
      const events = parseSse(await res.text()).filter((e) => e.event !== "ping");
      const names = events.map((e) => e.event);
      for (const e of events) {
        assert.equal(JSON.parse(e.data).type, e.event, "data.type matches the event name");
      }
      assert.deepEqual(names, [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
      ]);
      const deltas = events.filter((e) => e.event === "content_block_delta").map((e) =>
        JSON.parse(e.data).delta
      );
      for (const d of deltas) assert.equal(d.type, "text_delta");
      assert.equal(deltas.map((d) => d.text).join(""), "tok0 tok1 tok2 tok3");
      const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data);
      assert.equal(delta.delta.stop_reason, "end_turn");
      assert.equal(delta.usage.output_tokens, 4);
      assert.equal(typeof delta.usage.cost, "number");
      assert.ok(delta.usage.cost > 0);
      assert.equal(typeof delta.usage.cost_details, "object");
      assert.ok("upstream_inference_input_cost" in delta.usage.cost_details);

      await g.settled();
      const gen = await g.store.getGeneration(g.accountId, genId);
      assert.equal(gen?.status, "completed");
      assert.equal(nanoToRub(gen!.cost), delta.usage.cost);
    }, upstreamOpts(u));
  });

  for (const fault of ["fail", "cut"]) {
    Deno.test(`messages (${u} upstream): an in-stream failure (${fault}=3) ends with event: error`, async () => {
      await withGateway(async (g) => {
        const res = await post(g, {
          model: MODEL,
          max_tokens: 256,
          stream: true,
          messages: [{ role: "user", content: `Fail midway [[mock:tokens=8,${fault}=3]]` }],
        });
        assert.equal(res.status, 200);
        const genId = res.headers.get("x-generation-id")!;
        const events = parseSse(await res.text()).filter((e) => e.event !== "ping");
        const last = events.at(-1)!;
        assert.equal(last.event, "error");
        const body = JSON.parse(last.data);
        assert.equal(body.type, "error");
        assert.equal(typeof body.error.type, "string");
        assert.equal(body.error.type, "api_error");
        assert.equal(typeof body.error.message, "string");
        assert.ok(
          !events.some((e) => e.event === "message_stop"),
          "no message_stop after a failure",
        );
        assert.equal(
          events.filter((e) => e.event === "content_block_delta").length,
          3,
          "the three deltas before the failure were relayed",
        );
        await g.settled();
        const gen = await g.store.getGeneration(g.accountId, genId);
        assert.equal(gen?.status, "failed");
        assert.ok(gen!.cost > 0n, "what was relayed before the failure is charged");
      }, upstreamOpts(u));
    });
  }
}

for (const u of UPSTREAMS) {
  Deno.test(`messages (${u} upstream): the output cap gives stop_reason max_tokens, streamed or not`, async () => {
    await withGateway(async (g) => {
      const params = {
        model: MODEL,
        max_tokens: 3,
        system: "Be brief.",
        messages: [{ role: "user" as const, content: "Long answer [[mock:tokens=8]]" }],
      };
      const m = await client(g).messages.create(params);
      assert.equal(m.stop_reason, "max_tokens");
      assert.equal((m.content[0] as { text: string }).text, "tok0 tok1 tok2");
      assert.equal(m.usage.output_tokens, 3);
      const final = await client(g).messages.stream(params).finalMessage();
      assert.equal(final.stop_reason, "max_tokens");
      await g.mock.idle();
      const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
      if (u === "anthropic") assert.equal(sent.system, "Be brief.");
      else {
        const msgs = sent.messages as { role: string; content: unknown }[];
        assert.equal(msgs[0].role, "system");
        assert.ok(JSON.stringify(msgs[0].content).includes("Be brief."));
      }
    }, upstreamOpts(u));
  });
}

// ---- tools ---------------------------------------------------------------------------------

const WEATHER_TOOL = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: {
    type: "object" as const,
    properties: { q: { type: "string" } },
    required: ["q"],
  },
};

for (const u of UPSTREAMS) {
  Deno.test(`messages (${u} upstream): tool_use with input, then a tool_result turn`, async () => {
    await withGateway(async (g) => {
      const c = client(g);
      const first = await c.messages.create({
        model: MODEL,
        max_tokens: 256,
        tools: [WEATHER_TOOL],
        messages: [{ role: "user", content: "Weather in Paris? [[mock:tool=get_weather]]" }],
      });
      assert.equal(first.model, MODEL);
      assert.equal(first.stop_reason, "tool_use");
      const use = first.content.find((b) => b.type === "tool_use");
      assert.ok(use && use.type === "tool_use");
      assert.equal(use.name, "get_weather");
      assert.deepEqual(use.input, { q: "mock q 1" });
      assert.ok(use.id.length > 0);

      const second = await c.messages.create({
        model: MODEL,
        max_tokens: 256,
        tools: [WEATHER_TOOL],
        messages: [
          // The marker is left out of the replayed turn: it would ask the mock for a call again.
          { role: "user", content: "Weather in Paris?" },
          { role: "assistant", content: first.content },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny, 21°C" }, {
              type: "text",
              text: "Thanks [[mock:tokens=3]]",
            }],
          },
        ],
      });
      assert.equal(second.stop_reason, "end_turn");
      assert.equal((second.content[0] as { text: string }).text, "tok0 tok1 tok2");

      await g.mock.idle();
      const sent = g.mock.stats.calls[1].body as Record<string, unknown>;
      const text = JSON.stringify(sent);
      assert.ok(text.includes("Sunny, 21°C"), "the tool result reached the upstream");
      if (u === "anthropic") {
        const msgs = sent.messages as { role: string; content: { type: string }[] }[];
        assert.equal(msgs[1].content.find((b) => b.type === "tool_use")?.type, "tool_use");
        assert.equal(msgs[2].content[0].type, "tool_result");
      } else {
        const msgs = sent.messages as { role: string; tool_calls?: unknown[] }[];
        assert.ok(msgs.some((m) => m.role === "assistant" && m.tool_calls?.length === 1));
        assert.ok(msgs.some((m) => m.role === "tool"));
      }
    }, upstreamOpts(u));
  });

  Deno.test(`messages (${u} upstream): streamed tool_use assembles its input`, async () => {
    await withGateway(async (g) => {
      const stream = client(g).messages.stream({
        model: MODEL,
        max_tokens: 256,
        tools: [WEATHER_TOOL],
        messages: [{ role: "user", content: "Weather? [[mock:tool=get_weather]]" }],
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, "tool_use");
      const use = final.content.find((b) => b.type === "tool_use");
      assert.ok(use && use.type === "tool_use");
      assert.equal(use.name, "get_weather");
      assert.deepEqual(use.input, { q: "mock q 1" });
    }, upstreamOpts(u));
  });
}

for (const u of UPSTREAMS) {
  Deno.test(`messages (${u} upstream): parallel tool calls stream as separate, ordered blocks`, async () => {
    await withGateway(async (g) => {
      const res = await post(g, {
        model: MODEL,
        max_tokens: 256,
        stream: true,
        tools: [WEATHER_TOOL, { ...WEATHER_TOOL, name: "get_time" }],
        messages: [{ role: "user", content: "Weather and time? [[mock:tools=2]]" }],
      });
      assert.equal(res.status, 200);
      const events = parseSse(await res.text()).filter((e) => e.event !== "ping").map((e) =>
        JSON.parse(e.data)
      );
      // Blocks never interleave: each start … stop before the next start, indexes 0, 1, …
      let open: number | undefined;
      let next = 0;
      const blocks: { type: string; name?: string; json: string }[] = [];
      for (const e of events) {
        if (e.type === "content_block_start") {
          assert.equal(open, undefined, "a block started while another was open");
          assert.equal(e.index, next++);
          open = e.index;
          blocks.push({ type: e.content_block.type, name: e.content_block.name, json: "" });
        } else if (e.type === "content_block_delta") {
          assert.equal(e.index, open);
          if (e.delta.type === "input_json_delta") blocks.at(-1)!.json += e.delta.partial_json;
        } else if (e.type === "content_block_stop") {
          assert.equal(e.index, open);
          open = undefined;
        }
      }
      const uses = blocks.filter((b) => b.type === "tool_use");
      assert.deepEqual(uses.map((b) => b.name), ["get_weather", "get_time"]);
      assert.deepEqual(uses.map((b) => JSON.parse(b.json)), [
        { q: "mock q 1" },
        { q: "mock q 2" },
      ]);
      assert.equal(events.at(-2).delta.stop_reason, "tool_use");
      assert.equal(events.at(-1).type, "message_stop");
    }, upstreamOpts(u));
  });

  Deno.test(`messages (${u} upstream): an image block reaches the upstream; an alias slug is echoed`, async () => {
    await withGateway(async (g) => {
      const png =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
      const alias = "~anthropic/claude-sonnet-latest";
      const m = await client(g).messages.create({
        model: alias,
        max_tokens: 64,
        messages: [{
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
            { type: "text", text: "What is this? [[mock:tokens=2]]" },
          ],
        }],
      });
      assert.equal(m.model, alias);
      assert.equal((m.content[0] as { text: string }).text, "tok0 tok1");
      await g.mock.idle();
      const sent = JSON.stringify(g.mock.stats.calls[0].body);
      if (u === "anthropic") assert.ok(sent.includes(`"data":"${png}"`), sent.slice(0, 300));
      else assert.ok(sent.includes(`data:image/png;base64,${png}`), sent.slice(0, 300));
    }, upstreamOpts(u));
  });
}

// ---- thinking ------------------------------------------------------------------------------

Deno.test("messages (anthropic upstream): thinking with a budget gives a signed thinking block", async () => {
  await withGateway(async (g) => {
    const c = client(g);
    const m = await c.messages.create({
      model: MODEL,
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "Think first [[mock:tokens=3,reasoning=4]]" }],
    });
    assert.equal(m.content[0].type, "thinking");
    const t = m.content[0] as { thinking: string; signature: string };
    assert.equal(t.thinking, "think0 think1 think2 think3");
    assert.ok(t.signature.length > 0);
    assert.equal(m.content[1].type, "text");

    const stream = c.messages.stream({
      model: MODEL,
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "Think again [[mock:tokens=2,reasoning=3]]" }],
    });
    let thinking = "";
    stream.on("thinking", (d) => thinking += d);
    const final = await stream.finalMessage();
    assert.equal(thinking, "think0 think1 think2");
    const block = final.content[0] as { type: string; signature: string };
    assert.equal(block.type, "thinking");
    assert.ok(block.signature.length > 0);

    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
    assert.deepEqual(sent.thinking, { type: "enabled", budget_tokens: 1024 });
  });
});

Deno.test("messages (chat upstream): thinking with a budget is mapped to reasoning, never invented", async () => {
  await withGateway(async (g) => {
    const c = client(g);
    const m = await c.messages.create({
      model: MODEL,
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "Think first [[mock:tokens=3,reasoning=4]]" }],
    });
    // The chat upstream sends no reasoning text: no (empty, unsigned) thinking block is
    // invented, the text answer is intact, and the hidden reasoning is still billed.
    assert.deepEqual(m.content.map((b) => b.type), ["text"]);
    assert.equal(
      (m.content.find((b) => b.type === "text") as { text: string }).text,
      "tok0 tok1 tok2",
    );
    assert.equal(m.usage.output_tokens, 7, "the hidden reasoning tokens are counted as output");

    const stream = c.messages.stream({
      model: MODEL,
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "Think again [[mock:tokens=2,reasoning=3]]" }],
    });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content.map((b) => b.type), ["text"]);
    assert.equal((final.content[0] as { text: string }).text, "tok0 tok1");

    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as Record<string, unknown>;
    assert.equal(
      sent.thinking,
      undefined,
      "the Anthropic-only field does not reach a chat upstream",
    );
    assert.ok(
      sent.reasoning_effort !== undefined || sent.reasoning !== undefined,
      `the budget is mapped to a reasoning setting: ${JSON.stringify(sent)}`,
    );
  }, { providers: ALL_VIA_CHAT });
});

// ---- prompt cache --------------------------------------------------------------------------

Deno.test("messages (anthropic upstream): prompt-cache figures are relayed and priced", async () => {
  await withGateway(async (g) => {
    const c = client(g);
    const m = await c.messages.create({
      model: MODEL,
      max_tokens: 256,
      system: [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "Hi [[mock:tokens=2,cache_read=1000,cache_write=50]]" }],
    });
    const usage = m.usage as unknown as Record<string, unknown>;
    assert.equal(usage.cache_read_input_tokens, 1000);
    assert.equal(usage.cache_creation_input_tokens, 50);
    const details = usage.cost_details as Record<string, number>;
    assert.ok(details.upstream_inference_cache_read_cost > 0);
    assert.ok(details.upstream_inference_cache_write_cost > 0);

    const stream = c.messages.stream({
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user", content: "Hi [[mock:tokens=2,cache_read=700]]" }],
    });
    const final = await stream.finalMessage();
    assert.equal(final.usage.cache_read_input_tokens, 700);

    await g.mock.idle();
    const sent = g.mock.stats.calls[0].body as { system: { cache_control?: unknown }[] };
    assert.deepEqual(sent.system[0].cache_control, { type: "ephemeral" });
  });
});

// ---- headers -------------------------------------------------------------------------------

Deno.test("messages: anthropic-version and anthropic-beta reach the anthropic upstream only", async () => {
  const body = {
    model: MODEL,
    max_tokens: 64,
    messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
  };
  const headers = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "interleaved-thinking-2025-05-14,context-1m-2025-08-07",
  };
  await withGateway(async (g) => {
    const res = await post(g, body, headers);
    assert.equal(res.status, 200, await res.text());
    await g.mock.idle();
    const h = g.mock.stats.calls[0].headers;
    assert.equal(h["anthropic-version"], "2023-06-01");
    assert.equal(h["anthropic-beta"], headers["anthropic-beta"]);
    assert.equal(h["x-api-key"], "mock-anthropic-key", "the gateway's own key goes upstream");
    assert.ok(!JSON.stringify(h).includes(g.key), "the client's key never goes upstream");
  });
  await withGateway(async (g) => {
    const res = await post(g, body, headers);
    assert.equal(res.status, 200, await res.text());
    await g.mock.idle();
    const h = g.mock.stats.calls[0].headers;
    assert.equal(h["anthropic-beta"], undefined);
    assert.equal(h["anthropic-version"], undefined);
    assert.ok(!JSON.stringify(h).includes(g.key), "the client's key never goes upstream");
  }, { providers: ALL_VIA_CHAT });
});

// ---- errors (the spec's messages table) ----------------------------------------------------

Deno.test("messages errors: 400 invalid_request_error for a missing max_tokens", async () => {
  await withGateway(async (g) => {
    const res = await post(g, { model: MODEL, messages: [{ role: "user", content: "Hi" }] });
    const body = await expectError(res, 400, "invalid_request_error");
    assert.match(body.error.message, /max_tokens/);
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("messages errors: 400 invalid_request_error for missing messages", async () => {
  await withGateway(async (g) => {
    const res = await post(g, { model: MODEL, max_tokens: 10 });
    const body = await expectError(res, 400, "invalid_request_error");
    assert.match(body.error.message, /messages/);
  });
});

Deno.test("messages errors: at most 256 stop sequences of at most 1000 characters, else a 400 before any upstream", async () => {
  // A model that takes no stop sequences (or fewer than sent) has the gateway scan its stream
  // for each of them, delta by delta: a million short ones in one cheap call held the event
  // loop, and every other client's stream, for seconds at a time.
  await withGateway(async (g) => {
    const c = client(g);
    const ok = await c.messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 16,
      stop_sequences: Array.from({ length: 256 }, (_, i) => `never${i}`),
      messages: [{ role: "user", content: "Hi [[mock:tokens=4]]" }],
    });
    assert.equal(ok.stop_reason, "end_turn");
    const calls = g.mock.stats.calls.length;
    for (
      const stop_sequences of [
        Array.from({ length: 257 }, (_, i) => `s${i}`),
        ["x".repeat(1001)],
      ]
    ) {
      await assert.rejects(
        c.messages.create({
          model: "openai/gpt-4o-mini",
          max_tokens: 16,
          stop_sequences,
          messages: [{ role: "user", content: "Hi [[mock:tokens=4]]" }],
        }),
        (e: unknown) => {
          assert.ok(e instanceof Anthropic.BadRequestError);
          assert.match(e.message, /stop_sequences/);
          return true;
        },
      );
    }
    assert.equal(g.mock.stats.calls.length, calls, "nothing reaches the upstream");
  });
});

Deno.test("messages errors: 400 model not found for a bare upstream model name (SDK sees BadRequestError)", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: "claude-3-5-sonnet",
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi" }],
    });
    const body = await expectError(res, 400, "invalid_request_error");
    assert.match(body.error.message, /model not found/i);

    await assert.rejects(
      client(g).messages.create({
        model: "claude-3-5-sonnet",
        max_tokens: 10,
        messages: [{ role: "user", content: "Hi" }],
      }),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.BadRequestError);
        assert.equal(e.status, 400);
        return true;
      },
    );
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("messages errors: Claude Code's default model name gets a 400 naming the slug to use", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: "claude-sonnet-4-5-20250929",
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi" }],
    });
    const body = await expectError(res, 400, "invalid_request_error");
    assert.match(body.error.message, /did you mean "anthropic\/claude-sonnet-4\.5"\?/);
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("messages errors: 401 authentication_error for a missing, unknown or revoked key", async () => {
  await withGateway(async (g) => {
    const body = { model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "Hi" }] };
    const none = await fetch(`${g.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    await expectError(none, 401, "authentication_error");

    await expectError(
      await post(g, body, {}, "tg_" + "x".repeat(40)),
      401,
      "authentication_error",
    );

    const other = await g.account("10");
    const keys = await g.store.listKeys(other.accountId);
    assert.ok(await g.store.revokeKey(keys[0].id));
    await expectError(await post(g, body, {}, other.key), 401, "authentication_error");

    await assert.rejects(
      client(g, other.key).messages.create(body as Anthropic.MessageCreateParamsNonStreaming),
      (e: unknown) => e instanceof Anthropic.AuthenticationError,
    );
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("messages errors: 402 invalid_request_error in Russian for an insufficient balance", async () => {
  await withGateway(
    async (g) => {
      const a = await g.account("0.01");
      const res = await post(
        g,
        {
          model: MODEL,
          max_tokens: 4096,
          messages: [{ role: "user", content: "Hi" }],
        },
        {},
        a.key,
      );
      const body = await expectError(res, 402, "invalid_request_error");
      assert.match(body.error.message, /[а-яА-ЯёЁ]/, "the message is in Russian");
      // It says what the request needed and how to need less.
      assert.match(body.error.message, /резервирует до \d+,\d\d ₽/);
      assert.match(body.error.message, /max_tokens/);
      assert.equal(g.mock.stats.calls.length, 0);
      const acct = (await g.store.getAccount(a.accountId))!;
      assert.equal(await heldByGenerations(g.store, acct.id), 0n);
      assert.equal(nanoToRub(acct.balance), 0.01);
    },
  );
});

Deno.test("messages: the hold counts text the gateway forwards without modelling it (documents, search results)", async () => {
  await withGateway(async (g) => {
    // ~120 000 tokens: ~0.36 USD of input on this model, far above the account's balance.
    const big = "lorem ipsum ".repeat(40_000);
    const blocks = [
      { type: "document", source: { type: "content", content: [{ type: "text", text: big }] } },
      {
        type: "search_result",
        source: "https://example.com",
        title: "t",
        content: [{ type: "text", text: big }],
      },
    ];
    const ask = (block: unknown, key: string) =>
      post(
        g,
        {
          model: MODEL,
          max_tokens: 1,
          messages: [{
            role: "user",
            content: [block, { type: "text", text: "summarise [[mock:tokens=1]]" }],
          }],
        },
        {},
        key,
      );
    for (const block of blocks) {
      const a = await g.account("0.05");
      await expectError(await ask(block, a.key), 402, "invalid_request_error");
      assert.equal(nanoToRub((await g.store.getAccount(a.accountId))!.balance), 0.05, block.type);
    }
    assert.equal(g.mock.stats.calls.length, 0);

    // The same document with the money for it goes through and is billed in full.
    const rich = await g.account("100");
    const res = await ask(blocks[0], rich.key);
    assert.equal(res.status, 200);
    const out = await res.json();
    assert.ok(out.usage.input_tokens > 100_000);
    const acct = (await g.store.getAccount(rich.accountId))!;
    assert.ok(acct.balance >= 0n);
    assert.equal(await heldByGenerations(g.store, acct.id), 0n);
  });
});

Deno.test("messages errors: 404 — count_tokens is plain text, upstream 404 is 502 api_error, unknown generation is 404", async () => {
  await withGateway(async (g) => {
    const ct = await fetch(`${g.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Hi" }] }),
    });
    assert.equal(ct.status, 404);
    assert.match(ct.headers.get("content-type") ?? "", /^text\/plain/);
    const text = await ct.text();
    assert.match(text, /404 Not Found/);
    assert.throws(() => JSON.parse(text));

    // An upstream 404 means OUR catalogue maps to a name the provider does not know: 502.
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi [[mock:error=404]]" }],
    });
    const body = await expectError(res, 502, "api_error");
    assert.ok(!/mock-anthropic-key|mock-openrouter-key/.test(body.error.message));

    const gen = await fetch(`${g.url}/v1/generations/gen_unknown`, {
      headers: { authorization: `Bearer ${g.key}` },
    });
    assert.equal(gen.status, 404);
    const genBody = await gen.json();
    assert.equal(genBody.error.code, 404, "the generic envelope");
  });
});

Deno.test("messages errors: 429 rate_limit_error for an upstream 429", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi [[mock:error=429]]" }],
    });
    // The upstream's wait (the mock's retry-after-ms: 1500) reaches the client in whole seconds.
    assert.equal(res.headers.get("retry-after"), "2");
    const body = await expectError(res, 429, "rate_limit_error");
    assert.ok(!/organization/.test(body.error.message), "the vendor's org details are not relayed");
    await assert.rejects(
      client(g).messages.create({
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: "Hi again [[mock:error=429]]" }],
      }),
      (e: unknown) => e instanceof Anthropic.RateLimitError,
    );
  });
});

Deno.test("messages errors: 403 permission_error when the provider denies access to the model", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi [[mock:error=403]]" }],
    });
    const body = await expectError(res, 403, "permission_error");
    assert.equal(body.error.message, "the model provider denied access to the model");
    await assert.rejects(
      client(g).messages.create({
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: "Hi again [[mock:error=403]]" }],
      }),
      (e: unknown) => e instanceof Anthropic.PermissionDeniedError,
    );
  });
});

Deno.test("messages errors: 503 overloaded_error when no provider is available", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi" }],
    });
    await expectError(res, 503, "overloaded_error");
    assert.equal(g.mock.stats.calls.length, 0);
  }, { withoutKeys: ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"] });
});

Deno.test("messages errors: Anthropic overloaded (529) and its fallback failing too is 503 overloaded_error", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi [[mock:error=529]]" }],
    });
    await expectError(res, 503, "overloaded_error");
    assert.equal(res.headers.get("retry-after"), "2", "Anthropic's wait, not a default");
    // Both were asked: Anthropic, then OpenRouter, whose failure is not what the client hears.
    assert.deepEqual(g.mock.stats.calls.map((c) => c.path), [
      "/v1/messages",
      "/v1/chat/completions",
    ]);
    // Nor what the history names.
    await g.settled();
    const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    assert.deepEqual([gen.status, gen.provider], ["failed", "anthropic"]);
  });
});

Deno.test("chat and responses errors: an overloaded Anthropic is their spec's 502 (503 is for no provider at all)", async () => {
  await withGateway(async (g) => {
    for (const path of ["/v1/chat/completions", "/v1/responses"]) {
      const body = path.endsWith("responses")
        ? { model: MODEL, input: "Hi [[mock:error=529]]" }
        : { model: MODEL, messages: [{ role: "user", content: "Hi [[mock:error=529]]" }] };
      const res = await fetch(`${g.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 502, path);
      const json = await res.json();
      assert.equal(json.error.code, 502, path);
      assert.match(json.error.message, /overloaded/);
    }
  });
});

Deno.test("messages errors: upstream 500 fails over, then api_error with no charge", async () => {
  await withGateway(async (g) => {
    const before = (await g.store.getAccount(g.accountId))!.balance;
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi [[mock:error=500]]" }],
    });
    await expectError(res, 502, "api_error");
    const genId = res.headers.get("x-generation-id");
    await g.settled();
    await g.mock.idle();
    // anthropic first, then the openrouter fallback (openai-chat) for the same slug
    assert.deepEqual(g.mock.stats.calls.map((c) => c.protocol), ["messages", "chat"]);
    const after = (await g.store.getAccount(g.accountId))!;
    assert.equal(after.balance, before);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
    if (genId) {
      const gen = await g.store.getGeneration(g.accountId, genId);
      assert.equal(gen?.status, "failed");
      assert.equal(gen?.cost, 0n);
    }
  });
});

Deno.test("messages: a compaction request reaches only Anthropic; for another vendor's model it is a 400, not an ordinary answer billed", async () => {
  await withGateway(async (g) => {
    const c = client(g);
    const before = (await g.store.getAccount(g.accountId))!.balance;
    // The compaction beta: the conversation is to come back summarised as Anthropic's signed
    // `compaction` block. Another model has no such answer to give.
    const params: Omit<Anthropic.Beta.MessageCreateParamsNonStreaming, "model"> = {
      max_tokens: 64,
      compaction: { type: "summarize" },
      messages: [{ role: "user", content: "Summarise us [[mock:tokens=3]]" }],
    };
    for (const model of ["openai/gpt-4o-mini", "google/gemini-2.5-flash"]) {
      const err = await c.beta.messages.create({ model, ...params }).catch((e) => e);
      assert.ok(err instanceof Anthropic.BadRequestError, `${model}: ${err}`);
      assert.equal(err.status, 400);
      const body = err.error as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, /^compaction can be sent only to an Anthropic model/);
    }
    await g.settled();
    assert.equal(g.mock.stats.calls.length, 0);
    assert.equal((await g.store.getAccount(g.accountId))!.balance, before);

    // Anthropic gets it as sent.
    const m = await c.beta.messages.create({ model: MODEL, ...params });
    assert.equal(m.type, "message");
    await g.mock.idle();
    const sent = g.mock.stats.calls.at(-1)!.body as { compaction?: unknown };
    assert.deepEqual(sent.compaction, { type: "summarize" });
  });
});

Deno.test("messages: the advisor tool is a 400 on every model, never a call to another model billed at this one's prices", async () => {
  await withGateway(async (g) => {
    const c = client(g);
    const before = (await g.store.getAccount(g.accountId))!.balance;
    // Anthropic runs the advisor on the model the tool names (Opus advising Haiku here) and
    // bills its tokens at that model's prices; the usage reports them among the iterations.
    for (const model of ["anthropic/claude-haiku-4.5", "openai/gpt-4o-mini"]) {
      const err = await c.beta.messages.create({
        model,
        max_tokens: 64,
        tools: [
          { name: "get_weather", input_schema: { type: "object" } },
          { type: "advisor_20260301", name: "advisor", model: "claude-opus-4-6" },
        ],
        messages: [{ role: "user", content: "Plan it [[mock:tokens=3]]" }],
      }).catch((e) => e);
      assert.ok(err instanceof Anthropic.BadRequestError, `${model}: ${err}`);
      const body = err.error as { type: string; error: { type: string; message: string } };
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, /^tools\[1\]: the advisor tool is not supported/);
    }
    await g.settled();
    assert.equal(g.mock.stats.calls.length, 0);
    assert.equal((await g.store.getAccount(g.accountId))!.balance, before);
  });
});

// ---- Claude Code recorded requests ---------------------------------------------------------

const CLAUDE_CODE_DIR = "/work/shared/fixtures/clients/claude-code";
const claudeCodeFiles: string[] = (() => {
  try {
    return [...Deno.readDirSync(CLAUDE_CODE_DIR)]
      .map((e) => e.name)
      .filter((n) => /^messages-.*\.request\.json$/.test(n))
      .sort();
  } catch {
    return [];
  }
})();

for (const u of UPSTREAMS) {
  Deno.test({
    name: `messages (${u} upstream): Claude Code recorded requests stream with 200`,
    ignore: claudeCodeFiles.length === 0,
    fn: async () => {
      await withGateway(async (g) => {
        for (const file of claudeCodeFiles) {
          const rec = JSON.parse(await Deno.readTextFile(`${CLAUDE_CODE_DIR}/${file}`));
          const body = { ...rec.body, model: MODEL };
          const headers: Record<string, string> = {};
          for (const name of ["anthropic-version", "anthropic-beta", "user-agent", "x-app"]) {
            if (typeof rec.headers?.[name] === "string") headers[name] = rec.headers[name];
          }
          const res = await post(g, body, headers);
          const text = await res.text();
          assert.equal(res.status, 200, `${file}: ${text.slice(0, 500)}`);
          assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
          const events = parseSse(text).filter((e) => e.event !== "ping");
          assert.equal(events[0].event, "message_start", file);
          assert.equal(events.at(-1)!.event, "message_stop", `${file}: ${text.slice(-400)}`);
          const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data);
          assert.equal(typeof delta.usage.cost, "number", file);
          assert.ok(!events.some((e) => e.event === "error"), file);
        }
        await g.mock.idle();
        assert.equal(g.mock.stats.calls.length, claudeCodeFiles.length);
        for (const call of g.mock.stats.calls) assert.equal(call.outcome, "completed");
        if (u === "anthropic") {
          assert.equal(
            g.mock.stats.calls[0].headers["anthropic-beta"],
            JSON.parse(await Deno.readTextFile(`${CLAUDE_CODE_DIR}/${claudeCodeFiles[0]}`))
              .headers["anthropic-beta"],
          );
        }
      }, upstreamOpts(u));
    },
  });
}

Deno.test("messages (anthropic upstream): an upstream without usage still gives the SDK token counts", async () => {
  await withGateway(async (g) => {
    const c = client(g);
    const ask = {
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user" as const, content: "Hi [[mock:tokens=6,usage=none]]" }],
    };
    const m = await c.messages.create(ask);
    const text = m.content[0].type === "text" ? m.content[0].text : "";
    assert.equal(text, "tok0 tok1 tok2 tok3 tok4 tok5");
    // Counted: one delta of the whole text, about four characters a token.
    assert.equal(m.usage.output_tokens, Math.floor(text.length / 4));
    assert.ok(m.usage.input_tokens > 0);
    assert.equal(typeof (m.usage as unknown as { cost: unknown }).cost, "number");
    // The SDK's stream helper reads message_start's usage: without one it would throw.
    const final = await c.messages.stream(ask).finalMessage();
    assert.equal(final.usage.output_tokens, 6);
    assert.ok(final.usage.input_tokens > 0);
  });
});

// ---- blocks another model cannot read ----------------------------------------------------------

Deno.test("messages: a block only Anthropic reads is a 400 naming it on another model, sent as is to Anthropic", () =>
  withGateway(async (g) => {
    const body = (model: string) => ({
      model,
      max_tokens: 20,
      messages: [
        { role: "user", content: "hello" },
        { role: "assistant", content: "hi" },
        { role: "user", content: [{ type: "bogus", text: "[[mock:tokens=2]]" }] },
      ],
    });
    const e = await expectError(
      await post(g, body("openai/gpt-4o-mini")),
      400,
      "invalid_request_error",
    );
    assert.match(e.error.message, /messages\[2\]\.content\[0\].*"bogus"/);
    assert.equal(g.mock.stats.calls.length, 0, "nothing was sent, nothing billed");
    assert.deepEqual(await g.store.listGenerations(g.accountId, { limit: 5 }), []);
    const res = await post(g, body(MODEL));
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const sent = g.mock.stats.calls[0].body as { messages: { content: unknown }[] };
    assert.deepEqual(sent.messages[2].content, [{ type: "bogus", text: "[[mock:tokens=2]]" }]);
  }));

Deno.test("messages (chat upstream): a search result reaches another model as its text", () =>
  withGateway(async (g) => {
    const res = await post(g, {
      model: "openai/gpt-4o-mini",
      max_tokens: 20,
      messages: [{
        role: "user",
        content: [{
          type: "search_result",
          source: "https://example.com/r",
          title: "Result",
          content: [{ type: "text", text: "the finding [[mock:tokens=2]]" }],
        }],
      }],
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const sent = g.mock.stats.calls[0].body as { messages: { role: string; content: unknown }[] };
    assert.equal(sent.messages.length, 1);
    assert.match(JSON.stringify(sent.messages[0].content), /Result.*example\.com\/r.*the finding/);
  }));

Deno.test("messages (streaming): an upstream that opens a block and fails at once is failed over", async () => {
  await withGateway(async (g) => {
    const res = await post(g, {
      model: MODEL,
      max_tokens: 10,
      stream: true,
      messages: [{ role: "user", content: "Hi [[mock:fail=0]]" }],
    });
    // Anthropic opened an empty text block before its error: nothing was said, so OpenRouter
    // was asked too, and the failure of both is an HTTP error, not a stream that fails.
    assert.deepEqual(g.mock.stats.calls.map((c) => c.path), [
      "/v1/messages",
      "/v1/chat/completions",
    ]);
    assert.ok(res.status >= 500, `status ${res.status}`);
    await expectError(res, res.status, res.status === 503 ? "overloaded_error" : "api_error");
  });
});

Deno.test("messages: the SDK's tool runner, which asks for a message thread, is told threads are not held and runs on the whole history", async () => {
  await withGateway(async (g) => {
    const c = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    // The SDK's own refusal shape for a thread: a 400 it recovers from.
    const refused = await c.beta.messages.create({
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 16,
      thread: { type: "create" },
      messages: [{ role: "user", content: "hi" }],
    } as unknown as Anthropic.Beta.MessageCreateParamsNonStreaming).catch((e) => e);
    assert.ok(refused instanceof Anthropic.BadRequestError);
    assert.deepEqual((refused.error as { error: { details: unknown } }).error.details, {
      error_code: "thread_unsupported_request",
      unsupported: ["thread"],
    });
    assert.equal(g.mock.stats.calls.length, 0);

    for (const model of ["anthropic/claude-sonnet-4.5", "openai/gpt-4o-mini"]) {
      const seen: unknown[] = [];
      const runner = c.beta.messages.toolRunner(
        {
          model,
          max_tokens: 64,
          max_iterations: 2,
          tools: [{
            type: "custom",
            name: "get_weather",
            input_schema: { type: "object", properties: { city: { type: "string" } } },
            run: (input: unknown) => {
              seen.push(input);
              return "sunny";
            },
          }],
          messages: [{ role: "user", content: "Weather? [[mock:tool=get_weather]]" }],
        } as unknown as Parameters<typeof c.beta.messages.toolRunner>[0],
      );
      for await (const _ of runner) { /* each assistant message */ }
      assert.ok(seen.length >= 1, `${model}: the tool ran`);
      await g.mock.idle();
      const last = g.mock.stats.calls.at(-1)!;
      const body = last.body as { messages?: unknown[]; input?: unknown[]; thread?: unknown };
      assert.equal(body.thread, undefined);
      // The turn after the tool's result carries the whole history: the question, the call, the result.
      const history = body.messages ?? body.input ?? [];
      assert.ok(history.length >= 3, `${model}: ${JSON.stringify(history).slice(0, 300)}`);
    }
  });
});

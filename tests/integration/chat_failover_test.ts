/**
 * Chat completions routing failures, end to end: no provider (503), failover to the next
 * provider before anything reached the client (connection refused, upstream 500/429, a slow
 * first byte or first token), the last error when every provider fails, and the upstream's
 * words about its credentials never reaching the client.
 *
 * Providers are steered with the providers file's `headers` (sent on every upstream call),
 * which the mock reads as its `x-mock-*` controls: the first provider can fail while the
 * second, on the same mock, answers.
 */
import assert from "node:assert/strict";
import { heldByGenerations } from "../helpers/gateway.ts";
import OpenAI from "openai";
import type { TestGateway } from "../helpers/gateway.ts";
import {
  ANTHROPIC_MODEL,
  client,
  expectGeneric,
  mockProvider,
  MODEL,
  postChat,
  sdkError,
  settledGeneration,
  waitFor,
  withGateway,
} from "../helpers/chat.ts";

type Obj = Record<string, unknown>;

const MSGS: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: "user", content: "Hello there [[mock:tokens=4]]" },
];

/** One request, streaming or not, through the SDK; returns its text and generation id. */
async function complete(g: TestGateway, stream: boolean): Promise<{ text: string; id: string }> {
  const c = client(g);
  if (!stream) {
    const raw = await c.chat.completions.create({ model: MODEL, messages: MSGS }).withResponse();
    return {
      text: raw.data.choices[0].message.content ?? "",
      id: raw.response.headers.get("x-generation-id")!,
    };
  }
  const raw = await c.chat.completions.create({ model: MODEL, messages: MSGS, stream: true })
    .withResponse();
  let text = "";
  for await (const ch of raw.data) text += ch.choices[0]?.delta?.content ?? "";
  return { text, id: raw.response.headers.get("x-generation-id")! };
}

/** Nothing reached the upstream, nothing is held, no generation was opened. */
async function untouched(g: TestGateway) {
  assert.equal(g.mock.stats.calls.length, 0);
  assert.equal(await heldByGenerations(g.store, g.accountId), 0n);
  assert.deepEqual(await g.store.listGenerations(g.accountId, { limit: 5 }), []);
}

Deno.test("chat failover: 503 when no provider has a key (all disabled)", () =>
  withGateway(async (g) => {
    const e = await sdkError(client(g).chat.completions.create({ model: MODEL, messages: MSGS }));
    assert.equal(e.status, 503);
    const err = e.error as Obj;
    assert.equal(err.code, 503);
    // The client learns why, as the operator did at start-up.
    assert.match(String(err.message), /no provider key set \(OPENAI_API_KEY/);
    assert.equal(typeof err.metadata, "object");
    await untouched(g);
  }, { withoutKeys: ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"] }));

Deno.test("chat failover: 503 for a catalogue slug that no configured provider serves", () =>
  withGateway(async (g) => {
    const res = await postChat(g, { model: ANTHROPIC_MODEL, messages: MSGS });
    const err = await expectGeneric(res, 503);
    assert.match(err.message as string, /provider/);
    assert.doesNotMatch(err.message as string, /key set/, "a provider is configured");
    await untouched(g);
  }, { providers: { providers: [mockProvider("openai")] } }));

for (const stream of [false, true]) {
  const mode = stream ? "streaming" : "non-streaming";

  Deno.test(`chat failover (${mode}): a provider refusing connections is skipped`, () =>
    withGateway(async (g) => {
      const { text, id } = await complete(g, stream);
      assert.equal(text, "tok0 tok1 tok2 tok3");
      assert.equal(g.mock.stats.calls.length, 1);
      const gen = await settledGeneration(g, g.accountId, id);
      assert.equal(gen.provider, "openai");
      assert.equal(gen.status, "completed");
    }, {
      providers: {
        providers: [
          mockProvider("dead", {
            priority: 1,
            baseUrl: "http://127.0.0.1:9",
            baseUrlEnv: undefined,
          }),
          mockProvider("openai", { priority: 10 }),
        ],
      },
    }));

  for (const status of [500, 429, 503, 403, 402]) {
    Deno.test(`chat failover (${mode}): an upstream ${status} before the first byte fails over`, () =>
      withGateway(async (g) => {
        const { text, id } = await complete(g, stream);
        assert.equal(text, "tok0 tok1 tok2 tok3");
        await g.mock.idle();
        const calls = g.mock.stats.calls;
        assert.equal(calls.length, 2);
        assert.equal(calls[0].headers["x-mock-error"], String(status));
        assert.equal(calls[0].outcome, "error");
        assert.equal(calls[1].outcome, "completed");
        const gen = await settledGeneration(g, g.accountId, id);
        assert.equal(gen.provider, "openai");
        assert.equal(gen.status, "completed");
        const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.kind === "debit");
        assert.equal(debits.length, 1, "one debit, for the provider that answered");
      }, {
        providers: {
          providers: [
            mockProvider("flaky", { priority: 1, headers: { "x-mock-error": String(status) } }),
            mockProvider("openai", { priority: 10 }),
          ],
        },
      }));
  }

  Deno.test(`chat failover (${mode}): an in-stream error before any content fails over`, () =>
    withGateway(async (g) => {
      const { text, id } = await complete(g, stream);
      assert.equal(text, "tok0 tok1 tok2 tok3");
      const gen = await settledGeneration(g, g.accountId, id);
      assert.equal(gen.provider, "openai");
      assert.equal(g.mock.stats.calls.length, 2);
    }, {
      providers: {
        providers: [
          mockProvider("failing", { priority: 1, headers: { "x-mock-fail": "0" } }),
          mockProvider("openai", { priority: 10 }),
        ],
      },
    }));

  Deno.test(
    `chat failover (${mode}): a first provider slower than its timeouts is failed over`,
    () =>
      withGateway(async (g) => {
        // The first provider's first content comes after 5 s; its deadlines are 300 ms. (Far
        // apart: a loaded machine takes a second or more for the failover's two calls.)
        const t0 = Date.now();
        const { text, id } = await complete(g, stream);
        const elapsed = Date.now() - t0;
        assert.equal(text, "tok0 tok1 tok2 tok3");
        const gen = await settledGeneration(g, g.accountId, id);
        assert.equal(gen.provider, "openai", "served by the second provider");
        assert.ok(elapsed < 4000, `answered after ${elapsed} ms, not after the slow first token`);
      }, {
        providers: {
          providers: [
            mockProvider("slow", {
              priority: 1,
              headers: { "x-mock-first": "5000" },
              timeouts: { firstByteMs: 300, firstTokenMs: 300, responseMs: 300, idleMs: 300 },
            }),
            mockProvider("openai", { priority: 10 }),
          ],
        },
      }),
  );

  Deno.test(
    `chat (${mode}): a model that thinks past firstByteMs before its first token is waited for`,
    () =>
      withGateway(async (g) => {
        // The stream speaks at once (its role chunk) and the whole answer comes after 1.2 s:
        // a reasoning model at work, not a dead provider. Failing it over would throw away
        // (and pay for) the thinking; the deadlines for it are firstTokenMs and responseMs.
        const { text, id } = await complete(g, stream);
        assert.equal(text, "tok0 tok1 tok2 tok3");
        const gen = await settledGeneration(g, g.accountId, id);
        assert.equal(gen.provider, "thinker");
        assert.equal(g.mock.stats.calls.length, 1, "no second provider was asked");
      }, {
        providers: {
          providers: [
            mockProvider("thinker", {
              priority: 1,
              headers: { "x-mock-first": "1200" },
              timeouts: { firstByteMs: 300, idleMs: 300 },
            }),
            mockProvider("openai", { priority: 10 }),
          ],
        },
      }),
  );

  Deno.test(`chat (${mode}): a provider that does not answer in time is the spec's 502`, () =>
    withGateway(async (g) => {
      const e = await sdkError(complete(g, stream));
      assert.equal(e.status, 502);
      assert.equal((e.error as Obj).code, 502);
      assert.match(String((e.error as Obj).message), /in time/);
    }, {
      providers: {
        providers: [
          mockProvider("slow", {
            headers: { "x-mock-first": "3000" },
            timeouts: { firstByteMs: 200, firstTokenMs: 200, responseMs: 200, idleMs: 200 },
          }),
        ],
      },
    }));

  Deno.test(`chat failover (${mode}): every provider failing gives the last error, no debit`, () =>
    withGateway(async (g) => {
      const before = (await g.store.getAccount(g.accountId))!.balance;
      const e = await sdkError(complete(g, stream));
      assert.equal(e.status, 502);
      const err = e.error as Obj;
      assert.equal(err.code, 502);
      assert.equal(typeof err.metadata, "object");
      const id = e.headers?.get("x-generation-id");
      assert.match(id ?? "", /^gen_/, "the failed generation is named");
      const gen = await settledGeneration(g, g.accountId, id!);
      assert.equal(gen.status, "failed");
      assert.equal(gen.cost, 0n);
      // The history names who failed last.
      assert.equal(gen.provider, "two");
      await g.settled();
      const a = (await g.store.getAccount(g.accountId))!;
      assert.equal(a.balance, before);
      assert.equal(await heldByGenerations(g.store, a.id), 0n);
      assert.equal(g.mock.stats.calls.length, 2);
    }, {
      providers: {
        providers: [
          mockProvider("one", { priority: 1, headers: { "x-mock-error": "500" } }),
          mockProvider("two", { priority: 2, headers: { "x-mock-error": "503" } }),
        ],
      },
    }));
}

Deno.test("chat: access denied by every provider is the spec's 403 (SDK PermissionDeniedError)", () =>
  withGateway(async (g) => {
    const e = await sdkError(client(g).chat.completions.create({ model: MODEL, messages: MSGS }));
    assert.ok(e instanceof OpenAI.PermissionDeniedError, String(e));
    assert.equal(e.status, 403);
    assert.equal((e.error as Obj).code, 403);
    assert.equal((e.error as Obj).message, "the model provider denied access to the model");
    assert.equal(g.mock.stats.calls.length, 2, "the second provider was tried too");
  }, {
    providers: {
      providers: [
        mockProvider("one", { priority: 1, headers: { "x-mock-error": "403" } }),
        mockProvider("two", { priority: 2, headers: { "x-mock-error": "403" } }),
      ],
    },
  }));

Deno.test("chat failover: an upstream 400 is the client's error and is not failed over", () =>
  withGateway(async (g) => {
    const e = await sdkError(client(g).chat.completions.create({ model: MODEL, messages: MSGS }));
    assert.equal(e.status, 400);
    assert.equal((e.error as Obj).code, 400);
    assert.equal(g.mock.stats.calls.length, 1);
  }, {
    providers: {
      providers: [
        mockProvider("strict", { priority: 1, headers: { "x-mock-error": "400" } }),
        mockProvider("openai", { priority: 10 }),
      ],
    },
  }));

Deno.test("chat failover: the upstream's key and its words about it never reach the client", () =>
  withGateway(async (g) => {
    // The mock answers 401 "Incorrect API key provided: bad-key…" to the key `bad-key`
    // (sent here as x-api-key by the provider's headers, beside its real key).
    const res = await postChat(g, { model: MODEL, messages: MSGS });
    const text = await res.text();
    assert.ok(res.status >= 500, `a provider-side failure, not the client's: ${res.status}`);
    await g.mock.idle();
    assert.equal(g.mock.stats.calls[0].outcome, "error");
    for (const secret of ["bad-key", "mock-openai-key", "Incorrect API key"]) {
      assert.ok(!text.includes(secret), `the response leaks ${secret}: ${text}`);
      for (const [name, value] of res.headers) {
        assert.ok(!value.includes(secret), `header ${name} leaks ${secret}`);
      }
    }
    const body = JSON.parse(text) as { error: Obj };
    assert.equal(body.error.code, res.status);
    await g.settled();
    const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    assert.ok(!(gen.error ?? "").includes("bad-key"), "nor is it kept in the history");
  }, {
    providers: { providers: [mockProvider("openai", { headers: { "x-api-key": "bad-key" } })] },
  }));

Deno.test("chat failover: a client that leaves before the first token cancels the upstream", async () => {
  await withGateway(async (g) => {
    // The upstream sends its headers, then nothing: the gateway is still peeking for the
    // first event when the client goes away.
    try {
      const ac = new AbortController();
      const pending = postChat(g, { model: MODEL, messages: MSGS, stream: true }, {
        signal: ac.signal,
      }).catch((e) => e);
      await waitFor("the upstream call", () => g.mock.stats.calls.length > 0 || undefined);
      await new Promise((r) => setTimeout(r, 100));
      ac.abort();
      await pending;
      // The upstream stalls for good: only a cancel ends the call, however long it is waited for.
      await waitFor(
        "the upstream call to be cancelled",
        () => g.mock.stats.calls[0].outcome !== "running" || undefined,
      );
      assert.equal(g.mock.stats.calls[0].outcome, "cancelled");
      // A wallet that holds in memory writes the generation only when it settles.
      await g.settled();
      const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
      const settled = await settledGeneration(g, g.accountId, gen.id);
      assert.equal(settled.status, "cancelled");
      // The upstream had accepted the prompt (it answered with headers): the prompt is billed,
      // counted by the gateway, and nothing else.
      assert.equal(settled.usageSource, "counted");
      assert.equal(settled.tokens.output, 0);
      assert.ok(settled.cost > 0n);
    } finally {
      // Unsticks a gateway that never noticed (closing the mock cuts the stalled stream).
      await g.mock.close();
    }
  }, { providers: { providers: [mockProvider("openai", { headers: { "x-mock-stall": "0" } })] } });
});

/**
 * An upstream that speaks at once (its role chunk), then sends SSE keep-alive comments while
 * the model thinks (as OpenRouter does), then the answer.
 */
function keepAliveUpstream(comments: number, everyMs: number) {
  const enc = new TextEncoder();
  const head = { id: "chatcmpl-k", object: "chat.completion.chunk", created: 1, model: "m" };
  const data = (o: Obj) => enc.encode(`data: ${JSON.stringify({ ...head, ...o })}\n\n`);
  return Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, () => {
    let gone = false;
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(data({ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }));
        for (let i = 0; i < comments && !gone; i++) {
          await new Promise((r) => setTimeout(r, everyMs));
          if (!gone) c.enqueue(enc.encode(": OPENROUTER PROCESSING\n\n"));
        }
        if (gone) return;
        c.enqueue(data({ choices: [{ index: 0, delta: { content: "hello" } }] }));
        c.enqueue(data({
          choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        }));
        c.enqueue(enc.encode("data: [DONE]\n\n"));
        c.close();
      },
      cancel() {
        gone = true;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
}

Deno.test("chat (streaming): keep-alives while a model thinks do not end the wait for its first token", async () => {
  const upstream = keepAliveUpstream(100, 5);
  try {
    await withGateway(async (g) => {
      const { text } = await complete(g, true);
      assert.equal(text, "hello");
    }, {
      providers: {
        providers: [mockProvider("thinker", {
          baseUrl: `http://127.0.0.1:${upstream.addr.port}/v1`,
          baseUrlEnv: "TOLLGATE_TEST_UNSET",
          timeouts: { firstByteMs: 5_000, firstTokenMs: 60_000 },
        })],
      },
    });
  } finally {
    await upstream.shutdown();
  }
});

/** An upstream that sends its headers, then nothing for `silentMs`, then a short answer. */
function silentUpstream(silentMs: number) {
  const enc = new TextEncoder();
  const head = { id: "chatcmpl-s", object: "chat.completion.chunk", created: 1, model: "m" };
  const data = (o: Obj) => enc.encode(`data: ${JSON.stringify({ ...head, ...o })}\n\n`);
  const seen = { calls: 0, cancelled: 0 };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, () => {
    seen.calls++;
    let timer: ReturnType<typeof setTimeout>;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        timer = setTimeout(() => {
          c.enqueue(data({ choices: [{ index: 0, delta: { role: "assistant", content: "hi" } }] }));
          c.enqueue(data({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
          c.enqueue(enc.encode("data: [DONE]\n\n"));
          c.close();
        }, silentMs);
      },
      cancel() {
        seen.cancelled++;
        clearTimeout(timer);
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return { server, seen };
}

Deno.test("chat (streaming): an upstream silent after its headers gets the status line at once, and a client that leaves cancels it", async () => {
  const upstream = silentUpstream(4000);
  try {
    await withGateway(async (g) => {
      const ac = new AbortController();
      const t0 = Date.now();
      const res = await postChat(g, {
        model: MODEL,
        stream: true,
        // Long enough to arrive apart from the headers, as real clients' bodies do.
        messages: [{ role: "user", content: "x".repeat(20_000) }],
      }, { signal: ac.signal });
      assert.equal(res.status, 200);
      assert.ok(Date.now() - t0 < 2500, `status line after ${Date.now() - t0} ms`);
      ac.abort();
      await res.body?.cancel().catch(() => {});
      await waitFor("the upstream call cancelled", () => upstream.seen.cancelled > 0 || undefined);
      assert.ok(Date.now() - t0 < 3500, "cancelled before the upstream spoke");
      // The settlement is recorded in the wallet's next batch, a moment after the cancel.
      const gen = await waitFor(
        "the generation recorded",
        async () => (await g.store.listGenerations(g.accountId, { limit: 1 }))[0],
      );
      assert.equal((await settledGeneration(g, g.accountId, gen.id)).status, "cancelled");
      assert.equal(upstream.seen.calls, 1, "no second provider was asked");
    }, {
      providers: {
        providers: [
          mockProvider("thinker", {
            baseUrl: `http://127.0.0.1:${upstream.server.addr.port}/v1`,
            baseUrlEnv: "TOLLGATE_TEST_UNSET",
          }),
          mockProvider("openai", { priority: 20 }),
        ],
      },
    });
  } finally {
    await upstream.server.shutdown();
  }
});

Deno.test("chat failover: requests the provider refuses (400) do not open its breaker", () =>
  withGateway(async (g) => {
    // More refused requests in a row than the breaker's threshold of failures.
    for (let i = 0; i < 8; i++) {
      const e = await sdkError(
        client(g).chat.completions.create({
          model: MODEL,
          messages: [{ role: "user", content: "a bad request [[mock:error=400]]" }],
        }),
      );
      assert.equal(e.status, 400);
    }
    const { id } = await complete(g, false);
    const gen = await settledGeneration(g, g.accountId, id);
    assert.equal(gen.provider, "openai", "still served by the first provider");
  }, {
    providers: {
      providers: [
        mockProvider("openai", { priority: 1 }),
        mockProvider("backup", { priority: 10 }),
      ],
    },
  }));

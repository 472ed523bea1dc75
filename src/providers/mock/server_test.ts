import assert from "node:assert/strict";
import { answerText, type MockServer, startMock } from "./server.ts";

interface Sse {
  event?: string;
  data: string;
}

/** Splits an SSE body into events (the mock always uses LF line ends). */
function sse(text: string): Sse[] {
  assert.ok(text.endsWith("\n\n"), "an SSE body ends with a blank line");
  return text.slice(0, -2).split("\n\n").map((block) => {
    const ev: Sse = { data: "" };
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) ev.event = line.slice(7);
      else if (line.startsWith("data: ")) ev.data = line.slice(6);
      else assert.fail(`unexpected SSE line ${JSON.stringify(line)}`);
    }
    return ev;
  });
}

// deno-lint-ignore no-explicit-any
type J = any;

async function withMock(
  fn: (m: MockServer) => Promise<void>,
  defaults?: Parameters<typeof startMock>[0],
): Promise<void> {
  const m = startMock(defaults);
  try {
    await fn(m);
    await m.idle();
  } finally {
    await m.close();
  }
}

function post(m: MockServer, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(m.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test", ...headers },
    body: JSON.stringify(body),
  });
}

const ANTHROPIC = { "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" };
const user = (content: string) => [{ role: "user", content }];

Deno.test("chat stream: role, one delta per token, finish, usage chunk, [DONE]", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/chat/completions", {
      model: "gpt-4o-mini",
      messages: user("Hello there, mock!"),
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
    const text = await res.text();
    assert.ok(text.endsWith("data: [DONE]\n\n"));
    const events = sse(text);
    assert.ok(events.every((e) => e.event === undefined));
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "", refusal: null });
    const deltas = chunks.filter((c: J) => c.choices[0]?.delta?.content).map((c: J) =>
      c.choices[0].delta.content
    );
    assert.equal(deltas.length, 16);
    assert.equal(deltas.join(""), answerText(16));
    const usage = chunks.at(-1);
    assert.deepEqual(usage.choices, []);
    assert.equal(chunks.at(-2).choices[0].finish_reason, "stop");
    assert.equal(usage.usage.prompt_tokens, Math.ceil("Hello there, mock!".length / 4));
    assert.equal(usage.usage.completion_tokens, 16);
    assert.equal(usage.usage.total_tokens, usage.usage.prompt_tokens + 16);
    assert.equal(usage.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(usage.usage.completion_tokens_details.reasoning_tokens, 0);
    for (const c of chunks) assert.equal(c.object, "chat.completion.chunk");
    const call = m.stats.calls[0];
    assert.equal(call.protocol, "chat");
    assert.equal(call.path, "/v1/chat/completions");
    assert.equal(call.outcome, "completed");
    assert.equal(call.outputTokensSent, 16);
    assert.equal(call.usageReported, true);
    assert.equal(call.headers.authorization, "Bearer sk-test");
    assert.equal((call.body as J).model, "gpt-4o-mini");
  });
});

Deno.test("chat stream without include_usage sends no usage chunk", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("hi [[mock:tokens=3]]"),
      stream: true,
    });
    const chunks = sse(await res.text()).slice(0, -1).map((e) => JSON.parse(e.data));
    assert.ok(chunks.every((c: J) => c.usage === null));
    assert.equal(m.stats.calls[0].usageReported, false);
    assert.equal(m.stats.calls[0].outputTokensSent, 3);
  });
});

Deno.test("chat non-streaming: message, usage, tokens marker, cache and reasoning markers", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/chat/completions", {
      model: "m",
      messages: [
        { role: "system", content: "be brief" },
        ...user("hi [[mock:tokens=5,cache_read=40,reasoning=7]]"),
      ],
    });
    const body = await res.json();
    assert.equal(body.object, "chat.completion");
    assert.equal(body.choices[0].message.content, answerText(5));
    assert.equal(body.choices[0].finish_reason, "stop");
    assert.equal(body.usage.completion_tokens, 12);
    assert.equal(body.usage.completion_tokens_details.reasoning_tokens, 7);
    assert.equal(body.usage.prompt_tokens_details.cached_tokens, 40);
    assert.equal(body.usage.prompt_tokens, m.stats.calls[0].inputTokens);
    assert.ok(body.usage.prompt_tokens > 40);
    assert.equal(m.stats.calls[0].outputTokensSent, 12);
  });
});

Deno.test("chat: max_tokens below the answer length truncates with finish length", async () => {
  await withMock(async (m) => {
    const body = await (await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("hi"),
      max_tokens: 4,
    })).json();
    assert.equal(body.choices[0].message.content, answerText(4));
    assert.equal(body.choices[0].finish_reason, "length");
  });
});

Deno.test("chat tool call: arguments streamed over at least three chunks; tools=2 in parallel", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("weather? [[mock:tool=get_weather]]"),
      stream: true,
    });
    const chunks = sse(await res.text()).slice(0, -1).map((e) => JSON.parse(e.data));
    const calls = chunks.flatMap((c: J) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.equal(calls[0].function.name, "get_weather");
    assert.match(calls[0].id, /^call_/);
    const pieces = calls.slice(1).map((c: J) => c.function.arguments);
    assert.ok(pieces.length >= 3);
    assert.deepEqual(JSON.parse(pieces.join("")), { q: "mock query 1" });
    assert.equal(chunks.at(-1).choices[0].finish_reason, "tool_calls");

    const whole = await (await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("x"),
      tools: [
        { type: "function", function: { name: "a", parameters: {} } },
        { type: "function", function: { name: "b", parameters: {} } },
      ],
    }, { "x-mock-tools": "2" })).json();
    const tc = whole.choices[0].message.tool_calls;
    assert.deepEqual(tc.map((t: J) => t.function.name), ["a", "b"]);
    assert.equal(whole.choices[0].message.content, null);
    assert.notEqual(tc[0].id, tc[1].id);
  });
});

Deno.test("messages stream: message_start, block, ping, deltas, message_delta, message_stop", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/messages", {
      model: "claude-haiku-4-5",
      max_tokens: 100,
      messages: user("Hi Claude [[mock:tokens=4,cache_read=10,cache_write=20]]"),
      stream: true,
    }, { ...ANTHROPIC, "anthropic-beta": "fine-grained-tool-streaming-2025-05-14" });
    const events = sse(await res.text());
    assert.deepEqual(events.map((e) => e.event), [
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const data = events.map((e) => JSON.parse(e.data));
    events.forEach((e, i) => assert.equal(data[i].type, e.event));
    const usage = data[0].message.usage;
    assert.equal(usage.cache_read_input_tokens, 10);
    assert.equal(usage.cache_creation_input_tokens, 20);
    assert.ok(usage.input_tokens > 0);
    assert.equal(data.slice(3, 7).map((d: J) => d.delta.text).join(""), answerText(4));
    assert.equal(data[8].delta.stop_reason, "end_turn");
    assert.equal(data[8].usage.output_tokens, 4);
    const call = m.stats.calls[0];
    assert.equal(call.protocol, "messages");
    assert.equal(call.inputTokens, usage.input_tokens + 30);
    assert.equal(call.headers["anthropic-version"], "2023-06-01");
    assert.equal(call.headers["anthropic-beta"], "fine-grained-tool-streaming-2025-05-14");
    assert.equal(call.usageReported, true);
  });
});

Deno.test("messages: thinking block with signature, then tool_use with input_json_delta", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/messages", {
      model: "claude",
      max_tokens: 2000,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: user("look it up [[mock:tool=lookup,reasoning=3]]"),
      stream: true,
    }, ANTHROPIC);
    const data = sse(await res.text()).map((e) => JSON.parse(e.data));
    const starts = data.filter((d: J) => d.type === "content_block_start").map((d: J) =>
      d.content_block.type
    );
    assert.deepEqual(starts, ["thinking", "tool_use"]);
    const deltas = data.filter((d: J) => d.type === "content_block_delta").map((d: J) => d.delta);
    assert.equal(deltas.filter((d: J) => d.type === "thinking_delta").length, 3);
    assert.equal(deltas.filter((d: J) => d.type === "signature_delta").length, 1);
    const json = deltas.filter((d: J) => d.type === "input_json_delta").map((d: J) =>
      d.partial_json
    );
    assert.ok(json.filter((s: string) => s !== "").length >= 3);
    assert.deepEqual(JSON.parse(json.join("")), { q: "mock query 1" });
    const end = data.find((d: J) => d.type === "message_delta");
    assert.equal(end.delta.stop_reason, "tool_use");
    assert.equal(end.usage.output_tokens, m.stats.calls[0].outputTokensSent);
  });
});

Deno.test("messages non-streaming; x-api-key required; bad-key is 401 in Anthropic's format", async () => {
  await withMock(async (m) => {
    const body = await (await post(m, "/v1/messages", {
      model: "claude",
      max_tokens: 100,
      system: "sys",
      messages: [...user("hi"), { role: "assistant", content: "Sure," }],
      thinking: { type: "adaptive" },
    }, ANTHROPIC)).json();
    assert.equal(body.type, "message");
    assert.deepEqual(body.content.map((c: J) => c.type), ["thinking", "text"]);
    assert.equal(body.content[1].text, answerText(16));
    assert.ok(body.content[0].signature.length > 10);
    assert.equal(body.usage.output_tokens, 16 + 4);

    const noKey = await fetch(m.url + "/v1/messages", {
      method: "POST",
      body: JSON.stringify({ model: "c", max_tokens: 1, messages: user("x") }),
    });
    assert.equal(noKey.status, 401);
    assert.equal((await noKey.json()).error.type, "authentication_error");
    const bad = await post(m, "/v1/messages", { model: "c", max_tokens: 1, messages: user("x") }, {
      "x-api-key": "bad-key",
    });
    assert.equal(bad.status, 401);
    const err = await bad.json();
    assert.equal(err.type, "error");
    assert.equal(err.error.type, "authentication_error");
    assert.equal(m.stats.calls[2].outcome, "error");
  });
});

Deno.test("responses stream: full event sequence with sequence numbers", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/responses", {
      model: "gpt-5",
      input: "Say hi [[mock:tokens=2]]",
      stream: true,
    });
    const events = sse(await res.text());
    assert.deepEqual(events.map((e) => e.event), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const data = events.map((e) => JSON.parse(e.data));
    data.forEach((d: J, i: number) => {
      assert.equal(d.type, events[i].event);
      assert.equal(d.sequence_number, i);
    });
    assert.equal(data[6].text, answerText(2));
    const done = data.at(-1).response;
    assert.equal(done.status, "completed");
    assert.equal(done.output[0].content[0].text, answerText(2));
    assert.equal(done.usage.output_tokens, 2);
    assert.equal(done.usage.input_tokens, m.stats.calls[0].inputTokens);
    assert.equal(m.stats.calls[0].usageReported, true);
  });
});

Deno.test("responses: reasoning summary deltas and a function call", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/responses", {
      model: "o3",
      input: [{ role: "user", content: [{ type: "input_text", text: "go [[mock:tool=search]]" }] }],
      reasoning: { effort: "low", summary: "auto" },
      stream: true,
    });
    const events = sse(await res.text());
    const types = events.map((e) => e.event);
    assert.ok(types.includes("response.reasoning_summary_text.delta"));
    const args = events.filter((e) => e.event === "response.function_call_arguments.delta")
      .map((e) => JSON.parse(e.data).delta);
    assert.ok(args.length >= 3);
    const done = JSON.parse(events.at(-1)!.data).response;
    assert.deepEqual(done.output.map((o: J) => o.type), ["reasoning", "function_call"]);
    assert.equal(done.output[1].name, "search");
    assert.equal(done.output[1].arguments, args.join(""));
    assert.equal(done.usage.output_tokens_details.reasoning_tokens, 4);

    const whole = await (await post(m, "/v1/responses", { model: "gpt", input: "hi" })).json();
    assert.equal(whole.object, "response");
    assert.equal(whole.output[0].content[0].text, answerText(16));
    assert.equal(whole.usage.total_tokens, whole.usage.input_tokens + 16);
  });
});

Deno.test("responses: a custom tool is called with text input, a namespace's member with its namespace (Codex's apply_patch, MCP tools)", async () => {
  await withMock(async (m) => {
    const tools = [
      { type: "custom", name: "apply_patch", description: "edit files", format: { type: "text" } },
      {
        type: "namespace",
        name: "mcp__srv",
        description: "an MCP server",
        tools: [{
          type: "function",
          name: "echo",
          parameters: { type: "object", properties: { text: { type: "string" } } },
        }],
      },
    ];
    const call = async (marker: string) => {
      const events = sse(
        await (await post(m, "/v1/responses", {
          model: "gpt-5",
          input: marker,
          tools,
          stream: true,
        }))
          .text(),
      );
      return { events, done: JSON.parse(events.at(-1)!.data).response.output.at(-1) };
    };

    const patch = await call("[[mock:tool=apply_patch]]");
    const deltas = patch.events.filter((e) => e.event === "response.custom_tool_call_input.delta")
      .map((e) => JSON.parse(e.data).delta);
    assert.ok(deltas.length >= 3);
    assert.ok(!patch.events.some((e) => e.event?.startsWith("response.function_call")));
    const added = JSON.parse(
      patch.events.find((e) => e.event === "response.output_item.added")!.data,
    ).item;
    assert.deepEqual([added.type, added.input], ["custom_tool_call", ""]);
    assert.equal(patch.done.type, "custom_tool_call");
    assert.equal(patch.done.name, "apply_patch");
    assert.equal(patch.done.input, deltas.join(""));
    assert.equal(typeof patch.done.call_id, "string");

    const echo = await call("[[mock:tool=echo]]");
    assert.equal(echo.done.type, "function_call");
    assert.deepEqual([echo.done.namespace, echo.done.name], ["mcp__srv", "echo"]);
    assert.equal(typeof JSON.parse(echo.done.arguments).text, "string");
  });
});

Deno.test("args marker: every wire format calls the tool with the given arguments; a custom tool gets the text", async () => {
  const b64 = (s: string) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
  const given = { subagent_type: "general-purpose", description: "look", prompt: "say «hi»" };
  const marker = `[[mock:tool=Agent,args=${b64(JSON.stringify(given))}]]`;
  const schema = { type: "object", properties: { subagent_type: { type: "string" } } };
  await withMock(async (m) => {
    const messages = sse(
      await (await post(m, "/v1/messages", {
        model: "claude-sonnet-4-5",
        max_tokens: 100,
        messages: user(marker),
        tools: [{ name: "Agent", input_schema: schema }],
        stream: true,
      }, ANTHROPIC)).text(),
    ).map((e) => JSON.parse(e.data));
    const partial = messages.filter((d: J) => d.delta?.type === "input_json_delta")
      .map((d: J) => d.delta.partial_json).join("");
    assert.deepEqual(JSON.parse(partial), given);

    const chat = await (await post(m, "/v1/chat/completions", {
      model: "gpt-4o-mini",
      messages: user(marker),
      tools: [{ type: "function", function: { name: "Agent", parameters: schema } }],
    })).json();
    const call = chat.choices[0].message.tool_calls[0].function;
    assert.deepEqual([call.name, JSON.parse(call.arguments)], ["Agent", given]);

    // Not a JSON object: a function's arguments are made up from its parameters as without it.
    const odd = await (await post(m, "/v1/responses", {
      model: "gpt-5",
      input: `[[mock:tool=Agent,args=${b64("[1]")}]]`,
      tools: [{ type: "function", name: "Agent", parameters: schema }],
    })).json();
    assert.equal(typeof JSON.parse(odd.output.at(-1).arguments).subagent_type, "string");

    const patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n";
    const custom = await (await post(m, "/v1/responses", {
      model: "gpt-5",
      input: `[[mock:tool=apply_patch,args=${b64(patch)}]]`,
      tools: [{ type: "custom", name: "apply_patch", format: { type: "text" } }],
    })).json();
    assert.deepEqual([custom.output.at(-1).type, custom.output.at(-1).input], [
      "custom_tool_call",
      patch,
    ]);
  });
});

Deno.test("responses: a compaction_trigger last in the input is answered with one compaction item alone", async () => {
  await withMock(async (m) => {
    const input = [
      { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
      { type: "compaction_trigger" },
    ];
    const events = sse(
      await (await post(m, "/v1/responses", { model: "gpt-5.5", input, stream: true })).text(),
    );
    assert.deepEqual(events.map((e) => e.event), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.output_item.done",
      "response.completed",
    ]);
    const done = JSON.parse(events[3].data).item;
    assert.equal(done.type, "compaction");
    assert.match(done.encrypted_content, /^gAAAAA/);
    assert.deepEqual(JSON.parse(events[4].data).response.output, [done]);

    const whole = await (await post(m, "/v1/responses", { model: "gpt-5.5", input })).json();
    assert.deepEqual(whole.output.map((o: J) => o.type), ["compaction"]);
    // Anywhere else in the input it is history, not a request to compact.
    const later = await (await post(m, "/v1/responses", {
      model: "gpt-5.5",
      input: [...input, { type: "message", role: "user", content: "go on" }],
    })).json();
    assert.deepEqual(later.output.map((o: J) => o.type), ["message"]);
  });
});

Deno.test("embeddings: deterministic unit vectors, float and base64 agree, usage=none", async () => {
  await withMock(async (m) => {
    const f = await (await post(m, "/v1/embeddings", { model: "e", input: ["a", "bb"] })).json();
    assert.equal(f.object, "list");
    assert.equal(f.data.length, 2);
    assert.equal(f.data[0].embedding.length, 768);
    const norm = Math.hypot(...f.data[0].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-5);
    assert.deepEqual(f.usage, { prompt_tokens: 2, total_tokens: 2 });

    const b = await (await post(m, "/v1/embeddings", {
      model: "e",
      input: "a",
      dimensions: 8,
      encoding_format: "base64",
    })).json();
    const bytes = Uint8Array.from(atob(b.data[0].embedding), (c) => c.charCodeAt(0));
    const fromB64 = Array.from(new Float32Array(bytes.buffer));
    const g = await (await post(m, "/v1/embeddings", { model: "e", input: "a", dimensions: 8 }))
      .json();
    assert.deepEqual(g.data[0].embedding.map(Math.fround), fromB64);

    const none =
      await (await post(m, "/v1/embeddings", { model: "e", input: "x [[mock:usage=none]]" }))
        .json();
    assert.equal(none.usage, undefined);
    const noneH = await (await post(m, "/v1/embeddings", { model: "e", input: "x" }, {
      "x-mock-usage": "none",
    }))
      .json();
    assert.equal(noneH.usage, undefined);
    assert.equal(m.stats.calls.at(-1)!.usageReported, false);
  });
});

function assertPng(b64: string): void {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  assert.deepEqual([...bytes.slice(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.equal(new TextDecoder().decode(bytes.slice(12, 16)), "IHDR");
  assert.equal(new TextDecoder().decode(bytes.slice(-8, -4)), "IEND");
}

Deno.test("images: generations and edits (JSON and multipart) return n PNGs with usage", async () => {
  await withMock(async (m) => {
    const gen = await (await post(m, "/v1/images/generations", {
      model: "gpt-image-1",
      prompt: "a red fox",
      n: 2,
    })).json();
    assert.equal(gen.data.length, 2);
    gen.data.forEach((d: J) => assertPng(d.b64_json));
    assert.equal(gen.usage.total_tokens, gen.usage.input_tokens + gen.usage.output_tokens);

    const edit = await (await post(m, "/v1/images/edits", {
      model: "gpt-image-1",
      prompt: "add a hat",
      images: [{ image_url: "data:image/png;base64," + gen.data[0].b64_json }],
    })).json();
    assert.equal(edit.data.length, 1);
    assertPng(edit.data[0].b64_json);
    assert.ok(edit.usage.input_tokens_details.image_tokens > 0);

    const form = new FormData();
    form.append("model", "gpt-image-1");
    form.append("prompt", "add a hat");
    form.append("image[]", new Blob([new Uint8Array([1, 2, 3])], { type: "image/png" }), "a.png");
    const multi = await fetch(m.url + "/v1/images/edits", {
      method: "POST",
      headers: { authorization: "Bearer k" },
      body: form,
    });
    assert.equal(multi.status, 200);
    assertPng((await multi.json()).data[0].b64_json);
    const body = m.stats.calls.at(-1)!.body as J;
    assert.equal(body.prompt, "add a hat");
    assert.deepEqual(body.image, [{ filename: "a.png", type: "image/png", size: 3 }]);
  });
});

Deno.test("error=STATUS answers the vendor's error body before any byte", async () => {
  await withMock(async (m) => {
    const r = await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("[[mock:error=429]]"),
      stream: true,
    });
    assert.equal(r.status, 429);
    const e = await r.json();
    assert.equal(e.error.code, "rate_limit_exceeded");
    assert.ok("param" in e.error && "type" in e.error);

    const a = await post(m, "/v1/messages", { model: "c", max_tokens: 1, messages: user("x") }, {
      ...ANTHROPIC,
      "x-mock-error": "529",
    });
    assert.equal(a.status, 529);
    assert.deepEqual((await a.json()).error, { type: "overloaded_error", message: "Overloaded" });

    const s = await post(m, "/v1/responses", { model: "m", input: "[[mock:error=503]]" });
    assert.equal(s.status, 503);
    assert.equal((await s.json()).error.type, "server_error");
    const bad = await post(m, "/v1/embeddings", { input: "x" }, {
      authorization: "Bearer bad-key",
    });
    assert.equal(bad.status, 401);
    assert.equal((await bad.json()).error.code, "invalid_api_key");
    assert.ok(m.stats.calls.every((c) => c.outcome === "error" && c.outputTokensSent === 0));
  });
});

Deno.test("responses: finish=length ends with response.incomplete", async () => {
  await withMock(async (m) => {
    const events = sse(
      await (await post(m, "/v1/responses", {
        model: "m",
        input: "[[mock:tokens=2,finish=length]]",
        stream: true,
      })).text(),
    );
    assert.equal(events.at(-1)!.event, "response.incomplete");
    const r = JSON.parse(events.at(-1)!.data).response;
    assert.equal(r.status, "incomplete");
    assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
  });
});

Deno.test("stats keep at most callsMax calls, dropping the oldest", async () => {
  await withMock(async (m) => {
    for (let i = 0; i < 5; i++) {
      await (await post(m, "/v1/embeddings", { model: "e", input: String(i), dimensions: 2 })).body
        ?.cancel();
    }
    assert.equal(m.stats.total, 5);
    assert.ok(m.stats.calls.length <= 4);
    assert.deepEqual((m.stats.calls.at(-1)!.body as J).input, "4");
  }, { callsMax: 4 });
});

Deno.test("cut=K: K content events, then the body read rejects", async () => {
  await withMock(async (m) => {
    for (
      const [path, body, headers] of [
        [
          "/v1/chat/completions",
          { model: "m", messages: user("[[mock:cut=3]]"), stream: true },
          {},
        ],
        ["/v1/messages", {
          model: "c",
          max_tokens: 9,
          messages: user("[[mock:cut=3]]"),
          stream: true,
        }, ANTHROPIC],
        ["/v1/responses", { model: "m", input: "[[mock:cut=3]]", stream: true }, {}],
      ] as const
    ) {
      const res = await post(m, path, body, headers);
      assert.equal(res.status, 200);
      await assert.rejects(res.text());
    }
    await m.idle();
    for (const c of m.stats.calls) {
      assert.equal(c.outcome, "cut");
      assert.equal(c.outputTokensSent, 3);
      assert.equal(c.usageReported, false);
    }
  });
});

Deno.test("cut on a non-streaming request: status line, then a network error", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/chat/completions", { model: "m", messages: user("x") }, {
      "x-mock-cut": "0",
    });
    await assert.rejects(res.json());
    await m.idle();
    assert.equal(m.stats.calls[0].outcome, "cut");
  });
});

Deno.test("fail=K: K content events, then the vendor's in-stream error", async () => {
  await withMock(async (m) => {
    const chat = await (await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("[[mock:fail=2]]"),
      stream: true,
    })).text();
    const chunks = sse(chat).map((e) => JSON.parse(e.data));
    assert.equal(chunks.filter((c: J) => c.choices?.[0]?.delta?.content).length, 2);
    assert.equal(chunks.at(-1).error.type, "server_error");
    assert.ok(!chat.includes("[DONE]"));

    const msg = sse(
      await (await post(m, "/v1/messages", {
        model: "c",
        max_tokens: 9,
        messages: user("[[mock:fail=2]]"),
        stream: true,
      }, ANTHROPIC)).text(),
    );
    assert.equal(msg.at(-1)!.event, "error");
    assert.equal(JSON.parse(msg.at(-1)!.data).error.type, "api_error");
    assert.ok(!msg.some((e) => e.event === "message_stop"));

    const resp = sse(
      await (await post(m, "/v1/responses", { model: "m", input: "[[mock:fail=2]]", stream: true }))
        .text(),
    );
    assert.equal(resp.at(-1)!.event, "response.failed");
    const seqs = resp.map((e) => JSON.parse(e.data).sequence_number);
    assert.deepEqual(seqs, seqs.map((_, i) => i));

    for (const c of m.stats.calls) {
      assert.equal(c.outcome, "error");
      assert.equal(c.outputTokensSent, 2);
    }
  });
});

Deno.test("usage=none and finish marker", async () => {
  await withMock(async (m) => {
    const chat = sse(
      await (await post(m, "/v1/chat/completions", {
        model: "m",
        messages: user("[[mock:usage=none,finish=content_filter,tokens=2]]"),
        stream: true,
        stream_options: { include_usage: true },
      })).text(),
    ).slice(0, -1).map((e) => JSON.parse(e.data));
    assert.ok(chunksHaveNoUsage(chat));
    assert.equal(chat.at(-1).choices[0].finish_reason, "content_filter");

    const msg = sse(
      await (await post(m, "/v1/messages", {
        model: "c",
        max_tokens: 99,
        messages: user("[[mock:usage=none,finish=length]]"),
        stream: true,
      }, ANTHROPIC)).text(),
    ).map((e) => JSON.parse(e.data));
    assert.equal(msg[0].message.usage, undefined);
    const delta = msg.find((d: J) => d.type === "message_delta");
    assert.equal(delta.usage, undefined);
    assert.equal(delta.delta.stop_reason, "max_tokens");

    const resp =
      await (await post(m, "/v1/responses", { model: "m", input: "[[mock:usage=none]]" })).json();
    assert.equal(resp.usage, null);
    assert.ok(m.stats.calls.every((c) => !c.usageReported));
  });
});

function chunksHaveNoUsage(chunks: J[]): boolean {
  return chunks.every((c) => c.usage === null && c.choices.length === 1);
}

Deno.test("client cancel mid-stream: outcome cancelled, fewer tokens sent than the answer", async () => {
  await withMock(async (m) => {
    const res = await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("[[mock:tokens=50,every=20]]"),
      stream: true,
    });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let seen = "";
    while ((seen.match(/"content":"[^"]/g) ?? []).length < 3) {
      const { value } = await reader.read();
      seen += dec.decode(value);
    }
    await reader.cancel();
    await m.idle();
    const call = m.stats.calls[0];
    assert.equal(call.outcome, "cancelled");
    assert.ok(
      call.outputTokensSent >= 3 && call.outputTokensSent < 50,
      `sent ${call.outputTokensSent}`,
    );
    assert.equal(call.usageReported, false);
  });
});

Deno.test("stall=K holds the stream open until the client goes away", async () => {
  await withMock(async (m) => {
    const ac = new AbortController();
    const res = await fetch(m.url + "/v1/messages", {
      method: "POST",
      headers: ANTHROPIC,
      body: JSON.stringify({
        model: "c",
        max_tokens: 9,
        messages: user("[[mock:stall=2]]"),
        stream: true,
      }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let seen = "";
    while ((seen.match(/text_delta/g) ?? []).length < 2) {
      seen += dec.decode((await reader.read()).value);
    }
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(m.stats.calls[0].outcome, "running");
    ac.abort();
    await assert.rejects(reader.read());
    await m.idle();
    assert.equal(m.stats.calls[0].outcome, "cancelled");
    assert.equal(m.stats.calls[0].outputTokensSent, 2);
  });
});

Deno.test("delays: first-token and per-token waits; a non-streaming wait is cancellable", async () => {
  await withMock(async (m) => {
    const t0 = performance.now();
    await (await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("x [[mock:tokens=3]]"),
      stream: true,
    })).text();
    assert.ok(performance.now() - t0 >= 60 + 2 * 20 - 5);

    const ac = new AbortController();
    const p = fetch(m.url + "/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: user("[[mock:first=10000]]") }),
      signal: ac.signal,
    });
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    await assert.rejects(p);
    await m.idle();
    assert.equal(m.stats.calls[1].outcome, "cancelled");
    assert.equal(m.stats.calls[1].outputTokensSent, 0);
  }, { defaults: { firstTokenMs: 60, tokenMs: 20 } });
});

Deno.test("same request, same bytes; echo returns the received body", async () => {
  await withMock(async (m) => {
    const req = { model: "m", messages: user("determinism"), stream: true };
    const a = await (await post(m, "/v1/chat/completions", req)).text();
    const b = await (await post(m, "/v1/chat/completions", req)).text();
    assert.equal(a, b);

    const sent = { model: "m", messages: user("show me [[mock:echo]]"), temperature: 0.5 };
    const echo = await (await post(m, "/v1/chat/completions", sent)).json();
    assert.deepEqual(JSON.parse(echo.choices[0].message.content), sent);
  });
});

Deno.test("stats over HTTP, reset, unknown path", async () => {
  await withMock(async (m) => {
    await (await post(m, "/v1/chat/completions", { model: "m", messages: user("hi") })).body
      ?.cancel();
    const nf = await post(m, "/v1/nope", {});
    assert.equal(nf.status, 404);
    assert.ok((await nf.json()).error.message.includes("/v1/nope"));
    await m.idle();
    const stats = await (await fetch(m.url + "/__mock/stats")).json();
    assert.equal(stats.calls.length, 2);
    assert.equal(stats.total, 2);
    assert.equal(stats.calls[0].protocol, "chat");
    assert.equal(stats.calls[1].protocol, "unknown");
    const r = await fetch(m.url + "/__mock/reset", { method: "POST" });
    assert.equal(r.status, 200);
    await r.body?.cancel();
    assert.equal(m.stats.calls.length, 0);
    assert.equal((await (await fetch(m.url + "/__mock/stats")).json()).calls.length, 0);
  });
});

Deno.test("steps=N: the tool is called until the request holds N tool results, then the answer is text", async () => {
  await withMock(async (m) => {
    const marker = "Do it [[mock:tool=run,steps=2,tokens=2]]";
    const tools = [{
      type: "function",
      function: {
        name: "run",
        parameters: { type: "object", properties: { cmd: { type: "string" } } },
      },
    }];
    const turn = async (messages: unknown[]) =>
      (await (await post(m, "/v1/chat/completions", { model: "m", messages, tools })).json())
        .choices[0];
    const result = (id: string) => ({ role: "tool", tool_call_id: id, content: "ok" });
    const call = (id: string) => ({
      role: "assistant",
      tool_calls: [{ id, type: "function", function: { name: "run", arguments: "{}" } }],
    });
    const first = await turn(user(marker));
    assert.equal(first.finish_reason, "tool_calls");
    assert.deepEqual(JSON.parse(first.message.tool_calls[0].function.arguments), {
      cmd: "mock cmd 1",
    });
    const second = await turn([...user(marker), call("a"), result("a")]);
    assert.equal(second.finish_reason, "tool_calls");
    const third = await turn([...user(marker), call("a"), result("a"), call("b"), result("b")]);
    assert.equal(third.finish_reason, "stop");
    assert.equal(third.message.content, "tok0 tok1");

    // Anthropic's tool_result blocks count the same way.
    const res = await post(m, "/v1/messages", {
      model: "m",
      max_tokens: 64,
      tools: [{ name: "run", input_schema: { type: "object" } }],
      messages: [
        { role: "user", content: "Go [[mock:tool=run,steps=1,tokens=1]]" },
        { role: "assistant", content: [{ type: "tool_use", id: "t", name: "run", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "ok" }] },
      ],
    }, ANTHROPIC);
    assert.equal((await res.json()).stop_reason, "end_turn");
  });
});

Deno.test("a tool choice of none is obeyed: text, not a call, whatever the marker says", async () => {
  await withMock(async (m) => {
    const tool = { type: "function", function: { name: "ls", parameters: { type: "object" } } };
    const chat: J = await (await post(m, "/v1/chat/completions", {
      model: "m",
      messages: user("sum up [[mock:tool=ls,tokens=2]]"),
      tools: [tool],
      tool_choice: "none",
    })).json();
    assert.equal(chat.choices[0].message.tool_calls, undefined);
    assert.equal(chat.choices[0].finish_reason, "stop");

    const messages: J = await (await post(m, "/v1/messages", {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: user("sum up [[mock:tool=ls,tokens=2]]"),
      tools: [{ name: "ls", input_schema: { type: "object" } }],
      tool_choice: { type: "none" },
    }, ANTHROPIC)).json();
    assert.deepEqual(messages.content.map((b: J) => b.type), ["text"]);
    assert.equal(messages.stop_reason, "end_turn");

    const responses: J = await (await post(m, "/v1/responses", {
      model: "gpt-5",
      input: "sum up [[mock:tool=ls,tokens=2]]",
      tools: [{ type: "function", name: "ls", parameters: { type: "object" } }],
      tool_choice: "none",
    })).json();
    assert.deepEqual(responses.output.map((i: J) => i.type), ["message"]);
  });
});

Deno.test("messages: a choice forcing the web_search server tool runs a search, not a call the client would have to run (Claude Code's WebSearch)", async () => {
  await withMock(async (m) => {
    const search = { type: "web_search_20250305", name: "web_search", max_uses: 8 };
    const ask = async (tools: unknown[], toolChoice: unknown) =>
      (await (await post(m, "/v1/messages", {
        model: "claude-sonnet-4-5",
        max_tokens: 100,
        messages: user("Perform a web search for the query: news"),
        tools,
        tool_choice: toolChoice,
      }, ANTHROPIC)).json()) as J;
    const forced = await ask([search], { type: "tool", name: "web_search" });
    assert.deepEqual(forced.content.map((b: J) => b.type), [
      "server_tool_use",
      "web_search_tool_result",
      "text",
    ]);
    assert.equal(forced.stop_reason, "end_turn");
    assert.equal(forced.usage.server_tool_use.web_search_requests, 1);
    // `any` demands a client tool's call: the first declared that the client runs.
    const lookup = { name: "lookup", input_schema: { type: "object" } };
    const any = await ask([search, lookup], { type: "any" });
    assert.deepEqual(any.content.map((b: J) => [b.type, b.name]), [["tool_use", "lookup"]]);
  });
});

Deno.test("plan cache: long streams are kept within a byte bound, not only a count", async () => {
  await withMock(async (m) => {
    for (let i = 0; i < 20; i++) {
      const res = await post(m, "/v1/chat/completions", {
        model: "gpt-4o-mini",
        stream: true,
        messages: [{ role: "user", content: `long ${i} [[mock:tokens=20000]]` }],
      });
      await res.arrayBuffer();
    }
    const mib = m.stats.cachedPlanBytes / 2 ** 20;
    assert.ok(mib > 0, "plans are cached");
    assert.ok(mib <= 64, `${mib.toFixed(1)} MiB of plans kept`);
  });
});

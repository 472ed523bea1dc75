/**
 * Codex's server-side compaction: its built-in OpenAI provider (and a custom provider that
 * declares `remote_compaction = "v2"`) compacts a long conversation by sending POST
 * /v1/responses with a `compaction_trigger` item last in the input, and takes nothing but one
 * `compaction` output item back. Only OpenAI's models produce one; on any other model the
 * call is refused before an upstream is paid for an answer Codex throws away.
 */
import assert from "node:assert/strict";
import { mockProvider } from "../helpers/chat.ts";
import { withGateway } from "../helpers/gateway.ts";

type Obj = Record<string, unknown>;

/** The request Codex 0.171 sent through its built-in provider to compact (tools cut to one). */
function compactionRequest(model: string): Obj {
  return {
    model,
    stream: true,
    input: [
      {
        type: "message",
        role: "developer",
        content: [{ type: "input_text", text: "You are a coding agent running in the Codex CLI." }],
      },
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "first turn [[mock:tokens=3]]" }],
      },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "tok0 tok1 tok2" }],
      },
      { type: "compaction_trigger" },
    ],
    tools: [{
      type: "function",
      name: "exec_command",
      description: "Runs a command in a PTY.",
      strict: false,
      parameters: {
        type: "object",
        properties: { cmd: { type: "string" } },
        required: ["cmd"],
        additionalProperties: false,
      },
    }],
    tool_choice: "auto",
    parallel_tool_calls: true,
    reasoning: { effort: "medium" },
    store: false,
    include: ["reasoning.encrypted_content"],
    prompt_cache_key: "01a22179-ae04-7452-835a-4d5149d4d8a6",
    text: { verbosity: "low" },
    client_metadata: { thread_id: "01a22179-ae04-7452-835a-4d5149d4d8a6" },
  };
}

async function post(url: string, key: string, body: Obj): Promise<Response> {
  return await fetch(`${url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

Deno.test("responses: Codex's compaction_trigger on another vendor's model is a 400 that says so, no upstream call", async () => {
  for (const opts of [{}, { withoutKeys: ["OPENROUTER_API_KEY"] }]) {
    await withGateway(async (g) => {
      for (const model of ["anthropic/claude-sonnet-4.5", "moonshotai/kimi-k2.5"]) {
        if (opts.withoutKeys && !model.startsWith("anthropic/")) continue;
        const calls = g.mock.stats.calls.length;
        const res = await post(g.url, g.key, compactionRequest(model));
        assert.equal(res.status, 400, model);
        const err = (await res.json()).error as Obj;
        assert.match(String(err.message), /compaction_trigger/);
        assert.match(String(err.message), /OpenAI's models/);
        await g.mock.idle();
        assert.equal(g.mock.stats.calls.length, calls, `${model}: no upstream was called`);
      }
    }, opts);
  }
});

Deno.test("responses: Codex's compaction_trigger on an OpenAI model reaches OpenAI's responses API as sent", async () => {
  await withGateway(async (g) => {
    const res = await post(g.url, g.key, compactionRequest("openai/gpt-5.5"));
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await g.mock.idle();
    const call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "responses");
    const input = (call.body as Obj).input as Obj[];
    assert.deepEqual(input.at(-1), { type: "compaction_trigger" });
  });
});

Deno.test("responses: Codex's compaction_trigger on an openai/ slug that OpenRouter would serve is a 400, no upstream call", async () => {
  // OpenRouter answers the trigger in text (it runs no server-side compaction; gpt-oss is not
  // even OpenAI's to run): only OpenAI's own responses API makes the compaction item.
  const cases: [string, { withoutKeys?: string[] }][] = [
    ["openai/gpt-oss-120b", {}],
    ["openai/gpt-5.5", { withoutKeys: ["OPENAI_API_KEY"] }],
  ];
  for (const [model, opts] of cases) {
    await withGateway(async (g) => {
      const res = await post(g.url, g.key, compactionRequest(model));
      assert.equal(res.status, 400, model);
      const err = (await res.json()).error as Obj;
      assert.match(String(err.message), /compaction_trigger/, model);
      await g.mock.idle();
      assert.equal(g.mock.stats.calls.length, 0, `${model}: no upstream was called`);
    }, opts);
  }
});

Deno.test("responses: Codex's compaction_trigger does not fail over from OpenAI to OpenRouter", async () => {
  await withGateway(async (g) => {
    const res = await post(g.url, g.key, compactionRequest("openai/gpt-5.5"));
    assert.equal(res.status, 502); // the upstream's 503, as the responses endpoint gives it
    await res.body?.cancel();
    await g.mock.idle();
    assert.equal(g.mock.stats.calls.length, 1, "OpenAI alone was called");
    assert.equal(g.mock.stats.calls[0].headers["x-mock-error"], "503");
  }, {
    providers: {
      providers: [
        mockProvider("openai", {
          protocols: ["openai-responses"],
          headers: { "x-mock-error": "503" },
        }),
        mockProvider("openrouter", {
          protocols: ["openai-chat", "openai-responses"],
          priority: 50,
          serves: ["*"],
          keyEnv: "OPENROUTER_API_KEY",
          baseUrlEnv: "OPENROUTER_BASE_URL",
          quirks: { openrouterUsage: true },
        }),
      ],
    },
  });
});

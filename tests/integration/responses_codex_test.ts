/**
 * The Codex CLI through POST /v1/responses on upstreams that do not speak the responses
 * protocol (openai-chat, anthropic-messages): the recorded Codex 0.169 requests
 * (/work/shared/fixtures/clients/codex) go through a real gateway to the mock, transcoded.
 * Codex's custom `apply_patch`, its client-run `tool_search` and `namespace` tools become
 * functions upstream and come back as the items Codex expects; the hosted `web_search` still
 * needs a responses upstream (400 naming it).
 */
import assert from "node:assert/strict";
import { startGateway, type TestGateway, withGateway } from "../helpers/gateway.ts";
import { ALL_VIA_CHAT } from "../helpers/providers.ts";
import { Catalogue } from "../../src/catalogue/catalogue.ts";
import { parseSse as parseSseText } from "../helpers/sse.ts";

type Obj = Record<string, unknown>;
type Upstream = "chat" | "anthropic";

const CODEX = new URL("../../../shared/fixtures/clients/codex/", import.meta.url);
const hasCodex = (() => {
  try {
    return Deno.statSync(new URL("responses-turn1.request.json", CODEX)).isFile;
  } catch {
    return false;
  }
})();

/** A recorded Codex request body (a fresh copy). */
function codex(name: string): Obj {
  return JSON.parse(Deno.readTextFileSync(new URL(`${name}.request.json`, CODEX))).body;
}

/**
 * Per upstream: the slug and the gateway options. anthropic/* goes to the anthropic provider
 * (anthropic-messages) once OpenRouter, which serves every slug, has no key; with every slug
 * served over openai-chat, a DeepSeek slug is what Codex users would pick.
 */
const SETUP: Record<Upstream, { model: string; opts: Parameters<typeof startGateway>[0] }> = {
  chat: { model: "deepseek/deepseek-v3.2", opts: { providers: ALL_VIA_CHAT } },
  anthropic: {
    model: "anthropic/claude-sonnet-4.5",
    opts: { withoutKeys: ["OPENROUTER_API_KEY"] },
  },
};
const UPSTREAMS: Upstream[] = ["chat", "anthropic"];

/** The mock's route for each upstream kind (MockCall.protocol). */
const MOCK_PROTOCOL: Record<Upstream, string> = { chat: "chat", anthropic: "messages" };

/** A namespace tool as Codex's multi-agent feature sends it. */
const COLLABORATION = {
  type: "namespace",
  name: "collaboration",
  description: "Tools for spawning and managing sub-agents.",
  tools: [{
    type: "function",
    name: "spawn_agent",
    description: "Spawn a sub-agent for a task.",
    strict: false,
    parameters: {
      type: "object",
      properties: { task_name: { type: "string" } },
      required: ["task_name"],
      additionalProperties: false,
    },
  }],
};

/**
 * A Codex request for `model`: web_search removed (only a responses upstream serves it), the
 * collaboration namespace added, and `marker` appended to the last user message.
 */
function codexBody(name: string, model: string, marker = ""): Obj {
  const body = codex(name);
  body.model = model;
  body.tools = [
    ...(body.tools as Obj[]).filter((t) => t.type !== "web_search"),
    COLLABORATION,
  ];
  if (marker !== "") {
    const input = body.input as Obj[];
    const last = input.findLast((i) => i.role === "user")!;
    const content = last.content as Obj[];
    content.push({ type: "input_text", text: marker });
  }
  return body;
}

/** `body` with its hosted web search given live web access (Codex's `web_search = "live"`). */
function live(body: Obj): Obj {
  body.tools = (body.tools as Obj[]).map((t) =>
    t.type === "web_search" ? { ...t, external_web_access: true } : t
  );
  return body;
}

function withUpstream(u: Upstream, fn: (g: TestGateway) => Promise<void>) {
  return withGateway(fn, SETUP[u].opts);
}

function post(g: TestGateway, body: unknown) {
  return fetch(`${g.baseURL}/responses`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${g.key}`,
      "content-type": "application/json",
      accept: "text/event-stream",
      originator: "codex_exec",
    },
    body: JSON.stringify(body),
  });
}

interface Sse {
  event?: string;
  data: Obj;
}

function parseSse(text: string): Sse[] {
  return parseSseText(text).map(({ event, data }) => ({ event, data: JSON.parse(data) }));
}

/**
 * A 200 event stream in a sensible responses order: created, in_progress, every item added
 * then done with nothing of another item in between, sequence numbers 0, 1, 2…, and
 * response.completed last, whose output is the items as they were done. Returns that output.
 */
async function completedStream(res: Response): Promise<{ output: Obj[]; response: Obj }> {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const events = parseSse(text);
  for (const [i, e] of events.entries()) {
    assert.equal(e.data.type, e.event, "data.type matches the event name");
    assert.equal(e.data.sequence_number, i, "sequence numbers count from 0");
  }
  const names = events.map((e) => e.event!);
  assert.deepEqual(names.slice(0, 2), ["response.created", "response.in_progress"]);
  assert.equal(names.at(-1), "response.completed", names.join("\n"));
  assert.ok(!names.includes("error") && !names.includes("response.failed"), names.join("\n"));
  const done: Obj[] = [];
  let open: number | undefined;
  for (const e of events.slice(2, -1)) {
    const index = e.data.output_index as number;
    if (e.event === "response.output_item.added") {
      assert.equal(open, undefined, `item ${open} still open at ${index}`);
      assert.equal(index, done.length);
      open = index;
    } else {
      assert.equal(index, open, `${e.event} outside its item`);
      if (e.event === "response.output_item.done") {
        done.push(e.data.item as Obj);
        open = undefined;
      }
    }
  }
  assert.equal(open, undefined);
  const response = events.at(-1)!.data.response as Obj;
  assert.equal(response.status, "completed");
  assert.deepEqual(response.output, done);
  return { output: done, response };
}

/** The function names the upstream was offered. */
function upstreamToolNames(u: Upstream, body: Obj): string[] {
  const tools = (body.tools ?? []) as Obj[];
  return tools.map((t) => u === "chat" ? (t.function as Obj).name as string : t.name as string);
}

for (const u of UPSTREAMS) {
  const { model } = SETUP[u];

  Deno.test({
    name: `codex via ${u}: the recorded turns stream a completed response`,
    ignore: !hasCodex,
    fn: () =>
      withUpstream(u, async (g) => {
        for (const turn of ["responses-turn1", "responses-turn2-function-call-output"]) {
          const { output, response } = await completedStream(
            await post(g, codexBody(turn, model, "[[mock:tokens=3]]")),
          );
          assert.equal(response.model, model);
          const message = output.find((i) => i.type === "message");
          assert.ok(message, JSON.stringify(output));
          assert.equal(response.output_text, "tok0 tok1 tok2");
        }
        await g.mock.idle();
        const calls = g.mock.stats.calls;
        assert.equal(calls.length, 2);
        for (const call of calls) {
          assert.equal(call.protocol, MOCK_PROTOCOL[u]);
          const names = upstreamToolNames(u, call.body as Obj);
          for (const n of names) assert.match(n, /^[a-zA-Z0-9_-]{1,64}$/);
          assert.ok(names.includes("exec_command"), names.join());
          assert.ok(names.includes("apply_patch"), "the custom tool is a function");
          assert.ok(names.includes("tool_search"), "the client-run tool search is a function");
          assert.ok(names.includes("collaboration__spawn_agent"), "namespace members flattened");
          assert.ok(!names.includes("web_search"));
          if (u === "anthropic") {
            // Codex names no max_output_tokens: the model's own cap, not a gateway default.
            const catalogue = await Catalogue.load();
            const cap = catalogue.maxOutputTokens(catalogue.resolve(model)!);
            assert.ok(cap > 4096);
            assert.equal((call.body as Obj).max_tokens, cap);
          }
        }
        // Turn 2's function_call and its output reach the upstream as a call and its result.
        const sent = JSON.stringify(calls[1].body);
        assert.ok(sent.includes("call_fake9gwoyjcv37"), "the call id reaches upstream");
        assert.ok(sent.includes("tool-ran-ok"), "the function output reaches upstream");
      }),
  });

  Deno.test({
    name: `codex via ${u}: a call of apply_patch comes back as a custom_tool_call`,
    ignore: !hasCodex,
    fn: () =>
      withUpstream(u, async (g) => {
        const body = codexBody("responses-turn1", model, "[[mock:tool=apply_patch]]");
        const res = await post(g, body);
        const text = await res.clone().text();
        const { output } = await completedStream(res);
        const calls = output.filter((i) => i.type !== "message" && i.type !== "reasoning");
        assert.equal(calls.length, 1, JSON.stringify(output));
        const call = calls[0];
        assert.equal(call.type, "custom_tool_call");
        assert.equal(call.name, "apply_patch");
        assert.equal(call.status, "completed");
        assert.equal(typeof call.call_id, "string");
        assert.equal(typeof call.input, "string");
        assert.ok((call.input as string).length > 0);
        assert.equal(call.arguments, undefined);
        // The custom tool's own streaming events, not function_call_arguments.
        const names = parseSse(text).map((e) => e.event);
        assert.ok(names.includes("response.custom_tool_call_input.done"), names.join("\n"));
        assert.ok(!names.includes("response.function_call_arguments.delta"));

        // The next turn sends the call and its output back: they reach the upstream as a
        // call of the apply_patch function and its result.
        const next = codexBody("responses-turn1", model, "[[mock:tokens=2]]");
        (next.input as Obj[]).push(
          {
            type: "custom_tool_call",
            call_id: call.call_id,
            name: "apply_patch",
            input: call.input,
          },
          {
            type: "custom_tool_call_output",
            call_id: call.call_id,
            output: "Success. Updated a.txt",
          },
        );
        const second = await completedStream(await post(g, next));
        assert.equal(second.response.output_text, "tok0 tok1");
        await g.mock.idle();
        const sent = JSON.stringify(g.mock.stats.calls.at(-1)!.body);
        assert.ok(sent.includes(call.call_id as string));
        assert.ok(sent.includes("Success. Updated a.txt"));
      }),
  });

  Deno.test({
    name: `codex via ${u}: a namespaced call comes back with its name and namespace`,
    ignore: !hasCodex,
    fn: () =>
      withUpstream(u, async (g) => {
        const body = codexBody(
          "responses-turn1",
          model,
          "[[mock:tool=collaboration__spawn_agent]]",
        );
        const { output } = await completedStream(await post(g, body));
        const call = output.find((i) => i.type === "function_call");
        assert.ok(call, JSON.stringify(output));
        assert.equal(call.name, "spawn_agent");
        assert.equal(call.namespace, "collaboration");
        JSON.parse(call.arguments as string);

        // Round trip: the namespaced call in the history reaches the upstream under the
        // flattened name it was offered, with its output.
        const next = codexBody("responses-turn1", model, "[[mock:tokens=2]]");
        (next.input as Obj[]).push(
          {
            type: "function_call",
            call_id: call.call_id,
            namespace: "collaboration",
            name: "spawn_agent",
            arguments: call.arguments,
          },
          { type: "function_call_output", call_id: call.call_id, output: "agent probe started" },
        );
        await completedStream(await post(g, next));
        await g.mock.idle();
        const sent = g.mock.stats.calls.at(-1)!.body as Obj;
        const text = JSON.stringify(sent);
        assert.ok(text.includes("agent probe started"));
        const history = JSON.stringify(sent.messages);
        assert.match(history, /collaboration__spawn_agent/, "the history uses the flattened name");
        assert.doesNotMatch(history, /"name":"spawn_agent"/);
      }),
  });

  Deno.test({
    name: `codex via ${u}: a call of tool_search comes back as a tool_search_call`,
    ignore: !hasCodex,
    fn: () =>
      withUpstream(u, async (g) => {
        const body = codexBody("responses-turn1", model, "[[mock:tool=tool_search]]");
        const { output } = await completedStream(await post(g, body));
        const call = output.find((i) => i.type === "tool_search_call");
        assert.ok(call, JSON.stringify(output));
        assert.equal(call.execution, "client");
        assert.equal(typeof call.call_id, "string");
        assert.equal(typeof call.arguments, "object");
      }),
  });
}

Deno.test({
  name:
    "codex via anthropic: signed thinking comes back sealed and is replayed, so thinking stays on",
  ignore: !hasCodex,
  fn: () =>
    withUpstream("anthropic", async (g) => {
      const model = SETUP.anthropic.model;
      const first = codexBody("responses-turn1", model, "[[mock:reasoning=3,tool=exec_command]]");
      const { output } = await completedStream(await post(g, first));
      const reasoning = output.find((i) => i.type === "reasoning");
      const call = output.find((i) => i.type === "function_call");
      assert.ok(reasoning && call, JSON.stringify(output));
      assert.match(reasoning.encrypted_content as string, /^tg\.rs\./);
      const summary = (reasoning.summary as Obj[]).map((s) => s.text).join("");
      assert.ok(summary.length > 0);

      // Codex sends the turn's items back with the tool's output.
      const next = codexBody("responses-turn1", model, "[[mock:tokens=2]]");
      (next.input as Obj[]).push(
        reasoning,
        {
          type: "function_call",
          call_id: call.call_id,
          name: call.name,
          arguments: call.arguments,
        },
        { type: "function_call_output", call_id: call.call_id, output: "exit 0" },
      );
      const second = await completedStream(await post(g, next));
      assert.equal(second.response.output_text, "tok0 tok1");

      await g.mock.idle();
      const sent = g.mock.stats.calls.at(-1)!.body as Obj;
      assert.equal((sent.thinking as Obj | undefined)?.type, "enabled", "thinking stays on");
      const turn = (sent.messages as Obj[]).findLast((m) => m.role === "assistant")!;
      const blocks = turn.content as Obj[];
      assert.equal(blocks[0].type, "thinking", "the tool turn starts with its thinking block");
      assert.equal(blocks[0].thinking, summary);
      assert.match(blocks[0].signature as string, /^Eq/);
      assert.equal(blocks.at(-1)!.type, "tool_use");
    }),
});

Deno.test({
  name:
    "codex via anthropic: a live web_search runs as Anthropic's server tool and comes back as a web_search_call; the cached one is left out",
  ignore: !hasCodex,
  fn: () =>
    withUpstream("anthropic", async (g) => {
      const model = SETUP.anthropic.model;
      // As recorded, Codex's search asks for no live access: Anthropic has no such search.
      const cached = codex("responses-turn1");
      cached.model = model;
      const plain = await completedStream(await post(g, cached));
      assert.ok(!plain.output.some((i) => i.type === "web_search_call"));
      await g.mock.idle();
      const sentCached = g.mock.stats.calls[0].body as Obj;
      assert.ok(!JSON.stringify(sentCached.tools).includes("web_search_20250305"));
      g.mock.reset();
      const body = live(codex("responses-turn1"));
      body.model = model;
      const last = (body.input as Obj[]).findLast((i) => i.role === "user")!;
      (last.content as Obj[]).push({ type: "input_text", text: "[[mock:searches=1,tokens=3]]" });
      const { output, response } = await completedStream(await post(g, body));
      // (Codex asks for reasoning: the mock thinks, after its search.)
      assert.deepEqual(output.map((i) => i.type), ["web_search_call", "reasoning", "message"]);
      assert.deepEqual(output[0].action, { type: "search", query: "mock search 1" });
      assert.equal(output[0].status, "completed");
      assert.equal(response.output_text, "tok0 tok1 tok2");
      const details = (response.usage as Obj).cost_details as Record<string, number>;
      assert.ok(details.upstream_inference_web_search_cost > 0, JSON.stringify(details));

      await g.mock.idle();
      const sent = g.mock.stats.calls[0].body as Obj;
      const server = (sent.tools as Obj[]).filter((t) => t.type !== undefined);
      assert.deepEqual(server, [{ type: "web_search_20250305", name: "web_search", max_uses: 10 }]);

      // The next turn carries the search item in its history: served, the item left out.
      const next = live(codex("responses-turn1"));
      next.model = model;
      (next.input as Obj[]).push(...output, {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "thanks [[mock:tokens=2]]" }],
      });
      const second = await completedStream(await post(g, next));
      assert.equal(second.response.output_text, "tok0 tok1");
      await g.mock.idle();
      const history = JSON.stringify(g.mock.stats.calls.at(-1)!.body);
      assert.ok(history.includes("tok0 tok1 tok2"), "the earlier answer is in the history");
      assert.ok(!history.includes("mock search 1"));
    }),
});

Deno.test({
  name:
    "codex via chat: a live web_search is refused where no upstream searches (400 naming it); its cached one is left out",
  ignore: !hasCodex,
  fn: () =>
    withUpstream("chat", async (g) => {
      const body = codex("responses-turn1");
      body.model = SETUP.chat.model;
      const res = await post(g, live(structuredClone(body)));
      const text = await res.text();
      assert.equal(res.status, 400, text);
      const err = JSON.parse(text).error;
      assert.equal(err.code, 400);
      assert.match(err.message, /web_search/);
      assert.equal(g.mock.stats.calls.length, 0);
      // Codex's default search asks for no live access: the call goes on without it.
      const cached = await post(g, body);
      assert.equal(cached.status, 200, await cached.clone().text());
      await cached.body?.cancel();
      await g.mock.idle();
      const sent = g.mock.stats.calls[0].body as Obj;
      assert.equal(sent.plugins, undefined);
    }),
});

Deno.test({
  name:
    "codex on an OpenRouter model: transcoded to its chat API, namespaces flattened and tool_search a function, both mapped back",
  ignore: !hasCodex,
  fn: () =>
    withGateway(async (g) => {
      const body = codexBody(
        "responses-turn1",
        "google/gemini-2.5-flash",
        "[[mock:tool=collaboration__spawn_agent]]",
      );
      body.tools = [
        ...(body.tools as Obj[]),
        (codex("responses-turn1").tools as Obj[]).find((t) => t.type === "web_search"),
      ];
      const res = await post(g, body);
      assert.equal(res.status, 200);
      const { output } = await completedStream(res);
      await g.mock.idle();
      const call = g.mock.stats.calls[0];
      assert.equal(call.protocol, "chat", "OpenRouter's responses API refuses namespace tools");
      const sent = call.body as { tools: { type: string; function: { name: string } }[] };
      const names = sent.tools.map((t) => t.function.name);
      assert.ok(names.includes("collaboration__spawn_agent"), JSON.stringify(names));
      assert.ok(names.includes("tool_search"), JSON.stringify(names));
      assert.ok(sent.tools.every((t) => t.type === "function"), JSON.stringify(sent.tools));
      assert.equal((call.body as Obj).plugins, undefined, "no search on every call");
      const fc = output.find((i) => i.type === "function_call")!;
      assert.deepEqual([fc.name, fc.namespace], ["spawn_agent", "collaboration"]);

      // With live search (Codex's `web_search = "live"`, or full access): the chat API still,
      // the search run by OpenRouter's web plugin.
      g.mock.reset();
      const searching = await post(g, live(structuredClone(body)));
      assert.equal(searching.status, 200, await searching.clone().text());
      await searching.body?.cancel();
      await g.mock.idle();
      const withSearch = g.mock.stats.calls[0];
      assert.equal(withSearch.protocol, "chat");
      assert.deepEqual((withSearch.body as Obj).plugins, [{ id: "web" }]);
    }),
});

for (const u of UPSTREAMS) {
  Deno.test({
    name: `codex via ${u}: a turn interrupted once its thinking had come does not break the next`,
    ignore: !hasCodex,
    fn: () =>
      withUpstream(u, async (g) => {
        const { model } = SETUP[u];
        const first = codexBody("responses-turn1", model, "[[mock:reasoning=3,tokens=2]]");
        first.reasoning = { effort: "medium", summary: "auto" };
        const { output } = await completedStream(await post(g, first));
        // A chat upstream's reasoning comes as text alone, as OpenRouter gives Gemini's.
        const reasoning = output.find((i) => i.type === "reasoning") ??
          { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "hmm" }] };
        if (u === "anthropic") assert.ok(reasoning.encrypted_content, JSON.stringify(output));
        // Codex interrupted after the reasoning item: it keeps that item alone and sends it
        // back, then the user's next message.
        const next = codexBody("responses-turn1", model);
        next.reasoning = first.reasoning;
        next.input = [
          ...(first.input as Obj[]),
          { ...reasoning, content: null },
          {
            type: "message",
            role: "user",
            content: [{ type: "input_text", text: "<turn_aborted>\ninterrupted\n</turn_aborted>" }],
          },
          { type: "message", role: "user", content: [{ type: "input_text", text: "again" }] },
        ];
        await completedStream(await post(g, next));
        await g.mock.idle();
        const sent = g.mock.stats.calls[1].body as { messages: { role: string }[] };
        assert.ok(
          sent.messages.every((m) => m.role !== "assistant"),
          JSON.stringify(sent.messages),
        );
      }),
  });
}

Deno.test({
  name: "codex's max and ultra reasoning efforts reach every model as the nearest effort it takes",
  ignore: !hasCodex,
  fn: () =>
    withGateway(async (g) => {
      // [model, upstream protocol, the effort it is sent]
      const cases: [string, string, string][] = [
        ["openai/gpt-5.1-codex", "responses", "high"],
        ["openai/gpt-5.5", "responses", "xhigh"],
        ["anthropic/claude-opus-4.7", "messages", "xhigh"],
        ["deepseek/deepseek-v3.2", "chat", "xhigh"],
      ];
      for (const effort of ["max", "ultra"]) {
        for (const [model, protocol, sent] of cases) {
          const body = codexBody("responses-turn1", model, "[[mock:tokens=1]]");
          body.reasoning = { effort, summary: "auto" };
          g.mock.reset();
          await completedStream(await post(g, body));
          await g.mock.idle();
          const call = g.mock.stats.calls[0];
          assert.equal(call.protocol, protocol, model);
          const up = call.body as {
            reasoning?: { effort?: string };
            reasoning_effort?: string;
            output_config?: { effort?: string };
          };
          const got = up.reasoning?.effort ?? up.reasoning_effort ?? up.output_config?.effort;
          assert.equal(got, sent, `${effort} on ${model}: ${JSON.stringify(up.reasoning)}`);
        }
      }
    }),
});

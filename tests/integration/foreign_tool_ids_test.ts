/**
 * A history whose tool call ids another vendor made reaches every upstream in a shape it takes,
 * from every client format, passed through or transcoded: Kimi's ids repeat across turns
 * (Anthropic refuses a repeated `tool_use` id), and some vendors' run longer than OpenAI takes
 * (40 characters on its chat API, 64 for a responses `call_id`). Each result still pairs with
 * the call just before it.
 */
import assert from "node:assert/strict";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const KIMI = "functions.get_weather:0";
const LONG = "tool_0_get_weather_" + "a".repeat(70);
/** Three turns of one call and its result each, as a session on such vendors keeps them. */
const IDS = [KIMI, KIMI, LONG];

type Client = "chat" | "messages" | "responses";

function body(client: Client, model: string): Record<string, unknown> {
  if (client === "chat") {
    return {
      model,
      tools: [{ type: "function", function: { name: "get_weather", parameters: {} } }],
      messages: [
        { role: "user", content: "weather?" },
        ...IDS.flatMap((id, i) => [
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id,
              type: "function",
              function: { name: "get_weather", arguments: "{}" },
            }],
          },
          { role: "tool", tool_call_id: id, content: `result ${i}` },
        ]),
      ],
    };
  }
  if (client === "messages") {
    return {
      model,
      max_tokens: 100,
      tools: [{ name: "get_weather", input_schema: { type: "object" } }],
      messages: [
        { role: "user", content: "weather?" },
        ...IDS.flatMap((id, i) => [
          {
            role: "assistant",
            content: [{ type: "tool_use", id, name: "get_weather", input: {} }],
          },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: id, content: `result ${i}` }],
          },
        ]),
      ],
    };
  }
  return {
    model,
    store: false,
    tools: [{ type: "function", name: "get_weather", parameters: {} }],
    input: [
      { role: "user", content: "weather?" },
      ...IDS.flatMap((id, i) => [
        { type: "function_call", call_id: id, name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: id, output: `result ${i}` },
      ]),
    ],
  };
}

const PATH: Record<Client, string> = {
  chat: "/v1/chat/completions",
  messages: "/v1/messages",
  responses: "/v1/responses",
};

/** The ids of the calls and of the results the upstream was sent, in order. */
function sentIds(protocol: string, sent: Record<string, unknown>) {
  const calls: string[] = [];
  const results: string[] = [];
  if (protocol === "responses") {
    for (const i of sent.input as Record<string, string>[]) {
      if (i.type === "function_call") calls.push(i.call_id);
      if (i.type === "function_call_output") results.push(i.call_id);
    }
  } else if (protocol === "messages") {
    for (const m of sent.messages as { content: unknown }[]) {
      for (const b of Array.isArray(m.content) ? m.content : []) {
        if (b.type === "tool_use") calls.push(b.id);
        if (b.type === "tool_result") results.push(b.tool_use_id);
      }
    }
  } else {
    for (const m of sent.messages as Record<string, unknown>[]) {
      for (const t of (m.tool_calls as { id: string }[] | undefined) ?? []) calls.push(t.id);
      if (m.role === "tool") results.push(m.tool_call_id as string);
    }
  }
  return { calls, results };
}

async function upstreamSaw(g: TestGateway, client: Client, model: string) {
  g.mock.stats.calls.length = 0;
  const res = await fetch(g.url + PATH[client], {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(body(client, model)),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
  await g.mock.idle();
  const call = g.mock.stats.calls[0];
  return {
    protocol: call.protocol,
    ...sentIds(call.protocol, call.body as Record<string, unknown>),
  };
}

for (const client of ["chat", "messages", "responses"] as const) {
  Deno.test(`foreign tool ids: a ${client} client's history reaches each upstream in a shape it takes`, async () => {
    await withGateway(async (g) => {
      // Claude; OpenAI's chat or responses API (the client's own first); its responses API alone.
      for (
        const model of ["anthropic/claude-sonnet-4.5", "openai/gpt-4o-mini", "openai/gpt-5.1-codex"]
      ) {
        const { protocol, calls, results } = await upstreamSaw(g, client, model);
        const what = `${client} client, ${model} (${protocol})`;
        assert.equal(calls.length, 3, what);
        assert.deepEqual(results, calls, `${what}: each result pairs with its call`);
        if (protocol === "messages") {
          assert.equal(new Set(calls).size, 3, `${what}: tool_use ids are unique: ${calls}`);
          for (const id of calls) assert.match(id, /^[a-zA-Z0-9_-]+$/, what);
        }
        const max = protocol === "chat" ? 40 : protocol === "responses" ? 64 : Infinity;
        for (const id of calls) assert.ok(id.length <= max, `${what}: ${id} over ${max}`);
      }
    });
  });
}

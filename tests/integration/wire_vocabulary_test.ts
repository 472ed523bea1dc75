/**
 * The providers' full wire vocabulary (wire_scenarios.ts: thinking and signatures, redacted
 * thinking, citations, server tools and their results, refusals, annotations, logprobs, audio,
 * hosted tool items, custom tool calls, every stop reason, mid-stream errors) from a replaying
 * upstream of each protocol, through a real gateway, read by each client format's official SDK
 * accumulator (streaming: MessageStream, ChatCompletionStream, ResponseStream) and whole. Each
 * call must end cleanly, be billed once from the upstream's usage, and give the client what
 * its format can represent.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { ALL, type Expect, FAILING, type Protocol, type Scenario } from "./wire_scenarios.ts";

const MODEL = "anthropic/claude-sonnet-4.5";
type Client = "messages" | "chat" | "responses";
type Obj = Record<string, unknown>;
// deno-lint-ignore no-explicit-any
type Any = any;

let current: Scenario | undefined;
let raw: string | undefined;

function replay(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const body = await req.json();
    const sse = { headers: { "content-type": "text/event-stream" } };
    if (raw !== undefined) return new Response(raw, sse);
    return body.stream ? new Response(current!.stream, sse) : Response.json(current!.body);
  });
}

const providers = (protocol: Protocol, port: number) => ({
  providers: [{
    id: "replay",
    protocols: [protocol],
    baseUrl: `http://127.0.0.1:${port}`,
    keyEnv: "OPENAI_API_KEY",
    priority: 1,
    serves: ["*"],
    upstreamName: "{slug}",
  }],
});

/** What the client got, read the same way whatever its format. */
interface Seen {
  text: string;
  refusal?: string;
  reasoning: string;
  tools: { id: string; name: string; args: unknown }[];
  finish: string;
  citations: string[];
}

const json = (s: string) => {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
};

function seen(client: Client, r: Any): Seen {
  const s: Seen = { text: "", reasoning: "", tools: [], finish: "", citations: [] };
  if (client === "messages") {
    for (const b of r.content) {
      if (b.type === "text") s.text += b.text;
      if (b.type === "thinking") s.reasoning += b.thinking;
      if (b.type === "tool_use") s.tools.push({ id: b.id, name: b.name, args: b.input });
    }
    s.finish = r.stop_reason;
  } else if (client === "chat") {
    const m = r.choices[0].message;
    s.text = m.content ?? "";
    s.refusal = m.refusal ?? undefined;
    s.reasoning = m.reasoning ?? "";
    for (const t of m.tool_calls ?? []) {
      s.tools.push({ id: t.id, name: t.function.name, args: json(t.function.arguments) });
    }
    s.citations = (m.annotations ?? []).map((a: Any) => a.url_citation.url);
    s.finish = r.choices[0].finish_reason;
  } else {
    for (const it of r.output) {
      if (it.type === "message") {
        for (const p of it.content) {
          if (p.type === "output_text") s.text += p.text;
          if (p.type === "refusal") s.refusal = (s.refusal ?? "") + p.refusal;
          s.citations.push(...(p.annotations ?? []).map((a: Any) => a.url));
        }
      }
      if (it.type === "reasoning") {
        s.reasoning += (it.summary ?? []).map((x: Any) => x.text).join("\n\n");
      }
      if (it.type === "function_call") {
        s.tools.push({ id: it.call_id, name: it.name, args: json(it.arguments) });
      }
      if (it.type === "custom_tool_call") {
        s.tools.push({ id: it.call_id, name: it.name, args: it.input });
      }
    }
    s.finish = r.status + (r.incomplete_details ? `:${r.incomplete_details.reason}` : "");
  }
  return s;
}

const FINISH: Record<Client, Record<Expect["finish"], string>> = {
  messages: {
    stop: "end_turn",
    length: "max_tokens",
    tool_calls: "tool_use",
    content_filter: "refusal",
    error: "",
  },
  chat: {
    stop: "stop",
    length: "length",
    tool_calls: "tool_calls",
    content_filter: "content_filter",
    error: "",
  },
  responses: {
    stop: "completed",
    length: "incomplete:max_output_tokens",
    tool_calls: "completed",
    content_filter: "incomplete:content_filter",
    error: "",
  },
};

const SAME: Record<Client, Protocol> = {
  messages: "anthropic-messages",
  chat: "openai-chat",
  responses: "openai-responses",
};

/** A custom tool's free-form input as any format but its own carries it (custom_tool_input.ts). */
function toolArgs(args: string, client: Client, protocol: Protocol): unknown {
  const v = json(args);
  return typeof v === "string" && SAME[client] !== protocol ? { input: v } : v;
}

async function call(g: TestGateway, client: Client, stream: boolean): Promise<Any> {
  const input = [{ role: "user" as const, content: "hi" }];
  if (client === "messages") {
    const a = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const p = { model: MODEL, max_tokens: 1024, messages: input };
    return stream ? await a.messages.stream(p).finalMessage() : await a.messages.create(p);
  }
  const o = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
  if (client === "chat") {
    const p = { model: MODEL, messages: input };
    return stream
      ? await o.chat.completions.stream({ ...p, stream_options: { include_usage: true } })
        .finalChatCompletion()
      : await o.chat.completions.create(p);
  }
  const p = { model: MODEL, input: "hi" };
  return stream ? await o.responses.stream(p).finalResponse() : await o.responses.create(p);
}

async function lastGeneration(g: TestGateway) {
  await g.settled();
  const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
  const debits = (await g.store.listLedger(g.accountId)).filter((e) => e.generationId === gen.id);
  return { gen, debits: debits.length };
}

/**
 * Known limits, each explained in FINDINGS: a vendor's tool-call index gap forwarded by chat
 * pass-through breaks the chat SDK's accumulator; that accumulator keeps only the last
 * `delta.reasoning` (a field it does not know), so a streamed chat answer is read whole only
 * by a client that joins the deltas itself.
 */
function knownLimit(sc: Scenario, client: Client, stream: boolean): string | undefined {
  if (client === "chat" && stream && sc.name.includes("index gap")) return "index gap";
  return undefined;
}

for (const protocol of ["anthropic-messages", "openai-chat", "openai-responses"] as const) {
  Deno.test({
    name:
      `wire vocabulary via ${protocol}: every scenario on every client format, streamed and whole`,
    async fn() {
      const upstream = replay();
      try {
        await withGateway(async (g) => {
          const problems: string[] = [];
          for (const sc of ALL.filter((s) => s.protocol === protocol)) {
            current = sc;
            /** The web search part of each call's cost: the same for all, once per search. */
            const searchCosts = new Set<number | undefined>();
            for (const client of ["messages", "chat", "responses"] as const) {
              for (const stream of [true, false]) {
                if (knownLimit(sc, client, stream)) continue;
                const where = `${sc.name} → ${client} ${stream ? "stream" : "body"}`;
                const e = sc.expect;
                let r: Any;
                try {
                  r = await call(g, client, stream);
                } catch (err) {
                  problems.push(`${where}: ${err}`);
                  continue;
                }
                const { gen, debits } = await lastGeneration(g);
                if (gen.tokens.input !== e.input || gen.tokens.output !== e.output) {
                  problems.push(`${where}: billed ${JSON.stringify(gen.tokens)}`);
                }
                if (debits !== 1) problems.push(`${where}: ${debits} debits`);
                const searchCost = gen.costDetails.upstream_inference_web_search_cost;
                searchCosts.add(searchCost);
                if ((searchCost ?? 0) > 0 !== (e.searches ?? 0) > 0) {
                  problems.push(`${where}: web search cost ${searchCost}`);
                }
                const s = seen(client, r);
                const refusalField = client !== "messages" && e.refusal !== undefined;
                if (s.text !== (refusalField ? "" : e.text)) {
                  problems.push(`${where}: text ${JSON.stringify(s.text)}`);
                }
                if (refusalField && s.refusal !== e.refusal) {
                  problems.push(`${where}: refusal ${JSON.stringify(s.refusal)}`);
                }
                // The chat SDK keeps only the last `delta.reasoning` (knownLimit).
                if (e.reasoning && !(client === "chat" && stream) && s.reasoning !== e.reasoning) {
                  problems.push(`${where}: reasoning ${JSON.stringify(s.reasoning)}`);
                }
                const tools = (e.tools ?? []).map((t) => ({
                  id: t.id,
                  name: t.name,
                  args: toolArgs(t.args, client, protocol),
                }));
                try {
                  assert.deepEqual(s.tools, tools);
                } catch {
                  problems.push(`${where}: tools ${JSON.stringify(s.tools)}`);
                }
                // Pass-through keeps the upstream's own stop reason (pause_turn, …).
                if (SAME[client] !== protocol && s.finish !== FINISH[client][e.finish]) {
                  problems.push(`${where}: finish ${s.finish}`);
                }
                if (client !== "messages" && SAME[client] !== protocol) {
                  if (JSON.stringify(s.citations) !== JSON.stringify(e.citations ?? [])) {
                    problems.push(`${where}: citations ${JSON.stringify(s.citations)}`);
                  }
                }
              }
            }
            if (searchCosts.size !== 1) {
              problems.push(`${sc.name}: web search costs ${[...searchCosts].join(", ")}`);
            }
          }
          for (const f of FAILING.filter((x) => x.protocol === protocol)) {
            raw = f.stream;
            for (const client of ["messages", "chat", "responses"] as const) {
              const where = `${f.name} → ${client}`;
              await assert.rejects(call(g, client, true), `${where}: the SDK sees the error`);
              const { gen, debits } = await lastGeneration(g);
              if (gen.status !== "failed") problems.push(`${where}: status ${gen.status}`);
              if (debits !== 1) problems.push(`${where}: ${debits} debits`);
            }
            raw = undefined;
          }
          assert.deepEqual(problems, []);
        }, { providers: providers(protocol, upstream.addr.port) });
      } finally {
        raw = undefined;
        await upstream.shutdown();
      }
    },
  });
}

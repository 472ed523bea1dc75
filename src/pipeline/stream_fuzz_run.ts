/**
 * The stream stage as the pipeline builds it, run over chunks of an upstream stream, and the
 * client's view of what came out: read back with the official SDKs' stream helpers, which
 * refuse an event order their format does not allow.
 */
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Meter } from "./meter.ts";
import { StreamStage } from "./stream_stage.ts";
import { Tracker } from "../lib/tracker.ts";
import type { StoreQuota } from "../billing/quota.ts";
import { createLogger } from "../lib/log.ts";
import { makeRates } from "../billing/cost.ts";
import { createChatDecoder } from "../formats/chat/decode.ts";
import { createChatEncoder, createChatPassThrough } from "../formats/chat/encode.ts";
import {
  createMessagesDecoder,
  createMessagesEncoder,
  createMessagesPassThrough,
} from "../formats/messages/mod.ts";
import {
  createResponsesDecoder,
  createResponsesEncoder,
  createResponsesPassThrough,
} from "../formats/responses/mod.ts";
import type { EncodeContext } from "../formats/codec.ts";
import { createParser } from "eventsource-parser";
import type { Protocol } from "./stream_fuzz_support.ts";

export type Client = "chat" | "messages" | "responses";
export const CLIENTS: Client[] = ["chat", "messages", "responses"];

const SAME: Record<Protocol, Client> = {
  "openai-chat": "chat",
  "openrouter-chat": "chat",
  "anthropic-messages": "messages",
  "openai-responses": "responses",
};

export interface StageRun {
  /** What the client was sent. */
  text: string;
  cost: number;
  usage: Record<string, unknown>;
  /** An exception out of `feed` or `finish`: always a bug. */
  thrown?: unknown;
  failed: boolean;
}

export function runStage(
  client: Client,
  protocol: Protocol,
  chunks: Uint8Array[],
  opts: { includeUsage?: boolean } = {},
): StageRun {
  const meter = new Meter({
    generationId: "gen_fuzz",
    prices: { prompt: "0.000001", completion: "0.000002", input_cache_read: "0.0000001" },
    promptTokensCounted: 42,
    startedAt: performance.now(),
  }, {
    quota: { settle: () => Promise.resolve(true) } as unknown as StoreQuota,
    tracker: new Tracker(),
    log: createLogger("error", () => {}),
    rates: makeRates("100", "0"),
  });
  const ctx: EncodeContext = {
    id: "gen_fuzz",
    model: "fuzz/model",
    created: 1,
    clientBody: client === "chat" && opts.includeUsage
      ? { stream: true, stream_options: { include_usage: true } }
      : { stream: true },
  };
  const decoder = protocol === "anthropic-messages"
    ? createMessagesDecoder()
    : protocol === "openai-responses"
    ? createResponsesDecoder()
    : createChatDecoder();
  const pass = SAME[protocol] === client;
  const stage = new StreamStage({
    decoder,
    encoder: pass
      ? undefined
      : client === "chat"
      ? createChatEncoder(ctx)
      : client === "messages"
      ? createMessagesEncoder(ctx)
      : createResponsesEncoder(ctx),
    pass: !pass
      ? undefined
      : client === "chat"
      ? createChatPassThrough(ctx)
      : client === "messages"
      ? createMessagesPassThrough(ctx)
      : createResponsesPassThrough(ctx),
  }, meter);
  let text = "";
  let thrown: unknown;
  try {
    for (const c of chunks) {
      text += stage.feed(c);
      // As respond.ts: an upstream error or the terminal event ends the reading.
      if (stage.complete) break;
      if (stage.failed && !stage.usageMayFollow) break;
    }
  } catch (e) {
    thrown = e;
  }
  let cost = 0;
  let usage: Record<string, unknown> = {};
  try {
    const f = stage.finish();
    text += f.text;
    cost = f.cost.cost;
    usage = { ...f.cost.usage };
  } catch (e) {
    thrown ??= e;
  }
  return { text, cost, usage, thrown, failed: stage.failed };
}

// ---------------------------------------------------------------------------------------------
// Well-formed SSE for the client's format.

export interface Sse {
  event?: string;
  data: string;
}

export function parseClientSse(text: string): Sse[] {
  const out: Sse[] = [];
  const p = createParser({ onEvent: (e) => out.push({ event: e.event, data: e.data }) });
  p.feed(text);
  return out;
}

/** Problems with the stream's framing the SDKs might let pass; empty when it is well formed. */
export function frameProblems(client: Client, text: string): string[] {
  const problems: string[] = [];
  const evs = parseClientSse(text);
  const payloads: Record<string, unknown>[] = [];
  for (const [i, e] of evs.entries()) {
    if (client === "chat" && e.data === "[DONE]") {
      if (i !== evs.length - 1) problems.push("[DONE] not last");
      continue;
    }
    try {
      const p = JSON.parse(e.data);
      payloads.push(p);
      if (client !== "chat" && e.event !== p.type) {
        problems.push(`event name ${e.event} carries ${p.type}`);
      }
    } catch {
      problems.push(`unparseable data: ${e.data.slice(0, 80)}`);
    }
  }
  const types = payloads.map((p) => p.type as string).filter((t) => t !== "ping");
  const count = (t: string) => types.filter((x) => x === t).length;
  if (client === "messages") {
    const ends = count("message_stop") + count("error");
    if (ends !== 1) problems.push(`message_stop + error = ${ends}`);
    if (types[0] !== "message_start" && types[0] !== "error") problems.push(`first ${types[0]}`);
    const last = types.at(-1);
    if (last !== "message_stop" && last !== "error") problems.push(`last ${last}`);
    const open = new Set<number>();
    const seen = new Set<number>();
    let deltaSeen = false;
    for (const p of payloads) {
      const i = p.index as number;
      if (p.type === "content_block_start") {
        if (seen.has(i)) problems.push(`block ${i} started twice`);
        if (open.size > 0) problems.push(`block ${i} starts while ${[...open]} open`);
        seen.add(i);
        open.add(i);
      } else if (p.type === "content_block_delta" && !open.has(i)) {
        problems.push(`delta for block ${i} not open`);
      } else if (p.type === "content_block_stop") {
        if (!open.delete(i)) problems.push(`stop for block ${i} not open`);
      } else if (p.type === "message_delta") {
        if (open.size > 0) problems.push("message_delta with a block open");
        deltaSeen = true;
      } else if (p.type === "message_stop" && !deltaSeen) {
        problems.push("message_stop without message_delta");
      }
    }
  } else if (client === "responses") {
    const ends = count("response.completed") + count("response.incomplete") +
      count("response.failed");
    if (ends !== 1) problems.push(`terminal responses events = ${ends}`);
    const last = types.at(-1);
    if (!["response.completed", "response.incomplete", "response.failed"].includes(last!)) {
      problems.push(`last ${last}`);
    }
    if (types[0] !== "response.created" && types[0] !== "error") problems.push(`first ${types[0]}`);
    let seq = -1;
    for (const p of payloads) {
      if (typeof p.sequence_number === "number") {
        if (p.sequence_number <= seq) problems.push(`sequence ${p.sequence_number} after ${seq}`);
        seq = p.sequence_number;
      }
    }
  } else {
    const done = evs.filter((e) => e.data === "[DONE]").length;
    const errors = payloads.filter((p) => p.error != null).length;
    if (done + errors < 1) problems.push("no [DONE] and no error");
    if (done > 1) problems.push("[DONE] twice");
    const finishes = payloads.flatMap((p) =>
      Array.isArray(p.choices)
        ? p.choices.filter((c) => c?.finish_reason != null && c.finish_reason !== "error")
        : []
    );
    if (finishes.length > 1) problems.push(`${finishes.length} finish chunks`);
    const usages = payloads.filter((p) => p.usage != null);
    if (usages.length > 1) problems.push(`${usages.length} usage chunks`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The client's view, through the SDKs.

/** What the client's SDK made of the stream: its final object, or what it threw. */
export interface ClientView {
  text: string;
  reasoning: string;
  tools: { name: string; args: string }[];
  finish?: string;
  error?: string;
}

const fetchOf = (text: string) => () =>
  Promise.resolve(
    new Response(text, { headers: { "content-type": "text/event-stream", "request-id": "r" } }),
  );

export async function clientView(client: Client, text: string): Promise<ClientView> {
  const view: ClientView = { text: "", reasoning: "", tools: [] };
  try {
    if (client === "chat") {
      const c = new OpenAI({
        apiKey: "k",
        baseURL: "http://fuzz.invalid/v1",
        fetch: fetchOf(text),
        maxRetries: 0,
      });
      const final = await c.chat.completions.stream({ model: "m", messages: [] })
        .finalChatCompletion();
      const ch = final.choices[0];
      view.text = (ch?.message.content ?? "") + (ch?.message.refusal ?? "");
      const m = ch?.message as unknown as Record<string, unknown>;
      view.reasoning = typeof m?.reasoning === "string" ? m.reasoning : "";
      view.tools = (ch?.message.tool_calls ?? []).map((t) => {
        const f = (t as { function: { name: string; arguments: string } }).function;
        return { name: f.name, args: f.arguments };
      });
      view.finish = ch?.finish_reason;
    } else if (client === "messages") {
      const c = new Anthropic({
        apiKey: "k",
        baseURL: "http://fuzz.invalid",
        fetch: fetchOf(text),
        maxRetries: 0,
      });
      const final = await c.messages.stream({ model: "m", max_tokens: 10, messages: [] })
        .finalMessage();
      for (const b of final.content) {
        if (b.type === "text") view.text += b.text;
        else if (b.type === "thinking") view.reasoning += b.thinking;
        else if (b.type === "tool_use") {
          view.tools.push({ name: b.name, args: JSON.stringify(b.input) });
        }
      }
      view.finish = final.stop_reason ?? undefined;
    } else {
      const c = new OpenAI({
        apiKey: "k",
        baseURL: "http://fuzz.invalid/v1",
        fetch: fetchOf(text),
        maxRetries: 0,
      });
      const final = await c.responses.stream({ model: "m", input: "x" }).finalResponse();
      for (const item of final.output) {
        if (item.type === "message") {
          for (const p of item.content) {
            view.text += p.type === "output_text" ? p.text : p.refusal;
          }
        } else if (item.type === "reasoning") {
          view.reasoning += (item.summary ?? []).map((s) => s.text).join("");
        } else if (item.type === "function_call") {
          view.tools.push({ name: item.name, args: item.arguments });
        }
      }
      view.finish = final.status ?? undefined;
    }
  } catch (e) {
    view.error = (e as Error).constructor.name + ": " + (e as Error).message;
  }
  return view;
}

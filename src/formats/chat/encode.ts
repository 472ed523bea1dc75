/**
 * Internal events → the chat completions wire, streaming (`chat.completion.chunk` SSE frames)
 * and whole (`chat.completion`), plus the pass-through edits for an openai-chat upstream.
 *
 * Stream shape, as OpenAI sends it: a first chunk `delta: {role: "assistant", content: ""}`,
 * content / reasoning / tool-call deltas, a chunk with `finish_reason`, then `data: [DONE]`.
 * The usage (with `cost` and `cost_details`) is always sent, in one of two places:
 * - the client asked for it (`stream_options.include_usage`): OpenAI's own usage chunk after
 *   the finish, with `choices: []`;
 * - it did not: on the finish chunk itself. A client that did not ask for a usage chunk does
 *   not expect one, and the common loop `chunk.choices[0].delta` fails on `choices: []`.
 * After an `error` event a chunk of the generic error object alone (OpenAI's convention) goes
 * out, then the last chunk carries `finish_reason: "error"` and the error object (OpenRouter's
 * convention), with usage and cost, and no [DONE].
 * Chunks are built as strings around a prefix computed once: no object per delta.
 */
import type { ReasoningPart } from "../../events/text_request.ts";
import { detailsOut } from "./reasoning_details.ts";

/** A client is given every vendor's reasoning to send back (its next call may go anywhere). */
const TO_CLIENT = { anthropic: true, openai: true };
import type { CostReport, Event, FinishReason } from "../../events/event.ts";
import { type GatewayError, timeoutAsProviderError } from "../../http/gateway_error.ts";
import { errorBody } from "../../http/envelopes.ts";
import type {
  BodyEncoder,
  EncodeContext,
  PassThroughBody,
  PassThroughEncoder,
  StreamEncoder,
} from "../codec.ts";
import { type SseEvent, sseFrame } from "../sse.ts";
import { finishToChat } from "./finish_reason.ts";
import { addCost, usageToChat } from "./usage.ts";
import { type Obj, parseObject } from "../json.ts";

const DONE = "data: [DONE]\n\n";
/** A chunk that finishes a choice, or one with no choices at all (as the upstream spells it). */
const FINISHES = /"finish_reason"\s*:\s*"/;
const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;

/** The client asked not to see reasoning (OpenRouter `reasoning.exclude`, `include_reasoning`). */
function reasoningExcluded(body: Obj | undefined): boolean {
  if (!body) return false;
  const r = body.reasoning as Obj | null | undefined;
  return (r != null && r.exclude === true) || body.include_reasoning === false;
}

/** The identity fields every chunk carries. */
interface ChunkHead {
  id: string;
  created: number;
  model: string;
}

/** The client asked for OpenAI's separate usage chunk (`choices: []`) at the end. */
function wantsUsageChunk(body: Obj | undefined): boolean {
  const so = body?.stream_options as Obj | null | undefined;
  return so != null && so.include_usage === true;
}

/**
 * The final chunk of a successful stream, usage with cost: OpenAI's usage chunk (no choices),
 * or, with `finish`, a finish chunk carrying the usage.
 */
function usageChunk(h: ChunkHead, usage: Obj, finish?: string): string {
  return sseFrame(JSON.stringify({
    id: h.id,
    object: "chat.completion.chunk",
    created: h.created,
    model: h.model,
    choices: finish === undefined
      ? []
      : [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }],
    usage,
  }));
}

/**
 * The end of a failed stream: the error object alone (OpenAI's in-stream error, which parsers
 * that read a chunk with `choices` as content see only so: the Vercel AI SDK's chat provider
 * took the stream for a short answer), then the last chunk: finish_reason "error", the error
 * object again, usage.
 */
function errorChunk(h: ChunkHead, error: GatewayError, cost: CostReport): string {
  const body = errorBody("generic", timeoutAsProviderError(error)).error;
  return sseFrame(JSON.stringify({ error: body })) + sseFrame(JSON.stringify({
    id: h.id,
    object: "chat.completion.chunk",
    created: h.created,
    model: h.model,
    choices: [{ index: 0, delta: {}, finish_reason: "error" }],
    error: body,
    usage: usageToChat(cost),
  }));
}

export function createChatEncoder(ctx: EncodeContext): StreamEncoder {
  const prefix = `data: {"id":${JSON.stringify(ctx.id)},"object":"chat.completion.chunk",` +
    `"created":${ctx.created},"model":${JSON.stringify(ctx.model)},"choices":[{"index":0,` +
    `"delta":`;
  const chunk = (delta: string) => `${prefix}${delta},"finish_reason":null}]}\n\n`;
  const excludeReasoning = reasoningExcluded(ctx.clientBody);
  /** Without a usage chunk the finish chunk waits for the cost, and carries the usage. */
  const usageOnFinish = !wantsUsageChunk(ctx.clientBody);
  /** Internal tool index → chat index: chat clients fill an array, so indices are dense. */
  const toolIndex = new Map<number, number>();
  let started = false;
  /** The open text block is a refusal: its text goes in `refusal`, not `content`. */
  let refusal = false;
  const cites = new Citations();
  let finished: string | undefined;
  let error: GatewayError | undefined;
  /** The reasoning block so far, and how many signed blocks went out (their `index`). */
  let block = "";
  let detailIndex = 0;
  const detailChunk = (p: ReasoningPart): string => {
    const [d] = detailsOut([p], TO_CLIENT);
    if (!d || excludeReasoning) return "";
    d.index = detailIndex++;
    return role() + chunk(`{"reasoning_details":[${JSON.stringify(d)}]}`);
  };

  const role = (): string => {
    if (started) return "";
    started = true;
    return chunk('{"role":"assistant","content":""}');
  };

  return {
    event(e: Event): string {
      switch (e.type) {
        case "response_start":
          return role();
        case "text_start":
          refusal = e.refusal === true;
          if (!refusal) cites.blockStart();
          return "";
        case "citation":
          if (!refusal) cites.add(e);
          return "";
        case "text_delta":
          if (e.delta === "") return "";
          if (!refusal) cites.text(e.delta);
          return role() +
            chunk(`{"${refusal ? "refusal" : "content"}":${JSON.stringify(e.delta)}}`);
        case "reasoning_delta":
          block += e.delta;
          if (excludeReasoning || e.delta === "") return "";
          return role() + chunk(`{"reasoning":${JSON.stringify(e.delta)}}`);
        case "reasoning_signature":
          return detailChunk({ type: "reasoning", text: block, signature: e.signature });
        case "reasoning_redacted":
          return detailChunk({ type: "reasoning", text: "", redacted: e.data });
        case "reasoning_start":
          block = "";
          return "";
        case "tool_call_start": {
          const index = toolIndex.size;
          toolIndex.set(e.index, index);
          return role() +
            chunk(
              `{"tool_calls":[{"index":${index},"id":${JSON.stringify(e.id)},"type":"function",` +
                `"function":{"name":${JSON.stringify(e.name)},"arguments":""}}]}`,
            );
        }
        case "tool_call_delta": {
          if (e.json === "") return "";
          const index = toolIndex.get(e.index) ?? e.index;
          return chunk(
            `{"tool_calls":[{"index":${index},"function":{"arguments":${
              JSON.stringify(e.json)
            }}}]}`,
          );
        }
        case "finish": {
          // All annotations in one delta, as OpenAI sends them (the SDK's accumulator keeps
          // the last `annotations` it sees, not their sum).
          const out = role() +
            (cites.list.length > 0 ? chunk(`{"annotations":${JSON.stringify(cites.list)}}`) : "");
          if (usageOnFinish) {
            finished = finishToChat(e.reason);
            return out;
          }
          return out +
            `${prefix}{},"finish_reason":${JSON.stringify(finishToChat(e.reason))}}]}\n\n`;
        }
        case "error":
          error ??= e.error;
          return "";
        case "cost":
          if (error) return errorChunk(ctx, error, e.cost);
          return role() +
            usageChunk(
              ctx,
              usageToChat(e.cost),
              usageOnFinish ? finished ?? (toolIndex.size > 0 ? "tool_calls" : "stop") : undefined,
            ) + DONE;
        case "text_end":
        case "reasoning_end":
        case "tool_call_end":
        case "usage":
        case "web_search": // chat has no item for a hosted search; its answer follows as text
        case "other_choice_delta":
          return "";
        default: {
          const never: never = e;
          return never;
        }
      }
    },
  };
}

/**
 * `citation` events as chat's `url_citation` annotations: their offsets, within a text block,
 * made offsets within the message's content (all its text blocks joined).
 */
class Citations {
  readonly list: Obj[] = [];
  #length = 0;
  #blockAt = 0;

  blockStart(): void {
    this.#blockAt = this.#length;
  }

  text(delta: string): void {
    this.#length += delta.length;
  }

  add(e: Event & { type: "citation" }): void {
    this.list.push({
      type: "url_citation",
      url_citation: {
        start_index: this.#blockAt + e.start,
        end_index: this.#blockAt + e.end,
        title: e.title ?? "",
        url: e.url,
      },
    });
  }
}

/** Folds the events of a non-streaming call into a `chat.completion` object. */
export const encodeChatBody: BodyEncoder = (events, cost, ctx) => {
  let text: string | null = null;
  let refusal: string | null = null;
  let inRefusal = false;
  const cites = new Citations();
  let reasoning: string | null = null;
  /** Signed or encrypted reasoning blocks, given back as `reasoning_details` to replay. */
  const signed: ReasoningPart[] = [];
  let block = "";
  const calls = new Map<number, { id: string; name: string; args: string }>();
  let finish: FinishReason | undefined;
  for (const e of events) {
    switch (e.type) {
      case "text_start":
        inRefusal = e.refusal === true;
        if (!inRefusal) cites.blockStart();
        break;
      case "citation":
        if (!inRefusal) cites.add(e);
        break;
      case "text_delta":
        if (inRefusal) refusal = (refusal ?? "") + e.delta;
        else {
          text = (text ?? "") + e.delta;
          cites.text(e.delta);
        }
        break;
      case "reasoning_start":
        block = "";
        break;
      case "reasoning_delta":
        reasoning = (reasoning ?? "") + e.delta;
        block += e.delta;
        break;
      case "reasoning_signature":
        signed.push({ type: "reasoning", text: block, signature: e.signature });
        break;
      case "reasoning_redacted":
        signed.push({ type: "reasoning", text: "", redacted: e.data });
        break;
      case "tool_call_start":
        calls.set(e.index, { id: e.id, name: e.name, args: "" });
        break;
      case "tool_call_delta": {
        const c = calls.get(e.index);
        if (c) c.args += e.json;
        break;
      }
      case "finish":
        finish = e.reason;
        break;
      case "error":
        // The pipeline answers a failed non-streaming call with the error envelope.
        throw e.error;
    }
  }
  // Content is a string (the spec's chat completion object), "" for an answer with no text
  // (a transcoded upstream sends no text block then). A turn of tool calls alone and a
  // refusal have null content, as OpenAI writes them (Claude may open an empty text block
  // before its calls).
  const content = (text ?? "") === "" && (calls.size > 0 || refusal !== null) ? null : text ?? "";
  const message: Obj = { role: "assistant", content, refusal };
  if (cites.list.length > 0) message.annotations = cites.list;
  if (!reasoningExcluded(ctx.clientBody)) {
    if (reasoning !== null) message.reasoning = reasoning;
    // As OpenRouter gives them: a client that sends them back keeps Claude's thinking on
    // across tool calls (Anthropic wants the last tool turn's signed thinking replayed).
    const details = detailsOut(signed, TO_CLIENT);
    if (details.length > 0) message.reasoning_details = details;
  }
  if (calls.size > 0) {
    message.tool_calls = [...calls.values()].map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.args },
    }));
  }
  const reason = finish ?? (calls.size > 0 ? "tool_calls" : "stop");
  return {
    id: ctx.id,
    object: "chat.completion",
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishToChat(reason) }],
    usage: usageToChat(cost),
  };
};

/** Events that carry content: a chunk holding one of these is not a trailing usage chunk. */
function carriesContent(events: readonly Event[]): boolean {
  for (const e of events) {
    switch (e.type) {
      case "text_start":
      case "text_delta":
      case "reasoning_start":
      case "reasoning_delta":
      case "reasoning_signature":
      case "reasoning_redacted":
      case "tool_call_start":
      case "tool_call_delta":
        return true;
    }
  }
  return false;
}

/**
 * Same-protocol streaming: each upstream event goes out as its raw text — but for the chunk's
 * `id` and `model` values, edited in place to the generation id and the slug — except
 * - the usage chunk, held back (with anything after it, `[DONE]` included) and released by
 *   `end` with `cost` and `cost_details` added — the one chunk re-serialised;
 * - when the client asked for no usage chunk, a finish chunk that only finishes: held too,
 *   and `end` puts the usage on it in place of an upstream usage chunk with `choices: []`
 *   (without one to hold, `end` writes a finish chunk with the usage);
 * - an upstream in-stream error chunk (or a malformed one), dropped with everything after it:
 *   `end` writes the gateway's own error chunk (sanitised message, cost) and no `[DONE]`.
 * A usage chunk that carries content too (vendors reporting usage on every chunk) is
 * forwarded at once; `end` then writes a usage chunk of its own.
 */
export function createChatPassThrough(ctx: EncodeContext): PassThroughEncoder {
  let held: SseEvent | undefined;
  let tail = "";
  let doneSeen = false;
  /** After an error only the gateway's error chunk goes out (from `end`). */
  let failed = false;
  const usageOnFinish = !wantsUsageChunk(ctx.clientBody);
  /** The last finish-only chunk, while nothing but usage has followed it. */
  let finishHeld: SseEvent | undefined;
  /** The last finish reason seen, as chat spells it. */
  let finished: string | undefined;
  /** Our own final chunks carry the generation id and the requested slug (spec: chat
   * completion `id` is the generation id, `model` the slug). */
  const head: ChunkHead = { id: ctx.id, created: ctx.created, model: ctx.model };
  /** The upstream's id and model, replaced in each forwarded chunk by an in-place edit. */
  const rewrite = headRewriter(ctx);

  const release = (): string => {
    const out = (finishHeld ? finishHeld.raw : "") + (held ? held.raw : "") + tail;
    finishHeld = held = undefined;
    tail = "";
    return out;
  };

  return {
    raw(ev: SseEvent, events: readonly Event[]): string {
      if (failed) return "";
      if (ev.data === "[DONE]") {
        doneSeen = true;
        tail += ev.raw;
        return "";
      }
      let usage = false;
      let finish = false;
      for (const e of events) {
        if (e.type === "error") {
          failed = true;
          return "";
        }
        if (e.type === "usage") usage = true;
        if (e.type === "finish") {
          finish = true;
          finished = finishToChat(e.reason);
        }
      }
      const content = carriesContent(events);
      if (usageOnFinish && !usage && !content) {
        // The decoder reads one choice: a later choice's finish (`n` > 1) is seen here. And a
        // chunk without choices (Azure's content-filter report) is one the client, which
        // asked for no usage chunk, may not expect.
        if (EMPTY_CHOICES.test(ev.data)) return "";
        if (!finish && FINISHES.test(ev.data)) finish = true;
      }
      ev = rewrite(ev);
      if (usage && !content) {
        // A usage report repeated (later reports refine earlier ones, as the meter merges
        // them) replaces a held one that finishes nothing: released, it went out with the held
        // finish chunk, and the end added a second finish chunk to carry the usage.
        if (usageOnFinish && held !== undefined && !FINISHES.test(held.data)) {
          held = ev;
          return "";
        }
        // A held finish chunk stays, to carry this usage; an earlier usage chunk goes out.
        const out = held ? release() : "";
        held = ev;
        return out;
      }
      if (usageOnFinish && finish && !content && held === undefined && tail === "") {
        const out = release();
        finishHeld = ev;
        return out;
      }
      if (finishHeld === undefined && held === undefined && tail === "") return ev.raw;
      if (!content && held !== undefined) {
        tail += ev.raw;
        return "";
      }
      return release() + ev.raw;
    },

    end(cost: CostReport, error?: Event & { type: "error" }): string {
      if (error) return errorChunk(head, error.error, cost);
      let out: string;
      if (usageOnFinish && !(held && hasChoices(held))) {
        // The usage goes on the finish chunk: the held one, or one of ours.
        const usage = (held && usageWithCost(held, cost)) ?? usageToChat(cost);
        out = (finishHeld && finishWithUsage(finishHeld, usage, ctx)) ??
          (finishHeld ? finishHeld.raw : "") + usageChunk(head, usage, finished ?? "stop");
      } else {
        const edited = held && withCost(held, cost, ctx);
        out = (finishHeld ? finishHeld.raw : "") +
          (edited ?? (held ? held.raw : "") + usageChunk(head, usageToChat(cost)));
      }
      out += tail;
      finishHeld = held = undefined;
      tail = "";
      return doneSeen ? out : out + DONE;
    },
  };
}

/**
 * Puts the generation id and the requested slug in place of the upstream's chunk `id` and
 * `model`, editing the text in place so every other byte stays as sent. Only the first
 * `"id": …` / `"model": …` holding exactly the upstream's value is replaced, so tool call ids
 * (which come first in key-sorted chunks) stay as they are. The upstream's values are learnt
 * by parsing a chunk the current edit misses — the first one, or one where the upstream
 * changed them (Azure's content-filter chunk has `"id": ""`, and ids may change mid-stream) —
 * so a usual stream is parsed once per chunk in all, by the decoder.
 */
function headRewriter(ctx: EncodeContext): (ev: SseEvent) => SseEvent {
  const fields = [
    { name: "id", ours: JSON.stringify(ctx.id), needle: "", re: undefined as RegExp | undefined },
    {
      name: "model",
      ours: JSON.stringify(ctx.model),
      needle: "",
      re: undefined as RegExp | undefined,
    },
  ];
  return (ev) => {
    let raw = ev.raw;
    let chunk: Obj | undefined;
    let parsed = false;
    for (const f of fields) {
      // Fast path: the upstream's compact `"id":"…"`, found and spliced without a regex.
      if (f.needle !== "") {
        const at = raw.indexOf(f.needle);
        if (at >= 0) {
          raw = raw.slice(0, at) + `"${f.name}":` + f.ours + raw.slice(at + f.needle.length);
          continue;
        }
      }
      let hit = false;
      const put = (_: string, key: string) => {
        hit = true;
        return key + f.ours;
      };
      if (f.re) raw = raw.replace(f.re, put);
      if (hit || !raw.includes(`"${f.name}"`)) continue;
      if (!parsed) {
        parsed = true;
        chunk = parseObject(ev.data);
      }
      const value = chunk?.[f.name];
      if (typeof value !== "string") continue;
      f.needle = `"${f.name}":${JSON.stringify(value)}`;
      f.re = fieldPattern(f.name, value);
      raw = raw.replace(f.re, put);
    }
    // `data` keeps the upstream's values: only `withCost` reads it, and sets ours itself.
    return raw === ev.raw ? ev : { ...ev, raw };
  };
}

function fieldPattern(field: string, value: string): RegExp {
  const literal = JSON.stringify(value).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`("${field}"\\s*:\\s*)${literal}`);
}

/** A chunk with at least one choice (vendors that put usage on a content or finish chunk). */
function hasChoices(ev: SseEvent): boolean {
  const chunk = parseObject(ev.data);
  return Array.isArray(chunk?.choices) && chunk.choices.length > 0;
}

/** The usage object of a held usage chunk, `cost` and `cost_details` added. */
function usageWithCost(ev: SseEvent, cost: CostReport): Obj | undefined {
  const usage = parseObject(ev.data)?.usage;
  return usage !== null && typeof usage === "object" ? addCost(usage as Obj, cost) : undefined;
}

/** A held finish chunk re-serialised with the usage on it, and our id and slug. */
function finishWithUsage(ev: SseEvent, usage: Obj, ctx: EncodeContext): string | undefined {
  const chunk = parseObject(ev.data);
  if (!chunk) return undefined;
  if (typeof chunk.id === "string") chunk.id = ctx.id;
  if (typeof chunk.model === "string") chunk.model = ctx.model;
  chunk.usage = usage;
  return sseFrame(JSON.stringify(chunk));
}

/** The held usage chunk re-serialised with `cost` and `cost_details` in its usage. */
function withCost(ev: SseEvent, cost: CostReport, ctx: EncodeContext): string | undefined {
  try {
    const chunk = JSON.parse(ev.data) as Obj;
    const usage = chunk.usage;
    if (usage === null || typeof usage !== "object") return undefined;
    // Assigning existing keys keeps their order: the chunk reads as the upstream wrote it.
    if (typeof chunk.id === "string") chunk.id = ctx.id;
    if (typeof chunk.model === "string") chunk.model = ctx.model;
    chunk.usage = addCost(usage as Obj, cost);
    return sseFrame(JSON.stringify(chunk));
  } catch {
    return undefined;
  }
}

/** Same-protocol non-streaming: the upstream body, `id` and `model` set, cost added to usage. */
export const chatPassThroughBody: PassThroughBody = (body, cost, ctx) => {
  const usage = body.usage;
  return {
    ...body,
    id: ctx.id,
    model: ctx.model,
    usage: usage !== null && typeof usage === "object"
      ? addCost(usage as Obj, cost)
      : usageToChat(cost),
  };
};

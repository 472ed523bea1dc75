/**
 * openai-chat upstream → internal events, for streams (`createChatDecoder`) and whole bodies
 * (`decodeChatBody`), through the same bookkeeping so both give the same sequence.
 *
 * Chat has no block boundaries, so they are inferred here, once: a text or reasoning block
 * opens on its first non-empty delta and closes when the other kind starts, when a tool call
 * starts, or at the finish; tool calls open on first sight of their index and all close at
 * the finish. Each SSE event is parsed with one `JSON.parse`; upstream schemas are read
 * leniently (only the fields used, any of them may be missing or null).
 */
import { inventedCallId } from "../tool_ids.ts";
import { sealDetail } from "./reasoning_details.ts";
import type { Emit, StreamDecoder } from "../codec.ts";
import type { SseEvent } from "../sse.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import { decodeChatStreamError } from "./errors.ts";
import { finishFromChat } from "./finish_reason.ts";
import { usageFromChat } from "./usage.ts";
import { type Obj, obj, str } from "../json.ts";
import { customInputEnd, customInputPiece } from "../custom_tool_input.ts";

/** A tool call being streamed; `index` is ours (dense, in order of first sight). */
interface ToolSlot {
  index: number;
  id?: string;
  /** A custom tool's call: its free-form input goes out as JSON (custom_tool_input.ts). */
  custom?: boolean;
  /** Some of its arguments were emitted. */
  any?: boolean;
}

/** The upstream index the deprecated `function_call` is kept under (no real index is negative). */
const LEGACY_CALL = -1;

/** Block bookkeeping shared by the stream and body decoders. */
class ChatFold {
  started = false;
  /** The first chunk's id: the fast path trusts only chunks of the same stream. */
  upstreamId?: string;
  /** `finish` was emitted: later content is ignored, later usage is not. */
  finished = false;
  /** An `error` was emitted: only usage may follow. */
  failed = false;
  #text = false;
  /** The open text block is a refusal. */
  #refusal = false;
  /** The length of the message's content so far, and where the open text block began in it. */
  #contentLength = 0;
  #blockAt = 0;
  #reasoning = false;
  #open: ToolSlot[] = [];
  #byUpstream = new Map<number, ToolSlot>();
  #last: ToolSlot | undefined;
  #next = 0;

  get terminal(): boolean {
    return this.finished || this.failed;
  }

  start(id: unknown, model: unknown, emit: Emit): void {
    if (this.started) return;
    this.started = true;
    if (typeof id === "string") this.upstreamId = id;
    const e: { type: "response_start"; id?: string; model?: string } = { type: "response_start" };
    if (typeof id === "string") e.id = id;
    if (typeof model === "string") e.model = model;
    emit(e);
  }

  /** A delta (stream) or a message (body): reasoning first, then text, then tool calls. */
  delta(d: Obj, emit: Emit): void {
    const reasoning = str(d.reasoning_content) ?? str(d.reasoning);
    if (reasoning) this.reasoning(reasoning, emit);
    if (Array.isArray(d.reasoning_details)) this.reasoningDetails(d.reasoning_details, emit);
    const text = str(d.content);
    if (text) this.text(text, emit);
    const refusal = str(d.refusal);
    if (refusal) this.text(refusal, emit, true);
    if (Array.isArray(d.annotations)) this.annotations(d.annotations, emit);
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls) {
        const o = obj(tc);
        if (o) this.toolCall(o, emit);
      }
    }
    // The deprecated `function_call` (one call, no id, finish `function_call`): a tool call,
    // kept apart from `tool_calls` indices, so that a `tool_calls` finish has its call.
    // An empty one is a stub, no call: servers on the Go SDK serialise every field, and send
    // `function_call: {name: "", arguments: ""}` on every chunk, beside text and tool calls.
    const fc = obj(d.function_call);
    if (fc && (str(fc.name) || str(fc.arguments))) {
      this.toolCall({ index: LEGACY_CALL, function: fc }, emit);
    }
  }

  /** Text, or (`refusal`) the model's refusal: a block of its own, told apart at its start. */
  text(delta: string, emit: Emit, refusal = false): void {
    if (this.#reasoning) this.#endReasoning(emit);
    if (this.#text && this.#refusal !== refusal) this.#endText(emit);
    if (!this.#text) {
      this.#text = true;
      this.#refusal = refusal;
      this.#blockAt = this.#contentLength;
      emit(refusal ? { type: "text_start", refusal } : { type: "text_start" });
    }
    if (!refusal) this.#contentLength += delta.length;
    emit({ type: "text_delta", delta });
  }

  /**
   * `url_citation` annotations (OpenAI's search models, OpenRouter's web plugin): each a span
   * of the message's content, which the open text block holds (they come after the text).
   */
  annotations(list: unknown[], emit: Emit): void {
    if (!this.#text || this.#refusal) return;
    const length = this.#contentLength - this.#blockAt;
    for (const a of list) {
      const o = obj(a);
      if (o?.type !== "url_citation") continue;
      const u = obj(o.url_citation) ?? o;
      const url = str(u.url);
      if (!url) continue;
      const at = (v: unknown, or: number) => typeof v === "number" ? v - this.#blockAt : or;
      const start = at(u.start_index, 0);
      const end = at(u.end_index, length);
      if (start < 0 || end < start || end > length) continue;
      const title = str(u.title);
      emit(
        title
          ? { type: "citation", url, title, start, end }
          : { type: "citation", url, start, end },
      );
    }
  }

  reasoning(delta: string, emit: Emit): void {
    this.#openReasoning(emit);
    emit({ type: "reasoning_delta", delta });
  }

  /**
   * OpenRouter's `reasoning_details`: only signatures and encrypted reasoning are new here,
   * each sealed with the entry it came in, so that it can go back to OpenRouter as it was.
   * Either ends its block (a signature comes last in Claude's thinking block, an encrypted
   * entry is a block of its own): a block holds one of them, as a responses client's reasoning
   * item holds one `encrypted_content`, and later reasoning is a block of its own, not text
   * added to one already signed.
   */
  reasoningDetails(details: unknown[], emit: Emit): void {
    for (const d of details) {
      const o = obj(d);
      if (!o) continue;
      if (str(o.signature)) {
        this.#openReasoning(emit);
        emit({ type: "reasoning_signature", signature: sealDetail(o) });
        this.#endReasoning(emit);
      }
      if (o.type === "reasoning.encrypted" && str(o.data)) {
        this.#openReasoning(emit);
        emit({ type: "reasoning_redacted", data: sealDetail(o) });
        this.#endReasoning(emit);
      }
    }
  }

  toolCall(tc: Obj, emit: Emit): void {
    const upstream = typeof tc.index === "number" ? tc.index : undefined;
    const id = str(tc.id) || undefined;
    // A custom tool's call (OpenAI's) carries its name and free-form input in `custom`. Told by
    // its type where it has one: the Go SDK serialises both kinds, the other one empty.
    const custom = tc.type === "custom" ||
      (tc.type === undefined && !obj(tc.function) && obj(tc.custom) !== undefined);
    const fn = custom ? obj(tc.custom) : obj(tc.function) ?? obj(tc.custom);
    let slot = upstream === undefined ? this.#last : this.#byUpstream.get(upstream);
    // Some OpenAI-compatible vendors send every call with index 0 (or none), told apart only
    // by a new id; a new id is a new call.
    if (slot && id !== undefined && slot.id !== undefined && slot.id !== id) slot = undefined;
    if (!slot) {
      if (this.#text) this.#endText(emit);
      if (this.#reasoning) this.#endReasoning(emit);
      slot = {
        index: this.#next++,
        id,
        custom,
      };
      this.#open.push(slot);
      this.#byUpstream.set(upstream ?? slot.index, slot);
      emit({
        type: "tool_call_start",
        index: slot.index,
        id: id ?? inventedCallId(),
        name: str(fn?.name) ?? "",
      });
    }
    this.#last = slot;
    const args = str(fn?.arguments) ?? str(fn?.input);
    if (!args) return;
    const json = slot.custom ? customInputPiece(args, !slot.any) : args;
    slot.any = true;
    emit({ type: "tool_call_delta", index: slot.index, json });
  }

  finish(reason: string, emit: Emit): void {
    this.#closeAll(emit);
    this.finished = true;
    emit({ type: "finish", reason: finishFromChat(reason) });
  }

  usage(raw: unknown, emit: Emit): void {
    const usage = usageFromChat(raw);
    if (usage) emit({ type: "usage", usage });
  }

  fail(error: GatewayError, emit: Emit): void {
    this.failed = true;
    emit({ type: "error", error });
  }

  #openReasoning(emit: Emit): void {
    if (this.#text) this.#endText(emit);
    if (!this.#reasoning) {
      this.#reasoning = true;
      emit({ type: "reasoning_start" });
    }
  }

  #endText(emit: Emit): void {
    this.#text = false;
    emit({ type: "text_end" });
  }

  #endReasoning(emit: Emit): void {
    this.#reasoning = false;
    emit({ type: "reasoning_end" });
  }

  #closeAll(emit: Emit): void {
    if (this.#text) this.#endText(emit);
    if (this.#reasoning) this.#endReasoning(emit);
    for (const slot of this.#open) {
      if (slot.custom) {
        emit({ type: "tool_call_delta", index: slot.index, json: customInputEnd(!!slot.any) });
      }
      emit({ type: "tool_call_end", index: slot.index });
    }
    this.#open = [];
  }
}

/**
 * What the choices after the first generated (chat's `n`), for the meter alone: the client
 * reads those choices from the upstream's own body, and the internal events carry the first.
 */
function otherChoices(c: Obj, key: "delta" | "message", emit: Emit): void {
  const choices = c.choices;
  if (!Array.isArray(choices)) return;
  for (const ch of choices) {
    const o = obj(ch);
    if (!o || typeof o.index !== "number" || o.index === 0) continue;
    const d = obj(o[key]);
    if (!d) continue;
    const parts = [str(d.reasoning_content) ?? str(d.reasoning), str(d.content), str(d.refusal)];
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls) {
        const f = obj(obj(tc)?.function);
        parts.push(str(f?.arguments));
      }
    }
    for (const delta of parts) if (delta) emit({ type: "other_choice_delta", delta });
  }
}

/** The first choice: the one the internal events carry (see `otherChoices`). */
function firstChoice(c: Obj): Obj | undefined {
  const choices = c.choices;
  if (!Array.isArray(choices)) return undefined;
  for (const ch of choices) {
    const o = obj(ch);
    if (o && (o.index === 0 || o.index === undefined)) return o;
  }
  return undefined;
}

/** Decoder of one openai-chat SSE stream. */
export function createChatDecoder(): StreamDecoder {
  const fold = new ChatFold();
  let done = false;

  function chunk(c: Obj, emit: Emit): void {
    if (c.error != null) {
      if (!fold.failed) fold.fail(decodeChatStreamError(c.error), emit);
      if (c.usage != null) fold.usage(c.usage, emit);
      return;
    }
    if (fold.failed) {
      if (c.usage != null) fold.usage(c.usage, emit);
      return;
    }
    fold.start(c.id, c.model, emit);
    // Other choices go on after the first one's finish.
    otherChoices(c, "delta", emit);
    if (!fold.finished) {
      const choice = firstChoice(c);
      if (choice) {
        const delta = obj(choice.delta);
        if (delta) fold.delta(delta, emit);
        const reason = str(choice.finish_reason);
        if (reason) fold.finish(reason, emit);
      }
    }
    if (c.usage != null) fold.usage(c.usage, emit);
  }

  return {
    get complete() {
      return done;
    },
    event(ev: SseEvent, emit: Emit): void {
      if (done) return;
      // Chat streams are unnamed; a named event other than `error` is some extension.
      if (ev.event !== undefined && ev.event !== "message" && ev.event !== "error") return;
      if (ev.data === "[DONE]") {
        done = true;
        // A stream the upstream closed properly without a finish_reason: a natural stop.
        if (!fold.terminal) fold.finish("stop", emit);
        return;
      }
      // Most chunks of a stream are one piece of text in OpenAI's exact layout: those are
      // read by one anchored pattern instead of a parse of the whole chunk.
      if (fold.started && !fold.terminal) {
        const m = PLAIN_TEXT_CHUNK.exec(ev.data);
        // The pattern admits what JSON does not (a raw control character, a bad escape): such
        // a text is left to the full parse, which reports the chunk malformed, not a throw.
        const text = m && m[1] === fold.upstreamId ? jsonString(m[2]) : undefined;
        if (text !== undefined) {
          fold.delta({ content: text }, emit);
          return;
        }
      }
      let c: unknown;
      try {
        c = JSON.parse(ev.data);
      } catch {
        if (!fold.failed) fold.fail(new GatewayError(502, "upstream sent a malformed chunk"), emit);
        return;
      }
      const o = obj(c);
      if (o) chunk(ev.event === "error" && o.error === undefined ? { error: o } : o, emit);
    },
    end(emit: Emit): void {
      if (!fold.terminal) fold.fail(new GatewayError(502, "upstream stream ended early"), emit);
    },
  };
}

/**
 * A chunk carrying only `delta.content`, no finish reason, no usage, as OpenAI (and most
 * compatible servers) lay it out. Group 1 is the chunk id (it must be the stream's: a
 * changed id goes the slow way), group 2 the JSON-escaped text.
 */
const PLAIN_TEXT_CHUNK = new RegExp(
  '^\\{"id":"([^"\\\\]*)","object":"chat\\.completion\\.chunk","created":\\d+,"model":"[^"\\\\]*",' +
    '(?:"service_tier":(?:null|"[^"\\\\]*"),)?(?:"system_fingerprint":(?:null|"[^"\\\\]*"),)?' +
    '"choices":\\[\\{"index":0,"delta":\\{"content":"((?:[^"\\\\]|\\\\.)*)"\\},' +
    '(?:"logprobs":null,)?"finish_reason":null\\}\\](?:,"usage":null)?' +
    '(?:,"obfuscation":"[^"\\\\]*")?\\}$',
);

/** The text of a JSON string's inside, or undefined where it is not valid JSON. */
function jsonString(inside: string): string | undefined {
  if (inside === "") return "";
  try {
    return JSON.parse(`"${inside}"`);
  } catch {
    return undefined;
  }
}

/** Decoder of a non-streaming openai-chat body: the same events a stream of it would give. */
export function decodeChatBody(body: unknown, emit: Emit): void {
  const fold = new ChatFold();
  const b = obj(body);
  if (!b) return fold.fail(new GatewayError(502, "upstream returned an invalid body"), emit);
  if (b.error != null) {
    fold.fail(decodeChatStreamError(b.error), emit);
    if (b.usage != null) fold.usage(b.usage, emit);
    return;
  }
  fold.start(b.id, b.model, emit);
  const choice = firstChoice(b);
  if (!choice) {
    fold.fail(new GatewayError(502, "upstream returned no choices"), emit);
  } else {
    const message = obj(choice.message);
    if (message) fold.delta(withToolIndices(message), emit);
    fold.finish(str(choice.finish_reason) ?? "stop", emit);
  }
  otherChoices(b, "message", emit);
  if (b.usage != null) fold.usage(b.usage, emit);
}

/** A body's tool calls carry no `index`; give them their position so none merge. */
function withToolIndices(message: Obj): Obj {
  const calls = message.tool_calls;
  if (!Array.isArray(calls)) return message;
  return {
    ...message,
    tool_calls: calls.map((t, index) => {
      const o = obj(t);
      return o && o.index === undefined ? { ...o, index } : t;
    }),
  };
}

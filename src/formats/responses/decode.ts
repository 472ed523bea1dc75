/**
 * openai-responses upstream → internal events, streaming and whole-body alike
 * (https://platform.openai.com/docs/api-reference/responses-streaming).
 *
 * | upstream                                                   | internal                      |
 * |------------------------------------------------------------|-------------------------------|
 * | response.created                                           | response_start {id, model}    |
 * | content_part.added / first output_text.delta of a message  | text_start                    |
 * | output_text.delta, refusal.delta                           | text_delta                    |
 * | content_part.added refusal / first refusal.delta of a part | text_start {refusal}          |
 * | output_text.done, content_part.done, output_item.done      | text_end (the first of them)  |
 * | output_text.annotation.added url_citation                  | citation                      |
 * | output_item.added function_call / custom_tool_call         | tool_call_start {index, …}    |
 * | function_call_arguments.delta, custom_tool_call_input.delta| tool_call_delta (custom: JSON)|
 * | output_item.done of that call                              | tool_call_end                 |
 * | output_item.added reasoning                                | reasoning_start               |
 * | reasoning_summary_text.delta (parts joined by "\n\n")      | reasoning_delta               |
 * | output_item.done reasoning with encrypted_content          | reasoning_redacted, then end  |
 * | response.completed / response.incomplete                   | usage, finish                 |
 * | error, response.failed                                     | error (then usage, if any)    |
 *
 * A tool call's `index` counts the calls of the response (0, 1, …), its `id` is the
 * `call_id` the client answers with. A finished `web_search_call` item is a `web_search`
 * event; items of other built-in tools carry nothing for other formats and are skipped, as
 * are unknown event types. Each event's JSON is
 * parsed once. Providers that send a whole item only in its `.done` event (no deltas) are
 * read from that item.
 */
import { inventedCallId } from "../tool_ids.ts";
import type { Event } from "../../events/event.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import type { BodyDecoder, Emit, StreamDecoder } from "../codec.ts";
import type { SseEvent } from "../sse.ts";
import { decodeResponsesStreamError } from "./errors.ts";
import { finishFromResponses } from "./finish_reason.ts";
import { usageFromResponses, usageOfResponse } from "./usage.ts";
import { type Obj, obj, str } from "../json.ts";
import { customInputEnd, customInputJson, customInputPiece } from "../custom_tool_input.ts";

/** What the decoder tracks per output item, by `output_index`. */
interface ItemState {
  kind: "message" | "tool" | "reasoning";
  /** Tool calls: the internal index. */
  index: number;
  /** Message: a text block is open. Reasoning and tools: the block is not yet ended. */
  open: boolean;
  /** Some content of this item (of its current part, for messages) has been emitted. */
  streamed: boolean;
  /** Message: any text emitted for the item at all. */
  any: boolean;
  /** Message: the open part is a refusal. */
  refusal?: boolean;
  /** Message: the open part's text so far (an annotation's span must lie within it). */
  length?: number;
  /** Tool: a custom tool's call, its free-form input sent as JSON (custom_tool_input.ts). */
  custom?: boolean;
}

const TOOL_ITEMS = new Set(["function_call", "custom_tool_call"]);

export function createResponsesDecoder(): StreamDecoder {
  const items = new Map<number, ItemState>();
  let started = false;
  let done = false;
  /** `response.completed` or `.incomplete`: the upstream has nothing more to say. */
  let complete = false;
  /** An `error` event ended the stream: a `response.failed` after it may still bring usage. */
  let usageMayFollow = false;
  let tools = 0;

  const start = (emit: Emit, r: Obj | undefined) => {
    if (started) return;
    started = true;
    const e: Event & { type: "response_start" } = { type: "response_start" };
    const id = str(r?.id);
    const model = str(r?.model);
    if (id) e.id = id;
    if (model) e.model = model;
    emit(e);
  };

  const fail = (emit: Emit, error: GatewayError, usage?: unknown) => {
    done = true;
    emit({ type: "error", error });
    const u = usageFromResponses(usage);
    if (u) emit({ type: "usage", usage: u });
  };

  /** After an `error` event, the usage of the response that closes the stream, if any. */
  const lateUsage = (ev: SseEvent, emit: Emit) => {
    let d: Obj | undefined;
    try {
      d = obj(JSON.parse(ev.data));
    } catch {
      return;
    }
    const type = str(d?.type) ?? ev.event;
    if (
      type !== "response.failed" && type !== "response.completed" && type !== "response.incomplete"
    ) {
      return;
    }
    usageMayFollow = false;
    const u = usageOfResponse(obj(d?.response));
    if (u) emit({ type: "usage", usage: u });
  };

  /** The item an event refers to; an index never announced is taken to be a message. */
  const itemAt = (d: Obj): ItemState => {
    const i = typeof d.output_index === "number" ? d.output_index : -1;
    let st = items.get(i);
    if (!st) {
      st = { kind: "message", index: -1, open: false, streamed: false, any: false };
      items.set(i, st);
    }
    return st;
  };

  const closeText = (st: ItemState, emit: Emit) => {
    if (st.kind === "message" && st.open) {
      st.open = false;
      emit({ type: "text_end" });
    }
  };

  /** Text of the item's open part; a refusal (`refusal`) is a block of its own. */
  const text = (st: ItemState, delta: string, emit: Emit, refusal = false) => {
    if (st.open && !!st.refusal !== refusal && (st.streamed || delta !== "")) closeText(st, emit);
    if (!st.open) {
      st.open = true;
      st.streamed = false;
      st.refusal = refusal;
      st.length = 0;
      emit(refusal ? { type: "text_start", refusal } : { type: "text_start" });
    }
    if (delta === "") return;
    st.streamed = true;
    st.any = true;
    st.length = (st.length ?? 0) + delta.length;
    emit({ type: "text_delta", delta });
  };

  const added = (d: Obj, emit: Emit) => {
    const item = obj(d.item);
    if (!item) return;
    const i = typeof d.output_index === "number" ? d.output_index : items.size;
    const type = item.type;
    if (type === "message") {
      items.set(i, { kind: "message", index: -1, open: false, streamed: false, any: false });
    } else if (typeof type === "string" && TOOL_ITEMS.has(type)) {
      const st: ItemState = {
        kind: "tool",
        index: tools++,
        open: true,
        streamed: false,
        any: false,
        custom: type === "custom_tool_call",
      };
      items.set(i, st);
      emit({
        type: "tool_call_start",
        index: st.index,
        id: str(item.call_id) ?? str(item.id) ?? inventedCallId(),
        name: str(item.name) ?? "",
      });
      const args = str(item.arguments) ?? str(item.input);
      if (args) toolPiece(st, args, emit);
    } else if (type === "reasoning") {
      items.set(i, { kind: "reasoning", index: -1, open: true, streamed: false, any: false });
      emit({ type: "reasoning_start" });
    }
  };

  const itemDone = (d: Obj, emit: Emit) => {
    const item = obj(d.item);
    const i = typeof d.output_index === "number" ? d.output_index : -1;
    const st = items.get(i);
    if (!item) return;
    if (!st) {
      // An item announced only by its `.done` (some compatible providers).
      const isTool = TOOL_ITEMS.has(String(item.type));
      emitItem(item, isTool ? tools++ : -1, emit);
      return;
    }
    switch (st.kind) {
      case "message":
        if (!st.any) {
          if (st.open) {
            // Text the stream opened and never filled: the item's own text goes into that
            // block, not a second one (an empty one is refused by Anthropic when sent back).
            const whole = (Array.isArray(item.content) ? item.content : [])
              .map((p) => partText(obj(p)) ?? "").join("");
            if (whole !== "") emit({ type: "text_delta", delta: whole });
          } else emitMessageContent(item, emit);
        }
        closeText(st, emit);
        st.any = true;
        return;
      case "tool":
        if (!st.open) return;
        if (!st.streamed) {
          const args = str(item.arguments) ?? str(item.input);
          if (args) toolPiece(st, args, emit);
        }
        endTool(st, emit);
        return;
      case "reasoning": {
        if (!st.open) return;
        if (!st.streamed) {
          const summary = summaryText(item);
          if (summary) emit({ type: "reasoning_delta", delta: summary });
        }
        const enc = str(item.encrypted_content);
        if (enc) emit({ type: "reasoning_redacted", data: enc });
        st.open = false;
        emit({ type: "reasoning_end" });
        return;
      }
      default: {
        const never: never = st.kind;
        throw new Error(`unknown item kind ${never}`);
      }
    }
  };

  /** A piece of a tool call's arguments (of a custom call's input, as its JSON). */
  const toolPiece = (st: ItemState, text: string, emit: Emit) => {
    const json = st.custom ? customInputPiece(text, !st.streamed) : text;
    st.streamed = true;
    emit({ type: "tool_call_delta", index: st.index, json });
  };

  const endTool = (st: ItemState, emit: Emit) => {
    st.open = false;
    if (st.custom) {
      emit({ type: "tool_call_delta", index: st.index, json: customInputEnd(st.streamed) });
    }
    emit({ type: "tool_call_end", index: st.index });
  };

  /** Ends whatever an abrupt `completed` left open, so that `finish` follows ended blocks. */
  const closeAll = (emit: Emit) => {
    for (const st of items.values()) {
      if (!st.open) continue;
      if (st.kind === "tool") {
        endTool(st, emit);
        continue;
      }
      st.open = false;
      if (st.kind === "message") emit({ type: "text_end" });
      else emit({ type: "reasoning_end" });
    }
  };

  const finished = (r: Obj | undefined, emit: Emit) => {
    closeAll(emit);
    done = true;
    const u = usageOfResponse(r);
    if (u) emit({ type: "usage", usage: u });
    const reason = str(obj(r?.incomplete_details)?.reason);
    emit({ type: "finish", reason: finishFromResponses(str(r?.status), reason, tools > 0) });
  };

  return {
    get complete() {
      return complete;
    },
    event(ev: SseEvent, emit: Emit): void {
      if (done) {
        if (usageMayFollow) lateUsage(ev, emit);
        return;
      }
      let d: Obj | undefined;
      try {
        d = obj(JSON.parse(ev.data));
      } catch {
        if (ev.data.trim() === "[DONE]") return;
        fail(emit, new GatewayError(502, "the model provider sent an unreadable event"));
        return;
      }
      if (!d) return;
      const type = str(d.type) ?? ev.event;
      if (type === "response.created" || type === "response.in_progress") {
        start(emit, obj(d.response));
        return;
      }
      if (type !== "error") start(emit, undefined);
      switch (type) {
        case "response.output_item.added":
          added(d, emit);
          return;
        case "response.content_part.added": {
          const st = itemAt(d);
          if (st.kind !== "message") return;
          closeText(st, emit);
          text(st, "", emit, obj(d.part)?.type === "refusal");
          return;
        }
        case "response.output_text.delta":
        case "response.refusal.delta": {
          const st = itemAt(d);
          const refusal = type === "response.refusal.delta";
          if (st.kind === "message") text(st, str(d.delta) ?? "", emit, refusal);
          return;
        }
        case "response.output_text.done":
        case "response.refusal.done":
        case "response.content_part.done": {
          const st = itemAt(d);
          if (st.kind !== "message" || !st.open) return;
          if (!st.streamed) {
            const full = str(d.text) ?? str(d.refusal) ?? partText(obj(d.part));
            if (full) text(st, full, emit, !!st.refusal);
          }
          closeText(st, emit);
          return;
        }
        case "response.output_item.done":
          itemDone(d, emit);
          return;
        case "response.output_text.annotation.added": {
          const st = itemAt(d);
          if (st.kind === "message" && st.open && !st.refusal) {
            // As a whole body's are: none past the part's text (its span would not be there).
            const c = citationOf(obj(d.annotation));
            if (c && c.end <= (st.length ?? 0)) emit(c);
          }
          return;
        }
        case "response.function_call_arguments.delta":
        case "response.custom_tool_call_input.delta": {
          const st = itemAt(d);
          const delta = str(d.delta);
          if (st.kind !== "tool" || !st.open || !delta) return;
          toolPiece(st, delta, emit);
          return;
        }
        case "response.function_call_arguments.done":
        case "response.custom_tool_call_input.done": {
          const st = itemAt(d);
          const full = str(d.arguments) ?? str(d.input);
          if (st.kind !== "tool" || !st.open || st.streamed || !full) return;
          toolPiece(st, full, emit);
          return;
        }
        case "response.reasoning_summary_part.added": {
          const st = itemAt(d);
          // One internal block per reasoning item: later summary parts follow a blank line.
          if (st.kind === "reasoning" && st.open && st.streamed) {
            emit({ type: "reasoning_delta", delta: "\n\n" });
          }
          return;
        }
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta": {
          const st = itemAt(d);
          const delta = str(d.delta);
          if (st.kind !== "reasoning" || !st.open || !delta) return;
          st.streamed = true;
          emit({ type: "reasoning_delta", delta });
          return;
        }
        case "response.completed":
        case "response.incomplete":
          complete = true;
          finished(obj(d.response), emit);
          return;
        case "response.failed": {
          const r = obj(d.response);
          fail(emit, decodeResponsesStreamError(r?.error), r?.usage);
          return;
        }
        case "error":
          // Older streams put code and message at the top level, newer ones under `error`.
          fail(emit, decodeResponsesStreamError(obj(d.error) ?? d));
          usageMayFollow = true;
          return;
        default:
          return; // vendors add event types: skipped, never an error
      }
    },

    end(emit: Emit): void {
      if (done) return;
      fail(
        emit,
        new GatewayError(502, "the model provider's stream ended before the response was complete"),
      );
    },
  };
}

function partText(part: Obj | undefined): string | undefined {
  return str(part?.text) ?? str(part?.refusal);
}

/**
 * A reasoning item's text: its summary parts, or where it has none its raw `reasoning_text`
 * content (gpt-oss and the open-weight servers give that instead; a stream of it comes as
 * `reasoning_text.delta`, read alike).
 */
function summaryText(item: Obj): string {
  const summary = joined(item.summary, "\n\n");
  return summary !== "" ? summary : joined(item.content, "");
}

function joined(parts: unknown, by: string): string {
  if (!Array.isArray(parts)) return "";
  return parts.map((p) => str(obj(p)?.text) ?? "").filter((t) => t !== "").join(by);
}

/** A message item's parts as text blocks (a refusal part as a refusal block). */
function emitMessageContent(item: Obj, emit: Emit): void {
  const content = Array.isArray(item.content) ? item.content : [];
  for (const p of content) {
    const t = partText(obj(p));
    // An empty part is no text block: Anthropic refuses an empty one when a client sends the
    // answer back.
    if (t === undefined || t === "") continue;
    emit(
      obj(p)?.type === "refusal" ? { type: "text_start", refusal: true } : { type: "text_start" },
    );
    emit({ type: "text_delta", delta: t });
    const annotations = obj(p)?.annotations;
    for (const a of Array.isArray(annotations) ? annotations : []) {
      const c = citationOf(obj(a));
      if (c && c.end <= t.length) emit(c);
    }
    emit({ type: "text_end" });
  }
}

/** A `url_citation` annotation (offsets within its part) as a citation event. */
function citationOf(a: Obj | undefined): (Event & { type: "citation" }) | undefined {
  const url = str(a?.url);
  if (a?.type !== "url_citation" || !url) return undefined;
  const start = typeof a.start_index === "number" ? a.start_index : 0;
  const end = typeof a.end_index === "number" ? a.end_index : start;
  if (start < 0 || end < start) return undefined;
  const title = str(a.title);
  return title
    ? { type: "citation", url, title, start, end }
    : { type: "citation", url, start, end };
}

/** One whole output item as the events a stream would have given. */
function emitItem(item: Obj, toolIndex: number, emit: Emit): void {
  switch (item.type) {
    case "message":
      emitMessageContent(item, emit);
      return;
    case "function_call":
    case "custom_tool_call": {
      emit({
        type: "tool_call_start",
        index: toolIndex,
        id: str(item.call_id) ?? str(item.id) ?? inventedCallId(),
        name: str(item.name) ?? "",
      });
      const json = item.type === "custom_tool_call"
        ? customInputJson(str(item.input) ?? "")
        : str(item.arguments);
      if (json) emit({ type: "tool_call_delta", index: toolIndex, json });
      emit({ type: "tool_call_end", index: toolIndex });
      return;
    }
    case "web_search_call": {
      // A search the upstream ran: formats with an item for it show it (billed from usage).
      const action = obj(item.action);
      const query = str(action?.query) ??
        (Array.isArray(action?.queries) ? str(action.queries[0]) : undefined);
      const sources = (Array.isArray(action?.sources) ? action.sources : []).flatMap((x) => {
        const url = str(obj(x)?.url);
        const title = str(obj(x)?.title);
        return url ? [title ? { url, title } : { url }] : [];
      });
      emit({
        type: "web_search",
        id: str(item.id) ?? `ws_${toolIndex}`,
        ...(query ? { query } : {}),
        ...(sources.length > 0 ? { sources } : {}),
      });
      return;
    }
    case "reasoning": {
      emit({ type: "reasoning_start" });
      const summary = summaryText(item);
      if (summary) emit({ type: "reasoning_delta", delta: summary });
      const enc = str(item.encrypted_content);
      if (enc) emit({ type: "reasoning_redacted", data: enc });
      emit({ type: "reasoning_end" });
      return;
    }
    default:
      return;
  }
}

/** A whole (non-streaming) response object → the events its stream would have given. */
export const decodeResponsesBody: BodyDecoder = (body, emit) => {
  const r = obj(body);
  if (!r) {
    emit({
      type: "error",
      error: new GatewayError(502, "the model provider sent an invalid answer"),
    });
    return;
  }
  const start: Event & { type: "response_start" } = { type: "response_start" };
  if (typeof r.id === "string") start.id = r.id;
  if (typeof r.model === "string") start.model = r.model;
  emit(start);
  if (r.status === "failed" || (obj(r.error) && r.status !== "completed")) {
    emit({ type: "error", error: decodeResponsesStreamError(r.error) });
    const u = usageOfResponse(r);
    if (u) emit({ type: "usage", usage: u });
    return;
  }
  let tools = 0;
  for (const raw of Array.isArray(r.output) ? r.output : []) {
    const item = obj(raw);
    if (!item) continue;
    if (TOOL_ITEMS.has(String(item.type))) emitItem(item, tools++, emit);
    else emitItem(item, -1, emit);
  }
  const u = usageOfResponse(r);
  if (u) emit({ type: "usage", usage: u });
  const reason = str(obj(r.incomplete_details)?.reason);
  emit({ type: "finish", reason: finishFromResponses(str(r.status), reason, tools > 0) });
};

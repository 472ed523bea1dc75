/**
 * Decoder of an anthropic-messages upstream: its SSE stream
 * (https://docs.anthropic.com/en/docs/build-with-claude/streaming) or its whole message
 * body, to internal events. One `JSON.parse` per event, but for plain text deltas (read
 * without one, see `quickTextDelta`) and `ping` (not parsed at all).
 *
 * A `server_tool_use` block of the web search becomes one `web_search` event (with its query)
 * when it closes; a text block's web citations (`citations_delta`, `citations`) become
 * `citation` events over the whole block, just before it ends; its result block and other types we do not model (web_fetch,
 * code execution, compaction, …) are skipped here: they reach a client only through
 * pass-through, which forwards raw text.
 */
import type { Event } from "../../events/event.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import type { BodyDecoder, Emit, StreamDecoder } from "../codec.ts";
import { isObject, parseObject } from "../json.ts";
import type { SseEvent } from "../sse.ts";
import { decodeMessagesStreamError } from "./errors.ts";
import { fromMessagesStopReason } from "./finish_reason.ts";
import { mergeRawUsage, type MessagesUsage, rawToUsage, readMessagesUsage } from "./usage.ts";
import type { RawMessagesUsage } from "./usage.ts";

/** What an open content block index turned into internally. */
type Block =
  /** `length`: the text so far (citations cover the whole block); `cites`: its web sources. */
  | { kind: "text"; length: number; cites: Cite[] }
  | { kind: "reasoning" }
  /** `json` says whether a non-empty input delta came; `initial` is input given at start. */
  | { kind: "tool"; index: number; json: boolean; initial: string }
  /** A hosted web search: its input (the query) collected until the block closes. */
  | { kind: "search"; id: string; input: string; initial: unknown };

/** A web page a text block cites. */
interface Cite {
  url: string;
  title?: string;
}

interface ContentBlock {
  type?: string;
  text?: string;
  citations?: unknown[];
  thinking?: string;
  signature?: string;
  data?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

interface StreamPayload {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: MessagesUsage | null };
  content_block?: ContentBlock;
  delta?: {
    type?: string;
    text?: string;
    thinking?: string;
    signature?: string;
    partial_json?: string;
    citation?: unknown;
    stop_reason?: string | null;
    stop_sequence?: string | null;
  };
  usage?: MessagesUsage | null;
  error?: unknown;
}

const malformed = () =>
  new GatewayError(502, "upstream provider sent a malformed stream event", {
    code: "PROVIDER_ERROR",
  });

const cutShort = () =>
  new GatewayError(502, "upstream provider stream ended before the message was complete", {
    code: "PROVIDER_ERROR",
  });

const TEXT_DELTA_HEAD = '{"type":"content_block_delta","index":';
const TEXT_DELTA_MID = ',"delta":{"type":"text_delta","text":"';
const TEXT_DELTA_TAIL = '"}}';
/** Characters a JSON string holds only escaped (or, for `"`, ends at): the full parse decides. */
// deno-lint-ignore no-control-regex -- control characters are exactly what it must find
const NOT_PLAIN = /["\\\u0000-\u001f]/;

/**
 * Most of a stream's events are text deltas in the one shape Anthropic writes them. Their
 * index and text are cut out of the data as it stands, without building the object; a text
 * that holds an escape, or any other shape (other key order, padding, other delta types),
 * returns undefined and takes the full `JSON.parse`, which alone judges malformed input.
 */
export function quickTextDelta(data: string): { index: number; text: string } | undefined {
  if (!data.startsWith(TEXT_DELTA_HEAD) || !data.endsWith(TEXT_DELTA_TAIL)) return undefined;
  const from = TEXT_DELTA_HEAD.length;
  let at = from;
  let index = 0;
  for (let c; at < data.length && (c = data.charCodeAt(at)) >= 48 && c <= 57; at++) {
    index = index * 10 + c - 48;
  }
  // 1–6 digits, no leading zero (JSON has none).
  if (at === from || at - from > 6 || (at - from > 1 && data.charCodeAt(from) === 48)) {
    return undefined;
  }
  const start = at + TEXT_DELTA_MID.length;
  const end = data.length - TEXT_DELTA_TAIL.length;
  // `end < start`: the quote that opens the text is the one the tail closes with.
  if (end < start || !data.startsWith(TEXT_DELTA_MID, at)) return undefined;
  const text = data.slice(start, end);
  return NOT_PLAIN.test(text) ? undefined : { index, text };
}

export function createMessagesDecoder(): StreamDecoder {
  const blocks = new Map<number, Block>();
  let tools = 0;
  let usage: RawMessagesUsage = {};
  let done = false; // finish or error emitted: the stream has its terminal event
  let failed = false;
  let stopped = false; // message_stop: the upstream has nothing more to say

  function closeBlock(i: number, b: Block, emit: Emit): void {
    blocks.delete(i);
    if (b.kind === "text") {
      for (const c of b.cites) emit({ type: "citation", ...c, start: 0, end: b.length });
      emit({ type: "text_end" });
    } else if (b.kind === "reasoning") emit({ type: "reasoning_end" });
    else if (b.kind === "search") {
      emit(searchEvent(b.id, b.input ? parseObject(b.input) : b.initial));
    } else {
      // A tool's input is always a JSON text: no delta (a tool without parameters) means {}.
      if (!b.json) emit({ type: "tool_call_delta", index: b.index, json: b.initial });
      emit({ type: "tool_call_end", index: b.index });
    }
  }

  function startBlock(i: number, cb: ContentBlock, emit: Emit): void {
    switch (cb.type) {
      case "text":
        blocks.set(i, {
          kind: "text",
          length: cb.text?.length ?? 0,
          cites: webCites(cb.citations),
        });
        emit({ type: "text_start" });
        if (cb.text) emit({ type: "text_delta", delta: cb.text });
        return;
      case "thinking":
        blocks.set(i, { kind: "reasoning" });
        emit({ type: "reasoning_start" });
        if (cb.thinking) emit({ type: "reasoning_delta", delta: cb.thinking });
        if (cb.signature) emit({ type: "reasoning_signature", signature: cb.signature });
        return;
      case "redacted_thinking":
        blocks.set(i, { kind: "reasoning" });
        emit({ type: "reasoning_start" });
        emit({ type: "reasoning_redacted", data: cb.data ?? "" });
        return;
      case "tool_use": {
        const index = tools++;
        const input = cb.input;
        const initial = typeof input === "object" && input !== null && Object.keys(input).length > 0
          ? JSON.stringify(input)
          : "{}";
        blocks.set(i, { kind: "tool", index, json: false, initial });
        emit({ type: "tool_call_start", index, id: cb.id ?? "", name: cb.name ?? "" });
        return;
      }
      case "server_tool_use":
        if (cb.name !== "web_search") return;
        blocks.set(i, { kind: "search", id: cb.id ?? "", input: "", initial: cb.input });
        return;
      default:
        return; // other server tool blocks and unknown types: pass-through only
    }
  }

  function delta(i: number, d: NonNullable<StreamPayload["delta"]>, emit: Emit): void {
    const b = blocks.get(i);
    if (!b) return;
    switch (d.type) {
      case "text_delta":
        if (b.kind === "text" && d.text) {
          b.length += d.text.length;
          emit({ type: "text_delta", delta: d.text });
        }
        return;
      case "citations_delta":
        if (b.kind === "text") b.cites.push(...webCites([d.citation]));
        return;
      case "thinking_delta":
        if (b.kind === "reasoning" && d.thinking) {
          emit({ type: "reasoning_delta", delta: d.thinking });
        }
        return;
      case "signature_delta":
        if (b.kind === "reasoning" && d.signature) {
          emit({ type: "reasoning_signature", signature: d.signature });
        }
        return;
      case "input_json_delta":
        if (b.kind === "tool" && d.partial_json) {
          b.json = true;
          emit({ type: "tool_call_delta", index: b.index, json: d.partial_json });
        } else if (b.kind === "search" && d.partial_json) b.input += d.partial_json;
        return;
      default:
        return; // future delta types
    }
  }

  function emitUsage(u: MessagesUsage | null | undefined, emit: Emit): void {
    if (typeof u !== "object" || u === null) return;
    usage = mergeRawUsage(usage, readMessagesUsage(u));
    emit({ type: "usage", usage: rawToUsage(usage) });
  }

  function finish(p: StreamPayload, emit: Emit): void {
    for (const [i, b] of blocks) closeBlock(i, b, emit);
    const reason = fromMessagesStopReason(p.delta?.stop_reason);
    if (reason === "stop_sequence") {
      emit({ type: "finish", reason, stopSequence: p.delta?.stop_sequence ?? null });
    } else {
      emit({ type: "finish", reason });
    }
    done = true;
  }

  function fail(error: GatewayError, emit: Emit): void {
    emit({ type: "error", error });
    done = true;
    failed = true;
  }

  return {
    get complete() {
      return stopped;
    },
    event(ev: SseEvent, emit: Emit): void {
      if (failed || ev.event === "ping") return;
      if (ev.event === "content_block_delta") {
        const quick = quickTextDelta(ev.data);
        if (quick !== undefined) {
          const b = blocks.get(quick.index);
          if (!done && b?.kind === "text" && quick.text) {
            b.length += quick.text.length;
            emit({ type: "text_delta", delta: quick.text });
          }
          return;
        }
      }
      let p: StreamPayload;
      try {
        p = JSON.parse(ev.data);
      } catch {
        return fail(malformed(), emit);
      }
      if (typeof p !== "object" || p === null) return fail(malformed(), emit);
      const type = p.type ?? ev.event;
      if (type === "message_stop") stopped = true;
      if (done && type !== "message_delta") return; // only usage may follow the finish
      switch (type) {
        case "message_start": {
          const m = p.message ?? {};
          emit({ type: "response_start", id: m.id, model: m.model });
          // `output_tokens` at message_start is a running count, not a result: keeping it
          // would make a stream cut right after it look like one with known (tiny) output.
          if (m.usage) emitUsage({ ...m.usage, output_tokens: undefined }, emit);
          return;
        }
        case "content_block_start":
          if (typeof p.index === "number" && p.content_block) {
            startBlock(p.index, p.content_block, emit);
          }
          return;
        case "content_block_delta":
          if (typeof p.index === "number" && p.delta) delta(p.index, p.delta, emit);
          return;
        case "content_block_stop": {
          const b = typeof p.index === "number" ? blocks.get(p.index) : undefined;
          if (b) closeBlock(p.index!, b, emit);
          return;
        }
        case "message_delta":
          emitUsage(p.usage, emit);
          if (!done) finish(p, emit);
          return;
        case "message_stop":
          if (!done) finish({}, emit);
          return;
        case "error":
          return fail(decodeMessagesStreamError(p), emit);
        default:
          return; // ping without an event line, and event types added later
      }
    },

    end(emit: Emit): void {
      if (done) return;
      fail(cutShort(), emit);
    },
  };
}

/** A whole (non-streaming) message body to the events its stream would have given. */
export const decodeMessagesBody: BodyDecoder = (body, emit) => {
  const m = (typeof body === "object" && body !== null ? body : {}) as {
    type?: string;
    id?: string;
    model?: string;
    content?: ContentBlock[];
    stop_reason?: string | null;
    stop_sequence?: string | null;
    usage?: MessagesUsage | null;
  };
  if (m.type === "error") {
    emit({ type: "error", error: decodeMessagesStreamError(m) });
    return;
  }
  emit({ type: "response_start", id: m.id, model: m.model });
  if (m.usage && typeof m.usage === "object") {
    emit({ type: "usage", usage: rawToUsage(readMessagesUsage(m.usage)) });
  }
  let tools = 0;
  for (const cb of Array.isArray(m.content) ? m.content : []) {
    for (const e of blockEvents(cb, tools)) emit(e);
    if (cb?.type === "tool_use") tools++;
  }
  const reason = fromMessagesStopReason(m.stop_reason);
  emit(
    reason === "stop_sequence"
      ? { type: "finish", reason, stopSequence: m.stop_sequence ?? null }
      : { type: "finish", reason },
  );
};

function blockEvents(cb: ContentBlock, toolIndex: number): Event[] {
  switch (cb?.type) {
    case "text": {
      const length = cb.text?.length ?? 0;
      return [
        { type: "text_start" },
        ...(cb.text ? [{ type: "text_delta", delta: cb.text } as const] : []),
        ...webCites(cb.citations).map((c) =>
          ({ type: "citation", ...c, start: 0, end: length }) as const
        ),
        { type: "text_end" },
      ];
    }
    case "thinking":
      return [
        { type: "reasoning_start" },
        ...(cb.thinking ? [{ type: "reasoning_delta", delta: cb.thinking } as const] : []),
        ...(cb.signature
          ? [{ type: "reasoning_signature", signature: cb.signature } as const]
          : []),
        { type: "reasoning_end" },
      ];
    case "redacted_thinking":
      return [
        { type: "reasoning_start" },
        { type: "reasoning_redacted", data: cb.data ?? "" },
        { type: "reasoning_end" },
      ];
    case "server_tool_use":
      return cb.name === "web_search" ? [searchEvent(cb.id ?? "", cb.input)] : [];
    case "tool_use": {
      const input = typeof cb.input === "object" && cb.input !== null ? cb.input : {};
      return [
        { type: "tool_call_start", index: toolIndex, id: cb.id ?? "", name: cb.name ?? "" },
        { type: "tool_call_delta", index: toolIndex, json: JSON.stringify(input) },
        { type: "tool_call_end", index: toolIndex },
      ];
    }
    default:
      return [];
  }
}

/**
 * The web pages among a text block's citations (`web_search_result_location`); citations of
 * documents, pages or search results the client supplied name no page other formats can link.
 */
function webCites(citations: unknown[] | undefined): Cite[] {
  const out: Cite[] = [];
  for (const c of Array.isArray(citations) ? citations : []) {
    if (!isObject(c) || c.type !== "web_search_result_location") continue;
    if (typeof c.url !== "string" || c.url === "") continue;
    out.push(
      typeof c.title === "string" && c.title ? { url: c.url, title: c.title } : { url: c.url },
    );
  }
  return out;
}

/** The event of a web search block, its query read from the block's input when it has one. */
function searchEvent(id: string, input: unknown): Event {
  const query = isObject(input) && typeof input.query === "string" ? input.query : undefined;
  return query === undefined ? { type: "web_search", id } : { type: "web_search", id, query };
}

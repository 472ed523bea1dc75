/**
 * Internal events to the messages format: the native SSE stream
 * (https://docs.anthropic.com/en/docs/build-with-claude/streaming), the message body, and the
 * same-protocol pass-through that forwards the upstream's own text.
 *
 * Content blocks do not interleave in this format, while internal tool calls may (chat
 * streams parallel calls by index): the encoder keeps one block open and buffers the
 * arguments of the other calls until their turn. Text or reasoning arriving while a call is
 * still open closes that call's block; arguments sent for it afterwards cannot be shown
 * (no upstream seen does this).
 */
import { anthropicToolId } from "../tool_ids.ts";
import type { CostReport, Event, FinishReason } from "../../events/event.ts";
import { mergeUsage, type Usage } from "../../events/usage.ts";
import type { GatewayError } from "../../http/gateway_error.ts";
import { errorBody } from "../../http/envelopes.ts";
import type {
  BodyEncoder,
  EncodeContext,
  PassThroughBody,
  PassThroughEncoder,
  StreamEncoder,
} from "../codec.ts";
import { isObject, parseObject } from "../json.ts";
import { sseFrame } from "../sse.ts";
import { toMessagesStopReason } from "./finish_reason.ts";
import { toMessagesUsage } from "./usage.ts";
import { asPromptTooLong } from "./errors.ts";

const frame = (type: string, data: unknown): string => sseFrame(JSON.stringify(data), type);

const PING = sseFrame('{"type":"ping"}', "ping");

/**
 * The in-stream error: `event: error` with the messages error envelope, and nothing after; a
 * context overflow in Anthropic's words, as before the stream (errors.ts).
 */
export function messagesErrorFrame(error: GatewayError): string {
  return frame("error", errorBody("messages", asPromptTooLong(error)));
}

/**
 * The usage a messages client is shown: what was billed and the cost. A passed-through usage
 * keeps the upstream's own figures; any of the four token counts it left out is filled in
 * from what was billed (the SDKs read them off the final message_delta, as the API sends it).
 */
function usageWithCost(cost: CostReport, upstream?: unknown): Record<string, unknown> {
  const own = typeof upstream === "object" && upstream !== null ? upstream : {};
  return { ...toMessagesUsage(cost.usage), ...own, cost: cost.cost, cost_details: cost.details };
}

interface ToolState {
  id: string;
  name: string;
  /** Arguments received while another block was open. */
  buffered: string;
  state: "pending" | "open" | "closed";
  ended: boolean;
}

type OpenBlock = { index: number; kind: "text" | "thinking" } | {
  index: number;
  kind: "tool";
  tool: ToolState;
};

export function createMessagesEncoder(ctx: EncodeContext): StreamEncoder {
  let started = false;
  let finished = false;
  let nextIndex = 0;
  let open: OpenBlock | null = null;
  const tools = new Map<number, ToolState>();
  const pending: ToolState[] = [];
  let usage: Usage = {};
  let reason: FinishReason | undefined;
  let stopSequence: string | null = null;
  let error: GatewayError | undefined;
  const cited = new CitedPages(ctx);

  function start(): string {
    if (started) return "";
    started = true;
    const message = {
      id: ctx.id,
      type: "message",
      role: "assistant",
      model: ctx.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // Input may still be unknown here (an openai-chat upstream reports usage last): the
      // gateway's own count then, and the final message_delta carries the upstream's figures.
      // No output yet, so no thinking part of it either (a final usage may start an answer
      // without content).
      usage: {
        ...toMessagesUsage(
          usage.input === undefined && ctx.promptTokens !== undefined
            ? { ...usage, input: ctx.promptTokens, reasoning: undefined }
            : { ...usage, reasoning: undefined },
        ),
        output_tokens: 0,
      },
    };
    return frame("message_start", { type: "message_start", message }) + PING;
  }

  function close(): string {
    if (!open) return "";
    const out = frame("content_block_stop", { type: "content_block_stop", index: open.index });
    if (open.kind === "tool") open.tool.state = "closed";
    open = null;
    return out;
  }

  function begin(kind: "text" | "thinking", block: Record<string, unknown>): string {
    const out = close();
    const index = nextIndex++;
    open = { index, kind };
    return out +
      frame("content_block_start", { type: "content_block_start", index, content_block: block });
  }

  function beginTool(tool: ToolState): string {
    const index = nextIndex++;
    open = { index, kind: "tool", tool };
    tool.state = "open";
    let out = frame("content_block_start", {
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: anthropicToolId(tool.id), name: tool.name, input: {} },
    });
    if (tool.buffered) out += jsonDelta(index, tool.buffered);
    tool.buffered = "";
    return out;
  }

  /** Opens waiting tool calls in turn while nothing else is open; `all` closes unended ones too. */
  function drainPending(all: boolean): string {
    let out = "";
    while (!open && pending.length > 0) {
      const tool = pending.shift()!;
      out += beginTool(tool);
      if (tool.ended || all) out += close();
    }
    return out;
  }

  /**
   * Another vendor's hosted search, shown as Anthropic shows its own: the call, then its
   * result block (the results themselves are in the answer's text).
   */
  function searchFrames(e: Event & { type: "web_search" }): string {
    const index = nextIndex;
    nextIndex += 2;
    return searchBlocks(e).map(([block, delta], i) =>
      frame("content_block_start", {
        type: "content_block_start",
        index: index + i,
        content_block: block,
      }) + (delta ? jsonDelta(index + i, delta) : "") +
      frame("content_block_stop", { type: "content_block_stop", index: index + i })
    ).join("");
  }

  function jsonDelta(index: number, json: string): string {
    return frame("content_block_delta", {
      type: "content_block_delta",
      index,
      delta: { type: "input_json_delta", partial_json: json },
    });
  }

  function blockDelta(delta: Record<string, unknown>): string {
    return frame("content_block_delta", { type: "content_block_delta", index: open!.index, delta });
  }

  const THINKING_BLOCK = { type: "thinking", thinking: "", signature: "" };

  function ending(cost: CostReport): string {
    if (error) return messagesErrorFrame(error);
    let out = start() + close() + drainPending(true);
    const search = cited.search(ctx.id);
    if (search) out += searchFrames(search);
    out += frame("message_delta", {
      type: "message_delta",
      delta: {
        stop_reason: toMessagesStopReason(reason ?? "stop"),
        stop_sequence: stopSequence,
      },
      usage: usageWithCost(cost),
    });
    return out + frame("message_stop", { type: "message_stop" });
  }

  return {
    event(e: Event): string {
      if (finished) return "";
      switch (e.type) {
        case "response_start":
          return ""; // message_start waits for the first usage or content: it carries input usage
        case "citation": // a web citation here needs Anthropic's own encrypted_index (event.ts)
          cited.add(e);
          return "";
        case "web_search":
          cited.searched = true;
          return start() + close() + searchFrames(e);
        case "usage":
          usage = mergeUsage(usage, e.usage);
          return error ? "" : start();
        case "text_start":
          return start() + begin("text", { type: "text", text: "" });
        case "text_delta": {
          const out = start() +
            (open?.kind === "text" ? "" : begin("text", { type: "text", text: "" }));
          // The most frequent frame of a stream, written without building an object first.
          return out +
            `event: content_block_delta\ndata: {"type":"content_block_delta","index":${
              open!.index
            },"delta":{"type":"text_delta","text":${JSON.stringify(e.delta)}}}\n\n`;
        }
        case "text_end":
          return open?.kind === "text" ? close() + drainPending(false) : "";
        case "reasoning_start":
          return start();
        case "reasoning_delta": {
          const out = start() +
            (open?.kind === "thinking" ? "" : begin("thinking", THINKING_BLOCK));
          return out + blockDelta({ type: "thinking_delta", thinking: e.delta });
        }
        case "reasoning_signature": {
          const out = start() +
            (open?.kind === "thinking" ? "" : begin("thinking", THINKING_BLOCK));
          return out + blockDelta({ type: "signature_delta", signature: e.signature });
        }
        case "reasoning_redacted": {
          const out = start() + close();
          const index = nextIndex++;
          return out + frame("content_block_start", {
            type: "content_block_start",
            index,
            content_block: { type: "redacted_thinking", data: e.data },
          }) + frame("content_block_stop", { type: "content_block_stop", index });
        }
        case "reasoning_end":
          return open?.kind === "thinking" ? close() + drainPending(false) : "";
        case "tool_call_start": {
          const tool: ToolState = {
            id: e.id,
            name: e.name,
            buffered: "",
            state: "pending",
            ended: false,
          };
          tools.set(e.index, tool);
          const out = start();
          if (open?.kind === "tool") {
            pending.push(tool);
            return out;
          }
          return out + close() + beginTool(tool);
        }
        case "tool_call_delta": {
          const tool = tools.get(e.index);
          if (!tool || e.json === "") return "";
          if (tool.state === "pending") tool.buffered += e.json;
          else if (tool.state === "open" && open?.kind === "tool") {
            return jsonDelta(open.index, e.json);
          }
          return "";
        }
        case "tool_call_end": {
          const tool = tools.get(e.index);
          if (!tool) return "";
          tool.ended = true;
          return tool.state === "open" ? close() + drainPending(false) : "";
        }
        case "finish":
          reason = e.reason;
          stopSequence = e.stopSequence ?? null;
          return start() + close() + drainPending(true);
        case "error":
          error = e.error;
          return "";
        case "other_choice_delta":
          return "";
        case "cost":
          finished = true;
          return ending(e.cost);
        default: {
          const never: never = e;
          return never;
        }
      }
    },
  };
}

/**
 * A search another vendor ran, as Anthropic's `server_tool_use` and `web_search_tool_result`
 * blocks (streamed: each block's start, the call's input as its JSON delta).
 */
function searchBlocks(
  e: Event & { type: "web_search" },
): [block: Record<string, unknown>, inputJson?: string][] {
  const input = e.query === undefined ? {} : { query: e.query };
  // Anthropic's own ids only: a conversation sent on to Claude must carry ids it accepts.
  const id = e.id.startsWith("srvtoolu_")
    ? e.id
    : `srvtoolu_${e.id.replace(/[^a-zA-Z0-9_]/g, "_")}`;
  const results = (e.sources ?? []).map((s) => ({
    type: "web_search_result",
    url: s.url,
    title: s.title ?? hostOf(s.url),
    encrypted_content: "",
    page_age: null,
  }));
  return [
    [{ type: "server_tool_use", id, name: "web_search", input: {} }, JSON.stringify(input)],
    [{ type: "web_search_tool_result", tool_use_id: id, content: results }],
  ];
}

/**
 * The pages an answer cites where no search of it was shown (OpenRouter's web plugin, OpenAI's
 * search models: their pages come only as `url_citation` annotations). A messages client reads
 * a search's pages from its result block (Claude Code's WebSearch lists them from there), and
 * the citations themselves cannot be shown (event.ts), so they become one search's results.
 */
class CitedPages {
  searched = false;
  #pages = new Map<string, string | undefined>();
  constructor(private readonly ctx: EncodeContext) {}

  add(e: Event & { type: "citation" }): void {
    if (!this.#pages.has(e.url) || e.title !== undefined) this.#pages.set(e.url, e.title);
  }

  /** The search to show, if pages were cited and no search was shown. */
  search(id: string): (Event & { type: "web_search" }) | undefined {
    if (this.searched || this.#pages.size === 0 || !askedForSearch(this.ctx)) return undefined;
    const sources = [...this.#pages].map(([url, title]) =>
      title === undefined ? { url } : { url, title }
    );
    return { type: "web_search", id: `srvtoolu_${id}`, sources };
  }
}

/**
 * The client asked for the search tool. Only then are cited pages shown as a search: in a
 * stream the blocks can only follow the text, and Claude Code takes a turn that ends on a
 * search result for a failed one. Looked at only where pages were cited, not on every answer.
 */
function askedForSearch(ctx: EncodeContext): boolean {
  const tools = ctx.clientBody?.tools;
  return Array.isArray(tools) &&
    tools.some((t) =>
      isObject(t) && typeof t.type === "string" && t.type.startsWith("web_search_")
    );
}

/** A search's blocks in a whole message: the call's input parsed. */
function searchContent(e: Event & { type: "web_search" }): Record<string, unknown>[] {
  return searchBlocks(e).map(([block, input]) =>
    input === undefined ? block : { ...block, input: JSON.parse(input) }
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}

/** Folds the events of a call into one message object. */
export const encodeMessagesBody: BodyEncoder = (events, cost, ctx) => {
  const content: Record<string, unknown>[] = [];
  let text: { type: "text"; text: string } | null = null;
  let thinking: { type: "thinking"; thinking: string; signature: string } | null = null;
  const tools = new Map<number, { block: Record<string, unknown>; json: string }>();
  let reason: FinishReason = "stop";
  let stopSequence: string | null = null;
  const cited = new CitedPages(ctx);
  const thinkingBlock = () => {
    if (!thinking) {
      thinking = { type: "thinking", thinking: "", signature: "" };
      content.push(thinking);
    }
    return thinking;
  };

  for (const e of events) {
    switch (e.type) {
      case "text_start":
        text = { type: "text", text: "" };
        content.push(text);
        break;
      case "text_delta":
        if (!text) {
          text = { type: "text", text: "" };
          content.push(text);
        }
        text.text += e.delta;
        break;
      case "text_end":
        text = null;
        break;
      case "reasoning_start":
      case "reasoning_end":
        thinking = null;
        break;
      case "reasoning_delta":
        thinkingBlock().thinking += e.delta;
        break;
      case "reasoning_signature":
        thinkingBlock().signature += e.signature;
        break;
      case "reasoning_redacted":
        content.push({ type: "redacted_thinking", data: e.data });
        thinking = null;
        break;
      case "tool_call_start": {
        const block = { type: "tool_use", id: anthropicToolId(e.id), name: e.name, input: {} };
        content.push(block);
        tools.set(e.index, { block, json: "" });
        break;
      }
      case "tool_call_delta": {
        const t = tools.get(e.index);
        if (t) t.json += e.json;
        break;
      }
      case "web_search":
        cited.searched = true;
        content.push(...searchContent(e));
        text = null;
        thinking = null;
        break;
      case "citation":
        cited.add(e);
        break;
      case "finish":
        reason = e.reason;
        stopSequence = e.stopSequence ?? null;
        break;
      default:
        break;
    }
  }
  for (const { block, json } of tools.values()) block.input = parseToolInput(json);
  // Where Anthropic puts its own search: after the thinking that led to it, before the text
  // that cites it.
  const search = cited.search(ctx.id);
  if (search) {
    const at = content.findIndex((b) => b.type !== "thinking" && b.type !== "redacted_thinking");
    content.splice(at === -1 ? content.length : at, 0, ...searchContent(search));
  }
  return {
    id: ctx.id,
    type: "message",
    role: "assistant",
    model: ctx.model,
    content,
    stop_reason: toMessagesStopReason(reason),
    stop_sequence: stopSequence,
    usage: usageWithCost(cost),
  };
};

/**
 * Tool input must be an object. Arguments that are not a JSON object (a call cut by
 * max_tokens) cannot be shown as one; `{}` keeps the body valid for the client's SDK.
 */
function parseToolInput(json: string): Record<string, unknown> {
  return parseObject(json) ?? {};
}

// ---------------------------------------------------------------------------------------------
// Pass-through

const isMessageDelta = (type: string | undefined, data: string) =>
  type === "message_delta" || (type === undefined && data.includes('"message_delta"'));

/** Every SDK reads `message.usage` of message_start; an upstream may leave it out. */
const ZERO_USAGE = toMessagesUsage({});

/**
 * The upstream's SSE text goes out untouched except `message_delta`, which is held back and
 * released by `end` with `usage.cost` and `usage.cost_details` added, followed by whatever
 * came after it (`message_stop`). `message_start` carries the generation id and names the
 * requested slug, as the body and every other stream do (a client that reuses `model`
 * must get a name the gateway takes), with zero usage where the upstream gave none. An
 * upstream `event: error` is not forwarded: `end` writes the gateway's own, sanitised one.
 */
export function createMessagesPassThrough(ctx: EncodeContext): PassThroughEncoder {
  let held: string | undefined;
  let after = "";
  let stopped = false;
  return {
    raw(ev, events) {
      if (ev.event === "error" || events.some((e) => e.type === "error")) return "";
      // The `message_delta` is held, so that the one the client gets carries the cost; a
      // repeated one joins it (its usage is the later report, the stop reason stays).
      if (isMessageDelta(ev.event, ev.data)) {
        held = held === undefined ? ev.data : joinDeltas(held, ev.data);
        return "";
      }
      if (
        ev.event === "message_stop" ||
        (ev.event === undefined && parseObject(ev.data)?.type === "message_stop")
      ) {
        stopped = true;
      }
      if (held !== undefined) {
        after += ev.raw;
        return "";
      }
      if (ev.event === "message_start") {
        const start = parseObject(ev.data);
        const message = start?.message;
        if (typeof message === "object" && message !== null) {
          const m = message as Record<string, unknown>;
          return frame("message_start", {
            ...start,
            message: { ...m, id: ctx.id, model: ctx.model, usage: m.usage ?? ZERO_USAGE },
          });
        }
      }
      return ev.raw;
    },
    end(cost, error) {
      if (error) return messagesErrorFrame(error.error);
      if (held === undefined) return after;
      let delta: Record<string, unknown>;
      try {
        delta = JSON.parse(held);
      } catch {
        return sseFrame(held, "message_delta") + after; // the decoder would have failed first
      }
      delta.usage = usageWithCost(cost, delta.usage);
      // An upstream that ended without its `message_stop` (the answer was whole: its delta
      // came) still ends the client's stream as the SDKs need it.
      const stop = stopped ? "" : frame("message_stop", { type: "message_stop" });
      return frame("message_delta", delta) + after + stop;
    },
  };
}

/**
 * Two `message_delta` payloads as one: the later's fields over the earlier's, its delta's
 * only where set (a usage-only repeat keeps the stop reason).
 */
function joinDeltas(first: string, later: string): string {
  const a = parseObject(first);
  const b = parseObject(later);
  if (!a || !b) return later;
  const set = Object.entries((b.delta as Record<string, unknown> | undefined) ?? {})
    .filter(([, v]) => v != null);
  const delta = { ...(a.delta as object | undefined), ...Object.fromEntries(set) };
  return JSON.stringify({ ...a, ...b, delta, usage: b.usage ?? a.usage });
}

/** The upstream message with the generation id, the requested slug and the cost in its usage. */
export const messagesPassThroughBody: PassThroughBody = (body, cost, ctx) => ({
  ...body,
  id: ctx.id,
  model: ctx.model,
  usage: usageWithCost(cost, body.usage),
});

/**
 * Internal events → the responses client format: an SSE stream in OpenAI's event sequence
 * (https://platform.openai.com/docs/api-reference/responses-streaming), or one response object.
 *
 * Stream, per event:
 * - first event: `response.created`, `response.in_progress` (status in_progress, output []);
 * - text block: `output_item.added` (message, in_progress), `content_part.added` (output_text
 *   ""), `output_text.delta`…, `output_text.done`, `content_part.done`, `output_item.done`;
 *   consecutive text blocks (Anthropic's, split around citations) are one message;
 * - reasoning block: `output_item.added` (reasoning), `reasoning_summary_part.added`,
 *   `reasoning_summary_text.delta`…, `.done`, `reasoning_summary_part.done`, `output_item.done`
 *   (with `encrypted_content` when a `reasoning_redacted` or a `reasoning_signature` came:
 *   the block sealed, see sealed_reasoning.ts);
 * - a search the upstream ran (`web_search`): a `web_search_call` item, `output_item.added`,
 *   `web_search_call.in_progress`, `.searching`, `.completed`, `output_item.done`;
 * - tool call: `output_item.added` (function_call, arguments ""), `function_call_arguments.delta`…,
 *   `.done`, `output_item.done`. Calls are mapped back to the client's tools (tools.ts): a
 *   member of a `namespace` tool is a function_call with its own `name` and the `namespace`;
 *   a custom tool's call is a `custom_tool_call` item (`output_item.added` with input "", then,
 *   once the arguments are complete, one `custom_tool_call_input.delta` with the whole text,
 *   `custom_tool_call_input.done` and `output_item.done`: the text sits inside a JSON string
 *   until then); a client-executed tool search's call is a `tool_search_call` item whose
 *   `arguments` object comes with `output_item.done`;
 * - `cost` (always last): `response.completed` with the whole response object and the usage
 *   with cost — `response.incomplete` (status incomplete, `incomplete_details.reason`) when the
 *   finish was `length` or `content_filter`, as the API does; after an `error` event, an
 *   `error` frame (the generic envelope, spec) and `response.failed`.
 *
 * Every frame carries a `sequence_number` counting from 0. Chat upstreams stream parallel tool
 * calls interleaved by index; Responses clients expect one item at a time, so one tool item is
 * open at once and the others wait, their arguments buffered, until it is done — items appear
 * in the order their calls started.
 */
import type { CostReport, Event, FinishReason } from "../../events/event.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import type { BodyEncoder, EncodeContext, StreamEncoder } from "../codec.ts";
import { sseFrame } from "../sse.ts";
import { finishToResponses } from "./finish_reason.ts";
import { streamError } from "./errors.ts";
import { finalResponse, responseObject } from "./response_object.ts";
import { OPENAI_ENCRYPTED, sealReasoning } from "./sealed_reasoning.ts";
import { customInput, searchArguments, ToolMap, type ToolTarget } from "./tools.ts";

type Obj = Record<string, unknown>;

/** Receives each wire event (without `sequence_number`, which the stream adds). */
type Sink = (type: string, payload: Obj) => void;

interface ToolSlot {
  id: string;
  target: ToolTarget;
  args: string;
  ended: boolean;
  item?: Obj;
  outputIndex: number;
}

/**
 * The item bookkeeping shared by the stream and the body encoders: it turns events into wire
 * events (through `sink`) and keeps the output items for the final response object.
 */
class ResponseBuilder {
  readonly output: Obj[] = [];
  /** The final response object, once `cost` came. */
  final?: Obj;
  #started = false;
  /** The open message; `refusal`: its part is a `refusal` one (`refusal` holds the text). */
  #text?: {
    item: Obj;
    part: Obj;
    index: number;
    ended?: boolean;
    refusal?: boolean;
    /** Where the open text block began in the part's text (blocks join one part). */
    blockAt: number;
  };
  #reasoning?: {
    item: Obj;
    index: number;
    text: string;
    partOpen: boolean;
    data?: string;
    signature?: string;
  };
  readonly #tools = new Map<number, ToolSlot>();
  readonly #waiting: ToolSlot[] = [];
  #active?: ToolSlot;
  #finish?: FinishReason;
  #error?: GatewayError;
  /** A message item's status when done: "incomplete" for the last of an answer cut short. */
  #messageStatus: "completed" | "incomplete" = "completed";
  readonly #idBase: string;
  #toolMap?: ToolMap;

  constructor(readonly ctx: EncodeContext, readonly sink: Sink) {
    this.#idBase = ctx.id.replace(/^[A-Za-z]+[_-]/, "");
  }

  event(e: Event): void {
    // Nothing is written for an error until `cost`: the stage drops what `error` returns.
    if (e.type === "other_choice_delta") return;
    if (e.type !== "cost" && e.type !== "error" && e.type !== "usage") this.#start();
    switch (e.type) {
      case "response_start":
      case "usage":
        return;
      case "reasoning_signature":
        if (this.#reasoning) this.#reasoning.signature = e.signature;
        return;
      case "text_start":
        this.#openText(e.refusal);
        return;
      case "text_delta":
        this.#textDelta(e.delta);
        return;
      case "citation":
        this.#citation(e);
        return;
      case "text_end":
        // Left open: a text block right after it continues the same part (see #openText).
        if (this.#text) this.#text.ended = true;
        return;
      case "reasoning_start":
        this.#openReasoning();
        return;
      case "reasoning_delta":
        this.#reasoningDelta(e.delta);
        return;
      case "reasoning_redacted":
        if (!this.#reasoning) this.#openReasoning();
        this.#reasoning!.data = e.data;
        return;
      case "reasoning_end":
        this.#closeReasoning();
        return;
      case "web_search":
        this.#webSearch(e.query);
        return;
      case "tool_call_start":
        this.#toolStart(e.index, e.id, e.name);
        return;
      case "tool_call_delta":
        this.#toolDelta(e.index, e.json);
        return;
      case "tool_call_end":
        this.#toolEnd(e.index);
        return;
      case "finish":
        this.#finish = e.reason;
        return;
      case "error":
        this.#error ??= e.error;
        return;
      case "cost":
        this.#end(e.cost);
        return;
      default: {
        const never: never = e;
        throw new Error(`unknown event ${JSON.stringify(never)}`);
      }
    }
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    const r = responseObject(this.ctx, "in_progress", []);
    this.sink("response.created", { response: r });
    this.sink("response.in_progress", { response: r });
  }

  #add(item: Obj): number {
    const index = this.output.length;
    this.output.push(item);
    this.sink("response.output_item.added", { output_index: index, item });
    return index;
  }

  #done(index: number, item: Obj): void {
    item.status = item.type === "message" ? this.#messageStatus : "completed";
    this.sink("response.output_item.done", { output_index: index, item });
  }

  // ---- text ----

  /**
   * A text block opens a message item — unless it follows another with nothing in between:
   * Anthropic splits an answer into several blocks around its citations, and a Responses
   * answer is one message with one output_text part, so the blocks join that part.
   */
  #openText(refusal = false): void {
    if (this.#text?.ended && !!this.#text.refusal === refusal) {
      this.#text.ended = false;
      if (!refusal) this.#text.blockAt = (this.#text.part.text as string).length;
      return;
    }
    this.#closeText();
    this.#closeReasoning();
    const item: Obj = {
      id: `msg_${this.#idBase}_${this.output.length}`,
      type: "message",
      status: "in_progress",
      content: [],
      role: "assistant",
    };
    const index = this.#add(item);
    // A refusal is a part of its own type, streamed by `response.refusal.*` events.
    const part: Obj = refusal
      ? { type: "refusal", refusal: "" }
      : { type: "output_text", annotations: [], logprobs: [], text: "" };
    this.sink("response.content_part.added", {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part,
    });
    this.#text = { item, part, index, refusal, blockAt: 0 };
  }

  #textDelta(delta: string): void {
    if (!this.#text) this.#openText();
    const t = this.#text!;
    const ids = { item_id: t.item.id, output_index: t.index, content_index: 0 };
    if (t.refusal) {
      t.part.refusal += delta;
      this.sink("response.refusal.delta", { ...ids, delta });
      return;
    }
    t.part.text += delta;
    this.sink("response.output_text.delta", { ...ids, delta, logprobs: [] });
  }

  /** A web citation: a `url_citation` annotation of the open output_text part. */
  #citation(e: Event & { type: "citation" }): void {
    const t = this.#text;
    if (!t || t.refusal) return;
    const annotations = t.part.annotations as Obj[];
    const annotation = {
      type: "url_citation",
      start_index: t.blockAt + e.start,
      end_index: t.blockAt + e.end,
      title: e.title ?? "",
      url: e.url,
    };
    annotations.push(annotation);
    this.sink("response.output_text.annotation.added", {
      item_id: t.item.id,
      output_index: t.index,
      content_index: 0,
      annotation_index: annotations.length - 1,
      annotation,
    });
  }

  #closeText(): void {
    const t = this.#text;
    if (!t) return;
    this.#text = undefined;
    const ids = { item_id: t.item.id, output_index: t.index, content_index: 0 };
    if (t.refusal) this.sink("response.refusal.done", { ...ids, refusal: t.part.refusal });
    else this.sink("response.output_text.done", { ...ids, text: t.part.text, logprobs: [] });
    this.sink("response.content_part.done", { ...ids, part: t.part });
    t.item.content = [t.part];
    this.#done(t.index, t.item);
  }

  // ---- reasoning ----

  #openReasoning(): void {
    this.#closeReasoning();
    this.#closeText();
    const item: Obj = {
      id: `rs_${this.#idBase}_${this.output.length}`,
      type: "reasoning",
      summary: [],
    };
    const index = this.#add(item);
    this.#reasoning = { item, index, text: "", partOpen: false };
  }

  #reasoningDelta(delta: string): void {
    if (!this.#reasoning) this.#openReasoning();
    const r = this.#reasoning!;
    const ids = { item_id: r.item.id, output_index: r.index, summary_index: 0 };
    if (!r.partOpen) {
      r.partOpen = true;
      this.sink("response.reasoning_summary_part.added", {
        ...ids,
        part: { type: "summary_text", text: "" },
      });
    }
    r.text += delta;
    this.sink("response.reasoning_summary_text.delta", { ...ids, delta });
  }

  #closeReasoning(): void {
    const r = this.#reasoning;
    if (!r) return;
    this.#reasoning = undefined;
    if (r.partOpen) {
      const ids = { item_id: r.item.id, output_index: r.index, summary_index: 0 };
      const part = { type: "summary_text", text: r.text };
      this.sink("response.reasoning_summary_text.done", { ...ids, text: r.text });
      this.sink("response.reasoning_summary_part.done", { ...ids, part });
      r.item.summary = [part];
    }
    if (r.data !== undefined) {
      // OpenAI's own encrypted reasoning is this field's native content; another vendor's
      // (Anthropic's redacted thinking) is sealed, so no responses upstream is sent it.
      r.item.encrypted_content = OPENAI_ENCRYPTED.test(r.data)
        ? r.data
        : sealReasoning({ text: r.text, redacted: r.data });
    } else if (r.signature) {
      r.item.encrypted_content = sealReasoning({ text: r.text, signature: r.signature });
    }
    this.sink("response.output_item.done", { output_index: r.index, item: r.item });
  }

  // ---- hosted web search ----

  /** A search the upstream ran: one `web_search_call` item, complete as it is announced. */
  #webSearch(query: string | undefined): void {
    this.#closeText();
    this.#closeReasoning();
    const action = query === undefined ? { type: "search" } : { type: "search", query };
    const item: Obj = {
      id: `ws_${this.#idBase}_${this.output.length}`,
      type: "web_search_call",
      status: "in_progress",
      action,
    };
    const index = this.#add(item);
    const ids = { output_index: index, item_id: item.id };
    this.sink("response.web_search_call.in_progress", ids);
    this.sink("response.web_search_call.searching", ids);
    this.sink("response.web_search_call.completed", ids);
    this.#done(index, item);
  }

  // ---- tool calls ----

  /** The client's tool behind a name the upstream called. */
  #targetOf(name: string): ToolTarget {
    this.#toolMap ??= new ToolMap(this.ctx.clientBody);
    return this.#toolMap.target(name) ?? { kind: "function", name };
  }

  #toolStart(index: number, id: string, name: string): void {
    this.#closeText();
    const target = this.#targetOf(name);
    const slot: ToolSlot = { id, target, args: "", ended: false, outputIndex: -1 };
    this.#tools.set(index, slot);
    if (this.#active) this.#waiting.push(slot);
    else this.#activate(slot);
  }

  #toolDelta(index: number, json: string): void {
    const slot = this.#tools.get(index);
    if (!slot || slot.ended) return;
    slot.args += json;
    if (slot === this.#active) this.#argsDelta(slot, json);
  }

  /** Only a function call streams its arguments; the other kinds need them whole. */
  #argsDelta(slot: ToolSlot, delta: string): void {
    if (slot.target.kind !== "function" || delta === "") return;
    this.sink("response.function_call_arguments.delta", {
      item_id: slot.item!.id,
      output_index: slot.outputIndex,
      delta,
    });
  }

  #toolEnd(index: number): void {
    const slot = this.#tools.get(index);
    if (!slot || slot.ended) return;
    slot.ended = true;
    if (slot !== this.#active) return;
    this.#completeTool(slot);
    this.#active = undefined;
    // Release the calls that waited, in the order they started.
    while (!this.#active && this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      this.#activate(next);
      this.#argsDelta(next, next.args);
      if (next.ended) {
        this.#completeTool(next);
        this.#active = undefined;
      }
    }
  }

  #activate(slot: ToolSlot): void {
    const t = slot.target;
    const n = this.output.length;
    const namespace = t.namespace !== undefined ? { namespace: t.namespace } : {};
    let item: Obj;
    switch (t.kind) {
      case "custom":
        item = {
          id: `ctc_${this.#idBase}_${n}`,
          type: "custom_tool_call",
          status: "in_progress",
          call_id: slot.id,
          ...namespace,
          name: t.name,
          input: "",
        };
        break;
      case "tool_search":
        item = {
          id: `tsc_${this.#idBase}_${n}`,
          type: "tool_search_call",
          status: "in_progress",
          call_id: slot.id,
          execution: "client",
          arguments: {},
        };
        break;
      default:
        item = {
          id: `fc_${this.#idBase}_${n}`,
          type: "function_call",
          status: "in_progress",
          arguments: "",
          call_id: slot.id,
          ...namespace,
          name: t.name,
        };
    }
    slot.item = item;
    slot.outputIndex = this.#add(item);
    this.#active = slot;
  }

  #completeTool(slot: ToolSlot): void {
    const item = slot.item!;
    const ids = { item_id: item.id, output_index: slot.outputIndex };
    switch (slot.target.kind) {
      case "custom": {
        const input = customInput(slot.args);
        item.input = input;
        if (input !== "") {
          this.sink("response.custom_tool_call_input.delta", { ...ids, delta: input });
        }
        this.sink("response.custom_tool_call_input.done", { ...ids, input });
        break;
      }
      case "tool_search":
        item.arguments = searchArguments(slot.args);
        break;
      default:
        item.arguments = slot.args;
        this.sink("response.function_call_arguments.done", { ...ids, arguments: slot.args });
    }
    this.#done(slot.outputIndex, item);
  }

  /** A tool item cut short by an error keeps what its arguments were. */
  #fillTool(slot: ToolSlot): void {
    const item = slot.item!;
    if (slot.target.kind === "custom") item.input = customInput(slot.args);
    else if (slot.target.kind === "tool_search") item.arguments = searchArguments(slot.args);
    else item.arguments = slot.args;
  }

  // ---- the end ----

  #end(cost: CostReport): void {
    if (!this.#error && this.#finish === "error") {
      // A chat upstream's `finish_reason: "error"` (OpenRouter): a failure without an error body.
      this.#error = new GatewayError(502, "the model provider stopped with an error");
    }
    if (this.#error) {
      if (this.#text?.ended) this.#closeText(); // a block that did end is complete
      this.#abandon();
      this.final = finalResponse(this.ctx, this.output, cost, {
        status: "failed",
        incomplete_details: null,
        error: this.#error,
      });
      this.#start();
      this.sink("error", streamError(this.#error));
      this.sink("response.failed", { response: this.final });
      return;
    }
    this.#start();
    const ending = finishToResponses(this.#finish);
    // An answer cut short (max_output_tokens): its last message is incomplete, as OpenAI marks
    // it (a text block is closed only when something follows it, or here).
    if (ending.status === "incomplete") this.#messageStatus = "incomplete";
    // Blocks a decoder left open are closed as they stand (decoders end them before finish).
    this.#closeText();
    this.#closeReasoning();
    for (const [index, slot] of this.#tools) if (!slot.ended) this.#toolEnd(index);
    this.final = finalResponse(this.ctx, this.output, cost, ending);
    this.sink(
      ending.status === "incomplete" ? "response.incomplete" : "response.completed",
      { response: this.final },
    );
  }

  /** After an error: items still open stay in the output as `incomplete`, without events. */
  #abandon(): void {
    if (this.#text) this.#text.item.content = [this.#text.part];
    if (this.#reasoning?.partOpen) {
      this.#reasoning.item.summary = [{ type: "summary_text", text: this.#reasoning.text }];
    }
    for (const slot of this.#tools.values()) if (slot.item) this.#fillTool(slot);
    for (const item of this.output) if (item.status === "in_progress") item.status = "incomplete";
    this.#text = undefined;
    this.#reasoning = undefined;
  }
}

/** The SSE stream for a responses client. */
export function createResponsesEncoder(ctx: EncodeContext): StreamEncoder {
  let out = "";
  let seq = 0;
  const builder = new ResponseBuilder(ctx, (type, payload) => {
    out += sseFrame(JSON.stringify({ type, sequence_number: seq++, ...payload }), type);
  });
  return {
    event(e: Event): string {
      builder.event(e);
      const s = out;
      out = "";
      return s;
    },
  };
}

/** All events of a non-streaming call → the response object (the same one a stream ends with). */
export const encodeResponsesBody: BodyEncoder = (events, cost, ctx) => {
  const builder = new ResponseBuilder(ctx, () => {});
  for (const e of events) if (e.type !== "cost") builder.event(e);
  builder.event({ type: "cost", cost });
  return builder.final;
};

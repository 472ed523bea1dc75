/**
 * Same-format responses (design §3): a responses client served by an openai-responses
 * upstream gets the upstream's own bytes, with only the edits the spec demands.
 *
 * Stream: every event is forwarded as its original text, unparsed, except
 * - `response.created` / `response.in_progress`, whose response `model` is set to the
 *   requested slug (the spec's Response object carries it) and `id` to the generation's, as
 *   on every other route (the history finds a response by its id);
 * - the terminal `response.completed` / `response.incomplete`, held back until the meter's
 *   cost is known and then re-serialised — `id` and `model` set as above, `cost` and
 *   `cost_details` added to `usage` (the one event parsed here);
 * - the upstream's `error` event, never forwarded: its words are about the gateway's provider
 *   account (quota, keys). The failure goes out at the end as the gateway's own `error` frame
 *   and `response.failed`, carrying the sanitised `GatewayError` the decoder made of it and
 *   the items the upstream had finished (each `output_item.done` is read for that).
 *
 * Synthesised frames continue the upstream's `sequence_number`s (they count from 0, one per
 * event, so the next number is the count of events seen).
 */
import type { CostReport, Event } from "../../events/event.ts";
import type { EncodeContext, PassThroughBody, PassThroughEncoder } from "../codec.ts";
import { type SseEvent, sseFrame } from "../sse.ts";
import { type Obj, obj, parseObject } from "../json.ts";
import { streamError } from "./errors.ts";
import { editUpstreamResponse, responseError, responseObject } from "./response_object.ts";

/** The first `"model": "…"` of an event: in the opening events, the response's own. */
const MODEL_FIELD = /("model"\s*:\s*)"(?:[^"\\]|\\.)*"/;
/** The response's own `id` in an opening event: the first field of its `response` object. */
const RESPONSE_ID_FIELD = /("response"\s*:\s*\{\s*"id"\s*:\s*)"(?:[^"\\]|\\.)*"/;

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** The `type` at the head of an event's JSON, read without parsing the rest. */
const TYPE_AT_HEAD = /^\s*\{\s*"type"\s*:\s*"([^"\\]+)"/;

function eventType(ev: SseEvent): string | undefined {
  if (ev.event !== undefined) return ev.event;
  const m = TYPE_AT_HEAD.exec(ev.data);
  if (m) return m[1];
  try {
    const d = JSON.parse(ev.data);
    return typeof d?.type === "string" ? d.type : undefined;
  } catch {
    return undefined;
  }
}

export function createResponsesPassThrough(ctx: EncodeContext): PassThroughEncoder {
  let held: SseEvent | undefined;
  let seen = 0;
  /** Items the upstream finished before a failure: the failed response still shows them. */
  const done: Obj[] = [];

  return {
    raw(ev: SseEvent, _events: readonly Event[]): string {
      seen++;
      const type = eventType(ev);
      if (type === "error") return "";
      if (type === "response.output_item.done") {
        const item = obj(parseObject(ev.data)?.item);
        if (item) done.push(item);
      }
      if (type !== undefined && TERMINAL.has(type)) {
        held = ev;
        return "";
      }
      // The spec's Response object carries the requested slug; the opening events hold one.
      // Only the value is replaced, in place: every other byte stays the upstream's.
      if (type === "response.created" || type === "response.in_progress") {
        return ev.raw.replace(MODEL_FIELD, (_, key) => key + JSON.stringify(ctx.model))
          .replace(RESPONSE_ID_FIELD, (_, key) => key + JSON.stringify(ctx.id));
      }
      return ev.raw;
    },

    end(cost: CostReport, error?: Event & { type: "error" }): string {
      const heldData = held ? parseObject(held.data) : undefined;
      if (error) {
        const base = obj(heldData?.response) ?? responseObject(ctx, "failed", done);
        const response = editUpstreamResponse(base, cost, ctx);
        response.status = "failed";
        response.error = responseError(error.error);
        const seq = seen;
        return frame("error", streamError(error.error), seq) +
          frame("response.failed", { response }, seq + 1);
      }
      if (!held || !heldData) return "";
      const response = obj(heldData.response);
      if (!response) return held.raw;
      const edited = { ...heldData, response: editUpstreamResponse(response, cost, ctx) };
      return sseFrame(JSON.stringify(edited), held.event);
    },
  };
}

function frame(type: string, payload: Obj, seq: number): string {
  return sseFrame(JSON.stringify({ type, sequence_number: seq, ...payload }), type);
}

/** Same-format non-streaming: the upstream's response object with the spec's edits. */
export const responsesPassThroughBody: PassThroughBody = (body, cost, ctx) =>
  editUpstreamResponse(body, cost, ctx);

/**
 * The Response object (spec "Response object"; https://platform.openai.com/docs/api-reference/responses/object)
 * as the gateway writes it: built from the encoder's output items, or an upstream's object
 * edited for pass-through. Both the stream's final event and the non-streaming body come from
 * here, so they cannot disagree.
 */
import type { CostReport } from "../../events/event.ts";
import type { GatewayError } from "../../http/gateway_error.ts";
import type { EncodeContext } from "../codec.ts";
import { responsesErrorCode, withRetryHint } from "./errors.ts";
import { addCost, usageToResponses } from "./usage.ts";
import { obj } from "../json.ts";

type Obj = Record<string, unknown>;

/**
 * A response object in `status`, echoing the request fields the API echoes. `store` is false
 * whatever the client sent: nothing is stored (spec).
 */
export function responseObject(ctx: EncodeContext, status: string, output: Obj[]): Obj {
  const b = ctx.clientBody ?? {};
  const r = ctx.request;
  return {
    id: ctx.id,
    object: "response",
    created_at: ctx.created,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? r?.maxTokens ?? null,
    model: ctx.model,
    output,
    output_text: outputText(output),
    parallel_tool_calls: b.parallel_tool_calls ?? r?.parallelToolCalls ?? true,
    previous_response_id: null,
    reasoning: b.reasoning ?? { effort: r?.reasoning?.effort ?? null, summary: null },
    store: false,
    temperature: b.temperature ?? r?.temperature ?? 1,
    text: b.text ?? { format: { type: "text" } },
    tool_choice: b.tool_choice ?? "auto",
    tools: b.tools ?? [],
    top_p: b.top_p ?? r?.topP ?? 1,
    truncation: b.truncation ?? "disabled",
    usage: null,
    user: b.user ?? null,
    metadata: b.metadata ?? {},
  };
}

/** The final object: usage with cost, and the ending (completed, incomplete or failed). */
export function finalResponse(
  ctx: EncodeContext,
  output: Obj[],
  cost: CostReport,
  ending: { status: string; incomplete_details: Obj | null; error?: GatewayError },
): Obj {
  const r = responseObject(ctx, ending.status, output);
  r.incomplete_details = ending.incomplete_details;
  if (ending.error) r.error = responseError(ending.error);
  r.usage = usageToResponses(cost);
  return r;
}

/** A response object's `error`: a string code from the API's list, and the message. */
export function responseError(error: GatewayError): Obj {
  // Codex reads a rate limit's wait from this message (errors.ts).
  const e = withRetryHint(error);
  return { code: responsesErrorCode(e), message: e.message };
}

/**
 * An upstream response object for the client (pass-through): `id` is the generation's, as on
 * every route, `model` the requested slug (spec), `usage` gains `cost` and `cost_details`, and
 * `output_text` — a field the spec lists but the API leaves to its SDKs — is added when absent.
 * A shallow copy; the rest untouched.
 */
export function editUpstreamResponse(r: Obj, cost: CostReport, ctx: EncodeContext): Obj {
  const out: Obj = { ...r, id: ctx.id, model: ctx.model, usage: addCost(r.usage, cost) };
  // The format asked for, as OpenAI echoes it: LangChain parses a streamed structured answer
  // only when the final response says `json_schema`, and an upstream that answers in OpenAI's
  // format without echoing it (or says `text`) would leave that client with nothing parsed.
  const asked = obj(obj(ctx.clientBody?.text)?.format);
  const said = obj(obj(r.text)?.format);
  if (asked && asked.type !== "text" && (!said || said.type === "text")) {
    out.text = { ...obj(r.text), format: asked };
  }
  if (typeof out.output_text !== "string" && Array.isArray(r.output)) {
    out.output_text = outputText(r.output as Obj[]);
  }
  return out;
}

/** The concatenated `output_text` parts of the message items. */
export function outputText(output: Obj[]): string {
  let s = "";
  for (const item of output) {
    if (item?.type !== "message" || !Array.isArray(item.content)) continue;
    for (const p of item.content as Obj[]) {
      if (p?.type === "output_text" && typeof p.text === "string") s += p.text;
    }
  }
  return s;
}

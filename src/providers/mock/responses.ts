/**
 * OpenAI Responses, rendered as recorded in ../shared/fixtures/upstream/openai/responses-*.sse:
 * `event: <type>\ndata: <json>\n\n`, every payload with its `sequence_number`;
 * response.created and response.in_progress, then per output item
 * output_item.added … output_item.done (reasoning with summary deltas, message with
 * content part and output_text deltas, function_call with arguments deltas — with its
 * `namespace` for a namespace's member —, custom_tool_call with input deltas), then
 * response.completed (or response.incomplete for `length`/`content_filter`). A request whose
 * input ends with Codex's `compaction_trigger` is answered, as OpenAI's server-side compaction
 * answers it, with one opaque `compaction` item alone (output_item.added and .done, no deltas).
 */
import type { Answer, AnswerInput, DeclaredTool } from "./answer.ts";
import { Frames, type StreamParts } from "./plan.ts";
import { alnum, CREATED, obj, q } from "./util.ts";
import { RESPONSES_CONTEXT_MESSAGE } from "./errors.ts";

const FAIL_MESSAGE = "The server had an error while processing your request. Sorry about that!";

const ids = (a: Answer) => ({
  id: "resp_" + alnum(a.seed, 48),
  rs: "rs_" + alnum(a.seed ^ 0x1111, 48),
  msg: "msg_" + alnum(a.seed ^ 0x2222, 48),
  fc: (i: number) => "fc_" + alnum(a.seed + i + 1, 48),
  ctc: (i: number) => "ctc_" + alnum(a.seed + i + 1, 48),
  call: (i: number) => "call_" + alnum(a.seed + i + 101, 24),
});

/** Whether the request asked for a reasoning summary. */
/** The client asked for the pages each search found. */
function wantsSources(body: Record<string, unknown>): boolean {
  return Array.isArray(body.include) && body.include.includes("web_search_call.action.sources");
}

function wantsEncrypted(body: Record<string, unknown>): boolean {
  return Array.isArray(body.include) && body.include.includes("reasoning.encrypted_content");
}

/**
 * OpenAI's encrypted reasoning opens only for the organisation it was made for: the mock's
 * tokens carry a tag of the key they were made for (`keyTag`, none without a key), and a
 * token made for another key is refused (`foreignEncrypted`), as OpenAI answers 400
 * `invalid_encrypted_content` to one from another organisation (a session that moved between
 * OpenAI's own API and OpenRouter, or the operator's key changed).
 */
const KEYED_TOKEN = /^gAAAAAmk([0-9a-f]{8})/;

function encryptedToken(keyTag: string, rest: string): string {
  return "gAAAAA" + (keyTag === "" ? "" : "mk" + keyTag) + rest;
}

/** The first reasoning item's token made for another key than `keyTag`, if any. */
export function foreignEncrypted(
  body: Record<string, unknown>,
  keyTag: string,
): string | undefined {
  if (!Array.isArray(body.input)) return undefined;
  for (const item of body.input) {
    const i = obj(item);
    if (i.type !== "reasoning" || typeof i.encrypted_content !== "string") continue;
    const made = KEYED_TOKEN.exec(i.encrypted_content)?.[1];
    if (made !== undefined && made !== keyTag) return i.encrypted_content;
  }
  return undefined;
}

export function wantsSummary(body: Record<string, unknown>): boolean {
  const s = obj(body.reasoning).summary;
  return typeof s === "string" && s !== "";
}

function usage(a: Answer): Record<string, unknown> | null {
  if (!a.reportUsage) return null;
  const u = a.usage;
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
}

function incomplete(a: Answer): { reason: string } | null {
  if (a.finish === "length") return { reason: "max_output_tokens" };
  if (a.finish === "content_filter") return { reason: "content_filter" };
  return null;
}

/** The response object, as in response.created/completed and the non-streaming body. */
function response(
  a: Answer,
  body: Record<string, unknown>,
  status: string,
  output: unknown[],
  extra: { usage: unknown; error?: unknown; incomplete?: unknown },
): Record<string, unknown> {
  const r = obj(body.reasoning);
  const text = obj(body.text);
  return {
    id: ids(a).id,
    object: "response",
    created_at: CREATED,
    status,
    background: false,
    error: extra.error ?? null,
    incomplete_details: extra.incomplete ?? null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model: a.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: null,
    reasoning: { effort: r.effort ?? null, summary: r.summary ?? null },
    safety_identifier: null,
    service_tier: "default",
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    // OpenAI echoes the format asked for: LangChain's ChatOpenAI reads `json_schema` here
    // in response.completed to parse a streamed structured answer.
    text: { format: text.format ?? { type: "text" }, verbosity: text.verbosity ?? "medium" },
    tool_choice: body.tool_choice ?? "auto",
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage: extra.usage,
    user: null,
    metadata: body.metadata ?? {},
  };
}

interface Items {
  reasoning?: Record<string, unknown>;
  message?: Record<string, unknown>;
  calls: Record<string, unknown>[];
  /** Web searches, first in the output (the model searches before it answers). */
  searches: Record<string, unknown>[];
  /** The compacted conversation, the whole output of a compaction request. */
  compaction?: Record<string, unknown>;
}

/** The input ends with Codex's request for server-side compaction. */
function compactionAsked(body: Record<string, unknown>): boolean {
  return Array.isArray(body.input) && obj(body.input.at(-1)).type === "compaction_trigger";
}

function compactionItem(a: Answer, keyTag: string): Record<string, unknown> {
  return {
    id: "cmp_" + alnum(a.seed ^ 0x4444, 48),
    type: "compaction",
    encrypted_content: encryptedToken(keyTag, alnum(a.seed ^ 0x5555, 80)),
  };
}

/** The finished output items. */
function items(
  a: Answer,
  hasReasoningItem: boolean,
  withSources: boolean,
  /** The key tag of the caller that asked for encrypted reasoning (`include`), if it did. */
  encryptedFor?: string,
): Items {
  const { rs, msg, fc, ctc, call } = ids(a);
  const out: Items = { calls: [], searches: [] };
  for (let i = 0; i < a.usage.webSearches; i++) {
    const action: Record<string, unknown> = { type: "search", query: `mock search ${i + 1}` };
    // Only when asked (`include`), as the API lists them.
    if (withSources) action.sources = [{ type: "url", url: `https://example.com/mock/${i + 1}` }];
    out.searches.push({
      id: `ws_${a.seed.toString(16)}${i}`,
      type: "web_search_call",
      status: "completed",
      action,
    });
  }
  if (hasReasoningItem) {
    out.reasoning = {
      id: rs,
      type: "reasoning",
      summary: a.reasoning.length > 0 ? [{ type: "summary_text", text: a.reasoning.join("") }] : [],
      // Asked for (`include`), as a stateless caller does: a Fernet token, as OpenAI's are.
      ...(encryptedFor !== undefined
        ? { encrypted_content: encryptedToken(encryptedFor, alnum(a.seed ^ 0x3333, 60)) }
        : {}),
    };
  }
  if (a.text.length > 0 || a.tools.length === 0) {
    out.message = {
      id: msg,
      type: "message",
      status: incomplete(a) ? "incomplete" : "completed",
      content: [{ type: "output_text", annotations: [], logprobs: [], text: a.text.join("") }],
      role: "assistant",
    };
  }
  a.tools.forEach((t, i) =>
    out.calls.push(
      t.custom
        ? {
          id: ctc(i),
          type: "custom_tool_call",
          status: "completed",
          call_id: call(i),
          name: t.name,
          input: t.args,
        }
        : {
          id: fc(i),
          type: "function_call",
          status: "completed",
          arguments: t.args,
          call_id: call(i),
          name: t.name,
          ...(t.namespace ? { namespace: t.namespace } : {}),
        },
    )
  );
  return out;
}

function outputOf(it: Items): unknown[] {
  if (it.compaction) return [it.compaction];
  return [
    ...it.searches,
    ...(it.reasoning ? [it.reasoning] : []),
    ...(it.message ? [it.message] : []),
    ...it.calls,
  ];
}

export function responsesStream(
  a: Answer,
  body: Record<string, unknown>,
  keyTag = "",
): StreamParts {
  const f = new Frames(a.hiddenReasoning);
  let seq = 0;
  const ev = (type: string, fields: string) =>
    `event: ${type}\ndata: {"type":"${type}","sequence_number":${seq++}${fields}}\n\n`;
  const meta = (type: string, fields: string, u = false) => f.meta(ev(type, fields), u);
  const content = (type: string, fields: string) => f.content(ev(type, fields));
  const j = JSON.stringify;

  const start = response(a, body, "in_progress", [], { usage: null });
  meta("response.created", `,"response":${j(start)}`);
  meta("response.in_progress", `,"response":${j(start)}`);

  const it = items(
    a,
    a.reasoning.length > 0 || a.hiddenReasoning > 0,
    wantsSources(body),
    wantsEncrypted(body) ? keyTag : undefined,
  );
  let index = 0;
  if (compactionAsked(body)) {
    it.compaction = compactionItem(a, keyTag);
    meta("response.output_item.added", `,"output_index":0,"item":${j(it.compaction)}`);
    content("response.output_item.done", `,"output_index":0,"item":${j(it.compaction)}`);
  } else {
    streamItems();
  }

  function streamItems(): void {
    for (const search of it.searches) {
      const fields = `,"output_index":${index},"item_id":"${search.id}"`;
      meta(
        "response.output_item.added",
        `,"output_index":${index},"item":${j({ ...search, status: "in_progress" })}`,
      );
      meta("response.web_search_call.in_progress", fields);
      meta("response.web_search_call.searching", fields);
      meta("response.web_search_call.completed", fields);
      meta("response.output_item.done", `,"output_index":${index++},"item":${j(search)}`);
    }
    if (it.reasoning) {
      const item = `"item_id":"${it.reasoning.id}","output_index":${index}`;
      meta(
        "response.output_item.added",
        `,"output_index":${index},"item":${j({ ...it.reasoning, summary: [] })}`,
      );
      if (a.reasoning.length > 0) {
        const text = a.reasoning.join("");
        meta(
          "response.reasoning_summary_part.added",
          `,${item},"summary_index":0,"part":{"type":"summary_text","text":""}`,
        );
        for (const d of a.reasoning) {
          content(
            "response.reasoning_summary_text.delta",
            `,${item},"summary_index":0,"delta":${q(d)}`,
          );
        }
        meta(
          "response.reasoning_summary_text.done",
          `,${item},"summary_index":0,"text":${q(text)}`,
        );
        meta(
          "response.reasoning_summary_part.done",
          `,${item},"summary_index":0,"part":{"type":"summary_text","text":${q(text)}}`,
        );
      }
      meta("response.output_item.done", `,"output_index":${index++},"item":${j(it.reasoning)}`);
    }
    if (it.message) {
      const item = `"item_id":"${it.message.id}","output_index":${index},"content_index":0`;
      const text = a.text.join("");
      meta(
        "response.output_item.added",
        `,"output_index":${index},"item":${
          j({ ...it.message, status: "in_progress", content: [] })
        }`,
      );
      meta(
        "response.content_part.added",
        `,${item},"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`,
      );
      for (const d of a.text) {
        content("response.output_text.delta", `,${item},"delta":${q(d)},"logprobs":[]`);
      }
      meta("response.output_text.done", `,${item},"text":${q(text)},"logprobs":[]`);
      meta(
        "response.content_part.done",
        `,${item},"part":{"type":"output_text","annotations":[],"logprobs":[],"text":${q(text)}}`,
      );
      meta("response.output_item.done", `,"output_index":${index++},"item":${j(it.message)}`);
    }
    a.tools.forEach((t, i) => {
      const call = it.calls[i];
      const item = `"item_id":"${call.id}","output_index":${index}`;
      // A custom tool's input streams as text; a function's arguments as JSON text.
      const [field, events] = t.custom
        ? ["input", "response.custom_tool_call_input"]
        : ["arguments", "response.function_call_arguments"];
      meta(
        "response.output_item.added",
        `,"output_index":${index},"item":${j({ ...call, status: "in_progress", [field]: "" })}`,
      );
      for (const d of t.chunks) content(`${events}.delta`, `,${item},"delta":${q(d)}`);
      meta(`${events}.done`, `,${item},"${field}":${q(t.args)}`);
      meta("response.output_item.done", `,"output_index":${index++},"item":${j(call)}`);
    });
  }

  const tailStart = f.list.length;
  const inc = incomplete(a);
  const end = response(a, body, inc ? "incomplete" : "completed", outputOf(it), {
    usage: usage(a),
    incomplete: inc,
  });
  meta(inc ? "response.incomplete" : "response.completed", `,"response":${j(end)}`, a.reportUsage);

  return {
    frames: f.finish(),
    tailStart,
    fail: (sent: number) => failFrames(a, body, sent, SERVER_ERROR),
  };
}

interface StreamErrorFields {
  type: string;
  code: string;
  message: string;
  param: string | null;
}

const SERVER_ERROR: StreamErrorFields = {
  type: "server_error",
  code: "server_error",
  message: FAIL_MESSAGE,
  param: null,
};

/** The `error` event and `response.failed` that end a failed stream. */
function failFrames(
  a: Answer,
  body: Record<string, unknown>,
  sent: number,
  e: StreamErrorFields,
): string {
  const j = JSON.stringify;
  const failed = response(a, body, "failed", [], {
    usage: null,
    error: { code: e.code, message: e.message },
  });
  return `event: error\ndata: {"type":"error","sequence_number":${sent},"error":${j(e)}}\n\n` +
    `event: response.failed\ndata: {"type":"response.failed","sequence_number":${sent + 1},` +
    `"response":${j(failed)}}\n\n`;
}

/**
 * A streamed input past the context window: OpenAI answers 200, `response.created` and
 * `response.in_progress`, then the error and `response.failed` with `context_length_exceeded`.
 */
export function responsesOverflowStream(a: Answer, body: Record<string, unknown>): StreamParts {
  return {
    ...responsesStream(a, body),
    fail: (sent) =>
      failFrames(a, body, sent, {
        type: "invalid_request_error",
        code: "context_length_exceeded",
        message: RESPONSES_CONTEXT_MESSAGE,
        param: "input",
      }),
  };
}

export function responsesWhole(
  a: Answer,
  body: Record<string, unknown>,
  keyTag = "",
): string {
  const it = items(
    a,
    a.reasoning.length > 0 || a.hiddenReasoning > 0,
    wantsSources(body),
    wantsEncrypted(body) ? keyTag : undefined,
  );
  if (compactionAsked(body)) it.compaction = compactionItem(a, keyTag);
  const inc = incomplete(a);
  return JSON.stringify(
    response(a, body, inc ? "incomplete" : "completed", outputOf(it), {
      usage: usage(a),
      incomplete: inc,
    }),
  );
}

/**
 * Tools declared in a responses request's `tools`, a namespace's members under their own
 * name (as the API calls them, with the `namespace` beside it).
 */
export function responsesTools(body: Record<string, unknown>): DeclaredTool[] {
  return declaredTools(body.tools);
}

function declaredTools(tools: unknown, namespace?: string): DeclaredTool[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t): DeclaredTool[] => {
    const d = obj(t);
    if (typeof d.name !== "string") return [];
    if (d.type === "namespace") return declaredTools(d.tools, d.name);
    return [{
      name: d.name,
      schema: d.parameters,
      ...(d.type === "custom" ? { custom: true } : {}),
      ...(namespace ? { namespace } : {}),
    }];
  });
}

/** The answer's shape a responses request asks for (`text.format`). */
export function responsesFormat(body: Record<string, unknown>): AnswerInput["format"] {
  const f = obj(obj(body.text).format);
  if (f.type === "json_object") return "json_object";
  return f.type === "json_schema" ? obj(f.schema) : undefined;
}

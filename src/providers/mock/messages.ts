/**
 * Anthropic messages, rendered as recorded in ../shared/fixtures/upstream/anthropic/*.sse:
 * `event: <type>\ndata: <json>\n\n`, with message_start (input usage), one
 * content_block_start/delta…/stop per block, a `ping` after the first block start,
 * message_delta (stop reason, output usage) and message_stop. Like the real API, the JSON
 * is padded with spaces before its closing brace, and `ping` is `{"type": "ping"}`.
 *
 * Anthropic's `input_tokens` is the uncached part only; cache reads and writes are reported
 * beside it.
 */
import type { Answer, AnswerInput, DeclaredTool, Finish } from "./answer.ts";
import { Frames, type StreamParts } from "./plan.ts";
import { alnum, obj, q } from "./util.ts";

const STOP: Record<Finish, string> = {
  stop: "end_turn",
  length: "max_tokens",
  content_filter: "refusal",
  tool: "tool_use",
};

const ids = (a: Answer) => ({
  id: "msg_01" + alnum(a.seed, 22),
  tool: (i: number) => "toolu_01" + alnum(a.seed + i + 1, 22),
  signature: "Eq" + alnum(a.seed ^ 0x5a5a5a5a, 62) + "==",
});

/** Search `i` of an answer: the server tool's call and its result block, as the API sends. */
function search(a: Answer, i: number) {
  const id = "srvtoolu_01" + alnum(a.seed + 101 + i, 22);
  return {
    id,
    input: { query: `mock search ${i + 1}` },
    result: {
      type: "web_search_tool_result",
      tool_use_id: id,
      content: [{
        type: "web_search_result",
        title: `Mock result ${i + 1}`,
        url: `https://example.com/mock/${i + 1}`,
        encrypted_content: "Eo" + alnum(a.seed + 201 + i, 40),
        page_age: null,
      }],
    },
  };
}

/** Whether the request turned extended thinking on. */
export function wantsThinking(body: Record<string, unknown>): boolean {
  const t = obj(body.thinking).type;
  return t === "enabled" || t === "adaptive";
}

function startUsage(a: Answer): Record<string, unknown> {
  const u = a.usage;
  return {
    input_tokens: u.uncached,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: 0 },
    output_tokens: 1,
    service_tier: "standard",
  };
}

/** The server-tool counts, as the API reports them in the final usage, when a search ran. */
function searchUsage(a: Answer): string {
  const n = a.usage.webSearches;
  return n > 0 ? `,"server_tool_use":{"web_search_requests":${n},"web_fetch_requests":0}` : "";
}

function event(type: string, json: string, n: number): string {
  return `event: ${type}\ndata: ${json.slice(0, -1)}${" ".repeat((n * 5) % 13)}}\n\n`;
}

export function messagesStream(a: Answer): StreamParts {
  const { id, tool, signature } = ids(a);
  const f = new Frames(a.hiddenReasoning);
  let n = 0;
  const meta = (type: string, json: string, usage = false) => f.meta(event(type, json, n++), usage);
  const content = (type: string, json: string) => f.content(event(type, json, n++));

  const message: Record<string, unknown> = {
    model: a.model,
    id,
    type: "message",
    role: "assistant",
    content: [],
    stop_reason: null,
    stop_sequence: null,
  };
  if (a.reportUsage) message.usage = startUsage(a);
  meta("message_start", JSON.stringify({ type: "message_start", message }));

  let index = 0;
  let pinged = false;
  const start = (block: string) => {
    meta(
      "content_block_start",
      `{"type":"content_block_start","index":${index},"content_block":${block}}`,
    );
    if (!pinged) f.meta(`event: ping\ndata: {"type": "ping"}\n\n`);
    pinged = true;
  };
  const delta = (d: string) => `{"type":"content_block_delta","index":${index},"delta":${d}}`;
  const stop = () => meta("content_block_stop", `{"type":"content_block_stop","index":${index++}}`);

  // Web searches first, as the model searches before it answers: each a server_tool_use
  // block (its query streamed as input JSON) and its result block.
  for (let i = 0; i < a.usage.webSearches; i++) {
    const s = search(a, i);
    start(`{"type":"server_tool_use","id":"${s.id}","name":"web_search","input":{}}`);
    const query = JSON.stringify(s.input);
    for (const piece of [query.slice(0, 9), query.slice(9)]) {
      meta("content_block_delta", delta(`{"type":"input_json_delta","partial_json":${q(piece)}}`));
    }
    stop();
    start(JSON.stringify(s.result));
    stop();
  }
  if (a.reasoning.length > 0) {
    start(`{"type":"thinking","thinking":"","signature":""}`);
    for (const t of a.reasoning) {
      content("content_block_delta", delta(`{"type":"thinking_delta","thinking":${q(t)}}`));
    }
    meta("content_block_delta", delta(`{"type":"signature_delta","signature":"${signature}"}`));
    stop();
  }
  if (a.text.length > 0 || a.tools.length === 0) {
    start(`{"type":"text","text":""}`);
    for (const t of a.text) {
      content("content_block_delta", delta(`{"type":"text_delta","text":${q(t)}}`));
    }
    stop();
  }
  a.tools.forEach((t, i) => {
    start(`{"type":"tool_use","id":"${tool(i)}","name":${q(t.name)},"input":{}}`);
    meta("content_block_delta", delta(`{"type":"input_json_delta","partial_json":""}`));
    for (const piece of t.chunks) {
      content(
        "content_block_delta",
        delta(`{"type":"input_json_delta","partial_json":${q(piece)}}`),
      );
    }
    stop();
  });
  if (!pinged) f.meta(`event: ping\ndata: {"type": "ping"}\n\n`);

  const tailStart = f.list.length;
  const u = a.usage;
  const usage = a.reportUsage
    ? `,"usage":{"input_tokens":${u.uncached},"cache_creation_input_tokens":${u.cacheWrite},` +
      `"cache_read_input_tokens":${u.cacheRead},"output_tokens":${u.output}${searchUsage(a)}}`
    : "";
  meta(
    "message_delta",
    `{"type":"message_delta","delta":{"stop_reason":"${
      STOP[a.finish]
    }","stop_sequence":null}${usage}}`,
    a.reportUsage,
  );
  meta("message_stop", `{"type":"message_stop"}`);
  return {
    frames: f.finish(),
    tailStart,
    fail: () =>
      `event: error\ndata: {"type":"error","error":{"details":null,"type":"api_error","message":"Internal server error"}}\n\n`,
  };
}

export function messagesWhole(a: Answer): string {
  const { id, tool, signature } = ids(a);
  const content: unknown[] = [];
  for (let i = 0; i < a.usage.webSearches; i++) {
    const s = search(a, i);
    content.push({ type: "server_tool_use", id: s.id, name: "web_search", input: s.input });
    content.push(s.result);
  }
  if (a.reasoning.length > 0) {
    content.push({ type: "thinking", thinking: a.reasoning.join(""), signature });
  }
  if (a.text.length > 0 || a.tools.length === 0) {
    content.push({ type: "text", text: a.text.join("") });
  }
  a.tools.forEach((t, i) =>
    content.push({ type: "tool_use", id: tool(i), name: t.name, input: JSON.parse(t.args) })
  );
  const out: Record<string, unknown> = {
    model: a.model,
    id,
    type: "message",
    role: "assistant",
    content,
    stop_reason: STOP[a.finish],
    stop_sequence: null,
  };
  if (a.reportUsage) {
    out.usage = { ...startUsage(a), output_tokens: a.usage.output };
    if (a.usage.webSearches > 0) {
      (out.usage as Record<string, unknown>).server_tool_use = {
        web_search_requests: a.usage.webSearches,
        web_fetch_requests: 0,
      };
    }
  }
  return JSON.stringify(out);
}

/** Tools declared in a messages request's `tools`. */
export function messagesTools(body: Record<string, unknown>): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools.flatMap((t) => {
    const d = obj(t);
    if (typeof d.name !== "string") return [];
    const type = typeof d.type === "string" ? d.type : "";
    const server = type.startsWith("web_search_")
      ? "web_search" as const
      : SERVER_TOOLS.some((prefix) => type.startsWith(prefix))
      ? "other" as const
      : undefined;
    return [{ name: d.name, schema: d.input_schema, ...(server ? { server } : {}) }];
  });
}

/** Anthropic's server tools besides the search (`bash_*`, `text_editor_*` are the client's). */
const SERVER_TOOLS = ["web_fetch_", "code_execution_"];

/**
 * The answer's shape a messages request asks for: `output_config.format`, or the
 * structured-outputs beta's `output_format`.
 */
export function messagesFormat(body: Record<string, unknown>): AnswerInput["format"] {
  const f = obj(obj(body.output_config).format ?? body.output_format);
  return f.type === "json_schema" ? obj(f.schema) : undefined;
}

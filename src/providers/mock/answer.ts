/**
 * What the mock "generates" for a text request, independent of wire format: text deltas,
 * reasoning deltas, tool calls, finish reason and usage. Each wire format (chat.ts,
 * messages.ts, responses.ts) only renders this.
 *
 * Token accounting: one text, reasoning or tool-argument delta is one output token.
 * Reasoning a format does not show (chat without OpenRouter's `reasoning`; responses without
 * `reasoning.summary`) is "hidden": it still counts, and is charged with the first content
 * event.
 */
import type { Controls } from "./controls.ts";
import { instanceOf } from "./instance.ts";
import { fnv1a } from "./util.ts";

export interface MockDefaults {
  /** Delay before the first content event, ms (default 0). */
  firstTokenMs?: number;
  /** Delay before each later content event, ms (default 0). */
  tokenMs?: number;
  /** Answer length in tokens when no `tokens` marker is given (default 16). */
  tokens?: number;
}

export type Finish = "stop" | "length" | "content_filter" | "tool";

export interface ToolCall {
  name: string;
  /** The whole arguments JSON text (a custom tool's: its free-form input). */
  args: string;
  /** `args` split into the streamed pieces (at least three). */
  chunks: string[];
  /** A responses `custom` tool: called with text, not JSON. */
  custom?: boolean;
  /** The responses `namespace` the tool was declared in. */
  namespace?: string;
}

export interface AnswerUsage {
  /** All prompt tokens, cache reads and writes included. */
  input: number;
  /** Prompt tokens neither read from nor written to the cache. */
  uncached: number;
  cacheRead: number;
  cacheWrite: number;
  /** All output tokens, reasoning included. */
  output: number;
  reasoning: number;
  /** Web searches run (reported only when non-zero, so other answers keep their bytes). */
  webSearches: number;
}

export interface Answer {
  /** Hash of the request; ids are derived from it. */
  seed: number;
  model: string;
  text: string[];
  reasoning: string[];
  hiddenReasoning: number;
  tools: ToolCall[];
  finish: Finish;
  /** Always computed; `reportUsage` says whether the wire shows it. */
  usage: AnswerUsage;
  reportUsage: boolean;
}

export interface AnswerInput {
  raw: string;
  model: unknown;
  controls: Controls;
  defaults: Required<MockDefaults>;
  promptTokens: number;
  /** The request's output cap (max_tokens and the like), if any. */
  maxTokens: unknown;
  /** Tool results the request carries (the steps of an agent's loop so far). */
  toolResults: number;
  /** Functions declared by the request, in order, with their parameters' schemas. */
  tools: DeclaredTool[];
  /**
   * The shape the request asks the answer to take: a JSON schema (structured outputs), or
   * `"json_object"` (JSON mode). The answer is then JSON that fits it.
   */
  format?: Record<string, unknown> | "json_object";
  /** Whether this format shows reasoning as deltas for this request. */
  showReasoning: boolean;
}

export interface DeclaredTool {
  name: string;
  schema?: unknown;
  /** A responses `custom` tool (free-form input, e.g. Codex's `apply_patch`). */
  custom?: boolean;
  /** The responses `namespace` it is a member of (Codex's MCP servers, sub-agents). */
  namespace?: string;
  /** An Anthropic server tool (web search, fetch, code execution): run by the vendor, never called. */
  server?: "web_search" | "other";
}

/** Characters per delta of a JSON answer. */
const jsonChunkChars = 4;

/** Reasoning tokens when the request asks for visible reasoning but no marker says how many. */
const reasoningDefault = 4;
/** Characters per delta when echoing the request body. */
const echoChunkChars = 16;

const textDeltas: string[] = [];
const thinkDeltas: string[] = [];

/** Delta `i` of the fixed answer: "tok0", " tok1", " tok2", … */
export function textDelta(i: number): string {
  return textDeltas[i] ??= (i === 0 ? "tok" : " tok") + i;
}

function thinkDelta(i: number): string {
  return thinkDeltas[i] ??= (i === 0 ? "think" : " think") + i;
}

/** The full answer text of `n` tokens, for tests. */
export function answerText(n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += textDelta(i);
  return s;
}

export function buildAnswer(a: AnswerInput): Answer {
  const c = a.controls;
  const asked = c.tools ?? (c.tool !== undefined ? 1 : 0);
  const toolCount = c.steps !== undefined && a.toolResults >= c.steps ? 0 : asked;
  let finish: Finish = toolCount > 0 ? "tool" : "stop";

  let text: string[];
  if (c.echo) {
    text = split(a.raw, echoChunkChars);
  } else if (a.format !== undefined && toolCount === 0) {
    const json = a.format === "json_object"
      ? { answer: answerText(c.tokens ?? a.defaults.tokens) }
      : instanceOf(a.format);
    text = split(JSON.stringify(json), jsonChunkChars);
    const cap = a.maxTokens;
    if (typeof cap === "number" && cap >= 0 && text.length > cap) {
      text = text.slice(0, Math.floor(cap));
      finish = "length";
    }
  } else {
    let n = c.tokens ?? (toolCount > 0 ? 0 : a.defaults.tokens);
    const cap = a.maxTokens;
    if (typeof cap === "number" && cap >= 0 && n > cap) {
      n = Math.floor(cap);
      finish = "length";
    }
    text = [];
    for (let i = 0; i < n; i++) text.push(textDelta(i));
  }
  if (c.finish) finish = c.finish;

  const r = c.reasoning ?? (a.showReasoning ? reasoningDefault : 0);
  const reasoning: string[] = [];
  if (a.showReasoning) { for (let i = 0; i < r; i++) reasoning.push(thinkDelta(i)); }

  const tools: ToolCall[] = [];
  for (let i = 0; i < toolCount; i++) {
    const name = i === 0
      ? c.tool ?? a.tools[0]?.name ?? "mock_tool"
      : a.tools[i]?.name ?? tools[0].name;
    const declared = a.tools.find((t) => t.name === name);
    const args = declared?.custom
      ? c.args ?? `mock input ${i + 1}`
      : givenArguments(c.args) ?? JSON.stringify(argumentsFor(declared?.schema, i + 1));
    tools.push({
      name,
      args,
      chunks: split(args, Math.ceil(args.length / 4)),
      ...(declared?.custom ? { custom: true } : {}),
      ...(declared?.namespace ? { namespace: declared.namespace } : {}),
    });
  }

  const cacheRead = c.cacheRead ?? 0;
  const cacheWrite = c.cacheWrite ?? 0;
  let output = text.length + r;
  for (const t of tools) output += t.chunks.length;
  return {
    seed: fnv1a(a.raw),
    model: c.model ?? (typeof a.model === "string" && a.model !== "" ? a.model : "mock-model"),
    text,
    reasoning,
    hiddenReasoning: a.showReasoning ? 0 : r,
    tools,
    finish,
    usage: {
      input: a.promptTokens + cacheRead + cacheWrite,
      uncached: a.promptTokens,
      cacheRead,
      cacheWrite,
      output,
      reasoning: r,
      webSearches: c.searches ?? 0,
    },
    reportUsage: c.usage !== false,
  };
}

/**
 * A call's arguments: made up to fit the tool's parameters where they name any (a client may
 * validate them), else the fixed `{"q": "mock query <n>"}`.
 */
function argumentsFor(schema: unknown, n: number): unknown {
  const s = schema as { properties?: unknown; additionalProperties?: unknown } | undefined;
  const props = s?.properties;
  if (typeof props === "object" && props !== null && Object.keys(props).length > 0) {
    return instanceOf(schema, n);
  }
  return s?.additionalProperties === false ? {} : { q: `mock query ${n}` };
}

/** A marker's arguments for a function: only a JSON object, as the vendors send, else none. */
function givenArguments(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? JSON.stringify(v) : undefined;
  } catch {
    return undefined;
  }
}

/** Splits `s` into pieces of `size` UTF-16 units, never inside a surrogate pair. */
export function split(s: string, size: number): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    let j = Math.min(s.length, i + size);
    const last = s.charCodeAt(j - 1);
    if (j < s.length && last >= 0xd800 && last <= 0xdbff) j++;
    out.push(s.slice(i, j));
    i = j;
  }
  return out;
}

/**
 * The client request of `POST /v1/messages`, in the vendor's native shape
 * (https://docs.anthropic.com/en/api/messages). Strict on the fields we read, open on the rest:
 * unknown top-level fields (`context_management`, `output_config`, `container`, …) and unknown
 * content block types (`document`, `search_result`, server tool blocks, …) are accepted, so a
 * same-protocol upstream receives them untouched; transcoding may drop what it cannot express.
 */
import { z } from "zod";
import { badRequest, GatewayError } from "../../http/gateway_error.ts";
import { isObject } from "../json.ts";
import { article, fieldName, type Issue } from "../validation.ts";
import { stopSequenceCharsMax, stopSequencesMax } from "../../lib/bounds.ts";

export interface CacheControlParam {
  type: string;
  ttl?: string;
}

interface BlockBase {
  cache_control?: CacheControlParam | null;
}

export interface TextBlockParam extends BlockBase {
  type: "text";
  text: string;
}

export type ImageSource =
  | { type: "base64"; media_type: string; data: string }
  | { type: "url"; url: string }
  | { type: "file"; file_id: string };

export interface ImageBlockParam extends BlockBase {
  type: "image";
  source: ImageSource;
}

export interface ToolUseBlockParam extends BlockBase {
  type: "tool_use";
  id: string;
  name: string;
  input: Record<string, unknown>;
}

export interface ToolResultBlockParam extends BlockBase {
  type: "tool_result";
  tool_use_id: string;
  content?: string | ContentBlockParam[];
  is_error?: boolean;
}

export interface ThinkingBlockParam {
  type: "thinking";
  thinking: string;
  signature: string;
}

export interface RedactedThinkingBlockParam {
  type: "redacted_thinking";
  data: string;
}

export interface DocumentBlockParam extends BlockBase {
  type: "document";
  source: Record<string, unknown> & { type: string };
}

/** Any block type we do not model (search_result, server_tool_use, web_search_tool_result, …). */
export interface OtherBlockParam extends BlockBase {
  type: string;
  [field: string]: unknown;
}

export type ContentBlockParam =
  | TextBlockParam
  | ImageBlockParam
  | ToolUseBlockParam
  | ToolResultBlockParam
  | ThinkingBlockParam
  | RedactedThinkingBlockParam
  | DocumentBlockParam
  | OtherBlockParam;

export interface MessageParam {
  /**
   * `system` is a mid-conversation system message (Claude Code sends it under the
   * `mid-conversation-system-2026-04-07` beta); the public API documents user and assistant.
   */
  role: "user" | "assistant" | "system";
  content: string | ContentBlockParam[];
}

/** A client tool, or a server tool (`type` other than `custom`, e.g. `web_search_20250305`). */
export interface ToolParam {
  type?: string;
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  cache_control?: CacheControlParam | null;
  [field: string]: unknown;
}

export interface ToolChoiceParam {
  type: "auto" | "any" | "tool" | "none";
  name?: string;
  disable_parallel_tool_use?: boolean;
}

export type ThinkingParam =
  | { type: "enabled"; budget_tokens: number }
  | { type: "disabled" }
  | { type: "adaptive" };

export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: MessageParam[];
  system?: string | TextBlockParam[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop_sequences?: string[];
  stream?: boolean;
  tools?: ToolParam[];
  tool_choice?: ToolChoiceParam;
  thinking?: ThinkingParam;
  metadata?: { user_id?: string | null };
  /** Effort (`low`…`max`) and structured output format; newer API, read when present. */
  output_config?: { effort?: string; format?: Record<string, unknown> | null };
  [field: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// The zod schema. It validates only; `validateMessagesRequest` returns the client's own object
// so that pass-through forwards exactly what the client sent (key order included).

/** A JSON object whose inside we do not look at (tool input, input_schema): cheap to check. */
const anyObject = z.custom<Record<string, unknown>>(isObject, { message: "must be an object" });

const cacheControl = z.looseObject({ type: z.string(), ttl: z.string().optional() }).nullish();

const textBlock = z.looseObject({ type: z.literal("text"), text: z.string() });

const imageSource = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("base64"), media_type: z.string(), data: z.string() }),
  z.looseObject({
    type: z.literal("url"),
    url: z.string().regex(/^https?:\/\//i, "must be an http(s) URL"),
  }),
  z.looseObject({ type: z.literal("file"), file_id: z.string() }),
]);

/**
 * One content block: `type` decides the schema; a type we do not know only needs to be a
 * string. (A zod union over known types plus a catch-all would report every failing branch.)
 */
const block: z.ZodType<ContentBlockParam> = z
  .looseObject({ type: z.string(), cache_control: cacheControl })
  .check((ctx) => {
    const schema = KNOWN_BLOCKS[ctx.value.type];
    if (!schema) return;
    const r = schema.safeParse(ctx.value);
    if (!r.success) forwardIssues(ctx, r.error.issues);
  }) as z.ZodType<ContentBlockParam>;

const KNOWN_BLOCKS: Record<string, z.ZodType> = {
  text: textBlock,
  image: z.looseObject({ source: imageSource }),
  tool_use: z.looseObject({ id: z.string(), name: z.string(), input: anyObject }),
  tool_result: z.looseObject({
    tool_use_id: z.string(),
    content: z.union([z.string(), z.array(z.lazy(() => block))]).optional(),
    is_error: z.boolean().optional(),
  }),
  thinking: z.looseObject({ thinking: z.string(), signature: z.string() }),
  redacted_thinking: z.looseObject({ data: z.string() }),
  document: z.looseObject({ source: z.looseObject({ type: z.string() }) }),
};

const message = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(block)]),
});

/** Client tools need a name and a JSON schema; server tools are named by their `type`. */
const tool = z.looseObject({ type: z.string().optional() }).check((ctx) => {
  const t = ctx.value.type;
  const schema = t === undefined || t === "custom" ? customTool : serverTool;
  const r = schema.safeParse(ctx.value);
  if (!r.success) forwardIssues(ctx, r.error.issues);
});
const customTool = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: anyObject,
  cache_control: cacheControl,
});
const serverTool = z.looseObject({ type: z.string(), name: z.string().optional() });

const toolChoice = z.looseObject({
  type: z.enum(["auto", "any", "tool", "none"]),
  name: z.string().optional(),
  disable_parallel_tool_use: z.boolean().optional(),
}).check((ctx) => {
  if (ctx.value.type === "tool" && typeof ctx.value.name !== "string") {
    ctx.issues.push({
      code: "custom",
      path: ["name"],
      message: 'is required when type is "tool"',
      input: ctx.value,
    });
  }
});

const thinking = z.discriminatedUnion("type", [
  // Anthropic's documented minimum budget is 1024 tokens.
  z.looseObject({ type: z.literal("enabled"), budget_tokens: z.int().min(1024) }),
  z.looseObject({ type: z.literal("disabled") }),
  z.looseObject({ type: z.literal("adaptive") }),
]);

const messagesRequest = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.int().min(1),
  messages: z.array(message).min(1),
  system: z.union([z.string(), z.array(textBlock.extend({ cache_control: cacheControl }))])
    .optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  top_k: z.int().min(0).optional(),
  stop_sequences: z.array(z.string().max(stopSequenceCharsMax)).max(stopSequencesMax).optional(),
  stream: z.boolean().optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).optional(),
  output_config: z.looseObject({ effort: z.string().optional() }).nullish(),
});

/**
 * Validates a parsed JSON body as a messages request. Throws a 400 `GatewayError` whose
 * message names the first offending field (`messages[0].content[1].text: must be a string`).
 */
export function validateMessagesRequest(body: unknown): MessagesRequest {
  if (!isObject(body)) throw badRequest("request body must be a JSON object");
  if (body.thread != null) {
    // Message threads keep the conversation at the provider between turns; the gateway stores
    // none, and its turns may go to other vendors. Anthropic's own code for a request that
    // cannot be threaded: the SDKs' tool runner then sends the whole history every turn.
    throw new GatewayError(
      400,
      "thread: message threads are not supported; send the whole conversation in messages",
      { extra: { details: { error_code: "thread_unsupported_request", unsupported: ["thread"] } } },
    );
  }
  const r = messagesRequest.safeParse(body);
  if (!r.success) {
    const { path, message } = problemOf(r.error.issues[0]);
    throw badRequest(`${fieldName(path, "body")}: ${message}`);
  }
  const advisor = (r.data.tools ?? []).findIndex((t) => t.type?.startsWith("advisor_"));
  if (advisor >= 0) {
    // Anthropic runs the advisor on the model the tool names, within the call, and bills its
    // tokens at that model's prices (an `advisor_message` entry of the usage's iterations):
    // metered here at the prices of the model asked, an Opus advisor's work would be billed
    // as Haiku's. No other vendor has the tool.
    throw badRequest(
      `tools[${advisor}]: the advisor tool is not supported: its advice comes from another ` +
        "model, billed at that model's own prices; ask that model as a call of its own",
    );
  }
  const choice = r.data.tool_choice;
  if (
    choice?.type === "tool" &&
    !(r.data.tools ?? []).some((t) => (t as { name?: unknown }).name === choice.name)
  ) {
    // Anthropic refuses it too; other upstreams would be offered no tool to call.
    throw badRequest(
      `tool_choice.name: ${JSON.stringify(choice.name)} is not the name of one of the tools`,
    );
  }
  return body as MessagesRequest;
}

// ---------------------------------------------------------------------------------------------
// Error messages: "<path>: <what is wrong>", one issue, the deepest branch of a union.

/** Re-raises the issues of a nested schema run inside a `.check` as already-described ones. */
function forwardIssues(ctx: z.core.ParsePayload<unknown>, issues: Issue[]): void {
  for (const issue of issues) {
    const { path, message } = problemOf(issue);
    ctx.issues.push({ code: "custom", path, message, input: ctx.value });
  }
}

function problemOf(issue: Issue): { path: PropertyKey[]; message: string } {
  if (issue.code === "invalid_union" && issue.errors.length > 0) {
    const firsts = issue.errors.map((branch) => branch[0]).filter((i) => i !== undefined);
    const deepest = [...firsts].sort((a, b) => b.path.length - a.path.length)[0];
    if (deepest && deepest.path.length > 0) {
      const inner = problemOf(deepest);
      return { path: [...issue.path, ...inner.path], message: inner.message };
    }
    const expected = firsts.flatMap((i) => i.code === "invalid_type" ? [article(i.expected)] : []);
    if (expected.length > 0) {
      return { path: issue.path, message: `must be ${expected.join(" or ")}` };
    }
  }
  return { path: issue.path, message: describeProblem(issue) };
}

function describeProblem(issue: Issue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.message.endsWith("received undefined")
        ? "is required"
        : `must be ${article(issue.expected)}`;
    case "too_small":
      if (issue.origin === "array") return `must have at least ${issue.minimum} item(s)`;
      if (issue.origin === "string") return "must not be empty";
      return `must be ${issue.inclusive ? ">=" : ">"} ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "array") return `must have at most ${issue.maximum} item(s)`;
      if (issue.origin === "string") return `must be at most ${issue.maximum} character(s)`;
      return `must be ${issue.inclusive ? "<=" : "<"} ${issue.maximum}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union":
      // A discriminated union reports an unknown discriminator with no branch errors.
      return issue.errors.length === 0 ? "has an unsupported value" : "has an invalid shape";
    default:
      return issue.message;
  }
}

/**
 * The client request of `POST /v1/responses` (https://platform.openai.com/docs/api-reference/responses/create).
 * Strict on the fields the gateway reads, open on the rest: unknown fields at any level, unknown
 * input item types, content part types and tool types are accepted, so that a same-protocol
 * upstream receives them untouched (Codex sends `client_metadata`, `tool_search` tools,
 * `prompt_cache_key`, …); transcoding drops what the internal form cannot express. `null` is
 * accepted wherever a field is optional.
 *
 * The gateway is stateless (spec: "nothing is stored server-side"), so the fields that refer
 * to stored state — `previous_response_id`, `conversation`, `background` — are rejected with
 * a 400 saying so; `store` is accepted with any value and ignored.
 *
 * Every failure is a `GatewayError(400)` whose message names the field, e.g.
 * `input[2].content[0].image_url must be an http(s) URL or a data: URL`.
 */
import { adoptChatForm } from "./chat_form.ts";
import { ToolMap } from "./tools.ts";
import { z } from "zod";
import { badRequest } from "../../http/gateway_error.ts";
import { defaultIssueMessage, fieldName, type Issue, shallowPhrase } from "../validation.ts";
import { adoptAboveXhighIn } from "../above_xhigh.ts";

const HTTP_URL = /^https?:\/\/\S+$/i;
const DATA_URL = /^data:[a-z0-9.+-]+\/[a-z0-9.+-]+(;[^,]*)?,/i;
const imageUrl = z.string().refine(
  (u) => HTTP_URL.test(u) || DATA_URL.test(u),
  "must be an http(s) URL or a data: URL",
);

const nonEmpty = z.string().min(1, "must not be empty");

/**
 * Checks a value of an open union (parts, items, tools) against the schema of its `type` and
 * reports that schema's issues as the value's own: clearer messages than a union gives.
 */
function forward(ctx: z.core.ParsePayload<unknown>, schema: z.ZodType): void {
  const r = schema.safeParse(ctx.value, { error: defaultIssueMessage });
  if (r.success) return;
  for (const iss of r.error.issues) {
    ctx.issues.push({ ...iss, input: ctx.value } as unknown as z.core.$ZodRawIssue);
  }
}

// ---- content parts -------------------------------------------------------------------------

const InputText = z.looseObject({ type: z.literal("input_text"), text: z.string() });

const InputImage = z.looseObject({
  type: z.literal("input_image"),
  image_url: imageUrl.nullish(),
  file_id: z.string().nullish(),
  detail: z.string().nullish(),
}).refine((p) => p.image_url != null || p.file_id != null, {
  message: "needs image_url or file_id",
});

const InputFile = z.looseObject({ type: z.literal("input_file") });

const OutputText = z.looseObject({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.array(z.unknown()).nullish(),
});

const Refusal = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });

/** A part of a type the gateway does not read: kept for pass-through. */
const OtherPart = z.looseObject({ type: z.string() });

const KNOWN_PARTS: Record<string, z.ZodType> = {
  input_text: InputText,
  input_image: InputImage,
  input_file: InputFile,
  output_text: OutputText,
  refusal: Refusal,
};

export type ContentPart =
  | z.infer<typeof InputText>
  | z.infer<typeof InputImage>
  | z.infer<typeof InputFile>
  | z.infer<typeof OutputText>
  | z.infer<typeof Refusal>
  | z.infer<typeof OtherPart>;

/**
 * The Responses API's other part types: passed on to a responses upstream as sent (another
 * upstream has no counterpart for them, and they are left out there).
 */
const OTHER_PART_TYPES = new Set(["input_audio", "summary_text", "reasoning_text"]);

/**
 * A content part of a known type is checked against that type; one of another Responses type
 * is kept; any other type is refused, as the Responses API refuses it (sent to another
 * upstream it would vanish, and the turn with it).
 */
const Part = z.looseObject({ type: z.string() }).check((ctx) => {
  const type = ctx.value.type;
  if (Object.hasOwn(KNOWN_PARTS, type)) forward(ctx, KNOWN_PARTS[type]);
  else if (!OTHER_PART_TYPES.has(type)) {
    ctx.issues.push({
      code: "custom",
      message: `${JSON.stringify(type)} is not a content part type; use one of ` +
        [...Object.keys(KNOWN_PARTS), ...OTHER_PART_TYPES].map((t) => JSON.stringify(t))
          .join(", "),
      input: ctx.value,
      path: ["type"],
    });
  }
}) as unknown as z.ZodType<ContentPart>;

const content = z.union([z.string(), z.array(Part)]);

// ---- input items ---------------------------------------------------------------------------

const MessageItem = z.looseObject({
  type: z.literal("message").nullish(),
  id: z.string().nullish(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content,
  status: z.string().nullish(),
});

const FunctionCallItem = z.looseObject({
  type: z.literal("function_call"),
  id: z.string().nullish(),
  call_id: nonEmpty,
  name: nonEmpty,
  /** Set on a call of a member of a `namespace` tool. */
  namespace: z.string().nullish(),
  arguments: z.string(),
  status: z.string().nullish(),
});

const FunctionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  id: z.string().nullish(),
  call_id: nonEmpty,
  output: content,
  status: z.string().nullish(),
});

const SummaryText = z.looseObject({ type: z.literal("summary_text"), text: z.string() });

const ReasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: z.string().nullish(),
  summary: z.array(SummaryText),
  encrypted_content: z.string().nullish(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().nullish() })).nullish(),
  status: z.string().nullish(),
});

const CustomToolCallItem = z.looseObject({
  type: z.literal("custom_tool_call"),
  id: z.string().nullish(),
  call_id: nonEmpty,
  name: nonEmpty,
  namespace: z.string().nullish(),
  input: z.string(),
});

const CustomToolCallOutputItem = z.looseObject({
  type: z.literal("custom_tool_call_output"),
  id: z.string().nullish(),
  call_id: nonEmpty,
  output: content,
});

/** An item of a type the gateway does not read (web_search_call, compaction, …). */
const OtherItem = z.looseObject({ type: z.string() });

export type MessageItem = z.infer<typeof MessageItem>;
export type FunctionCallItem = z.infer<typeof FunctionCallItem>;
export type FunctionCallOutputItem = z.infer<typeof FunctionCallOutputItem>;
export type ReasoningItem = z.infer<typeof ReasoningItem>;
export type CustomToolCallItem = z.infer<typeof CustomToolCallItem>;
export type CustomToolCallOutputItem = z.infer<typeof CustomToolCallOutputItem>;
export type OtherItem = z.infer<typeof OtherItem>;
export type InputItem =
  | MessageItem
  | FunctionCallItem
  | FunctionCallOutputItem
  | ReasoningItem
  | CustomToolCallItem
  | CustomToolCallOutputItem
  | OtherItem;

const KNOWN_ITEMS: Record<string, z.ZodType> = {
  message: MessageItem,
  function_call: FunctionCallItem,
  function_call_output: FunctionCallOutputItem,
  reasoning: ReasoningItem,
  custom_tool_call: CustomToolCallItem,
  custom_tool_call_output: CustomToolCallOutputItem,
};

/** Item types that point at stored state; the stateless gateway cannot resolve them. */
const STATEFUL_ITEMS = new Set(["item_reference"]);

/** An item without `type` is a message (the easy input form `{role, content}`). */
const Item = z.looseObject({ type: z.string().nullish() }).check((ctx) => {
  const type = ctx.value.type ?? "message";
  if (STATEFUL_ITEMS.has(type)) {
    ctx.issues.push({
      code: "custom",
      path: ["type"],
      input: ctx.value,
      // Clients that send references do so because `store` is true, the API's default (the
      // Vercel AI SDK's OpenAI provider on every step after the first): name the switch that
      // makes them send the items, or the user cannot tell what to change.
      message: `${JSON.stringify(type)} is not supported: the gateway is stateless and stores ` +
        "no items; send the items themselves (clients that send references, such as the Vercel " +
        "AI SDK's OpenAI provider, send the items with `store: false`)",
    });
    return;
  }
  if (!Object.hasOwn(KNOWN_ITEMS, type)) return;
  forward(ctx, KNOWN_ITEMS[type]);
}) as unknown as z.ZodType<InputItem>;

// ---- tools ---------------------------------------------------------------------------------

const FunctionTool = z.looseObject({
  type: z.literal("function"),
  name: nonEmpty,
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const CustomTool = z.looseObject({
  type: z.literal("custom"),
  name: nonEmpty,
  description: z.string().nullish(),
  format: z.looseObject({ type: z.string() }).nullish(),
});

/** A member of a namespace: a function or custom tool is checked as such. */
const NamespaceMember = z.looseObject({ type: nonEmpty }).check((ctx) => {
  if (ctx.value.type === "function") forward(ctx, FunctionTool);
  else if (ctx.value.type === "custom") forward(ctx, CustomTool);
});

/** Function and custom tools grouped under a name (Codex: MCP servers, multi-agent tools). */
const NamespaceTool = z.looseObject({
  type: z.literal("namespace"),
  name: nonEmpty,
  description: z.string().nullish(),
  tools: z.array(NamespaceMember),
});

/** A built-in tool (web_search, file_search, code_interpreter, tool_search, mcp, …). */
const OtherTool = z.looseObject({ type: nonEmpty });

export type FunctionTool = z.infer<typeof FunctionTool>;
export type CustomTool = z.infer<typeof CustomTool>;
export type NamespaceTool = z.infer<typeof NamespaceTool>;
export type ResponsesTool = FunctionTool | CustomTool | NamespaceTool | z.infer<typeof OtherTool>;

const KNOWN_TOOLS: Record<string, z.ZodType> = {
  function: FunctionTool,
  custom: CustomTool,
  namespace: NamespaceTool,
};

const ToolSchema = z.looseObject({ type: nonEmpty }).check((ctx) => {
  if (!Object.hasOwn(KNOWN_TOOLS, ctx.value.type)) return;
  forward(ctx, KNOWN_TOOLS[ctx.value.type]);
}) as unknown as z.ZodType<ResponsesTool>;

const NamedChoice = z.looseObject({ type: z.enum(["function", "custom"]), name: nonEmpty });

const ToolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  z.looseObject({ type: nonEmpty }).check((ctx) => {
    const t = ctx.value.type;
    if (t !== "function" && t !== "custom") return;
    forward(ctx, NamedChoice);
  }),
]);

export type ResponsesToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: string; name?: string; [k: string]: unknown };

// ---- text and reasoning --------------------------------------------------------------------

const TextFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: nonEmpty,
    schema: z.record(z.string(), z.unknown()),
    description: z.string().nullish(),
    strict: z.boolean().nullish(),
  }),
]);

const Effort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]);

const Reasoning = z.looseObject({
  effort: Effort.nullish(),
  summary: z.enum(["auto", "concise", "detailed"]).nullish(),
});

const range01 = "must be greater than 0 and at most 1";

export const ResponsesRequestSchema = z.looseObject({
  model: nonEmpty,
  input: z.union([z.string(), z.array(Item)]).nullish(),
  instructions: z.string().nullish(),
  tools: z.array(ToolSchema).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int("must be an integer").min(1, "must be at least 1").nullish(),
  temperature: z.number().min(0, "must be between 0 and 2").max(2, "must be between 0 and 2")
    .nullish(),
  top_p: z.number().gt(0, range01).max(1, range01).nullish(),
  reasoning: Reasoning.nullish(),
  text: z.looseObject({
    format: TextFormat.nullish(),
    verbosity: z.enum(["low", "medium", "high"]).nullish(),
  }).nullish(),
  include: z.array(z.string()).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  stream: z.boolean().nullish(),
  // `store` (any value) is accepted and ignored: the loose object keeps it.
  user: z.string().nullish(),
});

/** A validated request: the client's own object (unknown fields included), typed. */
export interface ResponsesRequest {
  model: string;
  input?: string | InputItem[] | null;
  instructions?: string | null;
  tools?: ResponsesTool[] | null;
  tool_choice?: ResponsesToolChoice | null;
  parallel_tool_calls?: boolean | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  reasoning?: {
    effort?: z.infer<typeof Effort> | null;
    summary?: "auto" | "concise" | "detailed" | null;
    [k: string]: unknown;
  } | null;
  text?: {
    format?: z.infer<typeof TextFormat> | null;
    verbosity?: string | null;
    [k: string]: unknown;
  } | null;
  include?: string[] | null;
  metadata?: Record<string, unknown> | null;
  stream?: boolean | null;
  store?: unknown;
  user?: string | null;
  [k: string]: unknown;
}

/**
 * Built-in tools OpenAI bills apart from the tokens the usage reports (per image, per
 * container, per search of a vector store), or whose state lives in the OpenAI account the
 * gateway calls with: the gateway could neither meter them nor give the client its own
 * files and containers. Each is a 400 naming the tool.
 */
const UNMETERED_TOOLS: Record<string, string> = {
  image_generation: "OpenAI bills its images apart from the tokens the gateway meters; " +
    "generate images with /v1/images/generations",
  code_interpreter: "OpenAI bills its containers apart from the tokens the gateway meters, " +
    "and keeps them in an account the gateway does not share with you",
  file_search: "its vector stores live in an OpenAI account the gateway does not share with " +
    "you, and OpenAI bills its searches apart from the tokens the gateway meters",
};

/** Fields that name server-side state; each is rejected while it holds a value. */
const STATEFUL: [field: string, why: string][] = [
  [
    "previous_response_id",
    "is not supported: the gateway is stateless and stores no responses; send the full " +
    "conversation history in `input` on every request",
  ],
  [
    "conversation",
    "is not supported: the gateway is stateless and stores no conversations; send the full " +
    "conversation history in `input` on every request",
  ],
  [
    // A prompt id names a template stored in an OpenAI project: the upstream's project is the
    // gateway's, not the client's, and other upstreams have no such thing.
    "prompt",
    "(a stored prompt template) is not supported: prompts are stored in an OpenAI project " +
    "the gateway does not share with you; send `instructions` and `input` themselves",
  ],
];

/**
 * Validates a parsed JSON body; throws `GatewayError(400)` naming the first bad field.
 * Returns the body itself (not a copy), typed, its chat-form input items rewritten.
 */
export function validateResponsesRequest(body: unknown): ResponsesRequest {
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    for (const [field, why] of STATEFUL) {
      if (b[field] !== undefined && b[field] !== null) throw badRequest(`${field} ${why}`);
    }
    if (Array.isArray(b.tools)) {
      for (const t of b.tools) {
        const type = (t as { type?: unknown } | null)?.type;
        const why = typeof type === "string" ? UNMETERED_TOOLS[type] : undefined;
        if (why) throw badRequest(`tool ${type} is not supported: ${why}`);
      }
    }
    if (b.background === true) {
      throw badRequest(
        "background is not supported: background responses are stored server-side and the " +
          "gateway is stateless; use stream: true for long generations",
      );
    }
  }
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    adoptChatForm(body as Record<string, unknown>);
    adoptAboveXhighIn(body as Record<string, unknown>, "reasoning");
  }
  const r = ResponsesRequestSchema.safeParse(body, { error: defaultIssueMessage });
  if (!r.success) throw badRequest(describe(r.error.issues[0]));
  checkChosenTools(body as Record<string, unknown>);
  return body as ResponsesRequest;
}

/**
 * A tool choice may name only declared tools, as OpenAI requires: other upstreams are
 * offered the named tools alone, and a name that matches none would leave them none.
 */
function checkChosenTools(body: Record<string, unknown>): void {
  const c = body.tool_choice as Record<string, unknown> | null | undefined;
  if (typeof c !== "object" || c === null) return;
  const chosen = c.type === "allowed_tools"
    ? (Array.isArray(c.tools) ? c.tools as Record<string, unknown>[] : [])
      .map((t, i) => ({ t, at: `tool_choice.tools[${i}]` }))
    : [{ t: c, at: "tool_choice" }];
  let map: ToolMap | undefined;
  for (const { t, at } of chosen) {
    if ((t?.type !== "function" && t?.type !== "custom") || typeof t.name !== "string") continue;
    map ??= new ToolMap(body);
    const internal = map.name(t.name, t.namespace as string | undefined);
    if (!map.tools.some((d) => d.name === internal)) {
      throw badRequest(
        `${at} names the ${t.type} tool ${
          JSON.stringify(t.name)
        }, which is not among the request's tools`,
      );
    }
  }
}

// ---- error messages ------------------------------------------------------------------------

/** One issue as "field message"; for a union, the branch that got furthest speaks. */
function describe(iss: Issue, prefix: PropertyKey[] = []): string {
  const path = [...prefix, ...iss.path];
  if (iss.code === "invalid_union") {
    const branches = iss.errors.filter((b) => b.length > 0);
    const deep = branches.filter((b) => b.some((i) => i.path.length > 0 || i.code === "custom"));
    if (deep.length >= 1) return describe(deep[deep.length - 1][0], path);
    const phrases = branches.map((b) => shallowPhrase(b[0])).filter((p) => p !== undefined);
    if (phrases.length > 0) return `${fieldName(path)} must be ${phrases.join(" or ")}`;
    const options = (iss as unknown as { options?: unknown[] }).options;
    if (options?.length) {
      return `${fieldName(path)} must be one of ${
        options.map((o) => JSON.stringify(o)).join(", ")
      }`;
    }
    return `${fieldName(path)} is invalid`;
  }
  return `${fieldName(path)} ${iss.message}`;
}

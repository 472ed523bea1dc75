/**
 * The client request of `POST /v1/chat/completions`: strict where the spec (and the OpenAI
 * API it mirrors) sets a rule, lenient to extras — unknown fields at any level are kept, so
 * that pass-through sends them on and provider-specific options (`cache_control`, `top_k`,
 * `provider`, …) survive. `null` is accepted wherever a field is optional, as the OpenAI
 * API does (several client libraries send `"stop": null`).
 *
 * Every failure is a `GatewayError(400)` whose message names the field, e.g.
 * `messages[2].content[0].image_url.url must be an http(s) URL or a base64 data:image URL`.
 */
import { z } from "zod";
import { badRequest } from "../../http/gateway_error.ts";
import { isTextDataUrl } from "../../events/text_request.ts";
import { defaultIssueMessage, fieldName, type Issue, shallowPhrase } from "../validation.ts";
import { adoptAboveXhighAt } from "../above_xhigh.ts";

const between = (lo: number, hi: number) => `must be between ${lo} and ${hi}`;

/** A number in [lo, hi]. */
const range = (lo: number, hi: number) =>
  z.number().min(lo, between(lo, hi)).max(hi, between(lo, hi));

/** Past 2^53 zod's own bound would speak; the bound that matters is the model's context. */
const tokenCount = z.number().int({
  error: (iss) =>
    iss.code === "too_big" ? "must be less than the model's context length" : "must be an integer",
}).min(1, "must be an integer of at least 1");

const CacheControl = z.looseObject({ type: z.string(), ttl: z.string().nullish() });

const HTTP_URL = /^https?:\/\/[^\s]+$/i;
const DATA_IMAGE_URL = /^data:image\/[a-z0-9.+-]+;base64,/i;

const TextPart = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  cache_control: CacheControl.nullish(),
});

const ImagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({
    url: z.string().refine(
      (u) => HTTP_URL.test(u) || DATA_IMAGE_URL.test(u),
      "must be an http(s) URL or a base64 data:image URL",
    ),
    // "original" (full resolution) is OpenAI's too, typed by its SDK and taken by the responses
    // schema: a model that does not read it is the upstream's 400 to relay, not the gateway's.
    detail: z.enum(["auto", "low", "high", "original"]).nullish(),
  }),
  cache_control: CacheControl.nullish(),
});

/** A file (OpenAI: a PDF inline as `file_data`, or an uploaded `file_id`). */
const FilePart = z.looseObject({
  type: z.literal("file"),
  file: z.looseObject({
    file_data: z.string().nullish(),
    file_id: z.string().nullish(),
    filename: z.string().nullish(),
  }),
  cache_control: CacheControl.nullish(),
});

/** Audio input (OpenAI's audio models): base64 data and its format. */
const AudioPart = z.looseObject({
  type: z.literal("input_audio"),
  input_audio: z.looseObject({ data: z.string(), format: z.string() }),
});

const UserPart = z.discriminatedUnion("type", [TextPart, ImagePart, FilePart, AudioPart]);

const textContent = z.union([z.string(), z.array(TextPart)]);
const userContent = z.union([z.string(), z.array(UserPart)]);

const ToolCall = z.discriminatedUnion("type", [
  z.looseObject({
    id: z.string(),
    type: z.literal("function"),
    function: z.looseObject({
      name: z.string().min(1, "must not be empty"),
      arguments: z.string(),
    }),
  }),
  /** A call of a custom (free-form input) tool, OpenAI's. */
  z.looseObject({
    id: z.string(),
    type: z.literal("custom"),
    custom: z.looseObject({ name: z.string().min(1, "must not be empty"), input: z.string() }),
  }),
]);

const SystemMessage = z.looseObject({
  role: z.enum(["system", "developer"]),
  content: textContent,
  name: z.string().nullish(),
});

const UserMessage = z.looseObject({
  role: z.literal("user"),
  content: userContent,
  name: z.string().nullish(),
});

/** A refusal the model gave, replayed in a history (OpenAI's assistant content part). */
const RefusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });

const AssistantMessage = z.looseObject({
  role: z.literal("assistant"),
  /** Null or absent only together with `tool_calls` (checked below). */
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextPart, RefusalPart]))])
    .nullish(),
  tool_calls: z.array(ToolCall).nullish(),
  /** Reasoning of an earlier turn: OpenRouter's `reasoning`, DeepSeek's `reasoning_content`. */
  reasoning: z.string().nullish(),
  reasoning_content: z.string().nullish(),
  refusal: z.string().nullish(),
  name: z.string().nullish(),
  /** The deprecated single function call (legacy `functions`): chat upstreams only. */
  function_call: z.looseObject({ name: z.string(), arguments: z.string() }).nullish(),
});

const ToolMessage = z.looseObject({
  role: z.literal("tool"),
  tool_call_id: z.string(),
  content: textContent,
});

/** A deprecated `functions` call's result (legacy function calling): chat upstreams only. */
const FunctionMessage = z.looseObject({
  role: z.literal("function"),
  name: z.string(),
  content: z.string().nullable(),
});

const Message = z.discriminatedUnion("role", [
  SystemMessage,
  UserMessage,
  AssistantMessage,
  ToolMessage,
  FunctionMessage,
]);

const Tool = z.discriminatedUnion("type", [
  z.looseObject({
    type: z.literal("function"),
    function: z.looseObject({
      name: z.string().min(1, "must not be empty"),
      description: z.string().nullish(),
      parameters: z.record(z.string(), z.unknown()).nullish(),
      strict: z.boolean().nullish(),
    }),
  }),
  /** OpenAI's custom tool: free-form text input, optionally to a grammar. */
  z.looseObject({
    type: z.literal("custom"),
    custom: z.looseObject({
      name: z.string().min(1, "must not be empty"),
      description: z.string().nullish(),
    }),
  }),
]);

const functionChoice = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({ name: z.string().min(1, "must not be empty") }),
});
const customChoice = z.looseObject({
  type: z.literal("custom"),
  custom: z.looseObject({ name: z.string().min(1, "must not be empty") }),
});

const ToolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  z.discriminatedUnion("type", [
    functionChoice,
    customChoice,
    /** A subset of the declared tools, any of which may (`auto`) or must (`required`) be called. */
    z.looseObject({
      type: z.literal("allowed_tools"),
      allowed_tools: z.looseObject({
        mode: z.enum(["auto", "required"]),
        tools: z.array(z.discriminatedUnion("type", [functionChoice, customChoice]))
          .min(1, "must not be empty"),
      }),
    }),
  ]),
]);

const ResponseFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    json_schema: z.looseObject({
      name: z.string().min(1, "must not be empty"),
      description: z.string().nullish(),
      schema: z.record(z.string(), z.unknown()),
      strict: z.boolean().nullish(),
    }),
  }),
]);

const Effort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]);

/** OpenRouter's reasoning object (https://openrouter.ai/docs/use-cases/reasoning-tokens). */
const Reasoning = z.looseObject({
  effort: Effort.nullish(),
  max_tokens: z.number().int().min(0, "must be a non-negative integer").nullish(),
  exclude: z.boolean().nullish(),
  enabled: z.boolean().nullish(),
});

export const ChatRequestSchema = z.looseObject({
  model: z.string().nullish(),
  messages: z.array(Message).min(1, "must be a non-empty array"),
  temperature: range(0, 2).nullish(),
  top_p: z.number().gt(0, "must be greater than 0 and at most 1")
    .max(1, "must be greater than 0 and at most 1").nullish(),
  frequency_penalty: range(-2, 2).nullish(),
  presence_penalty: range(-2, 2).nullish(),
  max_tokens: tokenCount.nullish(),
  max_completion_tokens: tokenCount.nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4, "must hold at most 4 sequences")])
    .nullish(),
  /** Choices per request (OpenAI's limit); more than one only on a chat upstream. */
  n: z.number().int("must be an integer from 1 to 128").min(1, "must be an integer from 1 to 128")
    .max(128, "must be an integer from 1 to 128").nullish(),
  tools: z.array(Tool).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: ResponseFormat.nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  reasoning: Reasoning.nullish(),
  reasoning_effort: Effort.nullish(),
  include_reasoning: z.boolean().nullish(),
  user: z.string().nullish(),
  seed: z.number().int().nullish(),
  // OpenAI's and OpenRouter's ranges: refused here rather than by the upstream, as the other
  // ranges are.
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int("must be an integer from 0 to 20")
    .min(0, "must be an integer from 0 to 20").max(20, "must be an integer from 0 to 20").nullish(),
  logit_bias: z.record(z.string(), range(-100, 100)).nullish(),
});

export type ChatRequestBody = z.infer<typeof ChatRequestSchema>;
export type ChatMessage = ChatRequestBody["messages"][number];

/** Validates a parsed JSON body; throws `GatewayError(400)` naming the first bad field. */
export function validateChatRequest(body: unknown): ChatRequestBody {
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    // OpenAI's own field (OpenRouter's `reasoning` object keeps its enum).
    adoptAboveXhighAt(body as Record<string, unknown>, "reasoning_effort");
  }
  const r = ChatRequestSchema.safeParse(body, { error: defaultIssueMessage });
  if (!r.success) throw badRequest(describe(r.error.issues[0], []));
  const bad = r.data.messages.findIndex((m) =>
    m.role === "assistant" && m.content == null && !(m.tool_calls && m.tool_calls.length > 0) &&
    !m.function_call && !m.refusal
  );
  if (bad >= 0) {
    // OpenAI keeps an answer's audio and takes it back by id; the gateway keeps none.
    const audio = (r.data.messages[bad] as Record<string, unknown>).audio != null;
    throw badRequest(
      audio
        ? `messages[${bad}]: an assistant message's audio by id is not kept by this gateway; ` +
          "send its transcript as content"
        : `messages[${bad}].content must be given unless the message has tool_calls`,
    );
  }
  checkChosenTools(r.data);
  return r.data;
}

/**
 * A tool choice may name only declared tools, as OpenAI requires: an upstream that takes no
 * such choice gets the named tools alone, and a name that matches none would leave it none.
 */
function checkChosenTools(body: ChatRequestBody): void {
  const c = body.tool_choice;
  if (typeof c !== "object" || c === null) return;
  const declared = new Set((body.tools ?? []).map((t) => `${t.type}:${toolName(t)}`));
  const chosen = c.type === "allowed_tools"
    ? c.allowed_tools.tools.map((t, i) => ({ t, at: `tool_choice.allowed_tools.tools[${i}]` }))
    : [{ t: c, at: "tool_choice" }];
  for (const { t, at } of chosen) {
    if (!declared.has(`${t.type}:${toolName(t)}`)) {
      throw badRequest(
        `${at} names the ${t.type} tool ${
          JSON.stringify(toolName(t))
        }, which is not among the request's tools`,
      );
    }
  }
}

/** A function or custom tool (or a choice of one) by its name. */
export type NamedTool = { type: "function"; function: { name: string } } | {
  type: "custom";
  custom: { name: string };
};

export const toolName = (t: NamedTool) => t.type === "custom" ? t.custom.name : t.function.name;

/** What `checkAgainstModel` needs to know about the catalogue model. */
export interface ChatModelLimits {
  contextLength: number;
  acceptsImages: boolean;
  /** The catalogue lists `file` (PDF) input. */
  acceptsFiles: boolean;
  acceptsAudio: boolean;
  /** The model lists `response_format` or `structured_outputs` in `supported_parameters`. */
  supportsJsonObject: boolean;
}

/** The rules that depend on the model: max_tokens < context_length, images, JSON mode. */
export function checkAgainstModel(body: ChatRequestBody, model: ChatModelLimits): void {
  for (const field of ["max_tokens", "max_completion_tokens"] as const) {
    const v = body[field];
    if (v != null && v >= model.contextLength) {
      throw badRequest(
        `${field} must be less than the model's context length (${model.contextLength})`,
      );
    }
  }
  const refused: [part: string, input: string][] = [];
  if (!model.acceptsImages) refused.push(["image_url", "image"]);
  if (!model.acceptsFiles) refused.push(["file", "file"]);
  if (!model.acceptsAudio) refused.push(["input_audio", "audio"]);
  body.messages.forEach((m, i) => {
    if (m.role !== "user" || typeof m.content === "string") return;
    for (const [part, input] of refused) {
      // A text file is text to any model (request.ts reads it as such).
      const j = m.content.findIndex((p) =>
        p.type === part &&
        !(p.type === "file" && typeof p.file.file_data === "string" &&
          isTextDataUrl(p.file.file_data))
      );
      if (j >= 0) {
        throw badRequest(`messages[${i}].content[${j}]: this model does not accept ${input} input`);
      }
    }
  });
  if (body.response_format?.type === "json_object" && !model.supportsJsonObject) {
    throw badRequest("response_format json_object is not supported by this model");
  }
}

// ---- error messages ------------------------------------------------------------------------

/** One issue as "field message", digging into unions for the branch that matched best. */
function describe(iss: Issue, prefix: PropertyKey[]): string {
  const path = [...prefix, ...iss.path];
  if (iss.code === "invalid_union") {
    if (iss.errors.length === 0) {
      // A discriminated union whose tag matched no option.
      const options = (iss as unknown as { options?: unknown[] }).options ?? [];
      return `${fieldName(path)} must be one of ${options.join(", ")}`;
    }
    // A branch whose failure is deeper than "wrong type here" is the one the client meant.
    const deep = iss.errors.filter((b) => !(b.length === 1 && isShallowTypeError(b[0])));
    if (deep.length === 1) return describe(deep[0][0], path);
    const phrases = iss.errors.map((b) => (b.length === 1 ? shallowPhrase(b[0]) : undefined));
    if (phrases.every((p) => p !== undefined)) {
      return `${fieldName(path)} must be ${phrases.join(" or ")}`;
    }
    return `${fieldName(path)} is invalid`;
  }
  return `${fieldName(path)} ${iss.message}`;
}

function isShallowTypeError(i: Issue): boolean {
  return shallowPhrase(i) !== undefined;
}

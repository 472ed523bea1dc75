/**
 * Request → plan, for every endpoint. The only place that knows which wire format renders
 * which endpoint and how markers turn into faults and delays.
 */
import { type Answer, buildAnswer, type DeclaredTool, type MockDefaults } from "./answer.ts";
import {
  chatChoices,
  chatFormat,
  chatStream,
  chatTools,
  chatWhole,
  wantsChatReasoning,
} from "./chat.ts";
import type { Controls } from "./controls.ts";
import { embeddingDims, embeddingInputs, embeddingsBody, inputTokens } from "./embeddings.ts";
import { contextError, contextWindow, LONG_CONTEXT_REFUSED, vendorError } from "./errors.ts";
import { imageRequest, imagesBody, imageUrls, imageUsage } from "./images.ts";
import {
  messagesFormat,
  messagesStream,
  messagesTools,
  messagesWhole,
  wantsThinking,
} from "./messages.ts";
import { errorPlan, type Plan, streamPlan, wholePlan } from "./plan.ts";
import { strictSchemaRefusal } from "./strict.ts";
import {
  foreignEncrypted,
  responsesFormat,
  responsesOverflowStream,
  responsesStream,
  responsesTools,
  responsesWhole,
  wantsSummary,
} from "./responses.ts";
import { CREATED, obj, promptTokens } from "./util.ts";

export type Protocol = "chat" | "messages" | "responses" | "embeddings" | "images";

export interface PlanInput {
  protocol: Protocol;
  body: Record<string, unknown>;
  /** The body text as received (markers, echo, hashing). */
  raw: string;
  controls: Controls;
  defaults: Required<MockDefaults>;
  /** Input images of a multipart edit. */
  formImages?: number;
  /** A tag of the caller's key ("" without one): whose encrypted reasoning it may replay. */
  keyTag?: string;
  /** The call carries Anthropic's long-context beta flag. */
  longContext?: boolean;
}

export function buildPlan(p: PlanInput): Plan {
  const c = p.controls;
  const vendor = p.protocol === "messages" ? "anthropic" : "openai";
  if (c.error !== undefined) return errorPlan(c.error, vendorError(vendor, c.error));
  switch (p.protocol) {
    case "embeddings":
      return embeddingsPlan(p);
    case "images":
      return imagesPlan(p);
    case "chat":
    case "messages":
    case "responses":
      return textPlan(p);
  }
}

function delays(p: PlanInput) {
  return {
    firstMs: p.controls.first ?? p.defaults.firstTokenMs,
    everyMs: p.controls.every ?? p.defaults.tokenMs,
  };
}

function embeddingsPlan(p: PlanInput): Plan {
  const inputs = embeddingInputs(p.body.input);
  if (typeof inputs === "string") return errorPlan(400, vendorError("openai", 400, inputs));
  const dims = embeddingDims(p.body.dimensions);
  if (typeof dims === "string") return errorPlan(400, vendorError("openai", 400, dims));
  if (p.controls.fail !== undefined) return errorPlan(500, vendorError("openai", 500));
  const model = typeof p.body.model === "string" ? p.body.model : "mock-embedding";
  const withUsage = p.controls.usage !== false;
  const json = embeddingsBody(inputs, dims, model, p.body.encoding_format === "base64", withUsage);
  return wholePlan(200, json, p.controls, {
    firstMs: delays(p).firstMs,
    everyMs: 0,
    contentCount: 1,
    inputTokens: inputTokens(inputs),
    outputTokens: 0,
  }, withUsage);
}

function imagesPlan(p: PlanInput): Plan {
  const images = p.formImages ?? (Array.isArray(p.body.images) ? p.body.images.length : 0);
  const r = imageRequest(p.body, images);
  if (typeof r === "string") return errorPlan(400, vendorError("openai", 400, r));
  if (p.controls.fail !== undefined) return errorPlan(500, vendorError("openai", 500));
  const usage = imageUsage(r, p.controls.tokens);
  const withUsage = p.controls.usage !== false;
  return imagePlan(p, imagesBody(r, usage, withUsage), usage, withUsage);
}

/** A whole answer of images: one content event after the first-byte delay. */
function imagePlan(
  p: PlanInput,
  json: string,
  usage: { input: number; output: number },
  withUsage: boolean,
): Plan {
  return wholePlan(200, json, p.controls, {
    firstMs: delays(p).firstMs,
    everyMs: 0,
    contentCount: 1,
    inputTokens: usage.input,
    outputTokens: usage.output,
  }, withUsage);
}

/**
 * A chat call asking for images (`modalities` naming "image", as the gateway asks OpenRouter's
 * image models): `n` tiny PNGs as data URLs in `message.images`, OpenRouter's shape, with a
 * line of text when text is asked for too, and usage at about a 1K image's tokens each.
 */
function chatImagesPlan(p: PlanInput): Plan {
  const { body } = p;
  if (p.controls.fail !== undefined) return errorPlan(500, vendorError("openai", 500));
  const n = typeof body.n === "number" && Number.isInteger(body.n) && body.n > 0 ? body.n : 1;
  const r = imageRequest({ prompt: chatPrompt(body), n }, 0);
  if (typeof r === "string") return errorPlan(400, vendorError("openai", 400, r));
  const usage = imageUsage(r, p.controls.tokens ?? chatImageTokens);
  const urls = imageUrls(r);
  const withUsage = p.controls.usage !== false;
  const message: Record<string, unknown> = {
    role: "assistant",
    content: (body.modalities as unknown[]).includes("text") ? "Here is the image." : "",
    images: urls.map((url) => ({ type: "image_url", image_url: { url } })),
  };
  const json: Record<string, unknown> = {
    id: "gen-mock-images",
    object: "chat.completion",
    created: CREATED,
    model: body.model,
    choices: [{ index: 0, message, finish_reason: "stop" }],
  };
  if (withUsage) {
    // OpenRouter counts the images' tokens apart (its image models price them far above text).
    json.usage = {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      completion_tokens_details: { reasoning_tokens: 0, image_tokens: usage.output },
    };
  }
  return imagePlan(p, JSON.stringify(json), usage, withUsage);
}

/** Output tokens of an image made through chat (about a 1K image). */
const chatImageTokens = 1290;

/** The text of a chat call's last user message, for the mock's image hashes. */
function chatPrompt(body: Record<string, unknown>): string {
  const last = (Array.isArray(body.messages) ? body.messages : []).at(-1) as
    | { content?: unknown }
    | undefined;
  const c = last?.content;
  if (typeof c === "string" && c !== "") return c;
  if (Array.isArray(c)) {
    const text = c.map((x) => (x as { text?: unknown }).text).filter((t) => typeof t === "string");
    if (text.length > 0) return text.join(" ");
  }
  return "image";
}

/**
 * A chat assistant message with no content and nothing in its stead (tool calls, a legacy
 * function call, a refusal), which OpenAI refuses.
 */
function assistantWithoutContent(body: Record<string, unknown>): boolean {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return messages.some((m) =>
    m?.role === "assistant" && m.content == null && !m.tool_calls?.length && !m.function_call &&
    !m.refusal
  );
}

/** The index of an assistant message whose last block is thinking, which Anthropic refuses; -1. */
function assistantEndingInThinking(body: Record<string, unknown>): number {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return messages.findIndex((m) => {
    if (m?.role !== "assistant" || !Array.isArray(m.content)) return false;
    const type = m.content.at(-1)?.type;
    return type === "thinking" || type === "redacted_thinking";
  });
}

/** The request forbids tool calls: chat's and responses' `"none"`, messages' `{type: "none"}`. */
function noToolCalls(body: Record<string, unknown>): boolean {
  const c = body.tool_choice;
  return c === "none" ||
    (typeof c === "object" && c !== null && (c as { type?: unknown }).type === "none");
}

/**
 * The tool a request's `tool_choice` makes the model call: the one it names (chat's
 * `{type: "function", function: {name}}`, responses' `{type: "function" | "custom", name}`,
 * messages' `{type: "tool", name}`), else the first declared where it demands some call (chat's
 * and responses' `"required"`, messages' `{type: "any"}`, an `allowed_tools` choice in required
 * mode). The vendors always answer such a call with a tool call, and clients rely on it with no
 * marker in the prompt: structured output through a forced tool (LangChain's
 * `withStructuredOutput` on ChatAnthropic, the AI SDK's Anthropic provider on a model it does not
 * know) reads the answer from that call alone.
 */
function forcedTool(body: Record<string, unknown>, tools: DeclaredTool[]): string | undefined {
  const c = body.tool_choice;
  const first = tools.find((t) => !t.server)?.name;
  if (c === "required") return first;
  if (c === null || typeof c !== "object") return undefined;
  const o = c as Record<string, unknown>;
  if (o.type === "any") return first;
  if (o.type === "tool" || o.type === "custom") {
    return typeof o.name === "string" ? o.name : undefined;
  }
  if (o.type === "function") {
    const name = obj(o.function).name ?? o.name;
    return typeof name === "string" ? name : undefined;
  }
  if (o.type === "allowed_tools") {
    const spec = obj(o.allowed_tools ?? o);
    if (spec.mode !== "required" || !Array.isArray(spec.tools)) return undefined;
    const first = obj(spec.tools[0]);
    const name = obj(first.function).name ?? first.name;
    return typeof name === "string" ? name : undefined;
  }
  return undefined;
}

/** The controls an answer follows: a marker's tool calls, else the tool choice's. */
function toolControls(body: Record<string, unknown>, controls: Controls, tools: DeclaredTool[]) {
  // A tool choice of none is obeyed as the vendors do: a marker asking for a call still stays
  // in a history that is being summed up without tools (Codex's compaction).
  if (noToolCalls(body)) return { ...controls, tool: undefined, tools: undefined };
  if (controls.tool !== undefined || controls.tools !== undefined) return controls;
  const forced = forcedTool(body, tools);
  if (forced === undefined) return controls;
  // A forced server tool is the vendor's to run: Anthropic answers a forced search with the
  // search and its results (Claude Code's WebSearch reads them), not a call for the client.
  const server = tools.find((t) => t.name === forced)?.server;
  if (server === "web_search") return { ...controls, searches: controls.searches || 1 };
  if (server) return controls;
  return { ...controls, tool: forced };
}

function textPlan(p: PlanInput): Plan {
  const { body, protocol } = p;
  if (
    protocol === "chat" && body.stream !== true && Array.isArray(body.modalities) &&
    body.modalities.includes("image")
  ) {
    return chatImagesPlan(p);
  }
  const vendor = protocol === "messages" ? "anthropic" : "openai";
  const missing = protocol === "responses"
    ? (typeof body.input !== "string" && !Array.isArray(body.input) ? "input" : null)
    : (!Array.isArray(body.messages) ? "messages" : null);
  if (missing) {
    return errorPlan(400, vendorError(vendor, 400, `Missing required parameter: '${missing}'.`));
  }
  if (protocol === "chat" && assistantWithoutContent(body)) {
    return errorPlan(
      400,
      vendorError(vendor, 400, "Invalid value for 'content': expected a string, got null."),
    );
  }
  const endsInThinking = protocol === "messages" ? assistantEndingInThinking(body) : -1;
  if (endsInThinking >= 0) {
    return errorPlan(
      400,
      vendorError(
        vendor,
        400,
        `messages.${endsInThinking}: The final block in an assistant message cannot be \`thinking\`.`,
      ),
    );
  }
  const keyTag = p.keyTag ?? "";
  const foreign = protocol === "responses" ? foreignEncrypted(body, keyTag) : undefined;
  if (foreign !== undefined) {
    return errorPlan(
      400,
      JSON.stringify({
        error: {
          message: `The encrypted content ${foreign.slice(0, 4)}...${
            foreign.slice(-4)
          } could not be verified. Reason: Encrypted content could not be decrypted or parsed.`,
          type: "invalid_request_error",
          param: null,
          code: "invalid_encrypted_content",
        },
      }),
    );
  }
  const loose = protocol === "chat" || protocol === "responses"
    ? strictSchemaRefusal(body, protocol)
    : undefined;
  if (loose !== undefined) return errorPlan(400, vendorError(vendor, 400, loose));
  const tools = protocol === "chat"
    ? chatTools(body)
    : protocol === "messages"
    ? messagesTools(body)
    : responsesTools(body);
  const answer = buildAnswer({
    raw: p.raw,
    model: body.model,
    controls: toolControls(body, p.controls, tools),
    defaults: p.defaults,
    promptTokens: promptTokens(body),
    maxTokens: protocol === "chat"
      ? body.max_completion_tokens ?? body.max_tokens
      : protocol === "messages"
      ? body.max_tokens
      : body.max_output_tokens,
    toolResults: toolResults(body, protocol),
    tools,
    format: protocol === "chat"
      ? chatFormat(body)
      : protocol === "messages"
      ? messagesFormat(body)
      : responsesFormat(body),
    showReasoning: protocol === "messages"
      ? wantsThinking(body)
      : protocol === "responses"
      ? wantsSummary(body)
      : wantsChatReasoning(body),
  });
  const choices = protocol === "chat" ? chatChoices(body) : 1;
  if (choices > 1) {
    // Every choice is generated, and billed: the usage counts the output of all of them.
    answer.usage = {
      ...answer.usage,
      output: answer.usage.output * choices,
      reasoning: answer.usage.reasoning * choices,
    };
  }
  const d = delays(p);
  if (p.longContext && p.controls.noLongContext) {
    return errorPlan(400, vendorError(vendor, 400, LONG_CONTEXT_REFUSED));
  }
  const window = contextWindow(protocol, p.longContext === true);
  const need = p.controls.context !== undefined && p.controls.context > window
    ? { tokens: p.controls.context, window }
    : undefined;
  if (p.controls.overflow || need) {
    return overflowPlan(protocol, answer, body, p.controls, d, need);
  }
  if (body.stream === true) {
    const parts = protocol === "chat"
      ? chatStream(answer, body)
      : protocol === "messages"
      ? messagesStream(answer)
      : responsesStream(answer, body, keyTag);
    return streamPlan(parts, p.controls, answer, d);
  }
  if (p.controls.fail !== undefined) {
    return errorPlan(500, vendorError(vendor, 500), answer.usage.input);
  }
  const json = protocol === "chat"
    ? chatWhole(answer, body)
    : protocol === "messages"
    ? messagesWhole(answer)
    : responsesWhole(answer, body, keyTag);
  let contentCount = answer.text.length + answer.reasoning.length;
  for (const t of answer.tools) contentCount += t.chunks.length;
  contentCount *= choices;
  return wholePlan(200, json, p.controls, {
    ...d,
    contentCount,
    inputTokens: answer.usage.input,
    outputTokens: answer.usage.output,
  }, answer.reportUsage);
}

/** Tool results in a request: chat's `tool` messages, messages' blocks, responses' items. */
function toolResults(body: Record<string, unknown>, protocol: Protocol): number {
  const list = protocol === "responses" ? body.input : body.messages;
  if (!Array.isArray(list)) return 0;
  let n = 0;
  for (const item of list) {
    const m = obj(item);
    if (protocol === "chat") {
      if (m.role === "tool") n++;
    } else if (protocol === "responses") {
      if (typeof m.type === "string" && m.type.endsWith("_call_output")) n++;
    } else if (Array.isArray(m.content)) {
      for (const b of m.content) if (obj(b).type === "tool_result") n++;
    }
  }
  return n;
}

/**
 * A prompt past the context window: the vendor's 400, before any byte, except a streamed
 * responses call, which OpenAI fails in the stream (`fail` at the first content event).
 */
function overflowPlan(
  protocol: Protocol,
  answer: Answer,
  body: Record<string, unknown>,
  c: Controls,
  d: { firstMs: number; everyMs: number },
  need?: { tokens: number; window: number },
): Plan {
  if (protocol === "responses" && body.stream === true) {
    return streamPlan(responsesOverflowStream(answer, body), { ...c, fail: 0 }, answer, d);
  }
  return errorPlan(400, contextError(protocol, answer.usage.input, need));
}

/**
 * The chat request ⇄ the internal `TextRequest`, and the body sent to an openai-chat upstream
 * (translated with `fromInternal`, or the client's own body with `passThroughRequest`).
 */
import { openaiToolId } from "../tool_ids.ts";
import { OPENROUTER_EXTENSIONS, takesVerbosity } from "../openai_dialect.ts";
import { detailsOut, partsFromDetails } from "./reasoning_details.ts";
import type {
  CacheControl,
  ImagePart,
  Message,
  Part,
  ReasoningPart,
  ReasoningSettings,
  ResponseFormat,
  TextPart,
  TextRequest,
  Tool,
  ToolChoice,
  ToolResultPart,
  WebSearch,
} from "../../events/text_request.ts";
import { type ChatMessage, type ChatRequestBody, type NamedTool, toolName } from "./schema.ts";
import { isObject } from "../json.ts";
import { keepAllowedTools } from "../allowed_tools.ts";
import { choiceBesideSearch } from "../search_choice.ts";
import { resultContent } from "../tool_results.ts";
import { upstreamUser } from "../upstream_user.ts";
import {
  approximateLocation,
  DEFAULT_WEB_SEARCHES,
  hasCacheMarks,
  isPdfDataUrl,
  isTextDataUrl,
  searchContextSize,
  textOfDataUrl,
} from "../../events/text_request.ts";

type Obj = Record<string, unknown>;

// ---- client body → internal ----------------------------------------------------------------

/**
 * Chat's `web_search_options` (OpenAI's search models; OpenRouter's web search) as the hosted
 * search every other upstream runs: on a transcoded call a Claude model searches through its
 * own tool rather than answering without the search the client asked for. Its
 * `search_context_size` reaches OpenAI's responses API (no other upstream has one).
 */
function webSearchOptionsToInternal(o: Obj): WebSearch {
  const out: WebSearch = { maxUses: DEFAULT_WEB_SEARCHES };
  const where = approximateLocation((o.user_location as Obj | null | undefined)?.approximate);
  if (where) out.userLocation = where;
  const size = searchContextSize(o.search_context_size);
  if (size) out.contextSize = size;
  return out;
}

/** A validated chat body → the internal request for catalogue model `model`. */
export function toInternal(client: ChatRequestBody, model: string): TextRequest {
  // Other vendors take no subset of the declared tools: only the allowed ones are offered.
  let body = client;
  if (typeof client.tool_choice === "object" && client.tool_choice?.type === "allowed_tools") {
    body = { ...client };
    allowedToolsAsSubset(body);
  }
  const system: TextPart[] = [];
  const messages: Message[] = [];
  for (const m of body.messages) {
    switch (m.role) {
      case "system":
      case "developer":
        // Mid-conversation system messages join the system prompt: the internal form (like the
        // messages format) has one.
        system.push(...textParts(m.content));
        break;
      case "user":
        messages.push({ role: "user", parts: userParts(m.content) });
        break;
      case "assistant":
        messages.push({ role: "assistant", parts: assistantParts(m) });
        break;
      case "function":
        // Legacy function calling goes only to chat upstreams, whole (`usesLegacyFunctions`).
        break;
      case "tool": {
        const part: ToolResultPart = {
          type: "tool_result",
          callId: m.tool_call_id,
          content: textParts(m.content),
        };
        const last = messages.at(-1);
        // Consecutive tool messages answer one assistant turn: one user message of results.
        if (last?.role === "user" && last.parts.every((p) => p.type === "tool_result")) {
          last.parts.push(part);
        } else messages.push({ role: "user", parts: [part] });
        break;
      }
      default: {
        const never: never = m;
        throw new Error(`unknown role ${JSON.stringify(never)}`);
      }
    }
    // A mark on the whole message (as `@ai-sdk/openai-compatible` clients put it) ends the
    // cached prefix at its last part, where the messages format puts one.
    const mark = cacheControl((m as { cache_control?: unknown }).cache_control);
    const last = m.role === "function"
      ? undefined
      : m.role === "system" || m.role === "developer"
      ? system.at(-1)
      : messages.at(-1)?.parts.at(-1);
    if (mark && last && last.type !== "reasoning" && !last.cacheControl) last.cacheControl = mark;
  }

  const req: TextRequest = { model, system, messages, stream: body.stream === true };
  const tools = body.tools?.flatMap(toolToInternal);
  if (tools && tools.length > 0) req.tools = tools;
  if (body.tool_choice != null) req.toolChoice = toolChoiceToInternal(body.tool_choice);
  if (body.parallel_tool_calls != null) req.parallelToolCalls = body.parallel_tool_calls;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (maxTokens != null) req.maxTokens = maxTokens;
  if (body.temperature != null) req.temperature = body.temperature;
  if (body.top_p != null) req.topP = body.top_p;
  // `top_k` is not in the chat spec but OpenRouter takes it; kept when it is a number.
  if (typeof body.top_k === "number") req.topK = body.top_k;
  if (body.frequency_penalty != null) req.frequencyPenalty = body.frequency_penalty;
  if (body.presence_penalty != null) req.presencePenalty = body.presence_penalty;
  if (body.seed != null) req.seed = body.seed;
  if (body.stop != null) req.stop = typeof body.stop === "string" ? [body.stop] : body.stop;
  if (body.response_format != null) {
    req.responseFormat = responseFormatToInternal(body.response_format);
  }
  const reasoning = reasoningToInternal(body);
  if (reasoning) req.reasoning = reasoning;
  // OpenAI's newer name for the end-user id; `user` where both are sent.
  const safety = (body as { safety_identifier?: unknown }).safety_identifier;
  if (body.user) req.user = body.user;
  else if (typeof safety === "string" && safety !== "") req.user = safety;
  const extra = body as unknown as Record<string, unknown>;
  if (typeof extra.prompt_cache_key === "string") req.promptCacheKey = extra.prompt_cache_key;
  if (typeof extra.verbosity === "string") req.verbosity = extra.verbosity;
  if (isObject(extra.web_search_options)) {
    req.webSearch = webSearchOptionsToInternal(extra.web_search_options);
  }
  return req;
}

type TextContent = string | { text: string; cache_control?: unknown }[];

function cacheControl(v: unknown): CacheControl | undefined {
  if (v === null || typeof v !== "object") return undefined;
  const o = v as Obj;
  if (typeof o.type !== "string") return undefined;
  return typeof o.ttl === "string" ? { type: o.type, ttl: o.ttl } : { type: o.type };
}

function textPart(text: string, cc?: unknown): TextPart {
  const c = cacheControl(cc);
  return c ? { type: "text", text, cacheControl: c } : { type: "text", text };
}

function textParts(content: TextContent): TextPart[] {
  if (typeof content === "string") return [textPart(content)];
  return content.map((p) => textPart(p.text, p.cache_control));
}

/**
 * A user message's parts. A PDF given inline travels as its data URL (an image part, which
 * each format writes as its own document or file part), a text file as its text; an uploaded
 * file id, another file type and audio are the upstream's own, expressible only on a chat
 * upstream, which gets the client's body (`uncarriedPart`).
 */
function userParts(content: Extract<ChatMessage, { role: "user" }>["content"]): Part[] {
  if (typeof content === "string") return [textPart(content)];
  return content.flatMap((p): Part[] => {
    if (p.type === "text") return [textPart(p.text, p.cache_control)];
    if (p.type === "input_audio") return [];
    const url = p.type === "image_url" ? p.image_url.url : p.file.file_data;
    if (p.type === "file" && typeof url === "string" && !isPdfDataUrl(url)) {
      return isTextDataUrl(url)
        ? [textPart(textOfDataUrl(url, p.file.filename), p.cache_control)]
        : [];
    }
    if (typeof url !== "string") return [];
    const c = cacheControl(p.cache_control);
    const image: ImagePart = { type: "image", url };
    if (p.type === "image_url" && typeof p.image_url.detail === "string") {
      image.detail = p.image_url.detail;
    }
    if (p.type === "file" && typeof p.file.filename === "string") image.filename = p.file.filename;
    if (c) image.cacheControl = c;
    return [image];
  });
}

function assistantParts(m: Extract<ChatMessage, { role: "assistant" }>): Part[] {
  const parts: Part[] = [];
  const reasoning = m.reasoning_content ?? m.reasoning;
  // Signed reasoning (OpenRouter's `reasoning_details`, as this gateway also gives them) is
  // kept to replay; plain reasoning text otherwise.
  const signed = partsFromDetails(
    (m as { reasoning_details?: unknown }).reasoning_details,
    reasoning ?? undefined,
  );
  if (signed.length > 0) parts.push(...signed);
  else if (reasoning) parts.push({ type: "reasoning", text: reasoning });
  const calls = m.tool_calls ?? [];
  // The openai SDK's shape of a refusal: `refusal` beside no content. What the model said.
  if ((m.content == null || m.content === "") && m.refusal) {
    parts.push({ type: "text", text: m.refusal });
  } else if (m.content != null) {
    // Clients often send `content: ""` beside tool calls; an empty text block is an error to
    // other vendors, so it is dropped there and only there.
    // A refusal replayed in the history is what the model said: text to any upstream.
    const content = typeof m.content === "string"
      ? m.content
      : m.content.map((p) => p.type === "refusal" ? { type: "text" as const, text: p.refusal } : p);
    for (const p of textParts(content)) {
      if (p.text !== "" || (calls.length === 0 && !reasoning)) parts.push(p);
    }
  }
  for (const tc of calls) {
    parts.push(
      tc.type === "custom"
        // Only an OpenAI chat upstream serves custom tools (upstreamsFor), as sent: this
        // form is for the gateway's own count of the prompt.
        ? { type: "tool_call", id: tc.id, name: tc.custom.name, arguments: tc.custom.input }
        : {
          type: "tool_call",
          id: tc.id,
          name: tc.function.name,
          arguments: tc.function.arguments,
        },
    );
  }
  return parts;
}

function toolToInternal(t: NonNullable<ChatRequestBody["tools"]>[number]): Tool[] {
  // Custom tools reach only an OpenAI chat upstream, which is sent the body as it came.
  if (t.type === "custom") return [];
  const tool: Tool = {
    name: t.function.name,
    // No parameters means a function of no arguments (OpenAI's reading too).
    parameters: t.function.parameters ?? { type: "object", properties: {} },
  };
  if (t.function.description != null) tool.description = t.function.description;
  if (t.function.strict != null) tool.strict = t.function.strict;
  const c = cacheControl(t.cache_control);
  if (c) tool.cacheControl = c;
  return [tool];
}

/**
 * Legacy function calling (`functions`, `function_call`, `function` messages), deprecated but
 * still taken by OpenAI's chat API and OpenRouter's: served there as sent, since nothing else
 * speaks it and its answer (`message.function_call`) has no counterpart in other formats.
 */
export function usesLegacyFunctions(body: ChatRequestBody): boolean {
  // `functions: []` and a bare "auto"/"none" declare nothing (agents with every tool off).
  const b = body as ChatRequestBody & { functions?: unknown; function_call?: unknown };
  return (Array.isArray(b.functions) && b.functions.length > 0) ||
    (typeof b.function_call === "object" && b.function_call !== null) ||
    body.messages.some((m) =>
      m.role === "function" || (m.role === "assistant" && !!m.function_call)
    );
}

/**
 * The first part of a user message the internal form does not carry, named: a file by id or
 * of a type other than PDF and text, or audio (see `userParts`).
 */
export function uncarriedPart(body: ChatRequestBody): string | undefined {
  for (const m of body.messages) {
    if (m.role !== "user" || typeof m.content === "string") continue;
    for (const p of m.content) {
      if (p.type === "input_audio") return "input_audio";
      if (p.type !== "file") continue;
      const data = p.file.file_data;
      if (typeof data !== "string") return "a file by file_id";
      if (!isPdfDataUrl(data) && !isTextDataUrl(data)) {
        return "a file of this type";
      }
    }
  }
  return undefined;
}

/** Custom tools are OpenAI's alone: declared, chosen, or called in the history. */
export function usesCustomTools(body: ChatRequestBody): boolean {
  const c = body.tool_choice;
  return (body.tools ?? []).some((t) => t.type === "custom") ||
    (typeof c === "object" && c !== null && c.type === "custom") ||
    body.messages.some((m) =>
      m.role === "assistant" && (m.tool_calls ?? []).some((tc) => tc.type === "custom")
    );
}

/**
 * A chat body's `allowed_tools` choice as the tools it allows and a plain choice, for an
 * upstream that takes no subset (OpenRouter); other bodies are left as they are.
 */
export function allowedToolsAsSubset(body: Record<string, unknown>): void {
  const c = body.tool_choice as { type?: unknown; allowed_tools?: unknown } | undefined;
  if (c?.type !== "allowed_tools" || !isObject(c.allowed_tools)) return;
  const { mode, tools } = c.allowed_tools;
  keepAllowedTools(body, tools, mode, (t) => toolName(t as NamedTool), (t) => {
    const only = t as NamedTool;
    return only.type === "custom"
      ? { type: "custom", custom: { name: only.custom.name } }
      : { type: "function", function: { name: only.function.name } };
  });
}

function toolChoiceToInternal(c: NonNullable<ChatRequestBody["tool_choice"]>): ToolChoice {
  if (typeof c === "string") return { type: c };
  // `allowed_tools` was made a plain choice over the allowed tools (allowedToolsAsSubset).
  return c.type === "allowed_tools" ? { type: "auto" } : { type: "tool", name: toolName(c) };
}

function responseFormatToInternal(
  f: NonNullable<ChatRequestBody["response_format"]>,
): ResponseFormat {
  switch (f.type) {
    case "text":
    case "json_object":
      return { type: f.type };
    case "json_schema": {
      const out: ResponseFormat = {
        type: "json_schema",
        name: f.json_schema.name,
        schema: f.json_schema.schema,
      };
      if (f.json_schema.strict != null) out.strict = f.json_schema.strict;
      return out;
    }
    default: {
      const never: never = f;
      throw new Error(`unknown response_format ${JSON.stringify(never)}`);
    }
  }
}

/** OpenRouter's `reasoning` object and OpenAI's `reasoning_effort`; the object wins. */
function reasoningToInternal(body: ChatRequestBody): ReasoningSettings | undefined {
  const out: ReasoningSettings = {};
  const r = body.reasoning;
  const effort = r?.effort ?? body.reasoning_effort;
  if (effort != null) out.effort = effort;
  if (r?.max_tokens != null) out.budgetTokens = r.max_tokens;
  if (r?.enabled != null) out.enabled = r.enabled;
  // A bare `reasoning: {}` (or only `exclude`) turns reasoning on at the default effort;
  // `exclude` only hides it from the answer, which the encoder does.
  else if (r != null && Object.keys(out).length === 0) out.enabled = true;
  return Object.keys(out).length > 0 ? out : undefined;
}

// ---- internal → openai-chat upstream body --------------------------------------------------

export interface FromInternalOptions {
  /**
   * The upstream takes OpenRouter's `reasoning` object (and `reasoning` on assistant
   * messages) instead of OpenAI's `reasoning_effort`. OpenAI rejects unknown parameters, so
   * exactly one of the two is sent.
   */
  openrouterReasoning?: boolean;
  /**
   * Which field carries the output limit. OpenAI deprecated `max_tokens` and its reasoning
   * models reject it; some OpenAI-compatible servers know only `max_tokens`.
   */
  maxTokensField?: "max_completion_tokens" | "max_tokens";
}

/** The internal request → an OpenAI chat completions body for `upstreamModel`. */
export function fromInternal(
  req: TextRequest,
  upstreamModel: string,
  options: FromInternalOptions = {},
): Obj {
  const messages: Obj[] = [];
  if (req.system.length > 0) messages.push({ role: "system", content: textContent(req.system) });
  for (const [i, m] of req.messages.entries()) {
    if (m.role === "user") {
      const before = messages.length;
      pushUser(messages, m.parts);
      // A last user turn of nothing (a messages client's `content: []`) stays, blank: left
      // out, the assistant's answer before it would be the last message, which OpenRouter's
      // providers continue as a prefill instead of answering.
      if (
        messages.length === before && i === req.messages.length - 1 &&
        messages.at(-1)?.role === "assistant"
      ) messages.push({ role: "user", content: "" });
    } else {
      const msg = assistantMessage(m.parts, options.openrouterReasoning === true, upstreamModel);
      if (msg) messages.push(msg);
    }
  }

  const body: Obj = { model: upstreamModel, messages };
  if (req.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  if (req.maxTokens !== undefined) {
    body[options.maxTokensField ?? "max_completion_tokens"] = req.maxTokens;
  }
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.topK !== undefined && options.openrouterReasoning) body.top_k = req.topK;
  if (req.frequencyPenalty !== undefined) body.frequency_penalty = req.frequencyPenalty;
  if (req.presencePenalty !== undefined) body.presence_penalty = req.presencePenalty;
  if (req.seed !== undefined) body.seed = req.seed;
  if (req.stop !== undefined && req.stop.length > 0) body.stop = req.stop;
  if (req.tools !== undefined && req.tools.length > 0) body.tools = req.tools.map(toolToChat);
  // A hosted search runs as OpenRouter's web plugin (its results come back as the answer's
  // citations, its price in the cost OpenRouter reports); OpenAI's chat API has no such tool.
  if (req.webSearch && !req.webSearch.optional && options.openrouterReasoning) {
    body.plugins = [{ id: "web" }];
  }
  // OpenAI refuses both without tools ("only allowed when 'tools' are specified"), and a
  // messages client may name a choice over an empty tool list, which Anthropic takes.
  if (body.tools !== undefined) {
    const choice = choiceBesideSearch(req);
    if (choice !== undefined) {
      body.tool_choice = choice.type === "tool"
        ? { type: "function", function: { name: choice.name } }
        : choice.type;
    }
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.responseFormat !== undefined) {
    body.response_format = responseFormatToChat(req.responseFormat);
  }
  if (req.reasoning !== undefined) {
    if (options.openrouterReasoning) {
      const r = openrouterReasoning(req.reasoning);
      if (r) body.reasoning = r;
    } else {
      const effort = effortOf(req.reasoning);
      if (effort) body.reasoning_effort = effort;
    }
  }
  if (req.user !== undefined) body.user = upstreamUser(req.user);
  // OpenAI's own fields; OpenRouter's dialect has no such names.
  if (!options.openrouterReasoning) {
    if (req.promptCacheKey !== undefined) body.prompt_cache_key = req.promptCacheKey;
    if (req.verbosity !== undefined) body.verbosity = req.verbosity;
  } else if (
    req.promptCacheKey !== undefined && upstreamModel.startsWith("anthropic/") &&
    !hasCacheMarks(req)
  ) {
    // A client that names a prompt cache (Codex, every turn) expects automatic caching, which
    // Claude does only where asked: OpenRouter's top-level mark puts Anthropic's moving
    // breakpoint on the last cacheable block, as a call to Anthropic itself gets.
    body.cache_control = { type: "ephemeral" };
  }
  return body;
}

/** One text part without cache control is a plain string; anything else stays parts. */
function textContent(parts: TextPart[]): string | Obj[] {
  if (parts.length === 1 && !parts[0].cacheControl) return parts[0].text;
  return parts.map(textPartToChat);
}

function textPartToChat(p: TextPart): Obj {
  const out: Obj = { type: "text", text: p.text };
  if (p.cacheControl) out.cache_control = p.cacheControl;
  return out;
}

function imagePartToChat(p: ImagePart): Obj {
  const out: Obj = isPdfDataUrl(p.url)
    ? { type: "file", file: { filename: p.filename || "document.pdf", file_data: p.url } }
    : {
      type: "image_url",
      // Chat takes auto, low and high; the responses API's `original` (Codex's view_image) is
      // the full resolution, which chat calls `high`.
      image_url: p.detail ? { url: p.url, detail: chatDetail(p.detail) } : { url: p.url },
    };
  if (p.cacheControl) out.cache_control = p.cacheControl;
  return out;
}

/** A tool message's text when the result was images alone (they follow in a user message). */
export const IMAGES_FOLLOW = "(the tool returned images; they follow in the next message)";

/**
 * A user message: its tool results become `tool` messages first (chat wants them right after
 * the assistant turn that called), the rest one user message. Chat tool messages hold text
 * only, so images a tool returned follow in that user message rather than being lost.
 */
function pushUser(out: Obj[], parts: Part[]): void {
  const rest: Obj[] = [];
  for (const p of parts) {
    switch (p.type) {
      case "tool_result": {
        const content = resultContent(p);
        const texts = content.filter((c): c is TextPart => c.type === "text");
        // A cache breakpoint on the result (Claude Code moves one forward every turn) goes on
        // its last text: OpenRouter honours part marks for Claude and Gemini. Not on blank
        // text, which Anthropic refuses to mark.
        const at = texts.findLastIndex((t) => t.text.trim() !== "");
        if (p.cacheControl && at >= 0 && !texts[at].cacheControl) {
          texts[at] = { ...texts[at], cacheControl: p.cacheControl };
        }
        const images = content.filter((c) => c.type === "image");
        out.push({
          role: "tool",
          tool_call_id: openaiToolId(p.callId),
          // A result of images alone says where they went: an empty tool message is refused
          // by some providers, and leaves the model to guess what the tool returned.
          // Blank text beside them says nothing either.
          content: texts.some((t) => t.text.trim() !== "") || (images.length === 0 && texts.length)
            ? textContent(texts)
            : images.length > 0
            ? IMAGES_FOLLOW
            : "",
        });
        for (const c of images) rest.push(imagePartToChat(c));
        break;
      }
      case "text":
        rest.push(textPartToChat(p));
        break;
      case "image":
        rest.push(imagePartToChat(p));
        break;
      case "reasoning":
      case "tool_call":
        break; // not expressible in a user message
      default: {
        const never: never = p;
        throw new Error(`unknown part ${JSON.stringify(never)}`);
      }
    }
  }
  if (rest.length === 0) return;
  const onlyText = rest.length === 1 && rest[0].type === "text" && !rest[0].cache_control;
  out.push({ role: "user", content: onlyText ? rest[0].text : rest });
}

/**
 * An assistant message; undefined for a turn of reasoning alone (a turn cut off once its
 * thinking had come, as Codex keeps one after an interrupt): OpenAI refuses `content: null`
 * without tool calls, and thinking that led to nothing is no context the next turn needs.
 */
function assistantMessage(parts: Part[], withReasoning: boolean, slug: string): Obj | undefined {
  const texts: TextPart[] = [];
  const calls: Obj[] = [];
  const reasonings: ReasoningPart[] = [];
  let reasoning = "";
  for (const p of parts) {
    if (p.type === "text") texts.push(p);
    else if (p.type === "reasoning") {
      reasoning += p.text;
      reasonings.push(p);
    } else if (p.type === "tool_call") {
      calls.push({
        id: openaiToolId(p.id),
        type: "function",
        function: { name: p.name, arguments: p.arguments },
      });
    }
  }
  if (texts.length === 0 && calls.length === 0) return undefined;
  const msg: Obj = { role: "assistant", content: texts.length > 0 ? textContent(texts) : null };
  if (calls.length > 0) msg.tool_calls = calls;
  if (withReasoning && reasoning !== "") msg.reasoning = reasoning;
  // OpenRouter's signed and encrypted reasoning goes back as it came (other vendors' own), to
  // the vendor that issued it only.
  const vendor = slug.slice(0, slug.indexOf("/") + 1);
  const details = withReasoning
    ? detailsOut(reasonings, {
      anthropic: vendor === "anthropic/",
      openai: vendor === "openai/",
      slug,
    })
    : [];
  if (details.length > 0) msg.reasoning_details = details;
  return msg;
}

function toolToChat(t: Tool): Obj {
  const fn: Obj = { name: t.name };
  if (t.description !== undefined) fn.description = t.description;
  fn.parameters = t.parameters;
  if (t.strict !== undefined) fn.strict = t.strict;
  return { type: "function", function: fn };
}

function responseFormatToChat(f: ResponseFormat): Obj {
  if (f.type !== "json_schema") return { type: f.type };
  const js: Obj = { name: f.name, schema: f.schema };
  if (f.strict !== undefined) js.strict = f.strict;
  return { type: "json_schema", json_schema: js };
}

/**
 * A thinking budget → an OpenAI effort, for requests that came with Anthropic-style budgets.
 * Thresholds follow OpenRouter's mapping of effort to a share of max tokens, at the usual
 * 32k output: low ≈ 20 %, medium ≈ 50 %, high ≈ 80 %.
 */
function effortOf(r: ReasoningSettings): string | undefined {
  if (r.effort !== undefined) return r.effort;
  if (r.budgetTokens !== undefined) {
    if (r.budgetTokens < 8_192) return "low";
    if (r.budgetTokens < 24_576) return "medium";
    return "high";
  }
  return undefined; // `enabled` alone: the model's default effort
}

function openrouterReasoning(r: ReasoningSettings): Obj | undefined {
  const out: Obj = {};
  if (r.effort !== undefined) out.effort = r.effort;
  else if (r.budgetTokens !== undefined) out.max_tokens = r.budgetTokens;
  if (r.enabled !== undefined) out.enabled = r.enabled;
  return Object.keys(out).length > 0 ? out : undefined;
}

// ---- same protocol --------------------------------------------------------------------------

/**
 * Chat client → openai-chat upstream: the client's body as sent, `model` set to the
 * upstream's name, and usage asked for on streams (the meter needs it); `stream_options` left
 * out of a call that does not stream, where OpenAI refuses it (400). Nothing else changes.
 */
export function passThroughRequest(body: Obj, upstreamModel: string): Obj {
  const out: Obj = { ...body, model: upstreamModel };
  if (body.stream === true) {
    const so = body.stream_options;
    out.stream_options = so !== null && typeof so === "object"
      ? { ...so as Obj, include_usage: true }
      : { include_usage: true };
  } else delete out.stream_options;
  return out;
}

/**
 * OpenRouter's extensions on messages (`openai_dialect.ts` names the request's): earlier turns'
 * reasoning (OpenRouter's, DeepSeek's), and a cache mark on the whole message (as
 * `@ai-sdk/openai-compatible` clients put it).
 */
const OPENROUTER_MESSAGE_ONLY = [
  "reasoning",
  "reasoning_content",
  "reasoning_details",
  "cache_control",
];

/**
 * A chat body for an upstream that speaks only OpenAI's dialect (not OpenRouter): what has an
 * OpenAI equivalent is translated (`reasoning.effort` → `reasoning_effort`, a reasoning budget
 * `reasoning.max_tokens` → the effort nearest it, as OpenRouter does for OpenAI, `max_tokens` →
 * `max_completion_tokens`, which every OpenAI chat model takes and its reasoning models
 * require), the rest of OpenRouter's extensions and the `cache_control` marks (on parts,
 * messages, tool calls and tools) are dropped, and tool call ids over OpenAI's 40 characters are
 * shortened as `openaiToolId` does. Edits `body` (the upstream's own copy); the
 * messages are copied where they change.
 */
export function toOpenAIDialect(body: Obj): void {
  const r = body.reasoning;
  if (body.reasoning_effort == null && isObject(r)) {
    if (typeof r.effort === "string") body.reasoning_effort = r.effort;
    else if (typeof r.max_tokens === "number" && r.enabled !== false) {
      body.reasoning_effort = effortOf({ budgetTokens: r.max_tokens });
    }
  }
  delete body.reasoning; // translated above
  for (const k of OPENROUTER_EXTENSIONS) delete body[k];
  if (!takesVerbosity(body.model)) delete body.verbosity;
  if (typeof body.user === "string") body.user = upstreamUser(body.user);
  if (body.max_tokens != null) {
    body.max_completion_tokens ??= body.max_tokens;
    delete body.max_tokens;
  }
  if (Array.isArray(body.tools) && body.tools.some(marked)) body.tools = body.tools.map(unmarked);
  // Most bodies carry neither: the messages are copied only when one does.
  if (!Array.isArray(body.messages) || !body.messages.some(needsDialect)) return;
  body.messages = body.messages.map((m) => {
    if (!isObject(m)) return m;
    let out: Obj = m;
    if (OPENROUTER_MESSAGE_ONLY.some((k) => k in m)) {
      out = { ...m };
      for (const k of OPENROUTER_MESSAGE_ONLY) delete out[k];
    }
    if (Array.isArray(m.content) && m.content.some(marked)) {
      out = { ...out, content: m.content.map(unmarked) };
    }
    if (Array.isArray(m.tool_calls) && m.tool_calls.some(marked)) {
      out = { ...out, tool_calls: m.tool_calls.map(unmarked) };
    }
    // A history from another API (responses' `fc_…` ids) as the client kept it: OpenAI
    // refuses an id over 40 characters, so it gets the id the transcoded path would send.
    if (Array.isArray(out.tool_calls) && out.tool_calls.some(longId)) {
      out = {
        ...out,
        tool_calls: out.tool_calls.map((t) => longId(t) ? { ...t, id: openaiToolId(t.id) } : t),
      };
    }
    if (tooLongId(out.tool_call_id)) out = { ...out, tool_call_id: openaiToolId(out.tool_call_id) };
    return out;
  });
}

/** Carries a cache mark, which OpenAI refuses wherever it is (it caches by prefix itself). */
const marked = (x: unknown) => isObject(x) && "cache_control" in x;

function unmarked(x: unknown): unknown {
  if (!marked(x)) return x;
  const { cache_control: _, ...rest } = x as Obj;
  return rest;
}

/** An id OpenAI's chat API would refuse as too long. */
const tooLongId = (id: unknown): id is string => typeof id === "string" && openaiToolId(id) !== id;

/** A tool call whose id OpenAI's chat API would refuse as too long. */
const longId = (t: unknown): t is Obj & { id: string } => isObject(t) && tooLongId(t.id);

function needsDialect(m: unknown): boolean {
  return isObject(m) && (
    OPENROUTER_MESSAGE_ONLY.some((k) => k in m) ||
    (Array.isArray(m.content) && m.content.some(marked)) ||
    (Array.isArray(m.tool_calls) && m.tool_calls.some((t) => marked(t) || longId(t))) ||
    tooLongId(m.tool_call_id)
  );
}

/** An image's `detail` as chat takes it (auto, low, high). */
function chatDetail(detail: string): string {
  return detail === "low" || detail === "high" || detail === "auto" ? detail : "high";
}

/**
 * The messages request and the internal `TextRequest`, both ways, plus the same-protocol
 * pass-through. `toInternal` reads a client body already checked by `validateMessagesRequest`;
 * `fromInternal` writes a body for an anthropic-messages upstream from a request of any
 * client format, so it also enforces the vendor's rules that other formats do not have
 * (role alternation, tool results first, temperature range, thinking constraints).
 */
import { anthropicToolId, repeats, toolIdRenamer } from "../tool_ids.ts";
import { forAnthropic } from "../chat/reasoning_details.ts";
import type {
  CacheControl,
  ImagePart,
  Message,
  Part,
  ReasoningPart,
  ReasoningSettings,
  TextPart,
  TextRequest,
  Tool,
  ToolCallPart,
  ToolChoice,
  ToolResultPart,
  WebSearch,
} from "../../events/text_request.ts";
import {
  approximateLocation,
  DEFAULT_WEB_SEARCHES,
  hasCacheMarks,
} from "../../events/text_request.ts";
import type {
  CacheControlParam,
  ContentBlockParam,
  ImageBlockParam,
  MessagesRequest,
  RedactedThinkingBlockParam,
  TextBlockParam,
  ThinkingBlockParam,
  ToolChoiceParam,
  ToolParam,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from "./schema.ts";
import { isObject, parseObject, str, strings } from "../json.ts";
import type { UpstreamNeed } from "../text_format.ts";
import { base64OfText } from "../../lib/base64.ts";
import { badRequest } from "../../http/gateway_error.ts";
import { anthropicOutputSchema } from "./output_schema.ts";
import { openAIStrictSchema } from "../openai_strict.ts";

// ---------------------------------------------------------------------------------------------
// Client body → internal

/** A validated messages body to the internal request; `model` is the resolved catalogue slug. */
export function toInternal(body: MessagesRequest, model: string): TextRequest {
  const system = systemParts(body.system);
  const messages: Message[] = [];
  for (const m of body.messages) {
    if (m.role === "system") {
      // Mid-conversation system messages (a Claude Code beta) have no internal place: the
      // internal request keeps one system prompt, so their text joins it, in order.
      system.push(...systemParts(m.content));
      continue;
    }
    const parts = typeof m.content === "string"
      ? [{ type: "text", text: m.content } as TextPart]
      : m.content.flatMap(blockToParts);
    messages.push({ role: m.role, parts });
  }

  const req: TextRequest = { model, system, messages, stream: body.stream === true };
  const tools = body.tools?.flatMap(toolToInternal);
  if (tools && tools.length > 0) req.tools = tools;
  const search = body.tools?.find((t) => t.type?.startsWith("web_search_"));
  if (search) req.webSearch = webSearchToInternal(search);
  if (body.tool_choice) {
    req.toolChoice = toolChoiceToInternal(body.tool_choice);
    if (body.tool_choice.disable_parallel_tool_use === true) req.parallelToolCalls = false;
  }
  req.maxTokens = body.max_tokens;
  if (body.temperature !== undefined) req.temperature = body.temperature;
  if (body.top_p !== undefined) req.topP = body.top_p;
  if (body.top_k !== undefined) req.topK = body.top_k;
  if (body.stop_sequences && body.stop_sequences.length > 0) req.stop = body.stop_sequences;
  const reasoning = reasoningToInternal(body);
  if (reasoning) req.reasoning = reasoning;
  // `output_format` is the structured-outputs beta's name for the same field, still sent by
  // clients on that beta.
  const format = body.output_config?.format ??
    (isObject(body.output_format) ? body.output_format : undefined);
  if (format && format.type === "json_schema" && isObject(format.schema)) {
    // Anthropic holds every answer to the schema: so does OpenAI, in its strict mode, where that
    // takes the schema (elsewhere the schema is a request, as OpenAI's default has it).
    const strict = openAIStrictSchema(format.schema);
    req.responseFormat = { type: "json_schema", name: "output", schema: strict ?? format.schema };
    if (strict) req.responseFormat.strict = true;
  }
  if (typeof body.metadata?.user_id === "string") req.user = body.metadata.user_id;
  return req;
}

function systemParts(system: string | ContentBlockParam[] | undefined): TextPart[] {
  if (system === undefined) return [];
  if (typeof system === "string") return [{ type: "text", text: system }];
  return system.flatMap((b) => {
    if (b.type !== "text") return [];
    const t = b as TextBlockParam;
    return [withCache({ type: "text", text: t.text } as TextPart, t.cache_control)];
  });
}

function withCache<T extends { cacheControl?: CacheControl }>(
  part: T,
  cc: CacheControlParam | null | undefined,
): T {
  if (cc) {
    part.cacheControl = cc.ttl === undefined ? { type: cc.type } : { type: cc.type, ttl: cc.ttl };
  }
  return part;
}

/** Block types we do not model (documents of other sources, server tool blocks) are dropped. */
function blockToParts(b: ContentBlockParam): Part[] {
  switch (b.type) {
    case "text": {
      const t = b as TextBlockParam;
      return [withCache({ type: "text", text: t.text } as TextPart, t.cache_control)];
    }
    case "image": {
      const image = imageToPart(b as ImageBlockParam);
      return image ? [image] : [];
    }
    case "tool_use": {
      const t = b as ToolUseBlockParam;
      const args = JSON.stringify(t.input);
      const part: ToolCallPart = { type: "tool_call", id: t.id, name: t.name, arguments: args };
      return [withCache(part, t.cache_control)];
    }
    case "tool_result": {
      const t = b as ToolResultBlockParam;
      const content: (TextPart | ImagePart)[] = t.content === undefined
        ? []
        : typeof t.content === "string"
        ? [{ type: "text", text: t.content }]
        : t.content.flatMap((c) =>
          blockToParts(c).filter((p): p is TextPart | ImagePart =>
            p.type === "text" || p.type === "image"
          )
        );
      const part: ToolResultPart = { type: "tool_result", callId: t.tool_use_id, content };
      if (t.is_error === true) part.isError = true;
      return [withCache(part, t.cache_control)];
    }
    case "thinking": {
      const t = b as ThinkingBlockParam;
      return [{ type: "reasoning", text: t.thinking, signature: t.signature }];
    }
    case "redacted_thinking":
      return [{ type: "reasoning", text: "", redacted: (b as RedactedThinkingBlockParam).data }];
    case "document": {
      // A plain-text document is text to any model; a base64 PDF travels as a PDF data URL
      // (OpenAI takes it as a file part); a URL or file-store source is not expressible.
      const d = b as { source: Record<string, unknown>; title?: unknown; context?: unknown };
      const source = d.source;
      // Its title and context (what the document is, for the model) go before it as text.
      const about = [d.title, d.context].filter((x) => typeof x === "string" && x !== "");
      const head: Part[] = about.length > 0 ? [{ type: "text", text: about.join("\n\n") }] : [];
      if (source.type === "text" && typeof source.data === "string") {
        return [...head, { type: "text", text: source.data }];
      }
      if (
        source.type === "base64" && source.media_type === "application/pdf" &&
        typeof source.data === "string"
      ) {
        return [...head, { type: "image", url: `data:application/pdf;base64,${source.data}` }];
      }
      // A document of content blocks (custom content): its text and images.
      if (source.type === "content") {
        return typeof source.content === "string"
          ? [...head, { type: "text", text: source.content }]
          : Array.isArray(source.content)
          ? [...head, ...(source.content as ContentBlockParam[]).flatMap(blockToParts)]
          : [];
      }
      return []; // a URL or file-store source: refused before this for other upstreams
    }
    case "search_result": {
      // A search result the client supplies (for citations) is, to another model, its text.
      const r = b as { source?: unknown; title?: unknown; content?: unknown };
      const body = Array.isArray(r.content)
        ? (r.content as ContentBlockParam[]).flatMap(blockToParts)
          .flatMap((p) => p.type === "text" ? [p.text] : []).join("\n")
        : "";
      const head = [r.title, r.source].filter((x) => typeof x === "string" && x !== "");
      return [{ type: "text", text: [...head, body].filter((x) => x !== "").join("\n\n") }];
    }
    case "tool_reference": {
      // Claude Code's tool search answers with references that load deferred tools into
      // Claude's context. Another model was sent every tool in full (`defer_loading` is
      // Anthropic's), so the reference only tells it the tool is there to call.
      const name = (b as { tool_name?: unknown }).tool_name;
      return typeof name === "string" ? [toolReferenceText(name)] : [];
    }
    default:
      // Blocks of the vendor's own server tools in an earlier turn (a search it ran, its
      // results) have no counterpart elsewhere; any other kind was refused (upstreamsFor).
      return [];
  }
}

/** A tool search's reference to a tool, as text naming it (`toolRef`: see TextPart). */
export function toolReferenceText(name: string): TextPart {
  return { type: "text", text: `Tool loaded: ${name}`, toolRef: name };
}

/** Blocks the internal form carries (documents and images, depending on their source). */
const CARRIED_BLOCKS = new Set([
  "text",
  "image",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking",
  "document",
  "search_result",
  "tool_reference",
]);

/**
 * History blocks of the vendor's server tools (a web search or fetch it ran, code it
 * executed, an MCP call it made): another model is sent the turn without them, as the
 * answer's text already tells what they found.
 */
const SERVER_TOOL_BLOCK = /^(server_tool_use|mcp_tool_use|mcp_tool_result|[a-z_]+_tool_result)$/;

/**
 * The upstream protocols that can serve the request, when not every one can: a content block
 * the internal form does not carry (an image or document from the vendor's file store or, for
 * documents, by URL; a `container_upload`; a type this gateway does not know) reaches only
 * the vendor itself, where it passes through as sent. For the pipeline's `upstreamsFor`.
 */
export function upstreamsFor(body: MessagesRequest): UpstreamNeed | undefined {
  const vendorOnly = vendorOnlyFeature(body);
  if (vendorOnly) {
    return {
      protocols: ["anthropic-messages"],
      reason: `${vendorOnly} can be sent only to an Anthropic model`,
    };
  }
  const block = uncarriedBlock(body);
  if (!block) return undefined;
  const [b, at] = block;
  const what = b.type === "image" || b.type === "document"
    ? `${b.type === "image" ? "an" : "a"} ${b.type} from source type ${
      JSON.stringify((b as { source?: { type?: unknown } }).source?.type)
    }`
    : `content block type ${JSON.stringify(b.type)}`;
  return {
    protocols: ["anthropic-messages"],
    reason: `${at}: ${what} can be sent only to an Anthropic model`,
  };
}

/**
 * A server tool other than web search (bash, text editor, code execution, web fetch, memory,
 * computer use, …) or the MCP connector's `mcp_servers`: Anthropic runs them, and another model
 * would answer without them, billed for an answer that never saw the tools it was given (and
 * a `tool_choice` naming one would reach it naming a tool it was not sent). The web search
 * tool is carried (the internal hosted search); `context_management` only trims what Claude
 * keeps, so another model goes without it. A compaction request (`compaction`) asks for no
 * answer at all but the conversation summarised into Claude's signed `compaction` block
 * (`stop_reason` `compaction`): another model would answer the last message instead, billed
 * for a reply the client cannot use as the summary it asked for.
 */
function vendorOnlyFeature(body: MessagesRequest): string | undefined {
  for (const [i, t] of (body.tools ?? []).entries()) {
    if (t.type === undefined || t.type === "custom" || t.type.startsWith("web_search_")) continue;
    return `tools[${i}]: tool type ${JSON.stringify(t.type)}`;
  }
  const extra = body as { mcp_servers?: unknown; container?: unknown; compaction?: unknown };
  if (Array.isArray(extra.mcp_servers) && extra.mcp_servers.length > 0) return "mcp_servers";
  if (extra.container !== undefined && extra.container !== null) return "container";
  if (extra.compaction !== undefined && extra.compaction !== null) return "compaction";
  return undefined;
}

/** The first block the internal form cannot carry, and where it is (a path made only then). */
function uncarriedBlock(body: MessagesRequest): [ContentBlockParam, string] | undefined {
  for (const [i, m] of body.messages.entries()) {
    if (typeof m.content === "string") continue;
    for (const [j, b] of m.content.entries()) {
      if (!carried(b)) return [b, `messages[${i}].content[${j}]`];
      const inner = b.type === "tool_result" ? (b as ToolResultBlockParam).content : undefined;
      if (!Array.isArray(inner)) continue;
      for (const [k, c] of (inner as ContentBlockParam[]).entries()) {
        if (!carried(c)) return [c, `messages[${i}].content[${j}].content[${k}]`];
      }
    }
  }
  return undefined;
}

function carried(b: ContentBlockParam): boolean {
  if (SERVER_TOOL_BLOCK.test(b.type)) return true; // dropped, see blockToParts
  if (!CARRIED_BLOCKS.has(b.type)) return false;
  const source = (b as { source?: { type?: unknown; media_type?: unknown } }).source;
  if (b.type === "image") return source?.type === "base64" || source?.type === "url";
  if (b.type === "document") {
    return source?.type === "text" || source?.type === "content" ||
      (source?.type === "base64" && source.media_type === "application/pdf");
  }
  return true;
}

function imageToPart(b: ImageBlockParam): ImagePart | null {
  const s = b.source;
  const url = s.type === "base64"
    ? `data:${s.media_type};base64,${s.data}`
    : s.type === "url"
    ? s.url
    : null; // `file` sources live in the vendor's file store: nothing another model can read
  return url === null ? null : withCache({ type: "image", url } as ImagePart, b.cache_control);
}

function toolToInternal(t: ToolParam): Tool[] {
  // Server tools (web search, code execution, …) run at the vendor; no other upstream has them.
  if (t.type !== undefined && t.type !== "custom") return [];
  const tool: Tool = { name: t.name, parameters: t.input_schema ?? { type: "object" } };
  if (t.description !== undefined) tool.description = t.description;
  // Strict as the internal form means it, OpenAI's (its encoders send it as is): Anthropic's
  // strict mode takes optional properties, OpenAI's answers 400 to them, so such a tool reaches
  // other models unconstrained (Claude is sent no strict flag from the internal form either).
  const strict = t.strict === true ? openAIStrictSchema(tool.parameters) : undefined;
  if (strict) {
    tool.parameters = strict;
    tool.strict = true;
  }
  return [withCache(tool, t.cache_control)];
}

/**
 * Anthropic's `web_search_*` server tool as the internal hosted search: Anthropic runs it
 * itself (the body goes as sent); another upstream may run it its own way (OpenRouter's web
 * plugin), and the hold covers `max_uses` searches either way.
 */
function webSearchToInternal(t: ToolParam): WebSearch {
  const max = t.max_uses;
  const out: WebSearch = {
    maxUses: typeof max === "number" && Number.isInteger(max) && max >= 0
      ? max
      : DEFAULT_WEB_SEARCHES,
  };
  const domains = strings(t.allowed_domains);
  if (domains) out.allowedDomains = domains;
  const where = approximateLocation(t.user_location);
  if (where) out.userLocation = where;
  return out;
}

function toolChoiceToInternal(tc: ToolChoiceParam): ToolChoice {
  switch (tc.type) {
    case "any":
      return { type: "required" };
    case "tool":
      return { type: "tool", name: tc.name ?? "" };
    case "none":
      return { type: "none" };
    default:
      return { type: "auto" };
  }
}

/** Effort names of `output_config.effort` (Anthropic's `max` is the internal `xhigh`). */
const EFFORT_FROM_MESSAGES: Record<string, ReasoningSettings["effort"]> = {
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "xhigh",
  max: "xhigh",
};

function reasoningToInternal(body: MessagesRequest): ReasoningSettings | undefined {
  const r: ReasoningSettings = {};
  const t = body.thinking;
  if (t?.type === "enabled") {
    r.enabled = true;
    r.budgetTokens = t.budget_tokens;
  } else if (t?.type === "adaptive") {
    r.enabled = true;
  } else if (t?.type === "disabled") {
    r.enabled = false;
  }
  const effort = body.output_config?.effort;
  if (typeof effort === "string" && EFFORT_FROM_MESSAGES[effort]) {
    // An effort with no `thinking` steers how much Claude writes, thinking off: that is how
    // Claude Code turns thinking off on models it does not know. Another vendor's reasoning
    // model is then asked for its least, as for `disabled`, not for that effort's reasoning.
    if (t === undefined || t === null) return { enabled: false };
    r.effort = EFFORT_FROM_MESSAGES[effort];
  }
  return Object.keys(r).length > 0 ? r : undefined;
}

// ---------------------------------------------------------------------------------------------
// Internal → upstream body

/**
 * Used when the request names no `max_tokens` (the messages API requires one) and the
 * model's output cap is not known; the pipeline passes the cap, which the hold covers.
 */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * The most a non-streaming call is asked for when its client names no max_tokens: Anthropic
 * drops a whole answer after ten minutes, and its SDK refuses non-streaming calls expected to
 * run longer (above 21 333 tokens at its reckoning of 128 000 an hour).
 */
export const NON_STREAMING_MAX_TOKENS = 21_333;

/**
 * Thinking budget per effort. Anthropic takes a token budget (minimum 1024); these follow the
 * steps of its extended-thinking guide: the minimum for minimal/low, then ×4 per step.
 */
export const THINKING_BUDGET_BY_EFFORT = {
  minimal: 1024,
  low: 1024,
  medium: 4096,
  high: 16384,
  xhigh: 32768,
} as const;

/** Anthropic refuses a thinking budget below this. */
export const thinkingBudgetTokensMin = 1024;

const JSON_OBJECT_INSTRUCTION =
  "Respond with a single valid JSON object and nothing else: no text before or after it and " +
  "no code fences.";

/**
 * An internal request to an anthropic-messages body for `upstreamModel`. What the vendor
 * cannot express is dropped (frequency/presence penalties, seed, reasoning of other vendors);
 * what it expresses differently is translated:
 * - `temperature` is clamped to [0, 1]: chat allows up to 2, Anthropic rejects above 1, and
 *   refusing a request the client's own format allows would be worse than the nearest value;
 * - `responseFormat` json_schema goes as `output_config.format` where the model holds its answer
 *   to a schema (`constrained`), the schema rewritten to the subset Anthropic takes
 *   (output_schema.ts); json_object, and a schema elsewhere, become a system instruction:
 *   the messages API has no JSON mode, and an instruction works on every model;
 * - without a client `max_tokens`, the model's cap (`modelCap`): a client that names none
 *   (Codex) expects the model's whole answer, not a truncation at a gateway default — for a
 *   non-streaming call at most NON_STREAMING_MAX_TOKENS;
 * - reasoning effort becomes a thinking budget (THINKING_BUDGET_BY_EFFORT), at most half of
 *   `max_tokens` (a budget the client set, below it); without a client `max_tokens` the
 *   budget is added to the default (up to the cap) so that thinking does not eat the answer. Thinking is left off where Anthropic
 *   forbids it: with a forced tool choice (a budget's thinking; adaptive takes one), or when
 *   fewer than 1024 tokens remain for it;
 * - a hosted web search becomes the `web_search_20250305` server tool, `max_uses` the cap the
 *   hold was sized for.
 */
export function fromInternal(
  req: TextRequest,
  upstreamModel: string,
  modelCap?: number,
  /** The model thinks adaptively (Opus 4.6 and later), and whether it takes effort `xhigh`. */
  adaptiveThinking: false | { xhigh: boolean } = false,
): Record<string, unknown> {
  const adaptive = adaptiveThinking !== false;
  // A whole (non-streaming) answer must come within the ten minutes Anthropic allows one:
  // without a client max_tokens it is not asked for more than that time holds.
  const outputCap = req.stream || modelCap === undefined
    ? modelCap
    : Math.min(modelCap, NON_STREAMING_MAX_TOKENS);
  const forcedTool = req.toolChoice?.type === "required" || req.toolChoice?.type === "tool";
  let maxTokens = req.maxTokens ?? outputCap ?? DEFAULT_MAX_TOKENS;
  // Anthropic requires the final assistant turn, when it called tools with thinking on, to
  // start with its signed thinking block, and so a prefill (a last message of the assistant's)
  // too. History from another vendor, a client that dropped the signature, or a prefill the
  // client wrote has none to replay, so a budget's thinking stays off rather than earn a 400;
  // so does a forced tool. Adaptive thinking takes a forced tool and a tool turn without
  // thinking (the model may have chosen not to think): there it stays on, at the effort asked.
  const prefill = req.messages.at(-1)?.role === "assistant";
  const thinkingOff = adaptive
    ? prefill && unsignedFinalTurn(req)
    : forcedTool || unsignedFinalTurn(req);
  let budget = thinkingOff ? undefined : thinkingBudget(req.reasoning);
  // Adaptive thinking takes an effort, not a budget: none of a budget's limits apply to it.
  const effort = adaptiveThinking && budget !== undefined
    ? adaptiveEffort(req.reasoning, budget, adaptiveThinking.xhigh)
    : "";
  if (budget !== undefined) {
    const base = maxTokens;
    if (req.maxTokens === undefined) {
      maxTokens = Math.min(maxTokens + budget, outputCap ?? Infinity);
    }
    // A budget the gateway chose for an effort leaves the answer half the room at least:
    // Claude may think to its whole budget, and an answer of a token or two is no answer.
    // A budget the client set is its own choice.
    const ceiling = req.reasoning?.budgetTokens === undefined
      ? Math.max(thinkingBudgetTokensMin, maxTokens - Math.min(base, Math.floor(maxTokens / 2)))
      : maxTokens - 1;
    budget = Math.min(budget, ceiling);
    if (budget < thinkingBudgetTokensMin || budget >= maxTokens) budget = undefined;
  }

  const body: Record<string, unknown> = { model: upstreamModel, max_tokens: maxTokens };
  const rf = req.responseFormat;
  // Anthropic refuses a schema beside a prefill (a last assistant message): it is asked for
  // in words there.
  const schema = rf?.type === "json_schema" && rf.constrained && !prefill
    ? anthropicOutputSchema(rf.schema)
    : undefined;
  if (schema) body.output_config = { format: { type: "json_schema", schema } };
  const system = systemBlocks(req, schema === undefined);
  const messages = messagesOut(req.messages);
  if (messages.length === 0 && system.length > 0) {
    // A chat or responses call of instructions alone (OpenAI answers them): Anthropic refuses
    // a call without messages, so the instructions are the one user turn.
    body.messages = [{ role: "user", content: system }];
  } else {
    if (system.length > 0) body.system = system;
    body.messages = messages;
  }

  const tools: Record<string, unknown>[] = (req.tools ?? []).map(toolOut);
  // The hosted search as Anthropic's server tool, unless a client tool has its name.
  // A search asked for without live web access (Codex's default) has no Anthropic form.
  if (req.webSearch && !req.webSearch.optional && !tools.some((t) => t.name === "web_search")) {
    tools.push(webSearchOut(req.webSearch));
  }
  if (tools.length > 0) {
    body.tools = tools;
    const tc = toolChoiceOut(req.toolChoice, req.parallelToolCalls);
    if (tc) body.tool_choice = tc;
  } else if (req.messages.some((m) => m.parts.some((p) => p.type === "tool_call"))) {
    // A history of tool calls with no tools declared (a call to summarise it, which OpenAI
    // answers): Anthropic refuses tool_use blocks without tools, so the ones the history
    // called are declared, open-ended, and none may be called now.
    const names = new Set<string>();
    for (const m of req.messages) {
      for (const p of m.parts) if (p.type === "tool_call") names.add(p.name);
    }
    body.tools = [...names].map((name) => ({ name, input_schema: { type: "object" } }));
    body.tool_choice = { type: "none" };
  }
  if (effort) {
    // The model decides how much to think; the effort steers it. The budget above still
    // sized a max_tokens the client left open, so that thinking does not eat the answer.
    // Summarized: the newest models omit the text unless asked, and the client asked for
    // reasoning, which its format shows where it can.
    body.thinking = { type: "adaptive", display: "summarized" };
    body.output_config = { ...(body.output_config as object | undefined), effort };
  } else if (budget !== undefined) {
    body.thinking = { type: "enabled", budget_tokens: budget };
  } else {
    samplingOut(req, body);
  }
  const stop = req.stop?.filter((s) => s.trim() !== "");
  if (stop && stop.length > 0) body.stop_sequences = stop;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  // A client that names a prompt cache (Codex does, every turn) expects OpenAI's automatic
  // caching; Claude caches only where asked. Its automatic breakpoint goes on the last
  // cacheable block and moves forward with the conversation, so each turn reads the last one's
  // prefix (a tenth of the input price) instead of paying for it whole. Marks the client set
  // itself are left as they are.
  if (req.promptCacheKey !== undefined && !hasCacheMarks(req)) {
    body.cache_control = { type: "ephemeral" };
  }
  fitCacheMarks(body);
  body.stream = req.stream;
  return body;
}

/** Anthropic takes at most this many cache breakpoints in a request. */
const CACHE_MARKS_MAX = 4;

/**
 * The cache marks a transcoded call carries, as Anthropic takes them: at most four (another
 * format's client may mark every message), the last ones kept — the longest prefixes, which
 * the earlier ones only shorten — and no one-hour mark after a five-minute one (it refuses a
 * longer TTL after a shorter; such a mark is cached for five minutes instead).
 */
function fitCacheMarks(body: Record<string, unknown>): void {
  const marked: Record<string, unknown>[] = [];
  const visit = (blocks: unknown) => {
    if (!Array.isArray(blocks)) return;
    for (const b of blocks) {
      if (!isObject(b)) continue;
      if (isObject(b.cache_control)) marked.push(b);
      // A tool result's own blocks may carry marks too, and count against the four.
      if (b.type === "tool_result") visit(b.content);
    }
  };
  visit(body.tools);
  visit(body.system);
  for (const m of (body.messages ?? []) as { content?: unknown }[]) visit(m.content);
  for (const b of marked.splice(0, Math.max(0, marked.length - CACHE_MARKS_MAX))) {
    delete b.cache_control;
  }
  let short = false;
  for (const b of marked) {
    const mark = b.cache_control as Record<string, unknown>;
    if (mark.ttl !== "1h") short = true;
    else if (short) b.cache_control = { type: mark.type };
  }
}

/**
 * The final assistant turn (a prefill, or one that called tools) does not start with signed
 * (or redacted) reasoning to replay. Anthropic asks it only of that turn; earlier turns'
 * thinking it drops anyway, so a history from another vendor turns thinking off only while
 * its last tool round is open, not for the rest of the conversation.
 */
function unsignedFinalTurn(req: TextRequest): boolean {
  return finalTurnUnthought(req.messages, {
    assistant: (m) => m.role === "assistant",
    toolResults: (m) => m.parts.some((p) => p.type === "tool_result"),
    toolCall: (m) => m.parts.some((p) => p.type === "tool_call"),
    thought: (m) => m.parts.some((p) => p.type === "reasoning" && anthropicReasoning(p).length > 0),
  });
}

interface TurnView<M> {
  assistant(m: M): boolean;
  /** A user message carrying tool results continues the assistant's turn. */
  toolResults(m: M): boolean;
  toolCall(m: M): boolean;
  thought(m: M): boolean;
}

/**
 * Anthropic's rule for thinking `enabled`: the final assistant turn, when it called tools or
 * is a prefill, starts with the model's signed thinking. A tool loop is one turn (the
 * messages since the last user message that is not tool results), and only its first
 * message thinks: later steps start straight with `tool_use`.
 */
function finalTurnUnthought<M>(messages: readonly M[], v: TurnView<M>): boolean {
  let start = messages.length;
  while (start > 0) {
    const m = messages[start - 1];
    if (!v.assistant(m) && !v.toolResults(m)) break;
    start--;
  }
  const turn = messages.slice(start).filter((m) => v.assistant(m));
  if (turn.length === 0) return false;
  const prefill = v.assistant(messages[messages.length - 1]);
  if (!prefill && !turn.some((m) => v.toolCall(m))) return false;
  return !v.thought(turn[0]);
}

/**
 * A reasoning part as Anthropic may be sent it: its own thinking block (signed) or redacted
 * block; another vendor's (sealed OpenRouter entries of other formats) cannot be verified.
 */
function anthropicReasoning(p: ReasoningPart): Record<string, unknown>[] {
  if (p.redacted !== undefined) {
    const data = forAnthropic(p.redacted);
    return data ? [{ type: "redacted_thinking", data }] : [];
  }
  const signature = forAnthropic(p.signature);
  return signature ? [{ type: "thinking", thinking: p.text, signature }] : [];
}

/**
 * `output_config.effort` for a model that thinks adaptively: the client's effort, or the one
 * whose budget covers the budget it set, within low–high, the efforts every such model takes;
 * `xhigh` where the model takes it (Opus 4.7 and later), else `high`. (`max` only a messages
 * client names: it passes through.)
 */
function adaptiveEffort(r: ReasoningSettings | undefined, budget: number, xhigh: boolean): string {
  const effort = r?.effort ??
    (["low", "medium"] as const).find((e) => budget <= THINKING_BUDGET_BY_EFFORT[e]) ?? "high";
  return effort === "minimal" ? "low" : effort === "xhigh" && !xhigh ? "high" : effort;
}

function thinkingBudget(r: ReasoningSettings | undefined): number | undefined {
  if (!r || r.enabled === false || r.effort === "none") return undefined;
  if (r.budgetTokens !== undefined) return r.budgetTokens;
  if (r.effort !== undefined) return THINKING_BUDGET_BY_EFFORT[r.effort];
  return r.enabled ? THINKING_BUDGET_BY_EFFORT.medium : undefined;
}

/**
 * Sampling parameters, only without thinking (Anthropic rejects temperature and top_k
 * changes with it). Recent Claude models also reject temperature together with top_p;
 * temperature is the knob clients mean, so top_p goes when both are set.
 */
function samplingOut(req: TextRequest, body: Record<string, unknown>): void {
  if (req.temperature !== undefined) body.temperature = Math.min(1, Math.max(0, req.temperature));
  if (req.topP !== undefined && req.temperature === undefined) body.top_p = req.topP;
  if (req.topK !== undefined) body.top_k = req.topK;
}

/** `instructed`: the answer's format, if any, is asked for in words (not sent natively). */
function systemBlocks(req: TextRequest, instructed: boolean): Record<string, unknown>[] {
  const blocks = req.system.filter((p) => p.text.trim() !== "").map(textOut);
  const rf = instructed ? req.responseFormat : undefined;
  if (rf?.type === "json_object") blocks.push({ type: "text", text: JSON_OBJECT_INSTRUCTION });
  if (rf?.type === "json_schema") {
    blocks.push({
      type: "text",
      text: `${JSON_OBJECT_INSTRUCTION} It must conform to this JSON schema (${rf.name}):\n` +
        JSON.stringify(rf.schema),
    });
  }
  return blocks;
}

function cacheOut(cc: CacheControl | undefined): Record<string, unknown> {
  if (!cc) return {};
  return {
    cache_control: cc.ttl === undefined ? { type: cc.type } : { type: cc.type, ttl: cc.ttl },
  };
}

function textOut(p: TextPart): Record<string, unknown> {
  return { type: "text", text: p.text, ...cacheOut(p.cacheControl) };
}

const THINKING = new Set(["thinking", "redacted_thinking"]);

/**
 * Messages: parts to blocks; empty and blank text dropped (Anthropic rejects both), then
 * empty messages dropped and consecutive same-role messages merged (the API requires
 * alternation); in user messages tool results go first, as the API requires.
 */
function messagesOut(messages: Message[]): Record<string, unknown>[] {
  const out: { role: string; content: Record<string, unknown>[] }[] = [];
  for (const [i, m] of messages.entries()) {
    let content = m.parts.flatMap((p) => partOut(p, m.role));
    // A last user message of blank text alone, or of nothing (`content: []`), stays
    // (Anthropic's 400 says what is wrong): dropped, it would leave the assistant's last turn
    // as a prefill to continue. After a user turn (the assistant's between them was blank
    // too) it goes: merged into that turn, it would only be refused.
    if (
      content.length === 0 && m.role === "user" && i === messages.length - 1 &&
      out.at(-1)?.role !== "user"
    ) {
      const blank = m.parts.find((p) => p.type === "text");
      if (blank) content = [textOut(blank as TextPart)];
      else if (m.parts.length === 0) content = [{ type: "text", text: "" }];
    }
    // Anthropic refuses an assistant message whose final block is thinking ("The final block
    // in an assistant message cannot be `thinking`"): a turn cut off once its thinking had come
    // (Codex keeps one after an interrupt, and sends it back in every later call) loses that
    // thinking, and goes if nothing else is left.
    if (m.role === "assistant") {
      while (content.length > 0 && THINKING.has(content.at(-1)?.type as string)) content.pop();
    }
    if (content.length === 0) continue;
    const last = out.at(-1);
    if (last && last.role === m.role) last.content.push(...content);
    else out.push({ role: m.role, content });
  }
  trimPrefill(out);
  for (const m of out) {
    if (m.role !== "user") continue;
    const results = m.content.filter((b) => b.type === "tool_result");
    if (results.length > 0 && results.length < m.content.length) {
      m.content = [...results, ...m.content.filter((b) => b.type !== "tool_result")];
    }
  }
  return out;
}

/**
 * A trailing assistant message is a prefill the model continues; Anthropic rejects one whose
 * text ends in whitespace, so that whitespace goes (and the message, if nothing is left).
 */
function trimPrefill(out: { role: string; content: Record<string, unknown>[] }[]): void {
  const last = out.at(-1);
  const block = last?.role === "assistant" ? last.content.at(-1) : undefined;
  if (!last || block?.type !== "text") return;
  const text = (block.text as string).trimEnd();
  if (text !== "") block.text = text;
  else if (last.content.length > 1) last.content.pop();
  else out.pop();
}

function partOut(p: Part, role: Message["role"]): Record<string, unknown>[] {
  switch (p.type) {
    case "text":
      // Anthropic refuses a text block of nothing but whitespace ("text content blocks must
      // contain non-whitespace text"), as it does an empty one.
      return p.text.trim() === "" ? [] : [textOut(p)];
    case "image": {
      const b = imageOut(p);
      return b ? [b] : [];
    }
    case "reasoning":
      // Thinking is only ever replayed in assistant turns, and only Anthropic's own
      // (signed or redacted); another vendor's reasoning text cannot be verified, so it goes.
      if (role !== "assistant") return [];
      return anthropicReasoning(p);
    case "tool_call":
      return [{
        type: "tool_use",
        id: anthropicToolId(p.id),
        name: p.name,
        input: parseInput(p.arguments),
        ...cacheOut(p.cacheControl),
      }];
    case "tool_result": {
      const content = p.content.flatMap((c) => partOut(c, role));
      return [{
        type: "tool_result",
        tool_use_id: anthropicToolId(p.callId),
        ...(content.length > 0 ? { content } : {}),
        ...(p.isError ? { is_error: true } : {}),
        ...cacheOut(p.cacheControl),
      }];
    }
    default: {
      const never: never = p;
      return never;
    }
  }
}

/** Tool input must be an object; arguments that are not a JSON object become `{}`. */
function parseInput(args: string): Record<string, unknown> {
  return parseObject(args) ?? {};
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*?)(;base64)?,/;

/** A data URL's payload that is not base64: a malformed one is the client's to fix. */
function percentDecoded(payload: string): string {
  try {
    return decodeURIComponent(payload);
  } catch {
    throw badRequest(
      "a data URL's percent-encoding is malformed (or not UTF-8); send the file base64",
    );
  }
}

/** http(s) URL → url source; data URL → base64 source (a PDF becomes a document block). */
function imageOut(p: ImagePart): Record<string, unknown> | null {
  const m = DATA_URL.exec(p.url);
  if (!m) {
    if (!/^https?:\/\//i.test(p.url)) return null;
    return { type: "image", source: { type: "url", url: p.url }, ...cacheOut(p.cacheControl) };
  }
  const payload = p.url.slice(m[0].length);
  // Base64 as clients send it may carry line breaks or spaces, which Anthropic refuses.
  const data = m[3] ? payload.replace(/\s+/g, "") : base64OfText(percentDecoded(payload));
  const declared = m[1] || "application/octet-stream";
  const type = declared === "application/pdf" ? "document" : "image";
  const mediaType = type === "image" ? imageMediaType(declared, data) : declared;
  return {
    type,
    source: { type: "base64", media_type: mediaType, data },
    ...(type === "document" && p.filename ? { title: p.filename } : {}),
    ...cacheOut(p.cacheControl),
  };
}

/** Leading base64 of the four image types Anthropic takes, by their magic bytes. */
const IMAGE_MAGIC: [prefix: string, type: string][] = [
  ["iVBORw0KGgo", "image/png"],
  ["/9j/", "image/jpeg"],
  ["R0lGOD", "image/gif"],
];

/**
 * The media type Anthropic is told for an image: what its bytes are, where they say (it
 * refuses a declared type the bytes contradict, and OpenAI takes `image/jpg`, which Anthropic
 * does not), else the declared one with `jpg` spelled as Anthropic takes it.
 */
export function imageMediaType(declared: string, base64: string): string {
  for (const [prefix, type] of IMAGE_MAGIC) if (base64.startsWith(prefix)) return type;
  // RIFF....WEBP: "UklGR", then the size, then "WEBP" (at byte 8, off the three-byte grid of
  // base64: "XRUJQ" from offset 11 whatever the size).
  if (base64.startsWith("UklGR") && base64.slice(11, 16) === "XRUJQ") return "image/webp";
  const t = declared.toLowerCase();
  return t === "image/jpg" || t === "image/pjpeg" ? "image/jpeg" : t;
}

/** Anthropic's web search server tool, capped at what the hold was sized for. */
function webSearchOut(w: WebSearch): Record<string, unknown> {
  const out: Record<string, unknown> = {
    type: "web_search_20250305",
    name: "web_search",
    max_uses: w.maxUses,
  };
  if (w.allowedDomains) out.allowed_domains = w.allowedDomains;
  if (w.userLocation) out.user_location = { type: "approximate", ...w.userLocation };
  return out;
}

function toolOut(t: Tool): Record<string, unknown> {
  // Anthropic requires `input_schema.type` "object"; chat clients may send `{}` for no arguments.
  const schema = t.parameters.type === undefined
    ? { type: "object", ...t.parameters }
    : t.parameters;
  return {
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    input_schema: schema,
    ...cacheOut(t.cacheControl),
  };
}

function toolChoiceOut(
  tc: ToolChoice | undefined,
  parallel: boolean | undefined,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> | undefined = tc?.type === "required"
    ? { type: "any" }
    : tc?.type === "tool"
    ? { type: "tool", name: tc.name }
    : tc?.type === "none"
    ? { type: "none" }
    : tc?.type === "auto" || parallel === false
    ? { type: "auto" }
    : undefined;
  if (out && parallel === false && out.type !== "none") out.disable_parallel_tool_use = true;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Pass-through

const isEmptyText = (b: unknown) =>
  isObject(b) && b.type === "text" && typeof b.text === "string" && b.text.trim() === "";

function hasEmptyText(m: unknown): boolean {
  if (!isObject(m)) return false;
  if (typeof m.content === "string") return m.content.trim() === "";
  return Array.isArray(m.content) && m.content.some(isEmptyText);
}

/** Anthropic's web search tool with no `max_uses`: as many searches as the model likes. */
function isUncappedSearch(t: unknown): boolean {
  return isObject(t) && typeof t.type === "string" && t.type.startsWith("web_search_") &&
    (t.max_uses === undefined || t.max_uses === null);
}

/**
 * The client's body for a same-protocol upstream: `model` changes, and what Anthropic would
 * refuse in a history is mended (below).
 */
export function passThroughRequest(
  body: Record<string, unknown>,
  upstreamModel: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model: upstreamModel };
  // A web search naming no cap is held for DEFAULT_WEB_SEARCHES (quota.ts); Anthropic takes no
  // cap as none and could run more, billed past the hold. It is sent the cap that was held.
  if (Array.isArray(body.tools) && body.tools.some(isUncappedSearch)) {
    out.tools = body.tools.map((t) =>
      isUncappedSearch(t) ? { ...t, max_uses: DEFAULT_WEB_SEARCHES } : t
    );
  }
  if (Array.isArray(body.messages) && body.messages.some(hasForeignSearch)) {
    out.messages = body.messages.map((m) => hasForeignSearch(m) ? withoutForeignSearch(m) : m);
  }
  if (Array.isArray(out.messages) && out.messages.some(hasForeignThinking)) {
    out.messages = out.messages.flatMap((m) => {
      if (!hasForeignThinking(m)) return [m];
      const content = ownThinking((m as { content: Block[] }).content);
      // A turn that was nothing but another vendor's reasoning is left out whole.
      return content.length > 0 ? [{ ...(m as Block), content }] : [];
    });
  }
  // Empty text (another vendor's empty answer, as a client kept it): Anthropic refuses it
  // ("text content blocks must be non-empty"); a turn of nothing else is left out. Not the last
  // user turn: without it the assistant's turn before would be a prefill to continue.
  if (Array.isArray(out.messages) && out.messages.some(hasEmptyText)) {
    const last = out.messages.length - 1;
    out.messages = out.messages.flatMap((m, i) => {
      if (!hasEmptyText(m) || (i === last && (m as Block).role === "user")) return [m];
      const content = (m as { content: Block[] | string }).content;
      const kept = typeof content === "string" ? [] : content.filter((b) => !isEmptyText(b));
      return kept.length > 0 ? [{ ...(m as Block), content: kept }] : [];
    });
  }
  // Ids another vendor made (Kimi's `functions.f:0`), in a history this gateway did not
  // rewrite (an older session, another gateway's): Anthropic takes only [a-zA-Z0-9_-].
  if (Array.isArray(out.messages) && out.messages.some(hasForeignToolId)) {
    out.messages = out.messages.map((m) =>
      hasForeignToolId(m)
        ? { ...(m as Block), content: (m as { content: Block[] }).content.map(withToolId) }
        : m
    );
  }
  // A tool id repeated across turns (Kimi restarts its ids with every answer, and a client on
  // it was sent each rewritten the same way): Anthropic refuses it ("tool_use ids must be
  // unique"), as the transcoded path's withUniqueToolIds spares its upstreams.
  if (Array.isArray(out.messages) && repeatsToolUseId(out.messages)) {
    out.messages = withUniqueToolUseIds(out.messages);
  }
  // As in fromInternal: with thinking enabled, Anthropic wants the last assistant turn, when
  // it called tools or is a prefill, to start with its signed thinking. A session that ran on
  // another vendor's model has none there (its reasoning, if any, was left out above), so
  // thinking is off for that turn. (Adaptive thinking takes a turn without: the model may
  // have chosen not to think.)
  if (
    isObject(out.thinking) && out.thinking.type === "enabled" && Array.isArray(out.messages) &&
    unthoughtFinalTurn(out.messages)
  ) {
    delete out.thinking;
    withoutThinkingEdits(out);
  }
  return out;
}

/**
 * A pass-through body as a Claude model takes it, in place. Claude Code sends the newest
 * models' shape to every model it does not know by name (a catalogue alias such as
 * `~anthropic/claude-haiku-latest` too): one that does not think `adaptive`ly (before Opus
 * 4.6) gets no mid-conversation system message, a thinking budget instead, and no effort
 * unless it takes one (`effort`: Opus 4.5).
 */
export function forOlderClaude(
  out: Record<string, unknown>,
  takes: { adaptive: boolean; effort: boolean },
): void {
  if (takes.adaptive) return;
  midSystemAsUser(out);
  adaptiveAsBudget(out);
  if (!takes.effort) withoutEffort(out);
}

/**
 * A pass-through body for a Claude model that does not think adaptively (those before Opus
 * 4.6), in place. Claude Code asks adaptive thinking and an effort of every model it does not
 * know by name, a catalogue alias such as `~anthropic/claude-haiku-latest` too; those models
 * refuse both with a 400. The thinking becomes a budget for the effort (Anthropic's default,
 * high, where none is named), at most half of `max_tokens`, and the effort goes: the budget
 * says it. Thinking is off where no budget fits, or where a budget's thinking would need the
 * signed thinking the last tool turn lacks (adaptive thinking did not).
 */
export function adaptiveAsBudget(out: Record<string, unknown>): void {
  const t = out.thinking;
  if (!isObject(t) || t.type !== "adaptive") return;
  const oc = out.output_config;
  const effort = isObject(oc) && typeof oc.effort === "string"
    ? EFFORT_FROM_MESSAGES[oc.effort]
    : undefined;
  withoutEffort(out);
  const max = typeof out.max_tokens === "number" ? out.max_tokens : 0;
  const byEffort = THINKING_BUDGET_BY_EFFORT[effort && effort !== "none" ? effort : "high"];
  const budget = Math.min(byEffort, Math.floor(max / 2));
  const unthought = Array.isArray(out.messages) && unthoughtFinalTurn(out.messages);
  if (budget >= thinkingBudgetTokensMin && !unthought) {
    // `display` came with adaptive thinking (the newest models omit the text unless asked):
    // an older model shows it by default, and its budget form is sent as this gateway's own
    // transcoder sends it, without one. Any other setting stays.
    const { type: _type, display: _display, ...rest } = t;
    out.thinking = { ...rest, type: "enabled", budget_tokens: budget };
  } else {
    delete out.thinking;
    withoutThinkingEdits(out);
  }
}

/**
 * `output_config.effort` left out, in place (the rest of `output_config` stays): Claude Code
 * asks an effort of a model it does not know by name with thinking off too (its WebSearch
 * call), and models before Opus 4.5 refuse one.
 */
export function withoutEffort(out: Record<string, unknown>): void {
  const oc = out.output_config;
  if (!isObject(oc) || !("effort" in oc)) return;
  const { effort: _effort, ...rest } = oc;
  if (Object.keys(rest).length > 0) out.output_config = rest;
  else delete out.output_config;
}

/**
 * A pass-through body for a Claude model before the adaptive ones, in place: a mid-conversation
 * system message (Claude Code sends one to every model it does not know by name, an alias too)
 * is taken only by the newest models, so its text joins the user turn it follows, where Claude
 * Code puts the same text for a model it knows (a system message first is a user turn; one
 * after an assistant turn goes at the end of the user turn after it).
 */
export function midSystemAsUser(out: Record<string, unknown>): void {
  const messages = out.messages;
  if (!Array.isArray(messages) || !messages.some((m) => isObject(m) && m.role === "system")) {
    return;
  }
  const folded: Block[] = [];
  // Text after an assistant turn waits for the user turn that follows, and goes after its
  // blocks: a tool_result must come first in the turn after a tool_use (Anthropic's 400).
  let waiting: Block[] = [];
  const flush = () => {
    if (waiting.length > 0) folded.push({ role: "user", content: waiting });
    waiting = [];
  };
  for (const m of messages as Block[]) {
    if (m?.role !== "system") {
      if (m?.role === "user" && waiting.length > 0) {
        folded.push({ ...m, content: [...blocksOf(m.content), ...waiting] });
        waiting = [];
        continue;
      }
      flush();
      folded.push(m);
      continue;
    }
    const text = blocksOf(m.content).filter((b) => b?.type === "text" && !isEmptyText(b));
    const last = folded.at(-1);
    if (text.length === 0) continue;
    if (last === undefined) folded.push({ role: "user", content: text });
    else if (last.role === "user" && waiting.length === 0) {
      folded[folded.length - 1] = { ...last, content: [...blocksOf(last.content), ...text] };
    } else waiting.push(...text);
  }
  flush();
  out.messages = folded;
}

/** A message's content as blocks (a string is one text block). */
function blocksOf(content: unknown): Block[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return Array.isArray(content) ? content as Block[] : [];
}

/**
 * Context editing that clears thinking (Claude Code always asks `clear_thinking_20251015`)
 * requires thinking on: Anthropic answers 400 to it once thinking is off.
 */
export function withoutThinkingEdits(out: Record<string, unknown>): void {
  const cm = out.context_management;
  if (!isObject(cm) || !Array.isArray(cm.edits)) return;
  const edits = cm.edits.filter((e) => !String((e as Block)?.type).startsWith("clear_thinking"));
  if (edits.length === cm.edits.length) return;
  if (edits.length === 0 && Object.keys(cm).length === 1) delete out.context_management;
  else out.context_management = { ...cm, edits };
}

function unthoughtFinalTurn(messages: unknown[]): boolean {
  const blocks = (m: unknown) => blocksOf((m as { content?: unknown }).content);
  return finalTurnUnthought(messages, {
    assistant: (m) => isObject(m) && m.role === "assistant",
    toolResults: (m) => blocks(m).some((b) => b?.type === "tool_result"),
    toolCall: (m) => blocks(m).some((b) => b?.type === "tool_use"),
    thought: (m) => blocks(m).some(isThinking),
  });
}

function hasForeignToolId(m: unknown): boolean {
  const content = (m as { content?: unknown })?.content;
  return Array.isArray(content) && (content as Block[]).some((b) => withToolId(b) !== b);
}

function withToolId(b: Block): Block {
  if (b?.type === "tool_use" && typeof b.id === "string" && anthropicToolId(b.id) !== b.id) {
    return { ...b, id: anthropicToolId(b.id) };
  }
  if (
    b?.type === "tool_result" && typeof b.tool_use_id === "string" &&
    anthropicToolId(b.tool_use_id) !== b.tool_use_id
  ) {
    return { ...b, tool_use_id: anthropicToolId(b.tool_use_id) };
  }
  return b;
}

const blocksOfMessage = (m: unknown): Block[] =>
  isObject(m) && Array.isArray(m.content) ? m.content as Block[] : [];

function repeatsToolUseId(messages: unknown[]): boolean {
  return repeats(
    messages.flatMap((m) =>
      blocksOfMessage(m).flatMap((b) => b?.type === "tool_use" ? [b.id] : [])
    ),
  );
}

/**
 * The messages with each `tool_use` id used once, renamed as `withUniqueToolIds` renames the
 * internal form's. The messages that change are copied.
 */
function withUniqueToolUseIds(messages: unknown[]): unknown[] {
  const ids = toolIdRenamer();
  return messages.map((m, i) => {
    const blocks = blocksOfMessage(m);
    if (blocks.length === 0) return m;
    const assistant = (m as Block).role === "assistant";
    if (assistant && (messages[i - 1] as Block | undefined)?.role !== "assistant") ids.turn();
    let changed = false;
    const content = blocks.map((b) => {
      const field = assistant
        ? b?.type === "tool_use" && typeof b.id === "string" ? "id" : undefined
        : b?.type === "tool_result" && typeof b.tool_use_id === "string"
        ? "tool_use_id"
        : undefined;
      if (!field) return b;
      const original = b[field] as string;
      const id = assistant ? ids.call(original) : ids.result(original);
      if (id === original) return b;
      changed = true;
      return { ...b, [field]: id };
    });
    return changed ? { ...(m as Block), content } : m;
  });
}

const isThinking = (b: Block) => b?.type === "thinking" || b?.type === "redacted_thinking";

/**
 * A thinking block Anthropic did not issue: the reasoning of another vendor a Claude client
 * was served (an empty signature, OpenAI's encrypted reasoning, another format's sealed
 * entry) and sent back after switching to a Claude model. Anthropic refuses it with a 400.
 */
function foreignThinking(b: Block): boolean {
  if (b?.type === "thinking") return forAnthropic(str(b.signature)) !== b.signature;
  if (b?.type === "redacted_thinking") return forAnthropic(str(b.data)) !== b.data;
  return false;
}

function hasForeignThinking(m: unknown): boolean {
  return isObject(m) && m.role === "assistant" && Array.isArray(m.content) &&
    (m.content as Block[]).some(foreignThinking);
}

/** The blocks with Anthropic's own reasoning kept (a sealed one unsealed), the rest dropped. */
function ownThinking(blocks: Block[]): Block[] {
  return blocks.flatMap((b) => {
    if (!foreignThinking(b)) return [b];
    if (b.type === "thinking") {
      const signature = forAnthropic(str(b.signature));
      return signature ? [{ ...b, signature }] : [];
    }
    const data = forAnthropic(str(b.data));
    return data ? [{ ...b, data }] : [];
  });
}

type Block = Record<string, unknown>;

/**
 * A search another vendor ran, shown as Anthropic's blocks (messages/encode.ts): its results
 * carry no `encrypted_content`, which Anthropic requires of the results it is sent back.
 */
function foreignSearch(b: Block): boolean {
  return b?.type === "web_search_tool_result" && Array.isArray(b.content) &&
    b.content.some((r) => isObject(r) && r.encrypted_content === "");
}

function hasForeignSearch(m: unknown): boolean {
  return isObject(m) && Array.isArray(m.content) && (m.content as Block[]).some(foreignSearch);
}

/** The turn without another vendor's searches (their findings are in its text). */
function withoutForeignSearch(m: unknown): unknown {
  const turn = m as { content: Block[] };
  const ids = new Set(turn.content.filter(foreignSearch).map((b) => b.tool_use_id));
  return {
    ...turn,
    content: turn.content.filter((b) =>
      !foreignSearch(b) && !(b?.type === "server_tool_use" && ids.has(b.id))
    ),
  };
}

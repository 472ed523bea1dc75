/**
 * Responses request ⇄ the internal `TextRequest`, and the body sent on pass-through.
 *
 * Client → internal (`toInternal`), used when a responses client is routed to an upstream of
 * another protocol (and by the meter to count the prompt):
 * - `instructions`, then `system` and `developer` messages in order → `system`;
 * - user messages → user messages; `function_call_output` → `tool_result` parts of a user
 *   message; assistant messages, `reasoning` and `function_call` items → parts of an assistant
 *   message. Consecutive items of one role merge into one message, so a turn's reasoning, text
 *   and parallel calls stay one assistant message, as the messages format needs;
 * - `reasoning` → a reasoning part: summaries joined by a blank line, `encrypted_content` as
 *   `redacted` — or, when the gateway sealed it, the vendor's block it carries (its text with
 *   the signature, or its redacted data: sealed_reasoning.ts); another vendor's that names no
 *   `format` (see `unnamedForeign`) keeps its text alone;
 * - `custom_tool_call` → a tool call whose arguments are `{"input": <the free text>}`: other
 *   formats only carry JSON arguments, and the custom tool itself becomes a function taking
 *   `{"input": string}`; `custom_tool_call_output` → a `tool_result`, like a function's;
 * - tools: functions, the members of `namespace` tools, custom tools and a client-executed
 *   `tool_search` all become function tools (see tools.ts for the names and the way back);
 *   calls in the history that carry a `namespace` take the flattened name;
 * - a client-executed `tool_search_call` → a tool call of the `tool_search` function, its
 *   `tool_search_output` → a tool result naming the tools it loaded (which join the tools);
 * - an inline text file → its name and text; a PDF → a PDF part;
 * - items and parts the internal form cannot express (files by id or URL, `file_id` images,
 *   items of built-in tools) are dropped; `upstreamsFor` names the ones that change the
 *   meaning, which only a responses upstream can serve.
 *
 * Internal → upstream (`fromInternal`) builds a Responses body for an openai-responses
 * upstream serving a chat or messages client; `store` is always false.
 */
import {
  approximateLocation,
  DEFAULT_WEB_SEARCHES,
  type ImagePart,
  isPdfDataUrl,
  isTextDataUrl,
  type Message,
  type Part,
  type ReasoningSettings,
  type ResponseFormat,
  searchContextSize,
  textOfDataUrl,
  type TextPart,
  type TextRequest,
  type Tool,
  type ToolChoice,
  type WebSearch,
} from "../../events/text_request.ts";
import type { UpstreamNeed } from "../text_format.ts";
import { keepAllowedTools } from "../allowed_tools.ts";
import { choiceBesideSearch } from "../search_choice.ts";
import { resultContent } from "../tool_results.ts";
import { upstreamUser } from "../upstream_user.ts";
import { openaiCallId } from "../tool_ids.ts";
import type {
  ContentPart,
  InputItem,
  ReasoningItem,
  ResponsesRequest,
  ResponsesToolChoice,
} from "./schema.ts";
import { isSealedReasoning, OPENAI_ENCRYPTED, openSealedReasoning } from "./sealed_reasoning.ts";
import { foreignFormat, forOpenAI, sealDetail } from "../chat/reasoning_details.ts";
import { isClientCall, ToolMap } from "./tools.ts";
import { COMPACTION_NEED, compactionTriggered } from "./compaction.ts";
import { isObject, strings } from "../json.ts";
import { OPENROUTER_EXTENSIONS, takesVerbosity } from "../openai_dialect.ts";

type Obj = Record<string, unknown>;

// ---- client → internal ---------------------------------------------------------------------

/** A validated request (see `validateResponsesRequest`) → the internal form. */
export function toInternal(body: ResponsesRequest | Obj, model: string): TextRequest {
  const b = body as ResponsesRequest;
  const system: TextPart[] = [];
  if (b.instructions) system.push({ type: "text", text: b.instructions });
  const messages: Message[] = [];
  const push = (role: Message["role"], parts: Part[]) => {
    if (parts.length === 0) return;
    const last = messages[messages.length - 1];
    if (last?.role === role) last.parts.push(...parts);
    else messages.push({ role, parts });
  };

  const map = new ToolMap(b);
  const input = b.input ?? [];
  if (typeof input === "string") push("user", [{ type: "text", text: input }]);
  else for (const item of input) itemToInternal(item, system, push, map);
  // A last user message of no content (`content: []`) is kept as such: left out, the
  // assistant's answer before it would be the last message, a prefill Claude continues.
  const lastItem = Array.isArray(input) ? input.at(-1) as Obj | undefined : undefined;
  if (
    lastItem && (lastItem.type ?? "message") === "message" && lastItem.role === "user" &&
    Array.isArray(lastItem.content) && lastItem.content.length === 0 &&
    messages.at(-1)?.role === "assistant"
  ) messages.push({ role: "user", parts: [] });

  const req: TextRequest = { model, system, messages, stream: b.stream === true };
  if (map.tools.length > 0) req.tools = map.tools;
  const webSearch = webSearchOf(b.tools);
  if (webSearch) req.webSearch = webSearch;
  const choice = toolChoiceToInternal(b.tool_choice, map);
  if (choice) req.toolChoice = choice;
  if (typeof b.tool_choice === "object" && b.tool_choice?.type === "allowed_tools") {
    allowedToolsOnly(b.tool_choice as Obj, map, req);
  }
  if (b.parallel_tool_calls != null) req.parallelToolCalls = b.parallel_tool_calls;
  if (b.max_output_tokens != null) req.maxTokens = b.max_output_tokens;
  if (b.temperature != null) req.temperature = b.temperature;
  if (b.top_p != null) req.topP = b.top_p;
  const format = b.text?.format;
  if (format) req.responseFormat = formatToInternal(format);
  const reasoning = reasoningToInternal(b.reasoning);
  if (reasoning) req.reasoning = reasoning;
  const user = b.user ?? (typeof b.safety_identifier === "string" ? b.safety_identifier : null);
  if (user) req.user = user;
  const extra = b as unknown as { prompt_cache_key?: unknown; text?: { verbosity?: unknown } };
  if (typeof extra.prompt_cache_key === "string") req.promptCacheKey = extra.prompt_cache_key;
  if (typeof extra.text?.verbosity === "string") req.verbosity = extra.text.verbosity;
  return req;
}

function itemToInternal(
  item: InputItem,
  system: TextPart[],
  push: (role: Message["role"], parts: Part[]) => void,
  map: ToolMap,
): void {
  const type = item.type ?? "message";
  const it = item as Obj;
  switch (type) {
    case "message": {
      const role = it.role as string;
      const parts = contentToInternal(it.content as string | ContentPart[]);
      if (role === "system" || role === "developer") {
        for (const p of parts) if (p.type === "text") system.push(p);
      } else if (role === "assistant") push("assistant", parts);
      // A user turn of `content: ""` stays, with its blank text (as chat's and a string
      // input's do): left out last, the assistant's answer before it would become a prefill
      // that Claude continues instead of answering. Blank text goes where an upstream refuses
      // it (see the messages encoder).
      else push("user", it.content === "" ? [{ type: "text", text: "" }] : parts);
      return;
    }
    case "function_call":
    case "custom_tool_call":
      push("assistant", [{
        type: "tool_call",
        id: it.call_id as string,
        name: map.name(it.name as string, it.namespace as string | undefined),
        // A custom tool's free text travels as the `input` of a function's JSON arguments.
        arguments: type === "function_call"
          ? it.arguments as string
          : JSON.stringify({ input: it.input }),
      }]);
      return;
    case "tool_search_call":
      if (!isClientCall(it)) return; // a hosted search: see upstreamsFor
      push("assistant", [{
        type: "tool_call",
        id: it.call_id as string,
        name: map.toolSearch,
        arguments: typeof it.arguments === "string"
          ? it.arguments
          : JSON.stringify(it.arguments ?? {}),
      }]);
      return;
    case "tool_search_output":
      if (!isClientCall(it)) return;
      push("user", [{
        type: "tool_result",
        callId: it.call_id as string,
        content: [{ type: "text", text: map.searchResult(it.tools) }],
      }]);
      return;
    case "function_call_output":
    case "custom_tool_call_output":
      push("user", [{
        type: "tool_result",
        callId: it.call_id as string,
        content: contentToInternal(it.output as string | ContentPart[]).filter((p) =>
          p.type === "text" || p.type === "image"
        ) as (TextPart | ImagePart)[],
      }]);
      return;
    case "reasoning": {
      const r = item as ReasoningItem;
      let text = r.summary.map((s) => s.text).join("\n\n");
      if (text === "" && r.content) text = r.content.map((c) => c.text ?? "").join("\n\n");
      if (text === "" && !r.encrypted_content) return;
      const sealed = isSealedReasoning(r.encrypted_content)
        ? openSealedReasoning(r.encrypted_content)
        : undefined;
      if (sealed) {
        push("assistant", [{ type: "reasoning", ...sealed }]);
      } else if (isSealedReasoning(r.encrypted_content)) {
        // A seal that does not open: the text as plain reasoning, no signature to replay.
        if (text !== "") push("assistant", [{ type: "reasoning", text }]);
      } else {
        // OpenRouter names the vendor whose reasoning an item carries (`google-gemini-v1`):
        // another vendor's travels sealed, so it goes back only to where it came from.
        const format = (r as { format?: unknown }).format;
        const redacted = r.encrypted_content && otherThanOpenAI(format)
          ? sealDetail({ type: "reasoning.encrypted", format, data: r.encrypted_content, id: r.id })
          : unnamedForeign(r)
          ? undefined
          : r.encrypted_content;
        push("assistant", [{ type: "reasoning", text, ...(redacted ? { redacted } : {}) }]);
      }
      return;
    }
    default:
      return; // items of built-in tools and newer item types: see upstreamsFor
  }
}

/**
 * A message part the internal form carries: text, an image by URL, a PDF or a text file
 * given inline. The others (a file by id or URL, an image by file id, another file type,
 * audio) only a responses upstream can read (`upstreamsFor`): left out on the way to another
 * upstream, the model would answer the rest of the turn as if it had them.
 */
function carriedPart(q: Obj): boolean {
  switch (q.type) {
    case "input_audio":
      return false;
    case "input_image":
      return typeof q.image_url === "string";
    case "input_file":
      return typeof q.file_data === "string" &&
        (isPdfDataUrl(q.file_data) || isTextDataUrl(q.file_data));
    default:
      return true;
  }
}

/** Message content → text and image parts (see `carriedPart` for what is left out). */
function contentToInternal(content: string | ContentPart[]): (TextPart | ImagePart)[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  const out: (TextPart | ImagePart)[] = [];
  for (const p of content) {
    const q = p as Obj;
    switch (p.type) {
      case "input_text":
      case "output_text":
        out.push({ type: "text", text: q.text as string });
        break;
      case "refusal":
        out.push({ type: "text", text: q.refusal as string });
        break;
      case "input_image":
        if (typeof q.image_url === "string") {
          const image: ImagePart = { type: "image", url: q.image_url };
          if (typeof q.detail === "string") image.detail = q.detail;
          out.push(image);
        }
        break;
      case "input_file": {
        // A PDF given inline travels as its data URL, a text file as its text; a file id or
        // URL is the provider's own.
        if (typeof q.file_data === "string" && isPdfDataUrl(q.file_data)) {
          const file: ImagePart = { type: "image", url: q.file_data };
          if (typeof q.filename === "string") file.filename = q.filename;
          out.push(file);
          break;
        }
        if (typeof q.file_data === "string" && isTextDataUrl(q.file_data)) {
          out.push({ type: "text", text: textOfDataUrl(q.file_data, q.filename) });
        }
        break;
      }
      default:
        break;
    }
  }
  return out;
}

function toolChoiceToInternal(
  c: ResponsesToolChoice | null | undefined,
  map: ToolMap,
): ToolChoice | undefined {
  if (c == null) return undefined;
  if (typeof c === "string") return { type: c };
  if ((c.type === "function" || c.type === "custom") && c.name) {
    return { type: "tool", name: map.name(c.name, c.namespace as string | undefined) };
  }
  if (c.type === "allowed_tools" && (c.mode === "auto" || c.mode === "required")) {
    return { type: c.mode };
  }
  return undefined; // a built-in tool's choice: meaningless without that tool
}

/**
 * `allowed_tools`: other vendors have no subset of the declared tools, so only the allowed
 * ones are offered (and one that must be called is named).
 */
function allowedToolsOnly(c: Obj, map: ToolMap, req: TextRequest): void {
  const listed = Array.isArray(c.tools) ? (c.tools as Obj[]) : [];
  const allowed = new Set<string>();
  for (const t of listed) {
    if ((t?.type === "function" || t?.type === "custom") && typeof t.name === "string") {
      allowed.add(map.name(t.name, t.namespace as string | undefined));
    }
  }
  if (req.webSearch && !listed.some((t) => WEB_SEARCH_TOOLS.has(t?.type as string))) {
    delete req.webSearch;
  }
  req.tools = req.tools?.filter((t) => allowed.has(t.name));
  if (!req.tools?.length) delete req.tools;
  if (c.mode === "required" && allowed.size === 1 && !req.webSearch) {
    req.toolChoice = { type: "tool", name: [...allowed][0] };
  }
}

/** Codex's `namespace` tools or its client-run `tool_search`: see `nativeToolsOnly` (text_format.ts). */
export function nativeToolsOnly(body: Obj): boolean {
  return Array.isArray(body.tools) &&
    body.tools.some((t) => {
      const type = (t as Obj | null)?.type;
      return type === "namespace" || (type === "tool_search" && (t as Obj).execution === "client");
    });
}

/**
 * For an aggregator whose responses API lists no `tool_search` tool (OpenRouter's): Codex
 * declares its client-executed tool search on every call, which would cost the whole call.
 * The tool goes, and with it the history's search items (calls of a tool no longer declared);
 * the model works with the tools it was given whole.
 */
export function withoutClientToolSearch(body: Obj): void {
  const isSearch = (t: unknown) =>
    (t as Obj | null)?.type === "tool_search" && (t as Obj).execution === "client";
  if (Array.isArray(body.tools) && body.tools.some(isSearch)) {
    body.tools = body.tools.filter((t) => !isSearch(t));
  }
  const input = body.input;
  if (
    Array.isArray(input) && input.some((i) => TOOL_SEARCH_ITEMS.has((i as Obj)?.type as string))
  ) {
    body.input = input.filter((i) => !TOOL_SEARCH_ITEMS.has((i as Obj)?.type as string));
  }
}

/**
 * A responses body's `allowed_tools` choice as the tools it allows and a plain choice, for an
 * upstream that takes no subset (OpenRouter); other bodies are left as they are.
 */
export function allowedToolsAsSubset(body: Obj): void {
  const c = body.tool_choice as Obj | undefined;
  if (c?.type !== "allowed_tools") return;
  const byName = (t: Obj) => t?.type === "function" || t?.type === "custom";
  keepAllowedTools(
    body,
    c.tools,
    c.mode,
    (t) => byName(t) ? `${t.type}:${t.name}` : String(t?.type),
    (t) => byName(t) ? { type: t.type, name: t.name } : undefined,
  );
}

function formatToInternal(f: Obj): ResponseFormat {
  if (f.type === "json_schema") {
    const out: ResponseFormat = {
      type: "json_schema",
      name: f.name as string,
      schema: f.schema as Obj,
    };
    if (typeof f.strict === "boolean") out.strict = f.strict;
    return out;
  }
  return { type: f.type === "json_object" ? "json_object" : "text" };
}

/**
 * A `reasoning` object without an effort (Codex sends `{summary: "auto"}` unless configured)
 * asks for the model's default reasoning, as the Responses API gives it (medium): on a model
 * that reasons only when told (Claude's thinking), that is `enabled`.
 */
function reasoningToInternal(r: ResponsesRequest["reasoning"]): ReasoningSettings | undefined {
  if (!r) return undefined;
  const out: ReasoningSettings = {};
  if (r.effort) out.effort = r.effort;
  else out.enabled = true;
  if (r.summary) out.summary = r.summary;
  return out;
}

// ---- what only a responses upstream can serve ----------------------------------------------

/** Input item types `toInternal` maps; any other type only means something to a responses upstream. */
const MAPPED_ITEMS = new Set([
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "custom_tool_call",
  "custom_tool_call_output",
]);

/** Items of a tool search, mapped when the client ran the search (they carry a `call_id`). */
const TOOL_SEARCH_ITEMS = new Set(["tool_search_call", "tool_search_output"]);

/**
 * The built-in tools a request declares, by type (`web_search`, `file_search`, a hosted
 * `tool_search`, …): they run at OpenAI, so only an openai-responses upstream can serve them.
 * Function, custom and namespace tools and a client-executed `tool_search` are not among
 * them: any upstream serves those as functions (tools.ts).
 */
export function builtInTools(body: ResponsesRequest | Obj): string[] {
  return new ToolMap({ tools: (body as ResponsesRequest).tools }).builtIns;
}

/** The hosted web search's tool types: Anthropic's server tool can run these too. */
const WEB_SEARCH_TOOLS = new Set([
  "web_search",
  "web_search_preview",
  "web_search_2025_08_26",
  "web_search_preview_2025_03_11",
]);

/**
 * The upstream protocols that can serve the request, when not every one can, and why: a
 * built-in tool (see `builtInTools`) or an input item the internal form would drop (items of
 * built-in tool calls, Codex's `compaction`, …) needs an openai-responses upstream; the hosted
 * web search alone, and its `web_search_call` items, an anthropic-messages one too (its
 * server-side search; the items' results are not in them, so they go). For the pipeline's
 * `upstreamsFor`.
 */
export function upstreamsFor(body: ResponsesRequest | Obj): UpstreamNeed | undefined {
  const responsesOnly = (what: string): UpstreamNeed => ({
    protocols: ["openai-responses"],
    reason: `${what} requires an upstream that speaks the responses format`,
  });
  if (compactionTriggered(body as Obj)) return COMPACTION_NEED;
  const tools = builtInTools(body);
  const other = tools.find((t) => !WEB_SEARCH_TOOLS.has(t));
  if (other !== undefined) return responsesOnly(`tool ${other}`);
  // A search without live web access (Codex's default) is one an upstream may go without, and
  // so are the past searches of a conversation that declares only such a search.
  const cached = cachedSearchOnly((body as ResponsesRequest).tools);
  let search = tools.length > 0 && !cached;
  const input = (body as ResponsesRequest).input;
  if (Array.isArray(input)) {
    for (const item of input) {
      const type = item.type ?? "message";
      const content = (item as Obj).content ?? (item as Obj).output;
      // An item of a type the gateway does not know may hold anything (`[null]`, strings):
      // only objects are parts; the item's type decides for the rest, below.
      const part = Array.isArray(content)
        ? (content as unknown[]).find((p): p is Obj => isObject(p) && !carriedPart(p))
        : undefined;
      if (part) {
        const by = part.type === "input_audio"
          ? ""
          : part.type === "input_image"
          ? "by file id"
          : typeof part.file_url === "string"
          ? "by URL"
          : typeof part.file_id === "string"
          ? "by file id"
          : "of this type";
        return responsesOnly(by ? `${part.type} ${by}` : String(part.type));
      }
      if (MAPPED_ITEMS.has(type)) continue;
      if (TOOL_SEARCH_ITEMS.has(type) && isClientCall(item as Obj)) continue;
      if (type === "web_search_call") search ||= !cached;
      else return responsesOnly(`input item type ${type}`);
    }
  }
  return search
    ? {
      protocols: ["openai-responses", "anthropic-messages"],
      reason: "tool web_search requires an upstream that runs web searches itself " +
        "(one that speaks the responses or the Anthropic messages format)",
      search: true,
    }
    : undefined;
}

/** Every hosted web search tool declared asks for no live web access (`external_web_access`). */
function cachedSearchOnly(tools: unknown): boolean {
  if (!Array.isArray(tools)) return false;
  const searches = (tools as Obj[]).filter((t) => WEB_SEARCH_TOOLS.has(t?.type as string));
  return searches.length > 0 && searches.every((t) => t.external_web_access === false);
}

/** The client's hosted web search as the internal form carries it, or undefined. */
function webSearchOf(tools: unknown): WebSearch | undefined {
  if (!Array.isArray(tools)) return undefined;
  const t = (tools as Obj[]).find((t) => WEB_SEARCH_TOOLS.has(t?.type as string));
  if (!t) return undefined;
  const out: WebSearch = { maxUses: DEFAULT_WEB_SEARCHES };
  if (cachedSearchOnly(tools)) out.optional = true;
  const domains = strings((t.filters as Obj | null | undefined)?.allowed_domains);
  if (domains) out.allowedDomains = domains;
  const where = approximateLocation(t.user_location);
  if (where) out.userLocation = where;
  const size = searchContextSize(t.search_context_size);
  if (size) out.contextSize = size;
  return out;
}

// ---- pass-through --------------------------------------------------------------------------

/**
 * The client's body for a same-protocol upstream: `model` replaced, everything else as sent,
 * with two edits that statelessness demands:
 * - `store: false` always. The spec says nothing is stored; `store: true` (the API's default)
 *   would keep the conversation at the provider under the gateway's account, where the client
 *   could never reach it again (`previous_response_id` is refused).
 * - `reasoning` items with an `id` but no `encrypted_content` point at reasoning stored by the
 *   provider; with `store: false` it answers 400 ("Items are not persisted when `store` is set
 *   to false"), so they are dropped — the model could not see that reasoning anyway. They come
 *   from clients that did not ask for `include: ["reasoning.encrypted_content"]`.
 * - `reasoning` items the gateway sealed (another vendor's signed thinking, from turns served
 *   by it) are dropped too: no responses upstream can read them, and OpenAI refuses an
 *   `encrypted_content` it cannot decrypt.
 */
export function passThroughRequest(body: ResponsesRequest | Obj, upstreamModel: string): Obj {
  const out: Obj = { ...body, model: upstreamModel, store: false };
  if (typeof out.user === "string") out.user = upstreamUser(out.user);
  const input = (body as ResponsesRequest).input;
  if (Array.isArray(input) && input.some(unsendableReasoning)) {
    // An item's id names the reasoning it came with: OpenAI refuses a function call's id
    // without it ("provided without its required 'reasoning' item"); without an id the item
    // is plain input.
    out.input = withoutReasoning(input, unsendableReasoning);
  }
  return out;
}

/**
 * What OpenAI's responses API takes of OpenRouter's `reasoning` (its `max_tokens`, `enabled`
 * and `exclude` have no counterpart there).
 */
const OPENAI_REASONING = ["effort", "summary", "generate_summary"];

/** An item whose `call_id` OpenAI's responses API would refuse as too long. */
const longCallId = (i: unknown): i is Obj & { call_id: string } =>
  isObject(i) && typeof i.call_id === "string" && openaiCallId(i.call_id) !== i.call_id;

/** OpenRouter's `format` of OpenAI's own encrypted reasoning. */
const OPENAI_REASONING_FORMAT = "openai-responses-v1";

/** A reasoning item's `format` that names another vendor's than OpenAI's. */
const otherThanOpenAI = (format: unknown) =>
  typeof format === "string" && format !== OPENAI_REASONING_FORMAT;

/**
 * A body for OpenAI's own responses API (not OpenRouter's): its dialect only, no reasoning item
 * of another vendor's (an OpenRouter answer's, by its `format`), which OpenAI cannot decrypt,
 * and no call id over its 64 characters.
 */
export function toOpenAIResponsesDialect(body: Obj): void {
  for (const k of OPENROUTER_EXTENSIONS) delete body[k];
  if (!takesVerbosity(body.model) && isObject(body.text) && "verbosity" in body.text) {
    const { verbosity: _, ...text } = body.text;
    body.text = text;
  }
  if (
    Array.isArray(body.input) &&
    body.input.some((i) => isObject(i) && ("format" in i || unnamedForeign(i) || longCallId(i)))
  ) {
    body.input = body.input.flatMap((i) => {
      if (unnamedForeign(i)) return [];
      // Another vendor's call id, as the client kept it: OpenAI refuses one over 64 characters.
      if (longCallId(i)) i = { ...i, call_id: openaiCallId(i.call_id) };
      if (!isObject(i) || !("format" in i)) return [i];
      // As toInternal reads it: a named format other than OpenAI's is another vendor's.
      if (i.type === "reasoning" && otherThanOpenAI(i.format)) return [];
      const { format: _, ...item } = i;
      return [item];
    });
  }
  const r = body.reasoning;
  if (isObject(r) && Object.keys(r).some((k) => !OPENAI_REASONING.includes(k))) {
    body.reasoning = Object.fromEntries(
      Object.entries(r).filter(([k]) => OPENAI_REASONING.includes(k)),
    );
  }
}

/**
 * A pass-through body for OpenRouter's responses API: no reasoning item of another vendor than
 * the model's. A client that switched models mid-conversation (Codex, from openai/gpt-5.x to
 * a Gemini) sends back the earlier model's items: OpenAI's encrypted reasoning (its own items
 * name no `format`; their content is a Fernet token) or an item OpenRouter gave with another
 * vendor's `format`. The model cannot read them, so leaving them out loses nothing; sent, they
 * risk the whole call: OpenRouter replays an item's encrypted content to the model's vendor as
 * its signature, and a vendor refuses one it did not issue (see `foreignFormat`).
 */
export function withoutForeignReasoning(body: Obj): void {
  const slug = body.model;
  if (typeof slug !== "string" || !Array.isArray(body.input)) return;
  const foreign = (i: unknown) => {
    if (!isObject(i) || i.type !== "reasoning") return false;
    const openai = typeof i.encrypted_content === "string" &&
      OPENAI_ENCRYPTED.test(i.encrypted_content);
    return foreignFormat(i.format ?? (openai ? OPENAI_REASONING_FORMAT : undefined), slug);
  };
  if (body.input.some(foreign)) body.input = body.input.filter((i) => !foreign(i));
}

/**
 * A reasoning item whose `encrypted_content` is not OpenAI's, and whose `format` does not say
 * whose it is: another vendor's reasoning from OpenRouter's responses API, kept by a client
 * that drops the fields it does not know (Codex keeps a reasoning item's id, summary, content
 * and encrypted_content only). No upstream can be told whose it is: OpenAI refuses it
 * (`invalid_encrypted_content`), and Anthropic, sent it as redacted thinking, refuses its data.
 */
function unnamedForeign(item: InputItem | Obj): boolean {
  const i = item as Obj;
  return i.type === "reasoning" && !(typeof i.format === "string" && i.format !== "") &&
    typeof i.encrypted_content === "string" && i.encrypted_content !== "" &&
    !OPENAI_ENCRYPTED.test(i.encrypted_content) && !isSealedReasoning(i.encrypted_content);
}

/**
 * For a second try after the upstream refused encrypted reasoning it cannot open (400
 * `invalid_encrypted_content`): OpenAI's opens only for the organisation it was made for, and
 * a session that moved between OpenAI's own API and OpenRouter (a failover, one model served
 * by both) or outlived the operator's key replays another's; every later turn of the session
 * carries it. The body without its reasoning items (the model goes without the earlier turns'
 * reasoning, as it would on another vendor), the other items without their ids: OpenAI's item
 * ids name the reasoning item they came with, and one sent without it is refused ("Item 'fc_…'
 * of type 'function_call' was provided without its required 'reasoning' item"). Compaction
 * items stay whole (they are the history itself). Undefined for another refusal, or a body
 * with no encrypted reasoning.
 */
export function withoutUnreadableReasoning(
  status: number,
  refusal: unknown,
  sent: Obj,
): Obj | undefined {
  if (status !== 400) return undefined;
  const text = typeof refusal === "string" ? refusal : JSON.stringify(refusal ?? null);
  if (!text.includes("invalid_encrypted_content")) return undefined;
  const input = sent.input;
  const encrypted = (i: unknown) =>
    isObject(i) && i.type === "reasoning" && typeof i.encrypted_content === "string";
  if (!Array.isArray(input) || !input.some(encrypted)) return undefined;
  return {
    ...sent,
    // Every id: the items came from the other account too.
    input: withoutReasoning(input, (i) => i.type === "reasoning", true),
  };
}

/**
 * Items whose id is what they are: a compaction (its encrypted content names it), a reference,
 * and the hosted tools' calls, which the API takes only with their ids.
 */
const KEEP_ID = new Set([
  "compaction",
  "compaction_summary",
  "item_reference",
  "web_search_call",
  "file_search_call",
  "computer_call",
  "code_interpreter_call",
  "image_generation_call",
  "local_shell_call",
  "mcp_call",
  "mcp_list_tools",
  "mcp_approval_request",
]);

/**
 * Input without the reasoning items `drop` picks, and the items that came after one (up to the
 * next reasoning or user turn; `everyId`: all) without their ids, bar those whose id is what
 * they are (`KEEP_ID`): OpenAI pairs an item's id with its reasoning item's, and refuses either
 * alone.
 */
function withoutReasoning(
  input: unknown[],
  drop: (i: InputItem) => boolean,
  everyId = false,
): unknown[] {
  const out: unknown[] = [];
  let orphaned = false;
  for (const i of input) {
    if (!isObject(i)) {
      out.push(i);
      continue;
    }
    if (i.type === "reasoning") {
      orphaned = drop(i as InputItem);
      if (!orphaned) out.push(i);
      continue;
    }
    if (i.role === "user") orphaned = false;
    if (!(orphaned || everyId) || !("id" in i) || KEEP_ID.has(i.type as string)) {
      out.push(i);
      continue;
    }
    const { id: _, ...rest } = i;
    out.push(rest);
  }
  return out;
}

function unsendableReasoning(item: InputItem): boolean {
  if (item.type !== "reasoning") return false;
  const r = item as ReasoningItem;
  if (isSealedReasoning(r.encrypted_content)) return true;
  return typeof r.id === "string" && r.id !== "" && !r.encrypted_content;
}

// ---- internal → upstream -------------------------------------------------------------------

/** The smallest `max_output_tokens` the Responses API accepts (it answers 400 below 16). */
export const MAX_OUTPUT_TOKENS_MIN = 16;

/**
 * A Responses body for an openai-responses upstream. Fields the format cannot express are
 * dropped: stop sequences, top_k, penalties, seed, cache-control marks, vendor signatures.
 */
export function fromInternal(req: TextRequest, upstreamModel: string): Obj {
  const body: Obj = { model: upstreamModel };
  const instructions = req.system.map((p) => p.text).join("\n\n");
  if (instructions !== "") body.instructions = instructions;
  body.input = messagesToItems(req.messages);
  if (req.tools?.length) body.tools = req.tools.map(toolFromInternal);
  if (req.webSearch) {
    // The hosted search (a Claude client's web_search server tool) as OpenAI's own.
    const search: Obj = { type: "web_search" };
    if (req.webSearch.allowedDomains) {
      search.filters = { allowed_domains: req.webSearch.allowedDomains };
    }
    if (req.webSearch.userLocation) {
      search.user_location = { type: "approximate", ...req.webSearch.userLocation };
    }
    if (req.webSearch.contextSize) search.search_context_size = req.webSearch.contextSize;
    body.tools = [...(body.tools as Obj[] | undefined ?? []), search];
    // No more searches than the hold covers (function tools do not count against this).
    body.max_tool_calls = req.webSearch.maxUses;
  }
  // Without tools OpenAI refuses a tool choice (as its chat API does): none is sent then.
  if (body.tools !== undefined) {
    const choice = choiceBesideSearch(req);
    if (choice) {
      body.tool_choice = choice.type === "tool"
        ? { type: "function", name: choice.name }
        : choice.type;
    }
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.maxTokens !== undefined) {
    body.max_output_tokens = Math.max(MAX_OUTPUT_TOKENS_MIN, req.maxTokens);
  }
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.responseFormat) body.text = { format: formatFromInternal(req.responseFormat) };
  if (req.verbosity !== undefined) {
    body.text = { ...(body.text as Obj | undefined), verbosity: req.verbosity };
  }
  if (req.promptCacheKey !== undefined) body.prompt_cache_key = req.promptCacheKey;
  const reasoning = reasoningFromInternal(req.reasoning);
  // OpenAI refuses its hosted search beside the least effort ("The following tools cannot be
  // used with reasoning.effort 'minimal': web_search"), which is what reasoning turned off
  // becomes on gpt-5 (Claude Code's WebSearch tool asks for no thinking): the next one up.
  if (req.webSearch && reasoning?.effort === "minimal") reasoning.effort = "low";
  if (reasoning) {
    body.reasoning = reasoning;
    // Stateless multi-turn: the next request can only replay reasoning it was given.
    if (reasoning.effort !== "none") body.include = ["reasoning.encrypted_content"];
  }
  // The pages each search found, for formats that list them (Anthropic's search results).
  if (req.webSearch) {
    body.include = [
      ...(body.include as string[] | undefined ?? []),
      "web_search_call.action.sources",
    ];
  }
  if (req.user) body.user = upstreamUser(req.user);
  body.stream = req.stream;
  body.store = false;
  return body;
}

function messagesToItems(messages: Message[]): Obj[] {
  const items: Obj[] = [];
  for (const m of messages) {
    let content: Obj[] = [];
    const flush = () => {
      if (content.length === 0) return;
      items.push({ type: "message", role: m.role, content });
      content = [];
    };
    for (const p of m.parts) {
      switch (p.type) {
        case "text":
          content.push(
            m.role === "assistant"
              ? { type: "output_text", text: p.text, annotations: [] }
              : { type: "input_text", text: p.text },
          );
          break;
        case "image":
          if (m.role === "user") content.push(inputFileOrImage(p));
          break;
        case "reasoning": {
          const encrypted = forOpenAI(p.redacted);
          if (encrypted) {
            flush();
            items.push({
              type: "reasoning",
              summary: p.text === "" ? [] : [{ type: "summary_text", text: p.text }],
              encrypted_content: encrypted,
            });
          }
          break;
        }
        case "tool_call":
          flush();
          items.push({
            type: "function_call",
            call_id: p.id,
            name: p.name,
            arguments: p.arguments,
          });
          break;
        case "tool_result":
          flush();
          items.push({
            type: "function_call_output",
            call_id: p.callId,
            output: toolOutput(resultContent(p)),
          });
          break;
        default: {
          const never: never = p;
          throw new Error(`unknown part ${JSON.stringify(never)}`);
        }
      }
    }
    flush();
  }
  return items;
}

/** A tool result: plain text as a string (what every model reads best), else input parts. */
function toolOutput(content: (TextPart | ImagePart)[]): string | Obj[] {
  if (content.every((c) => c.type === "text")) return content.map((c) => c.text).join("\n");
  return content.map((c) =>
    c.type === "text" ? { type: "input_text", text: c.text } : inputFileOrImage(c)
  );
}

/** An image part as a responses input: a PDF as an `input_file`, anything else an image. */
function inputFileOrImage(p: ImagePart): Obj {
  return isPdfDataUrl(p.url)
    ? { type: "input_file", filename: p.filename || "document.pdf", file_data: p.url }
    : { type: "input_image", image_url: p.url, detail: p.detail ?? "auto" };
}

/**
 * Responses function tools are strict by default, which refuses the loose schemas chat and
 * messages clients send (https://platform.openai.com/docs/guides/function-calling#strict-mode),
 * so `strict` is false unless the client asked for it.
 */
function toolFromInternal(t: Tool): Obj {
  const out: Obj = { type: "function", name: t.name };
  if (t.description !== undefined) out.description = t.description;
  out.parameters = t.parameters;
  out.strict = t.strict ?? false;
  return out;
}

function formatFromInternal(f: ResponseFormat): Obj {
  if (f.type !== "json_schema") return { type: f.type };
  const out: Obj = { type: "json_schema", name: f.name, schema: f.schema };
  if (f.strict !== undefined) out.strict = f.strict;
  return out;
}

/** An Anthropic-style thinking budget → an OpenAI effort, by rough bands. */
function budgetToEffort(budget: number): NonNullable<ReasoningSettings["effort"]> {
  if (budget <= 0) return "minimal";
  if (budget <= 2048) return "low";
  if (budget <= 16384) return "medium";
  return "high";
}

function reasoningFromInternal(
  r: ReasoningSettings | undefined,
): { effort?: string; summary?: string } | undefined {
  if (!r) return undefined;
  if (r.enabled === false && r.effort === undefined) return undefined;
  const out: { effort?: string; summary?: string } = {};
  const effort = r.effort ??
    (r.budgetTokens !== undefined ? budgetToEffort(r.budgetTokens) : undefined);
  if (effort) out.effort = effort;
  // A budget or `enabled` is how messages and chat clients ask to see the reasoning.
  const summary = r.summary ?? (r.budgetTokens !== undefined || r.enabled ? "auto" : undefined);
  if (summary && effort !== "none") out.summary = summary;
  return Object.keys(out).length > 0 ? out : undefined;
}

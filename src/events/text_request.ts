/**
 * The internal form of a text-generation request. Each client format maps its body to this
 * (`toInternal`) and each upstream protocol maps it back to a wire body (`fromInternal`).
 * Fields a format cannot express are dropped by that format's `fromInternal`, never invented.
 */
import { textOfBase64 } from "../lib/base64.ts";
import { badRequest } from "../http/gateway_error.ts";

export interface TextRequest {
  /** Catalogue slug after alias resolution. */
  model: string;
  system: TextPart[];
  messages: Message[];
  tools?: Tool[];
  /** A web search the upstream runs itself; only upstreams with one are offered the call. */
  webSearch?: WebSearch;
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  seed?: number;
  stop?: string[];
  responseFormat?: ResponseFormat;
  reasoning?: ReasoningSettings;
  stream: boolean;
  /** End-user id for the upstream's abuse monitoring (chat `user`, messages `metadata.user_id`). */
  user?: string;
  /**
   * OpenAI's prompt-cache routing key (`prompt_cache_key` in chat and responses): calls that
   * share it reach the same cache, and cached input is billed at a fraction.
   */
  promptCacheKey?: string;
  /** OpenAI's answer-length hint (chat `verbosity`, responses `text.verbosity`). */
  verbosity?: string;
}

export interface CacheControl {
  type: string;
  ttl?: string;
}

export interface TextPart {
  type: "text";
  text: string;
  cacheControl?: CacheControl;
  /**
   * The text names this tool (Anthropic's `tool_reference`, a tool search's answer): where the
   * upstream is sent the tool under a fitted name (tool_names.ts), the text names that one.
   */
  toolRef?: string;
}

/**
 * An image, or a PDF document as a `data:application/pdf;base64,` URL (see `isPdfDataUrl`):
 * both are files the model reads, carried by URL; each format writes a PDF as its own
 * document or file part.
 */
export interface ImagePart {
  type: "image";
  /** An http(s) URL or a `data:` URL. */
  url: string;
  /**
   * OpenAI's image resolution (`low`, `high`, `auto`): it sets what the image costs in tokens
   * (85 at `low`), so it travels wherever an upstream takes it.
   */
  detail?: string;
  /** A PDF's file name (the model reads it; Anthropic's document `title`). */
  filename?: string;
  cacheControl?: CacheControl;
}

export interface ReasoningPart {
  type: "reasoning";
  text: string;
  /** Vendor signature: replayed to the same vendor, dropped for another. */
  signature?: string;
  /** Opaque encrypted reasoning (redacted_thinking data, encrypted_content). */
  redacted?: string;
}

export interface ToolCallPart {
  type: "tool_call";
  id: string;
  name: string;
  /** The arguments as a JSON text, exactly as the model produced them. */
  arguments: string;
  cacheControl?: CacheControl;
}

export interface ToolResultPart {
  type: "tool_result";
  callId: string;
  content: (TextPart | ImagePart)[];
  isError?: boolean;
  cacheControl?: CacheControl;
}

export type Part = TextPart | ImagePart | ReasoningPart | ToolCallPart | ToolResultPart;

/**
 * Tool results travel in `user` messages (the messages format's model); the chat codec turns
 * chat's `tool` role messages into them and back.
 */
export interface Message {
  role: "user" | "assistant";
  parts: Part[];
}

export interface Tool {
  name: string;
  description?: string;
  /** JSON schema of the arguments. */
  parameters: Record<string, unknown>;
  strict?: boolean;
  cacheControl?: CacheControl;
}

/** A hosted web search (responses' `web_search` tool, Anthropic's `web_search_*`). */
export interface WebSearch {
  /** The most searches the upstream may run: the hold is sized for as many. */
  maxUses: number;
  allowedDomains?: string[];
  /** Approximate location to localise results (two-letter country code, IANA timezone). */
  userLocation?: { city?: string; region?: string; country?: string; timezone?: string };
  /** How much of the results the model reads (OpenAI's `search_context_size`; only it has one). */
  contextSize?: SearchContextSize;
  /**
   * The client allows a search but asks for no live web access (Codex's default "cached"
   * search, `external_web_access: false`): only OpenAI's own responses API runs that (the body
   * passed through as sent); every other upstream leaves it out, Anthropic's live search and
   * OpenRouter's web plugin (a search on every call) alike, and it binds the call to no upstream.
   */
  optional?: boolean;
}

export type SearchContextSize = "low" | "medium" | "high";

/** OpenAI's `search_context_size` as the internal form keeps it: one of its three values. */
export function searchContextSize(v: unknown): SearchContextSize | undefined {
  return v === "low" || v === "medium" || v === "high" ? v : undefined;
}

/**
 * A search's approximate location from any format's object of `city`, `region`, `country`,
 * `timezone` (non-empty strings kept); undefined when it names none.
 */
export function approximateLocation(loc: unknown): WebSearch["userLocation"] {
  if (typeof loc !== "object" || loc === null) return undefined;
  const from = loc as Record<string, unknown>;
  const where: NonNullable<WebSearch["userLocation"]> = {};
  for (const k of ["city", "region", "country", "timezone"] as const) {
    if (typeof from[k] === "string" && from[k] !== "") where[k] = from[k] as string;
  }
  return Object.keys(where).length > 0 ? where : undefined;
}

/**
 * Searches a request may run when it does not say how many: what the hold covers, and the cap
 * sent to an upstream that takes one.
 */
export const DEFAULT_WEB_SEARCHES = 10;

export type ToolChoice =
  | { type: "auto" }
  | { type: "none" }
  | { type: "required" }
  | { type: "tool"; name: string };

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
    type: "json_schema";
    name: string;
    schema: Record<string, unknown>;
    strict?: boolean;
    /**
     * The model holds its answer to a schema itself (the catalogue's `structured_outputs`):
     * an upstream whose API asks for it separately (Anthropic's) is sent the schema natively
     * rather than an instruction.
     */
    constrained?: boolean;
  };

export interface ReasoningSettings {
  /** OpenAI-style effort; mapped to a budget for vendors that take one. */
  effort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh";
  /** Anthropic-style thinking budget; mapped to an effort for vendors that take one. */
  budgetTokens?: number;
  /** Whether reasoning text should be returned (summary) where the vendor supports it. */
  summary?: "auto" | "concise" | "detailed";
  enabled?: boolean;
}

/** A PDF carried inline, as the image parts' `url` may hold one. */
export function isPdfDataUrl(url: string): boolean {
  return url.startsWith("data:application/pdf");
}

/** A data URL's media type and parameters (the part before the comma). */
const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+)(;[^,]*)?,/i;
const TEXT_MEDIA = /^(text\/|application\/(json|xml|yaml|x-yaml|x-ndjson|csv)$)/i;

/** A text file given inline (`data:text/plain;base64,…`, CSV, JSON, …): its type alone says. */
export function isTextDataUrl(url: string): boolean {
  const m = DATA_URL.exec(url.slice(0, 200));
  return m !== null && TEXT_MEDIA.test(m[1]);
}

/**
 * An inline text file (`isTextDataUrl`) as any model reads it: its name, then its text.
 * Text that is not UTF-8 is the client's 400, naming the file.
 */
export function textOfDataUrl(dataUrl: string, filename: unknown): string {
  const m = DATA_URL.exec(dataUrl.slice(0, 200))!;
  const body = dataUrl.slice(m[0].length);
  const name = typeof filename === "string" && filename !== "" ? filename : "file";
  try {
    const text = /;base64/i.test(m[2] ?? "") ? textOfBase64(body) : decodeURIComponent(body);
    return `${name}:\n${text}`;
  } catch {
    throw badRequest(`file ${JSON.stringify(name)} (${m[1]}) is not UTF-8 text`);
  }
}

/** The client set a cache breakpoint of its own somewhere in the request. */
export function hasCacheMarks(req: TextRequest): boolean {
  const marked = (x: { cacheControl?: unknown }) => x.cacheControl !== undefined;
  return req.system.some(marked) || (req.tools ?? []).some(marked) ||
    req.messages.some((m) =>
      m.parts.some((p) =>
        ("cacheControl" in p && marked(p)) ||
        (p.type === "tool_result" && p.content.some(marked))
      )
    );
}

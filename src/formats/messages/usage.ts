/**
 * Usage in the messages format and back. Anthropic's `input_tokens` counts only the input NOT
 * covered by the prompt cache; cache reads and writes are reported beside it
 * (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance).
 * The internal `input` is all prompt tokens (events/usage.ts), so decoding adds the cache
 * figures in and encoding takes them out again: the same request costs the same whichever
 * format reported it.
 */
import type { Usage } from "../../events/usage.ts";
import { num } from "../json.ts";

/** The usage object as the messages format writes it (numbers we read; the rest ignored). */
export interface MessagesUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** How the cache writes split by lifetime; 1-hour writes cost more than 5-minute ones. */
  cache_creation?: { ephemeral_1h_input_tokens?: number | null } | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
  /** Server tools run by the upstream; web searches are billed per search. */
  server_tool_use?: { web_search_requests?: number | null } | null;
  /**
   * Server-side compaction runs extra sampling steps inside one request. The top-level
   * figures then cover only the last step; `iterations` lists every step, all billed
   * (https://docs.anthropic.com/en/docs/build-with-claude/context-management).
   */
  iterations?: MessagesUsage[] | null;
}

/** The raw figures a stream reports, merged across `message_start` and `message_delta`. */
export interface RawMessagesUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  thinking?: number;
  webSearches?: number;
}

/** Reads a usage object into raw (uncached-input) figures; unreported fields stay undefined. */
export function readMessagesUsage(u: MessagesUsage): RawMessagesUsage {
  const raw: RawMessagesUsage = Array.isArray(u.iterations) && u.iterations.length > 0
    ? sumIterations(u.iterations)
    : readTokens(u);
  // A count for the whole request, beside (not inside) the per-step token figures.
  const searches = num(u.server_tool_use?.web_search_requests);
  if (searches) raw.webSearches = searches;
  return raw;
}

function readTokens(u: MessagesUsage): RawMessagesUsage {
  const raw: RawMessagesUsage = {};
  const input = num(u.input_tokens);
  if (input !== undefined) raw.input = input;
  const output = num(u.output_tokens);
  if (output !== undefined) raw.output = output;
  const cacheRead = num(u.cache_read_input_tokens);
  if (cacheRead !== undefined) raw.cacheRead = cacheRead;
  const cacheWrite = num(u.cache_creation_input_tokens);
  if (cacheWrite !== undefined) raw.cacheWrite = cacheWrite;
  const cacheWrite1h = num(u.cache_creation?.ephemeral_1h_input_tokens);
  // Kept only when some were written: zero bills as nothing, and reports stay as they were.
  if (cacheWrite1h) raw.cacheWrite1h = cacheWrite1h;
  const thinking = num(u.output_tokens_details?.thinking_tokens);
  if (thinking !== undefined) raw.thinking = thinking;
  return raw;
}

function sumIterations(iterations: MessagesUsage[]): RawMessagesUsage {
  const sum: RawMessagesUsage = {};
  for (const it of iterations) {
    if (typeof it !== "object" || it === null) continue;
    const r = readTokens(it);
    for (const k of Object.keys(r) as (keyof RawMessagesUsage)[]) {
      sum[k] = (sum[k] ?? 0) + r[k]!;
    }
  }
  return sum;
}

/** Later reported figures win (a `message_delta` refines its `message_start`). */
export function mergeRawUsage(a: RawMessagesUsage, b: RawMessagesUsage): RawMessagesUsage {
  return { ...a, ...b };
}

/** Raw figures to internal usage: `input` gets the cache reads and writes folded in. */
export function rawToUsage(raw: RawMessagesUsage): Usage {
  const usage: Usage = {};
  if (raw.input !== undefined) {
    usage.input = raw.input + (raw.cacheRead ?? 0) + (raw.cacheWrite ?? 0);
  }
  if (raw.output !== undefined) usage.output = raw.output;
  if (raw.cacheRead !== undefined) usage.cacheRead = raw.cacheRead;
  if (raw.cacheWrite !== undefined) usage.cacheWrite = raw.cacheWrite;
  if (raw.cacheWrite1h !== undefined) usage.cacheWrite1h = raw.cacheWrite1h;
  if (raw.thinking !== undefined) usage.reasoning = raw.thinking;
  if (raw.webSearches !== undefined) usage.webSearches = raw.webSearches;
  return usage;
}

/** A messages usage object to internal usage. */
export function fromMessagesUsage(u: MessagesUsage): Usage {
  return rawToUsage(readMessagesUsage(u));
}

/** The four figures every messages usage object carries; unknown figures are written as 0. */
export interface MessagesUsageOut {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /**
   * The thinking part of `output_tokens`, as Anthropic reports it; only when the upstream told
   * it (another vendor's reasoning tokens), so a client never reads a made-up 0.
   */
  output_tokens_details?: { thinking_tokens: number };
  /** Only when the upstream ran web searches; both counts, as Anthropic sends them. */
  server_tool_use?: { web_search_requests: number; web_fetch_requests: number };
}

/** Internal usage to the messages format: `input_tokens` is the uncached part only. */
export function toMessagesUsage(u: Usage): MessagesUsageOut {
  const cacheRead = u.cacheRead ?? 0;
  const cacheWrite = u.cacheWrite ?? 0;
  const out: MessagesUsageOut = {
    input_tokens: Math.max(0, (u.input ?? 0) - cacheRead - cacheWrite),
    output_tokens: u.output ?? 0,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
  };
  if (u.reasoning !== undefined) out.output_tokens_details = { thinking_tokens: u.reasoning };
  // The SDKs type `web_fetch_requests` as a number too; no other vendor fetches pages for it.
  if (u.webSearches) {
    out.server_tool_use = { web_search_requests: u.webSearches, web_fetch_requests: 0 };
  }
  return out;
}

import type { GatewayError } from "../http/gateway_error.ts";
import type { Usage } from "./usage.ts";

/**
 * The internal event vocabulary. Every upstream decoder writes it; the meter and every client
 * encoder read it. Text, reasoning and tool calls have an explicit start / delta / end
 * lifecycle so that encoders with blocks (messages) or items (responses) translate instead of
 * guessing. Decoders of formats without boundaries (chat) infer them once, in the decoder.
 *
 * Ordering guarantees a decoder must keep:
 * - `response_start` first (at most once);
 * - a `*_start` before its deltas, its `*_end` after them; text and reasoning blocks do not
 *   interleave with each other, tool calls may (chat streams parallel calls by index);
 * - `usage` may come more than once (later reports refine earlier ones, see `mergeUsage`);
 * - `finish` at most once, after all blocks are ended;
 * - `error` ends the stream: nothing but `usage` follows it.
 */
export type Event =
  | { type: "response_start"; id?: string; model?: string }
  /**
   * `refusal`: the block is the model's refusal (chat's `refusal`, a responses `refusal`
   * part), which those formats' clients read apart from the answer; others show it as text.
   */
  | { type: "text_start"; refusal?: true }
  | { type: "text_delta"; delta: string }
  /**
   * A web page the open text block cites (Anthropic's `web_search_result_location`, a
   * `url_citation` annotation of chat or responses): `start` and `end` delimit the cited text
   * within the block, in JavaScript string offsets. It follows the cited text, before
   * `text_end`. Formats with annotations (chat, responses) show it; the messages format's
   * web citations need an `encrypted_index` only Anthropic makes, so its clients do not.
   */
  | { type: "citation"; url: string; title?: string; start: number; end: number }
  | { type: "text_end" }
  | { type: "reasoning_start" }
  | { type: "reasoning_delta"; delta: string }
  /** A vendor signature over the reasoning block; only meaningful to the same vendor. */
  | { type: "reasoning_signature"; signature: string }
  /** Reasoning the vendor returned encrypted (Anthropic `redacted_thinking`, OpenAI `encrypted_content`). */
  | { type: "reasoning_redacted"; data: string }
  | { type: "reasoning_end" }
  | { type: "tool_call_start"; index: number; id: string; name: string }
  | { type: "tool_call_delta"; index: number; json: string }
  | { type: "tool_call_end"; index: number }
  /**
   * A web search the upstream ran itself (a hosted tool): shown to clients whose format has
   * an item for it; billed through `usage.webSearches`, which the meter counts from these
   * events only for an answer cut before its last usage (meter.ts).
   */
  | {
    type: "web_search";
    id: string;
    query?: string;
    /** The pages it found, where the upstream lists them (OpenAI's `action.sources`). */
    sources?: { url: string; title?: string }[];
  }
  /**
   * What a choice other than the first generated (chat's `n`): its text, reasoning or tool
   * arguments. Clients get those choices from the upstream's own body (`n` travels only to
   * chat upstreams, passed through), so no encoder shows this; the meter counts it, as the
   * output of every choice is billed. It may follow `finish`, which is the first choice's.
   */
  | { type: "other_choice_delta"; delta: string }
  | { type: "usage"; usage: Usage }
  | { type: "finish"; reason: FinishReason; stopSequence?: string | null }
  | { type: "error"; error: GatewayError }
  /** Added by the meter after the last upstream event: what was debited. */
  | { type: "cost"; cost: CostReport };

/**
 * Why generation stopped. `stop_sequence` is kept apart from `stop` because the messages
 * format distinguishes them; chat folds both into `stop`.
 */
export type FinishReason =
  | "stop"
  | "stop_sequence"
  | "length"
  | "tool_calls"
  | "content_filter"
  | "error";

/** The cost figures every response carries: `cost` in roubles, `cost_details` itemised. */
export interface CostReport {
  /** Roubles debited, markup included, as a JSON number with at most 9 decimals. */
  cost: number;
  /** Roubles before markup by part: upstream_inference_input_cost, …_output_cost, … */
  details: Record<string, number>;
  /** The usage the cost was computed from, after fall-backs (counted tokens). */
  usage: Usage;
}

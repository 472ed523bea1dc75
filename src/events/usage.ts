/**
 * Token usage as reported by an upstream (or counted by the gateway).
 *
 * Conventions, the same for every format:
 * - `input` is ALL prompt tokens, cache reads and cache writes included (chat's
 *   `prompt_tokens`). The messages format reports uncached input only; its decoder adds the
 *   cache figures back so that cost comes out the same whichever way usage was reported.
 * - `output` is all generated tokens, reasoning included; `reasoning` is the part of it spent
 *   on reasoning.
 * - A field that was not reported is `undefined` — unknown, never zero.
 * - `costUsd` is the upstream's own reported cost (OpenRouter's `usage.cost`); it wins over
 *   the price table when present.
 */
export interface Usage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  /**
   * The part of `cacheWrite` written with a one-hour lifetime (Anthropic's
   * `cache_creation.ephemeral_1h_input_tokens`), billed at the dearer 1-hour price.
   */
  cacheWrite1h?: number;
  reasoning?: number;
  /**
   * The parts of `input` and `output` that were audio (OpenAI's audio models:
   * `prompt_tokens_details.audio_tokens`, `completion_tokens_details.audio_tokens`), billed at
   * the catalogue's `audio` and `audio_output` prices, several times the text ones.
   */
  audioInput?: number;
  audioOutput?: number;
  /**
   * The part of `output` that was images, from an image model answering through chat
   * (OpenRouter's `completion_tokens_details.image_tokens`), billed at the catalogue's
   * `image_output` price (Gemini's image models: 20× their text output).
   */
  imageOutput?: number;
  /**
   * Web searches the upstream ran for this call (Anthropic's
   * `server_tool_use.web_search_requests`, responses' `web_search_call` items), billed per
   * search at the catalogue's `web_search` price.
   */
  webSearches?: number;
  costUsd?: string;
}

/** Merges a later usage report into an earlier one: later known fields win. */
export function mergeUsage(a: Usage, b: Usage): Usage {
  const out: Usage = { ...a };
  for (const k of Object.keys(b) as (keyof Usage)[]) {
    const v = b[k];
    if (v !== undefined && v !== null) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

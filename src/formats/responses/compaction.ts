import type { UpstreamNeed } from "../text_format.ts";

const CODEX_ADVICE =
  'With Codex, use a custom model provider (model_providers, wire_api = "responses"), ' +
  "with which Codex compacts by asking the model for a summary";

/** The input asks for server-side compaction (Codex's `compaction_trigger` item). */
export function compactionTriggered(body: Record<string, unknown>): boolean {
  return Array.isArray(body.input) &&
    body.input.some((i) =>
      typeof i === "object" && i !== null &&
      (i as { type?: unknown }).type === "compaction_trigger"
    );
}

/**
 * Codex's server-side compaction (its built-in OpenAI provider, or a provider declaring
 * `remote_compaction = "v2"`) ends the input with a `compaction_trigger` item and accepts only
 * a `compaction` output item back, which OpenAI's own responses API makes, for OpenAI's models
 * alone. Any other upstream (an aggregator, which serves `openai/` slugs OpenAI does not and
 * takes over where OpenAI has no key or has failed, or a transcoded one) answers in text,
 * billed, and Codex fails the turn and pays for the same history again on the next. Routed so,
 * a request no such upstream serves is refused before any upstream is paid.
 */
export const COMPACTION_NEED: UpstreamNeed = {
  protocols: ["openai-responses"],
  ownApi: true,
  reason: "input item compaction_trigger asks for OpenAI's server-side compaction, which only " +
    "OpenAI's own responses API runs, for OpenAI's models, and no such upstream serves this " +
    "model. " + CODEX_ADVICE,
};

import type { CatalogueModel } from "../../catalogue/catalogue.ts";
import { badRequest } from "../../http/gateway_error.ts";
import type { UpstreamNeed } from "../text_format.ts";

/**
 * Codex's server-side compaction (its built-in OpenAI provider, or a provider declaring
 * `remote_compaction = "v2"`) ends the input with a `compaction_trigger` item and accepts only
 * a `compaction` output item back, which OpenAI's responses API makes for OpenAI's models
 * alone: any other model (through OpenRouter, which drops what it cannot translate, or
 * transcoded) answers in text, Codex fails the turn, and the next turn pays for the same
 * history again. Refused before any upstream is paid, saying what works instead.
 */
export function checkCompaction(body: Record<string, unknown>, model: CatalogueModel): void {
  if (model.id.startsWith("openai/") || !compactionTriggered(body)) return;
  throw badRequest(
    `input item compaction_trigger asks for OpenAI's server-side compaction, which only OpenAI's models run; ${model.id} cannot. ` +
      CODEX_ADVICE,
  );
}

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
 * An OpenAI model's compaction needs OpenAI's own responses API: an aggregator's (OpenRouter
 * serves `openai/` slugs OpenAI does not, and every one where OpenAI has no key or has
 * failed) answers the trigger in text, billed, and Codex fails the turn all the same.
 */
export const COMPACTION_NEED: UpstreamNeed = {
  protocols: ["openai-responses"],
  ownApi: true,
  reason: "input item compaction_trigger asks for OpenAI's server-side compaction, which only " +
    "OpenAI's own responses API runs, and no such upstream serves this model. " + CODEX_ADVICE,
};

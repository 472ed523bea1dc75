import type { CatalogueModel } from "../../catalogue/catalogue.ts";
import { badRequest } from "../../http/gateway_error.ts";

/**
 * Codex's server-side compaction (its built-in OpenAI provider, or a provider declaring
 * `remote_compaction = "v2"`) ends the input with a `compaction_trigger` item and accepts only
 * a `compaction` output item back, which OpenAI's responses API makes for OpenAI's models
 * alone: any other model (through OpenRouter, which drops what it cannot translate, or
 * transcoded) answers in text, Codex fails the turn, and the next turn pays for the same
 * history again. Refused before any upstream is paid, saying what works instead.
 */
export function checkCompaction(body: Record<string, unknown>, model: CatalogueModel): void {
  if (model.id.startsWith("openai/") || !Array.isArray(body.input)) return;
  const trigger = body.input.some((i) =>
    typeof i === "object" && i !== null && (i as { type?: unknown }).type === "compaction_trigger"
  );
  if (!trigger) return;
  throw badRequest(
    `input item compaction_trigger asks for OpenAI's server-side compaction, which only OpenAI's models run; ${model.id} cannot. ` +
      'With Codex, use a custom model provider (model_providers, wire_api = "responses"), ' +
      "with which Codex compacts by asking the model for a summary",
  );
}

/**
 * OpenRouter's model fallbacks on chat completions: `models: [...]` names the models to try,
 * in order, when the one before fails (https://openrouter.ai/docs/guides/routing/model-fallbacks).
 * The gateway serves them itself: the chain is `model` (or the list's first, without one) and
 * then the list, each model's providers in turn; a model moves on where a provider would fail
 * over (connection, timeout, 429, 5xx before the first byte) or where the prompt overflowed its
 * context window, never on another refusal of the request (400), and the answer and its debit
 * are the model's that served.
 */
import { badRequest } from "../http/gateway_error.ts";

/** OpenRouter answers 400 "'models' array must have 3 items or fewer" past this. */
export const FALLBACK_MODELS_MAX = 3;

/**
 * The slugs a body's `models` names, in order (empty without it). `route: "fallback"`, the only
 * route OpenRouter knows, asks for what `models` already does.
 */
export function listedModels(body: Record<string, unknown>): string[] {
  const models = body.models;
  if (models == null) return [];
  if (!Array.isArray(models) || models.some((m) => typeof m !== "string" || m === "")) {
    throw badRequest("models must be an array of model slugs (the fallbacks, tried in order)");
  }
  if (models.length > FALLBACK_MODELS_MAX) {
    throw badRequest(`'models' array must have ${FALLBACK_MODELS_MAX} items or fewer`);
  }
  return models as string[];
}

/** The chain of slugs to try: the request's model first, then the listed ones, each once. */
export function modelChain(body: Record<string, unknown>, listed: string[]): string[] {
  const first = typeof body.model === "string" && body.model !== "" ? body.model : listed[0];
  return [...new Set([first, ...listed])];
}

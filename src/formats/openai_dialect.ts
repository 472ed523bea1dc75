/**
 * What OpenAI's own APIs (chat and responses) refuse that other upstreams take: OpenRouter's
 * request extensions, and a verbosity its older models do not have.
 */

/**
 * OpenRouter's extensions of a request, which OpenAI answers 400 "Unknown parameter" to:
 * clients of a gateway that speaks OpenRouter's dialect send them to any model. (`reasoning`,
 * also OpenRouter's on chat, is translated there rather than dropped.)
 */
export const OPENROUTER_EXTENSIONS = [
  "include_reasoning",
  "usage",
  "transforms",
  "models",
  "route",
  "provider",
  "plugins",
  "top_k",
  "top_a",
  "min_p",
  "repetition_penalty",
  "cache_control",
  // A capability OpenRouter lists for models, which some of its clients also send as a flag.
  "structured_outputs",
];

/**
 * OpenAI's `verbosity` (chat) and `text.verbosity` (responses) other than its default `medium`
 * are taken by GPT-5 and later only: GPT-4 models and the o-series answer 400 ("'verbosity'
 * does not support 'low' with this model. Supported values are: 'medium'"), and so do the GPT-5
 * codex models up to 5.2 ("'low' is not supported with the 'gpt-5.2-codex' model"). Codex sends
 * `low` on every call to a model its catalogue says takes it, whatever the model. Named by the
 * families known to refuse, so a newer model keeps the setting.
 */
const MEDIUM_ONLY = /^(?:gpt-4|gpt-3|o\d|codex-|gpt-5(?:\.[12])?-codex)/;

/** Whether OpenAI model `upstreamModel` takes a verbosity other than `medium`. */
export function takesVerbosity(upstreamModel: unknown): boolean {
  return typeof upstreamModel !== "string" || !MEDIUM_ONLY.test(upstreamModel);
}

/**
 * OpenAI's `verbosity` (chat) and `text.verbosity` (responses) other than its default `medium`
 * are taken by GPT-5 and later only: GPT-4 models and the o-series answer 400 ("'verbosity'
 * does not support 'low' with this model. Supported values are: 'medium'"). Codex sends `low`
 * on every call, whatever the model. Named by the families known to refuse, so a newer model
 * keeps the setting.
 */
const MEDIUM_ONLY = /^(?:gpt-4|gpt-3|o\d)/;

/** Whether OpenAI model `upstreamModel` takes a verbosity other than `medium`. */
export function takesVerbosity(upstreamModel: unknown): boolean {
  return typeof upstreamModel !== "string" || !MEDIUM_ONLY.test(upstreamModel);
}

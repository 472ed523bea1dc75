/**
 * Efforts past `xhigh` that clients name for OpenAI's newest models: the `openai` SDK types
 * `max` (chat's `reasoning_effort`, responses' `reasoning.effort`), the Codex CLI offers `max`
 * and `ultra`. No model of the catalogue takes them, so a client that keeps such a setting
 * would get a 400 on every model. They ask for the most thought, which is `xhigh` here, then
 * moved to the nearest effort each model takes, as Claude Code's `max`.
 */
const ABOVE_XHIGH = new Set(["max", "ultra"]);

type Obj = Record<string, unknown>;

/** `holder[field].effort` (a reasoning object) past xhigh becomes xhigh, in a new object. */
export function adoptAboveXhighIn(holder: Obj, field: string): void {
  const r = holder[field];
  if (r !== null && typeof r === "object" && ABOVE_XHIGH.has((r as Obj).effort as string)) {
    holder[field] = { ...r, effort: "xhigh" };
  }
}

/** `holder[field]` (a bare effort, chat's `reasoning_effort`) past xhigh becomes xhigh. */
export function adoptAboveXhighAt(holder: Obj, field: string): void {
  if (ABOVE_XHIGH.has(holder[field] as string)) holder[field] = "xhigh";
}

/**
 * Reasoning efforts a model takes. OpenAI's models each take a different set — o-series and
 * the codex models low–high, gpt-5 `minimal` too, gpt-5.1 `none` but not `minimal`, gpt-5.2
 * and later `xhigh` — and answer 400 to any other ("Unsupported value: 'xhigh'"). A client of
 * another format names efforts of its own vendor (Claude Code's `max`), so a transcoded call
 * is sent the nearest effort the model takes. The provider lists the sets
 * (`reasoningEfforts` in providers.json); a model none of them names takes any.
 */
import type { ReasoningSettings, TextRequest } from "../events/text_request.ts";
import { globMatch } from "./provider.ts";

type Effort = NonNullable<ReasoningSettings["effort"]>;

export interface EffortSet {
  /** Slug patterns (`*` matches anything); the first set that names a slug applies. */
  models: string[];
  efforts: Effort[];
}

const RANK: Effort[] = ["none", "minimal", "low", "medium", "high", "xhigh"];

/**
 * `req` for a model that cannot stop reasoning (the catalogue's `reasoning.mandatory`), on an
 * aggregator that refuses reasoning turned off there (OpenRouter's 400 to `enabled: false` and
 * to `effort: "none"`): reasoning off asks for the least effort the model takes instead.
 */
export function withReasoningKept(
  req: TextRequest,
  mandatory: { efforts?: string[] } | undefined,
): TextRequest {
  const r = req.reasoning;
  if (!mandatory || !r || (r.enabled !== false && r.effort !== "none")) return req;
  return { ...req, reasoning: { effort: leastEffort(mandatory.efforts) } };
}

/**
 * The same for a pass-through body (chat's `reasoning` object or `reasoning_effort`, responses'
 * `reasoning.effort`), in place: a client that turns reasoning off there would get the
 * aggregator's 400.
 */
export function keepBodyReasoning(
  body: Record<string, unknown>,
  mandatory: { efforts?: string[] } | undefined,
): void {
  if (!mandatory) return;
  const least = leastEffort(mandatory.efforts);
  if (body.reasoning_effort === "none") body.reasoning_effort = least;
  const r = body.reasoning as Record<string, unknown> | null | undefined;
  if (r !== null && typeof r === "object" && (r.enabled === false || r.effort === "none")) {
    const { enabled: _off, ...rest } = r;
    body.reasoning = { ...rest, effort: least };
  }
}

/** The least of `efforts` this module knows (`low` when none is listed). */
function leastEffort(efforts: readonly string[] = []): Effort {
  const known = RANK.filter((e) => e !== "none" && efforts.includes(e));
  return known[0] ?? "low";
}

/** The effort nearest `effort` among `allowed` (on a tie, the higher: asked thought stays). */
export function nearestEffort(effort: Effort, allowed: readonly Effort[]): Effort {
  if (allowed.length === 0 || allowed.includes(effort)) return effort;
  const at = RANK.indexOf(effort);
  let best = allowed[0];
  for (const e of allowed) {
    const d = Math.abs(RANK.indexOf(e) - at);
    const bestD = Math.abs(RANK.indexOf(best) - at);
    if (d < bestD || (d === bestD && RANK.indexOf(e) > RANK.indexOf(best))) best = e;
  }
  return best;
}

/**
 * `req` with its effort moved to one the model takes (the same object when it already is).
 * Reasoning turned off (messages' `thinking: {type: "disabled"}`) asks for the least the model
 * takes: left unsaid, a reasoning model thinks at its default, and bills for it.
 */
export function withModelEffort(
  req: TextRequest,
  slug: string,
  sets: readonly EffortSet[],
): TextRequest {
  const r = req.reasoning;
  const effort = r?.effort ?? (r?.enabled === false ? "none" : undefined);
  if (effort === undefined || sets.length === 0) return req;
  const set = effortSetFor(slug, sets);
  if (!set) return req;
  const fitted = nearestEffort(effort, set.efforts);
  return fitted === r?.effort ? req : { ...req, reasoning: { ...r, effort: fitted } };
}

/**
 * A pass-through body's own effort (chat's `reasoning_effort`, responses' `reasoning.effort`)
 * moved to one the model takes, in place: a Codex user's `model_reasoning_effort = "xhigh"` on
 * gpt-5.1-codex would otherwise be OpenAI's 400.
 */
export function fitBodyEffort(
  body: Record<string, unknown>,
  slug: string,
  sets: readonly EffortSet[],
): void {
  const set = effortSetFor(slug, sets);
  if (!set) return;
  const fit = (e: unknown) =>
    typeof e === "string" && RANK.includes(e as Effort)
      ? nearestEffort(e as Effort, set.efforts)
      : e;
  if (body.reasoning_effort !== undefined) body.reasoning_effort = fit(body.reasoning_effort);
  const r = body.reasoning;
  if (r !== null && typeof r === "object" && "effort" in r) {
    body.reasoning = { ...r, effort: fit((r as { effort: unknown }).effort) };
  }
}

/** The efforts the model takes, as the provider lists them; undefined when no set names it. */
export function effortsFor(
  slug: string,
  sets: readonly EffortSet[],
): readonly Effort[] | undefined {
  return effortSetFor(slug, sets)?.efforts;
}

/** Per provider's sets, by catalogue slug: every pass-through call asks. */
const setsBySlug = new WeakMap<readonly EffortSet[], Map<string, EffortSet | undefined>>();

/** The first set that names `slug` (the order providers.json gives them). */
function effortSetFor(slug: string, sets: readonly EffortSet[]): EffortSet | undefined {
  let bySlug = setsBySlug.get(sets);
  if (!bySlug) setsBySlug.set(sets, bySlug = new Map());
  if (bySlug.has(slug)) return bySlug.get(slug);
  const set = sets.find((s) => s.models.some((p) => globMatch(p, slug)));
  bySlug.set(slug, set);
  return set;
}

/**
 * OpenRouter's `reasoning_details` carried through clients of other formats.
 *
 * OpenRouter returns a model's signed or encrypted reasoning as `reasoning_details` entries
 * (`reasoning.text` with a `signature`, `reasoning.encrypted` with `data`), each with the
 * `format` of the vendor behind it and an `id`/`index`, and wants them back unmodified in the
 * assistant turn (Gemini refuses a tool round whose thought signature is missing). A Claude
 * client keeps them only as a thinking block's `signature` or a redacted block's `data`, so
 * an entry travels there sealed: a prefix no vendor's value starts with, then the entry (all
 * but its text) as base64url JSON. Sealed, it is never replayed to Anthropic as its own — but
 * an entry whose `format` is Anthropic's holds a genuine Anthropic signature, which is.
 */
import { base64UrlOfText, textOfBase64Url } from "../../lib/base64.ts";
import type { ReasoningPart } from "../../events/text_request.ts";
import type { Obj } from "../json.ts";
import { OPENAI_ENCRYPTED } from "../responses/sealed_reasoning.ts";

const PREFIX = "tg.rd.";
const ANTHROPIC_FORMAT = "anthropic-claude-v1";
/** OpenRouter's name for OpenAI's encrypted reasoning (a responses item's `encrypted_content`). */
const OPENAI_FORMAT = "openai-responses-v1";

/**
 * The vendor (slug prefix) whose signed or encrypted reasoning each of OpenRouter's `format`s
 * holds: OpenRouter's
 * [formats](https://openrouter.ai/docs/sdks/go/api-reference/models/reasoningformat) other
 * than `unknown`. Azure serves OpenAI's models.
 */
const FORMAT_VENDOR: Record<string, string> = {
  [OPENAI_FORMAT]: "openai/",
  "azure-openai-responses-v1": "openai/",
  [ANTHROPIC_FORMAT]: "anthropic/",
  "google-gemini-v1": "google/",
  "xai-responses-v1": "x-ai/",
};

/**
 * Whether reasoning of OpenRouter's `format` is another vendor's than model `slug`'s (a client
 * that switched models mid-conversation sends back the earlier model's). Each vendor reads only
 * its own: Gemini refuses a thought signature it did not issue ("Thought signature is not
 * valid"), Anthropic a foreign thinking signature, OpenAI reasoning encrypted for another
 * organisation. A router (`openrouter/auto`) may answer with any vendor's model: nothing is
 * foreign to it, nor is reasoning of a format not named here.
 */
export function foreignFormat(format: unknown, slug: string): boolean {
  const vendor = typeof format === "string" ? FORMAT_VENDOR[format] : undefined;
  return vendor !== undefined && !slug.startsWith("openrouter/") && !slug.startsWith(vendor);
}

/** The fields of an entry a seal keeps (its text is the reasoning text the client has). */
const KEPT = ["type", "format", "id", "index", "signature", "data"] as const;

export function sealDetail(d: Obj): string {
  const kept: Obj = {};
  for (const k of KEPT) if (d[k] !== undefined && d[k] !== null) kept[k] = d[k];
  return PREFIX + base64UrlOfText(JSON.stringify(kept));
}

/** The entry a seal holds; undefined for anything else (a raw value, a broken seal). */
export function openDetail(v: string | undefined): Obj | undefined {
  if (!v?.startsWith(PREFIX)) return undefined;
  try {
    const d = JSON.parse(textOfBase64Url(v.slice(PREFIX.length)));
    return d !== null && typeof d === "object" && typeof d.type === "string" ? d : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What Anthropic may be sent of a reasoning part's signature or redacted data: the value
 * itself when it is raw and not OpenAI's encrypted reasoning (a client that switched from an
 * OpenAI model keeps that in the same fields, and Anthropic refuses a signature it did not
 * issue with a 400), the sealed value when the entry is Anthropic's own (served through
 * OpenRouter), else nothing.
 */
export function forAnthropic(v: string | undefined): string | undefined {
  if (!v) return undefined;
  if (!v.startsWith(PREFIX)) return OPENAI_ENCRYPTED.test(v) ? undefined : v;
  const d = openDetail(v);
  if (d?.format !== ANTHROPIC_FORMAT) return undefined;
  const inner = d.type === "reasoning.encrypted" ? d.data : d.signature;
  return typeof inner === "string" && inner !== "" ? inner : undefined;
}

/**
 * What OpenAI's responses API may be sent of a reasoning part's redacted data: its own
 * encrypted reasoning, raw or as a chat client sent back the entry it was given.
 */
export function forOpenAI(v: string | undefined): string | undefined {
  if (!v) return undefined;
  if (!v.startsWith(PREFIX)) return OPENAI_ENCRYPTED.test(v) ? v : undefined;
  const d = openDetail(v);
  return d?.type === "reasoning.encrypted" && typeof d.data === "string" &&
      OPENAI_ENCRYPTED.test(d.data)
    ? d.data
    : undefined;
}

/**
 * An assistant turn's `reasoning_details` (for OpenRouter, or a chat client): every sealed
 * entry as it came (with its part's text); for an Anthropic model, raw signatures and redacted
 * data as Anthropic entries; for an OpenAI model, OpenAI's encrypted reasoning as its
 * `openai-responses-v1` entry. Empty when the turn has none. With the upstream model's `slug`,
 * a sealed entry of another vendor's format (an earlier model's) is left out.
 */
export function detailsOut(
  parts: readonly ReasoningPart[],
  model: { anthropic: boolean; openai: boolean; slug?: string },
): Obj[] {
  const out: Obj[] = [];
  for (const p of parts) {
    const value = p.redacted ?? p.signature;
    if (!value) continue;
    const sealed = openDetail(value);
    if (sealed) {
      if (model.slug !== undefined && foreignFormat(sealed.format, model.slug)) continue;
      out.push(sealed.type === "reasoning.text" ? { ...sealed, text: p.text } : sealed);
    } else if (OPENAI_ENCRYPTED.test(value)) {
      // OpenAI's reasoning, served through its responses API: sent back, it goes back there
      // as the reasoning item OpenAI asks to be replayed across tool calls.
      if (model.openai) {
        out.push({ type: "reasoning.encrypted", data: value, format: OPENAI_FORMAT });
      }
    } else if (model.anthropic) {
      out.push(
        p.redacted !== undefined
          ? { type: "reasoning.encrypted", data: value, format: ANTHROPIC_FORMAT }
          : { type: "reasoning.text", text: p.text, signature: value, format: ANTHROPIC_FORMAT },
      );
    }
  }
  out.forEach((d, i) => d.index ??= i);
  return out;
}

/**
 * The reasoning parts an assistant turn's `reasoning_details` hold (a chat client sending back
 * what it was given): each signed or encrypted entry, sealed as it came; `text` is the turn's
 * `reasoning`, for an entry that does not carry its own. Empty when none is signed.
 */
export function partsFromDetails(details: unknown, text: string | undefined): ReasoningPart[] {
  if (!Array.isArray(details)) return [];
  const parts: ReasoningPart[] = [];
  for (const d of joinByIndex(details)) {
    if (d === null || typeof d !== "object") continue;
    const o = d as Obj;
    if (o.type === "reasoning.encrypted" && typeof o.data === "string" && o.data !== "") {
      parts.push({ type: "reasoning", text: "", redacted: sealDetail(o) });
    } else if (typeof o.signature === "string" && o.signature !== "") {
      const own = typeof o.text === "string" ? o.text : undefined;
      parts.push({ type: "reasoning", text: own ?? text ?? "", signature: sealDetail(o) });
    }
  }
  return parts;
}

/**
 * Consecutive `reasoning.text` entries of one `index` as one, up to the signed one: OpenRouter
 * streams a block's text in pieces and its signature last, in an entry of its own, and a client
 * may send them back as they came rather than joined. A signed entry closes its block.
 */
function joinByIndex(details: unknown[]): unknown[] {
  const out: unknown[] = [];
  let last: Obj | undefined;
  for (const d of details) {
    const o = d !== null && typeof d === "object" ? d as Obj : undefined;
    if (
      o?.type === "reasoning.text" && last !== undefined && o.index !== undefined &&
      o.index === last.index && (last.signature ?? "") === ""
    ) {
      const joined: Obj = { ...last, ...o };
      for (const k of ["signature", "format", "id"]) joined[k] = o[k] ?? last[k];
      if (typeof last.text === "string" || typeof o.text === "string") {
        joined.text = `${last.text ?? ""}${o.text ?? ""}`;
      }
      out[out.length - 1] = last = joined;
      continue;
    }
    out.push(d);
    last = o?.type === "reasoning.text" ? o : undefined;
  }
  return out;
}

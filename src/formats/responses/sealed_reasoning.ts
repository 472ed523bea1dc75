/**
 * Another vendor's reasoning carried through a Responses client in the reasoning item's
 * `encrypted_content`: Anthropic's thinking block (its text and `signature`) or its
 * `redacted_thinking` (opaque data).
 *
 * Responses clients keep reasoning across turns only as items they send back, and the one
 * opaque field they return untouched is `encrypted_content` (Codex asks for it with
 * `include: ["reasoning.encrypted_content"]`). Anthropic requires an assistant turn that
 * called tools with thinking on to replay its thinking block exactly as signed; without the
 * signature the gateway has to turn thinking off. So the block travels sealed: a prefix no
 * vendor's token starts with ("." is in neither base64 alphabet), then the parts as base64url
 * JSON. It is not secret — the text is the summary the client already has — only kept apart
 * from what responses upstreams issue, so that it is never forwarded to one, which would
 * refuse it (see `passThroughRequest`).
 */
import { base64UrlOfText, textOfBase64Url } from "../../lib/base64.ts";

const PREFIX = "tg.rs.";

/**
 * OpenAI's encrypted reasoning is a Fernet token (version byte 0x80, base64url: "gAAAAA…");
 * opaque reasoning from another vendor (Anthropic's redacted_thinking) would be refused.
 */
export const OPENAI_ENCRYPTED = /^gAAAAA/;

/** A reasoning block as the gateway seals it: signed text, or redacted data. */
export type SealedReasoning =
  | { text: string; signature: string; redacted?: undefined }
  | { text: string; redacted: string; signature?: undefined };

export function sealReasoning(r: SealedReasoning): string {
  const parts = r.redacted !== undefined
    ? { t: r.text, r: r.redacted }
    : { t: r.text, s: r.signature };
  return PREFIX + base64UrlOfText(JSON.stringify(parts));
}

/** Whether `encrypted_content` is one the gateway sealed (and no upstream could read). */
export function isSealedReasoning(data: unknown): data is string {
  return typeof data === "string" && data.startsWith(PREFIX);
}

/** The block a seal holds; undefined when it does not open as one. */
export function openSealedReasoning(data: string): SealedReasoning | undefined {
  if (!isSealedReasoning(data)) return undefined;
  try {
    const v = JSON.parse(textOfBase64Url(data.slice(PREFIX.length)));
    if (typeof v !== "object" || v === null || typeof v.t !== "string") return undefined;
    if (typeof v.s === "string" && v.s !== "" && v.r === undefined) {
      return { text: v.t, signature: v.s };
    }
    if (typeof v.r === "string" && v.r !== "" && v.s === undefined) {
      return { text: v.t, redacted: v.r };
    }
  } catch {
    // a tampered or truncated seal: treated as no block at all
  }
  return undefined;
}

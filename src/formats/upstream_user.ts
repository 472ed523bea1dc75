/**
 * The end-user id for OpenAI's `user` (and OpenRouter's): at most 64 characters, or OpenAI
 * answers 400. Claude Code's `metadata.user_id` is a JSON object of about 150 characters, so
 * a longer id is sent as its SHA-256 (64 hex digits): still one stable id per end user, and
 * the device and session ids inside it do not reach a third party.
 */
import { createHash } from "node:crypto";

const USER_MAX = 64;

export function upstreamUser(user: string): string {
  return user.length <= USER_MAX ? user : sha256Hex(user);
}

const sha256Hex = (s: string) => createHash("sha256").update(s).digest("hex");

/**
 * An end-user id as the upstream sees it: the paying account's id, then the client's id (or,
 * past 64 characters in all, as much of its SHA-256 as fits). Every account's calls go out on
 * the operator's one provider account, where a provider that flags an end user (OpenAI's
 * `safety_identifier` and `user`, OpenRouter's `user`, Anthropic's `metadata.user_id`) would
 * otherwise block every account's end user of the same name; and the operator can tell whose
 * user a provider names.
 */
export function scopedUser(accountId: string, user: string, opaque = false): string {
  const id = `${accountId}:${user}`;
  if (id.length <= USER_MAX && !opaque) return id;
  return `${accountId}:${sha256Hex(user).slice(0, Math.max(16, USER_MAX - accountId.length - 1))}`;
}

/**
 * Anthropic refuses a `metadata.user_id` holding an email address (400 "user_id appears to
 * contain an email address"), which chat clients often send as `user`; OpenAI asks for such an
 * id hashed, and OpenRouter may hand its `user` on to Anthropic. So an id with an address goes to
 * every upstream as its hash: still one stable id per end user.
 */
const EMAIL = /[^\s@]+@[^\s@]+\.[^\s@]+/;

/**
 * Tested only where the id could go out as sent (a longer one is hashed anyway): the pattern
 * backtracks quadratically, and a 100 kB id held the one thread for seconds.
 */
const holdsEmail = (id: string) => id.length <= USER_MAX && EMAIL.test(id);

/**
 * Scopes the end-user ids of an upstream body to the paying account (see `scopedUser`), in
 * place: `user` and `safety_identifier` for OpenAI's and OpenRouter's APIs, `metadata.user_id`
 * for Anthropic's.
 */
export function scopeEndUsers(
  body: Record<string, unknown>,
  anthropic: boolean,
  accountId: string,
): void {
  if (anthropic) {
    const m = body.metadata;
    if (m !== null && typeof m === "object" && !Array.isArray(m)) {
      const id = (m as { user_id?: unknown }).user_id;
      if (typeof id === "string" && id !== "") {
        body.metadata = { ...m, user_id: scopedUser(accountId, id, holdsEmail(id)) };
      }
    }
    return;
  }
  for (const k of ["user", "safety_identifier"]) {
    const v = body[k];
    if (typeof v === "string" && v !== "") body[k] = scopedUser(accountId, v, holdsEmail(v));
  }
}

/**
 * The end-user id for OpenAI's `user` (and OpenRouter's): at most 64 characters, or OpenAI
 * answers 400. Claude Code's `metadata.user_id` is a JSON object of about 150 characters, so
 * a longer id is sent as its SHA-256 (64 hex digits): still one stable id per end user, and
 * the device and session ids inside it do not reach a third party.
 */
import { createHash } from "node:crypto";

const USER_MAX = 64;

export function upstreamUser(user: string): string {
  return user.length <= USER_MAX ? user : createHash("sha256").update(user).digest("hex");
}

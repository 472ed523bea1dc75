import { createHash } from "node:crypto";

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;

/**
 * A tool call id as Anthropic takes it (`^[a-zA-Z0-9_-]+$`). Other vendors' ids (Kimi's
 * `functions.get_weather:0`) are rewritten the same way every time, so a call and its
 * result still pair up, and two ids that differ only in the rewritten characters stay apart.
 */
export function anthropicToolId(id: string): string {
  if (ANTHROPIC_ID.test(id)) return id;
  const hash = createHash("sha256").update(id).digest("hex").slice(0, 8);
  return `${id.replace(/[^a-zA-Z0-9_-]/g, "_")}_${hash}`;
}

import { createHash } from "node:crypto";
import type { Message, Part, TextRequest } from "../events/text_request.ts";
import { newId } from "../lib/ids.ts";

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;

/** Eight hex digits of an id's hash: rewritten ids that share a stem stay apart. */
const shortHash = (id: string) => createHash("sha256").update(id).digest("hex").slice(0, 8);

/**
 * A tool call id as Anthropic takes it (`^[a-zA-Z0-9_-]+$`). Other vendors' ids (Kimi's
 * `functions.get_weather:0`) are rewritten the same way every time, so a call and its
 * result still pair up, and two ids that differ only in the rewritten characters stay apart.
 */
export function anthropicToolId(id: string): string {
  if (ANTHROPIC_ID.test(id)) return id;
  return `${id.replace(/[^a-zA-Z0-9_-]/g, "_")}_${shortHash(id)}`;
}

/**
 * An id for a tool call whose upstream sent none (some OpenAI-compatible vendors): unique, as
 * a call's index would not be — it restarts with every answer, and a later turn that carries
 * two answers' calls would hold the same id twice.
 */
export function inventedCallId(): string {
  return newId("call", 12);
}

/** OpenAI's chat API refuses a tool call id longer than this. */
const OPENAI_ID_MAX = 40;

/**
 * A tool call id as OpenAI's chat API takes it: at most 40 characters (ids of other APIs, e.g.
 * responses' `fc_…` item ids, run longer). Rewritten the same way every time, so a call and its
 * result still pair up.
 */
export function openaiToolId(id: string): string {
  if (id.length <= OPENAI_ID_MAX) return id;
  return `${id.slice(0, OPENAI_ID_MAX - 9)}_${shortHash(id)}`;
}

/** OpenAI's responses API refuses a `call_id` longer than this. */
const OPENAI_CALL_ID_MAX = 64;

/**
 * A call id as OpenAI's responses API takes it: at most 64 characters (some vendors' ids run
 * to hundreds). Rewritten the same way every time, so a call and its output still pair up.
 */
export function openaiCallId(id: string): string {
  if (id.length <= OPENAI_CALL_ID_MAX) return id;
  return `${id.slice(0, OPENAI_CALL_ID_MAX - 9)}_${shortHash(id)}`;
}

/**
 * The request with every tool call id used once: ids that restart with each answer (Kimi's
 * `functions.get_weather:0`) repeat across a history, and Anthropic refuses a repeated
 * `tool_use` id ("tool_use ids must be unique"). A repeat is renamed, and the results that
 * follow its turn (before the next assistant turn) renamed with it, in the order the calls
 * were made. The request itself when nothing repeats.
 */
export function withUniqueToolIds(req: TextRequest): TextRequest {
  const seen = new Set<string>();
  let repeats = false;
  for (const m of req.messages) {
    for (const p of m.parts) {
      if (p.type !== "tool_call") continue;
      if (seen.has(p.id)) repeats = true;
      seen.add(p.id);
    }
  }
  if (!repeats) return req;
  const used = new Set<string>();
  /** Per original id, the new ids of the last assistant turn's calls, in order. */
  let renamed = new Map<string, string[]>();
  const messages: Message[] = req.messages.map((m, i) => {
    if (m.role === "assistant") {
      // Consecutive assistant messages (one per call, as some clients send them) are one turn.
      if (req.messages[i - 1]?.role !== "assistant") renamed = new Map();
      const parts = m.parts.map((p): Part => {
        if (p.type !== "tool_call") return p;
        let id = p.id;
        for (let n = 2; used.has(id); n++) id = `${p.id}_${n}`;
        used.add(id);
        renamed.set(p.id, [...(renamed.get(p.id) ?? []), id]);
        return id === p.id ? p : { ...p, id };
      });
      return { ...m, parts };
    }
    const parts = m.parts.map((p): Part => {
      if (p.type !== "tool_result") return p;
      const ids = renamed.get(p.callId);
      if (!ids?.length) return p;
      // Each result answers the next call of that id; a further one, the last.
      const id = ids.length > 1 ? ids.shift()! : ids[0];
      return id === p.callId ? p : { ...p, callId: id };
    });
    return { ...m, parts };
  });
  return { ...req, messages };
}

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

/**
 * `id` in at most `max` characters: a longer one is cut and given a hash of the whole, the same
 * way every time, so a call and its result still pair up.
 */
function fitted(id: string, max: number): string {
  return id.length <= max ? id : `${id.slice(0, max - 9)}_${shortHash(id)}`;
}

/**
 * A tool call id as OpenAI's chat API takes it: at most 40 characters (ids of other APIs, e.g.
 * responses' `fc_…` item ids, run longer).
 */
export const openaiToolId = (id: string): string => fitted(id, 40);

/**
 * A call id as OpenAI's responses API takes it: at most 64 characters (some vendors' ids run
 * to hundreds).
 */
export const openaiCallId = (id: string): string => fitted(id, 64);

/**
 * The request with every tool call id used once: ids that restart with each answer (Kimi's
 * `functions.get_weather:0`) repeat across a history, and Anthropic refuses a repeated
 * `tool_use` id ("tool_use ids must be unique"). A repeat is renamed, and the results that
 * follow its turn (before the next assistant turn) renamed with it, in the order the calls
 * were made. The request itself when nothing repeats.
 */
export function withUniqueToolIds(req: TextRequest): TextRequest {
  if (
    !repeats(
      req.messages.flatMap((m) => m.parts.flatMap((p) => p.type === "tool_call" ? [p.id] : [])),
    )
  ) {
    return req;
  }
  const ids = toolIdRenamer();
  const messages: Message[] = req.messages.map((m, i) => {
    if (m.role === "assistant") {
      // Consecutive assistant messages (one per call, as some clients send them) are one turn.
      if (req.messages[i - 1]?.role !== "assistant") ids.turn();
      const parts = m.parts.map((p): Part => {
        if (p.type !== "tool_call") return p;
        const id = ids.call(p.id);
        return id === p.id ? p : { ...p, id };
      });
      return { ...m, parts };
    }
    const parts = m.parts.map((p): Part => {
      if (p.type !== "tool_result") return p;
      const id = ids.result(p.callId);
      return id === p.callId ? p : { ...p, callId: id };
    });
    return { ...m, parts };
  });
  return { ...req, messages };
}

/** Some id comes twice. */
export function repeats(ids: Iterable<unknown>): boolean {
  const seen = new Set<unknown>();
  for (const id of ids) {
    if (seen.has(id)) return true;
    seen.add(id);
  }
  return false;
}

/**
 * The renaming of `withUniqueToolIds`, for a history in any form: `turn` where an assistant
 * turn begins, `call` for each call's id (a repeat gets `_2`, `_3`, …), `result` for each
 * result's (each answers the next call of that id in the last turn; a further one, the last).
 */
export function toolIdRenamer() {
  const used = new Set<string>();
  /** Per original id, the new ids of the last assistant turn's calls, in order. */
  let renamed = new Map<string, string[]>();
  return {
    turn(): void {
      renamed = new Map();
    },
    call(original: string): string {
      let id = original;
      for (let n = 2; used.has(id); n++) id = `${original}_${n}`;
      used.add(id);
      renamed.set(original, [...(renamed.get(original) ?? []), id]);
      return id;
    },
    result(original: string): string {
      const ids = renamed.get(original);
      if (!ids?.length) return original;
      return ids.length > 1 ? ids.shift()! : ids[0];
    },
  };
}

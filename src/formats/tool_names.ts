/**
 * Tool names an OpenAI-format upstream takes. OpenAI (and Gemini behind OpenRouter) refuse a
 * function name over 64 characters with a 400, and Anthropic takes 128: Claude Code's MCP
 * tools (`mcp__<server>__<tool>`) often run past 64, and every turn of such a session on an
 * OpenAI model would be refused. So a transcoded request names a long tool by a short form
 * (its start and a hash of the whole name: the same every turn, and distinct), and the calls
 * the upstream answers with are given their client's name back.
 */
import { createHash } from "node:crypto";
import type { Event } from "../events/event.ts";
import type { Emit, StreamDecoder } from "./codec.ts";
import type { Part, TextRequest } from "../events/text_request.ts";

export const TOOL_NAME_MAX = 64;

/** `name` as an upstream with the 64-character limit is sent it. */
export function shortToolName(name: string): string {
  if (name.length <= TOOL_NAME_MAX) return name;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${name.slice(0, TOOL_NAME_MAX - hash.length - 1)}_${hash}`;
}

/**
 * The request with its long tool names shortened (declarations, the tool choice, the calls in
 * its history), and the map back from short to client names; the request itself when no name
 * is too long.
 */
export function withShortToolNames(
  req: TextRequest,
): { request: TextRequest; names?: Map<string, string> } {
  const long = (name: string) => name.length > TOOL_NAME_MAX;
  const any = req.tools?.some((t) => long(t.name)) ||
    (req.toolChoice?.type === "tool" && long(req.toolChoice.name)) ||
    req.messages.some((m) => m.parts.some((p) => p.type === "tool_call" && long(p.name)));
  // Most requests: nothing to copy.
  if (!any) return { request: req };
  const names = new Map<string, string>();
  const short = (name: string) => {
    const s = shortToolName(name);
    if (s !== name) names.set(s, name);
    return s;
  };
  const tools = req.tools?.map((t) => ({ ...t, name: short(t.name) }));
  const calls = (parts: Part[]) =>
    parts.map((p) => p.type === "tool_call" ? { ...p, name: short(p.name) } : p);
  const messages = req.messages.map((m) => ({ ...m, parts: calls(m.parts) }));
  const toolChoice = req.toolChoice?.type === "tool"
    ? { ...req.toolChoice, name: short(req.toolChoice.name) }
    : req.toolChoice;
  return { request: { ...req, tools, messages, toolChoice }, names };
}

/** An upstream's event with the client's tool name back in place of the short one. */
export function clientToolName(e: Event, names: Map<string, string>): Event {
  if (e.type !== "tool_call_start") return e;
  const name = names.get(e.name);
  return name === undefined ? e : { ...e, name };
}

/** `emit` giving the client's tool names back; `emit` itself when none was shortened. */
export function withClientToolNames(emit: Emit, names?: Map<string, string>): Emit {
  return names ? (e) => emit(clientToolName(e, names)) : emit;
}

/** A stream decoder whose tool calls carry the client's names. */
export function clientNamesDecoder(d: StreamDecoder, names?: Map<string, string>): StreamDecoder {
  if (!names) return d;
  return {
    event: (ev, emit) => d.event(ev, withClientToolNames(emit, names)),
    end: (emit) => d.end(withClientToolNames(emit, names)),
  };
}

/**
 * Tool names every upstream takes: `^[a-zA-Z0-9_-]{1,64}$`. OpenAI (and Gemini behind
 * OpenRouter) refuse a function name over 64 characters with a 400, Anthropic one over 128,
 * and both any other character: Claude Code's MCP tools (`mcp__<server>__<tool>`) often run
 * past 64, and chat clients name tools `search.web` or in their own language. So a transcoded
 * request names such a tool by a fitting form (its start, other characters as `_`, and a hash
 * of the whole name: the same every turn, and distinct), and the calls the upstream answers
 * with are given their client's name back.
 */
import { createHash } from "node:crypto";
import type { Event } from "../events/event.ts";
import type { Emit, StreamDecoder } from "./codec.ts";
import type { Part, TextRequest } from "../events/text_request.ts";

export const TOOL_NAME_MAX = 64;

const FIT = /^[a-zA-Z0-9_-]{1,64}$/;

/** `name` as an upstream is sent it. */
export function shortToolName(name: string): string {
  if (FIT.test(name)) return name;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  const start = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, TOOL_NAME_MAX - hash.length - 1);
  return `${start}_${hash}`;
}

/**
 * The request with its unfit tool names replaced (declarations, the tool choice, the calls in
 * its history), and the map back to the client's names; the request itself when every name
 * fits.
 */
export function withShortToolNames(
  req: TextRequest,
): { request: TextRequest; names?: Map<string, string> } {
  const long = (name: string) => !FIT.test(name);
  const any = req.tools?.some((t) => long(t.name)) ||
    (req.toolChoice?.type === "tool" && long(req.toolChoice.name)) ||
    req.messages.some((m) => m.parts.some((p) => p.type === "tool_call" && long(p.name)));
  // Most requests: nothing to copy.
  if (!any) return { request: req };
  const names = new Map<string, string>();
  const given = new Map<string, string>();
  // Names that fit stay as they are; a fitted one that would equal one of them (or another
  // fitted one) takes another hash, so two tools never share a name upstream.
  const taken = new Set<string>();
  for (const t of req.tools ?? []) if (!long(t.name)) taken.add(t.name);
  const short = (name: string) => {
    if (!long(name)) return name;
    let s = given.get(name);
    if (s === undefined) {
      s = shortToolName(name);
      for (let k = 1; taken.has(s); k++) s = shortToolName(`${name}\u0000${k}`);
      taken.add(s);
      given.set(name, s);
      names.set(s, name);
    }
    return s;
  };
  const tools = req.tools?.map((t) => ({ ...t, name: short(t.name) }));
  const named = <P extends Part>(p: P): P => {
    if (p.type === "tool_call") return { ...p, name: short(p.name) };
    if (p.type === "text" && p.toolRef !== undefined && long(p.toolRef)) {
      return { ...p, text: p.text.replace(p.toolRef, short(p.toolRef)) };
    }
    if (p.type === "tool_result" && p.content.some((c) => c.type === "text" && c.toolRef)) {
      return { ...p, content: p.content.map(named) };
    }
    return p;
  };
  const calls = (parts: Part[]) => parts.map(named);
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
    get complete() {
      return d.complete;
    },
    event: (ev, emit) => d.event(ev, withClientToolNames(emit, names)),
    end: (emit) => d.end(withClientToolNames(emit, names)),
  };
}

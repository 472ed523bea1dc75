/**
 * Every upstream pairs tool calls with their results strictly: Anthropic refuses a
 * `tool_result` whose `tool_use` is not in the assistant turn just before it, and a `tool_use`
 * left without a result in the next turn; OpenAI's chat and responses APIs refuse a tool
 * output without its call and a call without its output. A history another client kept — one
 * cut short, edited, or an interrupted tool call — is repaired on its way to another format
 * rather than refused there: an unpaired result becomes text the model still reads, and a
 * call left unanswered is answered as not run.
 */
import type { Message, Part, TextRequest, ToolResultPart } from "../events/text_request.ts";
import { withUniqueToolIds } from "./tool_ids.ts";

/** What an unanswered call is told: the client never sent its result. */
export const NO_RESULT = "No result: the call was not completed.";

/**
 * The request with its tool calls and results paired, each call's id used once
 * (`withUniqueToolIds`); the request itself when they are.
 */
export function withPairedToolTurns(request: TextRequest): TextRequest {
  if (!request.messages.some((m) => m.parts.some(isToolPart))) return request;
  const req = withUniqueToolIds(request);
  if (paired(req.messages)) return req;
  return { ...req, messages: pair(req.messages) };
}

function isToolPart(p: Part): boolean {
  return p.type === "tool_call" || p.type === "tool_result";
}

function callIds(m: Message): Set<string> {
  const ids = new Set<string>();
  for (const p of m.parts) if (p.type === "tool_call") ids.add(p.id);
  return ids;
}

/**
 * The shape every upstream takes: an assistant message with calls is followed by a user
 * message that opens with one result for each of them (chat's tool messages come right after
 * the calls), and no result stands anywhere else. Calls in the last message are the model's
 * own, with nothing after them to answer yet.
 */
function paired(messages: Message[]): boolean {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === "assistant") continue;
    const prev = messages[i - 1];
    const calls = prev?.role === "assistant" ? callIds(prev) : new Set<string>();
    let k = 0;
    for (; k < m.parts.length; k++) {
      const p = m.parts[k];
      if (p.type !== "tool_result") break;
      if (!calls.delete(p.callId)) return false;
    }
    if (calls.size > 0) return false;
    if (m.parts.slice(k).some((p) => p.type === "tool_result")) return false;
  }
  for (let i = 0; i < messages.length - 1; i++) {
    if (messages[i].role === "assistant" && messages[i + 1].role === "assistant") {
      if (callIds(messages[i]).size > 0) return false;
    }
  }
  return true;
}

/**
 * Consecutive messages of a role become one (the vendors read them so: one turn), and each
 * user turn after calls opens with their results, in the calls' order: the client's own, or
 * NO_RESULT where it sent none. Any other result becomes text.
 */
function pair(messages: Message[]): Message[] {
  const turns: Message[] = [];
  for (const m of messages) {
    const last = turns.at(-1);
    if (last?.role === m.role) last.parts.push(...m.parts);
    else turns.push({ role: m.role, parts: [...m.parts] });
  }
  return turns.map((m, i) => {
    if (m.role === "assistant") return m;
    const prev = turns[i - 1];
    const calls = prev?.role === "assistant" ? [...callIds(prev)] : [];
    const answers = new Map<string, ToolResultPart>();
    const rest: Part[] = [];
    for (const p of m.parts) {
      if (p.type !== "tool_result") rest.push(p);
      else if (calls.includes(p.callId) && !answers.has(p.callId)) answers.set(p.callId, p);
      else rest.push(...asText(p));
    }
    const results = calls.map((callId): ToolResultPart =>
      answers.get(callId) ?? {
        type: "tool_result",
        callId,
        content: [{ type: "text", text: NO_RESULT }],
        isError: true,
      }
    );
    return { role: m.role, parts: [...results, ...rest] };
  });
}

/** A result without its call, as what the model reads: the text, and images as they are. */
function asText(p: ToolResultPart): Part[] {
  const text = p.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  const label = `Result of tool call ${p.callId}${p.isError ? " (error)" : ""}:`;
  return [
    {
      type: "text",
      text: text === "" ? label : `${label}\n${text}`,
      ...(p.cacheControl ? { cacheControl: p.cacheControl } : {}),
    },
    ...p.content.filter((c) => c.type === "image"),
  ];
}

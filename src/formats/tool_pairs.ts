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

/** What an unanswered call is told: the client never sent its result. */
export const NO_RESULT = "No result: the call was not completed.";

/** The request with its tool calls and results paired; the request itself when they are. */
export function withPairedToolTurns(req: TextRequest): TextRequest {
  if (!req.messages.some((m) => m.parts.some(isToolPart)) || paired(req.messages)) return req;
  return { ...req, messages: pair(req.messages) };
}

function isToolPart(p: Part): boolean {
  return p.type === "tool_call" || p.type === "tool_result";
}

/**
 * The calls of each assistant turn (its consecutive assistant messages) answered once each in
 * the user messages after it.
 */
function paired(messages: Message[]): boolean {
  let open = new Set<string>();
  let prev: Message["role"] | undefined;
  for (const m of messages) {
    if (m.role === "assistant") {
      if (prev !== "assistant") {
        if (open.size > 0) return false;
        open = new Set();
      }
      addCallIds(open, m);
    } else {
      for (const p of m.parts) {
        if (p.type === "tool_result" && !open.delete(p.callId)) return false;
      }
    }
    prev = m.role;
  }
  // Calls still open after the last message are the model's own: nothing answers them yet.
  return open.size === 0 || prev === "assistant";
}

function addCallIds(ids: Set<string>, m: Message): void {
  for (const p of m.parts) if (p.type === "tool_call") ids.add(p.id);
}

function pair(messages: Message[]): Message[] {
  const out: Message[] = [];
  let open = new Set<string>();
  /** The assistant message whose calls are open, and where its turn's answers begin. */
  let turnStart = -1;
  const closeTurn = () => {
    if (open.size === 0) return;
    const missing: ToolResultPart[] = [...open].map((callId) => ({
      type: "tool_result",
      callId,
      content: [{ type: "text", text: NO_RESULT }],
      isError: true,
    }));
    const next = out[turnStart + 1];
    if (next?.role === "user") next.parts = [...missing, ...next.parts];
    else out.splice(turnStart + 1, 0, { role: "user", parts: missing });
    open = new Set();
  };
  for (const m of messages) {
    if (m.role === "assistant") {
      if (out.at(-1)?.role !== "assistant") closeTurn();
      out.push(m);
      addCallIds(open, m);
      turnStart = out.length - 1;
      continue;
    }
    const parts = m.parts.map((p) =>
      p.type === "tool_result" && !open.delete(p.callId) ? asText(p) : [p]
    ).flat();
    out.push({ ...m, parts });
  }
  // The last assistant turn's calls stay open only when nothing follows them; a user turn
  // after them that answered some but not all is completed.
  if (out.at(-1)?.role === "user") closeTurn();
  return out;
}

/** A result without its call, as what the model reads: the text, and images as they are. */
function asText(p: ToolResultPart): Part[] {
  const text = p.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  const label = `Result of tool call ${p.callId}${p.isError ? " (error)" : ""}:`;
  return [
    { type: "text", text: text === "" ? label : `${label}\n${text}` },
    ...p.content.filter((c) => c.type === "image"),
  ];
}

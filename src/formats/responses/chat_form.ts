/**
 * The spec's responses `input` takes items "in the same form as chat messages". Chat's own
 * shapes — a `tool` message, an assistant message with `tool_calls`, `text` / `image_url` /
 * `file` parts — are rewritten here, in place, into the Responses API's items before
 * validation, so the rest of the gateway (and a responses upstream, which refuses chat's
 * shapes) sees one form. Items already in the Responses form are left as they are.
 */
import { badRequest } from "../../http/gateway_error.ts";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** A chat content part → its Responses counterpart; any other part is kept. */
function part(p: unknown, assistant: boolean): unknown {
  if (!isObj(p)) return p;
  switch (p.type) {
    case "text":
      return { ...p, type: assistant ? "output_text" : "input_text" };
    case "image_url": {
      const img = p.image_url;
      const url = isObj(img) ? img.url : img;
      const detail = isObj(img) && typeof img.detail === "string" ? img.detail : "auto";
      return { type: "input_image", image_url: url, detail };
    }
    case "file": {
      const f = isObj(p.file) ? p.file : {};
      return { type: "input_file", ...f };
    }
    default:
      return p;
  }
}

function content(c: unknown, assistant: boolean): unknown {
  return Array.isArray(c) ? c.map((p) => part(p, assistant)) : c;
}

const CHAT_PARTS = new Set(["text", "image_url", "file"]);

/** True when the item is a chat-form message this module rewrites. */
function chatForm(it: unknown): boolean {
  if (!isObj(it) || (it.type !== undefined && it.type !== null && it.type !== "message")) {
    return false;
  }
  if (it.role === "tool" || (it.tool_calls !== undefined && it.tool_calls !== null)) return true;
  return Array.isArray(it.content) &&
    it.content.some((p) => isObj(p) && CHAT_PARTS.has(p.type as string));
}

/** The Responses items one chat-form message becomes. */
function rewrite(it: Obj, at: number): Obj[] {
  const { tool_calls: calls, tool_call_id: callId, ...rest } = it;
  // Errors name the fields as the client wrote them, not as they would have been rewritten.
  const c = it.content;
  if (c !== undefined && c !== null && typeof c !== "string" && !Array.isArray(c)) {
    throw badRequest(`input[${at}].content must be a string or an array of parts`);
  }
  if (it.role === "tool") {
    if (typeof callId !== "string" || callId === "") {
      throw badRequest(`input[${at}] is a tool message without tool_call_id`);
    }
    return [{ type: "function_call_output", call_id: callId, output: content(it.content, false) }];
  }
  if (calls !== undefined && calls !== null && !Array.isArray(calls)) {
    throw badRequest(`input[${at}].tool_calls must be an array`);
  }
  const assistant = it.role === "assistant";
  const out: Obj[] = [];
  const empty = c === undefined || c === null || c === "" || (Array.isArray(c) && c.length === 0);
  if (!empty) out.push({ ...rest, content: content(c, assistant) });
  if (Array.isArray(calls)) {
    calls.forEach((tc, i) => {
      const fn = isObj(tc) && isObj(tc.function) ? tc.function : undefined;
      if (!isObj(tc) || typeof tc.id !== "string" || !fn || typeof fn.name !== "string") {
        throw badRequest(`input[${at}].tool_calls[${i}] needs id and function.name`);
      }
      // As chat takes them: a JSON text (an object would be a guess at its serialisation).
      if (fn.arguments !== undefined && typeof fn.arguments !== "string") {
        throw badRequest(`input[${at}].tool_calls[${i}].function.arguments must be a string`);
      }
      out.push({
        type: "function_call",
        call_id: tc.id,
        name: fn.name,
        arguments: fn.arguments ?? "{}",
      });
    });
  }
  return out;
}

/** Rewrites `body.input`'s chat-form messages in place; nothing is copied when there are none. */
export function adoptChatForm(body: Obj): void {
  const input = body.input;
  if (!Array.isArray(input) || !input.some(chatForm)) return;
  body.input = input.flatMap((it, i) => chatForm(it) ? rewrite(it as Obj, i) : [it]);
}

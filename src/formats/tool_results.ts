/**
 * Chat and responses have no flag for a tool call that failed (Anthropic's `is_error`): there
 * the model learns it from the result's text, so a failed result whose text does not already
 * say so is prefixed with "Error: " (an empty one is "Error").
 */
import type { ImagePart, TextPart, ToolResultPart } from "../events/text_request.ts";

const SAYS_ERROR = /^\s*(<tool_use_error>|error\b)/i;

export function resultContent(p: ToolResultPart): (TextPart | ImagePart)[] {
  if (!p.isError) return p.content;
  const [first, ...rest] = p.content;
  if (first?.type !== "text") return [{ type: "text", text: "Error" }, ...p.content];
  if (SAYS_ERROR.test(first.text)) return p.content;
  return [{ ...first, text: first.text === "" ? "Error" : `Error: ${first.text}` }, ...rest];
}

import type { TextRequest } from "../events/text_request.ts";

/**
 * Images are billed by providers at a few hundred to a couple of thousand tokens each,
 * depending on size; the hold and the counted fall-back use the high end.
 */
const IMAGE_TOKENS = 1_600;

/** The gateway's own count of a request's prompt tokens (see count.ts for its accuracy). */
export function countPromptTokens(req: TextRequest): number {
  let chars = 0;
  let images = 0;
  for (const p of req.system) chars += p.text.length;
  for (const m of req.messages) {
    for (const p of m.parts) {
      switch (p.type) {
        case "text":
        case "reasoning":
          chars += p.text.length;
          break;
        case "image":
          images++;
          break;
        case "tool_call":
          chars += p.name.length + p.arguments.length;
          break;
        case "tool_result":
          for (const c of p.content) {
            if (c.type === "text") chars += c.text.length;
            else images++;
          }
          break;
      }
    }
    chars += 4; // role and separators
  }
  for (const t of req.tools ?? []) {
    chars += t.name.length + (t.description?.length ?? 0) + JSON.stringify(t.parameters).length;
  }
  return Math.ceil(chars / 4) + images * IMAGE_TOKENS;
}

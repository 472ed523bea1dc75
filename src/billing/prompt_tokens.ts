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

/** Block types that carry one image, however they spell its source. */
const IMAGE_BLOCKS = new Set(["image", "image_url", "input_image"]);

/**
 * An upper bound on a request body's prompt, for the hold: every string in the body at four
 * characters a token, each image at `IMAGE_TOKENS`, at most the model's context (no upstream
 * takes a longer prompt). `countPromptTokens` sees only what the internal form models; a
 * same-format request also forwards what it does not model (documents, search results,
 * files), which the upstream bills, so the hold takes the larger of the two. `seen.audio` is set
 * when the body carries audio (chat's and responses' `input_audio` parts).
 */
export function bodyPromptBound(
  body: unknown,
  contextLength: number,
  seen?: { audio?: boolean },
): number {
  let chars = 0;
  let images = 0;
  const walk = (v: unknown): void => {
    if (typeof v === "string") {
      if (v.startsWith("data:image/")) images++;
      else chars += v.length;
    } else if (Array.isArray(v)) {
      for (const x of v) walk(x);
    } else if (v !== null && typeof v === "object") {
      const type = (v as { type?: unknown }).type;
      if (IMAGE_BLOCKS.has(type as string)) {
        images++;
        return;
      }
      // Audio's payload is counted as text (a generous bound, capped at the context below);
      // the hold prices it as audio (`seen`).
      if (type === "input_audio" && seen) seen.audio = true;
      for (const x of Object.values(v)) walk(x);
    }
  };
  walk(body);
  const tokens = Math.ceil(chars / 4) + images * IMAGE_TOKENS;
  return contextLength > 0 ? Math.min(tokens, contextLength) : tokens;
}

/**
 * An agent on a model that reads no images (DeepSeek, GLM, o3-mini) keeps an image in the
 * session's history once one is there (a screenshot pasted on an earlier turn, a tool's
 * answer for a PNG: Claude Code's Read, Codex's view_image). Refusing it would make every
 * later turn, and the compaction that could drop it, a 400: the session could never go on.
 * The model is told in words that an image was there instead: inside any tool result (the
 * model asked for the file and can answer that it cannot see it), and in every message but
 * the newest, whose own image is still refused, so the user hears of it on the turn they
 * attach it. PDFs keep their own route (OpenRouter parses them).
 */
import { isPdfDataUrl, type TextRequest } from "../events/text_request.ts";
import type { CatalogueModel } from "../catalogue/catalogue.ts";

export const readsImages = (model: CatalogueModel): boolean =>
  model.architecture.input_modalities.includes("image");

/** What the model reads where an image was. */
export const imageOmitted = (model: CatalogueModel): string =>
  `[image omitted: model ${model.id} does not accept image input]`;

/** The internal form's history, for a model that reads no images (see above). */
export function omitHistoryImages(req: TextRequest, model: CatalogueModel): void {
  if (readsImages(model)) return;
  const note = { type: "text" as const, text: imageOmitted(model) };
  const isImage = (c: { type: string; url?: string }) =>
    c.type === "image" && !isPdfDataUrl(c.url ?? "");
  const last = req.messages.length - 1;
  req.messages.forEach((m, i) => {
    m.parts = m.parts.map((p) => {
      if (p.type === "tool_result" && p.content.some(isImage)) {
        return { ...p, content: p.content.map((c) => isImage(c) ? note : c) };
      }
      return i < last && isImage(p) ? note : p;
    });
  });
}

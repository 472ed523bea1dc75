import type { CatalogueModel } from "../../catalogue/catalogue.ts";
import { imageOmitted, readsImages } from "../history_images.ts";
import { isPdfDataUrl } from "../../events/text_request.ts";

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null;

/**
 * A responses body's history for a model that reads no images (../history_images.ts): the
 * body itself is rewritten, since it passes through to OpenAI's own text-only models
 * (o3-mini) as sent, and the internal form any other upstream gets is read from it. An image
 * in a tool's output (`function_call_output`, `custom_tool_call_output`) or in any input item
 * but the last becomes an `input_text` note.
 */
export function omitHistoryImages(body: Obj, model: CatalogueModel): void {
  const input = body.input;
  if (readsImages(model) || !Array.isArray(input)) return;
  const note = { type: "input_text", text: imageOmitted(model) };
  const isImage = (p: unknown) =>
    isObject(p) && p.type === "input_image" &&
    !(typeof p.image_url === "string" && isPdfDataUrl(p.image_url));
  const last = input.length - 1;
  body.input = input.map((item, i) => {
    if (!isObject(item)) return item;
    const field = Array.isArray(item.output) && String(item.type).endsWith("_output")
      ? "output"
      : i < last && Array.isArray(item.content) && (item.type ?? "message") === "message"
      ? "content"
      : undefined;
    const parts = field && item[field] as unknown[];
    if (!parts || !parts.some(isImage)) return item;
    return { ...item, [field]: parts.map((p) => isImage(p) ? note : p) };
  });
}

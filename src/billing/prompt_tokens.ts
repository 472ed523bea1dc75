import type { TextRequest } from "../events/text_request.ts";
import { pdfPages } from "./pdf_pages.ts";

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

/**
 * A PDF page as the providers bill it: its text (1 500–3 000 tokens on a dense page, by
 * Anthropic's guide) and the image of the page they read beside it, with room for denser
 * pages.
 */
export const PDF_PAGE_TOKENS = 6_000;

const PDF_DATA_URL = "data:application/pdf;base64,";

/**
 * The tokens a base64 PDF is billed at, from its pages (pdf_pages.ts); undefined where they
 * cannot all be seen (not base64, or an object stream that cannot be read),
 * and the caller counts its characters. Counted at four characters a token, a 3 MB PDF of ten
 * pages was held for the whole context, ~750 K tokens, where the upstream bills ~30 K: an
 * account that could pay for it many times over was refused with a 402.
 */
export function pdfPromptTokens(base64: string): number | undefined {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.fromBase64(base64);
  } catch {
    return undefined;
  }
  const pages = pdfPages(bytes);
  return pages === undefined ? undefined : pages * PDF_PAGE_TOKENS;
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
  let pdfs = 0;
  /** A base64 PDF's tokens by its pages, or its characters where they cannot be seen. */
  const pdf = (base64: string, counted: number) => {
    const t = pdfPromptTokens(base64);
    if (t === undefined) chars += counted;
    else pdfs += t;
  };
  const walk = (v: unknown): void => {
    if (typeof v === "string") {
      if (v.startsWith("data:image/")) images++;
      else if (v.startsWith(PDF_DATA_URL)) pdf(v.slice(PDF_DATA_URL.length), v.length);
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
      // Anthropic's base64 source: the PDF's bytes in `data`, its type beside it.
      const source = v as { media_type?: unknown; data?: unknown };
      if (source.media_type === "application/pdf" && typeof source.data === "string") {
        pdf(source.data, source.data.length);
        for (const [k, x] of Object.entries(v)) if (k !== "data") walk(x);
        return;
      }
      for (const x of Object.values(v)) walk(x);
    }
  };
  walk(body);
  const tokens = Math.ceil(chars / 4) + images * IMAGE_TOKENS + pdfs;
  return contextLength > 0 ? Math.min(tokens, contextLength) : tokens;
}

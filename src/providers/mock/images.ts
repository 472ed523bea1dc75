/**
 * OpenAI images (generations and edits), shaped as
 * ../shared/fixtures/upstream/openai/images-b64-json.json plus gpt-image-1's `usage`:
 * `n` real (tiny) PNGs as `b64_json`, each coloured by a hash of the prompt and its index.
 */
import { solidPng } from "./png.ts";
import { base64, CREATED, fnv1a, tokensOf } from "./util.ts";

/** Most images per request (the real API's limit for `n`). */
const imagesMax = 10;
/** Output tokens per image when no `tokens` marker is given (gpt-image-1, low, 1024²). */
const imageTokensDefault = 272;
/** Input tokens charged per input image of an edit. */
const inputImageTokens = 85;

export interface ImageRequest {
  prompt: string;
  n: number;
  /** Input images (edits). */
  images: number;
  size: string;
  quality: string;
  url: boolean;
}

/** A request's image parameters from a JSON body or the fields of a multipart form. */
export function imageRequest(body: Record<string, unknown>, images: number): ImageRequest | string {
  if (typeof body.prompt !== "string" || body.prompt === "") return "'prompt' is required.";
  const n = body.n === undefined || body.n === null ? 1 : Number(body.n);
  if (!Number.isInteger(n) || n < 1 || n > imagesMax) {
    return `Invalid value for 'n': expected an integer between 1 and ${imagesMax}.`;
  }
  return {
    prompt: body.prompt,
    n,
    images,
    size: typeof body.size === "string" ? body.size : "1024x1024",
    quality: typeof body.quality === "string" ? body.quality : "low",
    url: body.response_format === "url",
  };
}

export function imageUsage(r: ImageRequest, tokensPerImage: number | undefined) {
  const text = tokensOf(r.prompt.length);
  const image = r.images * inputImageTokens;
  const output = r.n * (tokensPerImage ?? imageTokensDefault);
  return { input: text + image, text, image, output };
}

export function imagesBody(
  r: ImageRequest,
  usage: ReturnType<typeof imageUsage>,
  withUsage: boolean,
): string {
  const data = imagesB64(r).map((b64) =>
    r.url ? { url: "data:image/png;base64," + b64 } : { b64_json: b64 }
  );
  const out: Record<string, unknown> = { created: CREATED, data };
  if (withUsage) {
    out.usage = {
      total_tokens: usage.input + usage.output,
      input_tokens: usage.input,
      output_tokens: usage.output,
      input_tokens_details: { text_tokens: usage.text, image_tokens: usage.image },
    };
  }
  out.output_format = "png";
  out.quality = r.quality;
  out.size = r.size;
  return JSON.stringify(out);
}

/** The request's `n` PNGs in base64, each coloured by a hash of the prompt and its index. */
function imagesB64(r: ImageRequest): string[] {
  const out: string[] = [];
  for (let i = 0; i < r.n; i++) {
    const h = fnv1a(r.prompt + "#" + i);
    out.push(base64(solidPng(h >>> 16, h >>> 8, h)));
  }
  return out;
}

/** The same images as data URLs (the shape chat answers carry them in). */
export function imageUrls(r: ImageRequest): string[] {
  return imagesB64(r).map((b64) => "data:image/png;base64," + b64);
}

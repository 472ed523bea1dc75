/**
 * The two upstream protocols that make images:
 *   - `openai-images`: POST /images/generations, or /images/edits (JSON, `images: [{image_url}]`)
 *     when references are given; gpt-image models answer `data[].b64_json`.
 *   - `openai-chat`: a chat completion with `modalities: ["image", …]` (OpenRouter style);
 *     images come back in `choices[].message.images[].image_url.url`, usually data URLs.
 * Both decode to the same `UpstreamImages`.
 */
import { GatewayError } from "../../http/gateway_error.ts";
import { isObject, type Obj } from "../json.ts";
import { sanitizeMessage } from "../upstream_errors.ts";
import { reportedCost } from "../usage.ts";
import type { ImageParams } from "./request.ts";

export type ImageOut = { b64: string } | { url: string };

export interface UpstreamImages {
  images: ImageOut[];
  inputTokens?: number;
  /** The part of `inputTokens` that was images (OpenAI's `input_tokens_details`). */
  inputImageTokens?: number;
  outputTokens?: number;
  costUsd?: string;
  /** Echoed to the client when the upstream said them. */
  extras: Record<string, unknown>;
  /** Text the model wrote instead of (or besides) images. */
  text?: string;
}

const int = (v: unknown) => (Number.isInteger(v) && (v as number) >= 0 ? v as number : undefined);

/** gpt-image sizes: the three the Images API takes, chosen by the aspect ratio's shape. */
export function sizeForAspect(aspect: string): string {
  if (aspect === "auto") return "auto";
  const [w, h] = aspect.split(":").map(Number);
  if (!(w > 0 && h > 0) || w === h) return "1024x1024";
  return w > h ? "1536x1024" : "1024x1536";
}

/** "1536x1024" → "3:2" (for upstreams that take an aspect ratio, not a size). */
export function aspectForSize(size: string): string | undefined {
  const m = /^(\d+)x(\d+)$/.exec(size);
  if (!m) return undefined;
  let [a, b] = [Number(m[1]), Number(m[2])];
  const gcd = (x: number, y: number): number => (y === 0 ? x : gcd(y, x % y));
  const g = gcd(a, b);
  a /= g;
  b /= g;
  return `${a}:${b}`;
}

export function imagesApiPath(p: ImageParams): string {
  return p.references.length > 0 ? "/images/edits" : "/images/generations";
}

/**
 * The Images API body. `references` are data URLs or public URLs. `seed` goes only to
 * models that describe it; `response_format` is never sent (gpt-image models answer base64
 * and refuse the field).
 */
export function imagesApiBody(
  p: ImageParams,
  upstreamModel: string,
  n: number,
  references: string[],
  seedSupported: boolean,
): Obj {
  const body: Obj = { model: upstreamModel, prompt: p.prompt };
  if (n !== 1) body.n = n;
  const size = p.size ?? (p.aspectRatio ? sizeForAspect(p.aspectRatio) : undefined);
  if (size) body.size = size;
  if (p.quality) body.quality = p.quality;
  if (p.background) body.background = p.background;
  if (p.outputFormat) body.output_format = p.outputFormat;
  if (p.seed !== undefined && seedSupported) body.seed = p.seed;
  if (references.length > 0) body.images = references.map((u) => ({ image_url: u }));
  return body;
}

/** The chat body for providers that return images inside chat messages. */
export function chatImagesBody(
  p: ImageParams,
  upstreamModel: string,
  n: number,
  references: string[],
  opts: { textOutput: boolean; openrouterUsage: boolean },
): Obj {
  const content = references.length === 0 ? p.prompt : [
    { type: "text", text: p.prompt },
    ...references.map((url) => ({ type: "image_url", image_url: { url } })),
  ];
  const body: Obj = {
    model: upstreamModel,
    messages: [{ role: "user", content }],
    modalities: opts.textOutput ? ["image", "text"] : ["image"],
  };
  const imageConfig: Obj = {};
  const aspect = p.aspectRatio ?? (p.size ? aspectForSize(p.size) : undefined);
  if (aspect && aspect !== "auto") imageConfig.aspect_ratio = aspect;
  if (p.resolution) imageConfig.image_size = p.resolution;
  if (Object.keys(imageConfig).length > 0) body.image_config = imageConfig;
  if (n !== 1) body.n = n;
  if (p.seed !== undefined) body.seed = p.seed;
  if (opts.openrouterUsage) body.usage = { include: true };
  return body;
}

const invalidAnswer = () => new GatewayError(502, "the provider returned an invalid answer");

/** The Images API answer. */
export function decodeImagesApiBody(json: unknown): UpstreamImages {
  if (!isObject(json) || !Array.isArray(json.data)) throw invalidAnswer();
  const images: ImageOut[] = [];
  for (const d of json.data) {
    if (!isObject(d)) throw invalidAnswer();
    if (typeof d.b64_json === "string" && d.b64_json !== "") images.push({ b64: d.b64_json });
    else if (typeof d.url === "string" && d.url !== "") images.push({ url: d.url });
    else throw invalidAnswer();
  }
  const out: UpstreamImages = { images, extras: {} };
  for (const k of ["output_format", "size", "quality", "background"]) {
    if (typeof json[k] === "string") out.extras[k] = json[k];
  }
  readUsage(out, json.usage, "input_tokens", "output_tokens");
  return out;
}

/** A chat completion whose messages carry images. */
export function decodeChatImagesBody(json: unknown): UpstreamImages {
  if (!isObject(json)) throw invalidAnswer();
  if (isObject(json.error)) {
    const m = typeof json.error.message === "string" ? sanitizeMessage(json.error.message) : "";
    throw new GatewayError(502, m || "the provider failed to generate the image");
  }
  if (!Array.isArray(json.choices)) throw invalidAnswer();
  const images: ImageOut[] = [];
  let text = "";
  const take = (part: unknown) => {
    if (!isObject(part)) return;
    const iu = part.image_url;
    const url = typeof iu === "string"
      ? iu
      : isObject(iu) && typeof iu.url === "string"
      ? iu.url
      : "";
    if (url !== "" && (part.type === "image_url" || part.type === undefined)) images.push({ url });
  };
  for (const choice of json.choices) {
    if (!isObject(choice) || !isObject(choice.message)) continue;
    const msg = choice.message;
    if (Array.isArray(msg.images)) msg.images.forEach(take);
    if (Array.isArray(msg.content)) {
      for (const part of msg.content) {
        if (isObject(part) && part.type === "text" && typeof part.text === "string") {
          text += part.text;
        } else take(part);
      }
    } else if (typeof msg.content === "string") text += msg.content;
  }
  const out: UpstreamImages = { images, extras: {}, text: text || undefined };
  readUsage(out, json.usage, "prompt_tokens", "completion_tokens");
  return out;
}

/** The token figures (under the protocol's names) and OpenRouter's `cost` of a usage object. */
function readUsage(out: UpstreamImages, usage: unknown, input: string, output: string): void {
  if (!isObject(usage)) return;
  out.inputTokens = int(usage[input]);
  out.outputTokens = int(usage[output]);
  const details = usage.input_tokens_details;
  if (isObject(details)) out.inputImageTokens = int(details.image_tokens);
  const cost = reportedCost(usage);
  if (cost !== undefined && !cost.startsWith("-")) out.costUsd = cost;
}

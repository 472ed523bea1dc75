/**
 * POST /v1/images/generations, the client side: every field of the spec's table checked,
 * and against the model's described capabilities where the catalogue has them (rule 2).
 * Fields `user`, `style`, `moderation`, `output_compression` and unknown fields are
 * accepted and not passed on (rule 1).
 */
import type { Catalogue, CatalogueModel } from "../../catalogue/catalogue.ts";
import { badRequest, type GatewayError, modelNotFound } from "../../http/gateway_error.ts";

export type ResponseFormat = "b64_json" | "url";

export interface ImageParams {
  prompt: string;
  /** As asked, 1–10. */
  n: number;
  size?: string;
  quality?: string;
  responseFormat: ResponseFormat;
  outputFormat?: string;
  background?: string;
  seed?: number;
  aspectRatio?: string;
  resolution?: string;
  /** Image URLs (http(s), data:, or our own /v1/files links); non-empty turns this into an edit. */
  references: string[];
  /**
   * OpenAI's `stream: true`: the SDK then reads server-sent events. The call is still made
   * whole (spec rule 4); its images come as `image_generation.completed` events.
   */
  stream?: boolean;
}

export interface ImagesCall {
  requestedModel: string;
  model: CatalogueModel;
  params: ImageParams;
  /** Images asked of the upstream: `n`, capped at the model's stated most. */
  nUpstream: number;
}

export const imagesNMax = 10;
export const imageReferencesMax = 16;
/** Prompt length bound: above every provider's own limit (OpenAI: 32 000 characters). */
export const imagePromptCharsMax = 100_000;

const QUALITY_LEVELS = ["low", "medium", "high"];
const RESPONSE_FORMATS: ResponseFormat[] = ["b64_json", "url"];
const OUTPUT_FORMATS = ["png", "jpeg", "webp"];
const BACKGROUNDS = ["transparent", "opaque", "auto"];
/** The spec's resolution values, as examples of the form. */
const RESOLUTIONS = ["512", "1K", "2K", "4K"];

export function paramsInvalid(message: string): GatewayError {
  return badRequest(message, "IMAGE_PARAMS_INVALID", "invalid_request");
}

function listed(values: readonly string[]): string {
  return values.map((v) => JSON.stringify(v)).join(", ");
}

/** A value that must be one of `allowed`, when the model describes them. */
function checkAllowed(
  field: string,
  value: string,
  allowed: readonly string[] | undefined,
  slug: string,
): void {
  if (allowed && !allowed.includes(value)) {
    throw paramsInvalid(
      `${field} ${JSON.stringify(value)} is not supported by ${slug}; allowed values: ${
        listed(allowed)
      }`,
    );
  }
}

function optString(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || v === "") {
    throw paramsInvalid(`${field} must be a non-empty string`);
  }
  return v;
}

export function parseImagesRequest(
  body: Record<string, unknown>,
  catalogue: Catalogue,
): ImagesCall {
  const slug = body.model;
  if (slug === undefined || slug === null || slug === "") {
    throw badRequest(
      "model is required: name an image model (output modality image); there is no default",
      "MODEL_REQUIRED",
    );
  }
  if (typeof slug !== "string") throw badRequest("model must be a string", "MODEL_REQUIRED");
  const prompt = body.prompt;
  if (typeof prompt !== "string" || prompt.trim() === "") {
    throw badRequest("prompt is required: a non-empty text description of the image");
  }
  if (prompt.length > imagePromptCharsMax) {
    throw badRequest(`prompt is longer than ${imagePromptCharsMax} characters`);
  }
  const model = catalogue.resolve(slug);
  if (!model) throw modelNotFound(slug, catalogue.suggest(slug));
  if (!catalogue.outputsImages(model)) {
    throw badRequest(
      `model ${JSON.stringify(slug)} does not generate images; choose a model whose ` +
        "output modalities include image",
      "MODEL_NOT_IMAGE_CAPABLE",
      "invalid_model",
    );
  }
  const caps = model.image;

  let n = 1;
  if (body.n !== undefined && body.n !== null) {
    if (!Number.isInteger(body.n) || (body.n as number) < 1 || (body.n as number) > imagesNMax) {
      throw paramsInvalid(`n must be an integer from 1 to ${imagesNMax}`);
    }
    n = body.n as number;
  }

  const size = optString(body, "size");
  if (size !== undefined && size !== "auto" && !/^[1-9]\d{1,4}x[1-9]\d{1,4}$/.test(size)) {
    throw paramsInvalid(`size must be WIDTHxHEIGHT (e.g. "1024x1024") or "auto"`);
  }

  const quality = optString(body, "quality");
  if (quality !== undefined && QUALITY_LEVELS.includes(quality)) {
    if (caps?.qualities) checkAllowed("quality", quality, caps.qualities, slug);
    else if (caps?.aspect_ratios || caps?.resolutions) {
      // Described, and without quality levels: the model has no such setting (rule 2).
      throw paramsInvalid(
        `quality ${JSON.stringify(quality)} is not supported by ${slug}: it takes no quality ` +
          `level (allowed values: none); leave quality out or set "auto"`,
      );
    }
  }

  const rf = body.response_format ?? "b64_json";
  if (!RESPONSE_FORMATS.includes(rf as ResponseFormat)) {
    throw paramsInvalid(
      `response_format ${JSON.stringify(rf)} is not supported; allowed values: ${
        listed(RESPONSE_FORMATS)
      }`,
    );
  }

  const outputFormat = optString(body, "output_format");
  if (outputFormat !== undefined) {
    checkAllowed("output_format", outputFormat, caps?.output_formats ?? OUTPUT_FORMATS, slug);
  }

  const background = optString(body, "background");
  if (background !== undefined) {
    checkAllowed("background", background, caps?.backgrounds ?? BACKGROUNDS, slug);
  }

  let seed: number | undefined;
  if (body.seed !== undefined && body.seed !== null) {
    if (!Number.isSafeInteger(body.seed)) throw paramsInvalid("seed must be an integer");
    seed = body.seed as number;
  }

  const aspectRatio = optString(body, "aspect_ratio");
  if (aspectRatio !== undefined) {
    if (caps?.aspect_ratios) checkAllowed("aspect_ratio", aspectRatio, caps.aspect_ratios, slug);
    else if (aspectRatio !== "auto" && !/^\d+(\.\d+)?:\d+(\.\d+)?$/.test(aspectRatio)) {
      throw paramsInvalid(`aspect_ratio must be "width:height" (e.g. "16:9")`);
    }
  }

  const resolution = optString(body, "resolution");
  if (resolution !== undefined) {
    if (caps?.resolutions) checkAllowed("resolution", resolution, caps.resolutions, slug);
    else if (caps?.aspect_ratios || caps?.qualities) {
      // Described, and without resolutions: the model is sized another way (rule 2).
      throw paramsInvalid(
        `${slug} takes no resolution; set the image's size with size ("WIDTHxHEIGHT")` +
          (caps.aspect_ratios ? ` or aspect_ratio (${listed(caps.aspect_ratios)})` : ""),
      );
    } else if (!/^[1-9]\d*[Kk]?$/.test(resolution)) {
      // Not described: a value in the field's form goes on and the provider coerces it to
      // its nearest (rule 2); one in no such form has no nearest.
      throw paramsInvalid(
        `resolution must be a size such as ${listed(RESOLUTIONS)}; got ${
          JSON.stringify(resolution)
        }`,
      );
    }
  }

  const references = parseReferences(body.input_references, model, catalogue, slug);

  return {
    requestedModel: slug,
    model,
    params: {
      prompt,
      n,
      size,
      quality,
      responseFormat: rf as ResponseFormat,
      outputFormat,
      background,
      seed,
      aspectRatio,
      resolution,
      references,
      stream: body.stream === true,
    },
    nUpstream: Math.min(n, caps?.n_max ?? imagesNMax),
  };
}

function parseReferences(
  v: unknown,
  model: CatalogueModel,
  catalogue: Catalogue,
  slug: string,
): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string" && x !== "")) {
    throw paramsInvalid("input_references must be an array of image URLs");
  }
  if (v.length === 0) return [];
  const max = Math.min(imageReferencesMax, model.image?.input_references_max ?? imageReferencesMax);
  if (v.length > max) {
    throw paramsInvalid(
      `input_references has ${v.length} items; ${
        max === imageReferencesMax ? "at most" : `${slug} takes at most`
      } ${max}`,
    );
  }
  if (!catalogue.acceptsImages(model) || max === 0) {
    throw paramsInvalid(`${slug} does not take input images; leave input_references empty`);
  }
  for (const u of v as string[]) {
    if (!/^(https?:\/\/|data:image\/)/i.test(u)) {
      throw paramsInvalid(
        "each input_references item must be an http(s) URL or a data:image/… URL",
      );
    }
  }
  return v as string[];
}

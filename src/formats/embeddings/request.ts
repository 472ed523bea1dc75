/**
 * POST /v1/embeddings, the client side: validation of the spec's fields, the token count the
 * gateway bills by when the provider reports none, and the upstream body (every field the
 * client sent passes on unchanged, except `model`).
 */
import type { Catalogue, CatalogueModel } from "../../catalogue/catalogue.ts";
import { estimateTokens } from "../../billing/count.ts";
import { badRequest, GatewayError, modelNotFound } from "../../http/gateway_error.ts";
import { isObject } from "../json.ts";

export type EncodingFormat = "float" | "base64";

export interface EmbeddingsCall {
  /** The slug as sent (echoed in the response). */
  requestedModel: string;
  model: CatalogueModel;
  /** Number of input items = number of vectors expected back. */
  items: number;
  /** Tokens counted by the gateway: ~4 characters per token of text, token arrays by length. */
  countedTokens: number;
  /** Images inside multimodal inputs (billed at the model's `image` price). */
  images: number;
  encoding: EncodingFormat;
  body: Record<string, unknown>;
}

/** Most input items per request: OpenAI's own limit, and a bound on the work one call makes. */
export const embeddingItemsMax = 2048;

export function invalid(message: string): GatewayError {
  return badRequest(message);
}

export function parseEmbeddingsRequest(
  body: Record<string, unknown>,
  catalogue: Catalogue,
): EmbeddingsCall {
  const slug = body.model;
  if (slug === undefined || slug === null || slug === "") {
    throw badRequest(
      "model is required: name an embedding model from GET /v1/embeddings/models",
      "MODEL_REQUIRED",
    );
  }
  if (typeof slug !== "string") throw invalid("model must be a string");
  const model = catalogue.resolve(slug);
  if (!model) throw modelNotFound(slug, catalogue.suggest(slug), "GET /v1/embeddings/models");
  if (!catalogue.isEmbedding(model)) {
    throw badRequest(
      `model ${JSON.stringify(slug)} does not support embeddings; ` +
        "choose one from GET /v1/embeddings/models",
      "MODEL_NOT_EMBEDDING_CAPABLE",
      "invalid_model",
    );
  }
  if (body.stream === true) throw invalid("embeddings do not stream; leave stream unset");

  const { items, countedTokens, images } = countInput(body.input);
  checkDocumentContext(body.input, model.context_length, slug);
  if (images > 0 && !catalogue.acceptsImages(model)) {
    throw invalid(`model ${JSON.stringify(slug)} accepts text only; the input contains images`);
  }

  const enc = body.encoding_format ?? "float";
  if (enc !== "float" && enc !== "base64") {
    throw invalid(`encoding_format must be "float" or "base64", got ${JSON.stringify(enc)}`);
  }

  const out: Record<string, unknown> = { ...body };
  if (body.dimensions !== undefined && body.dimensions !== null) {
    const d = body.dimensions;
    if (!Number.isInteger(d) || (d as number) < 1) {
      throw invalid("dimensions must be a positive integer");
    }
    if (model.reducible_dimensions !== true) {
      if (d !== model.dimensions) {
        throw invalid(
          `model ${JSON.stringify(slug)} does not support reduced dimensions` +
            (model.dimensions ? `; its vectors have ${model.dimensions} numbers` : ""),
        );
      }
      delete out.dimensions; // the native size: nothing to ask the provider for
    } else if (model.dimension_options && !model.dimension_options.includes(d as number)) {
      throw invalid(
        `model ${JSON.stringify(slug)} makes vectors of ${
          model.dimension_options.join(", ")
        } numbers; dimensions must be one of them`,
      );
    } else if (
      !model.dimension_options && model.dimensions !== undefined && (d as number) > model.dimensions
    ) {
      throw invalid(`dimensions must be at most ${model.dimensions} for this model`);
    }
  }
  if (body.user !== undefined && typeof body.user !== "string") {
    throw invalid("user must be a string");
  }
  return {
    requestedModel: slug,
    model,
    items,
    countedTokens,
    images,
    encoding: enc,
    body: out,
  };
}

/**
 * Spec limit: each document fits the model's context. Token-id documents are counted
 * exactly; text is left to the provider, which refuses what is over (a count here would be an
 * estimate, and refusing a document that fits is worse than the provider's own 400).
 */
function checkDocumentContext(input: unknown, context: number, slug: string): void {
  if (!(context > 0) || !Array.isArray(input)) return;
  const docs = isTokenArray(input) ? [input] : input.every(isTokenArray) ? input : [];
  docs.forEach((doc, i) => {
    if (doc.length > context) {
      throw invalid(
        `${isTokenArray(input) ? "input" : `input[${i}]`} has ${doc.length} tokens; ` +
          `${slug} takes at most ${context} per document`,
      );
    }
  });
}

const isTokenArray = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x) && x >= 0);

/**
 * The five input forms: a string, an array of strings, a token array, an array of token
 * arrays, or an array of multimodal objects (one object also counts as one item).
 */
export function countInput(
  input: unknown,
): { items: number; countedTokens: number; images: number } {
  const form = "input must be a string, an array of strings, an array of token ids, " +
    "an array of token arrays, or an array of multimodal objects";
  if (input === undefined || input === null) throw invalid("input is required");
  // Every provider refuses an empty text (OpenAI: "'$.input' is invalid"): a 400 here, in the
  // gateway's words, before anything is held.
  if (input === "") throw invalid("input must not be an empty string");
  if (typeof input === "string") {
    return { items: 1, countedTokens: estimateTokens(input), images: 0 };
  }
  if (isObject(input)) return { items: 1, ...countObject(input) };
  if (!Array.isArray(input)) throw invalid(form);
  if (input.length === 0) throw invalid("input must not be empty");
  if (isTokenArray(input)) return { items: 1, countedTokens: input.length, images: 0 };
  if (input.length > embeddingItemsMax) {
    throw invalid(`input has ${input.length} items; at most ${embeddingItemsMax} per request`);
  }
  if (input.every((x) => typeof x === "string")) {
    const empty = input.indexOf("");
    if (empty >= 0) throw invalid(`input[${empty}] must not be an empty string`);
    let t = 0;
    for (const s of input as string[]) t += estimateTokens(s);
    return { items: input.length, countedTokens: t, images: 0 };
  }
  if (input.every(isTokenArray)) {
    let t = 0;
    for (const a of input as number[][]) t += a.length;
    return { items: input.length, countedTokens: t, images: 0 };
  }
  if (input.every(isObject)) {
    let t = 0;
    let images = 0;
    for (const o of input as Record<string, unknown>[]) {
      const c = countObject(o);
      t += c.countedTokens;
      images += c.images;
    }
    return { items: input.length, countedTokens: t, images };
  }
  throw invalid(form + " (all items of one kind)");
}

const IMAGE_KEYS = new Set(["image", "image_url", "image_base64"]);

/** Text (~4 chars per token) and images inside one multimodal object, however it nests. */
function countObject(o: unknown, depth = 0): { countedTokens: number; images: number } {
  let countedTokens = 0;
  let images = 0;
  if (depth > 16) return { countedTokens, images };
  if (Array.isArray(o)) {
    for (const x of o) {
      const c = countObject(x, depth + 1);
      countedTokens += c.countedTokens;
      images += c.images;
    }
  } else if (isObject(o)) {
    if (o.type === "image_url" || o.type === "image" || o.type === "image_base64") images++;
    for (const [k, v] of Object.entries(o)) {
      if (k === "text" && typeof v === "string") countedTokens += estimateTokens(v);
      else if (IMAGE_KEYS.has(k) && o.type === undefined && v) images++;
      else if (typeof v === "object" && v !== null) {
        const c = countObject(v, depth + 1);
        countedTokens += c.countedTokens;
        images += c.images;
      }
    }
  }
  return { countedTokens, images };
}

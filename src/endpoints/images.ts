/**
 * POST /v1/images/generations: auth → limit → validate (fields and the model's described
 * capabilities) → hold the estimate (402 with `currentBalance`) → references resolved →
 * upstream (`openai-images`, or images inside `openai-chat` messages; failover) → settle the
 * actual cost once (0 when nothing came back) → store each image in url mode (falling back
 * to b64_json for any that cannot be stored) → the image result.
 */
import { nanoToRub } from "../billing/money.ts";
import { readJsonBody } from "../http/body.ts";
import { renderError } from "../http/envelopes.ts";
import {
  badRequest,
  GatewayError,
  isGatewayError,
  noProvider,
  timeoutAsProviderError,
} from "../http/gateway_error.ts";
import { admit } from "../pipeline/limit.ts";
import type { AppContext } from "../pipeline/context.ts";
import { pricesFor } from "../pipeline/pipeline.ts";
import { reserve } from "../pipeline/quota.ts";
import type { Protocol } from "../providers/provider.ts";
import { candidatesFor } from "../providers/routing.ts";
import {
  checkUrlSyntax,
  FetchFailedError,
  isObviouslyPrivate,
  safeFetch,
  UnsafeUrlError,
} from "../lib/safe_fetch.ts";
import { loadFile, saveFile } from "../blobs/mod.ts";
import {
  type ImageParams,
  type ImagesCall,
  parseImagesRequest,
} from "../formats/images/request.ts";
import { imageCost, imageHold } from "../formats/images/cost.ts";
import {
  chatImagesBody,
  decodeChatImagesBody,
  decodeImagesApiBody,
  type ImageOut,
  imagesApiBody,
  imagesApiPath,
  type UpstreamImages,
} from "../formats/images/upstream.ts";
import { parseDataUrl, sniffImageType, toDataUrl } from "../formats/images/mime.ts";
import { decodeEmbeddingsError } from "../formats/embeddings/errors.ts";
import { blobsOf, callCandidates, Closer } from "./mod.ts";
import { fileUrl, ownBases, ownFileId, publicBase } from "./files.ts";
import { generationHeaders } from "../http/generation_headers.ts";

/** The qualities whose token counts the cost table knows. */
const QUALITIES = new Set(["low", "medium", "high"]);

/** One reference image at most (OpenAI's limit for an image input is 20 MB of data URL). */
const referenceBytesMax = 20 * 1024 * 1024;
/** All references of one request together. */
const referencesBytesMax = 64 * 1024 * 1024;
/** Fetching one reference, or one image a provider returned as a link. */
const imageFetchMs = 30_000;
/** One generated image fetched from a provider's link. */
const generatedImageBytesMax = 64 * 1024 * 1024;

/**
 * TESTS ONLY: hosts that reference fetching may reach although they are not public (the
 * local mock). Keyed by the app context; production code never sets it.
 */
const testAllowHosts = new WeakMap<object, string[]>();
export function allowReferenceHostsForTests(app: AppContext, hosts: string[]): void {
  testAllowHosts.set(app, hosts);
}

interface Generated {
  up: UpstreamImages;
  images: { bytes: Uint8Array; type: string }[];
}

export async function handleImages(req: Request, app: AppContext): Promise<Response> {
  const caller = await admit(req, app);
  const body = await readJsonBody(req, app.cfg.BODY_MAX_BYTES);
  const call = parseImagesRequest(body, app.catalogue);
  const p = call.params;
  const textOutput = call.model.architecture.output_modalities.includes("text");
  // The Images API makes pictures only; models that also write text speak chat.
  const allowed: Protocol[] = textOutput ? ["openai-chat"] : ["openai-images", "openai-chat"];
  const candidates = candidatesFor(app.providers, call.model.id, allowed, app.breakers);
  if (candidates.length === 0) throw noProvider(call.model.id, app.providers.length === 0);

  // References that can be refused without a DNS look-up are refused before the hold, so
  // a client short of balance gets the 400 it must fix, not a 402.
  const bases = ownBases(app, req);
  for (const [i, ref] of call.params.references.entries()) {
    if (!/^https?:/i.test(ref) || bases.some((b) => ref.startsWith(fileUrl(b, "")))) continue;
    let url: URL;
    try {
      url = checkUrlSyntax(ref);
    } catch (e) {
      throw referenceInvalid(i, (e as Error).message);
    }
    if (isObviouslyPrivate(url, testAllowHosts.get(app))) {
      throw referenceInvalid(i, `host ${url.hostname} is not public`);
    }
  }

  let amount = 0n;
  for (const c of candidates) {
    const h = imageHold(
      call.model,
      pricesFor(c, call.model, app.catalogue),
      p,
      call.nUpstream,
      app.rates,
    );
    if (h > amount) amount = h;
  }
  // The spec's images 402 names the balance free for the call (`currentBalance`).
  const hold = await reserve(app, caller, {
    endpoint: "images",
    model: call.model.id,
    stream: false,
    amount,
    withBalance: true,
  });

  const closer = new Closer(app, hold);
  const headers = {
    "content-type": "application/json",
    ...generationHeaders(hold.generationId),
  };
  try {
    const needInline = candidates.some((c) => c.protocol === "openai-images");
    const refs = await resolveReferences(app, req, call, needInline);
    const seedSupported = call.model.image?.seed === true;
    const result = await callCandidates<Generated>(app, candidates, req, {
      path: (c) => (c.protocol === "openai-images" ? imagesApiPath(p) : "/chat/completions"),
      body: (c) =>
        JSON.stringify(
          c.protocol === "openai-images"
            ? imagesApiBody(p, c.upstreamModel, call.nUpstream, refs.inline, seedSupported)
            : chatImagesBody(p, c.upstreamModel, call.nUpstream, refs.chat, {
              textOutput,
              openrouterUsage: !!c.provider.quirks.openrouterUsage,
            }),
        ),
      timeoutMs: (c) => c.provider.timeouts.imagesMs,
      decodeError: decodeImagesError,
      read: async (json, c) => {
        const up = c.protocol === "openai-images"
          ? decodeImagesApiBody(json)
          : decodeChatImagesBody(json);
        const images = await materialize(up.images, req.signal);
        if (images.length === 0) {
          throw new GatewayError(
            502,
            up.text
              ? `the provider returned no image; it said: ${up.text.slice(0, 300)}`
              : "the provider returned no image",
          );
        }
        return { up, images };
      },
    });
    if (!result.ok) {
      closer.fail(result.error);
      throw result.error;
    }
    const { up, images } = result.value;
    const c = result.candidate;
    // The quality and size the provider says it made are what it bills (asked for none, or
    // `auto`, it picks them).
    const made = up.extras.quality;
    const madeSize = up.extras.size;
    const billed = {
      ...p,
      ...(typeof made === "string" && QUALITIES.has(made) ? { quality: made } : {}),
      ...(typeof madeSize === "string" && /^\d+x\d+$/.test(madeSize) ? { size: madeSize } : {}),
    };
    const bill = imageCost(call.model, pricesFor(c, call.model, app.catalogue), billed, {
      images: images.length,
      inputTokens: up.inputTokens,
      inputImageTokens: up.inputImageTokens,
      outputTokens: up.outputTokens,
      costUsd: up.costUsd,
    }, app.rates);
    closer.close({
      status: "completed",
      cost: bill.cost.nano,
      costDetails: bill.cost.details,
      provider: c.provider.id,
      upstreamModel: c.upstreamModel,
      finishReason: "stop",
      tokens: bill.tokens,
      usageSource: bill.source,
      error: null,
    });

    const base = publicBase(app, req);
    const blobs = blobsOf(app);
    const data = await Promise.all(images.map(async (img) => {
      if (p.responseFormat === "url") {
        try {
          const id = await saveFile(blobs, app.store, caller.accountId, img.bytes, img.type);
          return { url: fileUrl(base, id) };
        } catch (e) {
          app.log.log("warn", "storing an image failed; answering it as b64_json", {
            generation: hold.generationId,
            error: (e as Error)?.message,
          });
        }
      }
      return { b64_json: img.bytes.toBase64() };
    }));

    // The spec's usage always has output_tokens and total_tokens: the provider's figure, else
    // the one billed (0 for a model priced per image); input_tokens only when reported.
    const usage: Record<string, unknown> = {};
    if (up.inputTokens !== undefined) {
      usage.input_tokens = up.inputTokens;
      // The SDKs type input_tokens_details as required beside input_tokens: the reference
      // images' part where the provider said it, the rest the prompt's.
      const image = Math.min(up.inputImageTokens ?? 0, up.inputTokens);
      usage.input_tokens_details = { text_tokens: up.inputTokens - image, image_tokens: image };
    }
    usage.output_tokens = up.outputTokens ?? bill.tokens.output ?? 0;
    usage.total_tokens = (up.inputTokens ?? 0) + (usage.output_tokens as number);
    usage.cost = nanoToRub(bill.cost.nano);
    usage.cost_details = bill.cost.details;
    const created = Math.floor(Date.now() / 1000);
    if (p.stream) return imageEvents(data, created, p, up.extras, usage, headers);
    const out = { created, data, ...up.extras, usage };
    return new Response(JSON.stringify(out), { headers });
  } catch (e) {
    if (!closer.done) {
      closer.fail(isGatewayError(e) ? e : new GatewayError(500, "internal error"));
    }
    // After the hold, errors name the generation too (its history row says what happened).
    if (isGatewayError(e)) {
      return renderError("coded", timeoutAsProviderError(e), {
        ...generationHeaders(hold.generationId),
      });
    }
    throw e;
  }
}

/**
 * The result as OpenAI streams it: one `image_generation.completed` event per image, the
 * usage (with its cost, once) on the last. No partial images: the upstream call is whole.
 * The event describes the image made: the size, quality, background and format the provider
 * says it used (`made`, as the whole answer carries them), else those asked for.
 */
function imageEvents(
  data: ({ url: string } | { b64_json: string })[],
  created: number,
  p: ImageParams,
  made: Record<string, unknown>,
  usage: Record<string, unknown>,
  headers: Record<string, string>,
): Response {
  const text = data.map((image, i) => {
    const event = {
      type: "image_generation.completed",
      ...image,
      created_at: created,
      size: made.size ?? p.size ?? "auto",
      quality: made.quality ?? p.quality ?? "auto",
      background: made.background ?? p.background ?? "auto",
      output_format: made.output_format ?? p.outputFormat ?? "png",
      ...(i === data.length - 1 ? { usage } : {}),
    };
    return `event: image_generation.completed\ndata: ${JSON.stringify(event)}\n\n`;
  }).join("");
  return new Response(text, {
    headers: {
      ...headers,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    },
  });
}

/** Provider errors for images: the embeddings table's mapping (a failure is a 502). */
function decodeImagesError(status: number, body: unknown, retryAfter?: number): GatewayError {
  return decodeEmbeddingsError(status, body, retryAfter);
}

function referenceInvalid(i: number, why: string): GatewayError {
  return badRequest(`input_references[${i}]: ${why}`, "INPUT_REFERENCE_INVALID");
}

/**
 * References in the two forms the protocols want: `inline` (data URLs; the Images API gets
 * the bytes, fetched here with safeFetch) and `chat` (public links passed on as they are,
 * our own links and data URLs inlined). Our own /v1/files links are read from storage.
 */
async function resolveReferences(
  app: AppContext,
  req: Request,
  call: ImagesCall,
  needInline: boolean,
): Promise<{ inline: string[]; chat: string[] }> {
  const refs = call.params.references;
  const inline: string[] = [];
  const chat: string[] = [];
  if (refs.length === 0) return { inline, chat };
  const bases = ownBases(app, req);
  let total = 0;
  const count = (i: number, n: number) => {
    if (n > referenceBytesMax) throw referenceInvalid(i, `larger than ${referenceBytesMax} bytes`);
    total += n;
    if (total > referencesBytesMax) {
      throw referenceInvalid(i, `all references together exceed ${referencesBytesMax} bytes`);
    }
  };
  for (let i = 0; i < refs.length; i++) {
    const ref = refs[i];
    const own = ownFileId(ref, bases);
    if (own !== undefined || bases.some((b) => ref.startsWith(fileUrl(b, "")))) {
      const f = own === undefined ? null : await loadFile(blobsOf(app), app.store, own).catch(
        () => {
          throw new GatewayError(503, "file storage is unavailable; retry shortly", {
            retryAfter: 2,
          });
        },
      );
      if (!f) throw referenceInvalid(i, "no such stored file");
      count(i, f.bytes.byteLength);
      const url = toDataUrl(f.bytes);
      inline.push(url);
      chat.push(url);
      continue;
    }
    if (/^data:/i.test(ref)) {
      const d = parseDataUrl(ref);
      if (!d || !d.type.startsWith("image/")) {
        throw referenceInvalid(i, "a data URL must be data:image/…;base64,…");
      }
      count(i, d.bytes.byteLength);
      inline.push(ref);
      chat.push(ref);
      continue;
    }
    chat.push(ref);
    if (!needInline) continue;
    try {
      const got = await safeFetch(ref, {
        maxBytes: referenceBytesMax,
        timeoutMs: imageFetchMs,
        signal: req.signal,
        accept: "image/*",
        allowHosts: testAllowHosts.get(app),
      });
      count(i, got.bytes.byteLength);
      if (!sniffImageType(got.bytes).startsWith("image/")) {
        throw referenceInvalid(i, "the URL does not point to an image");
      }
      inline.push(toDataUrl(got.bytes));
    } catch (e) {
      if (e instanceof UnsafeUrlError) throw referenceInvalid(i, `refused: ${e.message}`);
      if (e instanceof FetchFailedError) throw referenceInvalid(i, `not fetched: ${e.message}`);
      throw e;
    }
  }
  return { inline, chat };
}

/** The bytes of every returned image; links are fetched (safely), unreadable ones dropped. */
async function materialize(
  images: ImageOut[],
  signal: AbortSignal,
): Promise<{ bytes: Uint8Array; type: string }[]> {
  const out: { bytes: Uint8Array; type: string }[] = [];
  for (const img of images) {
    let bytes: Uint8Array | undefined;
    if ("b64" in img) {
      try {
        bytes = Uint8Array.fromBase64(img.b64.trim());
      } catch { /* dropped */ }
    } else if (/^data:/i.test(img.url)) {
      bytes = parseDataUrl(img.url)?.bytes;
    } else {
      try {
        bytes = (await safeFetch(img.url, {
          maxBytes: generatedImageBytesMax,
          timeoutMs: imageFetchMs,
          signal,
        })).bytes;
      } catch { /* dropped */ }
    }
    if (bytes && bytes.byteLength > 0) out.push({ bytes, type: sniffImageType(bytes) });
  }
  return out;
}

/**
 * POST /v1/embeddings: auth → limit → validate → hold (counted tokens × price) → upstream
 * (`openai-embeddings`, failover) → settle (provider's tokens, else the gateway's count) →
 * the embedding list. Errors in the coded envelope (app.ts renders what is thrown here).
 */
import { computeCost } from "../billing/cost.ts";
import { nanoToRub } from "../billing/money.ts";
import { readJsonBody } from "../http/body.ts";
import { renderError } from "../http/envelopes.ts";
import { GatewayError, noProvider } from "../http/gateway_error.ts";
import { admit } from "../pipeline/limit.ts";
import type { AppContext } from "../pipeline/context.ts";
import { pricesFor } from "../pipeline/pipeline.ts";
import { type Hold, reserve } from "../pipeline/quota.ts";
import { candidatesFor } from "../providers/routing.ts";
import { parseEmbeddingsRequest } from "../formats/embeddings/request.ts";
import {
  decodeEmbeddingsBody,
  type EmbeddingsUsage,
  encodeEmbeddingsResponse,
} from "../formats/embeddings/response.ts";
import { decodeEmbeddingsError } from "../formats/embeddings/errors.ts";
import { callCandidates, Closer } from "./mod.ts";
import { generationHeaders } from "../http/generation_headers.ts";

/**
 * The hold counts each token twice: the gateway's count is ~4 characters per token, and a
 * tokenizer can split finer (digits, non-Latin scripts). The debit is the real figure.
 */
const holdTokenFactor = 2;

export async function handleEmbeddings(req: Request, app: AppContext): Promise<Response> {
  const caller = await admit(req, app);
  const body = await readJsonBody(req, app.cfg.BODY_MAX_BYTES);
  const call = parseEmbeddingsRequest(body, app.catalogue);
  const candidates = candidatesFor(
    app.providers,
    call.model.id,
    ["openai-embeddings"],
    app.breakers,
  );
  if (candidates.length === 0) throw noProvider(call.model.id, app.providers.length === 0);

  let holdAmount = 0n;
  for (const c of candidates) {
    const h = computeCost(
      { input: Math.max(1, call.countedTokens * holdTokenFactor), output: 0 },
      pricesFor(c, call.model, app.catalogue),
      app.rates,
      { images: call.images },
    ).nano;
    if (h > holdAmount) holdAmount = h;
  }
  const hold: Hold = await reserve(app, caller, {
    endpoint: "embeddings",
    model: call.model.id,
    stream: false,
    amount: holdAmount,
  });
  const closer = new Closer(app, hold);
  const headers = {
    "content-type": "application/json",
    ...generationHeaders(hold.generationId),
  };
  try {
    const result = await callCandidates(app, candidates, req, {
      path: () => "/embeddings",
      body: (c) => {
        // `user` goes as sent: the interface specification has it reach the provider unchanged.
        return JSON.stringify({ ...call.body, model: c.upstreamModel });
      },
      // Not streamed: the first byte comes when the whole batch is done, so both budgets apply.
      timeoutMs: (c) => c.provider.timeouts.firstByteMs + c.provider.timeouts.idleMs,
      decodeError: decodeEmbeddingsError,
      read: (json) => decodeEmbeddingsBody(json, call.items),
    });
    if (!result.ok) {
      closer.fail(result.error);
      throw result.error;
    }
    const up = result.value;
    const c = result.candidate;
    const reported = up.promptTokens !== undefined;
    const tokens = up.promptTokens ?? call.countedTokens;
    const cost = computeCost(
      { input: tokens, output: 0, costUsd: up.costUsd },
      pricesFor(c, call.model, app.catalogue),
      app.rates,
      { images: reported ? 0 : call.images },
    );
    const usage: EmbeddingsUsage | undefined = reported
      ? {
        prompt_tokens: tokens,
        total_tokens: tokens,
        cost: nanoToRub(cost.nano),
        cost_details: cost.details,
      }
      : undefined;
    const out = encodeEmbeddingsResponse(up, call.encoding, call.requestedModel, usage);
    // Encoded before settling: an unreadable vector is a provider failure, not a sale.
    closer.close({
      status: "completed",
      cost: cost.nano,
      costDetails: cost.details,
      provider: c.provider.id,
      upstreamModel: c.upstreamModel,
      finishReason: "stop",
      tokens: { input: tokens, output: 0 },
      usageSource: reported ? "upstream" : "counted",
      error: null,
    });
    return new Response(JSON.stringify(out), { headers });
  } catch (e) {
    if (!closer.done) {
      closer.fail(e instanceof GatewayError ? e : new GatewayError(500, "internal error"));
    }
    // After the hold, errors name the generation too (its history row says what happened).
    if (e instanceof GatewayError) {
      return renderError("coded", e, generationHeaders(hold.generationId));
    }
    throw e;
  }
}

/**
 * The text pipeline, top to bottom — the only file that knows the order of the stages:
 *
 *   auth → limit → decode + route → quota (hold) → upstream (fail over before the first
 *   byte) → [decode → meter → encode, fused in one stream stage] → client
 *
 * Stages before the upstream call throw GatewayErrors; this file renders them in the
 * endpoint's envelope. After the upstream answers, failures travel down the stream as
 * `error` events so the meter still settles.
 */
import { stoppingDecoder, StopScanner } from "../formats/stop_sequences.ts";
import {
  clientNamesDecoder,
  withClientToolNames,
  withShortToolNames,
} from "../formats/tool_names.ts";
import { withPairedToolTurns } from "../formats/tool_pairs.ts";
import { DEFAULT_WEB_SEARCHES } from "../events/text_request.ts";
import type { Event } from "../events/event.ts";
import type { TextRequest } from "../events/text_request.ts";
import { type Catalogue, type CatalogueModel, isDynamic } from "../catalogue/catalogue.ts";
import { bodyPromptBound, countPromptTokens } from "../billing/prompt_tokens.ts";
import { estimateHold, type PriceTable } from "../billing/cost.ts";
import { type RawTiers, tieredPrices } from "../billing/tiers.ts";
import { readJsonBody } from "../http/body.ts";
import { MAX_OUTPUT_TOKENS_MIN } from "../formats/responses/request.ts";
import {
  forOlderClaude,
  thinkingBudgetTokensMin,
  withoutThinkingEdits,
} from "../formats/messages/request.ts";
import { renderError, renderRateLimited } from "../http/envelopes.ts";
import {
  badRequest,
  clientClosed,
  GatewayError,
  internalError,
  isGatewayError,
  modelNotFound,
  noProvider,
  retryable,
} from "../http/gateway_error.ts";
import type { ClientFormat, UpstreamCall, UpstreamProtocol } from "../formats/text_format.ts";
import type { EncodeContext } from "../formats/codec.ts";
import { textProtocol } from "../providers/protocols/mod.ts";
import { globMatch, type Protocol, protocolsFor } from "../providers/provider.ts";
import { type Candidate, candidatesFor } from "../providers/routing.ts";
import {
  fitBodyEffort,
  keepBodyReasoning,
  withModelEffort,
  withReasoningKept,
} from "../providers/efforts.ts";
import type { Caller } from "./auth.ts";
import type { AppContext } from "./context.ts";
import { admit } from "./limit.ts";
import { type Hold, reserve, shuttingDown, tryReserve, webSearchAllowance } from "./quota.ts";
import { Meter } from "./meter.ts";
import { lingering, recordOutcome, send } from "./upstream.ts";
import { StreamStage } from "./stream_stage.ts";
import { shutdownCut, streamToClient } from "./respond.ts";
import { chunkReader, type ChunkSource } from "./chunk_reader.ts";
import { peekBytesMax, streamCommitMs } from "../lib/bounds.ts";
import { generationHeaders } from "../http/generation_headers.ts";
import { scopeEndUsers } from "../formats/upstream_user.ts";
import { listedModels, modelChain } from "./fallback_models.ts";
import { CONTEXT_LENGTH_EXCEEDED } from "../formats/upstream_errors.ts";

const TEXT_PROTOCOLS: Protocol[] = ["openai-chat", "anthropic-messages", "openai-responses"];

/** Everything decode + route learned about a call. */
export interface TextCall {
  format: ClientFormat;
  body: Record<string, unknown>;
  /** The slug as the client sent it (aliases included): responses echo it. */
  requestedModel: string;
  model: CatalogueModel;
  request: TextRequest;
  candidates: Candidate[];
  /** The gateway's own count: what a call is billed for when the upstream reports no usage. */
  promptTokens: number;
  /** What the hold assumes: the count, or more where the body carries what it did not model. */
  heldPromptTokens: number;
  /** Stop sequences the model does not take, applied by the gateway (stop_sequences.ts). */
  keptStop?: string[];
  /** The prompt carries audio: held at the model's audio price. */
  audio: boolean;
}

export async function handleText(
  format: ClientFormat,
  req: Request,
  app: AppContext,
): Promise<Response> {
  const startedAt = performance.now();
  let hold: Hold | undefined;
  try {
    const caller = await admit(req, app);
    const body = await readJsonBody(req, app.cfg.BODY_MAX_BYTES);
    const calls = decodeChain(format, body, caller, app);
    hold = await reserveText(calls, caller, app);
    return await runUpstream(calls, hold, req, app, startedAt);
  } catch (e) {
    const err = isGatewayError(e) ? e : unexpected(e, app);
    const headers: HeadersInit = hold ? generationHeaders(hold.generationId) : {};
    if (err.code === "RATE_LIMITED" && err.status === 429) {
      return renderRateLimited(err.retryAfter ?? 1);
    }
    return renderError(format.envelope, format.clientError?.(err) ?? err, headers);
  }
}

/**
 * Below this an answer is too short to be worth limiting a call to; a balance that does not
 * cover this much output is refused (402) as before.
 */
export const OUTPUT_LIMIT_FLOOR_TOKENS = 4096;

/**
 * quota: the hold for a text call. A client that set no output limit is held for the model's
 * whole output cap (hundreds of roubles on some models, for answers that cost kopecks); when
 * the balance does not cover that, the call is limited to the most output it covers —
 * halving, down to OUTPUT_LIMIT_FLOOR_TOKENS — rather than refused, and the upstream is asked
 * for no more than that. At the floor, a hosted search whose count the client left open
 * (Codex declares responses' `web_search` on every call, held for 10 searches) is held, and
 * capped where the upstream takes a cap, for fewer. A limit the client set is kept, and
 * refused when not covered.
 */
async function reserveText(calls: TextCall[], caller: Caller, app: AppContext): Promise<Hold> {
  const call = calls[0];
  // At the tier the estimated prompt falls in, and the time of day now. A chain of fallback
  // models is held for the dearest of them: whichever serves, the hold covers it.
  const now = Date.now();
  const held = calls.map((k) => ({
    call: k,
    prices: k.candidates.map((c) =>
      tieredPrices(
        pricesFor(c, k.model, app.catalogue),
        tiersFor(c, k.model),
        k.heldPromptTokens,
        now,
      )
    ),
    // Codex's cached search (`optional`: no live access) runs on OpenAI's responses API alone;
    // every other upstream is sent the call without it, so no search is held for those.
    searching: k.candidates.map((c) =>
      !k.request.webSearch?.optional || c.protocol === "openai-responses"
    ),
    full: heldOutputTokens(k, app),
  }));
  const allSearches = webSearchAllowance(call.body);
  // Several choices (chat's `n`) each run to the limit: the hold is per choice times n. The
  // other formats have no `n`: one sent there asks for nothing and is not checked.
  const choices = call.format.name === "chat" && typeof call.body.n === "number" && call.body.n > 1
    ? call.body.n
    : 1;
  const g = (output: number, searches = allSearches) => {
    let amount = 0n;
    for (const h of held) {
      const out = Math.min(output, h.full) * choices;
      // Each candidate at its prices and with the searches it would be sent: the dearest.
      h.prices.forEach((p, i) => {
        const s = h.searching[i] ? searches : 0;
        const a = estimateHold(h.call.heldPromptTokens, out, p, app.rates, s, h.call.audio);
        if (a > amount) amount = a;
      });
    }
    return {
      endpoint: call.format.name,
      model: call.model.id,
      stream: call.request.stream,
      amount,
      limitField: call.format.outputLimitField,
    };
  };
  const full = Math.max(...held.map((h) => h.full));
  const limit = (output: number, searches: number, hold: Hold) => {
    for (const h of held) limitOutput(h.call, output, h.full, searches, allSearches);
    return hold;
  };
  if (call.request.maxTokens !== undefined || full <= OUTPUT_LIMIT_FLOOR_TOKENS) {
    return reserve(app, caller, g(full));
  }
  // Output per choice: the cap, halved while above the floor, then the floor itself.
  const steps: [output: number, searches: number][] = [];
  for (let o = full; o > OUTPUT_LIMIT_FLOOR_TOKENS; o = Math.floor(o / 2)) {
    steps.push([o, allSearches]);
  }
  steps.push([OUTPUT_LIMIT_FLOOR_TOKENS, allSearches]);
  if (call.request.webSearch && allSearches === DEFAULT_WEB_SEARCHES) {
    for (const s of [3, 1]) if (s < allSearches) steps.push([OUTPUT_LIMIT_FLOOR_TOKENS, s]);
  }
  for (const [output, searches] of steps.slice(0, -1)) {
    const hold = await tryReserve(app, caller, g(output, searches));
    if (hold) return limit(output, searches, hold);
  }
  // The smallest worth trying; its 402 names the smallest hold.
  const [output, searches] = steps[steps.length - 1];
  const floor = { ...g(output, searches), floorOutput: output };
  return limit(output, searches, await reserve(app, caller, floor));
}

/**
 * The call asks the upstream for at most `output` tokens and `searches` searches (where it
 * takes a cap: Anthropic's `max_uses`), when below what it would have asked.
 */
function limitOutput(
  call: TextCall,
  output: number,
  full: number,
  searches: number,
  allSearches: number,
): void {
  if (output < full) {
    call.request.maxTokens = output;
    call.body[call.format.outputLimitField] = output;
  }
  if (searches < allSearches && call.request.webSearch) {
    call.request.webSearch = { ...call.request.webSearch, maxUses: searches };
  }
}

function unexpected(e: unknown, app: AppContext): GatewayError {
  app.log.log("error", "unexpected error in pipeline", {
    error: (e as Error)?.name,
    stack: (e as Error)?.stack?.split("\n").slice(0, 4).join(" | "),
  });
  return internalError();
}

/**
 * The output one choice may run to: the request's cap, else the model's. A transcoded call
 * to a responses upstream raises a smaller cap to that API's least (16), and what the
 * upstream then generates is billed, so where such a candidate may serve, the hold covers
 * that much.
 */
function heldOutputTokens(call: TextCall, app: AppContext): number {
  const cap = call.request.maxTokens ?? app.catalogue.maxOutputTokens(call.model);
  const raised = call.candidates.some((c) =>
    c.protocol === "openai-responses" && c.protocol !== call.format.sameProtocol
  );
  return raised ? Math.max(cap, MAX_OUTPUT_TOKENS_MIN) : cap;
}

/** The model as one that reads files (PDFs), for a request an upstream parses them for. */
function readingFiles(model: CatalogueModel): CatalogueModel {
  const inputs = model.architecture.input_modalities;
  return {
    ...model,
    architecture: { ...model.architecture, input_modalities: [...inputs, "file"] },
  };
}

/**
 * decode + route for a call and its fallback models (chat's `models`, fallback_models.ts): one
 * TextCall per model of the chain, each with its own body. The request's own model must take
 * the request (its refusal is the answer) unless no provider serves it; a listed fallback that
 * cannot take it, or that no provider serves, is left out. A slug the catalogue does not know
 * is a 400 wherever it is listed: a typo there would otherwise go unnoticed until it mattered.
 */
export function decodeChain(
  format: ClientFormat,
  body: Record<string, unknown>,
  caller: Caller,
  app: AppContext,
): TextCall[] {
  // Chat only: the spec has a responses answer name the slug sent as `model`, which a fallback
  // would not be.
  const listed = format.name === "chat" ? listedModels(body) : [];
  // A `model` that is no slug at all is the request's 400, not a cue to take the list's first.
  const malformed = body.model != null && typeof body.model !== "string";
  if (listed.length === 0 || malformed) return [decodeAndRoute(format, body, caller, app)];
  // The chain is the gateway's to run: no upstream is sent the list (OpenRouter would run it
  // again, billing a model the hold may not cover), nor is it a part of the prompt held for.
  delete body.models;
  delete body.route;
  // decode + route edits the body it is given: every model starts from the client's.
  const pristine = structuredClone(body);
  const calls: TextCall[] = [];
  let unserved: GatewayError | undefined;
  for (const [i, slug] of modelChain(body, listed).entries()) {
    const own = i === 0 ? body : structuredClone(pristine);
    own.model = slug;
    let call: TextCall;
    try {
      call = decodeAndRoute(format, own, caller, app);
    } catch (e) {
      if (!isGatewayError(e) || !app.catalogue.resolve(slug)) throw e;
      if (i === 0 && e.status !== 503) throw e;
      unserved ??= e;
      continue;
    }
    // An alias and the slug it names are one model.
    if (!calls.some((k) => k.model.id === call.model.id)) calls.push(call);
  }
  if (calls.length === 0) throw unserved!;
  return calls;
}

/** decode + route: validate, pick the model, map to the internal form, find candidates. */
export function decodeAndRoute(
  format: ClientFormat,
  body: Record<string, unknown>,
  caller: Caller,
  app: AppContext,
): TextCall {
  format.validate(body);
  const requestedModel = typeof body.model === "string" && body.model !== ""
    ? body.model
    : caller.defaultModel;
  if (!requestedModel) {
    throw badRequest("model is required: name a catalogue slug, or set a default model");
  }
  const model = app.catalogue.resolve(requestedModel);
  if (!model) throw modelNotFound(requestedModel, app.catalogue.suggest(requestedModel));
  if (model.kind === "embedding") {
    throw badRequest(
      `model ${JSON.stringify(requestedModel)} is an embedding model; use /v1/embeddings`,
    );
  }
  const makes = model.architecture.output_modalities;
  if (!makes.includes("text")) {
    throw badRequest(
      `model ${JSON.stringify(requestedModel)} does not generate text (it makes ${
        makes.join(", ")
      })` + (makes.includes("image") ? "; use /v1/images/generations" : ""),
    );
  }
  // OpenRouter takes a PDF for any model, parsing it to text for one that reads no files,
  // where a vendor's own API refuses it: a request the model refuses as it is, and would take
  // if it read files, goes to OpenRouter alone. Only a refusal looks further.
  let checked = model;
  const check = (fn: (m: CatalogueModel) => void) => {
    try {
      fn(checked);
    } catch (e) {
      const parsesFiles = checked === model &&
        !model.architecture.input_modalities.includes("file") &&
        candidatesFor(app.providers, model.id, TEXT_PROTOCOLS).some((c) =>
          c.provider.quirks.openrouterUsage
        );
      if (!parsesFiles) throw e;
      checked = readingFiles(model);
      fn(checked);
    }
  };
  check((m) => format.checkModel(body, m));
  if (!takesReasoning(model)) format.dropReasoning?.(body);
  for (const f of format.samplingFields ?? []) {
    if (body[f] != null && !model.supported_parameters.includes(f)) delete body[f];
  }
  const asked = format.toInternal(body, model.id);
  check((m) => format.checkInternal?.(asked, m));
  const fileToParse = checked !== model;
  const clientStop = asked.stop;
  const request = fitToModel(asked, model);
  capBodyOutput(body, model.max_completion_tokens);
  const stopOrOther = format.upstreamsFor(body);
  const need = stopOrOther?.stopSequences && !model.supported_parameters.includes("stop")
    ? undefined
    : stopOrOther;
  const allowed = need
    ? need.protocols
    : [format.sameProtocol, ...TEXT_PROTOCOLS.filter((p) => p !== format.sameProtocol)];
  // Nothing for the model to read (messages or input of empty content alone, no instructions):
  // every upstream refuses that, and a transcoded call would go out with no messages at all.
  // Only a body that needs its own format's upstream may carry what the internal form does not.
  if (
    request.system.length === 0 && request.messages.every((m) => m.parts.length === 0) &&
    allowed.some((p) => p !== format.sameProtocol)
  ) {
    throw badRequest("the request has nothing for the model to read: every message is empty");
  }
  let candidates = candidatesFor(app.providers, model.id, allowed, app.breakers);
  if (need?.ownApi) candidates = candidates.filter((c) => !c.provider.quirks.openrouterUsage);
  if (request.webSearch) candidates = candidates.map((c) => searchVia(c, model.id, allowed));
  if (request.tools?.length && allowed.includes("openai-responses")) {
    candidates = candidates.map((c) => toolsVia(c, model.id));
  }
  if ((allowed.includes("openai-chat") || need?.search) && format.nativeToolsOnly?.(body)) {
    candidates = candidates.map((c) => aggregatorChatVia(c, model.id));
  }
  if (fileToParse) {
    candidates = candidates.filter((c) => c.provider.quirks.openrouterUsage);
    // Where the request's own format rules OpenRouter out, the model's refusal stands.
    if (candidates.length === 0) {
      format.checkModel(body, model);
      format.checkInternal?.(asked, model);
    }
  }
  if (candidates.length === 0) {
    if (need && candidatesFor(app.providers, model.id, TEXT_PROTOCOLS).length > 0) {
      throw badRequest(need.reason);
    }
    throw noProvider(model.id, app.providers.length === 0);
  }
  // The model takes no stop sequences, and the gateway would keep them on a transcoded call;
  // but what needs the client's own format (legacy functions, custom tools, several choices)
  // goes through whole, where nothing reads the answer to stop it.
  const keptStop = clientStop?.length && !request.stop ? clientStop : undefined;
  if (keptStop && need && !need.stopSequences) {
    throw badRequest(
      `stop is not supported by model ${JSON.stringify(requestedModel)} together with what ` +
        `else this request asks for (${need.reason}); leave out stop`,
    );
  }
  const promptTokens = countPromptTokens(request);
  const seen: { audio?: boolean } = {};
  const bound = bodyPromptBound(body, model.context_length, seen);
  return {
    format,
    body,
    requestedModel,
    model,
    request,
    candidates,
    promptTokens,
    heldPromptTokens: Math.max(promptTokens, bound),
    audio: seen.audio === true,
    // A model that takes no stop sequences: a transcoded call has the gateway keep them.
    keptStop,
  };
}

/**
 * How many stop sequences an upstream API takes, where it is fewer than a client may send:
 * OpenAI's chat API 4 (a messages client may send any number), its responses API none.
 */
const STOP_LIMIT: Partial<Record<Protocol, number>> = { "openai-chat": 4, "openai-responses": 0 };

/**
 * A transcoded call's stop sequences for one upstream protocol: those it takes go in the body
 * (so the model stops there itself), and past its limit, or where it refuses one, the gateway
 * keeps them all, as it does for a model that takes none (`keptStop`).
 */
function stopsFor(
  call: TextCall,
  protocol: Protocol,
): { request: TextRequest; keptStop?: string[] } {
  const stop = call.request.stop;
  // Anthropic refuses a stop sequence of whitespace alone ("\n" is common from chat clients):
  // its encoder leaves those out, and the gateway keeps them all.
  if (protocol === "anthropic-messages" && stop?.some((s) => s.trim() === "")) {
    return { request: call.request, keptStop: stop };
  }
  const limit = STOP_LIMIT[protocol];
  if (!stop?.length || limit === undefined || stop.length <= limit) {
    return { request: call.request, keptStop: call.keptStop };
  }
  return {
    request: { ...call.request, stop: limit > 0 ? stop.slice(0, limit) : undefined },
    keptStop: stop,
  };
}

/**
 * A hosted web search for OpenAI's own API goes to its responses API, transcoded: its chat API
 * has no search tool, and takes chat's `web_search_options` on its search-preview models alone
 * (any other model: 400 "Web search options not supported with this model"; those models are
 * chat-only in the providers file, so they stay). OpenRouter's chat API runs a search on any
 * model (its web plugin, or the option as sent). A body that needs the chat format itself
 * (`allowed` says so) keeps it.
 */
function searchVia(c: Candidate, slug: string, allowed: Protocol[]): Candidate {
  if (
    c.protocol !== "openai-chat" || c.provider.quirks.openrouterUsage ||
    !allowed.includes("openai-responses") ||
    !protocolsFor(c.provider, slug).includes("openai-responses")
  ) return c;
  return { ...c, protocol: "openai-responses" };
}

/**
 * A responses call declaring tools only OpenAI's own responses API takes as they are
 * (Codex's `namespace` tools and client-run `tool_search`, on every call) goes to an
 * aggregator's chat API, transcoded: OpenRouter's responses API refuses a namespace tool
 * ("No endpoints found that support the native `namespace` tool type") and lists no tool
 * search. Transcoded, namespaces are flattened and the search is a function, both mapped back.
 */
function aggregatorChatVia(c: Candidate, slug: string): Candidate {
  if (
    c.protocol !== "openai-responses" || !c.provider.quirks.openrouterUsage ||
    !protocolsFor(c.provider, slug).includes("openai-chat")
  ) return c;
  return { ...c, protocol: "openai-chat" };
}

/**
 * A call with tools to a model whose chat API refuses tools beside reasoning goes to the
 * provider's responses API, chat clients' calls included: they would get a 400 there.
 */
function toolsVia(c: Candidate, slug: string): Candidate {
  if (
    c.protocol !== "openai-chat" || !c.provider.responsesForTools.some((p) => globMatch(p, slug)) ||
    !protocolsFor(c.provider, slug).includes("openai-responses")
  ) return c;
  return { ...c, protocol: "openai-responses" };
}

/**
 * What a transcoded request may ask of the model: reasoning settings only where the model
 * takes them (OpenAI answers 400 to `reasoning_effort` on other models), sampling settings
 * only where the model lists them (OpenAI's reasoning models answer 400 to `temperature`,
 * `top_p` and `stop`, which a Claude client may well send), and no more output than the
 * model's stated cap (Claude Code asks 32 000 of every model). Pass-through requests keep the
 * client's own fields, bar reasoning and sampling settings the model does not take (left out of
 * the body before: `dropReasoning`, `samplingFields`); this shapes the internal form only.
 */
/** Internal sampling settings and the catalogue's names for them (`supported_parameters`). */
const SAMPLING_PARAMS: [SamplingField, string][] = [
  ["temperature", "temperature"],
  ["topP", "top_p"],
  ["topK", "top_k"],
  ["stop", "stop"],
  ["frequencyPenalty", "frequency_penalty"],
  ["presencePenalty", "presence_penalty"],
  ["seed", "seed"],
];
type SamplingField =
  | "temperature"
  | "topP"
  | "topK"
  | "stop"
  | "frequencyPenalty"
  | "presencePenalty"
  | "seed";

const takesReasoning = (model: CatalogueModel) =>
  model.supported_parameters.some((p) =>
    p === "reasoning" || p === "include_reasoning" || p === "reasoning_effort"
  );

function fitToModel(req: TextRequest, model: CatalogueModel): TextRequest {
  if (req.reasoning && !takesReasoning(model)) req.reasoning = undefined;
  for (const [field, param] of SAMPLING_PARAMS) {
    if (req[field] !== undefined && !model.supported_parameters.includes(param)) {
      req[field] = undefined;
    }
  }
  const rf = req.responseFormat;
  if (rf?.type === "json_schema" && model.supported_parameters.includes("structured_outputs")) {
    req.responseFormat = { ...rf, constrained: true };
  }
  const cap = model.max_completion_tokens;
  if (cap && req.maxTokens !== undefined && req.maxTokens > cap) req.maxTokens = cap;
  return req;
}

/** Every client format's name for the output limit. */
const OUTPUT_LIMIT_FIELDS = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

/**
 * The body a pass-through sends asks for no more output than the model's stated cap, as the
 * internal form does (`fitToModel`): OpenAI answers 400 to a chat `max_tokens` above it
 * (gpt-4o-mini takes 16 384), which the spec's limit, below the context length, allows.
 */
export function capBodyOutput(body: Record<string, unknown>, cap: number | null | undefined) {
  if (!cap) return;
  let capped = false;
  for (const f of OUTPUT_LIMIT_FIELDS) {
    if (typeof body[f] === "number" && (body[f] as number) > cap) {
      body[f] = cap;
      capped = true;
    }
  }
  // A thinking budget must stay below max_tokens (Anthropic: 400 otherwise), and at 1 024 or
  // more: the budget a client sized for its larger limit shrinks with it, or thinking goes.
  const thinking = body.thinking as { budget_tokens?: unknown } | null | undefined;
  const budget = thinking?.budget_tokens;
  if (!capped || typeof budget !== "number" || budget < cap) return;
  if (cap - 1 >= thinkingBudgetTokensMin) body.thinking = { ...thinking, budget_tokens: cap - 1 };
  else {
    delete body.thinking;
    withoutThinkingEdits(body);
  }
}

export function pricesFor(c: Candidate, model: CatalogueModel, catalogue: Catalogue): PriceTable {
  // A provider's override replaces the prices it names; the catalogue's stand for the rest.
  const own = c.provider.prices[model.id];
  const table = own
    ? { ...catalogue.chargedPrices(model), ...own }
    : catalogue.chargedPrices(model);
  const search = c.provider.webSearchUsd;
  if (search === undefined || !/^[0.]*$/.test(table.web_search ?? "0")) return table;
  return { ...table, web_search: search };
}

/**
 * The prices of the model a router upstream says it picked (OpenRouter names it by its
 * permanent slug, "anthropic/claude-4.5-sonnet-20250929", or dated, "openai/gpt-4o-2024-08-06");
 * undefined when the catalogue has no fixed price for it.
 */
function routedPrices(catalogue: Catalogue, name: string) {
  const m = catalogue.resolve(name) ??
    catalogue.resolve(name.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, ""));
  if (!m || isDynamic(m)) return undefined;
  return { prices: m.pricing, tiers: m.pricing_overrides };
}

/** The catalogue's price tiers, which apply to its prices only, not to a provider's own. */
export function tiersFor(c: Candidate, model: CatalogueModel): RawTiers | undefined {
  return c.provider.prices[model.id] ? undefined : model.pricing_overrides;
}

/** upstream: candidates in order; fail over only before anything reached the client. */
async function runUpstream(
  calls: TextCall[],
  hold: Hold,
  req: Request,
  app: AppContext,
  startedAt: number,
): Promise<Response> {
  const meters: Meter[] = [];
  // Policy `drain`: a whole answer is read to its usage after its client left, for a while
  // (the upstream bills it all the same); a stream's client cancels through its body.
  const drained = !calls[0].request.stream && app.cfg.CANCEL_POLICY === "drain"
    ? lingering(req.signal, app.cfg.DRAIN_DEADLINE_MS)
    : undefined;
  // Shutdown's grace ends it too, as it ends open streams.
  const cut = shutdownCut(drained?.signal ?? req.signal);
  try {
    return await attempt(calls, hold, req, cut.signal, cut, app, startedAt, meters);
  } catch (e) {
    // Whatever threw, a reserved generation is closed: at no cost if nothing settled it yet.
    if (!meters.some((m) => m.settling)) {
      closeAtNoCost(hold, startedAt, app, isGatewayError(e) ? e : internalError(), "failed");
    }
    throw e;
  } finally {
    cut.dispose();
    drained?.dispose();
  }
}

/**
 * `signal` ends the upstream call: the client's, or (policy `drain`, a whole answer) one that
 * ends a while after it, or `ending`, shutdown's when its grace is over.
 */
async function attempt(
  calls: TextCall[],
  hold: Hold,
  req: Request,
  signal: AbortSignal,
  ending: { readonly ended: boolean },
  app: AppContext,
  startedAt: number,
  meters: Meter[],
): Promise<Response> {
  let lastError: GatewayError | undefined;
  /** The last candidate asked: the history names who failed, not only how. */
  let tried: { call: TextCall; c: Candidate } | undefined;
  /**
   * A provider that said it is overloaded (Anthropic's 529): when the others fail too, the
   * answer is that one (503 `overloaded_error`, which Claude clients back off and retry), not
   * a fallback's generic failure.
   */
  let overloaded: { error: GatewayError; by: { call: TextCall; c: Candidate } } | undefined;
  /** A candidate failed on its own (not the gateway's account there): a retry may pass. */
  let transient = false;
  const created = Math.floor(Date.now() / 1000);
  // Each model's providers in turn, then the next fallback model's: a failure that moves on
  // to another provider moves on to another model alike, and a refusal ends the chain.
  const chain = calls.flatMap((call) => call.candidates.map((c) => ({ call, c })));
  /**
   * A model whose context window the prompt overflowed: its other providers are passed over
   * (they serve the same window), and a later model of the chain, maybe with a longer one, is
   * asked, as OpenRouter's fallbacks do. Any other refusal ends the chain.
   */
  let overflowed: TextCall | undefined;
  const overflows = (e: GatewayError, call: TextCall) =>
    e.code === CONTEXT_LENGTH_EXCEEDED && call !== calls[calls.length - 1];
  for (const { call, c } of chain) {
    if (call === overflowed) continue;
    tried = { call, c };
    // The answer names the model that served it.
    const ctx: EncodeContext = {
      id: hold.generationId,
      model: call.requestedModel,
      created,
      request: call.request,
      clientBody: call.body,
      promptTokens: call.promptTokens,
    };
    const proto = textProtocol(c.protocol);
    // Stop sequences the gateway keeps need the answer decoded: such a call is transcoded even
    // to its own format, where the body would carry what the model refuses. (OpenRouter drops
    // what a model does not take, and its own request extensions would not survive a
    // transcoding: its calls pass through.)
    const pass = c.protocol === call.format.sameProtocol &&
      (!call.keptStop || !!c.provider.quirks.openrouterUsage);
    const stops = pass
      ? { request: call.request, keptStop: undefined }
      : stopsFor(call, c.protocol);
    // Upstreams take tool names of [a-zA-Z0-9_-], 64 characters at most (see tool_names.ts),
    // and calls paired with their results (tool_pairs.ts).
    const renamed = !pass ? withShortToolNames(withPairedToolTurns(stops.request)) : undefined;
    const upstreamBody = pass
      ? call.format.passThroughRequest(call.body, c.upstreamModel)
      : proto.fromInternal(
        withModelEffort(
          c.provider.quirks.openrouterUsage
            ? withReasoningKept(renamed?.request ?? stops.request, call.model.reasoning)
            : renamed?.request ?? stops.request,
          call.model.id,
          c.provider.reasoningEfforts,
        ),
        c.upstreamModel,
        c.provider,
        app.catalogue.maxOutputTokens(call.model),
      );
    if (pass && c.provider.quirks.openrouterUsage) {
      keepBodyReasoning(upstreamBody, call.model.reasoning);
    }
    if (pass && c.protocol === "openai-responses" && call.request.webSearch) {
      capSearches(upstreamBody, call.request.webSearch.maxUses);
    }
    if (pass && c.protocol === "anthropic-messages") {
      forOlderClaude(upstreamBody, {
        adaptive: c.provider.adaptiveThinking.some((g) => globMatch(g, call.model.id)),
        effort: c.provider.effortBeforeAdaptive.some((g) => globMatch(g, call.model.id)),
      });
    }
    proto.finishBody?.(upstreamBody, c.provider);
    // After the dialect's own translation, which may name an effort (a chat client's
    // `reasoning.max_tokens` is one for OpenAI's chat API).
    if (pass && c.provider.reasoningEfforts.length > 0) {
      fitBodyEffort(upstreamBody, call.model.id, c.provider.reasoningEfforts);
    }
    scopeEndUsers(upstreamBody, c.protocol === "anthropic-messages", hold.accountId);
    const sent = { body: upstreamBody, headers: proto.headers(c.provider, req.headers) };
    const sendCall = (u: UpstreamCall) =>
      send(
        c,
        proto.url(c.provider),
        u.headers,
        JSON.stringify(u.body),
        call.request.stream ? c.provider.timeouts.firstByteMs : c.provider.timeouts.responseMs,
        signal,
        app.log,
      );
    let outcome = await sendCall(sent);
    // A refusal the gateway can mend (encrypted reasoning of another organisation's in the
    // history, left out; a window behind a beta flag, asked for): asked once more.
    const mended = outcome.ok || !proto.mendRefused
      ? undefined
      : proto.mendRefused(outcome, sent, { provider: c.provider, model: call.model.id });
    if (mended) {
      const again = await sendCall(mended);
      if (again.ok || again.status === 499 || !mended.firstStands?.(again)) outcome = again;
    }
    if (!outcome.ok && ending.ended && !req.signal.aborted) {
      lastError = shuttingDown();
      break;
    }
    if (!outcome.ok) {
      lastError = outcome.error ??
        proto.decodeError(outcome.status, outcome.body, outcome.retryAfter);
      transient ||= !lastError.final;
      if (lastError.status === 503) overloaded ??= { error: lastError, by: tried };
      if (outcome.status === 499) break;
      // A drained call's client is gone: nobody waits for another candidate's answer.
      if (req.signal.aborted) {
        lastError = clientClosed();
        break;
      }
      // Only the provider's own failures (connection, timeout, 429, 5xx) count against it: a
      // request it refused (400, 403, 413, …) says nothing of its health, and one caller's bad
      // requests must not reroute every account's calls.
      if (!outcome.retry) {
        if (!overflows(lastError, call)) break;
        overflowed = call;
        continue;
      }
      recordOutcome(app.breakers, c, false);
      continue;
    }
    const meter = new Meter({
      generationId: hold.generationId,
      prices: pricesFor(c, call.model, app.catalogue),
      tiers: tiersFor(c, call.model),
      promptTokensCounted: call.promptTokens,
      startedAt,
      routedPrices: isDynamic(call.model) && !c.provider.prices[call.model.id]
        ? (name) => routedPrices(app.catalogue, name)
        : undefined,
    }, app);
    meters.push(meter);
    meter.provider = c.provider.id;
    meter.upstreamModel = c.upstreamModel;
    // The generation opened as the first model's: a fallback's answer is recorded as its own.
    if (call !== calls[0]) meter.model = call.model.id;
    app.quota.watch?.(hold.generationId, () => meter.checkpoint());
    const headers = generationHeaders(hold.generationId);
    const answer: Answer = {
      call,
      proto,
      pass,
      response: outcome.response,
      abort: outcome.abort,
      meter,
      ctx,
      toolNames: renamed?.names,
      keptStop: stops.keptStop,
    };
    const result = call.request.stream
      ? await startStream(answer, c, app, req.signal, ending)
      : await wholeBody(answer, signal, req.signal, ending);
    if ("retry" in result) {
      if (ending.ended && !req.signal.aborted) {
        lastError = shuttingDown();
        break;
      }
      lastError = result.error;
      transient ||= !lastError.final;
      if (lastError.status !== 499) {
        app.log.log("warn", "upstream failed before its answer began", {
          provider: c.provider.id,
          upstream_model: c.upstreamModel,
          status: lastError.status,
          type: lastError.type,
        });
      }
      if (lastError.status === 503) overloaded ??= { error: lastError, by: tried };
      if (result.error.status === 499) return cancelled(hold);
      if (req.signal.aborted) {
        lastError = clientClosed();
        break;
      }
      if (!result.retry) {
        if (!overflows(lastError, call)) break;
        overflowed = call;
        continue;
      }
      recordOutcome(app.breakers, c, false);
      continue;
    }
    recordOutcome(app.breakers, c, true);
    return result.stream
      ? new Response(result.stream, {
        headers: {
          ...headers,
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
        },
      })
      : new Response(JSON.stringify(result.json), {
        headers: { ...headers, "content-type": "application/json" },
      });
  }
  // Nothing was produced: close the generation at no cost, then answer with the last error.
  // The history names the provider whose failure the client is told of.
  const told = overloaded && lastError?.status === 502 ? overloaded : undefined;
  const last = told?.error ?? lastError ??
    noProvider(calls[0].model.id, app.providers.length === 0);
  // The gateway's account at the last candidate forbids no retry when another failed otherwise.
  const error = last.final && transient ? retryable(last) : last;
  // A fallback model's provider is recorded with that model: never one model beside another's
  // provider.
  const named = told?.by ?? tried;
  meters.push(
    closeAtNoCost(
      hold,
      startedAt,
      app,
      error,
      error.status === 499 ? "cancelled" : "failed",
      named?.c,
      named && named.call !== calls[0] ? named.call.model.id : undefined,
    ),
  );
  throw error;
}

/**
 * A responses body passed through with a hosted search: the hold covers `held` searches (10
 * for a tool that cannot name a count, fewer at the output floor), and the responses API runs
 * as many as the model likes unless `max_tool_calls` says otherwise (function tools do not
 * count against it; the transcoded body is capped the same way). A smaller cap of the
 * client's own is kept.
 */
function capSearches(body: Record<string, unknown>, held: number): void {
  const own = body.max_tool_calls;
  if (typeof own !== "number" || own > held) body.max_tool_calls = held;
}

/** Closes a generation that produced nothing: settled at no cost, with the error that ended it. */
function closeAtNoCost(
  hold: Hold,
  startedAt: number,
  app: AppContext,
  error: GatewayError,
  status: "failed" | "cancelled",
  tried?: Candidate,
  model?: string,
): Meter {
  const m = new Meter(
    { generationId: hold.generationId, prices: {}, promptTokensCounted: 0, startedAt },
    app,
  );
  m.provider = tried?.provider.id ?? null;
  m.upstreamModel = tried?.upstreamModel ?? null;
  if (model) m.model = model;
  m.observe({ type: "error", error });
  m.settle(status);
  return m;
}

/** The client left during an attempt; its meter has settled. Nobody reads this answer. */
function cancelled(hold: Hold): Response {
  return new Response(null, { status: 499, headers: generationHeaders(hold.generationId) });
}

type Attempt =
  | { stream: ReadableStream<Uint8Array> }
  | { stream?: undefined; json: unknown }
  | { retry: boolean; error: GatewayError };

/** An upstream's answer to one attempt, and what turning it into the client's needs. */
interface Answer {
  call: TextCall;
  proto: UpstreamProtocol;
  /** Same protocol as the client's: its bytes are passed through. */
  pass: boolean;
  response: Response;
  abort: AbortController;
  meter: Meter;
  ctx: EncodeContext;
  /** Short tool names the upstream was sent, to the client's (tool_names.ts). */
  toolNames?: Map<string, string>;
  /** Stop sequences the gateway applies to this answer (stop_sequences.ts). */
  keptStop?: string[];
}

/**
 * Streaming: peek until the first meaningful upstream event before committing the status
 * line — an upstream that fails at once is failed over like a 5xx (style §7).
 */
async function startStream(
  answer: Answer,
  c: Candidate,
  app: AppContext,
  clientSignal: AbortSignal,
  ending: { readonly ended: boolean },
): Promise<Attempt> {
  const { call, proto, pass, response, abort, meter, ctx, toolNames } = answer;
  const stage = new StreamStage({
    decoder: stoppingDecoder(clientNamesDecoder(proto.createDecoder(), toolNames), answer.keptStop),
    encoder: pass ? undefined : call.format.createEncoder(ctx),
    pass: pass ? call.format.createPassThrough(ctx) : undefined,
  }, meter);
  const upstream = chunkReader(response.body!);
  let initial = "";
  // Until the body says anything the first-byte deadline still runs (headers alone are no
  // answer); once it has spoken, the first token may take `firstTokenMs` (a model thinking).
  // A client that leaves cancels the upstream.
  let timedOut = false;
  let committed = false;
  const expire = () => {
    timedOut = true;
    // Once the status line is out, the client learns of it in the stream.
    if (committed) {
      stage.fail(new GatewayError(504, `provider ${c.provider.id} sent no token in time`));
    }
    upstream.cancel().catch(() => {});
  };
  let deadline = setTimeout(expire, c.provider.timeouts.firstByteMs);
  let spoken = false;
  // Counted from the upstream's headers: OpenAI's chat API may send nothing more while a model
  // reasons, and a client that leaves then must still be noticed.
  const commitDue = Promise.withResolvers<"commit">();
  const commit = setTimeout(() => commitDue.resolve("commit"), streamCommitMs);
  /** A read the peek gave up waiting for: the client's stream takes it over. */
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  const onChunk = () => {
    if (spoken) return;
    spoken = true;
    clearTimeout(deadline);
    deadline = setTimeout(expire, c.provider.timeouts.firstTokenMs);
  };
  const read = () =>
    upstream.read().then((r) => {
      if (!r.done) onChunk();
      return r;
    });
  const onClientAbort = () => upstream.cancel().catch(() => {});
  clientSignal.addEventListener("abort", onClientAbort, { once: true });
  try {
    for (let held = 0; held <= peekBytesMax && stage.first === undefined;) {
      pending = read();
      let r: ReadableStreamReadResult<Uint8Array> | "commit";
      try {
        r = await Promise.race([pending, commitDue.promise]);
      } catch {
        r = { done: true, value: undefined };
      }
      if (r === "commit") {
        committed = true;
        break;
      }
      pending = undefined;
      if (r.done) break;
      held += r.value.length;
      try {
        initial += stage.feed(r.value);
      } catch {
        stage.fail(new GatewayError(502, "could not read the provider's answer"));
        break;
      }
    }
  } finally {
    clearTimeout(commit);
    clientSignal.removeEventListener("abort", onClientAbort);
    if (!committed) clearTimeout(deadline);
  }
  // Shutdown's grace ran out during the peek: its one sweep of the open streams came before
  // this one was among them, and a stream committed now would run on past the grace (for as
  // long as the model takes), holding the process open.
  if (ending.ended && !clientSignal.aborted) {
    if (committed) clearTimeout(deadline);
    abort.abort();
    upstream.cancel().catch(() => {});
    return { retry: false, error: shuttingDown() };
  }
  const first: Event | undefined = stage.first;
  // A client that left during the peek has cut the upstream, even where the read it was
  // waiting on still brought the first token: nobody is there to answer.
  if (!committed && (first === undefined || first.type === "error" || clientSignal.aborted)) {
    abort.abort();
    upstream.cancel().catch(() => {});
    if (clientSignal.aborted) {
      meter.settle("cancelled");
      return { retry: false, error: clientClosed() };
    }
    const error = first?.type === "error"
      ? first.error
      : timedOut
      ? new GatewayError(504, `provider ${c.provider.id} sent no token in time`, {
        metadata: { provider_name: c.provider.id },
      })
      : new GatewayError(502, `provider ${c.provider.id} sent an empty stream`);
    return { retry: error.status === 429 || error.status >= 500, error };
  }
  // Committed before the first token: the deadline runs on until it comes (or the stream
  // ends), and the read the peek was waiting on is the client stream's first.
  const reader: ChunkSource = committed
    ? {
      read() {
        if (stage.first !== undefined) clearTimeout(deadline);
        const r = pending ?? read();
        pending = undefined;
        return r.then((res) => {
          if (res.done) clearTimeout(deadline);
          return res;
        }, (e) => {
          clearTimeout(deadline);
          throw e;
        });
      },
      cancel() {
        clearTimeout(deadline);
        return upstream.cancel();
      },
    }
    : upstream;
  return {
    stream: streamToClient({
      reader,
      stage,
      meter,
      abort,
      initial,
      idleMs: c.provider.timeouts.idleMs,
      policy: app.cfg.CANCEL_POLICY,
      drainMs: app.cfg.DRAIN_DEADLINE_MS,
      keepAlive: call.format.keepAlive,
      keepAliveMs: app.cfg.STREAM_KEEPALIVE_MS,
      tracker: app.tracker,
      log: (e) =>
        app.log.log("error", "stream stage failed", {
          error: (e as Error)?.name,
          stack: (e as Error)?.stack?.split("\n").slice(0, 4).join(" | "),
        }),
    }),
  };
}

/** Non-streaming: the whole upstream body decoded into the same events, folded by the encoder. */
/**
 * A whole answer. `signal` cuts the read (the client's own, or its drain deadline's); `client`
 * says whether anyone still waits, which decides the generation's status.
 */
async function wholeBody(
  answer: Answer,
  signal: AbortSignal,
  client: AbortSignal,
  ending: { readonly ended: boolean },
): Promise<Attempt> {
  const { call, proto, pass, response, abort, meter, ctx, toolNames } = answer;
  const onAbort = () => abort.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  let json: unknown;
  try {
    json = await response.json();
  } catch {
    // Cut by shutdown with its client still waiting: the caller settles it as failed.
    if (ending.ended && !client.aborted) return { retry: false, error: shuttingDown() };
    if (signal.aborted) {
      meter.settle("cancelled");
      return { retry: false, error: clientClosed() };
    }
    return { retry: true, error: new GatewayError(502, "provider returned an invalid answer") };
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  const events: Event[] = [];
  const collect = (e: Event) => {
    events.push(e);
    meter.observe(e);
  };
  const stop = answer.keptStop ? new StopScanner(answer.keptStop) : undefined;
  try {
    proto.decodeBody(
      json,
      withClientToolNames(stop ? stop.wrap(collect) : collect, toolNames),
    );
    stop?.end(collect);
  } catch {
    meter.observe({
      type: "error",
      error: new GatewayError(502, "provider returned an invalid answer"),
    });
  }
  if (meter.error) {
    return { retry: meter.error.status >= 500 || meter.error.status === 429, error: meter.error };
  }
  const cost = meter.report();
  const out = pass && typeof json === "object" && json !== null
    ? call.format.passThroughBody(json as Record<string, unknown>, cost, ctx)
    : call.format.encodeBody(events, cost, ctx);
  meter.settle(client.aborted ? "cancelled" : "completed");
  return { json: out };
}

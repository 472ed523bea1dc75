/**
 * Upstream text protocols: transport (URL, headers) plus the decoders of the matching
 * format folder. A provider names the protocols it speaks; many providers share one.
 */
import type { UpstreamProtocol } from "../../formats/text_format.ts";
import { globMatch, type Protocol, type Provider } from "../provider.ts";
import { effortsFor } from "../efforts.ts";
import * as chatRequest from "../../formats/chat/request.ts";
import { createChatDecoder, decodeChatBody } from "../../formats/chat/decode.ts";
import { decodeChatError } from "../../formats/chat/errors.ts";
import * as messages from "../../formats/messages/mod.ts";
import * as responses from "../../formats/responses/mod.ts";
import { isContextOverflow } from "../../formats/upstream_errors.ts";

/** The API version sent to Anthropic when the client names none. */
export const ANTHROPIC_VERSION = "2023-06-01";

/**
 * Headers as a plain record: fetch converts a `Headers` object entry by entry, at twice the
 * cost (every upstream call pays it).
 */
function bearerHeaders(p: Provider): Record<string, string> {
  return { ...p.headers, authorization: `Bearer ${p.key}`, "content-type": "application/json" };
}

/**
 * OpenRouter reports its own cost in `usage.cost` only when asked, and takes no
 * `allowed_tools` choice (it gets the allowed tools alone). A client's model fallbacks
 * (`models`, `route`) are never sent: the gateway runs a chat client's chain itself, held for
 * its dearest model (fallback_models.ts); run by OpenRouter, the model that answered would be
 * billed past a hold taken at the requested model's prices (a prompt past a small model's
 * context falls back to any model named, o1-pro say, and the debit is thousands of times the
 * hold).
 */
function openrouterDialect(
  body: Record<string, unknown>,
  allowedTools: (body: Record<string, unknown>) => void,
) {
  body.usage = { include: true };
  delete body.models;
  delete body.route;
  allowedTools(body);
}

/**
 * A provider whose calls are billed from the price table is asked for its standard tier:
 * OpenAI's priority processing costs about twice the catalogue's price (flex about half),
 * Anthropic's fast mode (`speed`) six times, its in-region inference (`inference_geo`) more,
 * and neither answer says what it cost. (OpenRouter reports what it charged, tier included.)
 */
function standardTier(body: Record<string, unknown>) {
  delete body.service_tier;
  delete body.speed;
  delete body.inference_geo;
}

/**
 * Anthropic's server-side model fallbacks (`fallbacks`: other models, each with its own
 * `max_tokens`, tried when the one asked declines) are never sent: the answer would come from
 * a model the client did not name, billed here at the named model's prices and held for its
 * output limit (an Opus answer at Haiku's price). Without them a declined request stays
 * declined, as on a model that takes no fallbacks.
 */
function withoutServerFallbacks(body: Record<string, unknown>) {
  delete body.fallbacks;
}

/**
 * `tools: []` (LangChain and agents with every tool turned off send it): OpenAI and most
 * chat APIs answer 400 "[] is too short - 'tools'", and refuse a tool choice or
 * `parallel_tool_calls` without tools. No tools is said by leaving them out.
 */
function withoutEmptyTools(body: Record<string, unknown>) {
  if (Array.isArray(body.functions) && body.functions.length === 0) {
    delete body.functions;
    delete body.function_call;
  }
  if (!Array.isArray(body.tools) || body.tools.length > 0) return;
  delete body.tools;
  delete body.parallel_tool_calls;
  if (typeof body.tool_choice === "string") delete body.tool_choice;
}

const openaiChat: UpstreamProtocol = {
  name: "openai-chat",
  url: (p) => `${p.baseUrl}/chat/completions`,
  headers: (p) => bearerHeaders(p),
  fromInternal: (req, model, p) =>
    chatRequest.fromInternal(req, model, { openrouterReasoning: !!p.quirks.openrouterUsage }),
  // OpenRouter takes its dialect (and reports its cost when asked); anyone else gets OpenAI's.
  finishBody: (body, p) => {
    withoutEmptyTools(body);
    if (p.quirks.openrouterUsage) {
      return openrouterDialect(body, chatRequest.allowedToolsAsSubset);
    }
    standardTier(body);
    // Nothing is stored (the spec): OpenAI would keep the customer's completions in the
    // operator's account (responses bodies are sent `store: false` for the same reason).
    // `metadata` tags stored completions, and OpenAI refuses it (400) without `store`.
    delete body.store;
    delete body.metadata;
    chatRequest.toOpenAIDialect(body);
  },
  createDecoder: createChatDecoder,
  decodeBody: decodeChatBody,
  decodeError: (status, body, retryAfter) => decodeChatError(status, body, retryAfter),
};

/**
 * A prompt Anthropic refused as past the window (`prompt is too long: N tokens > M maximum`),
 * for a model the provider gives a longer one behind a beta flag: asked once more with the
 * flag, beside the client's own. Should that fail too (an account without the flag's access),
 * the client hears the first refusal, on which Claude Code compacts.
 */
const withContextBeta: NonNullable<UpstreamProtocol["mendRefused"]> = (refusal, sent, at) => {
  const cb = at.provider.contextBeta;
  if (!tooLong(refusal) || !cb || !cb.models.some((g) => globMatch(g, at.model))) return;
  const had = sent.headers["anthropic-beta"];
  if (had?.split(",").some((b) => b.trim() === cb.beta)) return;
  return {
    body: sent.body,
    headers: { ...sent.headers, "anthropic-beta": had ? `${had},${cb.beta}` : cb.beta },
    // Refused again as too long, the longer window's figures are the ones to tell; an
    // overloaded or failing upstream is failed over as any other.
    firstStands: (again) =>
      again.status >= 400 && again.status < 500 && again.status !== 429 && !tooLong(again),
  };
};

function tooLong(r: { status: number; body: unknown }): boolean {
  const message = (r.body as { error?: { message?: unknown } } | null)?.error?.message;
  return r.status === 400 && typeof message === "string" && isContextOverflow(message);
}

const anthropicMessages: UpstreamProtocol = {
  name: "anthropic-messages",
  url: (p) => `${p.baseUrl}/v1/messages`,
  headers: (p, client) => {
    const h: Record<string, string> = {
      ...p.headers,
      "x-api-key": p.key,
      "content-type": "application/json",
      "anthropic-version": client.get("anthropic-version") ?? ANTHROPIC_VERSION,
    };
    // Beta flags are the client's business with Anthropic only: they never reach another vendor.
    const beta = client.get("anthropic-beta");
    if (beta) h["anthropic-beta"] = beta;
    return h;
  },
  fromInternal: (req, model, p, outputCap) =>
    messages.fromInternal(
      req,
      model,
      outputCap,
      p.adaptiveThinking.some((g) => globMatch(g, req.model)) && {
        xhigh: effortsFor(req.model, p.reasoningEfforts)?.includes("xhigh") ?? false,
      },
    ),
  finishBody: (body) => {
    standardTier(body);
    withoutServerFallbacks(body);
  },
  mendRefused: withContextBeta,
  createDecoder: messages.createMessagesDecoder,
  decodeBody: messages.decodeMessagesBody,
  decodeError: messages.decodeMessagesError,
};

const openaiResponses: UpstreamProtocol = {
  name: "openai-responses",
  url: (p) => `${p.baseUrl}/responses`,
  headers: (p) => bearerHeaders(p),
  fromInternal: (req, model) => responses.fromInternal(req, model),
  finishBody: (body, p) =>
    p.quirks.openrouterUsage
      ? openrouterDialect(body, (b) => {
        responses.allowedToolsAsSubset(b);
        responses.withoutClientToolSearch(b);
        responses.withoutForeignReasoning(b);
      })
      : (standardTier(body), responses.toOpenAIResponsesDialect(body)),
  mendRefused: (refusal, sent) => {
    const body = responses.withoutUnreadableReasoning(refusal.status, refusal.body, sent.body);
    return body && { body, headers: sent.headers };
  },
  createDecoder: responses.createResponsesDecoder,
  decodeBody: responses.decodeResponsesBody,
  decodeError: responses.decodeResponsesError,
};

export type TextProtocol = "openai-chat" | "anthropic-messages" | "openai-responses";

/** The text protocols; embeddings and images have their own endpoints (src/endpoints/). */
export const PROTOCOL: Record<TextProtocol, UpstreamProtocol> = {
  "openai-chat": openaiChat,
  "anthropic-messages": anthropicMessages,
  "openai-responses": openaiResponses,
};

/** The text protocol a candidate speaks; routing offers text endpoints nothing else. */
export function textProtocol(p: Protocol): UpstreamProtocol {
  if (p in PROTOCOL) return PROTOCOL[p as TextProtocol];
  throw new Error(`${p} is not a text protocol`);
}

/**
 * The three client-side text formats as the pipeline sees them. Each is assembled from its
 * own folder; this file only wires names together.
 */
import { isPdfDataUrl, type TextRequest } from "../events/text_request.ts";
import { omitHistoryImages } from "./history_images.ts";
import type { CatalogueModel } from "../catalogue/catalogue.ts";
import {
  badRequest,
  overloadedAsProviderError,
  timeoutAsProviderError,
} from "../http/gateway_error.ts";
import type { ClientFormat, UpstreamNeed } from "./text_format.ts";
import { type ChatRequestBody, checkAgainstModel, validateChatRequest } from "./chat/schema.ts";
import * as chatRequest from "./chat/request.ts";
import {
  chatPassThroughBody,
  createChatEncoder,
  createChatPassThrough,
  encodeChatBody,
} from "./chat/encode.ts";
import * as messages from "./messages/mod.ts";
import * as responses from "./responses/mod.ts";
import { SSE_KEEPALIVE_COMMENT, sseFrame } from "./sse.ts";

type Body = Record<string, unknown>;

/**
 * Image input only where the model takes it, and a PDF only where it takes files (spec: chat
 * rules; the same for every format, as chat's own check has it): a PDF travels as an image
 * part's data URL, but a model may read one and not the other (o3-mini reads files only).
 */
function checkImages(req: TextRequest, model: CatalogueModel): void {
  const inputs = model.architecture.input_modalities;
  for (const m of req.messages) {
    for (const p of m.parts) {
      const media = p.type === "image" ? [p] : p.type === "tool_result" ? p.content : [];
      for (const c of media) {
        if (c.type !== "image") continue;
        const input = isPdfDataUrl(c.url) ? "file" : "image";
        if (!inputs.includes(input)) {
          throw badRequest(`model ${JSON.stringify(model.id)} does not accept ${input} input`);
        }
      }
    }
  }
}

function checkMaxTokens(maxTokens: unknown, field: string, model: CatalogueModel): void {
  if (typeof maxTokens === "number" && model.context_length && maxTokens >= model.context_length) {
    throw badRequest(
      `${field} must be less than the model's context length (${model.context_length})`,
    );
  }
}

export const chat: ClientFormat = {
  name: "chat",
  envelope: "generic",
  // The spec's chat list names no 504 or 408: a provider that did not answer in time is a 502.
  clientError: timeoutAsProviderError,
  sameProtocol: "openai-chat",
  // OpenAI's own upstreams get it as max_completion_tokens (toOpenAIDialect).
  outputLimitField: "max_tokens",
  validate: (body) => void validateChatRequest(body),
  checkModel: (body, model) =>
    checkAgainstModel(body as ChatRequestBody, {
      contextLength: model.context_length ?? Number.MAX_SAFE_INTEGER,
      acceptsImages: model.architecture.input_modalities.includes("image"),
      acceptsFiles: model.architecture.input_modalities.includes("file"),
      acceptsAudio: model.architecture.input_modalities.includes("audio"),
      supportsJsonObject: model.supported_parameters.includes("response_format") ||
        model.supported_parameters.includes("structured_outputs"),
    }),
  toInternal: (body, slug) => chatRequest.toInternal(body as ChatRequestBody, slug),
  upstreamsFor: (body) =>
    typeof body.n === "number" && body.n > 1
      ? {
        protocols: ["openai-chat"],
        reason: "n > 1 (several choices) needs a model served in the chat completions format",
      }
      : chatRequest.usesCustomTools(body as ChatRequestBody)
      ? {
        protocols: ["openai-chat"],
        reason: "custom tools need a model served in the chat completions format",
      }
      : chatRequest.usesLegacyFunctions(body as ChatRequestBody)
      ? {
        protocols: ["openai-chat"],
        reason: "functions and function_call (deprecated) need a model served in the chat " +
          "completions format; use tools and tool_choice",
      }
      : uncarried(chatRequest.uncarriedPart(body as ChatRequestBody)) ?? stopNeed(body.stop),
  passThroughRequest: (body, upstreamModel) => chatRequest.passThroughRequest(body, upstreamModel),
  dropReasoning: (body) => {
    delete body.reasoning_effort;
    delete body.reasoning;
  },
  samplingFields: [
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "logprobs",
    "top_logprobs",
    "logit_bias",
  ],
  createEncoder: createChatEncoder,
  keepAlive: SSE_KEEPALIVE_COMMENT,
  encodeBody: encodeChatBody,
  createPassThrough: createChatPassThrough,
  passThroughBody: chatPassThroughBody,
};

/** A user message part only a chat upstream reads (the client's body goes to it as sent). */
function uncarried(part: string | undefined): UpstreamNeed | undefined {
  return part === undefined ? undefined : {
    protocols: ["openai-chat"],
    reason: `${part} in a message needs a model served in the chat completions format`,
  };
}

/**
 * Stop sequences: the responses API has none, so a model served only in that format would
 * run past them unseen; such a request is a 400 there, not a silent change of the answer.
 */
function stopNeed(stop: unknown): UpstreamNeed | undefined {
  if (stop == null || stop === "" || (Array.isArray(stop) && stop.length === 0)) return undefined;
  return {
    protocols: ["openai-chat", "anthropic-messages"],
    reason: "stop sequences need a model served in the chat completions or messages format " +
      "(the responses API has none)",
    stopSequences: true,
  };
}

export const messagesFormat: ClientFormat = {
  name: "messages",
  envelope: "messages",
  // A context overflow in Anthropic's words, whichever provider refused it (Claude Code compacts).
  clientError: messages.asPromptTooLong,
  sameProtocol: "anthropic-messages",
  outputLimitField: "max_tokens",
  validate: (body) => void messages.validateMessagesRequest(body),
  checkModel: (body, model) => checkMaxTokens(body.max_tokens, "max_tokens", model),
  // The internal form alone: a messages body passes through to Anthropic alone, whose models
  // all read images (history_images.ts).
  checkInternal: (req, model) => {
    omitHistoryImages(req, model);
    checkImages(req, model);
  },
  toInternal: (body, slug) =>
    messages.toInternal(body as unknown as messages.MessagesRequest, slug),
  upstreamsFor: (body) =>
    messages.upstreamsFor(body as unknown as messages.MessagesRequest) ??
      stopNeed(body.stop_sequences),
  passThroughRequest: (body, upstreamModel) =>
    messages.passThroughRequest(body as unknown as messages.MessagesRequest, upstreamModel),
  createEncoder: messages.createMessagesEncoder,
  // Anthropic's own keep-alive event, which its SDK and Claude Code read past.
  keepAlive: sseFrame('{"type":"ping"}', "ping"),
  encodeBody: messages.encodeMessagesBody,
  createPassThrough: messages.createMessagesPassThrough,
  passThroughBody: messages.messagesPassThroughBody,
};

export const responsesFormat: ClientFormat = {
  name: "responses",
  envelope: "generic",
  clientError: overloadedAsProviderError,
  sameProtocol: "openai-responses",
  outputLimitField: "max_output_tokens",
  validate: (body) => void responses.validateResponsesRequest(body),
  checkModel: (body, model) => {
    checkMaxTokens(body.max_output_tokens, "max_output_tokens", model);
    responses.omitHistoryImages(body, model);
  },
  checkInternal: checkImages,
  toInternal: (body, slug) => responses.toInternal(body as Body, slug),
  upstreamsFor: (body) => responses.upstreamsFor(body as Body),
  nativeToolsOnly: (body) => responses.nativeToolsOnly(body),
  passThroughRequest: (body, upstreamModel) => responses.passThroughRequest(body, upstreamModel),
  samplingFields: ["temperature", "top_p", "top_logprobs"],
  dropReasoning: (body) => {
    delete body.reasoning;
    // Encrypted reasoning asked back of a model that has none is refused with the rest, and so
    // are reasoning items an earlier model of the session left in the input (OpenAI: 400).
    if (Array.isArray(body.include)) {
      body.include = body.include.filter((i) => !String(i).startsWith("reasoning."));
    }
    if (Array.isArray(body.input)) {
      body.input = body.input.filter((i) => (i as { type?: unknown } | null)?.type !== "reasoning");
    }
  },
  createEncoder: responses.createResponsesEncoder,
  keepAlive: SSE_KEEPALIVE_COMMENT,
  encodeBody: responses.encodeResponsesBody,
  createPassThrough: responses.createResponsesPassThrough,
  passThroughBody: responses.responsesPassThroughBody,
};

export const FORMATS = { chat, messages: messagesFormat, responses: responsesFormat } as const;

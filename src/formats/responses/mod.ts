/**
 * The `responses` wire format (`POST /v1/responses`) and the `openai-responses` upstream
 * protocol: one folder, since they are the same wire.
 */
export {
  type ResponsesRequest,
  ResponsesRequestSchema,
  validateResponsesRequest,
} from "./schema.ts";
export {
  allowedToolsAsSubset,
  builtInTools,
  fromInternal,
  nativeToolsOnly,
  passThroughRequest,
  toInternal,
  toOpenAIResponsesDialect,
  upstreamsFor,
  withoutClientToolSearch,
  withoutForeignReasoning,
  withoutUnreadableReasoning,
} from "./request.ts";
export { omitHistoryImages } from "./history_images.ts";
export { createResponsesDecoder, decodeResponsesBody } from "./decode.ts";
export { createResponsesEncoder, encodeResponsesBody } from "./encode.ts";
export { createResponsesPassThrough, responsesPassThroughBody } from "./pass_through.ts";
export { decodeResponsesError, decodeResponsesStreamError } from "./errors.ts";
export { finishFromResponses, finishToResponses } from "./finish_reason.ts";
export { usageFromResponses, usageToResponses } from "./usage.ts";

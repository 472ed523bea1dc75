/** The `messages` wire format: client side of `POST /v1/messages`, upstream `anthropic-messages`. */
export { type MessagesRequest, validateMessagesRequest } from "./schema.ts";
export {
  DEFAULT_MAX_TOKENS,
  fromInternal,
  passThroughRequest,
  toInternal,
  upstreamsFor,
} from "./request.ts";
export { createMessagesDecoder, decodeMessagesBody } from "./decode.ts";
export {
  createMessagesEncoder,
  createMessagesPassThrough,
  encodeMessagesBody,
  messagesErrorFrame,
  messagesPassThroughBody,
} from "./encode.ts";
export { asPromptTooLong, decodeMessagesError, decodeMessagesStreamError } from "./errors.ts";
export { fromMessagesStopReason, toMessagesStopReason } from "./finish_reason.ts";
export { fromMessagesUsage, toMessagesUsage } from "./usage.ts";

/**
 * The headers that name a call's generation: the spec's `x-generation-id`, and the same id as
 * the request id each SDK reads (`x-request-id`: the `openai` SDK's `_request_id`;
 * `request-id`: `@anthropic-ai/sdk`'s), so an id a client logs is one the history knows.
 */
export function generationHeaders(id: string): Record<string, string> {
  return { "x-generation-id": id, "x-request-id": id, "request-id": id };
}

/**
 * Token counting for when the upstream does not say: a client that went away before the
 * usage event, an embeddings provider without usage. Tokenisers differ per model (spec), so
 * this is an estimate: about four characters of text per token, the usual figure for
 * English sub-word tokenisers. Streamed output is counted per delta instead (see meter),
 * since providers stream roughly one token per delta.
 */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.ceil(text.length / 4);
}

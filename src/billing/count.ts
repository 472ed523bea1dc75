/**
 * Token counting for when the upstream does not say: a client that went away before the
 * usage event, an embeddings provider without usage. Tokenisers differ per model (spec), so
 * this is an estimate: about four characters of text per token, the usual figure for
 * English sub-word tokenisers.
 */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.ceil(text.length / 4);
}

/**
 * The tokens of one piece of output the upstream did not count. Providers stream about one
 * token per delta, and a token is often longer than four characters (" tok12"), so a short
 * delta is one token; a longer piece — several tokens in one delta, or a whole non-streamed
 * answer, which arrives as one — is about four characters a token.
 */
export function deltaTokens(text: string): number {
  return Math.max(1, Math.floor(text.length / 4));
}

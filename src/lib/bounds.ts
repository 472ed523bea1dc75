/**
 * Every numeric bound of the gateway, unit last in the name, each with why it is that number.
 */

/** A key is `<prefix>_<43 base62 chars>`; anything far longer is not ours and not worth hashing. */
export const apiKeyCharsMax = 256;
/** Keys the auth cache holds (misses included) before it makes room: far more than any deployment's keys in use. */
export const keyCacheEntriesMax = 50_000;

/** JSON nesting: real requests (tool schemas) nest ~20 deep; 64 stops stack-exhaustion tricks. */
export const jsonDepthMax = 64;

/**
 * A messages client's stop sequences, and the length of each. Where the upstream takes fewer
 * (OpenAI's chat API four, its reasoning models and responses API none) the gateway scans the
 * streamed text for every one of them, delta by delta, its cost growing with their number and
 * length: a million short ones in one cheap call held the event loop (every other stream) for
 * seconds at a time. Real clients send a handful of short markers.
 */
export const stopSequencesMax = 256;
export const stopSequenceCharsMax = 1000;

/**
 * How long a request body may send nothing before it is given up on. A client on a slow link
 * still sends something every few seconds; one that sent nothing for a minute has gone.
 */
export const bodyIdleMs = 60_000;

/** Events held back by a pass-through encoder while waiting for cost; a guard against a hostile upstream. */
export const sseEventCharsMax = 16 * 1024 * 1024;

/** Retries of a settlement while the store is down; one a second covers a PostgreSQL restart. */
export const settleRetriesMax = 600;
export const settleRetryMs = 1_000;

/** `last_used` is written at most this often per key: auth must not cost a write per request. */
export const keyTouchIntervalMs = 60_000;

/** The largest count (tokens, milliseconds) the store's integer columns hold: 2^31 - 1. */
export const storedCountMax = 2_147_483_647;

/** Generation history page size. */
export const generationsPageMax = 100;
export const generationsPageDefault = 20;

/**
 * What the peek before the first token may hold back for the client: an upstream that sends
 * this much without a token (keep-alives, pings, a thinking model's role chunk are a few bytes
 * each) is not answering. Time is bounded by the provider's deadlines, not by a read count.
 */
export const peekBytesMax = 1 << 20;

/**
 * How long after the upstream's headers a stream may go on without its first token before
 * the status line is sent anyway, giving up failover for that attempt. Until the
 * handler answers, the HTTP server does not notice a client that leaves (it reads nothing
 * more of a request whose body came apart from its headers: nearly every client's), so a
 * cancelled call to a model thinking in silence ran on, billed by the upstream, until its
 * first token. Failover is for upstreams that fail at once; they are still caught.
 */
export const streamCommitMs = 1_000;

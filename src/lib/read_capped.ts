import { deadline } from "./deadlines.ts";

/**
 * Reads a byte stream whole with its size enforced while reading: past `maxBytes` the stream
 * is cancelled and `tooLarge()` is thrown, so a body without (or lying about) its length
 * cannot fill memory. With `idle`, a stream that sends nothing for `idle.ms` is cancelled and
 * `idle.stalled()` thrown: a sender that vanished mid-body (no FIN, no RST) would otherwise
 * hold what it sent, and the read, for good.
 */
export async function readStreamCapped(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  tooLarge: () => Error,
  idle?: { ms: number; stalled: () => Error },
): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let stalled = false;
  for (;;) {
    const stop = idle
      ? deadline(idle.ms, () => {
        stalled = true;
        reader.cancel().catch(() => {});
      })
      : undefined;
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await reader.read();
    } finally {
      stop?.();
    }
    if (stalled) throw idle!.stalled();
    const { done, value } = r;
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

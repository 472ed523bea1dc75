/**
 * Reads an upstream body into one reused buffer. Deno's fetch body is a byte stream whose
 * default reader allocates a fresh 64 KiB buffer for every chunk — and a provider sends one
 * chunk per SSE event of ~100 bytes, so that was megabytes of garbage per stream and most of
 * the collector's work. A BYOB reader over one buffer allocates nothing per chunk.
 *
 * A chunk is valid only until the next `read`: the stream stage decodes each to text at once.
 */
export interface ChunkSource {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(): Promise<void>;
}

/** Bytes read at most per chunk: several events of a burst, one allocation per stream. */
const bufferBytes = 16 * 1024;

export function chunkReader(body: ReadableStream<Uint8Array>): ChunkSource {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    return body.getReader(); // not a byte stream (a body built in JavaScript)
  }
  let buf = new Uint8Array(bufferBytes);
  return {
    async read() {
      // A read still pending holds the buffer (a cancelled client's pull, while the drain
      // policy reads on): this one gets its own.
      if (buf.byteLength === 0) buf = new Uint8Array(bufferBytes);
      const r = await byob.read(buf);
      // The buffer is transferred into the read and comes back as the value's.
      if (r.value) buf = new Uint8Array(r.value.buffer);
      return r.done ? { done: true, value: undefined } : r;
    },
    cancel: () => byob.cancel(),
  };
}

import assert from "node:assert/strict";
import { chunkReader } from "./chunk_reader.ts";

/**
 * A local server whose every response body is `parts`, one chunk each, `delayMs` apart; with
 * `open`, the body never ends. Returns the server (to dispose) and a fetched body.
 */
async function served(parts: string[], opts: { delayMs?: number; open?: boolean } = {}) {
  const srv = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    const rest = [...parts];
    return new Response(
      new ReadableStream({
        async pull(c) {
          if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
          const p = rest.shift();
          if (p !== undefined) c.enqueue(new TextEncoder().encode(p));
          else if (!opts.open) c.close();
          else await new Promise(() => {}); // holds the body open
        },
      }),
    );
  });
  const res = await fetch(`http://127.0.0.1:${srv.addr.port}/`);
  return { srv, body: res.body! };
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<string[]> {
  const r = chunkReader(body);
  const text = new TextDecoder();
  const out: string[] = [];
  for (;;) {
    const c = await r.read();
    if (c.done) return out;
    out.push(text.decode(c.value)); // decoded before the next read, as the stage does
  }
}

Deno.test("chunkReader: a fetch body arrives whole, chunk by chunk, through one buffer", async () => {
  const events = Array.from({ length: 50 }, (_, i) => `data: {"n":${i}}\n\n`);
  const big = `data: ${"x".repeat(40_000)}\n\n`; // larger than the buffer: split across reads
  const { srv, body } = await served([...events, big]);
  await using _ = srv;
  const r = chunkReader(body);
  const text = new TextDecoder();
  let all = "";
  for (;;) {
    const c = await r.read();
    if (c.done) break;
    assert.ok(c.value.byteLength > 0);
    assert.ok(c.value.buffer.byteLength <= 16 * 1024, "never a 64 KiB buffer per chunk");
    all += text.decode(c.value, { stream: true });
  }
  assert.equal(all, events.join("") + big);
});

Deno.test("chunkReader: a stream built in JavaScript is read with a default reader", async () => {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode("a"));
      c.enqueue(new TextEncoder().encode("b"));
      c.close();
    },
  });
  assert.deepEqual(await readAll(body), ["a", "b"]);
});

Deno.test("chunkReader: cancel ends a pending read", async () => {
  const { srv, body } = await served(["first"], { open: true });
  await using _ = srv;
  const r = chunkReader(body);
  const first = await r.read();
  assert.equal(new TextDecoder().decode(first.value), "first");
  const pending = r.read();
  await r.cancel();
  assert.deepEqual(await pending, { done: true, value: undefined });
});

Deno.test("chunkReader: two reads in flight each get their chunk, in order", async () => {
  const { srv, body } = await served(["one", "two", "three"], { delayMs: 5 });
  await using _ = srv;
  const r = chunkReader(body);
  const text = (c: ReadableStreamReadResult<Uint8Array>) => new TextDecoder().decode(c.value);
  const [a, b] = await Promise.all([r.read().then(text), r.read().then(text)]);
  assert.deepEqual([a, b], ["one", "two"]);
  assert.equal(text(await r.read()), "three");
  assert.equal((await r.read()).done, true);
});

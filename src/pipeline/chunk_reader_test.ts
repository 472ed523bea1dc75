import assert from "node:assert/strict";
import { chunkReader } from "./chunk_reader.ts";

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
  await using srv = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    const parts = [...events, big];
    return new Response(
      new ReadableStream({
        pull(c) {
          const p = parts.shift();
          if (p === undefined) c.close();
          else c.enqueue(new TextEncoder().encode(p));
        },
      }),
    );
  });
  const res = await fetch(`http://127.0.0.1:${srv.addr.port}/`);
  const buffers = new Set<ArrayBufferLike>();
  const r = chunkReader(res.body!);
  const text = new TextDecoder();
  let all = "";
  for (;;) {
    const c = await r.read();
    if (c.done) break;
    assert.ok(c.value.byteLength > 0);
    assert.ok(c.value.buffer.byteLength <= 16 * 1024, "never a 64 KiB buffer per chunk");
    buffers.add(c.value.buffer);
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
  await using srv = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () =>
      new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode("first"));
          }, // never closes
        }),
      ),
  );
  const res = await fetch(`http://127.0.0.1:${srv.addr.port}/`);
  const r = chunkReader(res.body!);
  const first = await r.read();
  assert.equal(new TextDecoder().decode(first.value), "first");
  const pending = r.read();
  await r.cancel();
  assert.deepEqual(await pending, { done: true, value: undefined });
});

Deno.test("chunkReader: two reads in flight each get their chunk, in order", async () => {
  await using srv = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    const parts = ["one", "two", "three"];
    return new Response(
      new ReadableStream({
        async pull(c) {
          await new Promise((r) => setTimeout(r, 5));
          const p = parts.shift();
          if (p === undefined) c.close();
          else c.enqueue(new TextEncoder().encode(p));
        },
      }),
    );
  });
  const res = await fetch(`http://127.0.0.1:${srv.addr.port}/`);
  const r = chunkReader(res.body!);
  const text = (c: ReadableStreamReadResult<Uint8Array>) => new TextDecoder().decode(c.value);
  const [a, b] = await Promise.all([r.read().then(text), r.read().then(text)]);
  assert.deepEqual([a, b], ["one", "two"]);
  assert.equal(text(await r.read()), "three");
  assert.equal((await r.read()).done, true);
});

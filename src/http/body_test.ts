/** The JSON body reader: byte cap enforced while streaming, shape and encoding checks. */
import assert from "node:assert/strict";
import { readJsonBody } from "./body.ts";
import { GatewayError } from "./gateway_error.ts";
import { jsonDepthMax } from "../lib/bounds.ts";

const URL_ = "http://gateway.test/v1/chat/completions";
const MAX = 1024;

function post(body: BodyInit | null, headers: Record<string, string> = {}): Request {
  return new Request(URL_, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A body the reader cannot size in advance: chunks from a stream, no Content-Length. */
function streamed(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]);
      else c.close();
    },
  });
}

async function status(req: Request, max = MAX): Promise<{ status: number; message: string }> {
  try {
    await readJsonBody(req, max);
  } catch (e) {
    assert.ok(e instanceof GatewayError, `expected a GatewayError, got ${e}`);
    return { status: e.status, message: e.message };
  }
  assert.fail("expected the body to be refused");
}

Deno.test("body: a JSON object is read", async () => {
  const v = await readJsonBody(post(JSON.stringify({ model: "a/b", n: [1, { x: 2 }] })), MAX);
  assert.deepEqual(v, { model: "a/b", n: [1, { x: 2 }] });
});

Deno.test("body: charset parameter and +json types are accepted", async () => {
  for (
    const type of ["application/json; charset=utf-8", "Application/JSON", "application/vnd.x+json"]
  ) {
    const v = await readJsonBody(post('{"a":1}', { "content-type": type }), MAX);
    assert.deepEqual(v, { a: 1 });
  }
});

Deno.test("body: wrong content type → 400", async () => {
  for (
    const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonx",
    ]
  ) {
    const r = await status(post('{"a":1}', { "content-type": type }));
    assert.equal(r.status, 400, type);
    assert.match(r.message, /JSON/);
  }
});

Deno.test("body: oversized (declared) → 400 PAYLOAD_TOO_LARGE", async () => {
  const r = await status(post(JSON.stringify({ a: "x".repeat(MAX) })));
  assert.equal(r.status, 400);
});

Deno.test("body: oversized with a lying Content-Length → 400 PAYLOAD_TOO_LARGE", async () => {
  const big = new TextEncoder().encode(JSON.stringify({ a: "x".repeat(MAX * 4) }));
  const req = post(streamed([big.slice(0, 100), big.slice(100)]), { "content-length": "20" });
  const r = await status(req);
  assert.equal(r.status, 400);
});

Deno.test("body: oversized with no Content-Length (chunked) → 400 PAYLOAD_TOO_LARGE", async () => {
  const chunk = new TextEncoder().encode("x".repeat(300));
  const start = new TextEncoder().encode('{"a":"');
  const req = post(streamed([start, chunk, chunk, chunk, chunk, chunk]));
  assert.equal(req.headers.get("content-length"), null);
  const r = await status(req);
  assert.equal(r.status, 400);
});

Deno.test("body: exactly the limit is accepted", async () => {
  const filler = "x".repeat(MAX - '{"a":""}'.length);
  const text = JSON.stringify({ a: filler });
  assert.equal(new TextEncoder().encode(text).byteLength, MAX);
  const v = await readJsonBody(post(text), MAX);
  assert.equal((v.a as string).length, filler.length);
});

Deno.test("body: malformed JSON → 400", async () => {
  for (const text of ['{"a":', "{a:1}", '{"a":1}}', "{'a':1}", '{"a":1,}']) {
    const r = await status(post(text));
    assert.equal(r.status, 400, text);
  }
});

Deno.test("body: empty body → 400", async () => {
  for (const body of [null, "", "   \n"]) {
    const r = await status(post(body));
    assert.equal(r.status, 400, JSON.stringify(body));
  }
});

Deno.test("body: a JSON value that is not an object → 400", async () => {
  for (const text of ["[]", "[{}]", "null", "1", '"s"', "true"]) {
    const r = await status(post(text));
    assert.equal(r.status, 400, text);
    assert.match(r.message, /object/);
  }
});

Deno.test("body: invalid UTF-8 → 400", async () => {
  const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // {"a":"\xff\xfe"}
  const r = await status(post(bytes));
  assert.equal(r.status, 400);
  assert.match(r.message, /UTF-8/);
});

Deno.test("body: a UTF-8 sequence split across chunks is fine", async () => {
  const bytes = new TextEncoder().encode('{"a":"привет"}');
  const v = await readJsonBody(post(streamed([bytes.slice(0, 8), bytes.slice(8)])), MAX);
  assert.equal(v.a, "привет");
});

Deno.test("body: deep nesting → 400; ordinary nesting is fine", async () => {
  const deep = "[".repeat(jsonDepthMax + 10) + "]".repeat(jsonDepthMax + 10);
  const r = await status(post(`{"a":${deep}}`, {}), 1_000_000);
  assert.equal(r.status, 400);
  assert.match(r.message, /nest/);

  const deepObj = '{"a":'.repeat(jsonDepthMax + 10) + "1" + "}".repeat(jsonDepthMax + 10);
  assert.equal((await status(post(deepObj), 1_000_000)).status, 400);

  const ok = '{"a":'.repeat(20) + "1" + "}".repeat(20);
  await readJsonBody(post(ok), MAX);
});

Deno.test("body: nesting is bounded at exactly jsonDepthMax levels, the root one of them", async () => {
  // The README's limit: a body may nest 64 levels deep (the root object is the first level),
  // a 400 beyond.
  const nested = (levels: number) => '{"a":'.repeat(levels - 1) + "[]" + "}".repeat(levels - 1);
  await readJsonBody(post(nested(jsonDepthMax)), MAX);
  const r = await status(post(nested(jsonDepthMax + 1)), MAX);
  assert.equal(r.status, 400);
  assert.match(r.message, /nests deeper than 64 levels/);
});

Deno.test("body: very deep nesting does not blow the stack", async () => {
  const n = 100_000;
  const r = await status(post(`{"a":${"[".repeat(n)}${"]".repeat(n)}}`), 1_000_000);
  assert.equal(r.status, 400);
});

Deno.test("body: __proto__ keys are removed at every level", async () => {
  const text =
    '{"__proto__":{"polluted":1},"model":"a/b","messages":[{"__proto__":{"x":1},"role":"user"}],"o":{"p":{"__proto__":{"y":2}}}}';
  const v = await readJsonBody(post(text), MAX);
  assert.ok(!Object.hasOwn(v, "__proto__"));
  assert.equal(v.model, "a/b");
  const m = (v.messages as Record<string, unknown>[])[0];
  assert.ok(!Object.hasOwn(m, "__proto__"));
  assert.equal(m.role, "user");
  const p = (v.o as { p: Record<string, unknown> }).p;
  assert.ok(!Object.hasOwn(p, "__proto__"));
  // And nothing leaked into the prototype chain.
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.equal(Object.assign({}, v).polluted, undefined);
});

Deno.test("body: constructor / prototype keys are ordinary data", async () => {
  const v = await readJsonBody(post('{"constructor":{"prototype":{"z":1}}}'), MAX);
  assert.deepEqual(v, { constructor: { prototype: { z: 1 } } });
  assert.equal(({} as Record<string, unknown>).z, undefined);
});

async function compressed(
  text: string,
  format: CompressionFormat,
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([text]).stream().pipeThrough(
    new CompressionStream(format) as unknown as ReadableWritablePair<Uint8Array, Uint8Array>,
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

Deno.test("body: gzip, deflate, br and zstd bodies are decompressed", async () => {
  const json = JSON.stringify({ model: "a/b", messages: [{ role: "user", content: "hé" }] });
  const zlib = await import("node:zlib");
  const bodies: Record<string, Uint8Array<ArrayBuffer>> = {
    gzip: await compressed(json, "gzip"),
    deflate: await compressed(json, "deflate"),
    br: new Uint8Array(zlib.brotliCompressSync(new TextEncoder().encode(json))),
    zstd: new Uint8Array(zlib.zstdCompressSync(new TextEncoder().encode(json))),
  };
  for (const [enc, bytes] of Object.entries(bodies)) {
    const v = await readJsonBody(post(bytes, { "content-encoding": enc.toUpperCase() }), MAX);
    assert.deepEqual(v, JSON.parse(json), enc);
  }
  // Codings listed in the order applied: gzip first, then deflate over it.
  const twice = await new Response(
    new Blob([bodies.gzip]).stream().pipeThrough(
      new CompressionStream("deflate") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>,
    ),
  ).bytes();
  const v = await readJsonBody(post(twice, { "content-encoding": "gzip, deflate" }), MAX);
  assert.deepEqual(v, JSON.parse(json));
});

Deno.test("body: the byte limit holds for the decompressed body", async () => {
  // 64 KiB of spaces compress to a few hundred bytes, far below the limit.
  const bomb = await compressed(`{"a":1${" ".repeat(64 * 1024)}}`, "gzip");
  assert.ok(bomb.byteLength < MAX);
  const r = await status(post(bomb, { "content-encoding": "gzip" }));
  assert.equal(r.status, 400);
  assert.match(r.message, /exceeds 1024 bytes/);
});

Deno.test("body: an unknown coding or a corrupt compressed body is a 400 that says so", async () => {
  const unknown = await status(post("{}", { "content-encoding": "compress" }));
  assert.equal(unknown.status, 400);
  assert.match(unknown.message, /unsupported Content-Encoding "compress"/);
  // A name the lookup table inherits is no coding either.
  const inherited = await status(post("{}", { "content-encoding": "constructor" }));
  assert.match(inherited.message, /unsupported Content-Encoding "constructor"/);
  const corrupt = await status(post("{not gzip}", { "content-encoding": "gzip" }));
  assert.equal(corrupt.status, 400);
  assert.match(corrupt.message, /could not be decompressed \(Content-Encoding: gzip\)/);
});

Deno.test("body: a body that stops arriving is refused after the idle time, not waited on forever", async () => {
  // The client sent part of what its Content-Length declares, then nothing: a vanished client
  // (no FIN, no RST) must not hold the connection and the bytes read so far for good.
  const part = new TextEncoder().encode('{"model":"a/b","messages":[');
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(part);
    },
  });
  const req = post(body, { "content-length": "100" });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    readJsonBody(req, MAX, { idleMs: 50 }).then(
      () => "read",
      (e) => e instanceof GatewayError ? `${e.status} ${e.message}` : String(e),
    ),
    new Promise<string>((r) => timer = setTimeout(() => r("still waiting"), 2_000)),
  ]);
  clearTimeout(timer);
  assert.match(outcome, /^400 request body stalled/);
});

Deno.test("body: a slow body that keeps arriving is read whole", async () => {
  const text = JSON.stringify({ model: "a/b", pad: "x".repeat(200) });
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      await new Promise((r) => setTimeout(r, 20));
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, at + 50));
      at += 50;
    },
  });
  const v = await readJsonBody(post(body), MAX, { idleMs: 200 });
  assert.equal(v.model, "a/b");
});

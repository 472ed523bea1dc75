import assert from "node:assert/strict";
import { adler32, crc32, solidPng } from "./png.ts";

const ascii = (s: string) => new TextEncoder().encode(s);

Deno.test("crc32 and adler32 match their published check values", () => {
  assert.equal(crc32(ascii("123456789")), 0xcbf43926);
  assert.equal(adler32(ascii("Wikipedia")), 0x11e60398);
});

Deno.test("solidPng: signature, chunk CRCs, and inflatable pixel data", async () => {
  const png = solidPng(10, 20, 30);
  assert.deepEqual([...png.slice(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const view = new DataView(png.buffer);
  const chunks: Record<string, Uint8Array<ArrayBuffer>> = {};
  for (let i = 8; i < png.length;) {
    const len = view.getUint32(i);
    const typed = png.slice(i + 4, i + 8 + len);
    assert.equal(view.getUint32(i + 8 + len), crc32(typed));
    chunks[new TextDecoder().decode(typed.slice(0, 4))] = typed.slice(4);
    i += 12 + len;
  }
  assert.deepEqual(Object.keys(chunks), ["IHDR", "IDAT", "IEND"]);
  const raw = new Uint8Array(
    await new Response(
      new Blob([chunks.IDAT]).stream().pipeThrough(new DecompressionStream("deflate")),
    )
      .arrayBuffer(),
  );
  assert.deepEqual([...raw], [0, 10, 20, 30, 10, 20, 30, 0, 10, 20, 30, 10, 20, 30]);
});

import assert from "node:assert/strict";
import { parseDataUrl, sniffImageType, toDataUrl } from "./mime.ts";
import { solidPng } from "../../providers/mock/png.ts";

Deno.test("image types are sniffed from the bytes", () => {
  const b = (...xs: number[]) => new Uint8Array([...xs, ...new Array(16).fill(0)]);
  assert.equal(sniffImageType(solidPng(1, 2, 3)), "image/png");
  assert.equal(sniffImageType(b(0xff, 0xd8, 0xff, 0xe0)), "image/jpeg");
  assert.equal(sniffImageType(b(0x47, 0x49, 0x46, 0x38, 0x39, 0x61)), "image/gif");
  const webp = new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8 ");
  assert.equal(sniffImageType(webp), "image/webp");
  assert.equal(
    sniffImageType(new TextEncoder().encode(' <?xml version="1.0"?><svg>')),
    "image/svg+xml",
  );
  assert.equal(
    sniffImageType(new TextEncoder().encode("<html><script>")),
    "application/octet-stream",
  );
  assert.equal(sniffImageType(new Uint8Array(0)), "application/octet-stream");
});

Deno.test("data URLs both ways", () => {
  const png = solidPng(9, 9, 9);
  const url = toDataUrl(png);
  assert.ok(url.startsWith("data:image/png;base64,"));
  const back = parseDataUrl(url)!;
  assert.equal(back.type, "image/png");
  assert.deepEqual(back.bytes, png);
  assert.equal(parseDataUrl("data:image/png,rawtext"), undefined);
  assert.equal(parseDataUrl("data:image/png;base64,@@@"), undefined);
  assert.equal(parseDataUrl("https://e/x.png"), undefined);
});

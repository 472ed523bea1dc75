/**
 * A tiny valid PNG, assembled by hand: 2×2 pixels, 8-bit RGB, one colour. The image data is
 * a zlib stream holding a single stored (uncompressed) deflate block, so no compressor is
 * needed; CRC-32 (per chunk) and Adler-32 (zlib trailer) are computed here.
 * Spec: https://www.w3.org/TR/png/ (chunks, IHDR, CRC), RFC 1950 (zlib), RFC 1951 §3.2.4.
 */

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function adler32(bytes: Uint8Array): number {
  let a = 1, b = 0;
  for (const x of bytes) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

const u32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];

function chunk(type: string, data: number[]): number[] {
  const typed = new Uint8Array([...type].map((c) => c.charCodeAt(0)).concat(data));
  return [...u32(data.length), ...typed, ...u32(crc32(typed))];
}

const SIDE = 2;

/** PNG bytes of a SIDE×SIDE image filled with one RGB colour. */
export function solidPng(r: number, g: number, b: number): Uint8Array<ArrayBuffer> {
  const raw: number[] = [];
  for (let y = 0; y < SIDE; y++) {
    raw.push(0); // filter type: None
    for (let x = 0; x < SIDE; x++) raw.push(r & 255, g & 255, b & 255);
  }
  const len = raw.length;
  const zlib = [
    0x78,
    0x01, // deflate, 32K window, no dictionary, fastest; (0x78 << 8 | 0x01) % 31 === 0
    0x01, // BFINAL=1, BTYPE=00 (stored)
    len & 255,
    len >>> 8,
    ~len & 255,
    (~len >>> 8) & 255,
    ...raw,
    ...u32(adler32(new Uint8Array(raw))),
  ];
  // IHDR: width, height, bit depth 8, colour type 2 (RGB), compression 0, filter 0, no interlace.
  const ihdr = [...u32(SIDE), ...u32(SIDE), 8, 2, 0, 0, 0];
  return new Uint8Array([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    ...chunk("IHDR", ihdr),
    ...chunk("IDAT", zlib),
    ...chunk("IEND", []),
  ]);
}

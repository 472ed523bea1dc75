/**
 * The content type of image bytes, from their first bytes — never from what an upstream or
 * a client claimed, since stored files are served back with it.
 */
export function sniffImageType(b: Uint8Array): string {
  const at = (i: number, ...xs: number[]) => xs.every((x, k) => b[i + k] === x);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (at(0, 0xff, 0xd8, 0xff)) return "image/jpeg";
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return "image/webp";
  if (at(0, 0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (at(4, 0x66, 0x74, 0x79, 0x70, 0x61, 0x76, 0x69, 0x66)) return "image/avif";
  const head = new TextDecoder().decode(b.subarray(0, 512)).trimStart().toLowerCase();
  if (head.startsWith("<svg") || (head.startsWith("<?xml") && head.includes("<svg"))) {
    return "image/svg+xml";
  }
  return "application/octet-stream";
}

/** A `data:` URL's bytes and declared type, or undefined when it is not base64 data. */
export function parseDataUrl(url: string): { type: string; bytes: Uint8Array } | undefined {
  const m = /^data:([^;,]*)((?:;[^;,]*)*);base64,/i.exec(url.slice(0, 512));
  if (!m) return undefined;
  try {
    return { type: m[1].toLowerCase(), bytes: Uint8Array.fromBase64(url.slice(m[0].length)) };
  } catch {
    return undefined;
  }
}

export function toDataUrl(bytes: Uint8Array): string {
  return `data:${sniffImageType(bytes)};base64,${bytes.toBase64()}`;
}

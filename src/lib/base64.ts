/** Base64 of a text's UTF-8 bytes (`btoa` alone takes only Latin-1). */
export function base64OfText(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  // In slices: spreading a whole large array into one call would overflow the stack.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

/** The text whose UTF-8 bytes a base64 string holds; throws on bad base64 or bad UTF-8. */
export function textOfBase64(b64: string): string {
  return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.fromBase64(b64));
}

/** Base64url (no padding) of a text's UTF-8 bytes: safe inside tokens and JSON strings. */
export function base64UrlOfText(text: string): string {
  return base64OfText(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The text a base64url string holds; throws on bad base64 or bad UTF-8. */
export function textOfBase64Url(b64url: string): string {
  return textOfBase64(b64url.replaceAll("-", "+").replaceAll("_", "/"));
}

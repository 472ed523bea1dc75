import assert from "node:assert/strict";
import { bodyPromptBound, PDF_PAGE_TOKENS, pdfPromptTokens } from "./prompt_tokens.ts";

Deno.test("bodyPromptBound: every string at four characters a token, wherever it sits", () => {
  const body = {
    messages: [{
      role: "user", // 4
      content: [
        {
          type: "document",
          source: { type: "content", content: [{ type: "text", text: "a".repeat(800) }] },
        },
        {
          type: "search_result",
          source: "s",
          title: "t",
          content: [{ type: "text", text: "b".repeat(400) }],
        },
      ],
    }],
  };
  // Strings: "user" 4, "document" 8, "content" 7, "text" 4, 800, "search_result" 13, "s" 1,
  // "t" 1, "text" 4, 400 → 1242 characters.
  assert.equal(bodyPromptBound(body, 0), Math.ceil(1242 / 4));
});

Deno.test("bodyPromptBound: an image is 1 600 tokens however it is spelled, its payload not read", () => {
  const huge = "A".repeat(400_000);
  const images = [
    { type: "image", source: { type: "base64", media_type: "image/png", data: huge } },
    { type: "image_url", image_url: { url: `data:image/png;base64,${huge}` } },
    { type: "input_image", image_url: "https://example.com/x.png" },
  ];
  for (const image of images) assert.equal(bodyPromptBound({ content: [image] }, 0), 1_600);
  // A data URL of an image anywhere else counts as an image too.
  assert.equal(bodyPromptBound({ x: `data:image/jpeg;base64,${huge}` }, 0), 1_600);
  // Other payloads (a PDF) are text as far as the bound knows: it may over-hold, never under.
  assert.equal(
    bodyPromptBound({ file_data: `data:application/pdf;base64,${huge}` }, 0) > 100_000,
    true,
  );
});

Deno.test("bodyPromptBound: never more than the model's context", () => {
  const body = { input: "x".repeat(1_000_000) };
  assert.equal(bodyPromptBound(body, 128_000), 128_000);
  assert.equal(bodyPromptBound(body, 0), 250_000);
});

Deno.test("bodyPromptBound: says when the prompt carries audio", () => {
  const seen: { audio?: boolean } = {};
  bodyPromptBound({ messages: [{ role: "user", content: "hi" }] }, 0, seen);
  assert.equal(seen.audio, undefined);
  bodyPromptBound(
    {
      messages: [{
        role: "user",
        content: [{ type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }],
      }],
    },
    0,
    seen,
  );
  assert.equal(seen.audio, true);
});

/** A PDF of `pages` page objects, uncompressed, as base64. */
function pdfOf(pages: number): string {
  const objs = Array.from(
    { length: pages },
    (_, i) => `${i + 3} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\n`,
  );
  const text = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" +
    `2 0 obj\n<< /Type /Pages /Count ${pages} /Kids [] >>\nendobj\n` + objs.join("") +
    "x".repeat(300_000) + "\n%%EOF\n";
  return btoa(text);
}

Deno.test("bodyPromptBound: a base64 PDF is held by its pages, not its characters, in every format", () => {
  const data = pdfOf(3);
  assert.ok(data.length > 400_000);
  const forms = [
    // messages
    { type: "document", source: { type: "base64", media_type: "application/pdf", data } },
    // chat
    { type: "file", file: { filename: "a.pdf", file_data: `data:application/pdf;base64,${data}` } },
    // responses
    { type: "input_file", filename: "a.pdf", file_data: `data:application/pdf;base64,${data}` },
  ];
  for (const part of forms) {
    const bound = bodyPromptBound({ content: [part] }, 1_000_000);
    // Three pages, and the few short strings around the data.
    assert.ok(bound >= 3 * PDF_PAGE_TOKENS && bound < 3 * PDF_PAGE_TOKENS + 50, `${bound}`);
  }
  // Pages it cannot see (compressed, or no PDF at all): its characters, as before.
  const opaque = btoa("%PDF-1.7\n" + "\u00ff".repeat(300_000));
  assert.ok(bodyPromptBound({ file_data: `data:application/pdf;base64,${opaque}` }, 0) > 100_000);
  assert.equal(pdfPromptTokens("not base64!"), undefined);
});

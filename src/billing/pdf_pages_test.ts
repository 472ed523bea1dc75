import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import { PDF_PAGE_TOKENS, pdfPromptTokens } from "./prompt_tokens.ts";

/** A PDF's text: the catalog, a page tree of `kids` (its `/Count` given apart), and `rest`. */
function pdf(kids: number[], count: number, rest: string): string {
  const refs = kids.map((k) => `${k} 0 R`).join(" ");
  return "%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" +
    `2 0 obj\n<< /Type /Pages /Count ${count} /Kids [${refs}] >>\nendobj\n` + rest +
    "\n%%EOF\n";
}

/** The pages the hold counts a PDF's text as (its tokens by page), undefined where unseen. */
const pdfPages = (text: string) => {
  const t = pdfPromptTokens(btoa(text));
  return t === undefined ? undefined : t / PDF_PAGE_TOKENS;
};

const page = (n: number, type = "/Type /Page ") =>
  `${n} 0 obj\n<< ${type}/Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\n`;

Deno.test("pdfPromptTokens: pages in compressed object streams beside one plain decoy are not seen, so none are counted", () => {
  // 200 pages in an object stream (their dictionaries deflated, unreadable here), one page
  // outside it: the reader bills 201 pages; counted as 1 the hold was 6 000 tokens.
  const kids = Array.from({ length: 201 }, (_, i) => i + 3);
  const text = pdf(
    kids,
    201,
    page(3) + "300 0 obj\n<< /Type /ObjStm /N 200 /First 1400 /Filter /FlateDecode /Length 9 >>\n" +
      "stream\nx\u009c\u00ed\u00c1\u0001\r\u0000\u0000\u0000\nendstream\nendobj\n",
  );
  assert.equal(pdfPages(text), undefined); // counted by its characters instead
});

Deno.test("pdfPromptTokens: a name spelt with #xx escapes is the same name", () => {
  const text = pdf([3, 4, 5], 3, page(3, "/Type /P#61ge ") + page(4, "/Ty#70e /Page ") + page(5));
  assert.equal(pdfPages(text), 3);
});

Deno.test("pdfPromptTokens: pages without /Type (readers take a leaf of the tree as a page) count by the tree", () => {
  const kids = Array.from({ length: 50 }, (_, i) => i + 3);
  const text = pdf(kids, 50, page(3) + kids.slice(1).map((k) => page(k, "")).join(""));
  assert.ok((pdfPages(text) ?? 0) >= 50, `${pdfPages(text)}`);
  // An indirect Kids array is not read: unseen.
  assert.equal(pdfPages(pdf([3], 1, page(3)).replace("/Kids [3 0 R]", "/Kids 9 0 R")), undefined);
  // An outline's /Count (bookmarks) is no page count.
  const outline = "9 0 obj\n<< /Type /Outlines /First 10 0 R /Last 11 0 R /Count 300 >>\nendobj\n";
  assert.equal(pdfPages(pdf([3, 4], 2, page(3) + page(4) + outline)), 2);
});

Deno.test("pdfPromptTokens: a comment is whitespace between a key and its value", () => {
  const text = pdf([3, 4], 2, page(3, "/Type%x\n/Page ") + page(4));
  assert.equal(pdfPages(text), 2);
});

Deno.test("pdfPromptTokens: a plain PDF is still held by its pages", () => {
  assert.equal(pdfPages(pdf([3, 4, 5], 3, page(3) + page(4) + page(5) + "x".repeat(100_000))), 3);
});

Deno.test("pdfPromptTokens: a hostile PDF of long runs is read in linear time", () => {
  const runs = [
    pdf([3], 1, "/Kids [" + "1 ".repeat(500_000) + "]"),
    pdf([3], 1, "/Kids [" + "1".repeat(1_000_000) + "]"),
    pdf([3], 1, "/Type " + "%".repeat(1_000_000) + "x"),
    pdf([3], 1, "/Type " + " %".repeat(500_000) + "x"),
    pdf([3], 1, "/Type /ObjStm ".repeat(80_000) + "stream\nx\nendstream"),
  ];
  for (const text of runs) {
    const t0 = performance.now();
    pdfPages(text);
    assert.ok(performance.now() - t0 < 1_000, `${performance.now() - t0} ms`);
  }
});

/** A PDF whose pages are in a deflated object stream, as PDF 1.5 producers write them. */
function objStmPdf(pages: number, filter = "/FlateDecode", data?: string): string {
  const kids = Array.from({ length: pages }, (_, i) => i + 3);
  const objs = kids.map(() => `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>`);
  const header = kids.map((k, i) => `${k} ${i * 60}`).join(" ");
  const body = header + "\n" + objs.join("\n");
  const z = data ?? String.fromCharCode(...deflateSync(new TextEncoder().encode(body)));
  return "%PDF-1.5\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" +
    `2 0 obj\n<< /Type /Pages /Count ${pages} /Kids [${
      kids.map((k) => `${k} 0 R`).join(" ")
    }] >>\n` +
    "endobj\n" +
    `90 0 obj\n<< /Type /ObjStm /N ${pages} /First ${header.length + 1} /Filter ${filter} ` +
    `/Length ${z.length} >>\nstream\n${z}\nendstream\nendobj\n%%EOF\n`;
}

Deno.test("pdfPromptTokens: pages in a deflated object stream are read there and counted", () => {
  // Kids name 12 pages; 12 page dictionaries inside the stream. Without reading the stream a
  // PDF 1.5 file is held by its characters (its whole size at four characters a token).
  assert.equal(pdfPages(objStmPdf(12)), 12);
  // Typed pages the Kids do not name (a decoy tree) are counted where they are found.
  const decoy = objStmPdf(12).replace(/\/Kids \[[^\]]*\]/, "/Kids [3 0 R]");
  assert.equal(pdfPages(decoy), 12);
});

Deno.test("pdfPromptTokens: an object stream that cannot be read is pages unseen", () => {
  assert.equal(pdfPages(objStmPdf(3, "/LZWDecode")), undefined);
  assert.equal(pdfPages(objStmPdf(3, "/Flate#44ecode")), 3); // the filter's name read as a reader does
  // Its type escaped, beside one plain decoy page: found all the same, its pages unseen.
  const escaped = objStmPdf(3, "/FlateDecode", "x").replace("/ObjStm", "/Obj#53tm");
  assert.equal(
    pdfPages(escaped.replace("endobj\n%%EOF", "endobj\n" + page(3) + "%%EOF")),
    undefined,
  );
  assert.equal(pdfPages(objStmPdf(3, "/FlateDecode", "not deflate at all")), undefined);
  // A stream that inflates past the budget (a bomb) is not read either.
  const bomb = String.fromCharCode(...deflateSync(new Uint8Array(80 * 1024 * 1024)));
  const t0 = performance.now();
  assert.equal(pdfPages(objStmPdf(3, "/FlateDecode", bomb)), undefined);
  assert.ok(performance.now() - t0 < 2_000);
});

Deno.test("pdfPromptTokens: the Kids of a name tree (a LaTeX PDF's destinations) are no pages", () => {
  // hyperref writes a name tree of every destination: its nodes' Kids named 99 "pages" of a
  // 17-page PDF (held at 594 000 tokens, the whole context, and refused with a 402).
  const dests = Array.from({ length: 40 }, (_, i) => `${i + 100} 0 R`).join(" ");
  const names = `9 0 obj\n<< /Kids [${dests}] >>\nendobj\n` +
    `10 0 obj\n<< /Limits [(a) (b)] /Kids [${dests}] >>\nendobj\n`;
  assert.equal(pdfPages(pdf([3, 4, 5], 3, page(3) + page(4) + page(5) + names)), 3);
});

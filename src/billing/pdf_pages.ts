/**
 * The pages of a PDF, read from its text (its bytes one character each) without parsing it:
 * for the hold, which bills a PDF by its pages (prompt_tokens.ts). An under-count is money the
 * hold does not cover — a PDF held for one page and billed for two hundred — so the count is
 * the larger of the readings a reader might follow (each page dictionary's `/Type /Page`, the
 * references of the tree's `/Kids`), and none at all where pages may be out of sight: then the
 * caller counts the PDF's characters, as for any text. `/Count` is not read: an outline's
 * (bookmarks, often more than the pages) is spelt alike, and a page no `/Kids` names is one
 * no reader reaches but by its `/Type /Page`.
 */

/**
 * Whitespace between tokens: PDF's own (NUL and form feed too) and comments, each comment to
 * its line's end — so that a run of it matches one way only (no backtracking to blow up on a
 * hostile PDF: every pattern here runs in linear time).
 */
const SPACE = String.raw`(?:[\s\0]|%[^\r\n]*[\r\n])`;
const W = `${SPACE}*`;
/** A reference `12 0 R`, from the start of its number. */
const REF_TEXT = String.raw`(?<!\d)\d+${SPACE}+\d+${SPACE}+R`;

const TYPE_PAGE = new RegExp(String.raw`/Type${W}/Page(?![A-Za-z])`, "g");
const KIDS = new RegExp(String.raw`/Kids${W}(\[[^\]]*\])?`, "g");
const REF = new RegExp(REF_TEXT, "g");
/**
 * Objects kept in a compressed object stream (PDF 1.5): their dictionaries, pages among them,
 * cannot be read here. One plain page beside them would otherwise be all the count saw.
 */
const OBJECT_STREAM = /\/ObjStm(?![A-Za-z])/;

/** The PDF's page count, or undefined where its pages cannot all be seen. */
export function pdfPages(pdf: string): number | undefined {
  // A name may spell any of its characters as #xx: `/P#61ge` is `/Page` to a reader.
  const text = pdf.includes("#")
    ? pdf.replace(/#([0-9A-Fa-f]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)))
    : pdf;
  if (OBJECT_STREAM.test(text)) return undefined;
  const typed = text.match(TYPE_PAGE)?.length ?? 0;
  // Readers (pypdf, say) take a leaf of the tree without `/Type` as a page: every reference of
  // the Kids arrays (the tree's inner nodes too, a few more) bounds the leaves.
  let kids = 0;
  for (const m of text.matchAll(KIDS)) {
    if (m[1] === undefined) return undefined; // an indirect Kids array: unseen
    kids += m[1].match(REF)?.length ?? 0;
  }
  const pages = Math.max(typed, kids);
  return pages > 0 ? pages : undefined;
}

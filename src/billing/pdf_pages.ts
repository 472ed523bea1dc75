/**
 * The pages of a PDF, read from its text (its bytes one character each) without parsing it:
 * for the hold, which bills a PDF by its pages (prompt_tokens.ts). An under-count is money the
 * hold does not cover — a PDF held for one page and billed for two hundred — so the count is
 * the larger of the readings a reader might follow (each page dictionary's `/Type /Page`, the
 * references of the tree's `/Kids`), the dictionaries of its compressed object streams read
 * too, and none at all where pages may be out of sight (a stream that cannot be read): then
 * the caller counts the PDF's characters, as for any text. `/Count` is not read: an outline's
 * (bookmarks, often more than the pages) is spelt alike, and a page no `/Kids` names is one
 * no reader reaches but by its `/Type /Page`.
 */
import { inflateSync } from "node:zlib";

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
const COUNT = new RegExp(String.raw`/Count${W}\d`);
const KIDS = new RegExp(String.raw`/Kids${W}(\[[^\]]*\])?`, "g");
const REF = new RegExp(REF_TEXT, "g");
/**
 * An object stream (PDF 1.5): objects, pages among them, kept deflated. Its dictionary up to
 * the stream's data (the `stream` keyword and its end of line).
 */
const OBJECT_STREAM = new RegExp(String.raw`/Type${W}/ObjStm(?![A-Za-z])`, "g");
const STREAM_START = /(?<![A-Za-z])stream(?:\r\n|\n|\r)/g;
const FIRST = new RegExp(String.raw`/First${W}(\d+)`);
const LENGTH = new RegExp(String.raw`/Length${W}(\d+)(?!\d)(?!${SPACE}+\d+${SPACE}+R)`);
const FLATE_ONLY = new RegExp(String.raw`/Filter${W}(?:/FlateDecode|\[${W}/FlateDecode${W}\])`);
/**
 * What the object streams of one PDF may inflate to, in all: past it (a deflate bomb, a ratio
 * of a thousand to one) the pages count as unseen and the PDF by its characters.
 */
const INFLATED_MAX = 32 * 1024 * 1024;

/** The PDF's page count, or undefined where its pages cannot all be seen. */
export function pdfPages(bytes: Uint8Array): number | undefined {
  const pdf = latin1.decode(bytes);
  const text = unescaped(pdf);
  // An object stream only its escaped name shows: not found where its data is read.
  if (count(text, OBJECT_STREAM) !== count(pdf, OBJECT_STREAM)) return undefined;
  // Its streams are read from the bytes: the unescaped text no longer lines up with them.
  const streams = objectStreams(pdf, bytes);
  if (streams === undefined) return undefined;
  // Typed pages anywhere (a reader reads an object from its offset on, past the next one's);
  // a page tree's Kids by its objects: plain ones end at `endobj`, an object stream's are cut
  // at their offsets.
  const typed = count(text, TYPE_PAGE) +
    streams.reduce((n, o) => n + count(unescaped(o.data), TYPE_PAGE), 0);
  const kids = treeKids([
    ...text.split("endobj"),
    ...streams.flatMap((o) => objectsOf({ ...o, data: unescaped(o.data) })),
  ]);
  if (kids === undefined) return undefined;
  const pages = Math.max(typed, kids);
  return pages > 0 ? pages : undefined;
}

/**
 * The references of the page tree's Kids arrays, which bound its leaves: readers (pypdf,
 * pdf.js, MuPDF) take a leaf without `/Type` as a page. A tree node has a `/Count`; the Kids of
 * a name tree (a LaTeX PDF's destinations) or of form fields have none, and are no pages.
 * Undefined for an indirect Kids array (unseen).
 */
function treeKids(objects: string[]): number | undefined {
  let kids = 0;
  for (const o of objects) {
    const tree = COUNT.test(o);
    for (const m of o.matchAll(KIDS)) {
      if (m[1] === undefined) return undefined;
      if (tree) kids += m[1].match(REF)?.length ?? 0;
    }
  }
  return kids;
}

/** A name may spell any of its characters as #xx: `/P#61ge` is `/Page` to a reader. */
function unescaped(pdf: string): string {
  return pdf.includes("#")
    ? pdf.replace(/#([0-9A-Fa-f]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)))
    : pdf;
}

function count(text: string, pattern: RegExp): number {
  return text.match(pattern)?.length ?? 0;
}

/** An object stream's data, inflated, and its `/First` (where its objects begin). */
interface ObjectStream {
  data: string;
  first: RegExpExecArray | null;
}

/**
 * The object streams of the PDF, inflated, each apart (none without any); undefined
 * where one cannot be read (another filter, predictors, a broken or oversized stream), which
 * leaves its pages unseen. Its objects are dictionaries as plain ones are, and read alike.
 */
function objectStreams(text: string, bytes: Uint8Array): ObjectStream[] | undefined {
  const out: ObjectStream[] = [];
  let left = INFLATED_MAX;
  OBJECT_STREAM.lastIndex = 0;
  // Each stream read once, the next looked for past its end: a text of markers is read in
  // linear time.
  for (let m; (m = OBJECT_STREAM.exec(text)) !== null;) {
    STREAM_START.lastIndex = m.index;
    const start = STREAM_START.exec(text);
    if (!start) return undefined;
    const dict = unescaped(text.slice(m.index, start.index));
    // An object stream's filter, if any, is Flate (others are not read here), with no
    // predictor (`/DecodeParms`).
    if (dict.includes("/Filter") && !FLATE_ONLY.test(dict)) return undefined;
    if (dict.includes("/DecodeParms")) return undefined;
    const from = start.index + start[0].length;
    const length = LENGTH.exec(dict);
    const end = length ? from + Number(length[1]) : text.indexOf("endstream", from);
    if (end < from) return undefined;
    let objects: string;
    try {
      objects = !dict.includes("/Filter") ? text.slice(from, end) : latin1.decode(
        inflateSync(bytes.subarray(from, end), { maxOutputLength: Math.max(left, 1) }),
      );
    } catch {
      return undefined; // not deflate, or past what is left of the budget
    }
    left -= objects.length;
    if (left < 0) return undefined;
    out.push({ data: objects, first: FIRST.exec(dict) });
    OBJECT_STREAM.lastIndex = Math.max(end, OBJECT_STREAM.lastIndex);
  }
  return out;
}

/**
 * An object stream's objects, cut at the offsets its header gives (pairs of object number and
 * offset, before `/First`); the whole of it as one where the header cannot be read.
 */
function objectsOf({ data, first }: ObjectStream): string[] {
  const at = first ? Number(first[1]) : NaN;
  const header = data.slice(0, at).trim().split(/\s+/).map(Number);
  if (!(at <= data.length) || header.length % 2 !== 0 || header.some((n) => !(n >= 0))) {
    return [data];
  }
  const offsets = header.filter((_, i) => i % 2 === 1).map((o) => at + o);
  return offsets.map((o, i) => data.slice(o, offsets[i + 1] ?? data.length));
}

/**
 * Every byte one character (windows-1252, as the encoding standard reads "latin1": one
 * character a byte, so offsets in the text are offsets in the bytes); the markers are ASCII.
 */
const latin1 = new TextDecoder("latin1");

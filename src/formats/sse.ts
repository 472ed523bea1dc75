/**
 * Server-sent events, by hand: a splitter that cuts decoded text into events and keeps each
 * event's original text, so that a pass-through stream can forward it untouched. Written
 * here rather than with eventsource-parser because that parser does not return the raw text
 * of an event and the tap (design §3) needs it; the grammar handled is the WHATWG one
 * (LF, CR or CRLF line ends, `event:`/`data:` fields, comments, multi-line data).
 */
export interface SseEvent {
  /** The `event:` field, if any. */
  event?: string;
  /** The `data:` lines joined by "\n". */
  data: string;
  /** The event's original text including its terminating blank line. */
  raw: string;
}

export class SseSplitter {
  #buf = "";
  /**
   * Text that came after `#buf` without a line break: it ends no event, so it is kept apart
   * and joined once, when a line break comes. Appending it to `#buf` and searching again made
   * every read cost the whole event so far: an image's megabytes of base64 in one event,
   * arriving in 16 KiB reads, took seconds of CPU per megabyte.
   */
  #more: string[] = [];
  #moreChars = 0;

  /** Feeds decoded text; calls `onEvent` for every complete event. */
  push(text: string, onEvent: (e: SseEvent) => void): void {
    if (!LINE_BREAK.test(text)) {
      this.#more.push(text);
      this.#moreChars += text.length;
      return;
    }
    this.#buf += this.#taken() + text;
    let start = 0;
    for (;;) {
      const end = findEventEnd(this.#buf, start);
      if (end < 0) break;
      const raw = this.#buf.slice(start, end);
      start = end;
      const ev = parseEvent(raw);
      if (ev) onEvent(ev);
    }
    if (start > 0) this.#buf = this.#buf.slice(start);
  }

  /**
   * End of input: a trailing event without its blank line is still delivered, unless it was
   * cut short (the connection dropped inside it: `data: [DO`, half a JSON object), which is no
   * event: a stream cut inside its last marker, after the whole answer, is not a failure.
   */
  end(onEvent: (e: SseEvent) => void): void {
    const rest = this.#buf + this.#taken();
    this.#buf = "";
    if (rest.trim() === "") return;
    const ev = parseEvent(rest + "\n\n");
    if (ev && !cutShort(ev.data)) onEvent(ev);
  }

  /** Bytes held waiting for the end of an event (to bound memory against a hostile upstream). */
  get pending(): number {
    return this.#buf.length + this.#moreChars;
  }

  #taken(): string {
    if (this.#more.length === 0) return "";
    const s = this.#more.join("");
    this.#more = [];
    this.#moreChars = 0;
    return s;
  }
}

const LINE_BREAK = /[\r\n]/;

/** Data that is the beginning of `[DONE]` or of a JSON value, not the whole of it. */
function cutShort(data: string): boolean {
  const d = data.trim();
  if ("[DONE]".startsWith(d)) return d.length > 0 && d !== "[DONE]";
  if (d[0] !== "{" && d[0] !== "[") return false;
  try {
    JSON.parse(d);
    return false;
  } catch {
    return true;
  }
}

/** Index just past the blank line ending the event that starts at `from`, or -1. */
function findEventEnd(s: string, from: number): number {
  for (let i = s.indexOf("\n", from); i >= 0; i = s.indexOf("\n", i + 1)) {
    const next = s.charCodeAt(i + 1);
    if (next === 10) return i + 2; // \n\n
    if (next === 13 && s.charCodeAt(i + 2) === 10) return i + 3; // \n\r\n
  }
  // Bare-CR streams are rare; handle them without slowing the common path.
  if (s.indexOf("\r", from) >= 0 && s.indexOf("\n", from) < 0) {
    const i = s.indexOf("\r\r", from);
    if (i >= 0) return i + 2;
  }
  return -1;
}

function parseEvent(raw: string): SseEvent | null {
  let event: string | undefined;
  let data: string | undefined;
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (line === "" || line.charCodeAt(0) === 58 /* : comment */) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "data") data = data === undefined ? value : data + "\n" + value;
    else if (field === "event") event = value;
  }
  if (data === undefined) return null;
  return event === undefined ? { data, raw } : { event, data, raw };
}

/** One SSE frame. */
export function sseFrame(data: string, event?: string): string {
  return event === undefined ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}

/**
 * A keep-alive comment line: every SSE reader skips it (both SDKs, Codex, Claude Code,
 * eventsource-parser), as they do OpenRouter's own `: OPENROUTER PROCESSING` while a model
 * thinks.
 */
export const SSE_KEEPALIVE_COMMENT = ": keep-alive\n\n";

/**
 * Control markers: how a test tells the mock what to do. A marker is text anywhere in the
 * request body, `[[mock:key=value,key2=value2]]` (a bare `key` means `key=1`), or a request
 * header `x-mock-key: value` (`x-mock-cache-read` is `cache_read`). Headers win over body
 * markers, so a test can steer a call whose body it cannot edit. Unknown keys and
 * malformed values are ignored.
 */

export interface Controls {
  /** Answer length in text tokens (1 token = 1 streamed delta). */
  tokens?: number;
  /** Delay before the first content event, ms. */
  first?: number;
  /** Delay before every later content event, ms. */
  every?: number;
  /** Answer with a tool call to this function. */
  tool?: string;
  /**
   * The arguments every tool call carries, as given (`args=` base64 of the JSON text, or of a
   * custom tool's free-form input), instead of ones made up from the tool's parameters: a
   * client that acts on a call (starts a sub-agent, runs a search) needs real values. Base64,
   * because the body holds the prompt JSON-escaped and a marker's values cannot hold commas.
   */
  args?: string;
  /** Number of parallel tool calls. */
  tools?: number;
  /**
   * Call the tool only while the request holds fewer tool results than this: the marker stays
   * in an agent's history, and without it the agent's loop would never end.
   */
  steps?: number;
  /** Answer this HTTP status with the vendor's error body, before any byte. */
  error?: number;
  /**
   * The prompt is past the model's context window: the vendor's 400 for it (the responses
   * API, streaming, says it in the stream after `response.created`, as OpenAI does).
   */
  overflow?: boolean;
  /**
   * The prompt takes this many tokens of the window: past it (Anthropic's 200K, 1M with the
   * `context-1m-2025-08-07` beta flag; OpenAI's 128K) the vendor's 400 as for `overflow`.
   */
  context?: number;
  /** The account has no access to Anthropic's long-context beta: a call with its flag gets a 400. */
  noLongContext?: boolean;
  /** After this many content events, reset the connection (no terminal event). */
  cut?: number;
  /** After this many content events, send the vendor's in-stream error event and end. */
  fail?: number;
  /** After this many content events, send nothing more until the client goes away. */
  stall?: number;
  /** `false` when usage must be left out (`usage=none`). */
  usage?: boolean;
  cacheRead?: number;
  cacheWrite?: number;
  reasoning?: number;
  /** Web searches the answer reports having run (a server tool's work, billed per search). */
  searches?: number;
  finish?: "stop" | "length" | "content_filter";
  /** Answer with the received request body, as text. */
  echo?: boolean;
  /** The model the answer says served it (a router's pick), instead of the one asked for. */
  model?: string;
}

/** Upper bounds on marker values, so a typo cannot make the mock allocate or wait forever. */
const tokensMax = 100_000; // longer than any real answer the tests or benchmark need
const delayMsMax = 600_000; // ten minutes: beyond any client or gateway timeout
const toolsMax = 16; // more parallel calls than any vendor emits in practice

const MARK = "[[mock:";

/** Controls from the body text and the `x-mock-*` headers (lower-cased names). */
export function parseControls(text: string, headers: Record<string, string>): Controls {
  const c: Controls = {};
  for (let at = text.indexOf(MARK); at >= 0; at = text.indexOf(MARK, at + 1)) {
    const end = text.indexOf("]]", at);
    if (end < 0) break;
    for (const pair of text.slice(at + MARK.length, end).split(",")) {
      const eq = pair.indexOf("=");
      if (eq < 0) set(c, pair.trim(), "1");
      else set(c, pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  }
  for (const name in headers) {
    if (name.startsWith("x-mock-")) {
      set(c, name.slice(7).replaceAll("-", "_"), headers[name].trim());
    }
  }
  return c;
}

/** The `x-mock-*` headers as one string (part of the plan cache key). */
export function controlHeaders(headers: Record<string, string>): string {
  let s = "";
  for (const name in headers) {
    if (name.startsWith("x-mock-")) s += name + ":" + headers[name] + "\n";
  }
  return s;
}

function int(v: string, max: number): number | undefined {
  if (!/^\d{1,9}$/.test(v)) return undefined;
  return Math.min(Number(v), max);
}

/** Numeric keys: marker name → field and largest value. */
const NUMERIC: Record<string, [field: keyof Controls, max: number]> = {
  tokens: ["tokens", tokensMax],
  first: ["first", delayMsMax],
  every: ["every", delayMsMax],
  tools: ["tools", toolsMax],
  steps: ["steps", tokensMax],
  cut: ["cut", tokensMax],
  fail: ["fail", tokensMax],
  stall: ["stall", tokensMax],
  context: ["context", tokensMax * 100],
  cache_read: ["cacheRead", tokensMax * 100],
  cache_write: ["cacheWrite", tokensMax * 100],
  reasoning: ["reasoning", tokensMax],
  searches: ["searches", toolsMax],
};

function set(c: Controls, key: string, v: string): void {
  const numeric = NUMERIC[key];
  if (numeric) {
    const n = int(v, numeric[1]);
    if (n !== undefined) (c as Record<string, unknown>)[numeric[0]] = n;
    return;
  }
  switch (key) {
    case "tool":
      if (/^[A-Za-z0-9_.-]{1,64}$/.test(v)) c.tool = v;
      return;
    case "args": {
      const text = base64Text(v);
      if (text !== undefined) c.args = text;
      return;
    }
    case "error": {
      const s = int(v, 999);
      if (s !== undefined && s >= 400 && s <= 599) c.error = s;
      return;
    }
    case "usage":
      c.usage = v !== "none";
      return;
    case "finish":
      if (v === "stop" || v === "length" || v === "content_filter") c.finish = v;
      return;
    case "echo":
      c.echo = v !== "0" && v !== "false";
      return;
    case "overflow":
      c.overflow = v !== "0" && v !== "false";
      return;
    case "no_long_context":
      c.noLongContext = v !== "0" && v !== "false";
      return;
    case "model":
      if (/^[A-Za-z0-9_.:\/-]{1,100}$/.test(v)) c.model = v;
      return;
  }
}

/** The UTF-8 text of base64 in either alphabet (`+/` or URL-safe `-_`), padded or not. */
function base64Text(v: string): string | undefined {
  if (v === "" || v.length > 100_000 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(v)) return undefined;
  try {
    const bin = atob(v.replaceAll("-", "+").replaceAll("_", "/").replace(/=+$/, ""));
    const bytes = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

import { SseSplitter } from "../../src/formats/sse.ts";

export interface Sse {
  event?: string;
  data: string;
}

/** The events of a whole SSE body, read with the gateway's own splitter. */
export function parseSse(text: string): Sse[] {
  const out: Sse[] = [];
  const s = new SseSplitter();
  const push = (e: Sse) =>
    out.push(e.event === undefined ? { data: e.data } : { event: e.event, data: e.data });
  s.push(text, push);
  s.end(push);
  return out;
}

/**
 * Floor-scan: floor-pass plus exactly one JavaScript stage, the least any metering gateway
 * on Deno can do. The stage forwards each upstream chunk unchanged, decodes the text by hand
 * (one TextDecoder, no extra stream stages), splits it into SSE events and JSON-parses only
 * the events that carry usage. Whole (non-stream) bodies are read, their usage parsed, and
 * the text returned. Environment: UPSTREAM_URL, PORT. Listens on 127.0.0.1 only.
 */
const upstream = Deno.env.get("UPSTREAM_URL") ?? "http://127.0.0.1:8788";
const FORWARD = ["content-type", "authorization", "x-api-key", "anthropic-version"];
const USAGE = '"usage":{';

function pathOf(url: string): string {
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

/** Usage seen (so the parse cannot be optimised away); printed on exit for a sanity check. */
let outputTokens = 0;

function meterStage(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  let carry = "";
  const event = (text: string, start: number, end: number) => {
    const u = text.indexOf(USAGE, start);
    if (u < 0 || u >= end) return;
    const d = text.lastIndexOf("data:", u);
    const data = JSON.parse(text.slice(d + 5, end));
    const usage = data.usage ?? data.message?.usage;
    outputTokens += usage?.completion_tokens ?? usage?.output_tokens ?? 0;
  };
  return new TransformStream({
    transform(chunk, controller) {
      controller.enqueue(chunk);
      const text = carry + decoder.decode(chunk, { stream: true });
      let start = 0;
      for (let end; (end = text.indexOf("\n\n", start)) >= 0; start = end + 2) {
        event(text, start, end);
      }
      carry = start === 0 ? text : text.slice(start);
    },
    flush() {
      const text = carry + decoder.decode();
      if (text.trim() !== "") event(text, 0, text.length);
    },
  });
}

Deno.addSignalListener("SIGTERM", () => {
  console.log(`floor-scan: ${outputTokens} output tokens metered`);
  Deno.exit(0);
});

Deno.serve({
  hostname: "127.0.0.1",
  port: Number(Deno.env.get("PORT") ?? 0),
  onListen: ({ port }) => console.log(`floor-scan listening on http://127.0.0.1:${port}`),
}, async (req) => {
  const headers: Record<string, string> = {};
  for (const name of FORWARD) {
    const v = req.headers.get(name);
    if (v !== null) headers[name] = v;
  }
  const up = await fetch(upstream + pathOf(req.url), {
    method: req.method,
    headers,
    body: req.body ? await req.arrayBuffer() : undefined,
  });
  const type = up.headers.get("content-type") ?? "application/json";
  if (!up.body || !type.startsWith("text/event-stream")) {
    const text = await up.text();
    if (up.ok) outputTokens += JSON.parse(text).usage?.completion_tokens ?? 0;
    return new Response(text, { status: up.status, headers: { "content-type": type } });
  }
  return new Response(up.body.pipeThrough(meterStage()), {
    status: up.status,
    headers: { "content-type": type },
  });
});

/**
 * Floor-pass: the least a Deno proxy can do. It forwards the request to the upstream and
 * hands the upstream body to the `Response` untouched, so Deno pipes it natively (the
 * runtime's limit for any gateway written on it). Environment: UPSTREAM_URL (the mock's
 * root, e.g. http://127.0.0.1:8788), PORT. Listens on 127.0.0.1 only.
 */
const upstream = Deno.env.get("UPSTREAM_URL") ?? "http://127.0.0.1:8788";
const FORWARD = ["content-type", "authorization", "x-api-key", "anthropic-version"];

function pathOf(url: string): string {
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

Deno.serve({
  hostname: "127.0.0.1",
  port: Number(Deno.env.get("PORT") ?? 0),
  onListen: ({ port }) => console.log(`floor-pass listening on http://127.0.0.1:${port}`),
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
  return new Response(up.body, {
    status: up.status,
    headers: { "content-type": up.headers.get("content-type") ?? "application/json" },
  });
});

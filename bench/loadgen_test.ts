import assert from "node:assert/strict";
import { dist, run } from "./loadgen.ts";

Deno.test("loadgen: dist percentiles", () => {
  const d = dist([5, 1, 4, 2, 3, 6, 7, 8, 9, 10]);
  assert.equal(d.n, 10);
  assert.equal(d.p50, 5);
  assert.equal(d.p90, 9);
  assert.equal(d.p99, 10);
  assert.equal(d.max, 10);
  assert.equal(d.mean, 5.5);
  assert.ok(Number.isNaN(dist([]).p50));
});

Deno.test("loadgen: chunked streams and whole bodies, timed to the marker", async () => {
  const enc = new TextEncoder();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.arrayBuffer();
    if (new URL(req.url).pathname === "/whole") {
      return new Response(JSON.stringify({ text: "tok0 tok1" }), {
        headers: { "content-type": "application/json" },
      });
    }
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (i === 1) await new Promise((r) => setTimeout(r, 5));
        // A chunk boundary inside the marker must not hide it.
        const parts = ['data: {"x":"to', 'k0"}\n\n', "data: [DONE]\n\n"];
        c.enqueue(enc.encode(parts[i++]));
        if (i === parts.length) c.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    for (const path of ["/stream", "/whole"]) {
      const r = await run({
        port: server.addr.port,
        path,
        headers: { authorization: "Bearer x" },
        body: "{}",
        concurrency: 2,
        // A window long enough that a machine busy with other work still completes a few
        // requests in it: CI once saw none finish in 300 ms.
        warmupMs: 50,
        durationMs: 2000,
        marker: "tok0",
        drainMs: 2000,
      });
      assert.equal(r.errors, 0, r.firstError);
      assert.equal(r.statusErrors, 0);
      assert.ok(
        r.completed > 5,
        `${path}: ${r.completed} completed (${r.firstError ?? "no error"})`,
      );
      assert.equal(r.ttft.n, r.completed);
      assert.ok(r.latency.p50 >= r.ttfb.p50);
      if (path === "/stream") assert.ok(r.ttft.p50 >= 4, `ttft ${r.ttft.p50} ms`);
    }
  } finally {
    await server.shutdown();
  }
});

import assert from "node:assert/strict";
import { createApp, pathOf } from "./app.ts";
import type { AppContext } from "./pipeline/context.ts";
import type { Listing } from "./catalogue/listing.ts";

Deno.test("pathOf reads the same path as the URL parser", () => {
  for (
    const url of [
      "http://127.0.0.1:8080/v1/chat/completions",
      "http://localhost/v1/messages?beta=true",
      "http://localhost/v1/models#frag",
      "https://gw.example.com/v1/generations/gen_abc%2Fdef",
      "http://localhost/v1/../v1/chat/completions",
      "http://localhost/v1/./models",
      "http://localhost/v1\\models",
      "http://localhost",
      "http://localhost/",
      "http://localhost/v1/models/?x=/y",
      "http://[::1]:8080/health",
      "http://localhost/v1/file.name.json",
    ]
  ) {
    assert.equal(pathOf(url), new URL(url).pathname, url);
  }
});

Deno.test("CORS: a browser's client may read every header it decides its retries by", async () => {
  // The 405 answer needs nothing of the gateway's context: the router alone renders it.
  const handle = createApp({} as AppContext, { listing: {} as Listing });
  const res = await handle(
    new Request("http://localhost/v1/chat/completions", {
      headers: { origin: "https://app.example.com" },
    }),
  );
  await res.body?.cancel();
  assert.equal(res.status, 405);
  const exposed = (res.headers.get("access-control-expose-headers") ?? "").split(/,\s*/);
  for (const h of ["x-generation-id", "retry-after", "x-should-retry"]) {
    assert.ok(exposed.includes(h), `${h} in ${exposed}`);
  }
});

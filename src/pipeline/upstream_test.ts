import assert from "node:assert/strict";
import { retryAfterOf } from "./upstream.ts";

Deno.test("retryAfterOf: an upstream's wait in whole seconds, from retry-after-ms or retry-after", () => {
  const of = (h: Record<string, string>) => retryAfterOf(new Headers(h), Date.UTC(2026, 0, 1));
  assert.equal(of({}), undefined);
  assert.equal(of({ "retry-after": "30" }), 30);
  assert.equal(of({ "retry-after": "0.2" }), 1, "at least a second");
  assert.equal(of({ "retry-after-ms": "1500", "retry-after": "9" }), 2, "the ms figure first");
  assert.equal(of({ "retry-after": "Thu, 01 Jan 2026 00:00:42 GMT" }), 42);
  assert.equal(of({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }), 1, "a date past");
  assert.equal(of({ "retry-after": "86400" }), 600, "capped");
  assert.equal(of({ "retry-after": "soon" }), undefined);
  assert.equal(of({ "retry-after-ms": "-5" }), undefined);
});

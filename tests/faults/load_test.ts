/**
 * Spend safety and broken streams under load (issue 7, bounded sizes; `deno task soak` runs
 * the full ones): many requests on one account never overspend, identical requests against
 * one hold admit exactly one, a key's spend limit stops it with 402, and streams broken at
 * random (seeded) points — client disconnect, upstream reset, upstream error event, stall
 * past the idle timeout, client gone right after the usage chunk — settle once each, charged
 * what the mock upstream sent, under both cancel policies.
 *
 * One file on purpose: every test file pays PGlite's start-up (seconds under WASM) once.
 */
import {
  brokenStreams,
  drainOutlivesIdle,
  exactlyOneHold,
  keySpendLimit,
  loadOnOneAccount,
  slowReader,
} from "./scenarios.ts";

Deno.test("faults: 200 requests, 50 at a time, on a balance of ~10 holds never overspend", async () => {
  await loadOnOneAccount({ requests: 200, concurrency: 50, holds: 10 });
});

Deno.test("faults: 100 identical concurrent requests against exactly one hold admit one", async () => {
  await exactlyOneHold(100);
});

Deno.test("faults: a key's spend limit stops it with 402; the account's other keys still work", async () => {
  await keySpendLimit();
});

Deno.test("faults: 150 broken streams (CANCEL_POLICY=abort) settle once, charged as sent", async () => {
  await brokenStreams({ streams: 150, concurrency: 50, seed: 7, policy: "abort" });
});

Deno.test("faults: 60 broken streams (CANCEL_POLICY=drain) settle once, charged as sent", async () => {
  await brokenStreams({ streams: 60, concurrency: 30, seed: 11, policy: "drain" });
});

Deno.test("faults: a client that pauses reading is not a stalled provider", async () => {
  await slowReader({ tokens: 50_000, pauseMs: 1_500, idleMs: 300 });
});

Deno.test("faults: CANCEL_POLICY=drain reads on past the idle timeout while the provider sends", async () => {
  await drainOutlivesIdle();
});

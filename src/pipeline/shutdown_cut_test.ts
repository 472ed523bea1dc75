/**
 * Its own module: `endOpenStreams` is once a process (shutdown), and what it leaves behind must
 * not reach other tests.
 */
import assert from "node:assert/strict";
import { endOpenStreams, openStreams, shutdownCut } from "./respond.ts";

Deno.test("shutdownCut: a call registered after the grace's one sweep is cut at once", () => {
  const before = shutdownCut(new AbortController().signal);
  endOpenStreams();
  assert.ok(before.signal.aborted && before.ended, "the sweep cuts a call already waiting");
  before.dispose();
  // A call that reached its upstream only now (an image's reference fetch, a slow reserve) would
  // otherwise run for as long as the upstream takes, holding the process past its grace.
  const client = new AbortController();
  const late = shutdownCut(client.signal);
  assert.ok(late.signal.aborted, "cut at registration");
  assert.ok(late.ended, "as shutdown's cut (its client gets a 503), not its client leaving");
  late.dispose();
  assert.equal(openStreams.size, 0);
});

/**
 * Graceful shutdown of the real process: on SIGTERM an open stream gets SHUTDOWN_GRACE_MS,
 * then ends with the format's in-stream error; the process settles it and exits 0.
 */
import assert from "node:assert/strict";
import { longStream, withGatewayProcesses } from "../helpers/process.ts";

Deno.test("shutdown: SIGTERM ends an open stream after the grace period, settles it, exits 0", () =>
  withGatewayProcesses(async ({ spawn, inStore }) => {
    const gw = await spawn({ SHUTDOWN_GRACE_MS: "500" });
    const { key, accountId, port, proc } = gw;
    assert.ok(key && accountId && port, "start-up printed a key, the account and the port");
    const { res, id } = await longStream(gw);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    const t0 = performance.now();
    proc.kill("SIGTERM");
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      text += r.value;
    }
    const took = performance.now() - t0;
    assert.ok(took >= 400 && took < 10_000, `the stream ran for the grace period (${took} ms)`);
    assert.match(text, /"finish_reason":"error"/);
    assert.doesNotMatch(text, /\[DONE\]/);
    await gw.drain();
    assert.equal((await proc.status).code, 0);

    // The process is gone: the store can be opened here and must hold the settlement.
    await inStore(async (store) => {
      const g = await store.getGeneration(accountId, id);
      assert.equal(g?.status, "failed");
      assert.ok(g!.cost > 0n, "what was relayed before the end is billed");
      const ledger = await store.listLedger(accountId);
      assert.equal(ledger.filter((e) => e.generationId === id).length, 1);
      const a = (await store.getAccount(accountId))!;
      assert.equal(a.held, 0n);
      assert.equal(ledger.reduce((s, e) => s + e.amount, 0n), a.balance);
    });
  }));

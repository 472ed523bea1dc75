/**
 * A crash of the real process (SIGKILL, nothing flushed): a generation it had in flight long
 * enough to be journaled is in the store as `running` with its cost so far, and the next
 * start (the embedded store has one process: whatever is running at start was left by a dead
 * one) settles it as `interrupted`, billed at that checkpoint, exactly once.
 */
import assert from "node:assert/strict";
import { journaled, longStream, withGatewayProcesses } from "../helpers/process.ts";

Deno.test("crash: a stream in flight when the process dies is billed at its last checkpoint on restart", () =>
  withGatewayProcesses(async ({ spawn, inStore }) => {
    const gw = await spawn();
    const accountId = gw.accountId!;
    const { res, id } = await longStream(gw);
    const reader = res.body!.getReader();
    // Read on past the journal's first checkpoint (opened + journalAfterMs, on the next tick,
    // written as soon as the machine gets to it).
    const reading = (async () => {
      while (!(await reader.read()).done) { /* the stream runs on */ }
    })().catch(() => {});
    await journaled(gw, id);
    gw.proc.kill("SIGKILL");
    await gw.proc.status;
    await reader.cancel().catch(() => {});
    await reading;
    await gw.proc.stdout.cancel().catch(() => {});

    const balanceBefore = await inStore(async (store) => {
      const g = (await store.getGeneration(accountId, id))!;
      assert.ok(g, "the generation in flight is in the history");
      assert.equal(g.status, "running");
      assert.ok(g.cost > 0n, "with what it had consumed by its checkpoint");
      return (await store.getAccount(accountId))!.balance;
    });

    // The next start closes it, billed at that checkpoint.
    const next = await spawn({ SHUTDOWN_GRACE_MS: "0" });
    next.proc.kill("SIGTERM");
    await next.drain();
    assert.equal((await next.proc.status).code, 0);
    await inStore(async (store) => {
      const g = (await store.getGeneration(accountId, id))!;
      assert.equal(g.status, "interrupted");
      assert.ok(g.cost > 0n);
      const debits = (await store.listLedger(accountId)).filter((e) => e.generationId === id);
      assert.deepEqual(debits.map((e) => e.amount), [-g.cost]);
      const a = (await store.getAccount(accountId))!;
      assert.equal(a.balance, balanceBefore - g.cost);
      assert.equal(a.held, 0n);
    });
  }));

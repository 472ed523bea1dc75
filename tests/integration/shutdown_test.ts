/**
 * Graceful shutdown of the real process: on SIGTERM an open stream gets SHUTDOWN_GRACE_MS,
 * then ends with the format's in-stream error; the process settles it and exits 0.
 */
import assert from "node:assert/strict";
import type { Store } from "../../src/store/store.ts";
import { type GatewayProcess, longStream, withGatewayProcesses } from "../helpers/process.ts";

/** A JSON POST to the gateway process with its demo key. */
function post(gw: GatewayProcess, path: string, body: unknown): Promise<Response> {
  return fetch(`http://127.0.0.1:${gw.port}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Nothing held on the account, and its ledger sums to its balance. The ledger. */
async function assertBalanced(store: Store, accountId: string) {
  const a = (await store.getAccount(accountId))!;
  assert.equal(a.held, 0n, "the hold is released");
  const ledger = await store.listLedger(accountId);
  assert.equal(ledger.reduce((s, e) => s + e.amount, 0n), a.balance);
  return ledger;
}

/**
 * SIGTERM while `pending` (a call the upstream answers only after 30 s) waits: the call must
 * end with the grace, as a 503, and the process exit 0 with it. The answer's text.
 */
async function sigtermDuring(
  gw: GatewayProcess,
  pending: Promise<Response>,
): Promise<{ res: Response; text: string }> {
  // The call is reserved and waiting on the mock before the signal comes.
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  gw.proc.kill("SIGTERM");
  const res = await pending;
  const text = await res.text();
  const took = performance.now() - t0;
  assert.ok(took < 10_000, `the call ended with the grace period, not the upstream (${took} ms)`);
  assert.equal(res.status, 503, text);
  await gw.drain();
  assert.equal((await gw.proc.status).code, 0);
  assert.ok(performance.now() - t0 < 10_000, "the process exited with the grace period");
  return { res, text };
}

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
      const ledger = await assertBalanced(store, accountId);
      assert.equal(ledger.filter((e) => e.generationId === id).length, 1);
    });
  }));

Deno.test("shutdown: a whole answer still awaited when the grace ends is a 503, settled, and the process exits", () =>
  withGatewayProcesses(async ({ spawn, inStore }) => {
    const gw = await spawn({ SHUTDOWN_GRACE_MS: "500" });
    const { key, accountId, port } = gw;
    assert.ok(key && accountId && port, "start-up printed a key, the account and the port");
    // A model that takes its time over a whole answer (or a client that left unnoticed): the
    // upstream says nothing for 30 s, past any grace a supervisor gives.
    const pending = post(gw, "/v1/messages", {
      model: "openai/gpt-4o-mini",
      max_tokens: 100,
      messages: [{ role: "user", content: "slow [[mock:first=30000]]" }],
    });
    const { res } = await sigtermDuring(gw, pending);
    const id = res.headers.get("x-generation-id");
    assert.ok(id, "the answer names its generation");

    await inStore(async (store) => {
      const g = await store.getGeneration(accountId, id);
      assert.equal(g?.status, "failed");
      const ledger = await assertBalanced(store, accountId);
      assert.ok(ledger.filter((e) => e.generationId === id).length <= 1);
    });
  }));

Deno.test("shutdown: a stream still in its first-token peek when the grace ends is a 503, and the process exits", () =>
  withGatewayProcesses(async ({ spawn, inStore }) => {
    const gw = await spawn({ SHUTDOWN_GRACE_MS: "100" });
    const { key, accountId, port } = gw;
    assert.ok(key && accountId && port, "start-up printed a key, the account and the port");
    const ask = (content: string) =>
      post(gw, "/v1/chat/completions", {
        model: "openai/gpt-4o-mini",
        stream: true,
        messages: [{ role: "user", content }],
      });
    // A first call warms the process, so that the next reaches its upstream at once.
    await (await ask("warm [[mock:tokens=1]]")).text();
    // The upstream's headers come at once and its first token only after 30 s: the gateway
    // holds the status line back for a second (the peek) before it commits the stream.
    const pending = ask("slow [[mock:first=30000]]");
    const { res } = await sigtermDuring(gw, pending);
    const id = res.headers.get("x-generation-id");
    assert.ok(id, "the answer names its generation");

    await inStore(async (store) => {
      const g = await store.getGeneration(accountId, id);
      assert.equal(g?.status, "failed");
      await assertBalanced(store, accountId);
    });
  }));

Deno.test("shutdown: an image still being made when the grace ends is a 503, settled, and the process exits", () =>
  withGatewayProcesses(async ({ spawn, inStore }) => {
    const gw = await spawn({ SHUTDOWN_GRACE_MS: "500" });
    const { key, accountId, port } = gw;
    assert.ok(key && accountId && port, "start-up printed a key, the account and the port");
    // An image model that takes its time (a minute is usual at high resolutions): the upstream
    // says nothing for 30 s, past any grace a supervisor gives.
    const pending = post(gw, "/v1/images/generations", {
      model: "openai/gpt-image-1",
      prompt: "slow [[mock:first=30000]]",
    });
    const { text } = await sigtermDuring(gw, pending);
    // The images endpoint's own (coded) envelope.
    assert.equal(typeof JSON.parse(text).error.code, "string");

    await inStore(async (store) => {
      await assertBalanced(store, accountId);
      const gens = await store.listGenerations(accountId, { limit: 10 });
      assert.equal(gens.length, 1);
      assert.equal(gens[0].status, "failed");
      assert.equal(gens[0].cost, 0n);
    });
  }));

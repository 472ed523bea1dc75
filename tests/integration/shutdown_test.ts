/**
 * Graceful shutdown of the real process: on SIGTERM an open stream gets SHUTDOWN_GRACE_MS,
 * then ends with the format's in-stream error; the process settles it and exits 0.
 */
import assert from "node:assert/strict";
import { startMock } from "../../src/providers/mock/server.ts";
import { openStore } from "../../src/store/mod.ts";

async function* lines(stream: ReadableStream<Uint8Array>) {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
    }
  }
}

Deno.test("shutdown: SIGTERM ends an open stream after the grace period, settles it, exits 0", async () => {
  const mock = startMock({ port: 0, hostname: "127.0.0.1" });
  const dataDir = await Deno.makeTempDir();
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../../src/main.ts", import.meta.url).pathname],
    env: {
      DATA_DIR: dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      OPENAI_API_KEY: "mock-key",
      OPENAI_BASE_URL: `${mock.url}/v1`,
      SHUTDOWN_GRACE_MS: "500",
      // The embedded store is the one inspected below, whatever the suite runs on.
      DATABASE_URL: "",
      REDIS_URL: "",
      LOG_LEVEL: "error",
    },
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).spawn();
  try {
    let key = "", accountId = "", port = 0;
    const out = lines(proc.stdout);
    for await (const line of out) {
      key ||= /^tg_[A-Za-z0-9]+$/.test(line) ? line : "";
      accountId ||= /(acc_[A-Za-z0-9]+)/.exec(line)?.[1] ?? "";
      const m = /^Listening on http:\/\/[^:]+:(\d+)/.exec(line);
      if (m) {
        port = Number(m[1]);
        break;
      }
    }
    assert.ok(key && accountId && port, "start-up printed a key, the account and the port");
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "openai/gpt-4o-mini",
        stream: true,
        messages: [{ role: "user", content: "long [[mock:tokens=5000,every=10]]" }],
      }),
    });
    assert.equal(res.status, 200);
    const id = res.headers.get("x-generation-id")!;
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
    for await (const _ of out) { /* drain stdout until the process exits */ }
    assert.equal((await proc.status).code, 0);

    // The process is gone: the store can be opened here and must hold the settlement.
    const store = await openStore({ dataDir });
    try {
      const g = await store.getGeneration(accountId, id);
      assert.equal(g?.status, "failed");
      assert.ok(g!.cost > 0n, "what was relayed before the end is billed");
      const ledger = await store.listLedger(accountId);
      assert.equal(ledger.filter((e) => e.generationId === id).length, 1);
      const a = (await store.getAccount(accountId))!;
      assert.equal(a.held, 0n);
      assert.equal(ledger.reduce((s, e) => s + e.amount, 0n), a.balance);
    } finally {
      await store.close();
    }
  } finally {
    try {
      proc.kill("SIGKILL");
    } catch { /* already exited */ }
    await proc.status;
    await mock.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

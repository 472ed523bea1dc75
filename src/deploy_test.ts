/** The Deno Deploy entry: a failed start is not remembered, and isolates sweep. */
import assert from "node:assert/strict";
import { parseConfig } from "./config.ts";
import { deployApp } from "./deploy.ts";
import { openStore } from "./store/mod.ts";
import { generateKey } from "./store/keys.ts";
import { startMock } from "./providers/mock/server.ts";
import { checkInvariants, mockEnv } from "../tests/helpers/gateway.ts";
import { scratchDatabase } from "../tests/helpers/store.ts";
import { waitFor } from "../tests/helpers/time.ts";

const DATABASE_URL = Deno.env.get("DATABASE_URL");

Deno.test("deploy: without DATABASE_URL every request is a 503 that says to retry", async () => {
  const app = deployApp(() => parseConfig({}));
  const errors: unknown[] = [];
  const original = console.error;
  console.error = (...a: unknown[]) => errors.push(a.join(" "));
  try {
    for (let i = 0; i < 2; i++) {
      const res = await app.fetch(new Request("http://x/healthz"));
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "5");
      const body = await res.json();
      assert.equal(typeof body.error.message, "string");
      assert.equal(body.error.code, 503, "the generic envelope");
    }
    const messages = await app.fetch(new Request("http://x/v1/messages", { method: "POST" }));
    assert.equal(messages.status, 503);
    const m = await messages.json();
    assert.equal(m.type, "error", "a messages client gets its own envelope");
    assert.equal(m.error.type, "overloaded_error");
  } finally {
    console.error = original;
    await app.close();
  }
  assert.equal(errors.length, 3, "each failed start is logged, one line each");
  // Right under `deno serve` as on Deno Deploy: it names the entry, not one platform.
  assert.equal(
    String(errors[0]),
    "Tollgate could not start. config: DATABASE_URL is required by src/deploy.ts " +
      "(Deno Deploy, deno serve): it keeps no embedded store; for one process on the embedded " +
      "store run src/main.ts (deno task start)",
  );
});

Deno.test({
  name: "deploy: a start that failed is tried again; requests sweep a dead isolate's generations",
  ignore: !DATABASE_URL,
  fn: async () => {
    const db = await scratchDatabase(DATABASE_URL!);
    const env: Record<string, string> = {
      // Nothing listens on port 1: the first start fails to reach the database.
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
      SWEEP_AFTER_MS: "1000",
      LOG_LEVEL: "error",
    };
    const app = deployApp(() => parseConfig(env));
    const original = console.error;
    console.error = () => {};
    try {
      const down = await app.fetch(new Request("http://x/healthz"));
      assert.equal(down.status, 503);
      await down.body?.cancel();

      // An isolate that died mid-generation left this one running, its hold taken.
      const store = await openStore({ databaseUrl: db.url });
      try {
        const account = await store.createAccount("d", 1_000_000n);
        const key = await store.createKey(account.id, "b".repeat(64), "tg_d", null);
        assert.ok(
          await store.reserve({
            id: "gen_orphan",
            accountId: account.id,
            keyId: key.id,
            endpoint: "chat",
            model: "m",
            stream: true,
            hold: 400_000n,
          }),
        );
        await new Promise((r) => setTimeout(r, 1_200));

        env.DATABASE_URL = db.url;
        const up = await app.fetch(new Request("http://x/healthz"));
        assert.equal(up.status, 200, "the second request starts the gateway afresh");
        await up.body?.cancel();

        let status: string | undefined;
        for (let i = 0; i < 100 && status !== "interrupted"; i++) {
          status = (await store.getGeneration(account.id, "gen_orphan"))?.status;
          if (status !== "interrupted") await new Promise((r) => setTimeout(r, 50));
        }
        assert.equal(status, "interrupted");
        assert.equal((await store.getAccount(account.id))!.held, 0n, "its hold is released");
      } finally {
        await store.close();
      }
    } finally {
      console.error = original;
      await app.close();
      await db.drop();
    }
  },
});

Deno.test({
  name: "deploy: under deno serve, SIGTERM stops the process once its requests are done",
  ignore: !DATABASE_URL || Deno.build.os === "windows",
  fn: async () => {
    const db = await scratchDatabase(DATABASE_URL!);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["serve", "-A", "--port", "0", new URL("./deploy.ts", import.meta.url).pathname],
      env: { DATABASE_URL: db.url, LOG_LEVEL: "error" },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const exited = child.status;
    try {
      // `deno serve` names its port on stderr.
      let seen = "";
      const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
      let port: string | undefined;
      while (!port) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += value;
        port = /Listening on http:\/\/[^:]+:(\d+)/.exec(seen)?.[1];
      }
      // Read on, so a full pipe never holds the child up.
      (async () => {
        while (!(await reader.read()).done) { /* discard */ }
      })().catch(() => {});
      assert.ok(port, `a listening line: ${seen}`);
      // The first request opens the store, whose connections outlive it.
      const res = await fetch(`http://127.0.0.1:${port}/v1/models`);
      assert.equal(res.status, 401);
      await res.body?.cancel();

      child.kill("SIGTERM");
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), 15_000)),
      ]);
      assert.ok(stopped, "the process ended within 15 s of SIGTERM");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await exited.catch(() => {});
      await db.drop();
    }
  },
});

Deno.test({
  name: "deploy: under deno serve, SIGTERM lets open calls finish and bills every one of them",
  ignore: !DATABASE_URL || Deno.build.os === "windows",
  fn: async () => {
    const db = await scratchDatabase(DATABASE_URL!);
    const mock = startMock();
    const store = await openStore({ databaseUrl: db.url });
    const account = await store.createAccount("t", 1_000_000_000_000n);
    const k = await generateKey("tg");
    await store.createKey(account.id, k.hash, k.display, null);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["serve", "-A", "--port", "0", new URL("./deploy.ts", import.meta.url).pathname],
      env: mockEnv(mock.url, { DATABASE_URL: db.url, LOG_LEVEL: "error" }),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const exited = child.status;
    try {
      let seen = "";
      const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
      let port: string | undefined;
      while (!port) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += value;
        port = /Listening on http:\/\/[^:]+:(\d+)/.exec(seen)?.[1];
      }
      (async () => {
        while (!(await reader.read()).done) { /* discard */ }
      })().catch(() => {});
      assert.ok(port, `a listening line: ${seen}`);
      // Two calls of about a second and a half each, one streamed and one whole.
      const call = (stream: boolean) =>
        fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${k.key}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "openai/gpt-4o-mini",
            messages: [{ role: "user", content: "hi [[mock:tokens=30,every=50]]" }],
            stream,
            ...(stream ? { stream_options: { include_usage: true } } : {}),
          }),
        });
      const whole = call(false);
      const streamed = await call(true);
      assert.equal(streamed.status, 200);
      const body = streamed.body!.getReader();
      const first = await body.read();
      assert.ok(!first.done);
      // The whole call was sent first, but on a loaded machine it may reach the process after
      // the stream has begun: it must be in flight before the process is told to stop.
      await waitFor("both calls upstream", () => mock.stats.calls.length === 2 || undefined);

      // Both calls are in flight: the process is told to stop.
      child.kill("SIGTERM");
      let text = new TextDecoder().decode(first.value);
      for (;;) {
        const { value, done } = await body.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      const wholeRes = await whole;
      assert.equal(wholeRes.status, 200);
      const wholeJson = await wholeRes.json();
      const streamedCost = JSON.parse(
        text.split("\n").filter((l) => l.startsWith("data: {")).at(-1)!.slice(6),
      ).usage.cost;
      assert.ok(text.includes("data: [DONE]"), "the stream ran to its end");

      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), 15_000)),
      ]);

      // Both answers were whole, so both are billed at what the client was told.
      for (
        const [id, cost] of [
          [streamed.headers.get("x-generation-id")!, streamedCost],
          [wholeRes.headers.get("x-generation-id")!, wholeJson.usage.cost],
        ] as const
      ) {
        const g = await store.getGeneration(account.id, id);
        assert.equal(g?.status, "completed", `${id} settled`);
        assert.equal(g.cost, BigInt(Math.round(cost * 1e9)), `${id} billed what it answered`);
      }
      assert.deepEqual(await checkInvariants(store, [account.id]), []);
      assert.equal((await store.getAccount(account.id))!.held, 0n, "no hold is left");
      assert.ok(stopped, "the process ended within 15 s of SIGTERM");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await exited.catch(() => {});
      await store.close();
      await mock.close();
      await db.drop();
    }
  },
});

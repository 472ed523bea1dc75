/**
 * The fault and load scenarios of issue 7, each a function of its sizes: the tests in this
 * folder run them at the bounded sizes (seconds), `deno task soak` (scripts/soak.ts) at the
 * full ones, printing the figures each returns. Every scenario asserts as it goes and ends
 * with the ledger invariants, no generation left `running` and nothing held.
 */
import assert from "node:assert/strict";
import { computeCost } from "../../src/billing/cost.ts";
import type { Usage } from "../../src/events/usage.ts";
import { RedisLimiter } from "../../src/limits/redis.ts";
import { createLogger } from "../../src/lib/log.ts";
import { rubToNano } from "../../src/billing/money.ts";
import type { MockCall } from "../../src/providers/mock/server.ts";
import { roomInWindow } from "../helpers/time.ts";
import {
  assertSettledClean,
  type FaultGateway,
  openaiOnly,
  PgCluster,
  pool,
  post,
  readSse,
  RedisServer,
  rng,
  sleep,
  withFaultGateway,
} from "../helpers/faults.ts";

type Obj = Record<string, unknown>;

/** A cheap chat model of the `openai` provider (pass-through openai-chat). */
export const MODEL = "openai/gpt-4o-mini";
/** Output cap of the load scenarios: the hold is the prompt estimate plus these tokens. */
const MAX_TOKENS = 8;
const NO_LIMITS = { RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" };

export type Figures = Record<string, number | string | Record<string, number>>;

function chatBody(content: string, extra: Obj = {}): Obj {
  return { model: MODEL, messages: [{ role: "user", content }], ...extra };
}

/** The hold the gateway reserves for `body`, read from the generation of one probe call. */
async function holdOf(g: FaultGateway, body: Obj): Promise<bigint> {
  const rich = await g.account(rubToNano("1000"));
  const res = await post(`${g.baseURL}/chat/completions`, body, { key: rich.key });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
  const id = res.headers.get("x-generation-id")!;
  await g.settled();
  const gen = await g.store.getGeneration(rich.accountId, id);
  assert.ok(gen && gen.hold > 0n, "the probe reserved a hold");
  return gen.hold;
}

async function expectGeneric(res: Response, status: number): Promise<Obj> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  const body = JSON.parse(text) as { error: Obj };
  assert.equal(body.error.code, status, text);
  assert.equal(typeof body.error.message, "string", text);
  assert.equal(typeof body.error.metadata, "object", text);
  return body.error;
}

// ---- 1. many requests on one account -------------------------------------------------------

export interface LoadSizes {
  requests: number;
  concurrency: number;
  /** How many holds the account's balance covers (plus half a hold). */
  holds: number;
}

/**
 * `requests` calls, `concurrency` at a time, on one account whose balance covers about
 * `holds` holds: never below zero, every refusal a 402 with no upstream call.
 */
export function loadOnOneAccount(s: LoadSizes): Promise<Figures> {
  return withFaultGateway({ config: NO_LIMITS }, async (g) => {
    const body = chatBody("Load on one account [[mock:first=10]]", { max_tokens: MAX_TOKENS });
    const hold = await holdOf(g, body);
    const funds = hold * BigInt(s.holds) + hold / 2n;
    const a = await g.account(funds);
    g.mock.reset();
    const started = performance.now();
    const results = await pool(s.requests, s.concurrency, async (i) => {
      const stream = i % 2 === 1;
      const res = await post(`${g.baseURL}/chat/completions`, { ...body, stream }, { key: a.key });
      if (res.status === 200) {
        const text = await res.text();
        if (stream) assert.ok(text.trimEnd().endsWith("data: [DONE]"), "a whole stream");
        return 200;
      }
      if (res.status === 402) {
        const err = await expectGeneric(res, 402);
        assert.match(String(err.message), /^Недостаточно средств на балансе(: |$)/);
        return 402;
      }
      return `${res.status} ${await res.text()}`;
    });
    const ms = Math.round(performance.now() - started);
    const unexpected = results.filter((r) => r !== 200 && r !== 402);
    assert.deepEqual(unexpected, [], "every answer is a 200 or a 402");
    const admitted = results.filter((r) => r === 200).length;
    const rejected = results.length - admitted;
    await g.settled();
    await g.mock.idle();
    assert.equal(g.mock.stats.total, admitted, "one upstream call per admitted request, none else");
    if (rejected > 0) {
      assert.ok(
        admitted >= s.holds,
        `a refusal only once ${s.holds} holds were used (${admitted})`,
      );
    }
    const acct = (await g.store.getAccount(a.accountId))!;
    assert.ok(acct.balance >= 0n, `final balance ${acct.balance} ≥ 0`);
    await assertSettledClean(g);
    return {
      requests: s.requests,
      concurrency: s.concurrency,
      holdNano: String(hold),
      fundsNano: String(funds),
      admitted,
      rejected402: rejected,
      upstreamCalls: g.mock.stats.total,
      finalBalanceNano: String(acct.balance),
      ms,
    };
  });
}

// ---- 2. identical requests against exactly one hold ----------------------------------------

export function exactlyOneHold(n: number): Promise<Figures> {
  return withFaultGateway({ config: NO_LIMITS }, async (g) => {
    const body = chatBody("Exactly one hold [[mock:first=20]]", { max_tokens: MAX_TOKENS });
    const hold = await holdOf(g, body);
    const a = await g.account(hold);
    g.mock.reset();
    const statuses = await Promise.all(
      Array.from({ length: n }, async () => {
        const res = await post(`${g.baseURL}/chat/completions`, body, { key: a.key });
        if (res.status === 402) await expectGeneric(res, 402);
        else await res.body?.cancel();
        return res.status;
      }),
    );
    const admitted = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 402).length;
    assert.equal(admitted, 1, `exactly one admitted: ${JSON.stringify(statuses)}`);
    assert.equal(refused, n - 1, "every other one a 402");
    await g.mock.idle();
    assert.equal(g.mock.stats.total, 1, "exactly one upstream call");
    const acct = (await g.store.getAccount(a.accountId))!;
    assert.ok(acct.balance >= 0n);
    await assertSettledClean(g);
    return { requests: n, holdNano: String(hold), admitted, refused402: refused };
  });
}

// ---- 3. streams broken at random points ----------------------------------------------------

export const BREAKS = ["disconnect", "reset", "error", "stall", "after-usage"] as const;
export type Break = typeof BREAKS[number];

export interface BrokenStreamSizes {
  streams: number;
  concurrency: number;
  seed: number;
  policy: "abort" | "drain";
  /**
   * The provider's idle timeout (default 300 ms). At soak sizes everything — client, gateway,
   * mock, PGlite — shares one event loop whose lag can pass 300 ms; give it more room there.
   */
  idleMs?: number;
}

interface Planned {
  i: number;
  nonce: string;
  mode: Break;
  tokens: number;
  k: number;
}

const NONCE = /Broken stream (n\d+x\d+)/;

function nonceOf(call: MockCall): string | undefined {
  const m = NONCE.exec(JSON.stringify(call.body ?? ""));
  return m?.[1];
}

/**
 * `streams` chat streams, each broken one of five ways at a seeded random point: every
 * generation settles exactly once, and what it was charged for is what the mock says it sent.
 */
export function brokenStreams(s: BrokenStreamSizes): Promise<Figures> {
  return withFaultGateway({
    providers: openaiOnly({ firstByteMs: 5_000, idleMs: s.idleMs ?? 300, imagesMs: 120_000 }),
    config: { ...NO_LIMITS, CANCEL_POLICY: s.policy, DRAIN_DEADLINE_MS: "10000" },
  }, async (g) => {
    const r = rng(s.seed);
    const plan: Planned[] = Array.from({ length: s.streams }, (_, i) => {
      const tokens = r.int(4, 12);
      return {
        i,
        nonce: `n${i}x${r.int(0, 1e9)}`,
        mode: BREAKS[r.int(0, BREAKS.length - 1)],
        tokens,
        // At least one delayed token is left after the break point.
        k: r.int(1, tokens - 2),
      };
    });
    const a = await g.account(rubToNano("100000"));
    const started = performance.now();
    const seen = await pool(plan.length, s.concurrency, async (i) => {
      const p = plan[i];
      const marker = {
        disconnect: `tokens=${p.tokens},every=20`,
        reset: `tokens=${p.tokens},cut=${p.k}`,
        error: `tokens=${p.tokens},fail=${p.k}`,
        stall: `tokens=${p.tokens},stall=${p.k}`,
        "after-usage": `tokens=${p.tokens}`,
      }[p.mode];
      const res = await post(
        `${g.baseURL}/chat/completions`,
        chatBody(`Broken stream ${p.nonce} [[mock:${marker}]]`, { stream: true }),
        { key: a.key },
      );
      if (res.status !== 200) assert.fail(`${p.mode}: ${res.status} ${await res.text()}`);
      const id = res.headers.get("x-generation-id")!;
      let content = 0;
      const got = await readSse(res, (d) => {
        if (d === "[DONE]") return;
        const c = JSON.parse(d) as { choices?: { delta?: Obj }[]; usage?: unknown };
        if (typeof c.choices?.[0]?.delta?.content === "string" && c.choices[0].delta.content) {
          content++;
        }
        if (p.mode === "disconnect") return content >= p.k;
        if (p.mode === "after-usage") return c.usage !== null && typeof c.usage === "object";
      });
      return { id, content, data: got.data, stopped: got.stopped };
    });
    const ms = Math.round(performance.now() - started);
    await g.settled();
    await g.mock.idle();
    await g.settled();
    assert.equal(g.mock.stats.total, plan.length, "one upstream call per stream, no failover");
    const calls = new Map<string, MockCall>();
    for (const c of g.mock.stats.calls) {
      const n = nonceOf(c);
      assert.ok(n, "every upstream call carries its stream's nonce");
      assert.ok(!calls.has(n), `one call for ${n}`);
      calls.set(n, c);
    }
    const prices = g.gw.ctx.catalogue.resolve(MODEL)!.pricing;
    const byMode: Record<string, number> = {};
    let sentTokens = 0;
    let chargedTokens = 0;
    let unbilled = 0;
    let cancelled = 0;
    for (const p of plan) {
      const what = `stream ${p.i} (${p.mode}, tokens=${p.tokens}, k=${p.k})`;
      const client = seen[p.i];
      const call = calls.get(p.nonce);
      assert.ok(call, `${what}: upstream call found`);
      const gen = await g.store.getGeneration(a.accountId, client.id);
      assert.ok(gen, `${what}: generation ${client.id} exists`);
      assert.notEqual(gen.status, "running", `${what}: settled`);
      byMode[p.mode] = (byMode[p.mode] ?? 0) + 1;
      const out = gen.tokens.output ?? -1;
      const w = `${what} [generation ${gen.status}, ${gen.usageSource}, output ${out}, ` +
        `error ${
          JSON.stringify(gen.error)
        }; mock ${call.outcome}, sent ${call.outputTokensSent}; ` +
        `client: ${client.data.slice(-2).join(" | ").slice(0, 400)}]`;
      sentTokens += call.outputTokensSent;
      chargedTokens += out;
      switch (p.mode) {
        case "reset":
        case "error":
        case "stall":
          assert.equal(gen.status, "failed", w);
          assert.equal(gen.usageSource, "counted", w);
          assert.equal(call.usageReported, false, w);
          assert.equal(call.outputTokensSent, p.k, `${w}: the mock sent k tokens`);
          assert.equal(out, call.outputTokensSent, `${w}: charged what the mock sent`);
          assert.ok(!client.data.includes("[DONE]"), `${w}: no [DONE] after an error`);
          break;
        case "after-usage":
          assert.ok(client.stopped, `${w}: the client saw the usage chunk`);
          assert.ok(gen.status === "completed" || gen.status === "cancelled", w);
          assert.equal(gen.usageSource, "upstream", w);
          assert.equal(call.usageReported, true, w);
          assert.equal(out, call.outputTokensSent, `${w}: charged what the mock sent`);
          assert.equal(out, p.tokens, w);
          assert.equal(gen.tokens.input, call.inputTokens, `${w}: input as the mock counted`);
          break;
        case "disconnect":
          assert.ok(
            client.stopped && client.content === p.k,
            `${w}: the client left after k tokens`,
          );
          // The client's cancel can lose the race with the stream's own end (everything
          // after the last delayed token comes at once): then the call simply completed.
          assert.ok(gen.status === "cancelled" || gen.status === "completed", w);
          if (gen.status === "cancelled") cancelled++;
          if (gen.usageSource === "upstream") {
            assert.equal(out, call.outputTokensSent, `${w}: charged the final usage`);
            assert.equal(out, p.tokens, w);
            assert.equal(gen.tokens.input, call.inputTokens, `${w}: input as the mock counted`);
          } else {
            // `abort` bills what was relayed: at least what the client read, at most what
            // the mock sent (a few tokens may still have been in the socket buffers).
            assert.equal(s.policy, "abort", `${w}: drain always reads to the final usage`);
            assert.equal(gen.usageSource, "counted", w);
            assert.equal(gen.status, "cancelled", w);
            assert.ok(out >= p.k && out <= call.outputTokensSent, `${w}: charged ${out}`);
            unbilled += call.outputTokensSent - out;
          }
          break;
      }
      const expect = computeCost(gen.tokens as Usage, prices, g.gw.ctx.rates).nano;
      assert.equal(gen.cost, expect, `${what}: cost = tokens × price`);
      assert.ok(gen.cost > 0n, `${what}: the relayed tokens are paid for`);
    }
    const disconnects = byMode.disconnect ?? 0;
    assert.ok(
      cancelled * 2 >= disconnects,
      `most disconnects cancel a live stream (${cancelled} of ${disconnects})`,
    );
    await assertSettledClean(g);
    return {
      streams: plan.length,
      concurrency: s.concurrency,
      policy: s.policy,
      byMode,
      mockOutputTokens: sentTokens,
      chargedOutputTokens: chargedTokens,
      disconnectsCancelled: cancelled,
      unbilledAfterAbort: unbilled,
      ms,
    };
  });
}

/**
 * A client that stops reading for a while is not a stalled provider: with a stream large
 * enough to fill the socket buffers, back-pressure stops the gateway's upstream reads while
 * the client pauses; the idle timeout must not fire for that, and the stream must finish.
 */
export function slowReader(
  o: { tokens: number; pauseMs: number; idleMs: number },
): Promise<Figures> {
  return withFaultGateway({
    providers: openaiOnly({ firstByteMs: 5_000, idleMs: o.idleMs, imagesMs: 120_000 }),
    config: NO_LIMITS,
  }, async (g) => {
    const a = await g.account(rubToNano("1000"));
    const res = await post(
      `${g.baseURL}/chat/completions`,
      chatBody(`Slow reader [[mock:tokens=${o.tokens}]]`, { stream: true }),
      { key: a.key },
    );
    assert.equal(res.status, 200);
    const id = res.headers.get("x-generation-id")!;
    const reader = res.body!.getReader();
    await reader.read();
    await sleep(o.pauseMs);
    const dec = new TextDecoder();
    let tail = "";
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      tail = (tail + dec.decode(r.value, { stream: true })).slice(-4096);
    }
    await g.settled();
    await g.mock.idle();
    const gen = (await g.store.getGeneration(a.accountId, id))!;
    const what = `generation ${gen.status}, error ${JSON.stringify(gen.error)}, ` +
      `output ${gen.tokens.output}; mock ${g.mock.stats.calls[0]?.outcome}`;
    assert.ok(tail.trimEnd().endsWith("data: [DONE]"), `the stream finished: ${what}`);
    assert.equal(gen.status, "completed", what);
    assert.equal(gen.tokens.output, o.tokens, what);
    await assertSettledClean(g);
    return { tokens: o.tokens, pauseMs: o.pauseMs, idleMs: o.idleMs, status: gen.status };
  });
}

/**
 * CANCEL_POLICY=drain: after the client leaves, the gateway reads the upstream on to its
 * final usage (up to DRAIN_DEADLINE_MS) — even when that takes longer than the provider's
 * idle timeout, as long as the provider keeps sending.
 */
export function drainOutlivesIdle(): Promise<Figures> {
  return withFaultGateway({
    providers: openaiOnly({ firstByteMs: 5_000, idleMs: 300, imagesMs: 120_000 }),
    config: { ...NO_LIMITS, CANCEL_POLICY: "drain", DRAIN_DEADLINE_MS: "10000" },
  }, async (g) => {
    const a = await g.account(rubToNano("1000"));
    const tokens = 40;
    const res = await post(
      `${g.baseURL}/chat/completions`,
      chatBody(`Drain me [[mock:tokens=${tokens},every=40]]`, { stream: true }),
      { key: a.key },
    );
    assert.equal(res.status, 200);
    const id = res.headers.get("x-generation-id")!;
    let content = 0;
    await readSse(res, (d) => d !== "[DONE]" && d.includes('"content":"') && ++content >= 2);
    await g.settled();
    await g.mock.idle();
    await g.settled();
    const gen = (await g.store.getGeneration(a.accountId, id))!;
    const call = g.mock.stats.calls[0];
    const what = `generation ${gen.status}, ${gen.usageSource}, output ${gen.tokens.output}, ` +
      `error ${JSON.stringify(gen.error)}; mock ${call.outcome}, sent ${call.outputTokensSent}`;
    assert.equal(call.outcome, "completed", `the upstream was read to its end: ${what}`);
    assert.equal(gen.usageSource, "upstream", what);
    assert.equal(gen.tokens.output, tokens, what);
    assert.equal(gen.status, "cancelled", what);
    await assertSettledClean(g);
    return { tokens, status: gen.status };
  });
}

// ---- 4. PostgreSQL stopped and started under load ------------------------------------------

export interface PgSizes {
  /** Streams in flight when PostgreSQL stops. */
  streams: number;
  /** Paid requests sent while it is down. */
  outageRequests: number;
}

/**
 * On a cluster of the test's own: streams run, PostgreSQL stops (`-m fast`), new paid
 * requests get a quick 503 with Retry-After, the streams finish and their settlements wait;
 * PostgreSQL starts again and every settlement lands, once.
 */
export async function postgresRestart(s: PgSizes): Promise<Figures> {
  const cluster = await PgCluster.create();
  try {
    return await withFaultGateway({
      databaseUrl: cluster.url,
      providers: openaiOnly({ firstByteMs: 5_000, idleMs: 30_000, imagesMs: 120_000 }),
      config: { ...NO_LIMITS, KEY_CACHE_TTL_MS: "300000" },
    }, async (g) => {
      const a = await g.account(rubToNano("100000"));
      const url = `${g.baseURL}/chat/completions`;
      // Warm the key cache: auth must not need the store during the outage.
      const warm = await post(url, chatBody("warm [[mock:tokens=1]]"), { key: a.key });
      assert.equal(warm.status, 200, await warm.text());

      const tokens = 30;
      let started = 0;
      const streams = pool(s.streams, s.streams, async (i) => {
        const res = await post(
          url,
          chatBody(`In flight ${i} [[mock:tokens=${tokens},every=60]]`, { stream: true }),
          { key: a.key },
        );
        started++;
        if (res.status !== 200) assert.fail(`stream ${i}: ${res.status} ${await res.text()}`);
        const got = await readSse(res);
        return { id: res.headers.get("x-generation-id")!, data: got.data, broken: got.broken };
      });
      while (started < s.streams) await sleep(10);
      await sleep(100);

      await cluster.stop("fast");
      const t0 = performance.now();
      const outage = await pool(s.outageRequests, 20, async (i) => {
        const t = performance.now();
        try {
          const res = await post(url, chatBody(`During the outage ${i} [[mock:tokens=1]]`), {
            key: a.key,
            // Well past the bound asserted below: a hang fails the test without stalling it.
            signal: AbortSignal.timeout(8_000),
          });
          const retryAfter = res.headers.get("retry-after");
          const text = await res.text();
          return { status: res.status, retryAfter, ms: performance.now() - t, text };
        } catch (e) {
          const text = `no answer: ${(e as Error).name}`;
          return { status: 0, retryAfter: null, ms: performance.now() - t, text };
        }
      });
      const flights = await streams;
      const pendingWhileDown = g.gw.ctx.tracker.size;
      const downMs = Math.round(performance.now() - t0);
      await cluster.start();

      for (const o of outage) {
        assert.ok(o.ms < 5_000, `answered in ${Math.round(o.ms)} ms, no hang (${o.text})`);
        assert.equal(o.status, 503, o.text);
        assert.ok(o.retryAfter !== null && Number(o.retryAfter) >= 1, "Retry-After is set");
        assert.equal((JSON.parse(o.text) as { error: Obj }).error.code, 503);
      }
      for (const f of flights) {
        assert.ok(!f.broken, "the in-flight stream was not cut");
        assert.equal(f.data.at(-1), "[DONE]", "the in-flight stream finished normally");
      }
      assert.ok(pendingWhileDown > 0, "settlements were waiting for the store");

      // Back up: paid requests work again (postgres.js reconnects on its own).
      const until = Date.now() + 15_000;
      let after = 0;
      for (;;) {
        const res = await post(url, chatBody("after [[mock:tokens=1]]"), { key: a.key });
        after = res.status;
        await res.body?.cancel();
        if (after === 200 || Date.now() > until) break;
        await sleep(200);
      }
      assert.equal(after, 200, "paid requests work once PostgreSQL is back");
      const landedStart = performance.now();
      await g.settled();
      const landedMs = Math.round(performance.now() - landedStart);
      for (const f of flights) {
        const gen = await g.store.getGeneration(a.accountId, f.id);
        assert.equal(gen?.status, "completed", `${f.id} settled as completed`);
        assert.equal(gen?.tokens.output, tokens);
        const debits = (await g.store.listLedger(a.accountId)).filter((e) =>
          e.generationId === f.id
        );
        assert.equal(debits.length, 1, `${f.id}: exactly one debit`);
      }
      await assertSettledClean(g);
      return {
        streams: s.streams,
        outageRequests: s.outageRequests,
        outage503: outage.filter((o) => o.status === 503).length,
        slowestOutageAnswerMs: Math.round(Math.max(...outage.map((o) => o.ms))),
        settlementsWaiting: pendingWhileDown,
        downMs,
        settlementsLandedMsAfterRestart: landedMs,
      };
    });
  } finally {
    await cluster.destroy();
  }
}

// ---- 5. Redis stopped under load -----------------------------------------------------------

export interface RedisSizes {
  rpm: number;
  /** Requests sent across the kill. */
  load: number;
}

export async function redisStopped(s: RedisSizes): Promise<Figures> {
  const redis = await RedisServer.create();
  const lines: string[] = [];
  const logger = createLogger("info", (l) => lines.push(l));
  const limiter = await RedisLimiter.connect(redis.url, logger);
  try {
    return await withFaultGateway({
      config: { RATE_LIMIT_RPM: String(s.rpm), ACCOUNT_RATE_LIMIT_RPM: "0" },
      limiter,
      logger,
    }, async (g) => {
      const a = await g.account(rubToNano("100000"));
      const url = `${g.baseURL}/chat/completions`;
      const one = async (key: string) => {
        const res = await post(url, chatBody("limits [[mock:tokens=1]]"), { key });
        const text = await res.text();
        if (res.status === 429) {
          assert.deepEqual(Object.keys(JSON.parse(text)).sort(), ["code", "error", "retryAfter"]);
          const body = JSON.parse(text) as { error: unknown; code: string; retryAfter: number };
          assert.equal(body.code, "RATE_LIMITED");
          assert.equal(typeof body.error, "string");
          assert.ok(Number.isInteger(body.retryAfter) && body.retryAfter >= 1);
          assert.equal(res.headers.get("retry-after"), String(body.retryAfter));
        }
        return { status: res.status, text };
      };
      /** `rpm` requests pass on a fresh key, the next one is limited. */
      const enforced = async (what: string) => {
        await roomInWindow(5_000);
        const k = await g.key(a.accountId);
        for (let i = 0; i < s.rpm; i++) {
          const r = await one(k.key);
          assert.equal(r.status, 200, `${what}: request ${i + 1} of ${s.rpm} passes: ${r.text}`);
        }
        const over = await one(k.key);
        assert.equal(over.status, 429, `${what}: request ${s.rpm + 1} is limited`);
        return k;
      };
      const redisCount = async (keyId: string) => {
        const names = (await redis.cli("KEYS", `tg:rl:k:${keyId}:*`)).trim().split("\n")
          .filter(Boolean);
        if (names.length !== 1) return undefined;
        return Number((await redis.cli("GET", names[0])).trim());
      };

      // Up: counts live in Redis.
      const k1 = await enforced("redis up");
      assert.equal(await redisCount(k1.keyId), s.rpm, "the count is in redis");

      // Killed in the middle of a load.
      const keys = await Promise.all(
        Array.from(
          { length: Math.max(1, Math.ceil(s.load / (2 * s.rpm))) },
          () => g.key(a.accountId),
        ),
      );
      let done = 0;
      const killAt = Math.floor(s.load / 3);
      const killed = (async () => {
        while (done < killAt) await sleep(5);
        await redis.kill();
      })();
      const load = await pool(s.load, 10, async (i) => {
        const r = await one(keys[i % keys.length].key);
        done++;
        return r.status;
      });
      await killed;
      const fiveXX = load.filter((st) => st >= 500);
      assert.deepEqual(fiveXX, [], "no 5xx because of Redis");
      assert.deepEqual(load.filter((st) => st !== 200 && st !== 429), [], "only 200 or 429");

      // Down: the per-instance limiter still enforces the limit.
      await enforced("redis down");
      assert.ok(
        lines.some((l) => l.includes("falling back to per-instance limits")),
        "the fallback is logged",
      );

      // Back: the limiter returns to Redis on its own.
      await redis.start();
      const until = Date.now() + 20_000;
      const probe = await g.key(a.accountId);
      while (!lines.some((l) => l.includes("rate limiter back on redis"))) {
        assert.ok(Date.now() < until, "the limiter went back to redis within 20 s");
        const r = await one(probe.key);
        assert.ok(r.status === 200 || r.status === 429, r.text);
        await sleep(200);
      }
      const k3 = await enforced("redis back");
      assert.equal(await redisCount(k3.keyId), s.rpm, "the counts are in redis again");
      await assertSettledClean(g);
      return {
        rpm: s.rpm,
        load: s.load,
        load200: load.filter((st) => st === 200).length,
        load429: load.filter((st) => st === 429).length,
        load5xx: fiveXX.length,
      };
    });
  } finally {
    await limiter.close();
    await redis.destroy();
  }
}

// ---- 6. a per-key spend limit --------------------------------------------------------------

export function keySpendLimit(): Promise<Figures> {
  return withFaultGateway({ config: NO_LIMITS }, async (g) => {
    const body = chatBody("Spend limit [[mock:tokens=8]]", { max_tokens: MAX_TOKENS });
    const hold = await holdOf(g, body);
    const a = await g.account(rubToNano("1000"));
    const limit = hold * 3n + hold / 2n;
    await g.store.setKeyLimits(a.keyId, { spend: limit });
    const url = `${g.baseURL}/chat/completions`;
    let admitted = 0;
    let status = 200;
    for (let i = 0; i < 20 && status === 200; i++) {
      const res = await post(url, body, { key: a.key });
      status = res.status;
      if (status === 200) {
        admitted++;
        await res.body?.cancel();
        await g.settled();
      } else {
        const err = await expectGeneric(res, 402);
        // The account has 1 000 RUB: the key's cap refused it, and the 402 says so.
        assert.match(String(err.message), /^Недостаточно лимита расходов ключа: /);
      }
    }
    assert.equal(status, 402, "the key stops with 402");
    assert.equal(admitted, 3, "three holds fit under a limit of 3.5 holds");
    const again = await post(url, { ...body, stream: true }, { key: a.key });
    await expectGeneric(again, 402);
    const calls = g.mock.stats.total;
    const key = (await g.store.listKeys(a.accountId)).find((k) => k.id === a.keyId)!;
    assert.ok(key.spent > 0n && key.spent <= limit, `spent ${key.spent} ≤ limit ${limit}`);
    // The account still has money: another key on it works.
    const other = await g.key(a.accountId);
    const res = await post(url, body, { key: other.key });
    assert.equal(res.status, 200, await res.text());
    assert.equal(g.mock.stats.total, calls + 1, "the refused calls never reached the upstream");
    await assertSettledClean(g);
    return { limitNano: String(limit), admitted, spentNano: String(key.spent) };
  });
}

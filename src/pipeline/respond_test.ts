import assert from "node:assert/strict";
import { Meter } from "./meter.ts";
import { StreamStage } from "./stream_stage.ts";
import { streamToClient } from "./respond.ts";
import { Tracker } from "../lib/tracker.ts";
import { StoreQuota } from "../billing/quota.ts";
import { createLogger } from "../lib/log.ts";
import { makeRates } from "../billing/cost.ts";
import { testStores } from "../../tests/helpers/store.ts";
import type { StreamDecoder } from "../formats/codec.ts";
import { createChatEncoder } from "../formats/chat/encode.ts";
import { createChatDecoder } from "../formats/chat/decode.ts";

/** A decoder that emits one text delta per event and throws on the event saying "boom". */
const brittle = (): StreamDecoder => {
  let started = false;
  return {
    event(ev, emit) {
      if (ev.data === "boom") throw new Error("decoder bug");
      if (!started) {
        started = true;
        emit({ type: "response_start", id: "x" });
        emit({ type: "text_start" });
      }
      emit({ type: "text_delta", delta: ev.data });
    },
    end(emit) {
      emit({ type: "text_end" });
      emit({ type: "finish", reason: "stop" });
    },
  };
};

function upstream(frames: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(ctl) {
      if (i < frames.length) ctl.enqueue(enc.encode(`data: ${frames[i++]}\n\n`));
      else ctl.close();
    },
  });
}

for (const { name, open } of await testStores()) {
  Deno.test(`${name}: an exception inside the stream stage still settles the generation once`, async () => {
    const store = await open();
    try {
      const account = await store.createAccount("t", 1_000_000_000n);
      const key = await store.createKey(account.id, "h".repeat(64), "tg_x", null);
      const id = "gen_respondtest";
      assert.ok(
        await store.reserve({
          id,
          accountId: account.id,
          keyId: key.id,
          endpoint: "chat",
          model: "m",
          stream: true,
          hold: 1000n,
        }),
      );
      const deps = {
        quota: new StoreQuota(store),
        tracker: new Tracker(),
        log: createLogger("error", () => {}),
        rates: makeRates("100", "0"),
      };
      const meter = new Meter({
        generationId: id,
        prices: { prompt: "0.000001", completion: "0.000001" },
        promptTokensCounted: 10,
        startedAt: performance.now(),
      }, deps);
      const stage = new StreamStage({
        decoder: brittle(),
        encoder: createChatEncoder({ id, model: "m", created: 0 }),
      }, meter);
      const errors: unknown[] = [];
      const body = streamToClient({
        reader: upstream(["a", "b", "boom", "c"]).getReader(),
        stage,
        meter,
        abort: new AbortController(),
        initial: "",
        idleMs: 10_000,
        policy: "abort",
        drainMs: 1000,
        tracker: deps.tracker,
        log: (e) => errors.push(e),
      });
      const text = await new Response(body).text();
      assert.match(text, /"finish_reason":"error"/);
      assert.doesNotMatch(text, /\[DONE\]/);
      assert.doesNotMatch(text, /decoder bug/, "the bug's message never reaches the client");
      assert.equal(errors.length, 1);
      await deps.tracker.idle();
      const g = await store.getGeneration(account.id, id);
      assert.equal(g?.status, "failed");
      assert.equal(g?.tokens.output, 2, "the two relayed deltas are billed");
      assert.equal((await store.getAccount(account.id))?.held, 0n);
      assert.equal(
        (await store.listLedger(account.id)).filter((e) => e.kind === "debit").length,
        1,
      );
    } finally {
      await store.close();
    }
  });
}

const CHUNK = (rest: string) =>
  `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",${rest}}`;
const USAGE_AFTER_ERROR = [
  CHUNK(`"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]`),
  CHUNK(
    `"error":{"code":502,"message":"upstream died"},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]`,
  ),
  CHUNK(
    `"choices":[],"usage":{"prompt_tokens":50000,"completion_tokens":3000,"completion_tokens_details":{"reasoning_tokens":2990}}`,
  ),
];

/** A chat stream's stage and its meter, over a wallet that settles anything. */
function chatStage(id: string) {
  const meter = new Meter({
    generationId: id,
    prices: { prompt: "0.000001", completion: "0.000002" },
    promptTokensCounted: 10,
    startedAt: performance.now(),
  }, {
    quota: { settle: () => Promise.resolve(true) } as unknown as StoreQuota,
    tracker: new Tracker(),
    log: createLogger("error", () => {}),
    rates: makeRates("100", "0"),
  });
  const stage = new StreamStage({
    decoder: createChatDecoder(),
    encoder: createChatEncoder({ id, model: "m", created: 0 }),
  }, meter);
  return { meter, stage };
}

/**
 * Relays `frames` (then, with `hang`, an upstream that never ends) through a chat stage;
 * `peeked` frames are fed before, as the first-byte peek does.
 */
async function relayChat(frames: string[], hang = false, peeked: string[] = []) {
  const { meter, stage } = chatStage("gen_tail");
  const enc = new TextEncoder();
  const initial = stage.feed(enc.encode(peeked.map((f) => `data: ${f}\n\n`).join("")));
  let i = 0;
  const source = new ReadableStream<Uint8Array>({
    async pull(ctl) {
      if (i < frames.length) ctl.enqueue(enc.encode(`data: ${frames[i++]}\n\n`));
      else if (hang) await new Promise(() => {});
      else ctl.close();
    },
  }, { highWaterMark: 0 });
  const started = Date.now();
  const text = await new Response(streamToClient({
    reader: source.getReader(),
    stage,
    meter,
    abort: new AbortController(),
    initial,
    idleMs: 60_000,
    policy: "abort",
    drainMs: 1000,
    tracker: new Tracker(),
  })).text();
  return { text, report: meter.report(), ms: Date.now() - started };
}

Deno.test("usage an upstream reports after its in-stream error is what is billed and shown", async () => {
  const { text, report } = await relayChat(USAGE_AFTER_ERROR);
  assert.equal(report.source, "upstream");
  assert.deepEqual([report.usage.input, report.usage.output], [50_000, 3_000]);
  assert.match(text, /"finish_reason":"error"/);
  assert.match(text, /"completion_tokens":3000/, "the client is shown the billed usage");
  // In the error's own chunk too.
  const together = await relayChat([
    USAGE_AFTER_ERROR[0],
    USAGE_AFTER_ERROR.slice(1).join("\n\ndata: "),
  ]);
  assert.equal(together.report.source, "upstream");
});

Deno.test("after an upstream's in-stream error, a usage that never comes is waited for briefly", async () => {
  const { text, report, ms } = await relayChat(USAGE_AFTER_ERROR.slice(0, 2), true);
  assert.match(text, /"finish_reason":"error"/);
  assert.equal(report.source, "counted");
  assert.ok(ms >= 1_500 && ms < 10_000, `${ms} ms`);
});

Deno.test("an error in the chunks the first-byte peek read: its usage is still read, and the end comes at once", async () => {
  const [content, error, usage] = USAGE_AFTER_ERROR;
  const billed = await relayChat([usage], false, [content, error]);
  assert.equal(billed.report.source, "upstream");
  const silent = await relayChat([], true, [content, error]);
  assert.match(silent.text, /"finish_reason":"error"/);
  assert.ok(silent.ms < 10_000, `${silent.ms} ms`);
});

Deno.test("a usage event the upstream ends without its blank line, after an error, is still billed", () => {
  const [content, error, usage] = USAGE_AFTER_ERROR;
  const { meter, stage } = chatStage("gen_unterminated");
  stage.feed(new TextEncoder().encode(`data: ${content}\n\ndata: ${error}\n\ndata: ${usage}`));
  stage.finish();
  const report = meter.report();
  assert.equal(report.source, "upstream");
  assert.equal(report.usage.output, 3_000);
});

Deno.test("an upstream that said its last ([DONE]) and keeps its connection open: the client's answer ends at once, completed", async () => {
  const { text, report, ms } = await relayChat([
    CHUNK(`"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]`),
    CHUNK(`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`),
    CHUNK(`"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1}`),
    "[DONE]",
  ], true);
  assert.ok(ms < 5_000, `ended after ${ms} ms`);
  assert.match(text, /"content":"Hello"/);
  assert.match(text, /\[DONE\]\n\n$/);
  assert.doesNotMatch(text, /stalled|error/);
  assert.equal(report.usage.input, 7);
  assert.equal(report.usage.output, 1);
});

Deno.test("the terminal event inside the first-byte peek's chunks ends the stream without another read", async () => {
  const { text, ms } = await relayChat([], true, [
    CHUNK(`"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]`),
    "[DONE]",
  ]);
  assert.ok(ms < 5_000, `ended after ${ms} ms`);
  assert.match(text, /"content":"Hi"/);
  assert.match(text, /\[DONE\]\n\n$/);
});

Deno.test("drain: a client that leaves while the relay waits on the upstream is drained and settled once, with no error logged", async () => {
  const { meter, stage } = chatStage("gen_drain_gone");
  const settled: string[] = [];
  (meter as unknown as { settle: (s: string) => Promise<void> }).settle = ((orig) => (s) => {
    settled.push(s);
    return orig.call(meter, s as never);
  })(meter.settle);
  const enc = new TextEncoder();
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let i = 0;
  const frames = [
    CHUNK(`"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]`),
    CHUNK(`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`),
    CHUNK(`"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":7}`),
  ];
  const source = new ReadableStream<Uint8Array>({
    async pull(ctl) {
      // The first chunk at once; the rest only after the client has gone.
      if (i === 1) await gate;
      if (i < frames.length) ctl.enqueue(enc.encode(`data: ${frames[i++]}\n\n`));
      else ctl.close();
    },
  }, { highWaterMark: 0 });
  const tracker = new Tracker();
  const errors: unknown[] = [];
  const body = streamToClient({
    reader: source.getReader(),
    stage,
    meter,
    abort: new AbortController(),
    initial: "",
    idleMs: 60_000,
    policy: "drain",
    drainMs: 5_000,
    tracker,
    log: (e) => errors.push(e),
  });
  const client = body.getReader();
  assert.match(new TextDecoder().decode((await client.read()).value), /Hello/);
  // The relay's next pull now waits on the upstream; the client leaves meanwhile.
  const pending = client.read().catch(() => {});
  await new Promise((r) => setTimeout(r, 20));
  await client.cancel();
  await pending;
  release();
  await tracker.idle();
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(errors, [], "a client leaving is no bug");
  assert.deepEqual(settled, ["cancelled"]);
  const r = meter.report();
  assert.equal(r.source, "upstream", "drained to the upstream's usage");
  assert.deepEqual([r.usage.input, r.usage.output], [40, 7]);
});

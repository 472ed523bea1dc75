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

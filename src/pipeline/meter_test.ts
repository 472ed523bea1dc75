import assert from "node:assert/strict";
import { Meter } from "./meter.ts";
import { Tracker } from "../lib/tracker.ts";
import { createLogger } from "../lib/log.ts";
import { makeRates } from "../billing/cost.ts";
import type { Quota } from "../billing/quota.ts";
import { createChatDecoder, decodeChatBody } from "../formats/chat/decode.ts";
import { SseSplitter } from "../formats/sse.ts";
import type { Event } from "../events/event.ts";

function meter(): Meter {
  return new Meter({
    generationId: "gen_test",
    prices: { prompt: "0.000001", completion: "0.000001" },
    promptTokensCounted: 10,
    startedAt: performance.now(),
  }, {
    quota: {} as Quota,
    tracker: new Tracker(),
    log: createLogger("error", () => {}),
    rates: makeRates("100", "0"),
  });
}

const choice = (index: number, content: string, finish: string | null = null) => ({
  index,
  delta: { content },
  finish_reason: finish,
});
const chunk = (...choices: unknown[]) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", model: "m", choices })}\n\n`;

function streamedOutput(sse: string): number {
  const m = meter();
  const decoder = createChatDecoder();
  const splitter = new SseSplitter();
  const emit = (e: Event) => m.observe(e);
  splitter.push(sse + "data: [DONE]\n\n", (ev) => decoder.event(ev, emit));
  splitter.end((ev) => decoder.event(ev, emit));
  decoder.end(emit);
  return m.report().usage.output!;
}

Deno.test("meter: every choice of a chat answer with n > 1 is counted where the upstream sends no usage", () => {
  // The client gets both choices (passed through); the output of both is billed.
  const whole = meter();
  decodeChatBody({
    id: "c1",
    model: "m",
    choices: [
      { index: 0, message: { role: "assistant", content: "one two" }, finish_reason: "stop" },
      {
        index: 1,
        message: {
          role: "assistant",
          content: "three four five six",
          tool_calls: [{ id: "t1", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        finish_reason: "stop",
      },
    ],
  }, (e) => whole.observe(e));
  const one = meter();
  decodeChatBody({
    id: "c1",
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: "one two" } }],
  }, (e) => one.observe(e));
  const counted = whole.report().usage.output!;
  assert.ok(counted > one.report().usage.output!, `${counted} counts the second choice too`);

  // Streamed, the first choice finishing before the second.
  const first = chunk(choice(0, "one")) + chunk(choice(0, " two", "stop"));
  const both = chunk(choice(0, "one"), choice(1, "three")) +
    chunk(choice(0, " two", "stop")) +
    chunk(choice(1, " four five six")) +
    chunk({ index: 1, delta: { tool_calls: [{ index: 0, function: { arguments: "{}" } }] } }) +
    chunk(choice(1, "", "stop"));
  assert.ok(streamedOutput(both) > streamedOutput(first));
});

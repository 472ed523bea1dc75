/**
 * Replays every recorded openai-responses answer under `../shared/fixtures/upstream/openai`
 * (relative to the repository root; the suite is skipped when it is absent) through the
 * responses decoders, whole, line by line and byte by byte, and checks the events against
 * figures read from the recording independently of the decoder: the text, the reasoning
 * summary, each call's arguments, the usage numbers, the ending. It also checks that the
 * pass-through forwards each recording byte for byte up to its final event and that the
 * client encoder re-encodes the events losslessly.
 */
import assert from "node:assert/strict";
import type { Event } from "../../src/events/event.ts";
import {
  createResponsesDecoder,
  createResponsesEncoder,
  createResponsesPassThrough,
  decodeResponsesBody,
  decodeResponsesError,
} from "../../src/formats/responses/mod.ts";
import {
  assertWellFormed,
  CUTS,
  decodeStream,
  fakeCost,
  sseEvents,
} from "../../src/formats/responses/test_helpers.ts";

const DIR = new URL("../../../shared/fixtures/upstream/openai/", import.meta.url);
const present = (() => {
  try {
    return Deno.statSync(DIR).isDirectory;
  } catch {
    return false;
  }
})();
const recordings = present
  ? [...Deno.readDirSync(DIR)].map((f) => f.name).filter((n) => n.startsWith("responses-")).sort()
  : [];
const ignore = !present;

type Obj = Record<string, unknown>;

/** What a recording says, read by plain JSON over its frames (not by the decoder). */
interface Expected {
  text: string;
  reasoning: string;
  calls: { id: string; name: string; args: string }[];
  usage?: Obj;
  status?: string;
  failed: boolean;
}

function expectFromStream(text: string): Expected {
  const out: Expected = { text: "", reasoning: "", calls: [], failed: false };
  const summaries: string[] = [];
  for (const block of text.split(/\n\n+/)) {
    const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
    if (data.length === 0) continue;
    const d = JSON.parse(data.join("\n"));
    if (d.type === "response.output_text.delta") out.text += d.delta;
    if (d.type === "response.reasoning_summary_part.done") summaries.push(d.part.text);
    if (d.type === "response.output_item.done" && d.item.type === "function_call") {
      out.calls.push({ id: d.item.call_id, name: d.item.name, args: d.item.arguments });
    }
    if (d.type === "response.completed" || d.type === "response.incomplete") {
      out.usage = d.response.usage;
      out.status = d.response.status;
    }
    if (d.type === "error" || d.type === "response.failed") out.failed = true;
  }
  out.reasoning = summaries.join("\n\n");
  return out;
}

function expectFromBody(body: Obj): Expected {
  const out: Expected = { text: "", reasoning: "", calls: [], failed: body.status === "failed" };
  for (const item of body.output as Obj[]) {
    if (item.type === "message") {
      for (const p of item.content as Obj[]) if (p.type === "output_text") out.text += p.text;
    }
    if (item.type === "function_call") {
      out.calls.push({
        id: item.call_id as string,
        name: item.name as string,
        args: item.arguments as string,
      });
    }
  }
  out.usage = body.usage as Obj;
  out.status = body.status as string;
  return out;
}

/** The same figures, read from the decoder's events. */
function actual(events: Event[]): Expected {
  const out: Expected = { text: "", reasoning: "", calls: [], failed: false };
  const calls = new Map<number, { id: string; name: string; args: string }>();
  for (const e of events) {
    if (e.type === "text_delta") out.text += e.delta;
    if (e.type === "reasoning_delta") out.reasoning += e.delta;
    if (e.type === "tool_call_start") calls.set(e.index, { id: e.id, name: e.name, args: "" });
    if (e.type === "tool_call_delta") calls.get(e.index)!.args += e.json;
    if (e.type === "usage") {
      const u = e.usage;
      out.usage = {
        input_tokens: u.input,
        input_tokens_details: { cached_tokens: u.cacheRead },
        output_tokens: u.output,
        output_tokens_details: { reasoning_tokens: u.reasoning },
        total_tokens: (u.input ?? 0) + (u.output ?? 0),
      };
    }
    if (e.type === "finish") out.status = e.reason === "length" ? "incomplete" : "completed";
    if (e.type === "error") out.failed = true;
  }
  out.calls = [...calls.values()];
  return out;
}

Deno.test(
  "conformance: the openai recordings include responses streams and bodies",
  { ignore },
  () => {
    assert.ok(recordings.some((n) => n.endsWith(".sse")));
    assert.ok(recordings.some((n) => n.endsWith(".json")));
  },
);

for (const name of recordings.filter((n) => n.endsWith(".sse"))) {
  Deno.test(`conformance: ${name} decodes to the recording's text, calls and usage`, () => {
    const bytes = Deno.readFileSync(new URL(name, DIR));
    const expected = expectFromStream(new TextDecoder().decode(bytes));
    let whole: Event[] | undefined;
    for (const cut of CUTS) {
      const events = decodeStream(createResponsesDecoder(), bytes, cut);
      assertWellFormed(events);
      assert.equal(events[0].type, "response_start");
      if (whole) assert.deepEqual(events, whole, `cut ${cut} differs from whole`);
      whole ??= events;
    }
    assert.deepEqual(actual(whole!), expected);
  });

  Deno.test(`conformance: ${name} passes through byte for byte up to its final event`, () => {
    const bytes = Deno.readFileSync(new URL(name, DIR));
    const original = new TextDecoder().decode(bytes);
    const ctx = { id: "gen_1", model: "openai/some-model", created: 1 };
    const decoder = createResponsesDecoder();
    const pass = createResponsesPassThrough(ctx);
    let out = "";
    let error: (Event & { type: "error" }) | undefined;
    const batch: Event[] = [];
    for (const ev of sseEvents(bytes, "bytes")) {
      if (error) break;
      decoder.event(ev, (e) => {
        if (e.type === "error") error = e;
        batch.push(e);
      });
      if (!error) out += pass.raw(ev, batch);
      batch.length = 0;
    }
    if (!error) decoder.end((e) => e.type === "error" && (error = e));
    const cost = fakeCost({ input: 1, output: 1 });
    out += pass.end(cost, error);
    const cutAt = original.search(/event: (response\.(completed|incomplete|failed)|error)\n/);
    // Byte for byte but for the requested slug and the generation's id in the opening events'
    // response objects.
    const slugless = (s: string) =>
      s.replace(/("type":\s*"response\.(created|in_progress)".*?"model":\s*)"[^"]*"/g, '$1"M"')
        .replace(
          /("type":\s*"response\.(created|in_progress)".*?"response":\s*\{"id":\s*)"[^"]*"/g,
          '$1"I"',
        );
    const outCut = out.search(/event: (response\.(completed|incomplete|failed)|error)\n/);
    assert.equal(slugless(out.slice(0, outCut)), slugless(original.slice(0, cutAt)));
    for (
      const m of out.matchAll(/"type":\s*"response\.(created|in_progress)".*?"model":\s*"([^"]*)"/g)
    ) {
      assert.equal(m[2], "openai/some-model");
    }
    for (const m of out.matchAll(/"response":\s*\{"id":\s*"([^"]*)"/g)) assert.equal(m[1], "gen_1");
    const last = JSON.parse(out.trimEnd().split("\n").at(-1)!.slice(6));
    assert.equal(last.response.model, "openai/some-model");
    assert.equal(last.response.id, "gen_1");
    assert.equal(last.response.usage.cost, cost.cost);
  });

  Deno.test(`conformance: ${name} re-encoded for a responses client decodes to the same events`, () => {
    const events = decodeStream(
      createResponsesDecoder(),
      Deno.readFileSync(new URL(name, DIR)),
      "whole",
    );
    const usage = events.find((e) => e.type === "usage");
    const ctx = { id: "gen_2", model: "openai/some-model", created: 1 };
    const enc = createResponsesEncoder(ctx);
    let wire = "";
    for (const e of events) wire += enc.event(e);
    wire += enc.event({ type: "cost", cost: fakeCost(usage?.type === "usage" ? usage.usage : {}) });
    const back = decodeStream(createResponsesDecoder(), new TextEncoder().encode(wire), "whole");
    for (const e of back) if (e.type === "usage") delete e.usage.costUsd;
    // The gateway's response.failed always reports the usage it billed; a recording whose
    // failure reported none decodes without it.
    const again = usage ? back : back.filter((e) => e.type !== "usage");
    // The gateway always writes `cache_write_tokens` (the SDKs require it; these recordings
    // predate it): a write not reported reads back as 0.
    const norm = (es: Event[]) =>
      es.map((e) =>
        e.type === "response_start"
          ? { type: e.type }
          : e.type === "error"
          ? { type: e.type }
          : e.type === "usage"
          ? { ...e, usage: { ...e.usage, cacheWrite: e.usage.cacheWrite ?? 0 } }
          : e
      );
    assert.deepEqual(norm(again), norm(events));
  });
}

for (const name of recordings.filter((n) => n.endsWith(".json") && !n.includes("error"))) {
  Deno.test(`conformance: ${name} decodes to the recording's text, calls and usage`, () => {
    const body = JSON.parse(Deno.readTextFileSync(new URL(name, DIR)));
    const events: Event[] = [];
    decodeResponsesBody(body, (e) => events.push(e));
    assertWellFormed(events);
    assert.deepEqual(actual(events), expectFromBody(body));
  });
}

Deno.test("conformance: responses-stream-error.sse yields an error event and no finish", {
  ignore: !recordings.includes("responses-stream-error.sse"),
}, () => {
  const bytes = Deno.readFileSync(new URL("responses-stream-error.sse", DIR));
  for (const cut of CUTS) {
    const events = decodeStream(createResponsesDecoder(), bytes, cut);
    const error = events.find((e) => e.type === "error");
    assert.ok(error && error.type === "error");
    assert.equal(error.error.status, 502);
    assert.doesNotMatch(error.error.message, /exceeded your current quota|billing/);
    assert.ok(!events.some((e) => e.type === "finish"));
  }
});

Deno.test("conformance: responses-error-400.json maps to a 400 naming the field", {
  ignore: !recordings.includes("responses-error-400.json"),
}, () => {
  const body = JSON.parse(Deno.readTextFileSync(new URL("responses-error-400.json", DIR)));
  const e = decodeResponsesError(400, body);
  assert.equal(e.status, 400);
  assert.match(e.message, /temperature/);
  assert.equal(decodeResponsesError(400, JSON.stringify(body)).message, e.message);
});

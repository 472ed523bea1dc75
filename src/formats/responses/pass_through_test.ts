import assert from "node:assert/strict";
import type { CostReport, Event } from "../../events/event.ts";
import type { EncodeContext } from "../codec.ts";
import { createResponsesDecoder } from "./decode.ts";
import { createResponsesPassThrough, responsesPassThroughBody } from "./pass_through.ts";
import { type Cut, CUTS, fakeCost, frames, sseEvents } from "./test_helpers.ts";

const FIXTURES = new URL("../../../tests/fixtures/openai-responses/", import.meta.url);
const ctx: EncodeContext = { id: "gen_1", model: "openai/gpt-5-mini", created: 1767225600 };
const cost = fakeCost({ input: 1234, output: 6, cacheRead: 1024 }, 0.5);

/** An upstream usage as the client gets it: with cost, and cache_write_tokens (0 unreported). */
function billed(usage: unknown): unknown {
  const u = usage as Record<string, unknown>;
  const details = u.input_tokens_details as Record<string, unknown>;
  return {
    ...u,
    input_tokens_details: { cache_write_tokens: 0, ...details },
    cost: 0.5,
    cost_details: cost.details,
  };
}

/** What the stream stage does on pass-through: raw per event until an error, then `end`. */
function passThrough(bytes: Uint8Array, cut: Cut, c: CostReport = cost): string {
  const decoder = createResponsesDecoder();
  const pass = createResponsesPassThrough(ctx);
  let error: (Event & { type: "error" }) | undefined;
  let out = "";
  const batch: Event[] = [];
  const emit = (e: Event) => {
    if (error && e.type !== "usage") return;
    if (e.type === "error") error = e;
    batch.push(e);
  };
  for (const ev of sseEvents(bytes, cut)) {
    if (error) break;
    decoder.event(ev, emit);
    if (!error) out += pass.raw(ev, batch);
    batch.length = 0;
  }
  if (!error) decoder.end(emit);
  return out + pass.end(c, error);
}

const slugless = (s: string) =>
  s.replace(/("type":\s*"response\.(created|in_progress)".*?"model":\s*)"[^"]*"/g, '$1"M"')
    .replace(
      /("type":\s*"response\.(created|in_progress)".*?"response":\s*\{"id":\s*)"[^"]*"/g,
      '$1"I"',
    );
const read = (name: string) => Deno.readFileSync(new URL(name, FIXTURES));
const text = (name: string) => Deno.readTextFileSync(new URL(name, FIXTURES));

for (const name of ["text", "function-call", "reasoning", "incomplete"]) {
  Deno.test(`pass-through: ${name}.sse is forwarded byte for byte up to the final event`, () => {
    const original = text(`${name}.sse`);
    const last = original.lastIndexOf("event: response.");
    for (const cut of CUTS) {
      const out = passThrough(read(`${name}.sse`), cut);
      const outLast = out.lastIndexOf("event: response.");
      // Byte for byte, but for the requested slug in the opening events' `model`.
      assert.equal(
        slugless(out.slice(0, outLast)),
        slugless(original.slice(0, last)),
        `cut: ${cut}`,
      );
      for (const [type, data] of frames(out.slice(0, outLast))) {
        if (type === "response.created" || type === "response.in_progress") {
          assert.equal((data.response as Record<string, unknown>).model, "openai/gpt-5-mini");
          assert.equal((data.response as Record<string, unknown>).id, "gen_1");
        }
      }
      const [origName, orig] = frames(original.slice(last))[0];
      const [outName, edited] = frames(out.slice(outLast))[0];
      assert.equal(outName, origName);
      // Only model and the usage's cost fields differ; output_text and the usage's
      // cache_write_tokens (these recordings predate it) are added.
      const r = edited.response as Record<string, unknown>;
      const o = orig.response as Record<string, unknown>;
      assert.equal(r.model, "openai/gpt-5-mini");
      assert.equal(r.id, "gen_1");
      assert.deepEqual(r.usage, billed(o.usage));
      const { id: _i, model: _m, usage: _u, output_text: _t, ...rest } = r;
      const { id: _i2, model: _m2, usage: _u2, ...origRest } = o;
      assert.deepEqual(rest, origRest);
      assert.equal(edited.sequence_number, orig.sequence_number);
      assert.equal(typeof r.output_text, "string");
    }
  });
}

Deno.test("pass-through: an upstream error is replaced by the gateway's error and response.failed", () => {
  const out = passThrough(read("quota-error.sse"), "bytes");
  assert.doesNotMatch(out, /org-AbCdEf|exceeded your current quota/);
  const fs = frames(out);
  assert.deepEqual(fs.map(([n, d]) => [n, d.sequence_number]), [
    ["response.created", 0],
    ["response.in_progress", 1],
    ["error", 2],
    ["response.failed", 3],
  ]);
  assert.deepEqual(fs[2][1].error, {
    code: 502,
    message: "the model provider's quota for the gateway is exhausted",
    metadata: {},
  });
  const r = fs[3][1].response as Record<string, unknown>;
  assert.equal(r.id, "gen_1");
  assert.equal(r.status, "failed");
  assert.equal(r.model, "openai/gpt-5-mini");
  assert.deepEqual(r.error, {
    code: "server_error",
    message: "the model provider's quota for the gateway is exhausted",
  });
  assert.equal((r.usage as Record<string, unknown>).cost, 0.5);
});

Deno.test("pass-through: a cut stream is forwarded as far as it went, then failed", () => {
  const original = text("cut.sse");
  const out = passThrough(read("cut.sse"), "lines");
  const forwarded = out.slice(0, out.indexOf("event: error\n"));
  assert.equal(slugless(forwarded), slugless(original));
  const fs = frames(out.slice(forwarded.length));
  assert.deepEqual(fs.map(([n, d]) => [n, d.sequence_number]), [
    ["error", 6],
    ["response.failed", 7],
  ]);
  // OpenAI's own fields at the event's top level (the SDK's ResponseErrorEvent), as on the
  // transcoded path, beside the envelope the SDK raises.
  const error = fs[0][1];
  assert.equal(typeof error.code, "string");
  assert.equal(typeof error.message, "string");
  assert.equal(error.param, null);
  assert.equal(typeof (error.error as Record<string, unknown>).message, "string");
});

Deno.test("pass-through: a stream cut after some items fails with those items in its output", () => {
  const full = text("function-call.sse");
  // Cut after the first finished item: no terminal event comes.
  const firstDone = full.indexOf("event: response.output_item.done");
  const cutAt = full.indexOf("\n\n", firstDone) + 2;
  const out = passThrough(new TextEncoder().encode(full.slice(0, cutAt)), "lines");
  const failed = frames(out).find(([n]) => n === "response.failed")![1].response as Record<
    string,
    unknown
  >;
  assert.equal(failed.status, "failed");
  const item = frames(full.slice(firstDone, cutAt))[0][1].item;
  assert.deepEqual(failed.output, [item]);
});

Deno.test("pass-through: a non-streaming body gets model, cost and output_text", () => {
  const upstream = JSON.parse(text("body-reasoning-call.json"));
  const before = structuredClone(upstream);
  const out = responsesPassThroughBody(upstream, cost, ctx);
  assert.deepEqual(upstream, before, "the upstream object is not modified");
  assert.equal(out.model, "openai/gpt-5-mini");
  assert.equal(out.output_text, "A spider has eight legs.");
  assert.deepEqual(out.usage, billed(upstream.usage));
  assert.deepEqual(out.output, upstream.output);
});

Deno.test("pass-through: cache_write_tokens is written when the upstream leaves it out, kept when not", () => {
  const upstream = JSON.parse(text("body-reasoning-call.json"));
  const written = fakeCost({ input: 1234, output: 6, cacheWrite: 200 }, 0.5);
  const details = (b: unknown) => (b as { usage: { input_tokens_details: unknown } }).usage;
  assert.deepEqual(
    details(responsesPassThroughBody(structuredClone(upstream), written, ctx)).input_tokens_details,
    { ...upstream.usage.input_tokens_details, cache_write_tokens: 200 },
  );
  upstream.usage.input_tokens_details.cache_write_tokens = 7;
  assert.equal(
    (details(responsesPassThroughBody(upstream, written, ctx)).input_tokens_details as {
      cache_write_tokens: number;
    }).cache_write_tokens,
    7,
  );
});

Deno.test("pass-through: an upstream's context_length_exceeded reaches the client under that code", () => {
  const message = "Your input exceeds the context window of this model.";
  const created = { id: "resp_1", object: "response", status: "in_progress", output: [] };
  const failed = {
    ...created,
    status: "failed",
    error: { code: "context_length_exceeded", message },
  };
  const sse = [
    { type: "response.created", sequence_number: 0, response: created },
    { type: "response.failed", sequence_number: 1, response: failed },
  ].map((d) => `event: ${d.type}\ndata: ${JSON.stringify(d)}\n\n`).join("");
  const fs = frames(passThrough(new TextEncoder().encode(sse), "whole"));
  const error = fs.find(([n]) => n === "error")![1];
  assert.equal(error.code, "context_length_exceeded");
  const r = fs.find(([n]) => n === "response.failed")![1].response as Record<string, unknown>;
  assert.deepEqual(r.error, { code: "context_length_exceeded", message });
});

Deno.test("pass-through body: the text format asked for is echoed where the upstream did not", () => {
  const format = { type: "json_schema", name: "w", schema: { type: "object" }, strict: true };
  const asked: EncodeContext = { ...ctx, clientBody: { text: { format } } };
  const upstream = {
    id: "resp_1",
    object: "response",
    status: "completed",
    output: [],
    text: { format: { type: "text" }, verbosity: "medium" },
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
  };
  // LangChain parses a streamed structured answer only when the response names json_schema.
  const out = responsesPassThroughBody(structuredClone(upstream), cost, asked) as {
    text: { format: unknown; verbosity: unknown };
  };
  assert.deepEqual(out.text, { format, verbosity: "medium" });
  const { text: _, ...silent } = upstream;
  assert.deepEqual((responsesPassThroughBody(silent, cost, asked) as typeof out).text, { format });
  // One the upstream echoed stays its own; a client that asked for nothing changes nothing.
  const echoed = { ...upstream, text: { format: { ...format, name: "u" } } };
  assert.deepEqual((responsesPassThroughBody(echoed, cost, asked) as typeof out).text, echoed.text);
  assert.deepEqual(
    (responsesPassThroughBody(upstream, cost, ctx) as typeof out).text,
    upstream.text,
  );
});

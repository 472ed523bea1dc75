/**
 * Replays every recorded Anthropic response under `../shared/fixtures/upstream/anthropic`
 * (beside the repository; skipped when absent) through the messages decoders. Expectations
 * are read from the recordings themselves, independently of the decoder: the text and tool
 * JSON of the deltas, the signatures, the final usage (cache folded into input, compaction
 * iterations summed), the stop reason.
 */
import assert from "node:assert/strict";
import type { Event } from "../../src/events/event.ts";
import type { Usage } from "../../src/events/usage.ts";
import { createMessagesDecoder, decodeMessagesBody } from "../../src/formats/messages/decode.ts";
import { createMessagesPassThrough } from "../../src/formats/messages/encode.ts";
import { decodeMessagesError } from "../../src/formats/messages/errors.ts";
import { fromMessagesStopReason } from "../../src/formats/messages/finish_reason.ts";
import {
  chunksOf,
  costOf,
  decodeSse,
  splitSse,
  summarize,
} from "../../src/formats/messages/test_util.ts";

const DIR = new URL("../../../shared/fixtures/upstream/anthropic/", import.meta.url);

function listRecordings(): string[] {
  try {
    return [...Deno.readDirSync(DIR)].filter((e) => e.isFile).map((e) => e.name).sort();
  } catch {
    return [];
  }
}

const files = listRecordings();
const read = (name: string) => Deno.readTextFileSync(new URL(name, DIR));

if (files.length === 0) {
  Deno.test({ name: "anthropic recordings replay (recordings absent)", ignore: true, fn() {} });
}

// ---------------------------------------------------------------------------------------------
// What a recording says, read straight from its JSON payloads.

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

interface Expected {
  text: string;
  signatures: string[];
  tools: { id: string; name: string; input: unknown }[];
  usage: Usage;
  stopReason: unknown;
}

/** Anthropic usage to internal figures, computed here without the decoder's code. */
function expectedUsage(u: Json, base: Usage = {}): Usage {
  const list: Json[] = Array.isArray(u.iterations) && u.iterations.length > 0 ? u.iterations : [u];
  const sum = (k: string) =>
    list.every((x) => typeof x[k] !== "number")
      ? undefined
      : list.reduce((a, x) => a + (x[k] ?? 0), 0);
  const input = sum("input_tokens");
  const read = sum("cache_read_input_tokens") ?? base.cacheRead;
  const write = sum("cache_creation_input_tokens") ?? base.cacheWrite;
  const out: Usage = { ...base };
  if (input !== undefined) out.input = input + (read ?? 0) + (write ?? 0);
  if (sum("output_tokens") !== undefined) out.output = sum("output_tokens");
  if (read !== undefined) out.cacheRead = read;
  if (write !== undefined) out.cacheWrite = write;
  const thinking = u.output_tokens_details?.thinking_tokens;
  if (typeof thinking === "number") out.reasoning = thinking;
  return out;
}

function expectFromStream(sse: string): Expected {
  const payloads: Json[] = sse.split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => JSON.parse(l.slice(5)));
  const kinds = new Map<number, Json>();
  const json = new Map<number, string>();
  const e: Expected = { text: "", signatures: [], tools: [], usage: {}, stopReason: undefined };
  let start: Usage = {};
  for (const p of payloads) {
    if (p.type === "message_start" && p.message.usage) {
      const { output_tokens: _, ...u } = p.message.usage;
      start = expectedUsage(u);
      e.usage = start;
    } else if (p.type === "content_block_start") {
      kinds.set(p.index, p.content_block);
      if (p.content_block.type === "tool_use") json.set(p.index, "");
    } else if (p.type === "content_block_delta") {
      const kind = kinds.get(p.index)?.type;
      if (p.delta.type === "text_delta" && kind === "text") e.text += p.delta.text;
      if (p.delta.type === "signature_delta") e.signatures.push(p.delta.signature);
      if (p.delta.type === "input_json_delta" && kind === "tool_use") {
        json.set(p.index, json.get(p.index)! + p.delta.partial_json);
      }
    } else if (p.type === "message_delta") {
      e.usage = expectedUsage(p.usage ?? {}, start);
      e.stopReason = p.delta.stop_reason;
    }
  }
  for (const [index, text] of json) {
    const block = kinds.get(index)!;
    e.tools.push({ id: block.id, name: block.name, input: text === "" ? {} : JSON.parse(text) });
  }
  return e;
}

function expectFromBody(m: Json): Expected {
  const blocks: Json[] = m.content;
  return {
    text: blocks.filter((b) => b.type === "text").map((b) => b.text).join(""),
    signatures: blocks.filter((b) => b.type === "thinking").map((b) => b.signature),
    tools: blocks.filter((b) => b.type === "tool_use").map((b) => ({
      id: b.id,
      name: b.name,
      input: b.input,
    })),
    usage: expectedUsage(m.usage),
    stopReason: m.stop_reason,
  };
}

function assertMatches(events: Event[], e: Expected, label: string): void {
  assert.equal(events[0]?.type, "response_start", `${label}: response_start first`);
  assert.equal(events.filter((x) => x.type === "response_start").length, 1, label);
  const s = summarize(events);
  assert.equal(s.text, e.text, `${label}: text`);
  assert.deepEqual(s.signatures, e.signatures, `${label}: signatures`);
  assert.deepEqual(
    s.tools.map((t) => ({ id: t.id, name: t.name, input: JSON.parse(t.json) })),
    e.tools,
    `${label}: tool calls`,
  );
  const usage = events.filter((x) => x.type === "usage").at(-1);
  assert.deepEqual(usage?.type === "usage" ? usage.usage : undefined, e.usage, `${label}: usage`);
  const finish = events.filter((x) => x.type === "finish");
  assert.equal(finish.length, 1, `${label}: one finish`);
  assert.equal(
    finish[0].type === "finish" && finish[0].reason,
    fromMessagesStopReason(e.stopReason),
    label,
  );
  assert.equal(events.some((x) => x.type === "error"), false, `${label}: no error`);
}

// ---------------------------------------------------------------------------------------------

for (const name of files.filter((f) => f.endsWith(".sse") && !f.includes(".fragment."))) {
  Deno.test(`anthropic replay: ${name} decodes whole and byte by byte to what it records`, () => {
    const sse = read(name);
    const expected = expectFromStream(sse);
    const whole = decodeSse(createMessagesDecoder(), sse, "whole");
    assertMatches(whole, expected, `${name} whole`);
    assert.deepEqual(decodeSse(createMessagesDecoder(), sse, "bytes"), whole, `${name} bytes`);
    assert.deepEqual(decodeSse(createMessagesDecoder(), sse, "lines"), whole, `${name} lines`);
  });
}

for (const name of files.filter((f) => f.endsWith(".sse") && !f.includes(".fragment."))) {
  Deno.test(`anthropic replay: ${name} passes through byte for byte but message_start's id and model and the message_delta`, () => {
    const sse = read(name);
    const decoder = createMessagesDecoder();
    const pt = createMessagesPassThrough({ id: "gen-1", model: "anthropic/claude", created: 0 });
    let out = "";
    for (const ev of splitSse(chunksOf(sse, "bytes"))) {
      const events: Event[] = [];
      decoder.event(ev, (e) => events.push(e));
      out += pt.raw(ev, events);
    }
    const cost = costOf({}, 0.5);
    out += pt.end(cost);
    const at = (s: string) => s.indexOf("event: message_delta");
    const next = (s: string) => s.indexOf("\n\n", at(s)) + 2;
    // message_start carries the generation id and names the requested slug; everything else in
    // it is the upstream's.
    const startEnd = (s: string) => s.indexOf("\n\n", s.indexOf("event: message_start")) + 2;
    const startOf = (s: string) => JSON.parse(s.slice(0, startEnd(s)).split("data: ")[1]);
    const start = startOf(sse);
    assert.deepEqual(startOf(out), {
      ...start,
      message: { ...start.message, id: "gen-1", model: "anthropic/claude" },
    });
    assert.equal(out.slice(startEnd(out), at(out)), sse.slice(startEnd(sse), at(sse)));
    assert.equal(out.slice(next(out)), sse.slice(next(sse)));
    const data = (s: string) => JSON.parse(s.slice(at(s), next(s)).split("data: ")[1]);
    const upstream = data(sse);
    assert.deepEqual(data(out), {
      ...upstream,
      usage: { ...upstream.usage, cost: 0.5, cost_details: cost.details },
    });
  });
}

for (const name of files.filter((f) => f.includes(".fragment.") && f.endsWith(".sse"))) {
  Deno.test(`anthropic replay: ${name} (a stream's tail) ends in an error event`, () => {
    // The recording is only the tail of a stream: give it the head it was cut from.
    const head = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_head",' +
      '"model":"claude","usage":{"input_tokens":1,"output_tokens":1}}}\n\n' +
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,' +
      '"content_block":{"type":"text","text":""}}\n\n';
    const sse = head + read(name);
    const expected = expectFromStream(sse);
    for (const how of ["whole", "bytes"] as const) {
      const events = decodeSse(createMessagesDecoder(), sse, how);
      assert.equal(events[0].type, "response_start");
      assert.equal(summarize(events).text, expected.text);
      const last = events.at(-1)!;
      assert.equal(last.type, "error", how);
      const payload = JSON.parse(
        sse.split("\n").filter((l) => l.startsWith("data:")).at(-1)!.slice(5),
      );
      const status = payload.error.type === "overloaded_error" ? 503 : 502;
      assert.equal(last.type === "error" && last.error.status, status);
      assert.equal(events.filter((e) => e.type === "finish").length, 0);
    }
  });
}

// count-tokens.json answers /v1/messages/count_tokens, which the gateway does not implement.
for (const name of files.filter((f) => f.endsWith(".json") && f.startsWith("messages-"))) {
  Deno.test(`anthropic replay: ${name} body decodes to what it records`, () => {
    const body = JSON.parse(read(name));
    const events: Event[] = [];
    decodeMessagesBody(body, (e) => events.push(e));
    assertMatches(events, expectFromBody(body), name);
  });
}

/** Status the gateway answers for each upstream HTTP status of the recorded error bodies. */
const GATEWAY_STATUS: Record<number, number> = {
  400: 400,
  401: 502,
  403: 403,
  404: 502,
  429: 429,
  529: 503,
};

for (const name of files.filter((f) => /^error-\d{3}-.*\.json$/.test(f))) {
  Deno.test(`anthropic replay: ${name} maps to the gateway's status without leaking ids`, () => {
    const status = Number(name.slice(6, 9));
    const text = read(name);
    const e = decodeMessagesError(status, text);
    assert.equal(e.status, GATEWAY_STATUS[status] ?? 502);
    const body = JSON.parse(text);
    if (typeof body.request_id === "string") {
      assert.equal(e.message.includes(body.request_id), false);
    }
    assert.doesNotMatch(e.message, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
    assert.doesNotMatch(e.message, /x-api-key/);
  });
}

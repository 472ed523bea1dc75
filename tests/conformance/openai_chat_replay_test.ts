/**
 * Replays every recorded OpenAI chat completion (`chat-*.sse`, `chat-*.json` under
 * ../shared/fixtures/upstream/openai, beside the repository) through the chat decoders, whole
 * and byte by byte, and checks the events against the recording itself: text, tool-call
 * arguments and usage figures must come out exactly as OpenAI sent them. Streams also go
 * through the pass-through (bytes kept but the usage chunk), and `error-*.json` bodies
 * through the error mapping. Ignored when the recordings are not there.
 */
import assert from "node:assert/strict";
import type { Event } from "../../src/events/event.ts";
import { mergeUsage, type Usage } from "../../src/events/usage.ts";
import { createChatDecoder, decodeChatBody } from "../../src/formats/chat/decode.ts";
import { createChatPassThrough } from "../../src/formats/chat/encode.ts";
import { decodeChatError } from "../../src/formats/chat/errors.ts";
import { assertForwarded, decodeStream, sseEvents } from "../../src/formats/chat/test_support.ts";

const DIR = new URL("../../../shared/fixtures/upstream/openai/", import.meta.url);

function recordings(): string[] {
  try {
    return [...Deno.readDirSync(DIR)]
      .map((e) => e.name)
      .filter((n) =>
        (n.startsWith("chat-") && (n.endsWith(".sse") || n.endsWith(".json"))) ||
        (n.startsWith("error-") && n.endsWith(".json"))
      )
      .sort();
  } catch {
    return [];
  }
}

type Obj = Record<string, unknown>;

/** What the recording says, read independently of the decoder. */
interface Expected {
  id: string;
  text: string;
  reasoning: string;
  /** Arguments per call, in order of the calls. */
  tools: { id: string; name: string; args: string }[];
  finish: string;
  usage: Obj | undefined;
}

function expectedFromStream(text: string): Expected {
  const out: Expected = {
    id: "",
    text: "",
    reasoning: "",
    tools: [],
    finish: "",
    usage: undefined,
  };
  const byIndex = new Map<number, { id: string; name: string; args: string }>();
  for (const ev of sseEvents([text])) {
    if (ev.data === "[DONE]") continue;
    const c = JSON.parse(ev.data) as Obj;
    out.id ||= c.id as string;
    if (c.usage) out.usage = c.usage as Obj;
    for (const ch of (c.choices ?? []) as Obj[]) {
      const d = (ch.delta ?? {}) as Obj;
      if (typeof d.content === "string") out.text += d.content;
      if (typeof d.reasoning === "string") out.reasoning += d.reasoning;
      for (const tc of (d.tool_calls ?? []) as Obj[]) {
        const fn = (tc.function ?? {}) as Obj;
        let call = byIndex.get(tc.index as number);
        if (!call) {
          call = { id: tc.id as string, name: fn.name as string, args: "" };
          byIndex.set(tc.index as number, call);
          out.tools.push(call);
        }
        call.args += (fn.arguments as string | undefined) ?? "";
      }
      if (typeof ch.finish_reason === "string") out.finish = ch.finish_reason;
    }
  }
  return out;
}

function expectedFromBody(body: Obj): Expected {
  const choice = (body.choices as Obj[])[0];
  const m = choice.message as Obj;
  return {
    id: body.id as string,
    text: (m.content as string | null) ?? "",
    reasoning: (m.reasoning as string | undefined) ?? "",
    tools: ((m.tool_calls ?? []) as Obj[]).map((tc) => {
      const fn = tc.function as Obj;
      return { id: tc.id as string, name: fn.name as string, args: fn.arguments as string };
    }),
    finish: choice.finish_reason as string,
    usage: body.usage as Obj | undefined,
  };
}

const FINISH: Record<string, string> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "content_filter",
};

/** The decoded events must be a sensible sequence and say what the recording says. */
function check(events: Event[], want: Expected): void {
  assert.equal(events[0]?.type, "response_start");
  assert.equal((events[0] as { id?: string }).id, want.id);
  assert.equal(events.filter((e) => e.type === "response_start").length, 1);
  assert.deepEqual(events.filter((e) => e.type === "error"), []);

  const finishes = events.filter((e) => e.type === "finish");
  assert.equal(finishes.length, 1);
  assert.equal(finishes[0].reason, FINISH[want.finish]);
  const finishAt = events.indexOf(finishes[0]);
  assert.ok(
    events.slice(finishAt + 1).every((e) => e.type === "usage"),
    "only usage follows the finish",
  );

  // Every block opened is closed, in order, before the finish.
  let text = false, reasoning = false;
  const openTools = new Set<number>();
  for (const e of events.slice(0, finishAt)) {
    if (e.type === "text_start") (assert.ok(!text && !reasoning), text = true);
    if (e.type === "text_delta") assert.ok(text);
    if (e.type === "text_end") (assert.ok(text), text = false);
    if (e.type === "reasoning_start") (assert.ok(!text && !reasoning), reasoning = true);
    if (e.type === "reasoning_delta") assert.ok(reasoning);
    if (e.type === "reasoning_end") (assert.ok(reasoning), reasoning = false);
    if (e.type === "tool_call_start") (assert.ok(!openTools.has(e.index)), openTools.add(e.index));
    if (e.type === "tool_call_delta") assert.ok(openTools.has(e.index));
    if (e.type === "tool_call_end") (assert.ok(openTools.has(e.index)), openTools.delete(e.index));
  }
  assert.ok(!text && !reasoning && openTools.size === 0, "all blocks closed before finish");

  const joined = (type: "text_delta" | "reasoning_delta") =>
    events.flatMap((e) => (e.type === type ? [e.delta] : [])).join("");
  assert.equal(joined("text_delta"), want.text);
  assert.equal(joined("reasoning_delta"), want.reasoning);

  const calls = events.flatMap((e) => e.type === "tool_call_start" ? [e] : []).map((s) => ({
    id: s.id,
    name: s.name,
    args: events.flatMap((e) => e.type === "tool_call_delta" && e.index === s.index ? [e.json] : [])
      .join(""),
  }));
  assert.deepEqual(calls, want.tools);

  let usage: Usage = {};
  for (const e of events) if (e.type === "usage") usage = mergeUsage(usage, e.usage);
  const u = want.usage;
  assert.ok(u, "the recording has usage");
  const pd = (u.prompt_tokens_details ?? {}) as Obj;
  const cd = (u.completion_tokens_details ?? {}) as Obj;
  assert.equal(usage.input, u.prompt_tokens);
  assert.equal(usage.output, u.completion_tokens);
  assert.equal(usage.cacheRead, pd.cached_tokens);
  assert.equal(usage.reasoning, cd.reasoning_tokens);
}

const files = recordings();

if (files.length === 0) {
  Deno.test({
    name: "openai chat replay: recordings under ../shared/fixtures/upstream/openai",
    ignore: true,
    fn() {},
  });
}

/**
 * Pass-through of the recording: every event forwarded as is but the chunks' top-level `id`
 * and `model` (the generation's id and the slug) and the usage chunk (cost added).
 */
function checkPassThrough(text: string): void {
  const { out, ctx, cost } = passThrough(text, true);
  const before = sseEvents([text]);
  const after = sseEvents([out]);
  assert.equal(after.map((e) => e.raw).join(""), out);
  assert.equal(after.length, before.length);
  assert.equal(after.filter((e) => e.data.includes('"usage":{')).length, 1);
  after.forEach((e, i) => {
    if (!before[i].data.includes('"usage":{')) return assertForwarded(e, before[i], ctx);
    const edited = JSON.parse(e.data);
    const original = JSON.parse(before[i].data);
    assert.equal(edited.usage.cost, 0.25);
    assert.deepEqual(edited.usage.cost_details, cost.details);
    assert.deepEqual(edited, {
      ...original,
      id: ctx.id,
      model: ctx.model,
      usage: { ...original.usage, cost: 0.25, cost_details: cost.details },
    });
  });
  // Nothing of the upstream's chunk id or model name is left (tool call ids are kept).
  const first = JSON.parse(before[0].data);
  assert.ok(!out.includes(first.id));
  assert.ok(!out.includes(JSON.stringify(first.model)));
  for (const call of expectedFromStream(text).tools) assert.ok(out.includes(call.id));
}

/** The recording through the pass-through, for a client that asked for a usage chunk or not. */
function passThrough(text: string, includeUsage: boolean) {
  const dec = createChatDecoder();
  const ctx = {
    id: "gen-x",
    model: "openai/x",
    created: 1,
    clientBody: includeUsage ? { stream_options: { include_usage: true } } : {},
  };
  const pt = createChatPassThrough(ctx);
  const cost = { cost: 0.25, details: { upstream_inference_input_cost: 0.1 }, usage: {} };
  let out = "";
  for (const ev of sseEvents([text])) {
    const evs: Event[] = [];
    dec.event(ev, (e) => evs.push(e));
    out += pt.raw(ev, evs);
  }
  dec.end(() => assert.fail("a recording ends cleanly"));
  out += pt.end(cost);
  return { out, ctx, cost };
}

/**
 * Without `include_usage` the recording's usage (cost added) rides its finish chunk: every
 * chunk has a choice, the rest is forwarded as is.
 */
function checkUsageOnFinish(text: string): void {
  const { out, ctx } = passThrough(text, false);
  const before = sseEvents([text]).filter((e) => !/"choices":\[\]/.test(e.data));
  const after = sseEvents([out]);
  assert.equal(after.length, before.length);
  assert.equal(after.at(-1)!.data, "[DONE]");
  const chunks = after.slice(0, -1).map((e) => JSON.parse(e.data));
  for (const c of chunks) assert.ok(c.choices.length > 0);
  const last = chunks.at(-1);
  assert.ok(last.choices[0].finish_reason);
  assert.equal(last.usage.cost, 0.25);
  assert.ok(last.usage.prompt_tokens > 0);
  after.slice(0, -2).forEach((e, i) => assertForwarded(e, before[i], ctx));
}

/** Upstream error statuses → what the client gets on the chat endpoint. */
const ERROR_STATUS: Record<number, number> = { 400: 400, 401: 502, 403: 403, 404: 502, 429: 429 };

for (const name of files) {
  if (name.startsWith("error-")) {
    Deno.test(`openai chat replay: ${name} maps to a client error without secrets`, async () => {
      const status = Number(name.split("-")[1]);
      const body = JSON.parse(await Deno.readTextFile(new URL(name, DIR)));
      const e = decodeChatError(status, body);
      const quota = JSON.stringify(body).includes("insufficient_quota");
      assert.equal(e.status, quota ? 502 : ERROR_STATUS[status] ?? 502);
      assert.doesNotMatch(e.message, /\bsk-|\borg-[A-Za-z0-9]{6,}|Bearer \w/);
    });
  } else if (name.endsWith(".sse")) {
    Deno.test(`openai chat replay: ${name}, whole and byte by byte`, async () => {
      const text = await Deno.readTextFile(new URL(name, DIR));
      const want = expectedFromStream(text);
      const whole = decodeStream(createChatDecoder(), text, "whole");
      check(whole, want);
      const bytes = decodeStream(createChatDecoder(), text, "bytes");
      assert.deepEqual(bytes, whole);
      checkPassThrough(text);
      checkUsageOnFinish(text);
    });
  } else {
    Deno.test(`openai chat replay: ${name}`, async () => {
      const body = JSON.parse(await Deno.readTextFile(new URL(name, DIR))) as Obj;
      const events: Event[] = [];
      decodeChatBody(body, (e) => events.push(e));
      check(events, expectedFromBody(body));
    });
  }
}

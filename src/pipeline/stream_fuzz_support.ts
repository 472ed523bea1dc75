/**
 * Random upstream streams for the stream stage's fuzz test: a logical answer (blocks, usage,
 * how it ends) written out in each upstream protocol's own wire shapes, as the providers
 * send them, then framed with the variations a network and a vendor add (CRLF, comments,
 * keep-alives, unknown events and fields) and cut into chunks anywhere.
 */

/** A seeded generator (mulberry32): the same seed gives the same stream. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
}

export type Protocol =
  | "openai-chat"
  | "openrouter-chat"
  | "anthropic-messages"
  | "openai-responses";
export const PROTOCOLS: Protocol[] = [
  "openai-chat",
  "openrouter-chat",
  "anthropic-messages",
  "openai-responses",
];

export type Block =
  | { kind: "text"; parts: string[] }
  | { kind: "refusal"; parts: string[] }
  | { kind: "reasoning"; parts: string[]; signature?: string; encrypted?: string }
  | { kind: "tool"; id: string; name: string; parts: string[] }
  | { kind: "search"; id: string; query: string };

export interface Story {
  blocks: Block[];
  /** Tool calls streamed interleaved (chat by index, Anthropic by block index). */
  parallel: boolean;
  usage: { input: number; output: number; cached: number; reasoning: number; costUsd?: number };
  /** Where the usage is said: at the end, not at all, also early, or twice at the end. */
  usageMode: "end" | "none" | "early" | "twice";
  finish: "stop" | "length" | "tool_calls";
  /** Deltas with nothing in them, blocks and items of types no decoder knows. */
  oddities: boolean;
  /** Chat: every tool call whole in one chunk (some compatible vendors). */
  wholeCalls: boolean;
  /** complete; cut (no terminal event); error mid-stream; truncated JSON as the last event. */
  ending: "complete" | "cut" | "error" | "truncated" | "cutbytes";
}

const WORDS = [
  "Hello",
  " world",
  "é",
  "日本語",
  "🙂",
  "👩‍💻",
  ' "quoted"',
  "\\back",
  "\nnew line",
  "\ttab",
  " Привет",
  "</s>",
  "data: x",
  "\r\n",
  "{}",
  "",
];

function phrase(rng: Rng, n = 1 + rng.int(5)): string[] {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    let s = "";
    for (let j = 1 + rng.int(3); j > 0; j--) s += rng.pick(WORDS);
    parts.push(s);
  }
  return parts;
}

/** A tool call's arguments, split anywhere (inside escapes and multi-byte characters too). */
function argParts(rng: Rng): string[] {
  const json = JSON.stringify({
    city: rng.pick(["Paris", "Zürich", "東京", 'a"b']),
    n: rng.int(9),
  });
  const cuts = new Set<number>();
  for (let k = rng.int(5); k > 0; k--) cuts.add(rng.int(json.length));
  const at = [0, ...[...cuts].sort((a, b) => a - b), json.length];
  const parts: string[] = [];
  for (let i = 1; i < at.length; i++) {
    if (at[i] > at[i - 1]) parts.push(json.slice(at[i - 1], at[i]));
  }
  return parts;
}

let ids = 0;
const nextId = (p: string) => `${p}_${(ids++).toString(36)}`;

export function story(rng: Rng, protocol: Protocol): Story {
  const blocks: Block[] = [];
  const sig = protocol !== "openai-chat";
  if (rng.chance(0.4) && protocol !== "openai-chat") {
    blocks.push({
      kind: "reasoning",
      parts: phrase(rng),
      signature: sig && rng.chance(0.7) ? `sig${rng.int(1e6)}==` : undefined,
      encrypted: protocol === "openai-responses" && rng.chance(0.5) ? "gAAAenc" : undefined,
    });
  }
  if (rng.chance(0.2) && protocol !== "openai-chat" && protocol !== "openrouter-chat") {
    blocks.push({ kind: "search", id: nextId("srv"), query: rng.pick(["weather", "日本", 'a"q']) });
  }
  if (rng.chance(0.1)) blocks.push({ kind: "refusal", parts: phrase(rng) });
  else if (rng.chance(0.8)) {
    const parts = phrase(rng, 1 + rng.int(12));
    if (rng.chance(0.05)) parts.push("長".repeat(40_000 + rng.int(40_000)));
    blocks.push({ kind: "text", parts });
  }
  const tools = rng.chance(0.4) ? 1 + rng.int(3) : 0;
  for (let i = 0; i < tools; i++) {
    blocks.push({
      kind: "tool",
      id: nextId("call"),
      name: rng.pick(["get", "f_2"]),
      parts: argParts(rng),
    });
  }
  const usage = {
    input: 10 + rng.int(1000),
    output: 1 + rng.int(500),
    cached: rng.chance(0.3) ? rng.int(10) : 0,
    reasoning: blocks.some((b) => b.kind === "reasoning") ? rng.int(50) : 0,
    costUsd: protocol === "openrouter-chat" && rng.chance(0.7) ? rng.int(1000) / 1e6 : undefined,
  };
  return {
    blocks,
    parallel: tools > 1 && rng.chance(0.5),
    oddities: rng.chance(0.3),
    wholeCalls: rng.chance(0.15),
    usage,
    usageMode: rng.pick(["end", "end", "end", "none", "early", "twice"] as const),
    finish: tools > 0 ? "tool_calls" : rng.pick(["stop", "stop", "length"] as const),
    ending: rng.pick(
      [
        "complete",
        "complete",
        "complete",
        "complete",
        "cut",
        "error",
        "truncated",
        "cutbytes",
      ] as const,
    ),
  };
}

/** One SSE event as written: a comment, or data with an optional event name. */
export type Frame = { comment: string } | { event?: string; data: string };

type J = Record<string, unknown>;
const data = (o: unknown, event?: string): Frame => ({ event, data: JSON.stringify(o) });

/** Tool argument deltas in the order a parallel stream might send them. */
function toolSchedule(rng: Rng, tools: { i: number; parts: string[] }[], parallel: boolean) {
  const order: { i: number; part: number }[] = [];
  if (!parallel) {
    for (const t of tools) t.parts.forEach((_, p) => order.push({ i: t.i, part: p }));
    return order;
  }
  const next = tools.map(() => 0);
  for (;;) {
    const live = tools.map((_, k) => k).filter((k) => next[k] < tools[k].parts.length);
    if (live.length === 0) return order;
    const k = rng.pick(live);
    order.push({ i: tools[k].i, part: next[k]++ });
  }
}

function chatFrames(rng: Rng, s: Story, openrouter: boolean): Frame[] {
  const id = "chatcmpl-" + rng.int(1e9);
  const head = (extra: J): J => ({
    id,
    object: "chat.completion.chunk",
    created: 1754693439,
    model: openrouter ? "anthropic/claude-sonnet-4.5" : "gpt-4o-2024-08-06",
    ...(openrouter
      ? { provider: "Anthropic" }
      : { service_tier: "default", system_fingerprint: "fp_1" }),
    ...extra,
  });
  const choice = (delta: J, finish: string | null = null): J =>
    head({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  const usage = (): J => {
    const u: J = {
      prompt_tokens: s.usage.input,
      completion_tokens: s.usage.output,
      total_tokens: s.usage.input + s.usage.output,
      prompt_tokens_details: { cached_tokens: s.usage.cached, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: s.usage.reasoning, audio_tokens: 0 },
    };
    if (s.usage.costUsd !== undefined) u.cost = s.usage.costUsd;
    return u;
  };
  const out: Frame[] = [];
  if (openrouter) out.push({ comment: "OPENROUTER PROCESSING" });
  out.push(data(choice({ role: "assistant", content: openrouter ? "" : null, refusal: null })));
  if (s.usageMode === "early") out.push(data(head({ choices: [], usage: usage() })));
  const tools: { i: number; parts: string[]; b: Block & { kind: "tool" } }[] = [];
  for (const b of s.blocks) {
    if (b.kind === "reasoning") {
      for (const p of b.parts) {
        out.push(
          data(choice(
            openrouter
              ? {
                role: "assistant",
                content: "",
                reasoning: p,
                reasoning_details: [{
                  type: "reasoning.text",
                  text: p,
                  format: "anthropic-claude-v1",
                  index: 0,
                }],
              }
              : { reasoning_content: p },
          )),
        );
      }
      if (b.signature && openrouter) {
        out.push(
          data(
            choice({
              role: "assistant",
              content: "",
              reasoning: "",
              reasoning_details: [{
                type: "reasoning.text",
                signature: b.signature,
                format: "anthropic-claude-v1",
                index: 0,
              }],
            }),
          ),
        );
      }
    } else if (b.kind === "text" || b.kind === "refusal") {
      for (const p of b.parts) {
        out.push(data(choice(b.kind === "text" ? { content: p } : { refusal: p })));
        if (s.oddities) {
          out.push(
            data(choice(rng.pick([{}, { content: "" }, { content: null }, { role: "assistant" }]))),
          );
        }
      }
    } else if (b.kind === "tool") tools.push({ i: tools.length, parts: b.parts, b });
  }
  if (s.wholeCalls && tools.length > 0) {
    out.push(
      data(
        choice({
          tool_calls: tools.map((t) => ({
            index: t.i,
            id: t.b.id,
            type: "function",
            function: { name: t.b.name, arguments: t.parts.join("") },
          })),
        }),
      ),
    );
    tools.length = 0;
  }
  const opened = new Set<number>();
  for (const { i, part } of toolSchedule(rng, tools, s.parallel)) {
    const t = tools[i];
    if (!opened.has(i)) {
      opened.add(i);
      out.push(
        data(
          choice({
            tool_calls: [{
              index: i,
              id: t.b.id,
              type: "function",
              function: { name: t.b.name, arguments: "" },
            }],
          }),
        ),
      );
    }
    out.push(data(choice({ tool_calls: [{ index: i, function: { arguments: t.parts[part] } }] })));
  }
  if (s.ending === "error") {
    out.push(
      openrouter
        ? data(
          head({
            error: {
              code: 502,
              message: "Provider returned error",
              metadata: { provider_name: "Anthropic" },
            },
            choices: [{
              index: 0,
              delta: { content: "" },
              finish_reason: "error",
              native_finish_reason: "error",
            }],
          }),
        )
        : data({
          error: {
            message: "The server had an error while processing your request.",
            type: "server_error",
            param: null,
            code: null,
          },
        }),
    );
    if (openrouter && s.usageMode !== "none") out.push(data(head({ choices: [], usage: usage() })));
    return out;
  }
  if (s.ending === "cut") return out;
  const reason = s.finish;
  if (openrouter) {
    // OpenRouter: the finish chunk, then its usage chunk (choices with an empty delta).
    out.push(data(choice({ role: "assistant", content: "" }, reason)));
    if (s.usageMode !== "none") {
      out.push(
        data(
          head({
            choices: [{
              index: 0,
              delta: { role: "assistant", content: "" },
              finish_reason: null,
              native_finish_reason: null,
              logprobs: null,
            }],
            usage: usage(),
          }),
        ),
      );
      if (s.usageMode === "twice") out.push(data(head({ choices: [], usage: usage() })));
    }
  } else {
    out.push(data(choice({}, reason)));
    if (s.usageMode !== "none") out.push(data(head({ choices: [], usage: usage() })));
    if (s.usageMode === "twice") out.push(data(head({ choices: [], usage: usage() })));
  }
  if (s.ending === "truncated") {
    out.push({ data: JSON.stringify(choice({ content: "x" })).slice(0, 40) });
    return out;
  }
  out.push({ data: "[DONE]" });
  return out;
}

function anthropicFrames(rng: Rng, s: Story): Frame[] {
  const ev = (o: J) => data(o, o.type as string);
  const usage = (u: J) => ({
    input_tokens: s.usage.input - s.usage.cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: s.usage.cached,
    ...u,
  });
  const out: Frame[] = [
    ev({
      type: "message_start",
      message: {
        id: "msg_" + rng.int(1e9),
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5-20250929",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: s.usageMode === "none"
          ? undefined
          : usage({ output_tokens: 1, service_tier: "standard" }),
      },
    }),
  ];
  if (rng.chance(0.5)) out.push(ev({ type: "ping" }));
  let index = 0;
  let searches = 0;
  if (s.oddities) {
    const i = index++;
    out.push(
      ev({
        type: "content_block_start",
        index: i,
        content_block: rng.pick([{ type: "redacted_thinking", data: "EmwKAhgB" }, {
          type: "future_block",
          x: 1,
        }]),
      }),
    );
    out.push(
      ev({ type: "content_block_delta", index: i, delta: { type: "future_delta", y: "z" } }),
    );
    out.push(ev({ type: "content_block_stop", index: i }));
  }
  const tools: { i: number; parts: string[]; block: number }[] = [];
  const toolBlocks: (Block & { kind: "tool" })[] = [];
  for (const b of s.blocks) {
    const i = index++;
    if (b.kind === "reasoning") {
      out.push(
        ev({
          type: "content_block_start",
          index: i,
          content_block: { type: "thinking", thinking: "", signature: "" },
        }),
      );
      for (const p of b.parts) {
        out.push(
          ev({
            type: "content_block_delta",
            index: i,
            delta: { type: "thinking_delta", thinking: p },
          }),
        );
      }
      if (b.signature) {
        out.push(
          ev({
            type: "content_block_delta",
            index: i,
            delta: { type: "signature_delta", signature: b.signature },
          }),
        );
      }
      out.push(ev({ type: "content_block_stop", index: i }));
    } else if (b.kind === "text" || b.kind === "refusal") {
      out.push(
        ev({ type: "content_block_start", index: i, content_block: { type: "text", text: "" } }),
      );
      for (const p of b.parts) {
        out.push(
          ev({ type: "content_block_delta", index: i, delta: { type: "text_delta", text: p } }),
        );
        if (s.oddities) {
          out.push(
            ev({ type: "content_block_delta", index: i, delta: { type: "text_delta", text: "" } }),
          );
        }
        if (rng.chance(0.1)) {
          out.push(
            ev({
              type: "content_block_delta",
              index: i,
              delta: {
                type: "citations_delta",
                citation: { type: "web_search_result_location", url: "https://x" },
              },
            }),
          );
        }
      }
      out.push(ev({ type: "content_block_stop", index: i }));
    } else if (b.kind === "search") {
      searches++;
      out.push(
        ev({
          type: "content_block_start",
          index: i,
          content_block: { type: "server_tool_use", id: b.id, name: "web_search", input: {} },
        }),
      );
      const q = JSON.stringify({ query: b.query });
      out.push(
        ev({
          type: "content_block_delta",
          index: i,
          delta: { type: "input_json_delta", partial_json: q.slice(0, 5) },
        }),
      );
      out.push(
        ev({
          type: "content_block_delta",
          index: i,
          delta: { type: "input_json_delta", partial_json: q.slice(5) },
        }),
      );
      out.push(ev({ type: "content_block_stop", index: i }));
      const r = index++;
      out.push(
        ev({
          type: "content_block_start",
          index: r,
          content_block: {
            type: "web_search_tool_result",
            tool_use_id: b.id,
            content: [{
              type: "web_search_result",
              url: "https://x",
              title: "X",
              encrypted_content: "e",
            }],
          },
        }),
      );
      out.push(ev({ type: "content_block_stop", index: r }));
    } else {
      tools.push({ i: tools.length, parts: b.parts, block: i });
      toolBlocks.push(b);
    }
  }
  // Tool blocks: in turn, or (parallel) every block opened first and deltas interleaved.
  const sched = toolSchedule(rng, tools, s.parallel);
  const opened = new Set<number>();
  const open = (k: number) => {
    if (opened.has(k)) return;
    opened.add(k);
    out.push(
      ev({
        type: "content_block_start",
        index: tools[k].block,
        content_block: {
          type: "tool_use",
          id: toolBlocks[k].id,
          name: toolBlocks[k].name,
          input: {},
        },
      }),
    );
    out.push(
      ev({
        type: "content_block_delta",
        index: tools[k].block,
        delta: { type: "input_json_delta", partial_json: "" },
      }),
    );
  };
  let last = -1;
  for (const { i, part } of sched) {
    if (!s.parallel && last !== -1 && last !== i) {
      out.push(ev({ type: "content_block_stop", index: tools[last].block }));
    }
    open(i);
    last = i;
    out.push(
      ev({
        type: "content_block_delta",
        index: tools[i].block,
        delta: { type: "input_json_delta", partial_json: tools[i].parts[part] },
      }),
    );
  }
  if (s.parallel) {
    for (const t of tools) out.push(ev({ type: "content_block_stop", index: t.block }));
  } else if (last !== -1) out.push(ev({ type: "content_block_stop", index: tools[last].block }));
  if (s.ending === "error") {
    out.push(
      ev({
        type: "error",
        error: { type: rng.pick(["overloaded_error", "api_error"]), message: "Overloaded" },
      }),
    );
    return out;
  }
  if (s.ending === "cut") return out;
  const stop = s.finish === "stop" ? "end_turn" : s.finish === "length" ? "max_tokens" : "tool_use";
  const final = usage({
    output_tokens: s.usage.output,
    ...(searches ? { server_tool_use: { web_search_requests: searches } } : {}),
  });
  if (s.usageMode === "none") {
    out.push(ev({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null } }));
  } else {
    out.push(
      ev({
        type: "message_delta",
        delta: { stop_reason: stop, stop_sequence: null },
        usage: final,
      }),
    );
    if (s.usageMode === "twice") {
      out.push(
        ev({
          type: "message_delta",
          delta: { stop_reason: stop, stop_sequence: null },
          usage: final,
        }),
      );
    }
  }
  if (s.ending === "truncated") {
    out.push({ event: "message_stop", data: '{"type":"message_st' });
    return out;
  }
  out.push(ev({ type: "message_stop" }));
  return out;
}

function responsesFrames(rng: Rng, s: Story): Frame[] {
  let seq = 0;
  const ev = (o: J) => data({ type: o.type, sequence_number: seq++, ...o }, o.type as string);
  const id = "resp_" + rng.int(1e9);
  const response = (status: string, extra: J = {}): J => ({
    id,
    object: "response",
    created_at: 1757687055,
    status,
    model: "gpt-5-2025-08-07",
    output: [],
    usage: null,
    error: null,
    incomplete_details: null,
    ...extra,
  });
  const usage = (): J => ({
    input_tokens: s.usage.input,
    input_tokens_details: { cached_tokens: s.usage.cached },
    output_tokens: s.usage.output,
    output_tokens_details: { reasoning_tokens: s.usage.reasoning },
    total_tokens: s.usage.input + s.usage.output,
  });
  const out: Frame[] = [ev({ type: "response.created", response: response("in_progress") })];
  out.push(ev({ type: "response.in_progress", response: response("in_progress") }));
  const items: J[] = [];
  const tools: { i: number; parts: string[]; out: number; item: J }[] = [];
  if (s.oddities) {
    const item: J = { id: "ig_0", type: "image_generation_call", status: "in_progress" };
    out.push(ev({ type: "response.output_item.added", output_index: 0, item }));
    out.push(
      ev({ type: "response.image_generation_call.in_progress", output_index: 0, item_id: "ig_0" }),
    );
    const done = { ...item, status: "completed", result: "iVBORw0KGgo=" };
    out.push(ev({ type: "response.output_item.done", output_index: 0, item: done }));
    items.push(done);
  }
  for (const b of s.blocks) {
    const oi = items.length;
    if (b.kind === "reasoning") {
      const item: J = { id: "rs_" + oi, type: "reasoning", summary: [] };
      if (b.encrypted) item.encrypted_content = b.encrypted;
      out.push(ev({ type: "response.output_item.added", output_index: oi, item }));
      out.push(
        ev({
          type: "response.reasoning_summary_part.added",
          item_id: item.id,
          output_index: oi,
          summary_index: 0,
          part: { type: "summary_text", text: "" },
        }),
      );
      for (const p of b.parts) {
        out.push(
          ev({
            type: "response.reasoning_summary_text.delta",
            item_id: item.id,
            output_index: oi,
            summary_index: 0,
            delta: p,
            obfuscation: "xx",
          }),
        );
      }
      const text = b.parts.join("");
      out.push(
        ev({
          type: "response.reasoning_summary_text.done",
          item_id: item.id,
          output_index: oi,
          summary_index: 0,
          text,
        }),
      );
      out.push(
        ev({
          type: "response.reasoning_summary_part.done",
          item_id: item.id,
          output_index: oi,
          summary_index: 0,
          part: { type: "summary_text", text },
        }),
      );
      const done = { ...item, summary: [{ type: "summary_text", text }] };
      out.push(ev({ type: "response.output_item.done", output_index: oi, item: done }));
      items.push(done);
    } else if (b.kind === "text" || b.kind === "refusal") {
      const item: J = {
        id: "msg_" + oi,
        type: "message",
        status: "in_progress",
        content: [],
        role: "assistant",
      };
      const kind = b.kind === "text" ? "output_text" : "refusal";
      out.push(ev({ type: "response.output_item.added", output_index: oi, item }));
      const empty = b.kind === "text"
        ? { type: "output_text", annotations: [], logprobs: [], text: "" }
        : { type: "refusal", refusal: "" };
      out.push(
        ev({
          type: "response.content_part.added",
          item_id: item.id,
          output_index: oi,
          content_index: 0,
          part: empty,
        }),
      );
      for (const p of b.parts) {
        out.push(
          ev({
            type: b.kind === "text" ? "response.output_text.delta" : "response.refusal.delta",
            item_id: item.id,
            output_index: oi,
            content_index: 0,
            delta: p,
            logprobs: [],
          }),
        );
        if (s.oddities && b.kind === "text") {
          out.push(
            ev({
              type: "response.output_text.delta",
              item_id: item.id,
              output_index: oi,
              content_index: 0,
              delta: "",
              logprobs: [],
            }),
          );
        }
      }
      const text = b.parts.join("");
      const part = b.kind === "text"
        ? { type: "output_text", annotations: [], logprobs: [], text }
        : { type: "refusal", refusal: text };
      out.push(
        ev(
          b.kind === "text"
            ? {
              type: "response.output_text.done",
              item_id: item.id,
              output_index: oi,
              content_index: 0,
              text,
              logprobs: [],
            }
            : {
              type: "response.refusal.done",
              item_id: item.id,
              output_index: oi,
              content_index: 0,
              refusal: text,
            },
        ),
      );
      out.push(
        ev({
          type: "response.content_part.done",
          item_id: item.id,
          output_index: oi,
          content_index: 0,
          part,
        }),
      );
      const done = { ...item, status: "completed", content: [part] };
      out.push(ev({ type: "response.output_item.done", output_index: oi, item: done }));
      items.push(done);
      void kind;
    } else if (b.kind === "search") {
      const item: J = { id: b.id, type: "web_search_call", status: "in_progress" };
      out.push(ev({ type: "response.output_item.added", output_index: oi, item }));
      out.push(
        ev({ type: "response.web_search_call.in_progress", output_index: oi, item_id: b.id }),
      );
      out.push(ev({ type: "response.web_search_call.searching", output_index: oi, item_id: b.id }));
      out.push(ev({ type: "response.web_search_call.completed", output_index: oi, item_id: b.id }));
      const done = {
        ...item,
        status: "completed",
        action: { type: "search", query: b.query, sources: [{ type: "url", url: "https://x" }] },
      };
      out.push(ev({ type: "response.output_item.done", output_index: oi, item: done }));
      items.push(done);
    } else {
      const item: J = {
        id: "fc_" + oi,
        type: "function_call",
        status: "in_progress",
        arguments: "",
        call_id: b.id,
        name: b.name,
      };
      tools.push({ i: tools.length, parts: b.parts, out: oi, item });
      items.push({ ...item, status: "completed", arguments: b.parts.join("") });
    }
  }
  const sched = toolSchedule(rng, tools, s.parallel);
  const opened = new Set<number>();
  const close = (k: number) => {
    const t = tools[k];
    const args = t.parts.join("");
    out.push(
      ev({
        type: "response.function_call_arguments.done",
        item_id: t.item.id,
        output_index: t.out,
        arguments: args,
      }),
    );
    out.push(
      ev({
        type: "response.output_item.done",
        output_index: t.out,
        item: { ...t.item, status: "completed", arguments: args },
      }),
    );
  };
  let last = -1;
  for (const { i, part } of sched) {
    if (!s.parallel && last !== -1 && last !== i) close(last);
    if (!opened.has(i)) {
      opened.add(i);
      out.push(
        ev({ type: "response.output_item.added", output_index: tools[i].out, item: tools[i].item }),
      );
    }
    last = i;
    out.push(
      ev({
        type: "response.function_call_arguments.delta",
        item_id: tools[i].item.id,
        output_index: tools[i].out,
        delta: tools[i].parts[part],
        obfuscation: "x",
      }),
    );
  }
  if (s.parallel) tools.forEach((_, k) => close(k));
  else if (last !== -1) close(last);
  if (s.ending === "error") {
    out.push(
      ev({
        type: "error",
        code: "server_error",
        message: "An error occurred while processing your request.",
        param: null,
      }),
    );
    if (rng.chance(0.5)) {
      out.push(
        ev({
          type: "response.failed",
          response: response("failed", {
            error: { code: "server_error", message: "An error occurred" },
            usage: s.usageMode === "none" ? null : usage(),
            output: items,
          }),
        }),
      );
    }
    return out;
  }
  if (s.ending === "cut") return out;
  const incomplete = s.finish === "length";
  const final = response(incomplete ? "incomplete" : "completed", {
    output: items,
    usage: s.usageMode === "none" ? null : usage(),
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
  });
  const type = incomplete ? "response.incomplete" : "response.completed";
  if (s.ending === "truncated") {
    out.push({ event: type, data: JSON.stringify({ type, response: final }).slice(0, 60) });
    return out;
  }
  out.push(ev({ type, response: final }));
  return out;
}

export function frames(rng: Rng, s: Story, p: Protocol): Frame[] {
  switch (p) {
    case "openai-chat":
      return chatFrames(rng, s, false);
    case "openrouter-chat":
      return chatFrames(rng, s, true);
    case "anthropic-messages":
      return anthropicFrames(rng, s);
    case "openai-responses":
      return responsesFrames(rng, s);
  }
}

/** How a stream is written: line ends, comments, unknown events and fields. */
export interface Framing {
  eol: "\n" | "\r\n" | "\r";
  /** Comments and keep-alives between events. */
  noise: number;
  /** Unknown fields added to JSON objects. */
  unknownFields: boolean;
  /** Events of types no client SDK knows (forwarded as they are by a pass-through). */
  unknownEvents: boolean;
  /** `data:` without the space. */
  tight: boolean;
}

export function framing(rng: Rng): Framing {
  return {
    eol: rng.pick(["\n", "\n", "\r\n", "\r"] as const),
    noise: rng.pick([0, 0, 0.1, 0.3]),
    unknownFields: rng.chance(0.3),
    unknownEvents: rng.chance(0.3),
    tight: rng.chance(0.2),
  };
}

const NOISE: ((p: Protocol, unknown: boolean) => Frame)[] = [
  () => ({ comment: " ping" }),
  () => ({ comment: " OPENROUTER PROCESSING" }),
  () => ({ comment: "" }),
  (p) =>
    p === "anthropic-messages"
      ? data({ type: "ping" }, "ping")
      : p === "openai-responses"
      ? data({ type: "keepalive" }, "keepalive")
      : { comment: "keep-alive" },
  (p, unknown) =>
    !unknown
      ? { comment: "" }
      : p === "anthropic-messages"
      ? data({ type: "future_event", x: 1 }, "future_event")
      : p === "openai-responses"
      ? data({ type: "response.future.thing" }, "response.future.thing")
      : { comment: " x" },
];

/** Adds an unknown field to every object of a JSON text (key order kept, the new one last). */
function withUnknown(json: string): string {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) {
      const o: J = {};
      for (const [k, x] of Object.entries(v)) o[k] = walk(x);
      o.x_vendor_extra = { nested: [1, "é"] };
      return o;
    }
    return v;
  };
  try {
    return JSON.stringify(walk(JSON.parse(json)));
  } catch {
    return json;
  }
}

export function render(rng: Rng, fs: Frame[], f: Framing, p: Protocol): string {
  const out: string[] = [];
  const put = (fr: Frame) => {
    if ("comment" in fr) {
      out.push(`:${fr.comment}${f.eol}${f.eol}`);
      return;
    }
    let s = "";
    if (fr.event !== undefined) s += `event: ${fr.event}${f.eol}`;
    const d = f.unknownFields ? withUnknown(fr.data) : fr.data;
    s += `data:${f.tight ? "" : " "}${d}${f.eol}${f.eol}`;
    out.push(s);
  };
  for (const [i, fr] of fs.entries()) {
    // Before the first event only comments: providers open with their own first event.
    if (f.noise > 0 && rng.chance(f.noise)) {
      put(i === 0 ? { comment: " OPENROUTER PROCESSING" } : rng.pick(NOISE)(p, f.unknownEvents));
    }
    put(fr);
  }
  return out.join("");
}

/** The stream as the connection carried it: cut anywhere for a connection that dropped. */
export function wire(rng: Rng, text: string, s: Story): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  return s.ending === "cutbytes" ? bytes.subarray(0, rng.int(bytes.length)) : bytes;
}

/** Cuts bytes into chunks: whole, every byte, or at random places. */
export function chunk(
  rng: Rng,
  bytes: Uint8Array,
  how: "whole" | "bytes" | "random",
): Uint8Array[] {
  if (how === "whole") return [bytes];
  if (how === "bytes") return Array.from(bytes, (b) => Uint8Array.of(b));
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const n = 1 + rng.int(rng.chance(0.5) ? 8 : 200);
    out.push(bytes.subarray(at, at + n));
    at += n;
  }
  return out;
}

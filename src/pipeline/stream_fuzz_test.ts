/**
 * Seeded fuzzing of the stream stage: random answers in each upstream protocol's wire shapes
 * (OpenAI chat, OpenRouter's chat, Anthropic messages, OpenAI responses), framed and cut the
 * ways networks and vendors do, through the decoder, meter and every client format's encoder
 * or pass-through, as the pipeline builds the stage. What each client gets is read back with
 * its official SDK's stream helper. The recorded streams under tests/fixtures (and the
 * provider recordings beside the repository, when present) are cut the same ways.
 *
 * Invariants: the stage never throws; the client's SSE parses and ends once, in an order its
 * SDK accepts; a stream cut into different chunks gives the same content and the same cost;
 * a whole answer reaches the client whole, billed on the usage reported (never twice); a
 * broken one reaches it as an error.
 */
import assert from "node:assert/strict";
import {
  chunk,
  frames,
  framing,
  type Protocol,
  PROTOCOLS,
  render,
  Rng,
  type Story,
  story,
  wire,
} from "./stream_fuzz_support.ts";
import { type Client, CLIENTS, clientView, frameProblems, runStage } from "./stream_fuzz_run.ts";

/**
 * Seeds per protocol: each runs every client format, cut three ways. A longer hunt:
 * `STREAM_FUZZ_FROM=1000 STREAM_FUZZ_SEEDS=2000 deno test -A src/pipeline/stream_fuzz_test.ts`.
 */
const FROM = Number(Deno.env.get("STREAM_FUZZ_FROM") ?? 0);
const SEEDS = Number(Deno.env.get("STREAM_FUZZ_SEEDS") ?? 50);
const CUTS = ["whole", "bytes", "random"] as const;

const passThrough = (c: Client, p: Protocol) =>
  c === "chat"
    ? p.endsWith("chat")
    : c === "messages"
    ? p === "anthropic-messages"
    : p === "openai-responses";

function expectedText(s: Story): string {
  return s.blocks.flatMap((b) => b.kind === "text" || b.kind === "refusal" ? b.parts : []).join("");
}

function toolsOf(list: { name: string; args: unknown }[]): string[] {
  return list.map((t) => JSON.stringify(t)).sort();
}

const parsed = (args: string) => {
  try {
    return JSON.parse(args || "{}");
  } catch {
    return args;
  }
};

/** Checks one generated stream for one client; returns what went wrong. */
async function check(seed: number, p: Protocol, c: Client): Promise<string[]> {
  const rng = new Rng(seed * 7919 + PROTOCOLS.indexOf(p) * 31 + CLIENTS.indexOf(c));
  const s = story(rng, p);
  const f = framing(rng);
  const bytes = wire(rng, render(rng, frames(rng, s, p), f, p), s);
  const includeUsage = rng.chance(0.5);
  const long = s.blocks.some((b) => b.kind === "text" && b.parts.some((x) => x.length > 10_000));
  const cuts = CUTS.filter((how) => !(long && how === "bytes"));
  const runs = cuts.map((how) => runStage(c, p, chunk(rng, bytes, how), { includeUsage }));
  const bad: string[] = [];
  const pass = passThrough(c, p);
  // What a pass-through forwards as the upstream sent it: Anthropic never interleaves blocks
  // (the generator does, for the translating encoders); a client that asked for usage chunks
  // gets each the upstream sent, and any client one sent before the content (usage early).
  const forwarded = (x: string) =>
    (pass && c === "messages" && s.parallel) ||
    (pass && c === "chat" && x.includes("usage chunks") &&
      (includeUsage || s.usageMode === "early"));
  for (const [i, r] of runs.entries()) {
    if (r.thrown) bad.push(`${cuts[i]}: threw ${(r.thrown as Error)?.stack ?? r.thrown}`);
    for (const x of frameProblems(c, r.text)) if (!forwarded(x)) bad.push(`${cuts[i]}: ${x}`);
    if (!(r.cost >= 0) || !Number.isFinite(r.cost)) bad.push(`${cuts[i]}: cost ${r.cost}`);
    if (r.cost !== runs[0].cost) bad.push(`${cuts[i]}: cost ${r.cost} vs ${runs[0].cost}`);
  }
  // An SDK refuses event types it does not know: a pass-through forwards the upstream's.
  if (pass && ((c === "messages" && s.parallel) || (c === "responses" && f.unknownEvents))) {
    return bad.map((x) => `[${s.ending}] ${x}`);
  }
  const views = await Promise.all(runs.map((r) => clientView(c, r.text)));
  const shown = (i: number) =>
    JSON.stringify({
      ...views[i],
      tools: toolsOf(views[i].tools.map((t) => ({ name: t.name, args: parsed(t.args) }))),
    });
  for (let i = 1; i < views.length; i++) {
    if (shown(i) !== shown(0)) bad.push(`${cuts[i]} shows ${shown(i)}, whole ${shown(0)}`);
  }
  const v = views[0];
  if (s.ending === "complete") {
    if (v.error) bad.push(`SDK: ${v.error}`);
    if (v.text !== expectedText(s)) bad.push(`text ${JSON.stringify(v.text).slice(0, 200)}`);
    const want = toolsOf(
      s.blocks.flatMap((b) =>
        b.kind === "tool" ? [{ name: b.name, args: JSON.parse(b.parts.join("")) }] : []
      ),
    );
    const got = toolsOf(v.tools.map((t) => ({ name: t.name, args: parsed(t.args) })));
    if (JSON.stringify(got) !== JSON.stringify(want)) bad.push(`tools ${got} vs ${want}`);
    const u = runs[0].usage;
    if (s.usageMode !== "none" && (u.input !== s.usage.input || u.output !== s.usage.output)) {
      bad.push(`billed usage ${JSON.stringify(u)} vs reported ${JSON.stringify(s.usage)}`);
    }
  } else if ((s.ending === "cut" || s.ending === "error") && !v.error) {
    bad.push(`a ${s.ending} stream reached the client as a success (${v.finish})`);
  }
  const shape = `[${s.ending}, usage ${s.usageMode}${includeUsage ? ", include_usage" : ""}]`;
  return bad.map((x) => `${shape} ${x}`);
}

for (const p of PROTOCOLS) {
  Deno.test(`stream fuzz: ${p} upstream, every client format, ${SEEDS} seeds`, async () => {
    const failures: string[] = [];
    for (let seed = FROM; seed < FROM + SEEDS; seed++) {
      for (const c of CLIENTS) {
        for (const x of await check(seed, p, c)) failures.push(`seed ${seed} → ${c}: ${x}`);
      }
    }
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failures`);
  });
}

// ---------------------------------------------------------------------------------------------
// Recorded streams, cut every way.

const RECORDED: [URL, Protocol][] = [
  [new URL("../../tests/fixtures/openai-chat/", import.meta.url), "openai-chat"],
  [new URL("../../tests/fixtures/anthropic-messages/", import.meta.url), "anthropic-messages"],
  [new URL("../../tests/fixtures/openai-responses/", import.meta.url), "openai-responses"],
  [new URL("../../../shared/fixtures/upstream/openai/", import.meta.url), "openai-chat"],
  [new URL("../../../shared/fixtures/upstream/anthropic/", import.meta.url), "anthropic-messages"],
];

function recordings(): { name: string; protocol: Protocol; text: string }[] {
  const out: { name: string; protocol: Protocol; text: string }[] = [];
  for (const [dir, protocol] of RECORDED) {
    let names: string[];
    try {
      names = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".sse"));
    } catch {
      continue; // the recordings beside the repository are optional
    }
    for (const name of names.sort()) {
      // A fragment starts mid-stream: no client format can show it as a stream.
      if (name.includes(".fragment.")) continue;
      out.push({
        name,
        protocol: name.startsWith("responses-") ? "openai-responses" : protocol,
        text: Deno.readTextFileSync(new URL(name, dir)),
      });
    }
  }
  return out;
}

Deno.test("stream fuzz: recorded streams give each client the same answer and cost however cut", async () => {
  const failures: string[] = [];
  for (const { name, protocol, text } of recordings()) {
    const bytes = new TextEncoder().encode(text);
    for (const c of CLIENTS) {
      const rng = new Rng(name.length);
      const runs = CUTS.map((how) => runStage(c, protocol, chunk(rng, bytes, how)));
      const views = await Promise.all(runs.map((r) => clientView(c, r.text)));
      for (const [i, r] of runs.entries()) {
        const at = `${name} → ${c} (${CUTS[i]})`;
        if (r.thrown) failures.push(`${at}: threw ${r.thrown}`);
        for (const x of frameProblems(c, r.text)) failures.push(`${at}: ${x}`);
        if (r.cost !== runs[0].cost) failures.push(`${at}: cost ${r.cost} vs ${runs[0].cost}`);
        if (JSON.stringify(views[i]) !== JSON.stringify(views[0])) {
          failures.push(`${at}: shows ${JSON.stringify(views[i])}`);
        }
      }
    }
  }
  assert.deepEqual(failures, []);
});

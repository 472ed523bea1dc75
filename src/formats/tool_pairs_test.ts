import assert from "node:assert/strict";
import type { Message, TextRequest } from "../events/text_request.ts";
import { NO_RESULT, withPairedToolTurns } from "./tool_pairs.ts";
import { fromInternal as chatBody } from "./chat/request.ts";
import { fromInternal as messagesBody } from "./messages/request.ts";

const req = (messages: Message[]): TextRequest => ({
  model: "m",
  system: [],
  stream: false,
  messages,
  tools: [{ name: "f", parameters: { type: "object" } }],
});
const user = (text: string): Message => ({ role: "user", parts: [{ type: "text", text }] });
const said = (text: string): Message => ({ role: "assistant", parts: [{ type: "text", text }] });
const call = (...ids: string[]): Message => ({
  role: "assistant",
  parts: ids.map((id) => ({ type: "tool_call", id, name: "f", arguments: "{}" })),
});
const result = (id: string, text = "out", isError?: boolean): Message => ({
  role: "user",
  parts: [{ type: "tool_result", callId: id, content: [{ type: "text", text }], isError }],
});
const shape = (r: TextRequest) =>
  r.messages.map((m) =>
    `${m.role[0]}:` +
    m.parts.map((p) =>
      p.type === "tool_result" ? `r.${p.callId}` : p.type === "tool_call" ? `c.${p.id}` : "t"
    )
      .join(",")
  );

type Obj = Record<string, unknown>;

/** OpenAI's chat rule: calls are followed at once by one tool message for each. */
function chatPaired(r: TextRequest): void {
  const messages = chatBody(r, "up").messages as Obj[];
  messages.forEach((m, i) => {
    const calls = ((m.tool_calls ?? []) as Obj[]).map((c) => c.id as string);
    const answered = [];
    for (let j = i + 1; j < messages.length && messages[j].role === "tool"; j++) {
      answered.push(messages[j].tool_call_id as string);
    }
    if (calls.length > 0 && i < messages.length - 1) {
      assert.deepEqual([...answered].sort(), [...calls].sort(), `chat message ${i}`);
    }
    if (m.role === "tool") {
      const k = messages.slice(0, i).findLastIndex((x) => x.role !== "tool");
      const owner = ((messages[k].tool_calls ?? []) as Obj[]).map((c) => c.id);
      assert.ok(owner.includes(m.tool_call_id), `tool message ${i} answers the calls before it`);
    }
  });
}

/** Anthropic's rule: every tool_use answered in the next message, every tool_result a use's. */
function messagesPaired(r: TextRequest): void {
  const messages = messagesBody(r, "up", 1024).messages as { role: string; content: Obj[] }[];
  messages.forEach((m, i) => {
    const uses = m.content.filter((b) => b.type === "tool_use").map((b) => b.id);
    const next = messages[i + 1]?.content ?? [];
    const results = next.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
    if (m.role === "assistant" && i < messages.length - 1) {
      assert.deepEqual([...results].sort(), [...uses].sort(), `messages ${i}`);
      // Results open the turn.
      assert.ok(next.slice(0, results.length).every((b) => b.type === "tool_result"));
    }
    if (m.role === "user" && i === 0) assert.ok(!m.content.some((b) => b.type === "tool_result"));
  });
}

const CASES: [string, Message[]][] = [
  ["one call answered", [user("q"), call("a", "b"), result("a"), result("b")]],
  ["calls over consecutive assistant messages, answers apart", [
    user("q"),
    call("a"),
    call("b"),
    result("b"),
    result("a"),
    user("next"),
  ]],
  ["text after the calls", [user("q"), call("a"), said("hm"), result("a")]],
  ["user text before the answer", [user("q"), call("a"), user("x"), result("a")]],
  ["an answer without its call", [user("x"), result("call_x", "boom", true)]],
  ["an earlier turn's call answered again", [
    user("q"),
    call("a"),
    result("a"),
    call("b"),
    result("a", "again"),
    result("b"),
  ]],
  ["a call left unanswered", [user("q"), call("a", "b"), result("b"), user("go on")]],
  ["a turn closed by the next assistant message", [
    user("q"),
    call("a"),
    user("u1"),
    said("t"),
    user("u2"),
  ]],
  ["the model's own last calls", [user("q"), call("a")]],
];

for (const [what, messages] of CASES) {
  Deno.test(`tool pairs: ${what} reaches chat and messages upstreams paired`, () => {
    const out = withPairedToolTurns(req(messages));
    chatPaired(out);
    messagesPaired(out);
  });
}

Deno.test("tool pairs: a paired history is the request itself", () => {
  for (
    const messages of [
      [user("q")],
      [user("q"), call("a", "b"), result("a"), result("b"), user("next")],
      [user("q"), call("a", "b"), {
        role: "user",
        parts: [...result("b").parts, ...result("a").parts],
      }],
      [user("q"), call("a")],
    ] as Message[][]
  ) {
    const r = req(messages);
    // Two results in two messages are one turn: paired, but re-shaped into one message.
    if (messages.length === 5) {
      assert.deepEqual(shape(withPairedToolTurns(r)), ["u:t", "a:c.a,c.b", "u:r.a,r.b,t"]);
      continue;
    }
    assert.equal(withPairedToolTurns(r), r);
  }
});

Deno.test("tool pairs: a result without its call becomes text the model reads", () => {
  const r = req([
    user("x"),
    {
      role: "user",
      parts: [{
        type: "tool_result",
        callId: "call_x",
        isError: true,
        cacheControl: { type: "ephemeral" },
        content: [{ type: "text", text: "boom" }, { type: "image", url: "https://i/x.png" }],
      }],
    },
  ]);
  const out = withPairedToolTurns(r);
  assert.deepEqual(out.messages, [{
    role: "user",
    parts: [
      { type: "text", text: "x" },
      {
        type: "text",
        text: "Result of tool call call_x (error):\nboom",
        cacheControl: { type: "ephemeral" },
      },
      { type: "image", url: "https://i/x.png" },
    ],
  }]);
  // The client's request is not changed.
  assert.equal(r.messages[1].parts[0].type, "tool_result");
  assert.equal(r.messages.length, 2);
});

Deno.test("tool pairs: an unanswered call is answered as not run, in the calls' order", () => {
  const out = withPairedToolTurns(req([user("q"), call("a", "b"), result("b"), user("go on")]));
  assert.deepEqual(shape(out), ["u:t", "a:c.a,c.b", "u:r.a,r.b,t"]);
  const synthetic = out.messages[2].parts[0];
  assert.equal(synthetic.type, "tool_result");
  if (synthetic.type === "tool_result") {
    assert.equal(synthetic.isError, true);
    assert.deepEqual(synthetic.content, [{ type: "text", text: NO_RESULT }]);
  }
});

Deno.test("tool pairs: an earlier turn's call answered again is text", () => {
  const out = withPairedToolTurns(
    req([user("q"), call("a"), result("a"), call("b"), result("a", "again"), result("b")]),
  );
  assert.deepEqual(shape(out), ["u:t", "a:c.a", "u:r.a", "a:c.b", "u:r.b,t"]);
  const text = out.messages[4].parts[1];
  assert.equal(text.type === "text" && text.text, "Result of tool call a:\nagain");
});

Deno.test("tool ids: ids that restart with every answer are made unique, their results renamed with them", () => {
  // Kimi-style ids: the same id in two turns, and twice in one turn.
  const r = req([
    user("go"),
    call("functions.f:0"),
    result("functions.f:0", "first"),
    call("functions.f:0", "functions.f:1"),
    result("functions.f:0", "second"),
    { role: "user", parts: [{ type: "tool_result", callId: "functions.f:1", content: [] }] },
    call("dup", "dup"),
    {
      role: "user",
      parts: [
        { type: "tool_result", callId: "dup", content: [{ type: "text", text: "a" }] },
        { type: "tool_result", callId: "dup", content: [{ type: "text", text: "b" }] },
      ],
    },
    user("done?"),
  ]);
  const out = withPairedToolTurns(r);
  assert.deepEqual(shape(out), [
    "u:t",
    "a:c.functions.f:0",
    "u:r.functions.f:0",
    "a:c.functions.f:0_2,c.functions.f:1",
    "u:r.functions.f:0_2,r.functions.f:1",
    "a:c.dup,c.dup_2",
    "u:r.dup,r.dup_2,t",
  ]);
  const texts = out.messages[6].parts.map((p) =>
    p.type === "tool_result" && p.content[0]?.type === "text" ? p.content[0].text : ""
  );
  assert.deepEqual(texts.slice(0, 2), ["a", "b"], "results answer the calls in order");
  chatPaired(out);
  messagesPaired(out);
  const uses = (messagesBody(out, "up", 1024).messages as { content: Obj[] }[])
    .flatMap((m) => m.content.filter((b) => b.type === "tool_use").map((b) => b.id));
  assert.equal(new Set(uses).size, uses.length, "Anthropic gets every tool_use id once");
  // Nothing repeats: the request as it was.
  const plain = req([user("go"), call("a"), result("a")]);
  assert.equal(withPairedToolTurns(plain), plain);
});

Deno.test("tool ids: OpenAI's chat API gets ids of at most 40 characters, call and result alike", () => {
  const long = "fc_0f0e1d2c3b4a5968778695a4b3c2d1e0f0e1d2c3b4a59687786";
  const body = chatBody(
    req([user("go"), call(long, "short"), result(long), result("short")]),
    "up",
  );
  const messages = body.messages as Obj[];
  const ids = (messages[1].tool_calls as Obj[]).map((c) => c.id as string);
  assert.ok(ids[0].length <= 40 && ids[0] !== long, ids[0]);
  assert.equal(ids[1], "short");
  assert.deepEqual(messages.slice(2).map((m) => m.tool_call_id), ids);
  // Two long ids that share their first 40 characters stay apart.
  const other = long.slice(0, -1) + "X";
  const both = chatBody(req([user("go"), call(long, other), result(long), result(other)]), "up");
  const [a, b] = ((both.messages as Obj[])[1].tool_calls as Obj[]).map((c) => c.id);
  assert.notEqual(a, b);
});

Deno.test("tool ids: a turn's calls in consecutive assistant messages keep their results when ids repeat", () => {
  const out = withPairedToolTurns(req([
    user("go"),
    call("functions.f:0"),
    call("functions.f:0"),
    result("functions.f:0", "one"),
    result("functions.f:0", "two"),
  ]));
  assert.deepEqual(shape(out), [
    "u:t",
    "a:c.functions.f:0,c.functions.f:0_2",
    "u:r.functions.f:0,r.functions.f:0_2",
  ]);
  const texts = out.messages[2].parts.map((p) =>
    p.type === "tool_result" && p.content[0]?.type === "text" ? p.content[0].text : ""
  );
  assert.deepEqual(texts, ["one", "two"]);
});

import assert from "node:assert/strict";
import type { Message, TextRequest } from "../events/text_request.ts";
import { NO_RESULT, withPairedToolTurns } from "./tool_pairs.ts";

const req = (messages: Message[]): TextRequest => ({
  model: "m",
  system: [],
  stream: false,
  messages,
});
const user = (text: string): Message => ({ role: "user", parts: [{ type: "text", text }] });
const call = (...ids: string[]): Message => ({
  role: "assistant",
  parts: ids.map((id) => ({ type: "tool_call", id, name: "f", arguments: "{}" })),
});
const result = (id: string, text = "out", isError?: boolean): Message => ({
  role: "user",
  parts: [{ type: "tool_result", callId: id, content: [{ type: "text", text }], isError }],
});

Deno.test("tool pairs: a paired history is the request itself", () => {
  for (
    const messages of [
      [user("q")],
      [user("q"), call("a", "b"), result("a"), result("b")],
      // Calls split over consecutive assistant messages (a responses history) are one turn.
      [user("q"), call("a"), call("b"), result("b"), result("a"), user("next")],
      // The model's own last calls: nothing answers them yet.
      [user("q"), call("a")],
    ]
  ) {
    const r = req(messages);
    assert.equal(withPairedToolTurns(r), r);
  }
});

Deno.test("tool pairs: a result without its call becomes text the model reads", () => {
  const r = req([
    { role: "user", parts: [{ type: "text", text: "x" }] },
    {
      role: "user",
      parts: [{
        type: "tool_result",
        callId: "call_x",
        isError: true,
        content: [{ type: "text", text: "boom" }, { type: "image", url: "https://i/x.png" }],
      }],
    },
  ]);
  const out = withPairedToolTurns(r);
  assert.notEqual(out, r);
  assert.deepEqual(out.messages[1].parts, [
    { type: "text", text: "Result of tool call call_x (error):\nboom" },
    { type: "image", url: "https://i/x.png" },
  ]);
  // The client's request is not changed.
  assert.equal(r.messages[1].parts[0].type, "tool_result");
});

Deno.test("tool pairs: a result answering an earlier turn's call, or answering twice, is text", () => {
  const out = withPairedToolTurns(
    req([user("q"), call("a"), result("a"), call("b"), result("a", "again"), result("b")]),
  );
  assert.deepEqual(out.messages[4].parts, [{
    type: "text",
    text: "Result of tool call a:\nagain",
  }]);
  assert.equal(out.messages[5].parts[0].type, "tool_result");
});

Deno.test("tool pairs: an unanswered call is answered as not run, before the turn's own results", () => {
  const out = withPairedToolTurns(req([user("q"), call("a", "b"), result("b"), user("go on")]));
  assert.deepEqual(
    out.messages.map((m) =>
      m.parts.map((p) => p.type === "tool_result" ? `r:${p.callId}` : p.type)
    ),
    [
      ["text"],
      ["tool_call", "tool_call"],
      ["r:a", "r:b"],
      ["text"],
    ],
  );
  const synthetic = out.messages[2].parts[0];
  assert.equal(synthetic.type, "tool_result");
  if (synthetic.type === "tool_result") {
    assert.equal(synthetic.isError, true);
    assert.deepEqual(synthetic.content, [{ type: "text", text: NO_RESULT }]);
  }
});

Deno.test("tool pairs: a turn closed by the next assistant message is answered where it began", () => {
  const out = withPairedToolTurns(
    req([user("q"), call("a"), user("u1"), {
      role: "assistant",
      parts: [{ type: "text", text: "t" }],
    }, user("u2")]),
  );
  assert.deepEqual(
    out.messages.map((m) =>
      m.parts.map((p) => p.type === "tool_result" ? `r:${p.callId}` : p.type)
    ),
    [
      ["text"],
      ["tool_call"],
      ["r:a", "text"],
      ["text"],
      ["text"],
    ],
  );
});

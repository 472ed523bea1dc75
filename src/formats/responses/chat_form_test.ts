import assert from "node:assert/strict";
import { GatewayError } from "../../http/gateway_error.ts";
import { adoptChatForm } from "./chat_form.ts";

Deno.test("chat form: Responses-form input is left as the very same array", () => {
  const input = [
    { role: "user", content: [{ type: "input_text", text: "hi" }] },
    { type: "function_call_output", call_id: "c", output: "x" },
  ];
  const body = { input };
  adoptChatForm(body);
  assert.equal(body.input, input);
  const text = { input: "hello" };
  adoptChatForm(text);
  assert.equal(text.input, "hello");
});

Deno.test("chat form: parts, an assistant turn with text and calls, a tool message", () => {
  const body: Record<string, unknown> = {
    input: [
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: "https://e.com/a.png", detail: "low" } },
          {
            type: "file",
            file: { file_data: "data:application/pdf;base64,AA", filename: "a.pdf" },
          },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "text", text: "calling" }],
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "done" }] },
    ],
  };
  adoptChatForm(body);
  assert.deepEqual(body.input, [
    {
      role: "user",
      content: [
        { type: "input_text", text: "look" },
        { type: "input_image", image_url: "https://e.com/a.png", detail: "low" },
        { type: "input_file", file_data: "data:application/pdf;base64,AA", filename: "a.pdf" },
      ],
    },
    { role: "assistant", content: [{ type: "output_text", text: "calling" }] },
    { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: "c1", output: [{ type: "input_text", text: "done" }] },
  ]);
});

Deno.test("chat form: a tool message without its call id, or a call without a name, is a 400", () => {
  const bad = (item: unknown, re: RegExp) =>
    assert.throws(() => adoptChatForm({ input: [{ role: "user", content: "x" }, item] }), (e) => {
      assert.ok(e instanceof GatewayError);
      assert.equal(e.status, 400);
      assert.match(e.message, re);
      return true;
    });
  bad({ role: "tool", content: "x" }, /input\[1\] is a tool message without tool_call_id/);
  bad({ role: "tool", tool_call_id: "c", content: { a: 1 } }, /input\[1\]\.content must be/);
  bad(
    { role: "assistant", content: null, tool_calls: { id: "c" } },
    /input\[1\]\.tool_calls must be an array/,
  );
  bad(
    { role: "assistant", tool_calls: [{ id: "c", function: {} }] },
    /input\[1\]\.tool_calls\[0\] needs id and function\.name/,
  );
  bad(
    { role: "assistant", tool_calls: [{ id: "c", function: { name: "f", arguments: { q: 1 } } }] },
    /input\[1\]\.tool_calls\[0\]\.function\.arguments must be a string/,
  );
});

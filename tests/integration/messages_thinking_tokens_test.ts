/**
 * Claude Code on a model of another vendor: Anthropic reports the thinking part of the output
 * as `usage.output_tokens_details.thinking_tokens` (Claude Code asks for it with its
 * `thinking-token-count` beta and shows it in its usage). An OpenAI model's reasoning tokens,
 * counted in `output_tokens`, were left out of that figure, so the client read 0 thinking
 * tokens for an answer that spent most of its output reasoning. The request is the shape
 * Claude Code 2.1 sends: a stream with adaptive thinking and an effort.
 */
import assert from "node:assert/strict";
import { withGateway } from "../helpers/gateway.ts";
import { parseSse } from "../helpers/sse.ts";

const claudeCodeBody = (model: string, prompt: string, stream: boolean) => ({
  model,
  max_tokens: 32000,
  stream,
  thinking: { type: "adaptive", display: "updates" },
  output_config: { effort: "high" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  system: [{ type: "text", text: "You are a Claude agent." }],
  messages: [
    { role: "user", content: [{ type: "text", text: prompt }] },
    { role: "system", content: "<system-reminder>Today's date is 2026-11-28.</system-reminder>" },
  ],
});

const headers = (key: string) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
  "anthropic-version": "2023-06-01",
  "anthropic-beta": "claude-code-20250219,thinking-token-count-2026-05-13",
});

Deno.test("messages usage: an OpenAI model's reasoning tokens are reported as thinking_tokens, streaming and not", async () => {
  await withGateway(async (g) => {
    for (const model of ["openai/gpt-5.1", "openai/gpt-5.5"]) {
      const res = await fetch(`${g.url}/v1/messages?beta=true`, {
        method: "POST",
        headers: headers(g.key),
        body: JSON.stringify(claudeCodeBody(model, "hi [[mock:tokens=2,reasoning=20]]", true)),
      });
      assert.equal(res.status, 200);
      const events = parseSse(await res.text());
      const delta = events.find((e) => e.event === "message_delta");
      assert.ok(delta, model);
      const usage = JSON.parse(delta.data).usage;
      assert.equal(usage.output_tokens, 22, model);
      assert.deepEqual(usage.output_tokens_details, { thinking_tokens: 20 }, model);

      const whole = await fetch(`${g.url}/v1/messages?beta=true`, {
        method: "POST",
        headers: headers(g.key),
        body: JSON.stringify(claudeCodeBody(model, "hi [[mock:tokens=2,reasoning=7]]", false)),
      });
      assert.equal(whole.status, 200);
      const body = await whole.json();
      assert.deepEqual(body.usage.output_tokens_details, { thinking_tokens: 7 }, model);
    }
  });
});

Deno.test("messages usage: a model that does not reason reports 0 thinking tokens, as its upstream does", async () => {
  await withGateway(async (g) => {
    const res = await fetch(`${g.url}/v1/messages`, {
      method: "POST",
      headers: headers(g.key),
      body: JSON.stringify(claudeCodeBody("openai/gpt-4o-mini", "hi [[mock:tokens=2]]", false)),
    });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.usage.output_tokens, 2);
    assert.deepEqual(body.usage.output_tokens_details, { thinking_tokens: 0 });
  });
});

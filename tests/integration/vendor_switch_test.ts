/**
 * A conversation that moves between upstreams (a `/model` switch, a failover) and carries
 * what one of them made: OpenAI's encrypted reasoning opens only for the organisation it was
 * made for (the mock binds its tokens to the caller's key), so a turn that OpenRouter served
 * and the next at OpenAI's own API (or the other way round) is refused 400
 * `invalid_encrypted_content` there; the gateway asks once more without that reasoning.
 */
import assert from "node:assert/strict";
import { withGateway } from "../helpers/gateway.ts";

type Obj = Record<string, unknown>;

const tools = [{
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } } },
}];

Deno.test("encrypted reasoning made through another provider's account: asked once more without it", async () => {
  await withGateway(async (g) => {
    const post = async (model: string, input: unknown[]) => {
      const r = await fetch(`${g.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model,
          input,
          tools,
          store: false,
          include: ["reasoning.encrypted_content"],
          reasoning: { effort: "medium", summary: "auto" },
        }),
      });
      const json = await r.json();
      assert.equal(r.status, 200, JSON.stringify(json));
      return json as { output: Obj[] };
    };
    const ask = [{
      type: "message",
      role: "user",
      content: [{
        type: "input_text",
        text: "Weather? [[mock:tool=get_weather,steps=1,reasoning=3]]",
      }],
    }];
    // Turn 1 through OpenRouter (its account), turn 2 at OpenAI's own API (the gateway's).
    const first = await post("google/gemini-3.1-pro-preview", ask);
    const reasoning = first.output.find((i) => i.type === "reasoning")!;
    assert.match(String(reasoning.encrypted_content), /^gAAAAA/);
    const call = first.output.find((i) => i.type === "function_call")!;
    const history = [
      ...ask,
      ...first.output,
      { type: "function_call_output", call_id: call.call_id, output: "sunny" },
    ];
    const before = g.mock.stats.calls.length;
    const second = await post("openai/gpt-5.4", history);
    assert.ok(second.output.length > 0);
    const [refused, retried] = g.mock.stats.calls.slice(before).map((c) => c.body as Obj);
    assert.ok((refused.input as Obj[]).some((i) => i.type === "reasoning"));
    const items = retried.input as Obj[];
    assert.deepEqual(items.map((i) => i.type ?? i.role), [
      "message",
      "function_call",
      "function_call_output",
    ]);
    // No item names the reasoning item that went (OpenAI would ask for it by the call's id).
    assert.equal(items.some((i) => "id" in i), false);
    assert.equal(items[1].call_id, call.call_id);
    // The next turn, back where the reasoning was made, replays it as before: one call.
    const again = g.mock.stats.calls.length;
    await post("google/gemini-3.1-pro-preview", history);
    assert.equal(g.mock.stats.calls.length, again + 1);
  });
});

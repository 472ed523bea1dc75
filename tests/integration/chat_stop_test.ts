/**
 * Chat's `stop` on a model that takes none (OpenAI's reasoning models refuse it): the call is
 * not passed through with the field the upstream would refuse, but transcoded to the same
 * API, with the gateway keeping the sequences — streaming or not, as a messages client's
 * `stop_sequences` are kept.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });

for (const model of ["openai/gpt-5.4", "openai/o3-mini"]) {
  Deno.test(`chat stop on ${model} (takes none): kept by the gateway, not sent upstream`, async () => {
    await withGateway(async (g) => {
      const r = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
        stop: [" tok3"],
      });
      assert.equal(r.choices[0].message.content, "tok0 tok1 tok2");
      assert.equal(r.choices[0].finish_reason, "stop");
      assert.equal(r.model, model);
      const call = g.mock.stats.calls[0];
      assert.equal(call.protocol, "chat");
      assert.equal((call.body as { stop?: unknown }).stop, undefined);

      let text = "";
      let finish: string | null = null;
      const stream = await openai(g).chat.completions.create({
        model,
        messages: [{ role: "user", content: "Count again [[mock:tokens=6]]" }],
        stop: " tok3",
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: unknown;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        finish = chunk.choices[0]?.finish_reason ?? finish;
        usage ??= chunk.usage ?? undefined;
      }
      assert.equal(text, "tok0 tok1 tok2");
      assert.equal(finish, "stop");
      assert.ok(usage, "usage arrives on the stream");
      assert.equal((g.mock.stats.calls[1].body as { stop?: unknown }).stop, undefined);
    });
  });
}

Deno.test("chat stop on a model that takes it stays a pass-through", async () => {
  await withGateway(async (g) => {
    const r = await openai(g).chat.completions.create({
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "Count [[mock:tokens=6]]" }],
      stop: [" tok3"],
    });
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.deepEqual((g.mock.stats.calls[0].body as { stop?: unknown }).stop, [" tok3"]);
  });
});

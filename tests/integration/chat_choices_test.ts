/**
 * Chat's `n` end to end, as OpenAI answers it: every choice reaches the SDK, whole and streamed
 * (the stream helper's `finalChatCompletion`, with and without the usage chunk), and every
 * choice's output is billed — from the upstream's usage, and counted by the gateway where the
 * upstream reports none.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { withGateway } from "../helpers/gateway.ts";
import { MODEL, settledGeneration } from "../helpers/chat.ts";

const texts = (c: OpenAI.ChatCompletion) =>
  c.choices.map((ch) => [ch.index, ch.message.content, ch.finish_reason]);

Deno.test("chat n: three choices reach the SDK whole and streamed, and all are billed", () =>
  withGateway(async (g) => {
    const client = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const three = [[0, "tok0 tok1", "stop"], [1, "tok0 tok1", "stop"], [2, "tok0 tok1", "stop"]];
    for (const usage of ["", ",usage=none"]) {
      const content = `hi [[mock:tokens=2${usage}]]`;
      const whole = await client.chat.completions.create({
        model: MODEL,
        n: 3,
        messages: [{ role: "user", content }],
      });
      assert.deepEqual(texts(whole), three, usage);
      assert.equal(whole.usage?.completion_tokens, 6, usage);
      const gen = await settledGeneration(g, g.accountId, whole.id);
      assert.equal(gen.tokens.output, 6, `whole${usage}: every choice's output is billed`);

      for (const include_usage of [false, true]) {
        const stream = client.chat.completions.stream({
          model: MODEL,
          n: 3,
          stream_options: { include_usage },
          messages: [{ role: "user", content }],
        });
        const final = await stream.finalChatCompletion();
        assert.deepEqual(texts(final), three, `${usage} include_usage=${include_usage}`);
        assert.equal(final.usage?.completion_tokens, 6);
        const streamed = await settledGeneration(g, g.accountId, final.id);
        assert.equal(streamed.tokens.output, 6, `stream${usage}: every choice's output is billed`);
      }
    }
  }));

/**
 * Chat completions: every validation rule of the spec's chat table, one test per rule. Each
 * goes through the real `openai` SDK (raw fetch only where the SDK cannot send the body) and
 * asserts the 400, the generic envelope `{error: {code: 400, message, metadata}}`, that the
 * message names the field, and that nothing reached the upstream or the balance.
 */
import assert from "node:assert/strict";
import { heldByGenerations } from "../helpers/gateway.ts";
import type OpenAI from "openai";
import type { TestGateway } from "../helpers/gateway.ts";
import {
  client,
  expect400,
  MODEL,
  NO_JSON_MODEL,
  postChat,
  sdk400,
  withGateway,
} from "../helpers/chat.ts";

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;

const USER = [{ role: "user" as const, content: "Hello [[mock:tokens=3]]" }];

/** Nothing was sent upstream, nothing held, no generation opened. */
async function untouched(g: TestGateway, accountId = g.accountId) {
  assert.equal(g.mock.stats.calls.length, 0, "no upstream call for a rejected request");
  const a = (await g.store.getAccount(accountId))!;
  assert.equal(await heldByGenerations(g.store, a.id), 0n);
  assert.deepEqual(await g.store.listGenerations(accountId, { limit: 10 }), []);
}

/** Sends `extra` on top of a valid request through the SDK and expects a 400 naming `field`. */
function rejects(extra: Record<string, unknown>, field: string | RegExp) {
  return () =>
    withGateway(async (g) => {
      const params = { model: MODEL, messages: USER, ...extra } as unknown as Params;
      await sdk400(client(g).chat.completions.create(params), field);
      await untouched(g);
    });
}

Deno.test(
  "chat validation: temperature below 0 → 400",
  rejects({ temperature: -0.1 }, "temperature"),
);

Deno.test(
  "chat validation: temperature above 2 → 400",
  rejects({ temperature: 2.01 }, "temperature"),
);

Deno.test("chat validation: top_p of 0 → 400", rejects({ top_p: 0 }, "top_p"));

Deno.test("chat validation: top_p above 1 → 400", rejects({ top_p: 1.5 }, "top_p"));

Deno.test(
  "chat validation: frequency_penalty below -2 → 400",
  rejects({ frequency_penalty: -2.5 }, "frequency_penalty"),
);

Deno.test(
  "chat validation: frequency_penalty above 2 → 400",
  rejects({ frequency_penalty: 2.5 }, "frequency_penalty"),
);

Deno.test(
  "chat validation: presence_penalty below -2 → 400",
  rejects({ presence_penalty: -3 }, "presence_penalty"),
);

Deno.test(
  "chat validation: presence_penalty above 2 → 400",
  rejects({ presence_penalty: 3 }, "presence_penalty"),
);

Deno.test("chat validation: max_tokens of 0 → 400", rejects({ max_tokens: 0 }, "max_tokens"));

Deno.test(
  "chat validation: max_tokens equal to the model's context_length → 400",
  // openai/gpt-4o-mini: context_length 128000; the rule is [1, context_length).
  rejects({ max_tokens: 128_000 }, "max_tokens"),
);

Deno.test(
  "chat validation: max_tokens just below context_length passes validation",
  () =>
    withGateway(async (g) => {
      // The hold for 127 999 output tokens is about 7 RUB: well within the 1000 RUB balance.
      const r = await client(g).chat.completions.create({
        model: MODEL,
        messages: USER,
        max_tokens: 127_999,
      });
      assert.equal(r.choices[0].finish_reason, "stop");
    }),
);

Deno.test(
  "chat validation: more than 4 stop sequences → 400",
  rejects({ stop: ["a", "b", "c", "d", "e"] }, "stop"),
);

Deno.test("chat validation: missing messages → 400", () =>
  withGateway(async (g) => {
    const params = { model: MODEL } as unknown as Params;
    await sdk400(client(g).chat.completions.create(params), "messages");
    await untouched(g);
  }));

Deno.test("chat validation: empty messages → 400", rejects({ messages: [] }, "messages"));

Deno.test(
  "chat validation: a message with an unknown role → 400",
  rejects({ messages: [{ role: "wizard", content: "hi" }] }, /messages\[0\]\.role/),
);

Deno.test(
  "chat validation: a content part of an unknown type → 400",
  rejects(
    { messages: [{ role: "user", content: [{ type: "video_url", video_url: { url: "x" } }] }] },
    /messages\[0\]\.content\[0\]/,
  ),
);

Deno.test(
  "chat validation: an image part whose url is neither http nor a data URL → 400",
  rejects(
    {
      messages: [{
        role: "user",
        content: [{ type: "text", text: "what is this" }, {
          type: "image_url",
          image_url: { url: "ftp://example.com/cat.png" },
        }],
      }],
    },
    "messages[0].content[1].image_url.url",
  ),
);

Deno.test(
  "chat validation: response_format json_object on a model that does not list it → 400",
  rejects({ model: NO_JSON_MODEL, response_format: { type: "json_object" } }, "response_format"),
);

Deno.test(
  "chat validation: response_format json_object on a model that lists it is accepted",
  () =>
    withGateway(async (g) => {
      const r = await client(g).chat.completions.create({
        model: MODEL,
        messages: USER,
        response_format: { type: "json_object" },
      });
      assert.equal(r.object, "chat.completion");
      assert.deepEqual(
        (g.mock.stats.calls[0].body as Record<string, unknown>).response_format,
        { type: "json_object" },
      );
    }),
);

Deno.test(
  "chat validation: an unknown model slug → 400 model not found",
  rejects({ model: "nosuchvendor/no-such-model" }, "nosuchvendor/no-such-model"),
);

Deno.test(
  "chat validation: a bare upstream model name (gpt-4o) is not resolved → 400",
  rejects({ model: "gpt-4o" }, "gpt-4o"),
);

Deno.test("chat validation: a body that is not JSON → 400 in the generic envelope", () =>
  withGateway(async (g) => {
    await expect400(await postChat(g, '{"model": "openai/gpt-4o-mini", "messages": ['), /JSON/i);
    await untouched(g);
  }));

Deno.test("chat validation: a JSON body that is not an object → 400", () =>
  withGateway(async (g) => {
    await expect400(await postChat(g, "[1, 2, 3]"), /body|object/i);
    await untouched(g);
  }));

Deno.test("chat validation: stop sequences are never dropped for a model served only as responses", () =>
  withGateway(async (g) => {
    // The model takes no stop sequences (the catalogue lists no `stop`): the gateway keeps
    // them itself, so the call goes to OpenAI's responses API like any other.
    const body = {
      model: "openai/gpt-5.1-codex",
      messages: [{ role: "user" as const, content: "count [[mock:tokens=5]]" }],
      stop: ["tok3"],
    };
    const r = await client(g).chat.completions.create(body);
    const sent = g.mock.stats.calls[0];
    assert.equal(sent.path, "/v1/responses");
    assert.equal((sent.body as { stop?: unknown }).stop, undefined);
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(!r.choices[0].message.content!.includes("tok3"), r.choices[0].message.content!);
  }));

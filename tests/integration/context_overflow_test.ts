/**
 * A prompt past the model's context window, from every upstream protocol to every client
 * format, as the clients that act on it need it (the mock's `[[mock:overflow]]` answers as
 * each vendor refuses one).
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { ALL_VIA_ANTHROPIC, ALL_VIA_CHAT, ALL_VIA_RESPONSES } from "../helpers/providers.ts";

const anthropic = (g: TestGateway) =>
  new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });

/** The message of the error a messages call raises, streamed or not. */
async function messagesError(g: TestGateway, stream: boolean): Promise<string> {
  const params = {
    model: "openai/gpt-4o",
    max_tokens: 64,
    messages: [{ role: "user" as const, content: "a long session [[mock:overflow]]" }],
  };
  try {
    if (stream) {
      for await (const _ of anthropic(g).messages.stream(params)) { /* fails first */ }
    } else await anthropic(g).messages.create(params);
  } catch (e) {
    assert.ok(e instanceof Anthropic.BadRequestError, String(e));
    return e.message;
  }
  throw new Error("the call did not fail");
}

// Claude Code compacts the conversation on "prompt is too long" and reads by how much from
// "N tokens > M maximum"; OpenAI's "maximum context length" words ended its turn.
for (
  const [name, providers, expected] of [
    ["openai-chat", ALL_VIA_CHAT, /prompt is too long: 128\d{3} tokens > 128000 maximum/],
    ["openai-responses", ALL_VIA_RESPONSES, /prompt is too long: Your input exceeds the context/],
    [
      "anthropic-messages",
      ALL_VIA_ANTHROPIC,
      /prompt is too long: 200\d{3} tokens > 200000 maximum/,
    ],
  ] as const
) {
  Deno.test(`context overflow: a messages client hears "prompt is too long" from ${name}`, async () => {
    await withGateway(async (g) => {
      for (const stream of [false, true]) {
        const message = await messagesError(g, stream);
        assert.match(message, expected, `stream ${stream}: ${message}`);
        assert.match(message, /"type":"invalid_request_error"/);
      }
    }, { providers });
  });
}

/** The error body a chat or responses call gets, as LangChain's ChatOpenAI sends it. */
async function genericError(
  g: TestGateway,
  path: "chat/completions" | "responses",
  stream: boolean,
): Promise<{ status: number; body: { error: Record<string, unknown> } }> {
  const prompt = "a long session [[mock:overflow]]";
  const body = path === "chat/completions"
    ? {
      messages: [{ content: prompt, role: "user" }],
      model: "openai/gpt-4o-mini",
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    }
    : {
      input: [{ content: prompt, role: "user", type: "message" }],
      model: "openai/gpt-4o-mini",
      stream,
    };
  const r = await fetch(`${g.url}/v1/${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

// LangChain raises its ContextOverflowError (on which its agents summarise the history) only
// when the body names OpenAI's `context_length_exceeded` or says "prompt is too long"; OpenAI's
// "maximum context length" words alone were a plain BadRequestError.
for (
  const [name, providers] of [
    ["openai-chat", ALL_VIA_CHAT],
    ["openai-responses", ALL_VIA_RESPONSES],
    ["anthropic-messages", ALL_VIA_ANTHROPIC],
  ] as const
) {
  Deno.test(`context overflow: a chat or responses client is told context_length_exceeded from ${name}`, async () => {
    await withGateway(async (g) => {
      for (const path of ["chat/completions", "responses"] as const) {
        for (const stream of [false, true]) {
          const { status, body } = await genericError(g, path, stream);
          const where = `${path} stream ${stream}: ${JSON.stringify(body)}`;
          assert.equal(status, 400, where);
          assert.equal(body.error.code, 400, where);
          assert.deepEqual(
            (body.error.metadata as Record<string, unknown>).error_code,
            "context_length_exceeded",
            where,
          );
        }
      }
    }, { providers });
  });
}

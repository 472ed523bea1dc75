/**
 * Odd but plausible requests over raw HTTP, as clients and proxies send them: paths with a
 * trailing slash or a query string, HEAD and OPTIONS, the Authorization scheme in any case,
 * `null` for optional fields, a body without a Content-Type. Each gets the spec's answer (200,
 * or the status in the endpoint's own envelope), never a 500.
 */
import assert from "node:assert/strict";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const CHAT = {
  model: "openai/gpt-4o-mini",
  max_tokens: 2,
  messages: [{ role: "user", content: "Hi [[mock:tokens=2]]" }],
};
const MESSAGES = { ...CHAT, model: "anthropic/claude-sonnet-4.5" };

function send(
  g: TestGateway,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = {
    authorization: `Bearer ${g.key}`,
    ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
    ...init.headers,
  };
  // An empty Content-Type means none; other headers are sent as given, empty ones too.
  if (headers["content-type"] === "") delete headers["content-type"];
  return fetch(`${g.url}${path}`, {
    method: init.method ?? (init.body !== undefined ? "POST" : "GET"),
    headers,
    body: init.body === undefined
      ? undefined
      : typeof init.body === "string" || init.body instanceof Uint8Array
      ? init.body as BodyInit
      : JSON.stringify(init.body),
  });
}

Deno.test("odd requests: a trailing slash or a query string reaches the same endpoint", () =>
  withGateway(async (g) => {
    for (const path of ["/v1/chat/completions/", "/v1/chat/completions?x=1"]) {
      const r = await send(g, path, { body: CHAT });
      assert.equal(r.status, 200, path);
      assert.equal((await r.json()).object, "chat.completion", path);
    }
    // The Anthropic SDK's beta calls add `?beta=true`.
    for (const path of ["/v1/messages/", "/v1/messages?beta=true"]) {
      const r = await send(g, path, { body: MESSAGES });
      assert.equal(r.status, 200, path);
      assert.equal((await r.json()).type, "message", path);
    }
    const models = await send(g, "/v1/models/");
    assert.equal(models.status, 200);
    assert.ok(((await models.json()).data as unknown[]).length > 300);
    // Not a path of the API: the plain-text 404, a slash or not.
    for (const path of ["/v1/messages/count_tokens/", "/v1/chat/completions/x", "/V1/models"]) {
      const r = await send(g, path, { body: MESSAGES });
      assert.equal(r.status, 404, path);
      assert.equal(await r.text(), "404 Not Found", path);
    }
  }));

Deno.test("odd requests: HEAD reads a listing's headers; HEAD and OPTIONS on a POST path are 405", () =>
  withGateway(async (g) => {
    const head = await send(g, "/v1/models", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    assert.match(head.headers.get("content-type") ?? "", /application\/json/);
    assert.ok(head.headers.get("etag"));

    const post = await send(g, "/v1/chat/completions", { method: "HEAD" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "POST");
    // OPTIONS that is no CORS preflight is a method like any other.
    const options = await send(g, "/v1/messages", { method: "OPTIONS" });
    assert.equal(options.status, 405);
    const body = await options.json();
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "invalid_request_error");
  }));

Deno.test("odd requests: the Bearer scheme in any case, and spaces around the key", () =>
  withGateway(async (g) => {
    for (const auth of [`bearer ${g.key}`, `BEARER ${g.key}`, `Bearer  ${g.key} `]) {
      const r = await send(g, "/v1/chat/completions", {
        body: CHAT,
        headers: { authorization: auth },
      });
      assert.equal(r.status, 200, JSON.stringify(auth.replace(g.key, "<key>")));
      await r.body?.cancel();
    }
    // Claude Code with ANTHROPIC_API_KEY= set empty sends an empty x-api-key beside the token.
    const r = await send(g, "/v1/messages", { body: MESSAGES, headers: { "x-api-key": "" } });
    assert.equal(r.status, 200);
    await r.body?.cancel();
    for (const auth of [`Basic ${g.key}`, g.key, "Bearer"]) {
      const bad = await send(g, "/v1/messages", {
        body: MESSAGES,
        headers: { authorization: auth },
      });
      assert.equal(bad.status, 401);
      assert.equal((await bad.json()).error.type, "authentication_error");
    }
  }));

Deno.test("odd requests: null for an optional field is as good as leaving it out (chat)", () =>
  withGateway(async (g) => {
    const r = await send(g, "/v1/chat/completions", {
      body: {
        ...CHAT,
        temperature: null,
        top_p: null,
        max_tokens: null,
        stop: null,
        tools: null,
        response_format: null,
        stream: null,
        user: null,
      },
    });
    assert.equal(r.status, 200, await r.clone().text());
    assert.equal((await r.json()).object, "chat.completion");
  }));

Deno.test("odd requests: a body without Content-Type is read as JSON; another type is a 400", () =>
  withGateway(async (g) => {
    // Bytes, so that fetch adds no Content-Type of its own (a string would be text/plain).
    const bare = await send(g, "/v1/chat/completions", {
      body: new TextEncoder().encode(JSON.stringify(CHAT)),
      headers: { "content-type": "" },
    });
    assert.equal(bare.status, 200);
    await bare.body?.cancel();
    const charset = await send(g, "/v1/chat/completions", {
      body: CHAT,
      headers: { "content-type": "Application/JSON; charset=UTF-8" },
    });
    assert.equal(charset.status, 200);
    await charset.body?.cancel();
    const form = await send(g, "/v1/images/generations", {
      body: "model=openai/gpt-image-1&prompt=cat",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(form.status, 400);
    const e = (await form.json()).error;
    assert.equal(e.type, "invalid_request");
    assert.equal(e.code, "INVALID_REQUEST");
    assert.match(e.message, /application\/json/);
    assert.equal(g.mock.stats.calls.length, 2, "only the two JSON bodies went upstream");
  }));

/**
 * The foundation end to end over real HTTP: authentication in every envelope, the model
 * listings, aliases, the plain-text 404, 405 per endpoint, health checks, request-body
 * errors, the limiter's body and `x-generation-id`. The last tests start `src/main.ts` as a
 * subprocess (embedded store in a temp dir) and run the admin CLI against it.
 */
import assert from "node:assert/strict";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";
import { roomInWindow } from "../helpers/time.ts";
import { pool } from "../helpers/faults.ts";
import { hashKey } from "../../src/store/keys.ts";
import { acquireDirLock } from "../../src/admin/server_file.ts";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const CHAT_MODEL = "openai/gpt-4o-mini";
const MESSAGES_MODEL = "anthropic/claude-sonnet-4.5";
const EMBEDDING_MODEL = "baai/bge-base-en-v1.5";
const IMAGE_MODEL = "openai/gpt-image-1";

interface CallOpts {
  key?: string | null;
  /** Sends the key as x-api-key instead of Authorization: Bearer. */
  xApiKey?: boolean;
  headers?: Record<string, string>;
  body?: unknown;
}

function call(g: TestGateway, method: string, path: string, o: CallOpts = {}) {
  const headers: Record<string, string> = { ...o.headers };
  const key = o.key === undefined ? g.key : o.key;
  if (key !== null) {
    if (o.xApiKey) headers["x-api-key"] = key;
    else headers["authorization"] = `Bearer ${key}`;
  }
  let body: BodyInit | undefined;
  if (o.body !== undefined) {
    headers["content-type"] ??= "application/json";
    body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
  }
  return fetch(g.url + path, { method, headers, body });
}

const chatBody = (model = CHAT_MODEL, text = "Hi [[mock:tokens=3]]") => ({
  model,
  messages: [{ role: "user", content: text }],
});
const messagesBody = (model = MESSAGES_MODEL, text = "Hi [[mock:tokens=3]]") => ({
  model,
  max_tokens: 64,
  messages: [{ role: "user", content: text }],
});
const responsesBody = (model = CHAT_MODEL, text = "Hi [[mock:tokens=3]]") => ({
  model,
  input: text,
});

/** The generic envelope, exactly: `{error:{code:int,message:string,metadata:object}}`. */
function assertGeneric(body: unknown, status: number) {
  const b = body as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(b), ["error"], JSON.stringify(body));
  assert.equal(b.error.code, status);
  assert.equal(typeof b.error.message, "string");
  assert.ok((b.error.message as string).length > 0);
  assert.equal(typeof b.error.metadata, "object");
  assert.ok(b.error.metadata !== null && !Array.isArray(b.error.metadata));
  assert.deepEqual(Object.keys(b.error).sort(), ["code", "message", "metadata"]);
}

/** The message-format envelope, exactly: `{type:"error",error:{type,message}}`. */
function assertMessages(body: unknown, type: string) {
  const b = body as { type: string; error: Record<string, unknown> };
  assert.deepEqual(Object.keys(b).sort(), ["error", "type"], JSON.stringify(body));
  assert.equal(b.type, "error");
  assert.deepEqual(Object.keys(b.error).sort(), ["message", "type"]);
  assert.equal(b.error.type, type);
  assert.equal(typeof b.error.message, "string");
}

/** The coded envelope: `{error:{message:string,type:string,code:string}}`. */
function assertCoded(body: unknown) {
  const b = body as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(b), ["error"], JSON.stringify(body));
  assert.equal(typeof b.error.message, "string");
  assert.equal(typeof b.error.type, "string");
  assert.equal(typeof b.error.code, "string");
}

async function json(res: Response): Promise<unknown> {
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return await res.json();
}

async function keyIdOf(g: TestGateway, key: string): Promise<string> {
  const found = await g.store.findKeyByHash(await hashKey(key));
  assert.ok(found, "key is in the store");
  return found.key.id;
}

// --- authentication ----------------------------------------------------------------------

Deno.test("foundation: a key authenticates with Authorization: Bearer and with x-api-key", async () => {
  await withGateway(async (g) => {
    for (const xApiKey of [false, true]) {
      const chat = await call(g, "POST", "/v1/chat/completions", { xApiKey, body: chatBody() });
      assert.equal(chat.status, 200, await chat.clone().text());
      assert.equal(((await chat.json()) as { object: string }).object, "chat.completion");

      const msg = await call(g, "POST", "/v1/messages", { xApiKey, body: messagesBody() });
      assert.equal(msg.status, 200, await msg.clone().text());
      assert.equal(((await msg.json()) as { type: string }).type, "message");

      const resp = await call(g, "POST", "/v1/responses", { xApiKey, body: responsesBody() });
      assert.equal(resp.status, 200, await resp.clone().text());
      assert.equal(((await resp.json()) as { object: string }).object, "response");

      const models = await call(g, "GET", "/v1/models", { xApiKey });
      assert.equal(models.status, 200);
      await models.body?.cancel();
    }
    // The same key in both headers is one key.
    const both = await call(g, "POST", "/v1/chat/completions", {
      headers: { "x-api-key": g.key },
      body: chatBody(),
    });
    assert.equal(both.status, 200);
    await both.body?.cancel();
  });
});

Deno.test("foundation: missing, malformed, unknown and conflicting keys → 401", async () => {
  await withGateway(async (g) => {
    const other = await g.account("10");
    const cases: [string, CallOpts][] = [
      ["missing", { key: null }],
      ["malformed Authorization", { key: null, headers: { authorization: `Basic ${g.key}` } }],
      ["no scheme", { key: null, headers: { authorization: g.key } }],
      ["unknown key", { key: "tg_" + "x".repeat(43) }],
      ["wrong shape", { key: "tg_short" }],
      ["two different keys", { headers: { "x-api-key": other.key } }],
    ];
    for (const [name, o] of cases) {
      const chat = await call(g, "POST", "/v1/chat/completions", { ...o, body: chatBody() });
      assert.equal(chat.status, 401, `chat: ${name}`);
      assertGeneric(await json(chat), 401);
      const msg = await call(g, "POST", "/v1/messages", { ...o, body: messagesBody() });
      assert.equal(msg.status, 401, `messages: ${name}`);
      assertMessages(await json(msg), "authentication_error");
    }
    assert.equal(g.mock.stats.calls.length, 0, "nothing reached the upstream");
  });
});

Deno.test("foundation: a revoked key gets 401 in each endpoint's envelope", async (t) => {
  await withGateway(async (g) => {
    // Works before revocation.
    const ok = await call(g, "POST", "/v1/chat/completions", { body: chatBody() });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    assert.equal(await g.store.revokeKey(await keyIdOf(g, g.key)), "revoked");
    const upstreamCalls = g.mock.stats.calls.length;

    await t.step("generic on /v1/chat/completions", async () => {
      const res = await call(g, "POST", "/v1/chat/completions", { body: chatBody() });
      assert.equal(res.status, 401);
      assertGeneric(await json(res), 401);
    });
    await t.step("generic on /v1/responses", async () => {
      const res = await call(g, "POST", "/v1/responses", { body: responsesBody() });
      assert.equal(res.status, 401);
      assertGeneric(await json(res), 401);
    });
    await t.step("message-format on /v1/messages (Bearer and x-api-key)", async () => {
      for (const xApiKey of [false, true]) {
        const res = await call(g, "POST", "/v1/messages", { xApiKey, body: messagesBody() });
        assert.equal(res.status, 401);
        assertMessages(await json(res), "authentication_error");
      }
    });
    await t.step("generic on /v1/models, coded on /v1/embeddings/models", async () => {
      const models = await call(g, "GET", "/v1/models");
      assert.equal(models.status, 401);
      assertGeneric(await json(models), 401);
      const emb = await call(g, "GET", "/v1/embeddings/models");
      assert.equal(emb.status, 401);
      assertCoded(await json(emb));
    });
    assert.equal(g.mock.stats.calls.length, upstreamCalls, "nothing reached the upstream");
  });
});

Deno.test({
  name: "foundation: a revoked key gets 401 in the coded envelope on /v1/embeddings",
  fn: async () => {
    await withGateway(async (g) => {
      await g.store.revokeKey(await keyIdOf(g, g.key));
      const res = await call(g, "POST", "/v1/embeddings", {
        body: { model: EMBEDDING_MODEL, input: "hello" },
      });
      assert.equal(res.status, 401);
      const body = await json(res);
      assertCoded(body);
      assert.deepEqual(Object.keys((body as { error: object }).error).sort(), [
        "code",
        "message",
        "type",
      ]);
    });
  },
});

Deno.test({
  name: "foundation: a revoked key gets 401 in the coded envelope on /v1/images/generations",
  fn: async () => {
    await withGateway(async (g) => {
      await g.store.revokeKey(await keyIdOf(g, g.key));
      const res = await call(g, "POST", "/v1/images/generations", {
        body: { model: IMAGE_MODEL, prompt: "a red square" },
      });
      assert.equal(res.status, 401);
      const body = await json(res);
      assertCoded(body);
      assert.deepEqual(Object.keys((body as { error: object }).error).sort(), [
        "code",
        "message",
        "type",
      ]);
    });
  },
});

// --- listings ----------------------------------------------------------------------------

const PRICE_KEYS = [
  "prompt",
  "completion",
  "request",
  "image",
  "web_search",
  "internal_reasoning",
  "input_cache_read",
  "input_cache_write",
];

/** Every field of the spec's Model table, with its type. */
function assertModel(m: Record<string, unknown>) {
  const where = String(m.id);
  for (const f of ["id", "canonical_slug", "name", "description"]) {
    assert.equal(typeof m[f], "string", `${where}.${f}`);
  }
  assert.ok(Number.isInteger(m.created), `${where}.created`);
  assert.equal(typeof m.context_length, "number", `${where}.context_length`);
  const a = m.architecture as Record<string, unknown>;
  assert.ok(a && typeof a === "object", `${where}.architecture`);
  assert.ok(Array.isArray(a.input_modalities), `${where}.input_modalities`);
  assert.ok(Array.isArray(a.output_modalities), `${where}.output_modalities`);
  assert.ok(
    (a.input_modalities as unknown[]).every((x) => typeof x === "string"),
    `${where}.input_modalities`,
  );
  assert.equal(typeof a.tokenizer, "string", `${where}.tokenizer`);
  assert.ok("instruct_type" in a, `${where}.instruct_type present`);
  assert.ok(a.instruct_type === null || typeof a.instruct_type === "string");
  const p = m.pricing as Record<string, unknown>;
  assert.ok(p && typeof p === "object", `${where}.pricing`);
  for (const k of PRICE_KEYS) {
    assert.equal(typeof p[k], "string", `${where}.pricing.${k}`);
    assert.match(p[k] as string, /^-?\d+(\.\d+)?$/, `${where}.pricing.${k} = ${p[k]}`);
  }
  assert.ok("per_request_limits" in m, `${where}.per_request_limits present`);
  assert.ok(
    m.per_request_limits === null || typeof m.per_request_limits === "object",
    `${where}.per_request_limits`,
  );
  assert.ok(Array.isArray(m.supported_parameters), `${where}.supported_parameters`);
  assert.ok((m.supported_parameters as unknown[]).every((x) => typeof x === "string"));
}

Deno.test("foundation: /v1/models lists >300 generative models with every Model field", async () => {
  await withGateway(async (g) => {
    const res = await call(g, "GET", "/v1/models");
    assert.equal(res.status, 200);
    const body = (await json(res)) as { data: Record<string, unknown>[] };
    assert.deepEqual(Object.keys(body), ["object", "data", "has_more", "first_id", "last_id"]);
    assert.ok(body.data.length > 300, `${body.data.length} models`);
    for (const m of body.data) assertModel(m);
    const ids = body.data.map((m) => m.id as string);
    assert.equal(new Set(ids).size, ids.length, "ids are unique");
    assert.ok(ids.includes(CHAT_MODEL));
    assert.ok(ids.includes(MESSAGES_MODEL));
    assert.ok(ids.includes("~openai/gpt-mini-latest"), "aliases are listed");
    // No embedding models.
    assert.ok(!ids.includes(EMBEDDING_MODEL));
    for (const m of body.data) {
      const out = (m.architecture as { output_modalities: string[] }).output_modalities;
      assert.ok(!out.includes("embeddings"), `${m.id} is an embedding model`);
    }
  });
});

Deno.test("foundation: /v1/models is cacheable: public + s-maxage, strong ETag, 304", async () => {
  await withGateway(async (g) => {
    const res = await call(g, "GET", "/v1/models");
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const cc = res.headers.get("cache-control") ?? "";
    assert.match(cc, /\bpublic\b/);
    assert.match(cc, /\bs-maxage=\d+/);
    const etag = res.headers.get("etag");
    assert.ok(etag, "has an ETag");
    assert.match(etag, /^"[^"]+"$/, "a strong ETag (no W/)");

    const again = await call(g, "GET", "/v1/models", { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get("etag"), etag);
    assert.equal(await again.text(), "");

    const weak = await call(g, "GET", "/v1/models", {
      headers: { "if-none-match": `"other", W/${etag}` },
    });
    assert.equal(weak.status, 304, "If-None-Match compares weakly");
    await weak.body?.cancel();

    const stale = await call(g, "GET", "/v1/models", { headers: { "if-none-match": '"stale"' } });
    assert.equal(stale.status, 200);
    await stale.body?.cancel();

    // The same body gives the same tag.
    const third = await call(g, "GET", "/v1/models");
    assert.equal(third.headers.get("etag"), etag);
    await third.body?.cancel();
  });
});

Deno.test("foundation: the listings require a key (spec: all endpoints require it)", async () => {
  await withGateway(async (g) => {
    const models = await call(g, "GET", "/v1/models", { key: null });
    assert.equal(models.status, 401);
    assertGeneric(await json(models), 401);
    const emb = await call(g, "GET", "/v1/embeddings/models", { key: null });
    assert.equal(emb.status, 401);
    assertCoded(await json(emb));
    // Even a matching If-None-Match does not get past auth.
    const ok = await call(g, "GET", "/v1/models");
    const etag = ok.headers.get("etag")!;
    await ok.body?.cancel();
    const cached = await call(g, "GET", "/v1/models", {
      key: null,
      headers: { "if-none-match": etag },
    });
    assert.equal(cached.status, 401);
    await cached.body?.cancel();
  });
});

Deno.test("foundation: both SDKs list and retrieve models with the fields their types declare", async () => {
  await withGateway(async (g) => {
    const openai = new OpenAI({ apiKey: g.key, baseURL: `${g.url}/v1`, maxRetries: 0 });
    const listed = [];
    for await (const m of openai.models.list()) listed.push(m);
    assert.ok(listed.length > 300, `${listed.length} models`);
    const gpt = listed.find((m) => m.id === CHAT_MODEL);
    assert.equal(gpt?.object, "model");
    assert.equal(gpt?.owned_by, "openai");
    assert.ok(Number.isInteger(gpt?.created));

    const anthropic = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const seen = [];
    for await (const m of anthropic.models.list()) seen.push(m);
    // One page: the SDK stops on has_more false instead of asking again after last_id.
    assert.equal(seen.length, listed.length);
    // Paged as Anthropic pages (limit, after_id): every model once, in the same order.
    const first = await anthropic.models.list({ limit: 50 });
    assert.equal(first.data.length, 50);
    assert.equal(first.has_more, true);
    const paged = [];
    for await (const m of anthropic.models.list({ limit: 100 })) paged.push(m.id);
    assert.deepEqual(paged, seen.map((m) => m.id));
    const back = await anthropic.models.list({ limit: 3, before_id: seen[5].id });
    assert.deepEqual(back.data.map((m) => m.id), seen.slice(2, 5).map((m) => m.id));
    const claude = await anthropic.models.retrieve(MESSAGES_MODEL);
    assert.equal(claude.type, "model");
    assert.equal(claude.id, MESSAGES_MODEL);
    assert.match(claude.display_name, /Claude Sonnet 4\.5/);
    assert.ok(!Number.isNaN(Date.parse(claude.created_at)), claude.created_at);
    // Required in the SDKs' ModelInfo (anthropic-python reads None without it): a listed model
    // is one the gateway serves.
    assert.equal((claude as unknown as { lifecycle: string }).lifecycle, "active");
    assert.ok(seen.every((m) => (m as unknown as { lifecycle: string }).lifecycle === "active"));
    // Its errors in its own envelope: the SDK's error classes read their `type`.
    await assert.rejects(
      anthropic.models.retrieve("anthropic/no-such-model"),
      (e: unknown) =>
        e instanceof Anthropic.NotFoundError &&
        (e.error as { error?: { type?: string } })?.error?.type === "not_found_error",
    );
    const stranger = new Anthropic({
      apiKey: "tg_" + "x".repeat(40),
      baseURL: g.url,
      maxRetries: 0,
    });
    await assert.rejects(
      stranger.models.retrieve(MESSAGES_MODEL),
      (e: unknown) =>
        e instanceof Anthropic.AuthenticationError &&
        (e.error as { error?: { type?: string } })?.error?.type === "authentication_error",
    );
  });
});

Deno.test("foundation: /v1/embeddings/models lists only embedding models", async () => {
  await withGateway(async (g) => {
    const res = await call(g, "GET", "/v1/embeddings/models");
    assert.equal(res.status, 200);
    assert.match(
      res.headers.get("cache-control") ?? "",
      /\bpublic\b.*\bs-maxage=|s-maxage=.*\bpublic\b/,
    );
    assert.match(res.headers.get("etag") ?? "", /^"[^"]+"$/);
    const body = (await json(res)) as { data: Record<string, unknown>[] };
    assert.ok(body.data.length > 0);
    for (const m of body.data) {
      assertModel(m);
      const out = (m.architecture as { output_modalities: string[] }).output_modalities;
      assert.deepEqual(out, ["embeddings"], `${m.id}`);
    }
    const bge = body.data.find((m) => m.id === EMBEDDING_MODEL);
    assert.ok(bge, `${EMBEDDING_MODEL} is listed`);
    assert.equal(bge.context_length, 512);
    const ids = new Set(body.data.map((m) => m.id));
    assert.ok(!ids.has(CHAT_MODEL));
  });
});

Deno.test("foundation: GET /v1/models/{slug} answers one listed model (the OpenAI SDK's models.retrieve)", async () => {
  await withGateway(async (g) => {
    const listed = (await json(await call(g, "GET", "/v1/models"))) as {
      data: Record<string, unknown>[];
    };
    const entry = listed.data.find((m) => m.id === CHAT_MODEL);
    const openai = new OpenAI({ apiKey: g.key, baseURL: `${g.url}/v1`, maxRetries: 0 });
    // The SDK puts the slug in the path as is; an encoded slash names the same model.
    assert.deepEqual(await openai.models.retrieve(CHAT_MODEL), entry);
    const encoded = await call(g, "GET", `/v1/models/${encodeURIComponent(CHAT_MODEL)}`);
    assert.deepEqual(await json(encoded), entry);
    const emb = await json(await call(g, "GET", `/v1/models/${EMBEDDING_MODEL}`));
    assert.equal((emb as { id: string }).id, EMBEDDING_MODEL);

    await assert.rejects(
      openai.models.retrieve("openai/no-such-model"),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    const missing = await call(g, "GET", "/v1/models/openai/no-such-model");
    assert.equal(missing.status, 404);
    assertGeneric(await json(missing), 404);
    // A bare upstream name is pointed at the slug meant.
    const bare = await call(g, "GET", "/v1/models/gpt-4o-mini");
    assert.equal(bare.status, 404);
    assert.match(JSON.stringify(await json(bare)), /did you mean \\"openai\/gpt-4o-mini\\"/);
    // A malformed escape names nothing, here and in the history alike.
    for (const path of ["/v1/models/openai%E0%A4%A", "/v1/generations/gen_%E0%A4%A"]) {
      const bad = await call(g, "GET", path);
      assert.equal(bad.status, 404, path);
      assertGeneric(await json(bad), 404);
    }
    const anonymous = await call(g, "GET", `/v1/models/${CHAT_MODEL}`, { key: null });
    assert.equal(anonymous.status, 401);
    assertGeneric(await json(anonymous), 401);
  });
});

Deno.test("foundation: a NUL in a generation id or cursor names nothing: 404 and 400, not 500", async () => {
  await withGateway(async (g) => {
    // PostgreSQL text cannot hold U+0000: sent on as a parameter, the store refused the
    // lookup and a client's typo became "internal gateway error".
    for (const path of ["/v1/generations/gen_%00", "/v1/generations/%00"]) {
      const res = await call(g, "GET", path);
      assert.equal(res.status, 404, path);
      assertGeneric(await json(res), 404);
    }
    const cursor = await call(g, "GET", "/v1/generations?cursor=gen_%00");
    assert.equal(cursor.status, 400);
    const body = await json(cursor);
    assertGeneric(body, 400);
    assert.match(JSON.stringify(body), /next_cursor/);
  });
});

// --- aliases -----------------------------------------------------------------------------

Deno.test("foundation: an alias reaches the upstream as the family's newest model", async () => {
  await withGateway(async (g) => {
    // Newest of ^openai/gpt-\d+(\.\d+)*-mini$ in the catalogue: openai/gpt-5.4-mini.
    const list = (await (await call(g, "GET", "/v1/models")).json()) as {
      data: { id: string; created: number }[];
    };
    const family = list.data.filter((m) => /^openai\/gpt-\d+(\.\d+)*-mini$/.test(m.id));
    const newest = family.reduce((a, b) => (b.created > a.created ? b : a));
    assert.equal(newest.id, "openai/gpt-5.4-mini");

    const res = await call(g, "POST", "/v1/chat/completions", {
      body: chatBody("~openai/gpt-mini-latest"),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await g.mock.idle();
    const last = g.mock.stats.calls.at(-1)!;
    assert.match(last.path, /\/chat\/completions$/);
    assert.equal((last.body as { model: string }).model, "gpt-5.4-mini");
    const genId = res.headers.get("x-generation-id")!;
    await g.settled();
    const gen = await g.store.getGeneration(g.accountId, genId);
    assert.equal(gen?.model, "openai/gpt-5.4-mini", "billed as the resolved model");
  });
});

Deno.test("foundation: an alias on /v1/messages goes upstream by the provider's name, echoes the alias", async () => {
  await withGateway(async (g) => {
    const res = await call(g, "POST", "/v1/messages", {
      body: messagesBody("~anthropic/claude-sonnet-latest"),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { model: string };
    assert.equal(body.model, "~anthropic/claude-sonnet-latest", "model equals the requested slug");
    await g.mock.idle();
    const last = g.mock.stats.calls.at(-1)!;
    assert.match(last.path, /\/messages$/);
    assert.equal((last.body as { model: string }).model, "claude-sonnet-5");
  });
});

Deno.test("foundation: bare upstream names and unknown slugs are not resolved (400)", async () => {
  await withGateway(async (g) => {
    for (const model of ["gpt-4o-mini", "claude-sonnet-4-5", "nope/nope", "~openai/nope-latest"]) {
      const chat = await call(g, "POST", "/v1/chat/completions", { body: chatBody(model) });
      assert.equal(chat.status, 400, model);
      assertGeneric(await json(chat), 400);
      const msg = await call(g, "POST", "/v1/messages", { body: messagesBody(model) });
      assert.equal(msg.status, 400, model);
      assertMessages(await json(msg), "invalid_request_error");
    }
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

// --- routing edges: 404, 405, health -----------------------------------------------------

async function assertPlain404(res: Response, what: string) {
  assert.equal(res.status, 404, what);
  const type = res.headers.get("content-type") ?? "";
  assert.match(type, /^text\/plain/, `${what}: ${type}`);
  assert.doesNotMatch(type, /json/);
  assert.equal(await res.text(), "404 Not Found", what);
}

Deno.test("foundation: count_tokens and unknown paths → plain-text 404, with or without a key", async () => {
  await withGateway(async (g) => {
    for (const key of [undefined, null]) {
      await assertPlain404(
        await call(g, "POST", "/v1/messages/count_tokens", { key, body: messagesBody() }),
        "count_tokens",
      );
      await assertPlain404(await call(g, "GET", "/nope", { key }), "GET /nope");
      await assertPlain404(
        await call(g, "POST", "/v1/unknown", { key, body: {} }),
        "POST /v1/unknown",
      );
      await assertPlain404(await call(g, "GET", "/v1/chat/completions/x/y", { key }), "deep path");
      await assertPlain404(await call(g, "GET", "/", { key }), "root");
    }
  });
});

Deno.test("foundation: wrong method on a known path → 405 in that endpoint's envelope", async () => {
  await withGateway(async (g) => {
    const chat = await call(g, "GET", "/v1/chat/completions");
    assert.equal(chat.status, 405);
    assert.match(chat.headers.get("allow") ?? "", /POST/);
    assertGeneric(await json(chat), 405);

    const responses = await call(g, "DELETE", "/v1/responses");
    assert.equal(responses.status, 405);
    assertGeneric(await json(responses), 405);

    const msg = await call(g, "GET", "/v1/messages");
    assert.equal(msg.status, 405);
    assert.match(msg.headers.get("allow") ?? "", /POST/);
    assertMessages(await json(msg), "invalid_request_error");

    const models = await call(g, "POST", "/v1/models", { body: {} });
    assert.equal(models.status, 405);
    assert.match(models.headers.get("allow") ?? "", /GET/);
    assertGeneric(await json(models), 405);

    // Without a key too: the method is wrong whoever asks.
    const anon = await call(g, "PUT", "/v1/chat/completions", { key: null, body: {} });
    assert.equal(anon.status, 405);
    assertGeneric(await json(anon), 405);
  });
});

Deno.test("foundation: a WebSocket handshake (Codex's built-in OpenAI provider) → 426, which has Codex post over HTTP at once", async () => {
  await withGateway(async (g) => {
    // As Codex 0.171 opens its Responses WebSocket when its OpenAI base URL is the gateway's:
    // on a 405 it retried the handshake five times (~7 s, an error line each) every session.
    const headers = {
      connection: "Upgrade",
      upgrade: "websocket",
      "sec-websocket-version": "13",
      "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      "openai-beta": "responses_websockets=2026-02-06",
    };
    const ws = await call(g, "GET", "/v1/responses", { headers });
    assert.equal(ws.status, 426);
    assertGeneric(await json(ws), 426);
    // A plain GET is still the wrong method; an unknown path still a 404.
    const plain = await call(g, "GET", "/v1/responses");
    assert.equal(plain.status, 405);
    await plain.body?.cancel();
    await assertPlain404(await call(g, "GET", "/v1/nope", { headers }), "unknown path");
    assert.equal(g.mock.stats.calls.length, 0);
  });
});

Deno.test("foundation: /healthz and /readyz answer 200 without a key", async () => {
  await withGateway(async (g) => {
    for (const path of ["/healthz", "/readyz"]) {
      const res = await call(g, "GET", path, { key: null });
      assert.equal(res.status, 200, path);
      await res.body?.cancel();
    }
  });
});

// --- the text pipeline's edges -----------------------------------------------------------

Deno.test("foundation: every text endpoint answers with x-generation-id", async () => {
  await withGateway(async (g) => {
    const ids = new Set<string>();
    for (
      const [path, body] of [
        ["/v1/chat/completions", chatBody()],
        ["/v1/messages", messagesBody()],
        ["/v1/responses", responsesBody()],
        ["/v1/chat/completions", { ...chatBody(), stream: true }],
      ] as const
    ) {
      const res = await call(g, "POST", path, { body });
      assert.equal(res.status, 200, path);
      const id = res.headers.get("x-generation-id");
      assert.match(id ?? "", /^gen_/, path);
      ids.add(id!);
      await res.text();
    }
    assert.equal(ids.size, 4, "one generation per request");
    await g.settled();
    for (const id of ids) {
      const gen = await g.store.getGeneration(g.accountId, id);
      assert.equal(gen?.status, "completed", id);
    }
  });
});

Deno.test("foundation: request-body errors over HTTP, each in its endpoint's envelope", async () => {
  await withGateway(async (g) => {
    // Oversized, sent chunked (no Content-Length to trust).
    const big = new TextEncoder().encode(
      JSON.stringify({ ...chatBody(), pad: "x".repeat(8192) }),
    );
    const res413 = await fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < big.length; i += 1000) c.enqueue(big.slice(i, i + 1000));
          c.close();
        },
      }),
    });
    assert.equal(res413.status, 400);
    assertGeneric(await json(res413), 400);

    const big413 = await call(g, "POST", "/v1/messages", {
      body: { ...messagesBody(), pad: "x".repeat(8192) },
    });
    assert.equal(big413.status, 400);
    assertMessages(await json(big413), "invalid_request_error");

    const malformed = await call(g, "POST", "/v1/chat/completions", { body: '{"model":' });
    assert.equal(malformed.status, 400);
    assertGeneric(await json(malformed), 400);

    const wrongType = await call(g, "POST", "/v1/messages", {
      body: JSON.stringify(messagesBody()),
      headers: { "content-type": "text/plain" },
    });
    assert.equal(wrongType.status, 400);
    assertMessages(await json(wrongType), "invalid_request_error");

    const notObject = await call(g, "POST", "/v1/responses", { body: "[1,2]" });
    assert.equal(notObject.status, 400);
    assertGeneric(await json(notObject), 400);

    const empty = await call(g, "POST", "/v1/chat/completions", {
      body: "",
      headers: { "content-type": "application/json" },
    });
    assert.equal(empty.status, 400);
    assertGeneric(await json(empty), 400);

    assert.equal(g.mock.stats.calls.length, 0, "nothing reached the upstream");
  }, { config: { BODY_MAX_BYTES: "4096" } });
});

Deno.test("foundation: the limiter answers 429 with its own body and Retry-After on every endpoint", async () => {
  await withGateway(async (g) => {
    await g.store.setKeyLimits(await keyIdOf(g, g.key), { rpm: 1 });
    // All eleven requests in one clock minute: a new window would let the next one pass.
    await roomInWindow(15_000);
    const first = await call(g, "POST", "/v1/chat/completions", { body: chatBody() });
    assert.equal(first.status, 200);
    await first.body?.cancel();
    for (
      const [method, path, body] of [
        ["POST", "/v1/chat/completions", chatBody()],
        ["POST", "/v1/messages", messagesBody()],
        ["POST", "/v1/responses", responsesBody()],
        ["POST", "/v1/embeddings", JSON.stringify({ model: EMBEDDING_MODEL, input: "x" })],
        [
          "POST",
          "/v1/images/generations",
          JSON.stringify({ model: "openai/gpt-image-1", prompt: "x" }),
        ],
        ["GET", "/v1/models", undefined],
        ["GET", "/v1/models/openai/gpt-4o-mini", undefined],
        ["GET", "/v1/embeddings/models", undefined],
        ["GET", "/v1/generations", undefined],
        ["GET", "/v1/generations/gen_x", undefined],
      ] as const
    ) {
      const res = await call(g, method, path, body === undefined ? {} : { body });
      assert.equal(res.status, 429, path);
      const retryAfter = Number(res.headers.get("retry-after"));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, path);
      const b = (await json(res)) as Record<string, unknown>;
      assert.deepEqual(Object.keys(b).sort(), ["code", "error", "retryAfter"], path);
      assert.equal(typeof b.error, "string");
      assert.equal(b.code, "RATE_LIMITED");
      assert.equal(b.retryAfter, retryAfter);
    }
    assert.equal(g.mock.stats.calls.length, 1, "refused requests never reach the upstream");
  });
});

// --- the process: src/main.ts and the admin CLI as subprocesses ----------------------------

const ROOT = new URL("../../", import.meta.url);
const MAIN = new URL("src/main.ts", ROOT).pathname;
const ADMIN = new URL("src/admin/main.ts", ROOT).pathname;
const KEY_LINE = /^tg_[A-Za-z0-9]+$/;
/**
 * How long a child process may take before it is taken for hung. A first start creates the
 * embedded database ("up to a minute", the gateway says); a busy machine took over two.
 */
const CHILD_MS = 300_000;

/** A child's environment: no DATABASE_URL/REDIS_URL/provider keys from the test's own. */
function childEnv(dataDir: string): Record<string, string> {
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "error",
    NO_COLOR: "1",
  };
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "TMPDIR", "DENO_CERT"]) {
    const v = Deno.env.get(name);
    if (v !== undefined) env[name] = v;
  }
  return env;
}

interface Server {
  proc: Deno.ChildProcess;
  lines: string[];
  url: string;
  /** Resolves with every stdout line once stdout closes. */
  done: Promise<void>;
  stderr: Promise<string>;
}

async function startMain(dataDir: string, env: Record<string, string> = {}): Promise<Server> {
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN],
    env: { ...childEnv(dataDir), ...env },
    clearEnv: true,
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  let resolveUrl!: (u: string) => void;
  let rejectUrl!: (e: Error) => void;
  const urlP = new Promise<string>((res, rej) => {
    resolveUrl = res;
    rejectUrl = rej;
  });
  const done = (async () => {
    let buf = "";
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        lines.push(line);
        const m = /^Listening on (http:\/\/\S+:\d+)$/.exec(line);
        if (m) resolveUrl(m[1]);
      }
    }
    if (buf) lines.push(buf);
    rejectUrl(new Error(`stdout closed before "Listening on": ${JSON.stringify(lines)}`));
  })();
  const stderr = new Response(proc.stderr).text();
  const timer = setTimeout(
    () => rejectUrl(new Error(`no 'Listening on' within ${CHILD_MS / 1000} s`)),
    CHILD_MS,
  );
  try {
    const url = await urlP;
    return { proc, lines, url, done, stderr };
  } catch (e) {
    try {
      proc.kill("SIGKILL");
    } catch { /* already gone */ }
    await proc.status;
    await done;
    throw new Error(`${(e as Error).message}\nstderr: ${await stderr}`);
  } finally {
    clearTimeout(timer);
  }
}

async function stopMain(s: Server): Promise<Deno.CommandStatus> {
  s.proc.kill("SIGTERM");
  const timer = setTimeout(() => {
    try {
      s.proc.kill("SIGKILL");
    } catch { /* gone */ }
  }, 60_000);
  try {
    const status = await s.proc.status;
    await s.done;
    await s.stderr;
    return status;
  } finally {
    clearTimeout(timer);
  }
}

async function admin(dataDir: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ADMIN, ...args],
    env: childEnv(dataDir),
    clearEnv: true,
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(CHILD_MS),
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** server.json is written just after "Listening on" is printed; give it a moment. */
async function waitForServerFile(dataDir: string): Promise<{ url: string; pid: number }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return JSON.parse(await Deno.readTextFile(`${dataDir}/server.json`));
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

Deno.test({
  name:
    "foundation: main.ts starts embedded, prints a key once, serves it, and the admin CLI runs alongside",
  fn: async (t) => {
    const dataDir = await Deno.makeTempDir({ prefix: "tollgate-main-" });
    try {
      let key = "";
      let accountId = "";

      await t.step(
        "first start: a key on a line of its own; /v1/models with it → 200",
        async (st) => {
          const s = await startMain(dataDir);
          let stopped = false;
          try {
            const port = Number(new URL(s.url).port);
            assert.ok(port > 0, `a real port, not 0: ${s.url}`);
            const keyLines = s.lines.filter((l) => KEY_LINE.test(l));
            assert.equal(keyLines.length, 1, `one key line in ${JSON.stringify(s.lines)}`);
            key = keyLines[0];
            const acc = s.lines.join("\n").match(/\b(acc_[A-Za-z0-9]+)\b/);
            assert.ok(acc, `an account id in ${JSON.stringify(s.lines)}`);
            accountId = acc[1];
            assert.ok(
              s.lines.some((l) => l.startsWith("First start: creating the embedded database")),
              `the slow first step is announced: ${JSON.stringify(s.lines)}`,
            );

            const models = await fetch(`${s.url}/v1/models`, {
              headers: { authorization: `Bearer ${key}` },
            });
            assert.equal(models.status, 200);
            const body = (await models.json()) as { data: unknown[] };
            assert.ok(body.data.length > 300);
            // The start-up line's count is the one an operator sees in the listing.
            const summary = s.lines.find((l) => l.startsWith("Tollgate: "));
            assert.ok(
              summary?.startsWith(`Tollgate: ${body.data.length} models in GET /v1/models (`),
              `${summary} against ${body.data.length} listed`,
            );

            const anon = await fetch(`${s.url}/v1/models`);
            assert.equal(anon.status, 401);
            await anon.body?.cancel();

            const health = await fetch(`${s.url}/healthz`);
            assert.equal(health.status, 200);
            await health.body?.cancel();

            await st.step(
              "admin CLI works while the server runs (via the operator API)",
              async () => {
                // The server announces itself to the CLI in DATA_DIR/server.json (owner-only).
                const info = await waitForServerFile(dataDir);
                assert.equal(new URL(info.url).port, new URL(s.url).port);
                if (Deno.build.os !== "windows") {
                  const mode = (await Deno.stat(`${dataDir}/server.json`)).mode! & 0o777;
                  assert.equal(mode, 0o600, `server.json mode ${mode.toString(8)}`);
                }
                const r = await admin(dataDir, ["balance", "--account", accountId, "--json"]);
                assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
                const out = r.stdout.trim();
                assert.equal(out.split("\n").length, 1, `one line of JSON: ${out}`);
                const obj = JSON.parse(out);
                assert.equal(typeof obj, "object");
                assert.ok(obj !== null && !Array.isArray(obj));
                assert.equal(obj.balance, "1000", `the demo balance: ${out}`);
                assert.equal(obj.held, "0");

                const bad = await admin(dataDir, ["balance", "--account", "acc_nope", "--json"]);
                assert.equal(bad.code, 1, `unknown account → exit 1; stdout: ${bad.stdout}`);
                // With --json the failure is one JSON object too.
                assert.deepEqual(JSON.parse(bad.stdout), {
                  ok: false,
                  error: "no such account: acc_nope",
                });
              },
            );

            const status = await stopMain(s);
            stopped = true;
            assert.equal(status.code, 0, `SIGTERM → exit 0; stderr: ${await s.stderr}`);
            assert.equal(status.success, true);
            assert.ok(
              s.lines.some((l) => l.startsWith("SIGTERM")),
              `announces the drain: ${JSON.stringify(s.lines)}`,
            );
            await assert.rejects(
              Deno.stat(`${dataDir}/server.json`),
              Deno.errors.NotFound,
              "server.json is removed on a clean stop",
            );
          } finally {
            if (!stopped) await stopMain(s).catch(() => {});
          }
        },
      );

      await t.step(
        "second start: no key, a hint to create one; the old key still works",
        async () => {
          assert.ok(key, "first step ran");
          // Redis down at start: limits are counted in memory, and the line says so.
          const s = await startMain(dataDir, { REDIS_URL: "redis://127.0.0.1:1" });
          let stopped = false;
          try {
            assert.deepEqual(s.lines.filter((l) => KEY_LINE.test(l)), [], "no key is printed");
            assert.ok(!s.lines.some((l) => l.startsWith("First start")), "nothing is created");
            assert.ok(!s.lines.join("\n").includes(key), "the first key is not shown again");
            const hint = s.lines.find((l) => l.includes("deno task admin key create"));
            assert.ok(hint, `a hint in ${JSON.stringify(s.lines)}`);
            assert.ok(hint.includes(accountId), "the hint names the account");
            const summary = s.lines.find((l) => l.startsWith("Tollgate: ")) ?? "";
            assert.ok(!summary.includes("limits in Redis"), summary);
            assert.match(summary, /limits in memory \(Redis at 127\.0\.0\.1:1 unreachable/);
            assert.ok(
              hint.includes(`DATA_DIR=${dataDir} deno task admin`),
              `names the store: ${hint}`,
            );

            const models = await fetch(`${s.url}/v1/models`, {
              headers: { authorization: `Bearer ${key}` },
            });
            assert.equal(models.status, 200);
            await models.body?.cancel();

            const status = await stopMain(s);
            stopped = true;
            assert.equal(status.code, 0);
          } finally {
            if (!stopped) await stopMain(s).catch(() => {});
          }
        },
      );

      await t.step("admin CLI with the server stopped opens the directory itself", async () => {
        const r = await admin(dataDir, ["balance", "--account", accountId, "--json"]);
        assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
        const obj = JSON.parse(r.stdout.trim());
        assert.equal(obj.balance, "1000");
      });
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test("foundation: with HOST set to one address, the admin CLI reaches the server there", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tollgate-host-" });
  try {
    // 127.0.0.2 is loopback on Linux, but nothing listening on 127.0.0.1 answers there.
    const s = await startMain(dataDir, { HOST: "127.0.0.2" });
    try {
      assert.match(s.url, /^http:\/\/127\.0\.0\.2:\d+$/, "announced where it listens");
      const info = await waitForServerFile(dataDir);
      assert.equal(new URL(info.url).hostname, "127.0.0.2");
      const acc = s.lines.join("\n").match(/\b(acc_[A-Za-z0-9]+)\b/)![1];
      const r = await admin(dataDir, ["balance", "--account", acc, "--json"]);
      assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
      assert.equal(JSON.parse(r.stdout).balance, "1000");
    } finally {
      await stopMain(s);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("foundation: whatever stops start-up is one line that names it, exit 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tollgate-startup-" });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const file = async (name: string, text: string) => {
      await Deno.writeTextFile(`${dir}/${name}`, text);
      return `${dir}/${name}`;
    };
    const provider = {
      id: "p",
      protocols: ["openai-chat"],
      baseUrl: "https://x.test/v1",
      keyEnv: "P_KEY",
    };
    const cases: [Record<string, string>, RegExp][] = [
      [{ PROVIDERS_FILE: `${dir}/absent.json` }, /PROVIDERS_FILE=.*absent\.json: no such file/],
      [
        { PROVIDERS_FILE: await file("torn.json", '{"providers": [') },
        /PROVIDERS_FILE=.*not valid JSON/,
      ],
      [
        {
          PROVIDERS_FILE: await file(
            "typo.json",
            JSON.stringify({ providers: [{ ...provider, baseURL: "x" }] }),
          ),
        },
        /providers\[0\].*baseURL/,
      ],
      [
        {
          PROVIDERS_FILE: await file(
            "twice.json",
            JSON.stringify({ providers: [provider, provider] }),
          ),
        },
        /providers\[1\]\.id: duplicate provider id "p"/,
      ],
      [
        { OPENAI_API_KEY: "k", OPENAI_BASE_URL: "api.openai.com/v1" },
        /OPENAI_BASE_URL must be an http/,
      ],
      [{ CATALOGUE_FILE: `${dir}/absent-catalogue.json` }, /CATALOGUE_FILE=/],
      [
        { DATABASE_URL: "postgres://u:hunter2@127.0.0.1:1/db" },
        /DATABASE_URL=postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db: /,
      ],
      [
        { DATABASE_URL: "mysql://u:hunter2@127.0.0.1/db" },
        /DATABASE_URL=.*u:\*\*\*@.*postgres:\/\//,
      ],
      [{ PORT: String((listener.addr as Deno.NetAddr).port) }, /PORT=\d+ is in use/],
      [{ HOST: "no-such-host.invalid" }, /HOST=no-such-host\.invalid PORT=0: cannot listen/],
      [{ DATA_DIR: `${await file("plain", "")}/data` }, /DATA_DIR=/],
      [{ BLOB_URL: "ftp://files.test/x" }, /BLOB_URL: unsupported scheme/],
      [{ PUBLIC_BASE_URL: "ftp://x" }, /PUBLIC_BASE_URL="ftp:\/\/x" is invalid: an http/],
      [{ MARKUP: "5" }, /MARKUP="5" is invalid: a fraction such as 0\.05 \(5 %\)/],
      [{ DEMO_BALANCE_RUB: "100000000000" }, /DEMO_BALANCE_RUB=.*at most 1000000000 roubles/],
    ];
    // Two processes at a time, as the machine has cores: fifteen at once, several creating
    // an embedded database, took longer than a process is given on a busy machine.
    await pool(cases.length, 2, async (i) => {
      const [env, expected] = cases[i];
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", MAIN],
        env: { ...childEnv(`${dir}/data-${i}`), ...env },
        clearEnv: true,
        cwd: ROOT.pathname,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
        signal: AbortSignal.timeout(CHILD_MS),
      }).output();
      const err = new TextDecoder().decode(out.stderr).trim();
      const what = JSON.stringify(env);
      assert.equal(out.code, 1, `${what}: exit 1; stderr: ${err}`);
      assert.equal(err.split("\n").length, 1, `${what}: one line, no stack: ${err}`);
      assert.match(err, /^Tollgate could not start\. /, what);
      assert.match(err, expected, what);
      assert.ok(!err.includes("hunter2"), `${what}: no password`);
      if ("PORT" in env || "HOST" in env) {
        // Told before the first start spends its minute making a database it cannot serve.
        const made = await Deno.stat(`${dir}/data-${i}/pg`).then(() => true, () => false);
        assert.equal(made, false, `${what}: no database made`);
      }
    });
  } finally {
    listener.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("foundation: a second start of a running gateway (its DATA_DIR and its port) is told the data directory is in use, not to change PORT", async () => {
  // The running gateway's two marks: the lock on its DATA_DIR and its listening port. The
  // port alone would send the operator to set another PORT, only to be refused again for the
  // directory; the directory names the process to stop.
  const dataDir = await Deno.makeTempDir({ prefix: "tollgate-twice-" });
  const release = await acquireDirLock(dataDir);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN],
      env: { ...childEnv(dataDir), PORT: String((listener.addr as Deno.NetAddr).port) },
      clearEnv: true,
      cwd: ROOT.pathname,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const err = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 1, err);
    assert.match(err, /^Tollgate could not start\. DATA_DIR=.* is in use by process \d+/);
    assert.equal(await Deno.stat(`${dataDir}/pg`).then(() => true, () => false), false);
  } finally {
    listener.close();
    await release();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("CORS: a browser's preflight is answered, and its requests may read the answers", () =>
  withGateway(async (g) => {
    const pre = await fetch(`${g.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-stainless-os",
      },
    });
    await pre.body?.cancel();
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), "*");
    assert.match(pre.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(pre.headers.get("access-control-allow-headers") ?? "", /x-stainless-os/);

    const res = await fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        origin: "https://app.example.com",
        authorization: `Bearer ${g.key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: "openai/gpt-4o-mini",
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
      }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    assert.match(res.headers.get("access-control-expose-headers") ?? "", /x-generation-id/);
    await res.body?.cancel();
    // A server-side client (no Origin) gets no CORS headers: nothing to add on the hot path.
    const plain = await fetch(`${g.url}/v1/models`, {
      headers: { authorization: `Bearer ${g.key}` },
    });
    await plain.body?.cancel();
    assert.equal(plain.headers.get("access-control-allow-origin"), null);
  }));

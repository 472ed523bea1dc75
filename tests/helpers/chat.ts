/**
 * Helpers for the chat completions integration tests: the SDK client, a gateway per test
 * with the ledger invariants checked at the end (for every account the test created), raw
 * requests and SSE reading for what the SDK cannot express or hides, and polling.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import type { TestGateway } from "./gateway.ts";
import { waitFor } from "./time.ts";
export { withGateway } from "./gateway.ts";
export { waitFor };

/** A cheap image-capable chat model served by the `openai` provider (openai-chat, pass-through). */
export const MODEL = "openai/gpt-4o-mini";
/** A text-only model (no image input), also served by the `openai` provider. */
export const TEXT_ONLY_MODEL = "openai/gpt-3.5-turbo";
/** Served by `anthropic` (anthropic-messages): the chat request is translated. */
export const ANTHROPIC_MODEL = "anthropic/claude-sonnet-4.5";
/** Lists neither `response_format` nor `structured_outputs` in supported_parameters. */
export const NO_JSON_MODEL = "anthropic/claude-sonnet-4";

export function client(g: TestGateway, key = g.key): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0 });
}

/** A raw POST /v1/chat/completions (a string body is sent as is). */
export function postChat(
  g: TestGateway,
  body: unknown,
  opts: { key?: string; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${g.baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${opts.key ?? g.key}`,
      "content-type": "application/json",
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: opts.signal,
  });
}

/** The `data:` payloads of an SSE body, in order ("[DONE]" kept as the string). */
export function sseData(text: string): string[] {
  const out: string[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const lines = block.split(/\r?\n/).filter((l) => l.startsWith("data:"));
    if (lines.length === 0) continue;
    out.push(lines.map((l) => l.slice(5).replace(/^ /, "")).join("\n"));
  }
  return out;
}

type Obj = Record<string, unknown>;

/**
 * Asserts a 400 in the generic envelope `{error: {code: 400, message, metadata}}` whose
 * message names `field`; returns the message.
 */
export async function expect400(res: Response, field: string | RegExp): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = JSON.parse(text) as { error: Obj };
  assert.equal(typeof body.error, "object", text);
  assert.equal(body.error.code, 400, text);
  assert.equal(typeof body.error.message, "string", text);
  assert.ok(
    body.error.metadata !== null && typeof body.error.metadata === "object",
    `metadata must be an object: ${text}`,
  );
  const message = body.error.message as string;
  if (typeof field === "string") {
    assert.ok(message.includes(field), `message ${JSON.stringify(message)} must name ${field}`);
  } else assert.match(message, field);
  return message;
}

/** The SDK's error for a request that must fail with an HTTP status. */
export async function sdkError(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `expected an APIError, got ${e}`);
    return e;
  }
  throw new assert.AssertionError({ message: "the request was expected to fail" });
}

/**
 * Through the SDK: asserts a 400 whose body is the generic envelope
 * `{error: {code: 400, message, metadata}}` and whose message names `field`.
 */
export async function sdk400(p: Promise<unknown>, field: string | RegExp): Promise<string> {
  const e = await sdkError(p);
  const err = e.error as Obj | undefined;
  assert.equal(e.status, 400, e.message);
  assert.ok(err && typeof err === "object", `no error object: ${e.message}`);
  assert.equal(err.code, 400);
  assert.equal(typeof err.message, "string");
  assert.ok(
    err.metadata !== null && typeof err.metadata === "object",
    "metadata must be an object",
  );
  const message = err.message as string;
  if (typeof field === "string") {
    assert.ok(message.includes(field), `message ${JSON.stringify(message)} must name ${field}`);
  } else assert.match(message, field);
  return message;
}

/** Asserts the generic envelope with `status`; returns the error object. */
export async function expectGeneric(res: Response, status: number): Promise<Obj> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  const body = JSON.parse(text) as { error: Obj };
  assert.equal(body.error.code, status, text);
  assert.equal(typeof body.error.message, "string", text);
  assert.ok(body.error.metadata !== null && typeof body.error.metadata === "object", text);
  return body.error;
}

/** Waits until generation `id` is no longer running; returns it. */
export function settledGeneration(g: TestGateway, accountId: string, id: string) {
  return waitFor(`generation ${id} to settle`, async () => {
    const gen = await g.store.getGeneration(accountId, id);
    return gen && gen.status !== "running" ? gen : undefined;
  });
}

/** Balance of an account, nano-roubles. */
export async function balance(g: TestGateway, accountId = g.accountId): Promise<bigint> {
  return (await g.store.getAccount(accountId))!.balance;
}

/**
 * A providers-file entry speaking openai-chat to the mock (through OPENAI_BASE_URL) and
 * serving `openai/*`; `over` replaces any field (e.g. a dead `baseUrl`, `headers` that steer
 * the mock, `priority`, `timeouts`).
 */
export function mockProvider(id: string, over: Obj = {}): Obj {
  return {
    id,
    protocols: ["openai-chat"],
    baseUrl: "https://api.openai.com/v1",
    baseUrlEnv: "OPENAI_BASE_URL",
    keyEnv: "OPENAI_API_KEY",
    priority: 10,
    serves: ["openai/*"],
    upstreamName: "{model}",
    ...over,
  };
}

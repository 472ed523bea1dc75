/**
 * Privacy under faults (issue 7): planted secrets — an upstream key, the client's key and its
 * hash, a marker in the prompt — never appear in the logs (captured at debug level), in an
 * error body or in-stream error sent to the client, or in the generation history's `error`
 * field. And one account never sees another's generations: 404, not 403.
 *
 * The mock can echo exactly one upstream key: for the key `bad-key` it answers 401 with
 * OpenAI's "Incorrect API key provided: bad-key" — so that is the key planted on the
 * provider whose error must not leak. The other planted upstream key (sk-planted-…) is
 * accepted by the mock and must simply never be logged or shown.
 */
import assert from "node:assert/strict";
import { rubToNano } from "../../src/billing/money.ts";
import { createLogger } from "../../src/lib/log.ts";
import { sha256Hex } from "../../src/pipeline/auth.ts";
import {
  allGenerations,
  assertSettledClean,
  post,
  readSse,
  withFaultGateway,
} from "../helpers/faults.ts";

type Obj = Record<string, unknown>;

const PLANTED_KEY = "sk-planted-SECRET1234567890abcdefXYZ";
const PLANTED_ANTHROPIC_KEY = "sk-ant-planted-SECRET0987654321zyx";
const ECHOED_KEY = "bad-key";
const PROMPT_MARKER = "PROMPT-MARKER-7f3a9c1e";

const providers = {
  providers: [
    {
      id: "openai",
      protocols: ["openai-chat", "openai-responses"],
      baseUrl: "https://api.openai.com/v1",
      baseUrlEnv: "OPENAI_BASE_URL",
      keyEnv: "OPENAI_API_KEY",
      priority: 10,
      serves: ["openai/gpt-4o-mini"],
      upstreamName: "{model}",
    },
    {
      id: "leaky",
      protocols: ["openai-chat"],
      baseUrl: "https://api.openai.com/v1",
      baseUrlEnv: "OPENAI_BASE_URL",
      keyEnv: "LEAKY_API_KEY",
      priority: 10,
      serves: ["openai/gpt-3.5-turbo"],
      upstreamName: "{model}",
    },
    {
      id: "anthropic",
      protocols: ["anthropic-messages"],
      baseUrl: "https://api.anthropic.com",
      baseUrlEnv: "ANTHROPIC_BASE_URL",
      keyEnv: "ANTHROPIC_API_KEY",
      priority: 10,
      serves: ["anthropic/*"],
      upstreamName: "{model}",
      nameReplace: [[".", "-"]],
    },
  ],
};

Deno.test("faults: planted secrets never reach logs, error bodies or the generation history", async () => {
  const lines: string[] = [];
  let storeBlips = false;
  await withFaultGateway({
    providers,
    env: {
      OPENAI_API_KEY: PLANTED_KEY,
      LEAKY_API_KEY: ECHOED_KEY,
      ANTHROPIC_API_KEY: PLANTED_ANTHROPIC_KEY,
    },
    withoutKeys: ["OPENROUTER_API_KEY"],
    logger: createLogger("debug", (l) => lines.push(l)),
    // One store blip on a reserve and one on a settlement, so the logs have something to say.
    wrapStore: (store) => {
      let reserveFails = 0;
      let settleFails = 0;
      return new Proxy(store, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== "function") return v;
          if (prop === "reserve") {
            return (...args: unknown[]) =>
              storeBlips && reserveFails++ === 0
                ? Promise.reject(new Error("connection reset by peer"))
                : v.apply(target, args);
          }
          if (prop === "settle") {
            return (...args: unknown[]) =>
              storeBlips && settleFails++ === 0
                ? Promise.reject(new Error("connection reset by peer"))
                : v.apply(target, args);
          }
          return v.bind(target);
        },
      });
    },
    config: { RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" },
  }, async (g) => {
    const a = await g.account(rubToNano("1000"));
    const secrets = [
      PLANTED_KEY,
      "SECRET1234567890",
      PLANTED_ANTHROPIC_KEY,
      "SECRET0987654321",
      ECHOED_KEY,
      a.key,
      a.key.slice(-20),
      await sha256Hex(a.key),
      PROMPT_MARKER,
    ];
    const shown: string[] = [];
    const chat = `${g.baseURL}/chat/completions`;
    const say = (extra: string) => `Remember ${PROMPT_MARKER} please ${extra}`;

    // A store blip: the reserve fails (503), then a settlement fails once and is retried.
    storeBlips = true;
    const blip = await post(chat, {
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: say("[[mock:tokens=3]]") }],
    }, { key: a.key });
    assert.equal(blip.status, 503);
    shown.push(await blip.text());

    // A normal call, so the planted keys really are in use.
    const ok = await post(chat, {
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: say("[[mock:tokens=3]]") }],
    }, { key: a.key });
    assert.equal(ok.status, 200, await ok.clone().text());
    await ok.body?.cancel();

    // The upstream refuses our key and echoes it in its error.
    const leaky = await post(chat, {
      model: "openai/gpt-3.5-turbo",
      messages: [{ role: "user", content: say("") }],
    }, { key: a.key });
    const leakyText = await leaky.text();
    assert.ok(leaky.status >= 500 && leaky.status < 600, `${leaky.status} ${leakyText}`);
    shown.push(leakyText);

    // An upstream 500 and an in-stream error event, with the prompt marker in the request.
    const e500 = await post(chat, {
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: say("[[mock:error=500]]") }],
    }, { key: a.key });
    shown.push(await e500.text());
    assert.ok(e500.status >= 500, "the upstream failure is reported");
    const failing = await post(chat, {
      model: "openai/gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: say("[[mock:tokens=6,fail=2]]") }],
    }, { key: a.key });
    assert.equal(failing.status, 200);
    const got = await readSse(failing);
    const errorChunk = got.data.find((d) => d.includes('"error"'));
    assert.ok(errorChunk, "the stream ends with an error chunk");
    shown.push(errorChunk);

    // Messages and responses: an upstream error, and a validation error quoting the body.
    const m = await post(`${g.baseURL}/messages`, {
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 16,
      messages: [{ role: "user", content: say("[[mock:error=500]]") }],
    }, { key: a.key });
    shown.push(await m.text());
    const bad = await post(`${g.baseURL}/messages`, {
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 16,
      messages: [{ role: PROMPT_MARKER, content: say("") }],
    }, { key: a.key });
    assert.equal(bad.status, 400);
    shown.push(await bad.text());
    const r = await post(`${g.baseURL}/responses`, {
      model: "openai/gpt-4o-mini",
      input: say("[[mock:tokens=4,cut=2]]"),
      stream: true,
    }, { key: a.key });
    shown.push(...(await readSse(r)).data.filter((d) => d.includes("error")));

    // Keys that do not work: an unknown one of the right shape, and a revoked-looking one.
    const unknown = `tg_${"Q".repeat(20)}${a.key.slice(-23)}`;
    secrets.push(unknown);
    const u = await post(chat, { model: "openai/gpt-4o-mini", messages: [] }, { key: unknown });
    assert.equal(u.status, 401);
    shown.push(await u.text());
    const twoKeys = await post(chat, {}, { key: a.key, headers: { "x-api-key": unknown } });
    assert.equal(twoKeys.status, 401);
    shown.push(await twoKeys.text());

    await assertSettledClean(g);
    assert.ok(lines.some((l) => l.includes("reserve failed")), "the reserve blip was logged");
    assert.ok(lines.some((l) => l.includes("settlement failed")), "the settle blip was logged");
    const gens = await allGenerations(g.store, a.accountId);
    assert.ok(gens.some((x) => x.error !== null), "some generations failed with an error");
    const history = await fetch(`${g.baseURL}/generations?limit=100`, {
      headers: { authorization: `Bearer ${a.key}` },
    });
    assert.equal(history.status, 200);
    const historyText = await history.text();

    const places: [string, string][] = [
      ...lines.map((l, i) => [`log line ${i}`, l] as [string, string]),
      ...shown.map((s, i) => [`error body ${i}`, s] as [string, string]),
      ...gens.map((x) => [`generation ${x.id} error`, x.error ?? ""] as [string, string]),
      ["GET /v1/generations", historyText],
    ];
    for (const [where, text] of places) {
      for (const secret of secrets) {
        assert.ok(!text.includes(secret), `${where} contains a planted secret: ${text}`);
      }
    }
    // The mock did receive the planted keys: the check above is not vacuous.
    const sent = g.mock.stats.calls.map((c) => JSON.stringify(c.headers)).join("\n");
    assert.ok(sent.includes(PLANTED_KEY) && sent.includes(ECHOED_KEY));
  });
});

Deno.test("faults: one account never sees another's generations (404, not 403)", async () => {
  await withFaultGateway(
    { config: { RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" } },
    async (g) => {
      const a = await g.account(rubToNano("1000"));
      const b = await g.account(rubToNano("1000"));
      const res = await post(`${g.baseURL}/chat/completions`, {
        model: "openai/gpt-4o-mini",
        messages: [{ role: "user", content: "mine [[mock:tokens=2]]" }],
      }, { key: a.key });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const id = res.headers.get("x-generation-id")!;
      await g.settled();
      const get = (key: string, path: string) =>
        fetch(`${g.baseURL}${path}`, { headers: { authorization: `Bearer ${key}` } });

      const mine = await get(a.key, `/generations/${id}`);
      assert.equal(mine.status, 200);
      assert.equal((await mine.json() as Obj).id, id);

      const theirs = await get(b.key, `/generations/${id}`);
      const text = await theirs.text();
      assert.equal(theirs.status, 404, text);
      const err = (JSON.parse(text) as { error: Obj }).error;
      assert.equal(err.code, 404);
      const unknown = await get(b.key, `/generations/gen_doesNotExist000000000`);
      const unknownErr = (await unknown.json() as { error: Obj }).error;
      assert.equal(unknown.status, 404);
      assert.equal(
        String(err.message).replace(id, "ID"),
        String(unknownErr.message).replace("gen_doesNotExist000000000", "ID"),
        "another account's generation looks exactly like one that does not exist",
      );

      const list = await get(b.key, `/generations?limit=100`);
      assert.equal(list.status, 200);
      const data = (await list.json() as { data: Obj[] }).data;
      assert.deepEqual(data.map((x) => x.id), [], "b's history is empty");
      // No client route exposes keys at all: the key list lives behind the operator API.
      const keys = await get(b.key, `/keys`);
      assert.equal(keys.status, 404);
      await keys.body?.cancel();
      await assertSettledClean(g);
    },
  );
});

/** Routing: candidates by priority and protocol; circuit breakers push failing providers back. */
import assert from "node:assert/strict";
import { Breakers, candidatesFor } from "./routing.ts";
import { parseProviders, type Protocol } from "./provider.ts";

const CHAT: Protocol[] = ["openai-chat", "anthropic-messages", "openai-responses"];

function providers() {
  const file = {
    providers: [
      {
        id: "aggregator",
        protocols: ["openai-chat", "openai-responses"],
        baseUrl: "https://agg.test/v1",
        keyEnv: "K",
        priority: 50,
        serves: ["*"],
        upstreamName: "{slug}",
      },
      {
        id: "openai",
        protocols: ["openai-chat", "openai-responses"],
        baseUrl: "https://openai.test/v1",
        keyEnv: "K",
        priority: 10,
        serves: ["openai/*"],
      },
      {
        id: "anthropic",
        protocols: ["anthropic-messages"],
        baseUrl: "https://anthropic.test",
        keyEnv: "K",
        priority: 10,
        serves: ["anthropic/*"],
        nameReplace: [[".", "-"]],
      },
      {
        id: "backup",
        protocols: ["openai-chat"],
        baseUrl: "https://backup.test/v1",
        keyEnv: "K",
        priority: 20,
        serves: ["openai/*"],
      },
    ],
  };
  return parseProviders(file, () => "key").enabled;
}

const ids = (cs: { provider: { id: string } }[]) => cs.map((c) => c.provider.id);

Deno.test("routing: candidates in priority order, with their upstream names", () => {
  const cs = candidatesFor(providers(), "openai/gpt-4o-mini", CHAT);
  assert.deepEqual(ids(cs), ["openai", "backup", "aggregator"]);
  assert.deepEqual(cs.map((c) => c.upstreamModel), [
    "gpt-4o-mini",
    "gpt-4o-mini",
    "openai/gpt-4o-mini",
  ]);
  assert.deepEqual(cs.map((c) => c.protocol), ["openai-chat", "openai-chat", "openai-chat"]);
});

Deno.test("routing: the protocol is the first allowed one the provider speaks", () => {
  const cs = candidatesFor(providers(), "anthropic/claude-sonnet-4.5", [
    "anthropic-messages",
    "openai-chat",
  ]);
  assert.deepEqual(ids(cs), ["anthropic", "aggregator"]);
  assert.equal(cs[0].protocol, "anthropic-messages");
  assert.equal(cs[0].upstreamModel, "claude-sonnet-4-5");
  assert.equal(cs[1].protocol, "openai-chat");
  assert.equal(cs[1].upstreamModel, "anthropic/claude-sonnet-4.5");
});

Deno.test("routing: only providers speaking an allowed protocol are candidates", () => {
  const cs = candidatesFor(providers(), "openai/gpt-4o-mini", ["openai-responses"]);
  assert.deepEqual(ids(cs), ["openai", "aggregator"]);
  assert.ok(cs.every((c) => c.protocol === "openai-responses"));
  assert.deepEqual(candidatesFor(providers(), "openai/gpt-4o-mini", ["openai-images"]), []);
});

Deno.test("routing: no provider serves the slug → no candidates", () => {
  const onlyFirstParty = providers().filter((p) => p.id !== "aggregator");
  assert.deepEqual(candidatesFor(onlyFirstParty, "mistralai/mistral-7b", CHAT), []);
});

Deno.test("routing: a breaker opens after failuresMax consecutive failures, for coolDownMs", () => {
  const b = new Breakers(3, 1000);
  const t = 1_000_000;
  b.failure("p", t);
  b.failure("p", t);
  assert.equal(b.isOpen("p", t), false);
  b.failure("p", t);
  assert.equal(b.isOpen("p", t), true);
  assert.equal(b.isOpen("p", t + 999), true);
  assert.equal(b.isOpen("p", t + 1000), false, "cool-down over: half-open, tried again");
  assert.equal(b.isOpen("other", t), false);
});

Deno.test("routing: a success resets the failure count", () => {
  const b = new Breakers(3, 1000);
  const t = 1_000_000;
  b.failure("p", t);
  b.failure("p", t);
  b.success("p");
  b.failure("p", t);
  b.failure("p", t);
  assert.equal(b.isOpen("p", t), false);
  b.failure("p", t);
  assert.equal(b.isOpen("p", t), true);
  b.success("p");
  assert.equal(b.isOpen("p", t), false);
});

Deno.test("routing: providers with a closed breaker go first, open ones last", () => {
  const b = new Breakers(2, 60_000);
  b.failure("openai");
  b.failure("openai");
  assert.equal(b.isOpen("openai"), true);
  const cs = candidatesFor(providers(), "openai/gpt-4o-mini", CHAT, b);
  assert.deepEqual(ids(cs), ["backup", "aggregator", "openai"]);
});

Deno.test("routing: with every breaker open the priority order stands", () => {
  const b = new Breakers(1, 60_000);
  for (const id of ["openai", "backup", "aggregator"]) b.failure(id);
  const cs = candidatesFor(providers(), "openai/gpt-4o-mini", CHAT, b);
  assert.deepEqual(ids(cs), ["openai", "backup", "aggregator"]);
});

Deno.test("routing: a lone candidate is kept even with its breaker open", () => {
  const b = new Breakers(1, 60_000);
  b.failure("anthropic");
  const cs = candidatesFor(providers(), "anthropic/claude-sonnet-4.5", ["anthropic-messages"], b);
  assert.deepEqual(ids(cs), ["anthropic"]);
});

Deno.test("routing: the default breaker opens after 5 failures", () => {
  const b = new Breakers();
  for (let i = 0; i < 4; i++) b.failure("p");
  assert.equal(b.isOpen("p"), false);
  b.failure("p");
  assert.equal(b.isOpen("p"), true);
});

Deno.test("routing: responses-only slugs are offered only over openai-responses", async () => {
  const { parseProviders } = await import("./provider.ts");
  const { enabled } = parseProviders({
    providers: [{
      id: "openai",
      protocols: ["openai-chat", "openai-responses"],
      baseUrl: "https://api.openai.com/v1",
      keyEnv: "K",
      serves: ["openai/*"],
      responsesOnly: ["openai/*codex*", "openai/*-pro"],
    }],
  }, () => "key");
  const chatFirst = ["openai-chat", "anthropic-messages", "openai-responses"] as const;
  assert.equal(
    candidatesFor(enabled, "openai/gpt-5.1-codex", chatFirst)[0].protocol,
    "openai-responses",
  );
  assert.equal(candidatesFor(enabled, "openai/o3-pro", chatFirst)[0].protocol, "openai-responses");
  assert.equal(candidatesFor(enabled, "openai/gpt-4o-mini", chatFirst)[0].protocol, "openai-chat");
  assert.deepEqual(candidatesFor(enabled, "openai/gpt-5.1-codex", ["openai-chat"]), []);
});

Deno.test("routing: chat-only slugs are never offered over openai-responses", async () => {
  // OpenAI serves its audio models on /chat/completions alone (its responses API answers them
  // 400): a responses client's call is transcoded to chat, not passed through to be refused.
  const { parseProviders } = await import("./provider.ts");
  const { enabled } = parseProviders({
    providers: [{
      id: "openai",
      protocols: ["openai-chat", "openai-responses"],
      baseUrl: "https://api.openai.com/v1",
      keyEnv: "K",
      serves: ["openai/*"],
      responsesOnly: ["openai/*-pro"],
      chatOnly: ["openai/gpt-audio*"],
    }],
  }, () => "key");
  const responsesFirst = ["openai-responses", "anthropic-messages", "openai-chat"] as const;
  assert.equal(
    candidatesFor(enabled, "openai/gpt-audio-mini", responsesFirst)[0].protocol,
    "openai-chat",
  );
  assert.deepEqual(candidatesFor(enabled, "openai/gpt-audio", ["openai-responses"]), []);
  assert.equal(
    candidatesFor(enabled, "openai/gpt-4o-mini", responsesFirst)[0].protocol,
    "openai-responses",
  );
  assert.equal(
    candidatesFor(enabled, "openai/o3-pro", responsesFirst)[0].protocol,
    "openai-responses",
  );
});

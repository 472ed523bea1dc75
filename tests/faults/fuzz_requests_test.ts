/**
 * Structure-aware fuzzing of what clients send: the recorded requests of the official SDKs,
 * Claude Code and Codex (and bodies of the project's own with tools, images and files), each
 * on every upstream protocol its endpoint can reach, broken one to three ways at a time
 * (fields deleted, types changed, odd numbers, unknown types and roles, duplicated tools,
 * orphaned tool results, odd data URLs and model slugs, stream flags as strings, deep nesting,
 * unicode edge cases), some steered to answer with tool calls, reasoning or an upstream
 * failure. Seeded: the same cases every run.
 *
 * For every request (tests/helpers/fuzz.ts): no 5xx unless the mock was told to fail; an
 * error in the endpoint's own envelope; an answer within the timeout, a stream ending in its
 * terminal event; nothing held once it is done; a refusal debits nothing; a 200 debits its
 * `usage.cost`; and what reached the mock is a body its API defines. At the end the ledger
 * invariants hold.
 */
import assert from "node:assert/strict";
import { rubToNano } from "../../src/billing/money.ts";
import { createLogger } from "../../src/lib/log.ts";
import { assertSettledClean, rng, startFaultGateway } from "../helpers/faults.ts";
import {
  type Endpoint,
  loadSeeds,
  mutate,
  recordedClients,
  runCase,
  steer,
} from "../helpers/fuzz.ts";

const SEED = 20261127;
const CASES = 800;

/** Inputs the fuzzing found wrong once, kept as fixed cases. */
const FOUND: { endpoint: Endpoint; body: Record<string, unknown> }[] = [
  // An item of an unknown type holding a null: the routing check read `.type` of it (500).
  {
    endpoint: "responses",
    body: { model: "openai/gpt-4.1-mini", input: [{ type: "x", role: "user", content: [null] }] },
  },
  {
    endpoint: "responses",
    body: { model: "anthropic/claude-sonnet-4.5", input: [{ type: "x", output: [null, "y"] }] },
  },
  // Every message empty: transcoded, it went out with no messages at all.
  {
    endpoint: "chat",
    body: { model: "anthropic/claude-sonnet-4.5", messages: [{ role: "user", content: [] }] },
  },
  { endpoint: "responses", body: { model: "anthropic/claude-sonnet-4.5", input: [] } },
  {
    endpoint: "messages",
    body: {
      model: "openai/gpt-4.1-mini",
      max_tokens: 8,
      messages: [{ role: "user", content: [] }],
    },
  },
  // `n` where the format has none multiplied the hold past what the store holds (503).
  { endpoint: "responses", body: { model: "openai/gpt-4.1-mini", input: "hi", n: 2 ** 53 } },
  {
    endpoint: "messages",
    body: {
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 8,
      n: 2 ** 53,
      messages: [{ role: "user", content: "hi" }],
    },
  },
];

Deno.test("faults: fuzzed client requests keep every endpoint's contract", async () => {
  const g = await startFaultGateway({
    config: { RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" },
    // The upstream failures some cases ask for are logged as errors: expected here.
    logger: createLogger("error", () => {}),
  });
  try {
    const a = await g.account(rubToNano("1000000"));
    const seeds = await loadSeeds();
    assert.ok(
      seeds.length >= (recordedClients ? 60 : 15),
      `seeds, from the recorded clients too where present (${seeds.length})`,
    );
    const r = rng(SEED);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const check = async (name: string, endpoint: Endpoint, body: unknown, failing = false) => {
      const out = await runCase(g, a.key, a.accountId, endpoint, body, { failing });
      statuses.set(out.status, (statuses.get(out.status) ?? 0) + 1);
      if (out.problems.length > 0) {
        failures.push(`${name} → ${out.status}\n    ${out.problems.join("\n    ")}`);
      }
    };

    for (const [i, f] of FOUND.entries()) await check(`found #${i}`, f.endpoint, f.body);
    for (let i = 0; i < CASES; i++) {
      const seed = seeds[r.int(0, seeds.length - 1)];
      const body = structuredClone(seed.body);
      const did: string[] = [];
      for (let k = r.int(0, 3); k > 0; k--) did.push(mutate(r, body, seed.endpoint));
      const failing = r.next() < 0.1;
      const steered = r.next() < 0.6 ? steer(r, body, failing) : undefined;
      if (steered) did.push(steered);
      if (r.next() < 0.3 && seed.endpoint !== "embeddings" && seed.endpoint !== "images") {
        body.stream = !body.stream;
      }
      await check(
        `#${i} ${seed.name}: ${did.join(" | ")}`,
        seed.endpoint,
        body,
        !!failing && !!steered,
      );
    }

    assert.deepEqual(failures, [], failures.join("\n"));
    // The cases reach the models, not just the validators.
    assert.ok((statuses.get(200) ?? 0) >= CASES / 4, `answered: ${JSON.stringify([...statuses])}`);
    assert.ok((statuses.get(400) ?? 0) >= CASES / 10, `refused: ${JSON.stringify([...statuses])}`);
    await assertSettledClean(g);
  } finally {
    await g.close();
  }
});

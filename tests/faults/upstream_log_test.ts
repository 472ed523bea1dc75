/**
 * The operator learns why upstream calls fail: an unreachable base URL and a refused key are
 * logged (warn, error) with the provider and what went wrong, never with the key or the
 * upstream's message; a request the upstream found wrong is the client's business (debug).
 */
import assert from "node:assert/strict";
import { rubToNano } from "../../src/billing/money.ts";
import { createLogger } from "../../src/lib/log.ts";
import { post, withFaultGateway } from "../helpers/faults.ts";

const provider = (id: string, priority: number, extra: Record<string, unknown>) => ({
  id,
  protocols: ["openai-chat"],
  baseUrl: "https://api.openai.com/v1",
  keyEnv: `${id.toUpperCase()}_API_KEY`,
  priority,
  serves: ["openai/gpt-4o-mini"],
  upstreamName: "{model}",
  ...extra,
});

Deno.test("faults: upstream failures are logged for the operator, without keys or messages", async () => {
  const lines: Record<string, unknown>[] = [];
  // A port nothing listens on (fetch refuses port 1 outright, before any connection).
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await withFaultGateway({
    providers: {
      providers: [
        provider("down", 1, { baseUrl: `http://127.0.0.1:${closedPort}/v1` }),
        // The mock answers 401, "Incorrect API key provided: bad-key", for this key.
        provider("badkey", 2, { baseUrlEnv: "OPENAI_BASE_URL" }),
        provider("openai", 3, { baseUrlEnv: "OPENAI_BASE_URL", keyEnv: "OPENAI_API_KEY" }),
      ],
    },
    env: { DOWN_API_KEY: "sk-down-0123456789abcdef", BADKEY_API_KEY: "bad-key" },
    logger: createLogger("debug", (l) => lines.push(JSON.parse(l))),
    config: { RATE_LIMIT_RPM: "0", ACCOUNT_RATE_LIMIT_RPM: "0" },
  }, async (g) => {
    const a = await g.account(rubToNano("100"));
    const ok = await post(`${g.baseURL}/chat/completions`, {
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
    }, { key: a.key });
    assert.equal(ok.status, 200, await ok.clone().text());
    await ok.body?.cancel();

    const down = lines.find((l) => l.provider === "down");
    assert.ok(down, `the unreachable provider is logged: ${JSON.stringify(lines)}`);
    assert.equal(down.level, "warn");
    assert.equal(down.msg, "upstream unreachable");
    assert.equal(down.upstream_model, "gpt-4o-mini");
    assert.match(String(down.cause), /refused/i);

    const refused = lines.find((l) => l.provider === "badkey");
    assert.ok(refused, "the refused key is logged");
    assert.equal(refused.level, "error");
    assert.equal(refused.status, 401);
    assert.equal(typeof refused.type, "string");
    const all = JSON.stringify(lines);
    assert.ok(!all.includes("bad-key"), "the upstream's message (which echoes the key) is not");
    assert.ok(!all.includes("sk-down-0123456789abcdef"));

    // The client's own mistake, as the upstream judged it: not the operator's concern.
    lines.length = 0;
    const bad = await post(`${g.baseURL}/chat/completions`, {
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "hi [[mock:error=400]]" }],
    }, { key: a.key });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    const refusal = lines.find((l) => l.provider === "openai");
    assert.ok(refusal, JSON.stringify(lines));
    assert.equal(refusal.msg, "upstream refused the request");
    assert.equal(refusal.status, 400);
    assert.equal(refusal.level, "debug");
  });
});

/**
 * `deno task soak`: the fault and load suite of issue 7 at full size (`deno task test` runs
 * the same scenarios bounded, in tests/faults/). Prints each scenario's figures; exits 1 if
 * any scenario failed. Scenarios needing PostgreSQL binaries or redis-server are skipped,
 * with the reason, when those are missing.
 *
 *   deno task soak                 # everything
 *   deno task soak streams redis   # only the scenarios named (load, one-hold, spend,
 *                                  # streams, streams-drain, slow-reader, postgres, redis)
 */
import {
  brokenStreams,
  exactlyOneHold,
  type Figures,
  keySpendLimit,
  loadOnOneAccount,
  postgresRestart,
  redisStopped,
  slowReader,
} from "../tests/faults/scenarios.ts";
import { PgCluster, RedisServer } from "../tests/helpers/faults.ts";

interface Scenario {
  name: string;
  what: string;
  skip?: () => Promise<string | undefined>;
  run: () => Promise<Figures>;
}

const SCENARIOS: Scenario[] = [
  {
    name: "load",
    what: "1000 requests, 200 at a time, on one account covering ~50 holds",
    run: () => loadOnOneAccount({ requests: 1000, concurrency: 200, holds: 50 }),
  },
  {
    name: "one-hold",
    what: "100 identical concurrent requests against exactly one hold",
    run: () => exactlyOneHold(100),
  },
  {
    name: "spend",
    what: "a per-key spend limit",
    run: () => keySpendLimit(),
  },
  {
    name: "streams",
    // idleMs 2 s: client, gateway, mock and PGlite share one event loop, whose lag under 200
    // concurrent streams can pass the 300 ms the bounded test uses.
    what: "2000 streams broken at random points (CANCEL_POLICY=abort)",
    run: () =>
      brokenStreams({ streams: 2000, concurrency: 200, seed: 7, policy: "abort", idleMs: 2_000 }),
  },
  {
    name: "streams-drain",
    what: "500 streams broken at random points (CANCEL_POLICY=drain)",
    run: () =>
      brokenStreams({ streams: 500, concurrency: 100, seed: 11, policy: "drain", idleMs: 2_000 }),
  },
  {
    name: "slow-reader",
    what: "a client that stops reading for 3 s in a 100 000-token stream",
    run: () => slowReader({ tokens: 100_000, pauseMs: 3_000, idleMs: 1_000 }),
  },
  {
    name: "postgres",
    what: "PostgreSQL stopped and started under load (a dedicated cluster)",
    skip: () => PgCluster.unavailable(),
    run: () => postgresRestart({ streams: 100, outageRequests: 200 }),
  },
  {
    name: "redis",
    what: "Redis killed under load (a dedicated redis-server)",
    skip: () => RedisServer.unavailable(),
    run: () => redisStopped({ rpm: 60, load: 600 }),
  },
];

const only = new Set(Deno.args);
let failed = 0;
for (const s of SCENARIOS) {
  if (only.size > 0 && !only.has(s.name)) continue;
  const why = await s.skip?.();
  if (why) {
    print(`SKIP ${s.name}: ${s.what} — ${why}`);
    continue;
  }
  print(`RUN  ${s.name}: ${s.what}`);
  const t = performance.now();
  try {
    const figures = await s.run();
    const seconds = ((performance.now() - t) / 1000).toFixed(1);
    print(`OK   ${s.name} (${seconds} s) ${JSON.stringify(figures)}`);
  } catch (e) {
    failed++;
    const seconds = ((performance.now() - t) / 1000).toFixed(1);
    print(`FAIL ${s.name} (${seconds} s): ${(e as Error)?.stack ?? e}`);
  }
}
print(failed === 0 ? "soak: all scenarios passed" : `soak: ${failed} scenario(s) failed`);
Deno.exit(failed === 0 ? 0 : 1);

function print(line: string): void {
  // deno-lint-ignore no-console
  console.log(line);
}

/**
 * The gateway's own dependencies failing under load, on servers these tests start themselves
 * (never the machine's PostgreSQL on 5432 or Redis on 6379):
 * - PostgreSQL stopped (`pg_ctl stop -m fast`) while streams run: new paid requests get a
 *   quick 503 with Retry-After, the streams finish, every settlement lands exactly once after
 *   `pg_ctl start`.
 * - Redis killed under load: no 5xx, limits still enforced per instance, back on Redis when
 *   it returns.
 */
import { PgCluster, RedisServer } from "../helpers/faults.ts";
import { postgresRestart, redisStopped } from "./scenarios.ts";

const noPg = await PgCluster.unavailable();
const noRedis = await RedisServer.unavailable();

Deno.test({
  name: `faults: PostgreSQL stopped and started under load — no lost or double debit${
    noPg ? ` (skipped: ${noPg})` : ""
  }`,
  ignore: noPg !== undefined,
  fn: async () => {
    await postgresRestart({ streams: 10, outageRequests: 20 });
  },
});

Deno.test({
  name: `faults: Redis killed under load — no 5xx, per-instance limits, back on Redis${
    noRedis ? ` (skipped: ${noRedis})` : ""
  }`,
  ignore: noRedis !== undefined,
  fn: async () => {
    await redisStopped({ rpm: 5, load: 40 });
  },
});

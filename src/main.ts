/**
 * Start-up: config → store → catalogue → providers → Deno.serve. Embedded by default
 * (PGlite under DATA_DIR); PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set.
 */
import { type Config, ConfigError, loadConfig, startStep } from "./config.ts";
import { describeError } from "./lib/describe_error.ts";
import { buildGateway, sweep } from "./server.ts";
import { createOperatorHandler } from "./admin/operator_api.ts";
import {
  acquireDirLock,
  localUrl,
  removeServerFile,
  writeServerFile,
} from "./admin/server_file.ts";
import { ensureDemoAccount } from "./admin/demo.ts";
import { newId } from "./lib/ids.ts";
import { endOpenStreams } from "./pipeline/respond.ts";
import { RedisLimiter } from "./limits/redis.ts";
import { startupLine } from "./startup_line.ts";
import { DATA_DIR_MODE } from "./lib/data_dir.ts";

async function main() {
  try {
    await start();
  } catch (e) {
    // Whatever stops start-up is one line naming what to fix; the stack only on request.
    const line = e instanceof ConfigError ? e.message : `start-up failed: ${describeError(e)}`;
    console.error(`Tollgate could not start. ${line}`);
    if (Deno.env.get("LOG_LEVEL") === "debug") console.error(e);
    Deno.exit(1);
  }
}

function cannotListen(cfg: Config, e: unknown): ConfigError {
  return new ConfigError(
    e instanceof Deno.errors.AddrInUse
      ? `PORT=${cfg.PORT} is in use on ${cfg.HOST}: another process listens there; stop it or set PORT`
      : `HOST=${cfg.HOST} PORT=${cfg.PORT}: cannot listen: ${describeError(e)}`,
  );
}

async function start() {
  const cfg = loadConfig();
  const embedded = !cfg.DATABASE_URL;
  let releaseLock: (() => Promise<void>) | undefined;
  if (embedded) {
    releaseLock = await startStep(`DATA_DIR=${cfg.DATA_DIR}`, async () => {
      await Deno.mkdir(cfg.DATA_DIR, { recursive: true, mode: DATA_DIR_MODE });
      return await acquireDirLock(cfg.DATA_DIR);
    });
  }
  // A port in use is told at once, not after a first start has spent its minute making the
  // database (the real listen below still reports a port taken in between). After the lock,
  // which takes no time: a second start of a running gateway holds both its port and its
  // directory, and the directory's refusal names the process to stop, where the port's would
  // have the operator set another PORT only to be refused again.
  try {
    Deno.listen({ port: cfg.PORT, hostname: cfg.HOST }).close();
  } catch (e) {
    await releaseLock?.();
    throw cannotListen(cfg, e);
  }
  if (embedded) {
    // Making the database takes tens of seconds under WASM: say so, or a first start looks hung.
    const made = await Deno.stat(`${cfg.DATA_DIR}/pg`).then(() => true, () => false);
    if (!made) {
      console.log(
        `First start: creating the embedded database in ${cfg.DATA_DIR} (up to a minute)`,
      );
    }
  }
  const operatorToken = cfg.ADMIN_TOKEN ?? newId("op", 32);
  let operator: ReturnType<typeof createOperatorHandler> | undefined;
  const gw = await buildGateway(cfg, {
    // The embedded store has one writer, this process: holds can live in memory. Instances
    // sharing PostgreSQL hold against balance each leases from it (design §10).
    quota: embedded ? "memory" : "lease",
    routes: (ctx) => {
      operator = createOperatorHandler(ctx.store, {
        token: operatorToken,
        keyPrefix: cfg.KEY_PREFIX,
        inMemory: (accountId) => ctx.quota.inMemory?.(accountId),
        // A top-up, a revocation or a new limit changed figures this instance keeps: the
        // wallet's, and the cached key records (a spend cap decides where a key is held).
        // Other instances see them within KEY_CACHE_TTL_MS.
        ran: () => {
          ctx.quota.invalidate();
          ctx.keyCache.clear();
        },
      });
      return [{
        method: "POST",
        path: "/admin/v1/run",
        envelope: "generic",
        handle: (req, _rest, info) => operator!(req, info.remoteAddr),
      }];
    },
  });
  const { ctx } = gw;

  // Embedded mode has one process: whatever is still `running` at start died with the last
  // one. With a shared PostgreSQL, other instances' live generations must be left alone.
  const swept = await sweep(ctx, embedded ? 0 : cfg.SWEEP_AFTER_MS).catch(() => 0);
  if (swept) console.log(`Closed ${swept} generation(s) interrupted by an earlier stop.`);
  // Every 10 s: a dead instance's lease (eight holds of an account's balance, plus two per
  // request it had in flight) is held until a sweep gives it back, so the sweep follows its
  // 30 s expiry closely. Two indexed reads when there is nothing to do.
  const sweeper = setInterval(() => sweep(ctx, cfg.SWEEP_AFTER_MS).catch(() => {}), 10_000);

  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      port: cfg.PORT,
      hostname: cfg.HOST,
      onListen: () => {},
    }, (req, info) =>
      gw.handler(req, {
        remoteAddr: info.remoteAddr.transport === "tcp" ? info.remoteAddr.hostname : "",
      }));
  } catch (e) {
    clearInterval(sweeper);
    await gw.close().catch(() => {});
    throw cannotListen(cfg, e);
  }
  const url = localUrl(cfg.HOST, server.addr.port);
  if (embedded) {
    await writeServerFile(cfg.DATA_DIR, { pid: Deno.pid, url, token: operatorToken });
  }

  // Announced once it listens: a start that cannot listen shows no key it then cannot serve.
  const demo = await ensureDemoAccount(ctx.store, cfg);
  const redisDown = ctx.limiter instanceof RedisLimiter ? ctx.limiter.unreachable : undefined;
  console.log(startupLine({
    models: ctx.catalogue.generative().length,
    aliases: ctx.catalogue.aliases().length,
    embeddingModels: ctx.catalogue.embeddingModels().length,
    store: embedded ? `embedded store in ${cfg.DATA_DIR}` : "PostgreSQL",
    limits: !cfg.REDIS_URL ? "memory" : redisDown ? { redisDown } : "redis",
  }));
  if (ctx.providers.length === 0) {
    console.log(
      "No provider key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY): " +
        "requests to models will get 503. To try every endpoint without a key, run `deno task dev` " +
        "(starts a local mock upstream and points the gateway at it).",
    );
  } else {
    console.log(`Providers enabled: ${ctx.providers.map((p) => p.id).join(", ")}`);
  }
  if (demo.key) {
    console.log(
      `Demo account ${demo.accountId} created with ${cfg.DEMO_BALANCE_RUB} RUB. Its API key (shown once):`,
    );
    console.log(demo.key);
  } else {
    // The CLI finds the store the way this process did: the same DATA_DIR or DATABASE_URL.
    const storeEnv = cfg.DATABASE_URL
      ? "DATABASE_URL=… "
      : cfg.DATA_DIR !== "./data"
      ? `DATA_DIR=${cfg.DATA_DIR} `
      : "";
    console.log(
      `Demo account ${demo.accountId} exists. Make another key with: ${storeEnv}deno task admin key create --account ${demo.accountId}`,
    );
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: draining (no new requests; open streams finish)`);
    ctx.draining = true;
    clearInterval(sweeper);
    // Open streams get SHUTDOWN_GRACE_MS to finish; the rest end with an in-stream error
    // and are settled like any other broken stream (a call still awaiting its upstream, with
    // a 503).
    const grace = setTimeout(endOpenStreams, cfg.SHUTDOWN_GRACE_MS);
    await server.shutdown();
    clearTimeout(grace);
    await gw.close();
    if (embedded) {
      await removeServerFile(cfg.DATA_DIR).catch(() => {});
      await releaseLock?.();
    }
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));

  // Announced only once a signal would be handled: a supervisor (or a test) that stops the
  // process as soon as it reads this line must get the graceful stop, not the default death.
  console.log(`Listening on ${url}`);
}

if (import.meta.main) await main();

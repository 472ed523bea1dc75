/**
 * Deno Deploy entry: the app exported as `{ fetch }`. Requires DATABASE_URL (no file-system
 * writes here: the embedded store needs a disk Deploy does not give); REDIS_URL shares rate
 * limits across isolates. Holds stay in the store one by one (no leased wallet): an isolate
 * can be evicted at any moment, and settlements gathered in memory would go unbilled.
 */
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { describeError } from "./lib/describe_error.ts";
import { buildGateway, type Gateway, sweep } from "./server.ts";
import { type EnvelopeFamily, renderError } from "./http/envelopes.ts";
import { GatewayError } from "./http/gateway_error.ts";
import { endOpenStreams, openStreams } from "./pipeline/respond.ts";

function envelopeFor(req: Request): EnvelopeFamily {
  const path = new URL(req.url).pathname;
  if (path.startsWith("/v1/messages") || req.headers.has("anthropic-version")) return "messages";
  if (path.startsWith("/v1/embeddings") || path.startsWith("/v1/images")) return "coded";
  return "generic";
}

/** How often an isolate sweeps, at most: a request that finds the last sweep older starts one. */
const SWEEP_EVERY_MS = 10_000;

/** How often `close` looks whether the calls still open have ended. */
const DRAIN_POLL_MS = 50;

export interface DeployApp {
  fetch(req: Request, info?: Deno.ServeHandlerInfo): Promise<Response>;
  /** Closes the gateway if one was built (tests; Deploy ends isolates itself). */
  close(): Promise<void>;
}

export function deployApp(load: () => Config = loadConfig): DeployApp {
  let gateway: Promise<{ gw: Gateway; cfg: Config }> | undefined;
  let lastSweep = 0;
  /** Calls whose handler has not answered yet (a whole answer is settled before it returns). */
  let answering = 0;

  const get = () => {
    gateway ??= (async () => {
      const cfg = load();
      if (!cfg.DATABASE_URL) {
        // This entry serves Deno Deploy and `deno serve` alike: the message fits both.
        throw new ConfigError(
          "config: DATABASE_URL is required by src/deploy.ts (Deno Deploy, deno serve): it keeps " +
            "no embedded store; for one process on the embedded store run src/main.ts " +
            "(deno task start)",
        );
      }
      return { gw: await buildGateway(cfg), cfg };
    })().catch((e) => {
      // Not remembered: a database that was down at the first request may be up at the next.
      gateway = undefined;
      throw e;
    });
    return gateway;
  };

  return {
    async fetch(req, info) {
      let built;
      try {
        built = await get();
      } catch (e) {
        const line = e instanceof ConfigError ? e.message : describeError(e);
        console.error(`Tollgate could not start. ${line}`);
        // In the envelope of the endpoint asked, so each SDK reads it as its own 503.
        return renderError(
          envelopeFor(req),
          new GatewayError(503, "the gateway is starting or misconfigured; retry shortly", {
            retryAfter: 5,
          }),
        );
      }
      const { gw, cfg } = built;
      // No process outlives its requests here to run a timer: requests take turns sweeping
      // what an evicted isolate left running (its holds would otherwise stay forever).
      const now = Date.now();
      if (now - lastSweep >= SWEEP_EVERY_MS) {
        lastSweep = now;
        gw.ctx.tracker.track(sweep(gw.ctx, cfg.SWEEP_AFTER_MS).catch(() => 0));
      }
      const addr = info?.remoteAddr;
      answering++;
      try {
        return await gw.handler(req, {
          remoteAddr: addr && addr.transport === "tcp" ? addr.hostname : "",
        });
      } finally {
        answering--;
      }
    },
    async close() {
      const built = await gateway?.catch(() => undefined);
      if (!built) return;
      // Calls still open end first, as under src/main.ts: a store closed under them could not
      // bill them (their settlements would fail, and the sweep close them unbilled after the
      // client had its whole answer). Streams get SHUTDOWN_GRACE_MS, then end with an
      // in-stream error and settle like any broken stream.
      built.gw.ctx.draining = true;
      const grace = setTimeout(endOpenStreams, built.cfg.SHUTDOWN_GRACE_MS);
      while (answering > 0 || openStreams.size > 0) {
        await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      }
      clearTimeout(grace);
      await built.gw.ctx.tracker.idle();
      await built.gw.close();
    },
  };
}

/**
 * Under `deno serve` (self-hosted, one process or `--parallel`), SIGTERM closes the listener and
 * lets open requests finish, but the store's PostgreSQL connections would keep the process
 * alive for good: close the gateway too, once its requests are done (`close` waits for them). Armed at the first request
 * (a process that only imports this module keeps SIGTERM's default), and disarmed when it fires,
 * so a second SIGTERM ends the process at once. Deno Deploy may take no signal listener.
 */
function closeOnSigterm(app: DeployApp): DeployApp {
  let armed = false;
  const onTerm = () => {
    Deno.removeSignalListener("SIGTERM", onTerm);
    void app.close().catch(() => {});
  };
  return {
    fetch(req, info) {
      if (!armed) {
        armed = true;
        try {
          Deno.addSignalListener("SIGTERM", onTerm);
        } catch { /* no signals here */ }
      }
      return app.fetch(req, info);
    },
    close: () => app.close(),
  };
}

export default closeOnSigterm(deployApp());

/**
 * Builds the gateway from a config: store → catalogue → providers → limiter → app. Used by
 * main.ts (the process), deploy.ts (Deno Deploy) and the integration tests (in-process on a
 * free port), so all three run the same assembly.
 */
import { type Config, startStep } from "./config.ts";
import { Catalogue } from "./catalogue/catalogue.ts";
import { createListing } from "./catalogue/listing.ts";
import { makeRates } from "./billing/cost.ts";
import { loadProviders, type Provider } from "./providers/provider.ts";
import { Breakers } from "./providers/routing.ts";
import { openStore } from "./store/mod.ts";
import type { Store } from "./store/store.ts";
import { Tracker } from "./lib/tracker.ts";
import { createLogger, type Logger } from "./lib/log.ts";
import { type Limiter, MemoryLimiter } from "./limits/limiter.ts";
import { RedisLimiter } from "./limits/redis.ts";
import { StoreQuota } from "./billing/quota.ts";
import { MemoryQuota } from "./billing/wallet.ts";
import { LeaseQuota } from "./billing/lease.ts";
import { KeyCache } from "./pipeline/auth.ts";
import type { AppContext } from "./pipeline/context.ts";
import { createApp, type Handler, type Route } from "./app.ts";
import { sweep } from "./pipeline/sweeper.ts";
import { nonTextRoutes } from "./endpoints/mod.ts";

export interface Gateway {
  ctx: AppContext;
  handler: Handler;
  disabledProviders: string[];
  /** Adds routes after construction (the operator API needs the store). */
  close(): Promise<void>;
}

export type QuotaKind = "memory" | "lease" | "store";

export interface BuildOptions {
  env?: (name: string) => string | undefined;
  /** An already-open store (tests share one); otherwise opened from the config. */
  store?: Store;
  /** In-memory PGlite (tests), instead of DATA_DIR. */
  memory?: boolean;
  logger?: Logger;
  limiter?: Limiter;
  /**
   * `memory`: holds in memory, settlements batched (only for a store this process alone
   * writes: the embedded one). `lease`: holds against balance leased from the store,
   * settlements batched (any number of instances). `store` (default): every hold in the store.
   */
  quota?: QuotaKind;
  routes?: (ctx: AppContext) => Route[];
}

export async function buildGateway(cfg: Config, opts: BuildOptions = {}): Promise<Gateway> {
  const env = opts.env ?? ((name: string) => Deno.env.get(name));
  const log = opts.logger ?? createLogger(cfg.LOG_LEVEL);
  const ownsStore = !opts.store;
  // Each step that reads something the operator set names it when it fails (one line);
  // the files first, so a mistake in them is found before a database is opened for nothing.
  const catalogue = await startStep(
    cfg.CATALOGUE_FILE ? `CATALOGUE_FILE=${cfg.CATALOGUE_FILE}` : "the built-in catalogue",
    () => Catalogue.load(cfg.CATALOGUE_FILE ? { models: cfg.CATALOGUE_FILE } : undefined),
  );
  const { enabled, disabled } = await startStep(
    cfg.PROVIDERS_FILE ? `PROVIDERS_FILE=${cfg.PROVIDERS_FILE}` : "config/providers.json",
    () => loadProviders(cfg.PROVIDERS_FILE, env),
  );
  const store = opts.store ?? await startStep(
    cfg.DATABASE_URL ? `DATABASE_URL=${cfg.DATABASE_URL}` : `DATA_DIR=${cfg.DATA_DIR}`,
    () => openStore({ databaseUrl: cfg.DATABASE_URL, dataDir: cfg.DATA_DIR, memory: opts.memory }),
  );
  const rates = makeRates(cfg.USD_RUB, cfg.MARKUP);
  const limiter: Limiter = opts.limiter ??
    (cfg.REDIS_URL
      ? await startStep(
        `REDIS_URL=${cfg.REDIS_URL}`,
        () => RedisLimiter.connect(cfg.REDIS_URL!, log),
      )
      : new MemoryLimiter());
  const ctx: AppContext = {
    cfg,
    store,
    quota: opts.quota === "memory"
      ? new MemoryQuota(store)
      : opts.quota === "lease"
      ? new LeaseQuota(store)
      : new StoreQuota(store),
    catalogue,
    providers: enabled as Provider[],
    breakers: new Breakers(),
    rates,
    limiter,
    tracker: new Tracker(),
    keyCache: new KeyCache(cfg.KEY_CACHE_TTL_MS),
    log,
    draining: false,
  };
  const listing = createListing(catalogue, { usdRub: cfg.USD_RUB, markup: cfg.MARKUP });
  const close = async () => {
    ctx.draining = true;
    await ctx.tracker.idle();
    await ctx.quota.close();
    await ctx.limiter.close();
    if (ownsStore) await store.close();
  };
  let routes: Route[];
  try {
    // BLOB_URL's messages name it already.
    routes = await startStep("", () => [...nonTextRoutes(ctx), ...(opts.routes?.(ctx) ?? [])]);
  } catch (e) {
    // Deno Deploy tries again on the next request: this attempt's connections must not pile up.
    await close().catch(() => {});
    throw e;
  }
  const handler = createApp(ctx, { listing, routes });
  return { ctx, handler, disabledProviders: disabled, close };
}

export { sweep };

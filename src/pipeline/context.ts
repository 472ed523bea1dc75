import type { Catalogue } from "../catalogue/catalogue.ts";
import type { Config } from "../config.ts";
import type { Rates } from "../billing/cost.ts";
import type { Provider } from "../providers/provider.ts";
import type { Breakers } from "../providers/routing.ts";
import type { Store } from "../store/store.ts";
import type { Quota } from "../billing/quota.ts";
import type { Tracker } from "../lib/tracker.ts";
import type { Limiter } from "../limits/limiter.ts";
import type { KeyCache } from "./auth.ts";
import type { Logger } from "../lib/log.ts";

/** Everything a request needs, built once at start-up (main.ts) and shared by all requests. */
export interface AppContext {
  cfg: Config;
  store: Store;
  /** Where holds live: the store (shared PostgreSQL) or memory (embedded). */
  quota: Quota;
  catalogue: Catalogue;
  providers: Provider[];
  breakers: Breakers;
  rates: Rates;
  limiter: Limiter;
  tracker: Tracker;
  keyCache: KeyCache;
  log: Logger;
  /** Set during graceful shutdown: no new paid requests. */
  draining: boolean;
}

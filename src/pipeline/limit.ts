import { GatewayError } from "../http/gateway_error.ts";
import { authenticate, type Caller } from "./auth.ts";
import type { AppContext } from "./context.ts";

/** Our own limiter's refusal: rendered as the spec's limiter body on every endpoint. */
export class RateLimited extends GatewayError {
  constructor(retryAfter: number) {
    super(429, "rate limit exceeded; retry after the time in Retry-After", {
      code: "RATE_LIMITED",
      retryAfter: Math.max(1, Math.ceil(retryAfter)),
    });
  }
}

/** Takes one request from the key's and the account's per-minute budgets. */
export async function limit(caller: Caller, app: AppContext): Promise<void> {
  const r = await app.limiter.take({
    buckets: [
      { name: `k:${caller.keyId}`, rpm: caller.keyRpm ?? app.cfg.RATE_LIMIT_RPM },
      { name: `a:${caller.accountId}`, rpm: caller.accountRpm ?? app.cfg.ACCOUNT_RATE_LIMIT_RPM },
    ],
  });
  if (!r.ok) throw new RateLimited(r.retryAfter);
}

/**
 * The door of every keyed endpoint: the key checked, then one request taken from its budgets
 * (the spec's limiter answers 429 on all endpoints, listings and history included).
 */
export async function admit(req: Request, app: AppContext): Promise<Caller> {
  const caller = await authenticate(req.headers, app);
  await limit(caller, app);
  return caller;
}

import { formatRub } from "../billing/money.ts";
import { GatewayError } from "../http/gateway_error.ts";
import { generationsPageDefault, generationsPageMax } from "../lib/bounds.ts";
import type { Generation } from "../store/store.ts";
import { admit } from "./limit.ts";
import { peerBatchWaitMs, settledEverywhere, settledSoFar } from "./settled_so_far.ts";
import type { AppContext } from "./context.ts";

/** How long a lookup on a cluster waits for a peer to write the generation asked for. */
const crossInstanceWaitMs = 1_000;

/** `GET /v1/generations` and `GET /v1/generations/{id}`: the caller's own history only. */
export async function listGenerations(req: Request, app: AppContext): Promise<Response> {
  const caller = await admit(req, app);
  const url = new URL(req.url);
  const limitParam = url.searchParams.get("limit");
  // Digits only: Number() would also take `1e2`, `0x10` and ` 5`.
  const limit = limitParam === null
    ? generationsPageDefault
    : /^[0-9]+$/.test(limitParam)
    ? Number(limitParam)
    : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > generationsPageMax) {
    throw new GatewayError(400, `limit must be an integer from 1 to ${generationsPageMax}`);
  }
  const before = url.searchParams.get("cursor") ?? url.searchParams.get("before") ?? undefined;
  // Settlements batched in memory are written first, and for the newest page those of the
  // other instances too: a call answered a moment ago through any instance is listed (and a
  // stream that just ended is not shown running). Older pages cannot have changed.
  await (before === undefined ? settledEverywhere(app) : settledSoFar(app));
  const rows = await app.store.listGenerations(caller.accountId, { limit: limit + 1, before });
  if (rows.length === 0 && before !== undefined) {
    // An empty page after a cursor is the end of the history only if the cursor is real.
    if (!await app.store.getGeneration(caller.accountId, before)) {
      throw new GatewayError(
        400,
        `cursor ${JSON.stringify(before)} is not a generation of this account; pass the ` +
          "next_cursor of a previous page",
      );
    }
  }
  const page = rows.slice(0, limit);
  return Response.json({
    object: "list",
    data: page.map(render),
    has_more: rows.length > limit,
    next_cursor: rows.length > limit ? page.at(-1)!.id : null,
  });
}

export async function getGeneration(req: Request, id: string, app: AppContext): Promise<Response> {
  const caller = await admit(req, app);
  await settledSoFar(app);
  let g = await app.store.getGeneration(caller.accountId, id);
  // Instances sharing PostgreSQL write settlements in batches (every ~25 ms): a generation
  // another instance answered a moment ago may not be written yet, or, journaled as running
  // (a stream past its first second), not yet settled in place. Only misses and running rows
  // wait: a client looks a stream's cost up by its id as soon as the stream ends. The wait
  // backs off up to a second, so a peer slowed by load is still waited for, and an id that
  // never was costs one second, on clusters only. A stream this instance still serves is
  // running whatever a peer writes: no wait.
  const unsettled = (g: Generation | null) =>
    !g || (g.status === "running" && !app.quota.holds(g.id));
  const until = performance.now() + crossInstanceWaitMs;
  for (let wait = peerBatchWaitMs; unsettled(g) && app.quota.peersBatch; wait *= 2) {
    const left = until - performance.now();
    if (left <= 0) break;
    await new Promise((r) => setTimeout(r, Math.min(wait, left)));
    g = await app.store.getGeneration(caller.accountId, id) ?? g;
  }
  // Another account's generation is "not found", never "forbidden": ids must not be probeable.
  if (!g) throw new GatewayError(404, `generation ${JSON.stringify(id)} not found`);
  return Response.json(render(g));
}

/** A generation's token figures as the API (and the admin's JSON) name them; null where unknown. */
export function tokensJson(t: Generation["tokens"]) {
  return {
    input: t.input ?? null,
    output: t.output ?? null,
    cache_read: t.cacheRead ?? null,
    cache_write: t.cacheWrite ?? null,
    reasoning: t.reasoning ?? null,
  };
}

function render(g: Generation) {
  return {
    id: g.id,
    object: "generation",
    model: g.model,
    provider: g.provider,
    upstream_model: g.upstreamModel,
    endpoint: g.endpoint,
    stream: g.stream,
    status: g.status,
    finish_reason: g.finishReason,
    tokens: tokensJson(g.tokens),
    cost: Number(formatRub(g.cost)),
    cost_details: g.costDetails,
    usage_source: g.usageSource,
    latency_ms: g.latencyMs,
    ttft_ms: g.ttftMs,
    error: g.error,
    created_at: Math.floor(g.created.getTime() / 1000),
    finished_at: g.finished ? Math.floor(g.finished.getTime() / 1000) : null,
  };
}

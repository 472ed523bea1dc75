import type { CostReport, Event, FinishReason } from "../events/event.ts";
import { mergeUsage, type Usage } from "../events/usage.ts";
import { type RawTiers, tieredPrices } from "../billing/tiers.ts";
import { computeCost, type PriceTable, type Rates } from "../billing/cost.ts";
import { deltaTokens } from "../billing/count.ts";
import { nanoToRub } from "../billing/money.ts";
import type { GatewayError } from "../http/gateway_error.ts";
import type { Settlement } from "../store/store.ts";
import type { Checkpoint } from "../billing/journal.ts";
import type { Quota } from "../billing/quota.ts";
import type { Tracker } from "../lib/tracker.ts";
import type { Logger } from "../lib/log.ts";
import { settleRetriesMax, settleRetryMs, storedCountMax } from "../lib/bounds.ts";

export interface MeterDeps {
  quota: Quota;
  tracker: Tracker;
  log: Logger;
  rates: Rates;
}

export interface MeterCall {
  generationId: string;
  prices: PriceTable;
  /** The model's price tiers (by prompt size, by time of day) laid over `prices`. */
  tiers?: RawTiers;
  /** Prompt tokens counted by the gateway, for when the upstream never says. */
  promptTokensCounted: number;
  startedAt: number;
  /**
   * For a model priced per request by the upstream (a router): the prices of the model the
   * upstream says it picked (`response_start.model`), if the catalogue knows it.
   */
  routedPrices?: (upstreamModel: string) => { prices: PriceTable; tiers?: RawTiers } | undefined;
}

/**
 * The meter watches the internal events of one generation, computes its cost when the
 * stream ends, and settles it in the store exactly once — after a normal end, a client
 * cancel or a failure alike. "Unknown is not zero": output the upstream never reported is
 * counted from the deltas relayed (`deltaTokens`), input from the prompt; the history
 * records which figure was used.
 */
/** The token figures a generation's row keeps, from the usage its cost was computed on. */
function tokenFigures(u: Usage): Settlement["tokens"] {
  return {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    reasoning: u.reasoning,
  };
}

export class Meter {
  usage: Usage = {};
  deltas = 0;
  /** Output tokens as counted from the deltas, for when the upstream never says. */
  countedOutput = 0;
  /** Web searches the upstream ran, as relayed (`web_search` events), for when it never says. */
  countedSearches = 0;
  finish?: FinishReason;
  error?: GatewayError;
  firstTokenAt?: number;
  provider: string | null = null;
  upstreamModel: string | null = null;
  /** The catalogue model serving, where a fallback serves instead of the one asked for. */
  model?: string;
  #report?: CostReport & { nano: bigint; source: Settlement["usageSource"] };
  #settled?: Promise<void>;
  #prices: { prices: PriceTable; tiers?: RawTiers };

  /**
   * Wall-clock start, for prices by time of day: the tier in force when the call began (the
   * meter itself starts when the upstream answers, which for a whole answer is minutes on).
   */
  readonly #at: number;

  constructor(readonly call: MeterCall, private readonly deps: MeterDeps) {
    this.#at = Date.now() - (performance.now() - call.startedAt);
    this.#prices = { prices: call.prices, tiers: call.tiers };
  }

  observe(e: Event): void {
    switch (e.type) {
      case "response_start":
        if (e.model && this.call.routedPrices) {
          // A router's pick: the history names it, and its prices apply where known.
          this.upstreamModel = e.model;
          this.#prices = this.call.routedPrices(e.model) ?? this.#prices;
        }
        break;
      case "text_delta":
      case "reasoning_delta":
        this.deltas++;
        this.countedOutput += deltaTokens(e.delta);
        this.firstTokenAt ??= performance.now();
        break;
      case "tool_call_delta":
        this.deltas++;
        this.countedOutput += deltaTokens(e.json);
        this.firstTokenAt ??= performance.now();
        break;
      case "other_choice_delta":
        this.deltas++;
        this.countedOutput += deltaTokens(e.delta);
        break;
      case "tool_call_start":
        this.firstTokenAt ??= performance.now();
        break;
      case "web_search":
        this.countedSearches++;
        break;
      case "usage":
        this.usage = mergeUsage(this.usage, e.usage);
        break;
      case "finish":
        this.finish = e.reason;
        break;
      case "error":
        this.error ??= e.error;
        break;
      default:
        break;
    }
  }

  /**
   * The cost of what was consumed, computed once (later calls return the same figure, so the
   * amount shown to the client is the amount debited).
   */
  report(): CostReport & { nano: bigint; source: Settlement["usageSource"] } {
    this.#report ??= this.#cost();
    return this.#report;
  }

  /**
   * What was consumed so far, as the journal checkpoints it while the generation runs (the
   * figure a process that dies leaves for the sweeper to bill): as `report`, not frozen.
   */
  checkpoint(): Checkpoint {
    const r = this.#cost();
    return {
      cost: r.nano,
      costDetails: r.details,
      provider: this.provider,
      upstreamModel: this.upstreamModel,
      ...(this.model ? { model: this.model } : {}),
      tokens: tokenFigures(r.usage),
    };
  }

  #cost(): CostReport & { nano: bigint; source: Settlement["usageSource"] } {
    const u = { ...this.usage };
    for (const f of TOKEN_FIGURES) u[f] = tokenCount(u[f]);
    let source: Settlement["usageSource"] = "upstream";
    const nothingHappened = this.deltas === 0 && u.output === undefined && u.input === undefined;
    if (this.error && nothingHappened) {
      // A failed upstream call with no output costs nothing.
      source = "none";
    } else {
      if (u.input === undefined) {
        u.input = this.call.promptTokensCounted;
        source = "counted";
      }
      if (u.output === undefined) {
        u.output = this.countedOutput;
        source = "counted";
      }
      // An answer cut before its end never says how many searches it ran (the count comes with
      // its last usage), yet those relayed were run and are billed upstream: counted, as output
      // is. A finished answer's own figure stands, none included.
      if (u.webSearches === undefined && this.finish === undefined && this.countedSearches > 0) {
        u.webSearches = this.countedSearches;
        source = "counted";
      }
    }
    const { nano, details } = source === "none"
      ? { nano: 0n, details: {} as Record<string, number> }
      : computeCost(
        u,
        tieredPrices(this.#prices.prices, this.#prices.tiers, u.input ?? 0, this.#at),
        this.deps.rates,
      );
    return { cost: nanoToRub(nano), details, usage: u, nano, source };
  }

  /** True once `settle` has been called. */
  get settling(): boolean {
    return this.#settled !== undefined;
  }

  /** Settles once; repeated calls return the first promise. Runs off the client's path. */
  settle(status: Settlement["status"]): Promise<void> {
    if (this.#settled) return this.#settled;
    const r = this.report();
    const now = performance.now();
    const s: Settlement = {
      generationId: this.call.generationId,
      status,
      cost: r.nano,
      costDetails: r.details,
      provider: this.provider,
      upstreamModel: this.upstreamModel,
      ...(this.model ? { model: this.model } : {}),
      finishReason: this.finish ?? (this.error ? "error" : null),
      tokens: tokenFigures(r.usage),
      usageSource: r.source,
      latencyMs: Math.round(now - this.call.startedAt),
      ttftMs: this.firstTokenAt === undefined
        ? null
        : Math.round(this.firstTokenAt - this.call.startedAt),
      error: this.error ? this.error.message.slice(0, 500) : null,
    };
    this.#settled = this.deps.tracker.trackSettlement(settleWithRetry(this.deps, s));
    return this.#settled;
  }
}

const TOKEN_FIGURES = [
  "input",
  "output",
  "cacheRead",
  "cacheWrite",
  "cacheWrite1h",
  "reasoning",
  "audioInput",
  "audioOutput",
  "imageOutput",
  "webSearches",
] as const;
/**
 * An upstream's token figure as the meter uses it: a fraction is rounded up; a negative,
 * non-finite or implausibly large one is unreadable — unknown, so counted instead. Left as
 * they came, such figures would make a negative cost, throw in the cost arithmetic (BigInt of
 * a fraction) or be refused by the store: a generation never settled.
 */
function tokenCount(v: number | undefined): number | undefined {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) return undefined;
  const n = Math.ceil(v);
  return n <= storedCountMax ? n : undefined;
}

/** The settlement of a generation that produced nothing: no charge, no tokens. */
export function atNoCost(
  status: "failed" | "cancelled",
  error: string,
  provider: string | null,
  finishReason: string | null,
): Omit<Settlement, "generationId" | "latencyMs" | "ttftMs"> {
  return {
    status,
    cost: 0n,
    costDetails: {},
    provider,
    upstreamModel: null,
    finishReason,
    tokens: {},
    usageSource: "none",
    error,
  };
}

/**
 * A settlement must land even if the store blips (PostgreSQL restart): retried until it
 * does. Retrying is safe because the store makes a repeat a no-op.
 */
export async function settleWithRetry(deps: MeterDeps, s: Settlement): Promise<void> {
  for (let attempt = 0;; attempt++) {
    try {
      await deps.quota.settle(s);
      return;
    } catch (e) {
      if (attempt >= settleRetriesMax) {
        deps.log.log("error", "settlement abandoned; the sweeper will close it", {
          generation: s.generationId,
          error: (e as Error).message,
        });
        return;
      }
      if (attempt === 0) {
        deps.log.log("warn", "settlement failed; retrying", {
          generation: s.generationId,
          error: (e as Error).message,
        });
      }
      await new Promise((r) => setTimeout(r, settleRetryMs));
    }
  }
}

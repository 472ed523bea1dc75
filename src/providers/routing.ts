import type { Protocol, Provider } from "./provider.ts";
import { protocolsFor, upstreamNameFor } from "./provider.ts";

export interface Candidate {
  provider: Provider;
  upstreamModel: string;
  /** The protocol this call will speak to the provider. */
  protocol: Protocol;
}

/**
 * A circuit breaker per provider: after `failuresMax` consecutive failures the provider is
 * skipped for `coolDownMs`, unless it is the only candidate left (better a try than a 503).
 */
export class Breakers {
  #state = new Map<string, { failures: number; openUntil: number }>();
  constructor(readonly failuresMax = 5, readonly coolDownMs = 30_000) {}

  isOpen(id: string, now = Date.now()): boolean {
    const s = this.#state.get(id);
    return s !== undefined && s.openUntil > now;
  }
  success(id: string): void {
    this.#state.delete(id);
  }
  failure(id: string, now = Date.now()): void {
    const s = this.#state.get(id) ?? { failures: 0, openUntil: 0 };
    s.failures++;
    if (s.failures >= this.failuresMax) s.openUntil = now + this.coolDownMs;
    this.#state.set(id, s);
  }
}

/**
 * Candidates for a slug, by priority. `preferred` lists protocols the caller would rather
 * speak (its own format first, for pass-through); `allowed` those it can speak at all.
 */
export function candidatesFor(
  providers: readonly Provider[],
  slug: string,
  allowed: readonly Protocol[],
  breakers?: Breakers,
): Candidate[] {
  const out: Candidate[] = [];
  for (const provider of providers) {
    const speaks = protocolsFor(provider, slug);
    const protocol = allowed.find((p) => speaks.includes(p));
    if (!protocol) continue;
    const upstreamModel = upstreamNameFor(provider, slug);
    if (upstreamModel === undefined) continue;
    out.push({ provider, upstreamModel, protocol });
  }
  if (!breakers || out.length <= 1) return out;
  const closed = out.filter((c) => !breakers.isOpen(c.provider.id));
  const open = out.filter((c) => breakers.isOpen(c.provider.id));
  return closed.length > 0 ? [...closed, ...open] : out;
}

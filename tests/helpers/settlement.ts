import type { Settlement } from "../../src/store/store.ts";

/** A settlement as a wallet receives it: completed at `cost`, or failed with `error`. */
export function settlementOf(id: string, cost: bigint, error: string | null = null): Settlement {
  return {
    generationId: id,
    status: error ? "failed" : "completed",
    cost,
    costDetails: { upstream_inference_input_cost: 0.1, upstream_inference_output_cost: 0.2 },
    provider: "p",
    upstreamModel: "m",
    finishReason: error ? "error" : "stop",
    tokens: { input: 10, output: 5 },
    usageSource: "upstream",
    latencyMs: 3,
    ttftMs: 1,
    error,
  };
}

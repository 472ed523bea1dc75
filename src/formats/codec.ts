import type { CostReport, Event } from "../events/event.ts";
import type { TextRequest } from "../events/text_request.ts";
import type { SseEvent } from "./sse.ts";

/**
 * The contracts every wire format implements. Decoders turn an upstream protocol's bytes into
 * internal events; encoders turn internal events into a client format. They are plain
 * objects over events, run inside the one stream stage of the pipeline (design §10), so they
 * never own a stream themselves.
 */

export type Emit = (e: Event) => void;

/** Upstream streaming decoder: one per upstream response. */
export interface StreamDecoder {
  /** One SSE event of the upstream stream. Unknown event types are skipped, never errors. */
  event(ev: SseEvent, emit: Emit): void;
  /**
   * The upstream body ended. A decoder that has seen no terminal event (`finish` or an
   * upstream error) emits an `error` event: a stream cut short is not a clean end.
   */
  end(emit: Emit): void;
  /**
   * The upstream's terminal event came (`[DONE]`, `message_stop`, `response.completed`):
   * nothing more is to be said, however long its connection lingers.
   */
  readonly complete?: boolean;
}

/** Upstream non-streaming decoder: a whole JSON body to the same events a stream gives. */
export type BodyDecoder = (body: unknown, emit: Emit) => void;

/** What an encoder needs to know about the call it answers. */
export interface EncodeContext {
  /** The generation id, also the response id the client sees. */
  id: string;
  /** The model slug the client asked for (spec: responses carry the requested slug). */
  model: string;
  /** Unix seconds. */
  created: number;
  /** The request as the gateway understood it (responses echo some of it). */
  request?: TextRequest;
  /** The client's original body (responses echo fields like `instructions`, `tools`). */
  clientBody?: Record<string, unknown>;
  /**
   * The gateway's count of the prompt's tokens: a stream's opening usage where the upstream
   * reports its own only at the end (Claude Code shows the count as the answer streams).
   */
  promptTokens?: number;
}

/**
 * Client streaming encoder. Returns the text to send for each event ("" for none). The meter
 * sends `cost` exactly once, last; the encoder writes its terminal frames then — the success
 * ending, or the format's in-stream error when an `error` event came before.
 */
export interface StreamEncoder {
  event(e: Event): string;
}

/** Folds all events of a non-streaming call into the client format's body. */
export type BodyEncoder = (events: Event[], cost: CostReport, ctx: EncodeContext) => unknown;

/**
 * Same-format streaming (design §3): the upstream's own SSE text goes to the client untouched,
 * except the edits the spec demands: usage gets `cost`/`cost_details`, and where the format's
 * objects carry the generation's `id` or the requested `model` (chat chunks, the responses
 * opening events), those values are replaced in place, every other byte kept. `raw` returns
 * what to send now for one upstream event — its `raw` text, "" while holding it back, or an
 * edited frame — given the internal events the decoder drew from it.
 */
export interface PassThroughEncoder {
  raw(ev: SseEvent, events: readonly Event[]): string;
  /** The terminal frames: held events released with cost, or the in-stream error. */
  end(cost: CostReport, error?: Event & { type: "error" }): string;
}

/** Same-format non-streaming: the upstream body with `model` (and chat's `id`) set and cost added to usage. */
export type PassThroughBody = (
  body: Record<string, unknown>,
  cost: CostReport,
  ctx: EncodeContext,
) => Record<string, unknown>;

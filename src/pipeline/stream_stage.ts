import type { CostReport, Event } from "../events/event.ts";
import type { PassThroughEncoder, StreamDecoder, StreamEncoder } from "../formats/codec.ts";
import { type SseEvent, SseSplitter } from "../formats/sse.ts";
import { GatewayError } from "../http/gateway_error.ts";
import { sseEventCharsMax } from "../lib/bounds.ts";
import type { Meter } from "./meter.ts";

/** Events that open a stream or a block without saying anything yet. */
const OPENING = new Set<Event["type"]>([
  "response_start",
  "usage",
  "text_start",
  "reasoning_start",
]);

/**
 * The one JavaScript stage of a stream (design §10): upstream bytes → SSE events → decoder →
 * meter → encoder (or pass-through) → bytes, as plain function calls inside one step.
 * `feed` returns the text to send for one upstream chunk; `finish` the terminal frames.
 */
export class StreamStage {
  readonly #decoder: StreamDecoder;
  readonly #encoder?: StreamEncoder;
  readonly #pass?: PassThroughEncoder;
  readonly #meter: Meter;
  readonly #splitter = new SseSplitter();
  readonly #text = new TextDecoder();
  #events: Event[] = [];
  #out = "";
  #error?: Event & { type: "error" };
  /** The error is the gateway's own (`fail`: a stall, a reset, an oversized event). */
  #cut = false;
  #usageSeen = false;
  /** The first content or error event the decoder produced, for the first-byte peek. */
  first?: Event;
  #ended = false;

  constructor(
    opts: { decoder: StreamDecoder; encoder?: StreamEncoder; pass?: PassThroughEncoder },
    meter: Meter,
  ) {
    this.#decoder = opts.decoder;
    this.#encoder = opts.encoder;
    this.#pass = opts.pass;
    this.#meter = meter;
  }

  readonly #emit = (e: Event) => {
    if (this.#error && e.type !== "usage") return; // nothing but usage after an error
    // The first *meaningful* event: a stream that opens and then fails at once is still
    // failed over (responses upstreams send `response.created` before their error, Anthropic
    // may open an empty block first).
    if (this.first === undefined && !OPENING.has(e.type)) this.first = e;
    this.#meter.observe(e);
    if (e.type === "error") this.#error = e;
    else if (e.type === "usage") this.#usageSeen = true;
    if (this.#pass) this.#events.push(e);
    else if (this.#encoder && e.type !== "error") this.#out += this.#encoder.event(e);
  };

  readonly #onSse = (ev: SseEvent) => {
    // Decoded after an error too: the upstream may still report its usage (#emit lets only
    // that through), which bills what it generated rather than the gateway's count.
    this.#decoder.event(ev, this.#emit);
    if (this.#pass) {
      if (!this.#error) this.#out += this.#pass.raw(ev, this.#events);
      this.#events.length = 0;
    }
  };

  feed(chunk: Uint8Array): string {
    this.#splitter.push(this.#text.decode(chunk, { stream: true }), this.#onSse);
    if (this.#splitter.pending > sseEventCharsMax) {
      this.fail(new GatewayError(502, "upstream sent an oversized event"));
    }
    return this.#take();
  }

  /** Marks the stream failed (idle timeout, reset, oversized event); `finish` renders it. */
  fail(error: GatewayError): void {
    if (this.#error) return;
    this.#cut = true;
    this.#emit({ type: "error", error });
  }

  get failed(): boolean {
    return this.#error !== undefined;
  }

  /** The upstream's terminal event came: the answer is whole, whether or not its body ends. */
  get complete(): boolean {
    return this.#decoder.complete === true && this.#error === undefined;
  }

  /** The upstream reported an error and no usage yet: its usage may still follow. */
  get usageMayFollow(): boolean {
    return this.#error !== undefined && !this.#cut && !this.#usageSeen;
  }

  /** End of the upstream body (or of our reading of it): the terminal frames. */
  finish(): { text: string; cost: CostReport } {
    if (!this.#ended) {
      this.#ended = true;
      if (!this.#error) {
        this.#splitter.end(this.#onSse);
        this.#decoder.end(this.#emit);
      } else {
        // A last event without its blank line may still be the upstream's usage. A decoder
        // that breaks on it (it may be what broke the stream) changes nothing now.
        try {
          this.#splitter.end(this.#onSse);
        } catch { /* the stream has failed already */ }
      }
    }
    const cost = this.#meter.report();
    if (this.#pass) this.#out += this.#pass.end(cost, this.#error);
    else if (this.#encoder) {
      if (this.#error) this.#out += this.#encoder.event(this.#error);
      this.#out += this.#encoder.event({ type: "cost", cost });
    }
    return { text: this.#take(), cost };
  }

  #take(): string {
    const s = this.#out;
    this.#out = "";
    return s;
  }
}

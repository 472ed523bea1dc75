/**
 * Stop sequences the gateway keeps itself, for a model that takes none (OpenAI's reasoning
 * models refuse `stop`, and the catalogue lists it for them as unsupported, so a transcoded
 * request goes without). Without this a client's stop sequence would be dropped and the
 * answer run past it. The text is scanned as it streams: text that may be the start of a stop
 * sequence is held back until the next delta settles it; at a match the text ends there and
 * the call finishes as `stop_sequence`. The upstream's stream is still read to its end, but
 * only its usage passes on (what it generated is what it bills). A citation waits until the
 * text it spans has gone out: one over text held back, then cut at a stop, is dropped (its
 * span would reach past the answer's text).
 */
import type { Event } from "../events/event.ts";
import type { Emit, StreamDecoder } from "./codec.ts";

type Citation = Event & { type: "citation" };

export class StopScanner {
  readonly #stops: string[];
  /** Text not yet passed on: it may be the start of a stop sequence. */
  #held = "";
  #matched: string | undefined;
  #finished = false;
  /** The open text block's length as passed on, and the citations still past its end. */
  #length = 0;
  #cites: Citation[] = [];

  constructor(stops: readonly string[]) {
    this.#stops = stops.filter((s) => s !== "");
  }

  /** `emit` with the stop sequences applied. */
  wrap(emit: Emit): Emit {
    return (e) => this.#event(e, emit);
  }

  /** The upstream ended: the finish of a call that stopped at a sequence. */
  end(emit: Emit): void {
    if (this.#matched !== undefined && !this.#finished) {
      this.#finished = true;
      emit({ type: "finish", reason: "stop_sequence", stopSequence: this.#matched });
    }
  }

  #event(e: Event, emit: Emit): void {
    if (this.#matched !== undefined) {
      // Past the stop: only what the upstream bills still counts.
      if (e.type === "usage") emit(e);
      return;
    }
    if (e.type === "text_delta") return this.#text(e.delta, emit);
    if (e.type === "text_start") {
      this.#length = 0;
      this.#cites = [];
    }
    if (e.type === "citation") {
      this.#cites.push(e);
      return this.#citesWithin(emit);
    }
    if (e.type === "text_end") {
      if (this.#held !== "") this.#out(this.#held, emit);
      this.#held = "";
      this.#citesWithin(emit);
      this.#cites = []; // past the block's text: no span to show
    }
    emit(e);
  }

  /** Text passed on, and the citations whose span it completes. */
  #out(text: string, emit: Emit): void {
    emit({ type: "text_delta", delta: text });
    this.#length += text.length;
    this.#citesWithin(emit);
  }

  #citesWithin(emit: Emit): void {
    if (this.#cites.length === 0) return;
    const wait: Citation[] = [];
    for (const c of this.#cites) {
      if (c.end <= this.#length) emit(c);
      else wait.push(c);
    }
    this.#cites = wait;
  }

  #text(delta: string, emit: Emit): void {
    const text = this.#held + delta;
    let at = -1;
    let which = "";
    for (const s of this.#stops) {
      const i = text.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) [at, which] = [i, s];
    }
    if (at >= 0) {
      if (at > 0) this.#out(text.slice(0, at), emit);
      this.#cites = [];
      emit({ type: "text_end" });
      this.#held = "";
      this.#matched = which;
      return;
    }
    const keep = this.#partial(text);
    const out = text.slice(0, text.length - keep);
    this.#held = text.slice(text.length - keep);
    if (out !== "") this.#out(out, emit);
  }

  /** The length of the longest end of `text` that begins a stop sequence. */
  #partial(text: string): number {
    let best = 0;
    for (const s of this.#stops) {
      for (let n = Math.min(s.length - 1, text.length); n > best; n--) {
        if (text.endsWith(s.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}

/** A stream decoder with the stop sequences applied (itself when there are none). */
export function stoppingDecoder(d: StreamDecoder, stops?: readonly string[]): StreamDecoder {
  if (!stops || stops.every((s) => s === "")) return d;
  const scan = new StopScanner(stops);
  return {
    get complete() {
      return d.complete;
    },
    event: (ev, emit) => d.event(ev, scan.wrap(emit)),
    end: (emit) => {
      d.end(scan.wrap(emit));
      scan.end(emit);
    },
  };
}

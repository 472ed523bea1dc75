/**
 * A plan is everything needed to answer one request, built once per distinct request (and
 * cached by the server): either a whole body, or a list of pre-encoded SSE frames plus the
 * fault to inject. Playing a plan (driver.ts) is then cheap: enqueue bytes, count tokens.
 */
import type { Answer } from "./answer.ts";
import type { Controls } from "./controls.ts";
import { utf8 } from "./util.ts";

export interface Frame {
  bytes: Uint8Array<ArrayBuffer>;
  /** Output tokens this frame carries. */
  weight: number;
  /** A content event: counts towards `cut`/`fail`/`stall`, and waits `first`/`every`. */
  content: boolean;
  /** Sending this frame means the final usage was reported. */
  usage: boolean;
}

export type Fault = "cut" | "fail" | "stall";

export interface Plan {
  status: number;
  contentType: string;
  /** Headers beside the content type (a refusal's `retry-after`). */
  headers?: Record<string, string>;
  /** A whole (non-streaming or error) body. */
  body?: Uint8Array<ArrayBuffer>;
  /** SSE frames, for streams. */
  frames?: Frame[];
  fault?: Fault;
  /** Frame index at which the fault fires (streams). */
  faultAt: number;
  /** What `fail` sends (streams). */
  failBytes?: Uint8Array<ArrayBuffer>;
  firstMs: number;
  everyMs: number;
  /** Content events of the answer (a whole body waits as if it streamed them). */
  contentCount: number;
  inputTokens: number;
  outputTokens: number;
  usageReported: boolean;
  /** Outcome of a whole body sent in full. */
  outcome: "completed" | "error";
}

/** The parts a wire format contributes to a streaming plan. */
export interface StreamParts {
  frames: Frame[];
  /** Index of the first frame after all content (finish, usage, terminal events). */
  tailStart: number;
  /** The in-stream error, given how many frames were sent before it. */
  fail(sent: number): string;
}

/** A frame builder that charges hidden reasoning to the first content frame. */
export class Frames {
  readonly list: Frame[] = [];
  #hidden: number;

  constructor(hiddenReasoning: number) {
    this.#hidden = hiddenReasoning;
  }

  meta(text: string, usage = false): void {
    this.list.push({ bytes: utf8(text), weight: 0, content: false, usage });
  }

  content(text: string): void {
    const weight = 1 + this.#hidden;
    this.#hidden = 0;
    this.list.push({ bytes: utf8(text), weight, content: true, usage: false });
  }

  /** Hidden reasoning not yet charged (no content frame at all) goes on the last frame. */
  finish(): Frame[] {
    if (this.#hidden > 0 && this.list.length > 0) {
      this.list[this.list.length - 1].weight += this.#hidden;
    }
    this.#hidden = 0;
    return this.list;
  }
}

const SSE = "text/event-stream; charset=utf-8";
const JSON_TYPE = "application/json";

/** A whole JSON body plan. */
export function wholePlan(
  status: number,
  json: string,
  c: Controls,
  a: Pick<Plan, "firstMs" | "everyMs" | "contentCount" | "inputTokens" | "outputTokens">,
  usageReported: boolean,
): Plan {
  const fault: Fault | undefined = c.cut !== undefined
    ? "cut"
    : c.stall !== undefined
    ? "stall"
    : undefined;
  return {
    status,
    contentType: JSON_TYPE,
    body: utf8(json),
    fault,
    faultAt: 0,
    ...a,
    usageReported,
    outcome: status < 400 ? "completed" : "error",
  };
}

/** An error plan: the vendor's error body, sent at once. */
export function errorPlan(status: number, json: string, inputTokens = 0): Plan {
  return {
    status,
    contentType: JSON_TYPE,
    // Vendors say how long to wait on a rate limit or an overload (OpenAI in ms as well).
    ...(status === 429 || status === 503 || status === 529
      ? { headers: { "retry-after": "2", "retry-after-ms": "1500" } }
      : {}),
    body: utf8(json),
    faultAt: 0,
    firstMs: 0,
    everyMs: 0,
    contentCount: 0,
    inputTokens,
    outputTokens: 0,
    usageReported: false,
    outcome: "error",
  };
}

/** A streaming plan from a format's frames and the request's controls. */
export function streamPlan(
  parts: StreamParts,
  c: Controls,
  answer: Answer,
  delays: { firstMs: number; everyMs: number },
): Plan {
  const { frames, tailStart } = parts;
  const contentAt: number[] = [];
  for (let i = 0; i < frames.length; i++) if (frames[i].content) contentAt.push(i);
  const fault: Fault | undefined = c.cut !== undefined
    ? "cut"
    : c.fail !== undefined
    ? "fail"
    : c.stall !== undefined
    ? "stall"
    : undefined;
  const k = c.cut ?? c.fail ?? c.stall ?? 0;
  const faultAt = k < contentAt.length ? contentAt[k] : tailStart;
  return {
    status: 200,
    contentType: SSE,
    frames,
    fault,
    faultAt,
    failBytes: fault === "fail" ? utf8(parts.fail(faultAt)) : undefined,
    ...delays,
    contentCount: contentAt.length,
    inputTokens: answer.usage.input,
    outputTokens: answer.usage.output,
    usageReported: false,
    outcome: "completed",
  };
}

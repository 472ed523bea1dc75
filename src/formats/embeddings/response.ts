/**
 * The embeddings answer: the upstream list read defensively (every vector present once, in
 * input order), converted to the encoding the client asked for, with the gateway's usage.
 */
import { GatewayError } from "../../http/gateway_error.ts";
import type { EncodingFormat } from "./request.ts";
import { reportedCost } from "../usage.ts";

export interface UpstreamEmbeddings {
  /** In input order; each a float array or a base64 float32 string, as the upstream sent it. */
  vectors: (number[] | string)[];
  /** Prompt tokens the provider reported, if it did. */
  promptTokens?: number;
  /** The provider's own cost in USD (OpenRouter `usage.cost`), if reported. */
  costUsd?: string;
}

const invalidAnswer = () => new GatewayError(502, "the provider returned an invalid answer");

export function decodeEmbeddingsBody(json: unknown, items: number): UpstreamEmbeddings {
  if (typeof json !== "object" || json === null) throw invalidAnswer();
  const j = json as Record<string, unknown>;
  if (j.error !== undefined && j.error !== null) {
    throw new GatewayError(502, "the provider failed to compute the embeddings");
  }
  if (!Array.isArray(j.data) || j.data.length !== items) throw invalidAnswer();
  const vectors: (number[] | string)[] = new Array(items);
  j.data.forEach((d: unknown, i: number) => {
    if (typeof d !== "object" || d === null) throw invalidAnswer();
    const e = d as Record<string, unknown>;
    const index = e.index === undefined ? i : e.index;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= items) {
      throw invalidAnswer();
    }
    if (vectors[index as number] !== undefined) throw invalidAnswer();
    const v = e.embedding;
    if (typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "number"))) {
      vectors[index as number] = v;
    } else throw invalidAnswer();
  });
  for (let i = 0; i < items; i++) if (vectors[i] === undefined) throw invalidAnswer();
  const out: UpstreamEmbeddings = { vectors };
  const u = j.usage;
  if (typeof u === "object" && u !== null) {
    const usage = u as Record<string, unknown>;
    const pt = usage.prompt_tokens ?? usage.total_tokens;
    if (Number.isInteger(pt) && (pt as number) >= 0) out.promptTokens = pt as number;
    const cost = reportedCost(usage);
    if (cost !== undefined && !cost.startsWith("-")) out.costUsd = cost;
  }
  return out;
}

/** Little-endian float32 bytes as base64 (what the OpenAI API sends for `base64`). */
export function floatsToBase64(v: number[]): string {
  const f = new Float32Array(v);
  return new Uint8Array(f.buffer).toBase64();
}

export function base64ToFloats(s: string): number[] {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.fromBase64(s);
  } catch {
    throw invalidAnswer();
  }
  if (bytes.byteLength % 4 !== 0) throw invalidAnswer();
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = dv.getFloat32(i * 4, true);
  return out;
}

export function toEncoding(v: number[] | string, enc: EncodingFormat): number[] | string {
  if (enc === "base64") return typeof v === "string" ? v : floatsToBase64(v);
  return typeof v === "string" ? base64ToFloats(v) : v;
}

export interface EmbeddingsUsage {
  prompt_tokens: number;
  total_tokens: number;
  cost: number;
  cost_details: Record<string, number>;
}

export function encodeEmbeddingsResponse(
  up: UpstreamEmbeddings,
  enc: EncodingFormat,
  model: string,
  usage: EmbeddingsUsage | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    object: "list",
    data: up.vectors.map((v, index) => ({
      object: "embedding",
      index,
      embedding: toEncoding(v, enc),
    })),
    model,
  };
  if (usage) out.usage = usage;
  return out;
}

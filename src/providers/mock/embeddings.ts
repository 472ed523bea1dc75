/**
 * OpenAI embeddings, shaped as ../shared/fixtures/upstream/openai/embeddings-*.json: one
 * unit-length vector per input, derived from a hash of that input, so equal inputs embed
 * equally. Values are float32 (what the real API computes); `encoding_format: "base64"`
 * sends their little-endian bytes, as the official SDKs request by default.
 */
import { base64, fnv1a, tokensOf, xorshift } from "./util.ts";

/** Default vector length. */
const dimsDefault = 768;
/** Largest `dimensions` accepted (text-embedding-3-large goes to 3072). */
const dimsMax = 8192;

type Input = string | number[];

/** The inputs of a request, or a message saying why they are invalid. */
export function embeddingInputs(input: unknown): Input[] | string {
  const isTokens = (v: unknown): v is number[] =>
    Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x));
  if (typeof input === "string") return [input];
  if (isTokens(input)) return [input];
  if (Array.isArray(input) && input.length > 0) {
    if (input.every((x) => typeof x === "string" || isTokens(x))) return input as Input[];
  }
  return "'input' must be a string, an array of strings, or an array of token arrays.";
}

/** `dimensions`, or a message saying why it is invalid. */
export function embeddingDims(v: unknown): number | string {
  if (v === undefined || v === null) return dimsDefault;
  if (Number.isInteger(v) && (v as number) >= 1 && (v as number) <= dimsMax) return v as number;
  return `Invalid value for 'dimensions': expected an integer between 1 and ${dimsMax}.`;
}

/** The deterministic unit vector of one input, as float32. */
export function embed(input: Input, dims: number): Float32Array {
  let x = fnv1a(typeof input === "string" ? input : input.join(",")) || 1;
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    x = xorshift(x);
    const f = x / 2147483648 - 1;
    v[i] = f;
    norm += f * f;
  }
  const k = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dims; i++) v[i] *= k;
  return v;
}

function floats(v: Float32Array): string {
  let s = "[";
  for (let i = 0; i < v.length; i++) {
    if (i > 0) s += ",";
    s += String(Number(v[i].toPrecision(9)));
  }
  return s + "]";
}

function bytesLE(v: Float32Array): Uint8Array {
  const out = new Uint8Array(v.length * 4);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < v.length; i++) dv.setFloat32(i * 4, v[i], true);
  return out;
}

export function inputTokens(inputs: Input[]): number {
  let n = 0;
  for (const x of inputs) n += typeof x === "string" ? tokensOf(x.length) : x.length;
  return n;
}

export function embeddingsBody(
  inputs: Input[],
  dims: number,
  model: string,
  b64: boolean,
  withUsage: boolean,
): string {
  let data = "";
  inputs.forEach((x, i) => {
    const v = embed(x, dims);
    const e = b64 ? JSON.stringify(base64(bytesLE(v))) : floats(v);
    data += `${i > 0 ? "," : ""}{"object":"embedding","index":${i},"embedding":${e}}`;
  });
  const n = inputTokens(inputs);
  const usage = withUsage ? `,"usage":{"prompt_tokens":${n},"total_tokens":${n}}` : "";
  return `{"object":"list","data":[${data}],"model":${JSON.stringify(model)}${usage}}`;
}

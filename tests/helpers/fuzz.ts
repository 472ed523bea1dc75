/**
 * Structure-aware request fuzzing: real client requests (the recorded SDK, Claude Code and
 * Codex bodies in the shared fixtures, and bodies of the project's own) broken one to three
 * ways at a time, sent to a real gateway, and every answer held to the contract — no 5xx of
 * the request's making, the endpoint's own error envelope, no hang, the money settled, and an
 * accepted request sent upstream in a shape the upstream's API defines.
 */
import { type FaultGateway, readSse } from "./faults.ts";
import { checkInvariants } from "./gateway.ts";
import { messagesErrorType } from "../../src/http/envelopes.ts";

type Obj = Record<string, unknown>;
export type Endpoint = "chat" | "messages" | "responses" | "embeddings" | "images";

export const PATH: Record<Endpoint, string> = {
  chat: "/v1/chat/completions",
  messages: "/v1/messages",
  responses: "/v1/responses",
  embeddings: "/v1/embeddings",
  images: "/v1/images/generations",
};

export interface Seed {
  name: string;
  endpoint: Endpoint;
  body: Obj;
}

/** The models each endpoint is tried with: one per upstream protocol it can be routed to. */
const MODELS: Record<Endpoint, string[]> = {
  chat: ["openai/gpt-4.1-mini", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-flash"],
  messages: [
    "anthropic/claude-sonnet-4.5",
    "anthropic/claude-opus-4.6",
    "openai/gpt-4.1-mini",
    "openai/gpt-5.1-codex",
    "google/gemini-2.5-flash",
  ],
  responses: [
    "openai/gpt-5.1-codex",
    "openai/gpt-4.1-mini",
    "anthropic/claude-sonnet-4.5",
    "google/gemini-2.5-flash",
  ],
  embeddings: ["openai/text-embedding-3-small", "baai/bge-base-en-v1.5"],
  images: ["openai/gpt-image-1", "google/gemini-2.5-flash-image"],
};

const FIXTURES = new URL("../../../shared/fixtures/clients/", import.meta.url);

/** Whether the recorded client requests are beside the repository (CI has them). */
export const recordedClients = (() => {
  try {
    return Deno.statSync(FIXTURES).isDirectory;
  } catch {
    return false;
  }
})();

function endpointOf(path: string): Endpoint | undefined {
  return (Object.keys(PATH) as Endpoint[]).find((e) => PATH[e] === path);
}

/**
 * The recorded client requests (beside the repository, where present), and bodies of the
 * project's own, each with every model.
 */
export async function loadSeeds(): Promise<Seed[]> {
  const raw: { name: string; endpoint: Endpoint; body: Obj }[] = [];
  const read = async (f: string) => {
    try {
      return JSON.parse(await Deno.readTextFile(new URL(f, FIXTURES)));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  };
  const sdk = await read("sdks/requests.json");
  (sdk?.requests as { path: string; body: Obj | null }[] | undefined)?.forEach((r, i) => {
    const e = endpointOf(r.path);
    if (e && r.body) raw.push({ name: `sdk#${i}`, endpoint: e, body: r.body });
  });
  for (
    const f of [
      "claude-code/messages-turn1.request.json",
      "claude-code/messages-turn2-tool-result.request.json",
      "codex/responses-turn1.request.json",
      "codex/responses-turn2-function-call-output.request.json",
    ]
  ) {
    const r = await read(f);
    if (!r) continue;
    raw.push({
      name: f.replace(/\.request\.json$/, ""),
      endpoint: endpointOf(r.path)!,
      body: r.body,
    });
  }
  raw.push(...OWN);
  const seeds: Seed[] = [];
  for (const r of raw) {
    for (const model of MODELS[r.endpoint]) {
      seeds.push({ name: `${r.name}@${model}`, endpoint: r.endpoint, body: { ...r.body, model } });
    }
  }
  return seeds;
}

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/** Bodies the recorded clients do not show: tools, tool loops, images, files, options. */
const OWN: { name: string; endpoint: Endpoint; body: Obj }[] = [
  {
    name: "chat-tools",
    endpoint: "chat",
    body: {
      messages: [
        { role: "system", content: "be brief" },
        {
          role: "user",
          content: [{ type: "text", text: "weather?" }, {
            type: "image_url",
            image_url: { url: `data:image/png;base64,${PNG_1PX}` },
          }],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
          }],
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
      tools: [{
        type: "function",
        function: {
          name: "get_weather",
          description: "weather",
          parameters: { type: "object", properties: { city: { type: "string" } } },
        },
      }],
      tool_choice: "auto",
      temperature: 0.5,
      top_p: 0.9,
      max_tokens: 32,
      stop: ["END"],
      response_format: { type: "json_object" },
      stream: true,
      stream_options: { include_usage: true },
    },
  },
  {
    name: "messages-tools",
    endpoint: "messages",
    body: {
      max_tokens: 64,
      system: [{ type: "text", text: "be brief", cache_control: { type: "ephemeral" } }],
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "weather?" }, {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: PNG_1PX },
          }, {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQK" },
          }],
        },
        {
          role: "assistant",
          content: [{
            type: "tool_use",
            id: "toolu_1",
            name: "get_weather",
            input: { city: "Oslo" },
          }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }],
        },
      ],
      tools: [{
        name: "get_weather",
        description: "weather",
        input_schema: { type: "object", properties: { city: { type: "string" } } },
      }],
      tool_choice: { type: "auto" },
      temperature: 0.5,
      stop_sequences: ["END"],
      stream: true,
    },
  },
  {
    name: "responses-tools",
    endpoint: "responses",
    body: {
      instructions: "be brief",
      input: [
        {
          role: "user",
          content: [{ type: "input_text", text: "weather?" }, {
            type: "input_image",
            image_url: `data:image/png;base64,${PNG_1PX}`,
          }, {
            type: "input_file",
            filename: "a.pdf",
            file_data: "data:application/pdf;base64,JVBERi0xLjQK",
          }],
        },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "sunny" },
      ],
      tools: [{
        type: "function",
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
      }],
      text: { format: { type: "text" } },
      max_output_tokens: 64,
      temperature: 0.5,
      store: false,
    },
  },
  {
    name: "embeddings-batch",
    endpoint: "embeddings",
    body: { input: ["a", "b", "c"], dimensions: 256, user: "u1" },
  },
  {
    name: "images-options",
    endpoint: "images",
    body: { prompt: "a red dot", n: 2, size: "1024x1024", quality: "low", background: "auto" },
  },
];

// ---- mutation --------------------------------------------------------------------------------

export interface Rng {
  next(): number;
  int(lo: number, hi: number): number;
}

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[r.int(0, xs.length - 1)];

/** Strings that break naive handling: empty, whitespace, unicode edge cases, huge. */
const ODD_STRINGS = [
  "",
  " ",
  "\u0000",
  "\ud800",
  "\udfff\ud800",
  "💥".repeat(3),
  "\u202e\u2028\u2029",
  "e\u0301\u200d",
  "null",
  "true",
  "-1",
  "constructor",
  "__proto__",
  "x".repeat(70_000),
];

const ODD_NUMBERS = [0, -1, 1.5, -0.5, 1e308, -1e308, 2 ** 53 + 1, 4294967297, 1e-320, 3];

const ODD_MODELS = [
  "openai/",
  "/gpt-4.1-mini",
  "OPENAI/GPT-4.1-MINI",
  "openai/gpt-4.1-mini ",
  " openai/gpt-4.1-mini",
  "openai//gpt-4.1-mini",
  "openai/gpt-4.1-mini:batch",
  "openai/gpt-4.1-mini:free",
  "openai/gpt-4.1-mini:nitro",
  "openai/gpt-4.1-mini:online",
  "anthropic/claude-sonnet-4.5:thinking",
  "~openai/gpt-latest",
  "~anthropic/claude-sonnet-latest",
  "~anthropic/claude-opus-latest",
  "~nobody/none-latest",
  "gpt-4o",
  "claude-sonnet-4-5-20250929",
  "../../etc/passwd",
  "openai/gpt-4.1-mini?x=1",
  "openai/gpt-4.1-mini#x",
  "openai/gpt\u00a04.1",
  "openai/text-embedding-3-small",
  "openai/gpt-image-1",
  "baai/bge-base-en-v1.5",
  "google/gemini-2.5-flash-image",
];

const ODD_DATA_URLS = [
  "data:",
  "data:,",
  "data:image/png;base64,",
  "data:image/png;base64,!!!not-base64!!!",
  "data:image/png;base64," + PNG_1PX + "====",
  "data:image/svg+xml;base64,PHN2Zy8+",
  "data:text/html,<b>x</b>",
  "data:image/png," + PNG_1PX,
  "data:;base64," + PNG_1PX,
  "data:image/PNG;BASE64," + PNG_1PX,
  "data:application/octet-stream;base64," + PNG_1PX,
  "data:image/png;charset=utf-8;base64," + PNG_1PX,
  "DATA:image/png;base64," + PNG_1PX,
  "https://",
  "http://[::1",
  "ftp://example.com/a.png",
  "javascript:alert(1)",
  "https://example.com/a.png",
];

const UNKNOWN_TYPES = [
  "foo_bar",
  "",
  "TEXT",
  "text ",
  "image",
  "image_url",
  "input_text",
  "output_text",
  "tool_use",
  "tool_result",
  "function_call",
  "function_call_output",
  "reasoning",
  "thinking",
  "redacted_thinking",
  "refusal",
  "input_audio",
  "file",
  "input_file",
  "document",
  "item_reference",
  "web_search_call",
  "custom_tool_call",
  "mcp_call",
  "computer_call",
  "server_tool_use",
  "search_result",
  "container_upload",
];

/** Values that some format takes for a field of this name: legal somewhere, odd here. */
const PLAUSIBLE: Record<string, unknown[]> = {
  tool_choice: [
    "none",
    "required",
    "auto",
    "any",
    { type: "function", function: { name: "nope" } },
    { type: "function", function: { name: "get_weather" } },
    { type: "function", name: "get_weather" },
    { type: "tool", name: "nope" },
    { type: "tool", name: "get_weather" },
    { type: "any", disable_parallel_tool_use: true },
    { type: "none" },
    { type: "allowed_tools", mode: "auto", tools: [] },
    { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "nope" }] },
    { type: "web_search_preview" },
  ],
  name: [
    "a.b",
    "a b",
    "x".repeat(80),
    "x".repeat(64) + "y",
    "get-weather",
    "функция",
    "a/b",
    "Bash",
  ],
  reasoning_effort: ["none", "minimal", "low", "high", "xhigh", "max"],
  effort: ["none", "minimal", "low", "high", "xhigh", "max"],
  thinking: [
    { type: "enabled", budget_tokens: 1024 },
    { type: "enabled", budget_tokens: 0 },
    { type: "enabled", budget_tokens: 1e9 },
    { type: "enabled" },
    { type: "disabled" },
    { type: "adaptive" },
    { type: "adaptive", display: "summarized" },
  ],
  reasoning: [
    { effort: "minimal" },
    { effort: "xhigh", summary: "detailed" },
    { effort: "none" },
    { max_tokens: 100 },
    { enabled: true },
    { exclude: true },
    { summary: "auto" },
    {},
  ],
  response_format: [
    { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } },
    {
      type: "json_schema",
      json_schema: {
        name: "x",
        strict: true,
        schema: {
          type: "object",
          properties: { a: { type: "string" } },
          required: ["a"],
          additionalProperties: false,
        },
      },
    },
    { type: "json_schema", json_schema: { name: "x" } },
    { type: "json_schema" },
    { type: "text" },
    { type: "json_object" },
  ],
  text: [
    { format: { type: "json_schema", name: "x", schema: { type: "object" } } },
    { format: { type: "json_schema", name: "x" } },
    { format: { type: "json_object" } },
    { format: { type: "text" }, verbosity: "high" },
    { verbosity: "minimal" },
  ],
  output_format: [
    { type: "json_schema", schema: { type: "object" } },
    { type: "json_schema" },
    "png",
    "webp",
    "gif",
  ],
  output_config: [{ effort: "low" }, { effort: "max" }, {
    format: { type: "json_schema", schema: { type: "object" } },
  }, {}],
  stop: [["\n"], ["a", "b", "c", "d", "e"], [""], "END", [" "], []],
  stop_sequences: [["\n"], ["a", "b", "c", "d", "e"], [""], [" "], []],
  n: [2, 0, 128, 1000, 2 ** 53],
  cache_control: [{ type: "ephemeral", ttl: "1h" }, { type: "ephemeral", ttl: "5m" }, {
    type: "persistent",
  }],
  metadata: [{ user_id: "u" }, { user_id: 5 }, {}, { a: "b" }],
  user: ["u", ""],
  seed: [1, -1, 2 ** 40],
  temperature: [0, 2, 1.0000001, 3, -0.1],
  top_p: [0, 1, 0.0001],
  top_k: [0, 1, 1000],
  frequency_penalty: [-2, 2, 2.5],
  presence_penalty: [-2, 2, -2.5],
  logprobs: [true, false],
  top_logprobs: [0, 5, 21],
  modalities: [["text", "image"], ["audio"], ["text"]],
  parallel_tool_calls: [false, true],
  include: [["reasoning.encrypted_content"], ["message.input_image.image_url"], ["foo"], []],
  truncation: ["auto", "disabled", "x"],
  service_tier: ["flex", "priority", "auto", "x"],
  prompt_cache_key: ["", "k".repeat(100)],
  detail: ["low", "high", "auto", "original", "x"],
  media_type: [
    "image/gif",
    "image/webp",
    "image/heic",
    "application/pdf",
    "text/plain",
    "image/svg+xml",
  ],
  max_completion_tokens: [1, 16, 0],
  max_output_tokens: [1, 16, 0, 15],
  instructions: ["", null, "be brief"],
  encoding_format: ["base64", "float", "uint8"],
  dimensions: [1, 256, 768, 3072, 100000],
  size: ["auto", "1x1", "1024x1024", "99999x99999", "big"],
  quality: ["low", "medium", "high", "hd", "standard", "auto"],
  aspect_ratio: ["1:1", "16:9", "0:0", "x"],
  resolution: ["512", "1K", "4K", "8K"],
  input_references: [
    ["https://example.com/a.png"],
    [],
    Array(17).fill("https://example.com/a.png"),
  ],
  background: ["transparent", "opaque", "auto", "x"],
  store: [true, false, "yes"],
  previous_response_id: ["resp_123", ""],
  stream_options: [{ include_usage: true }, { include_usage: false }, {}, {
    include_obfuscation: false,
  }],
  web_search_options: [{}, { search_context_size: "high" }],
  plugins: [[{ id: "web" }], []],
  provider: [{ order: ["openai"] }, { only: ["x"] }],
  models: [["openai/gpt-4o"], []],
  is_error: [true, "yes"],
  strict: [true, false, "yes"],
  input_schema: [{ type: "object" }, {}, { type: "string" }, { type: "object", properties: null }],
  parameters: [{ type: "object" }, {}, { type: "string" }, { type: "object", properties: [] }],
};

type PathStep = string | number;

/** Every path into `v` (objects and arrays), the root `[]` included. */
function paths(v: unknown, at: PathStep[] = [], out: PathStep[][] = []): PathStep[][] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out));
  else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  }
  return out;
}

function getAt(v: unknown, p: PathStep[]): unknown {
  let cur = v;
  for (const s of p) cur = (cur as Record<PathStep, unknown>)?.[s];
  return cur;
}

function setAt(root: unknown, p: PathStep[], value: unknown): void {
  const parent = getAt(root, p.slice(0, -1)) as Record<PathStep, unknown>;
  parent[p.at(-1)!] = value;
}

function deleteAt(root: unknown, p: PathStep[]): void {
  const parent = getAt(root, p.slice(0, -1));
  if (Array.isArray(parent)) parent.splice(p.at(-1) as number, 1);
  else delete (parent as Obj)[p.at(-1) as string];
}

/** The replacement values of a type change or odd value. */
function oddValue(r: Rng, was: unknown): unknown {
  switch (r.int(0, 9)) {
    case 0:
      return null;
    case 1:
      return pick(r, ODD_STRINGS);
    case 2:
      return [];
    case 3:
      return {};
    case 4:
      return pick(r, ODD_NUMBERS);
    case 5:
      return typeof was === "boolean" ? String(was) : !was;
    case 6:
      return typeof was === "string" ? [was] : String(was);
    case 7:
      return typeof was === "string" ? { text: was, type: "text" } : [was];
    case 8:
      return typeof was === "number" ? -was : typeof was === "string" ? Number(was) || 7 : was;
    default:
      return deep(r.int(20, 150), r.next() < 0.5);
  }
}

function deep(n: number, arrays: boolean): unknown {
  let v: unknown = "x";
  for (let i = 0; i < n; i++) v = arrays ? [v] : { a: v };
  return v;
}

/** One structural change to `body` (in place); returns what it did. */
export function mutate(r: Rng, body: Obj, endpoint: Endpoint): string {
  const all = paths(body).filter((p) => p.length > 0);
  if (all.length === 0) {
    body.model = pick(r, ODD_MODELS);
    return `model = ${JSON.stringify(body.model)} in an empty body`;
  }
  const p = pick(r, all);
  const at = p.join(".");
  const was = getAt(body, p);
  const key = p.at(-1);
  switch (r.int(0, 19)) {
    case 16:
    case 17:
    case 18:
    case 19: {
      // A field the formats define, set to a value that is legal somewhere but odd here.
      const known = all.filter((q) => String(q.at(-1)) in PLAUSIBLE);
      const q = known.length > 0 && r.next() < 0.5
        ? pick(r, known)
        : [pick(r, Object.keys(PLAUSIBLE))];
      const v = structuredClone(pick(r, PLAUSIBLE[String(q.at(-1))]));
      setAt(body, q, v);
      return `${q.join(".")} = ${JSON.stringify(v)?.slice(0, 80)}`;
    }
    case 14:
    case 15: {
      // An odd element in an array (null, a string, a number where objects are).
      const arrays = all.filter((q) => Array.isArray(getAt(body, q)));
      if (arrays.length === 0) return mutate(r, body, endpoint);
      const q = pick(r, arrays);
      const xs = getAt(body, q) as unknown[];
      const v = pick(r, [null, "x", 0, [], true, { type: null }, { type: 1 }, [null]]);
      xs.splice(r.int(0, xs.length), 0, v);
      return `insert ${JSON.stringify(v)} into ${q.join(".")}`;
    }
    case 0:
    case 1:
      deleteAt(body, p);
      return `delete ${at}`;
    case 2:
    case 3: {
      const v = oddValue(r, was);
      setAt(body, p, v);
      return `${at} = ${JSON.stringify(v)?.slice(0, 60)}`;
    }
    case 4: {
      // An enum-like field gets another value (known in some other format, or none at all).
      const typed = all.filter((q) =>
        ["type", "role", "tool_choice", "status", "detail"]
          .includes(String(q.at(-1)))
      );
      if (typed.length === 0) return mutate(r, body, endpoint);
      const q = pick(r, typed);
      const v = q.at(-1) === "role"
        ? pick(r, ["system", "developer", "user", "assistant", "tool", "function", "model", ""])
        : pick(r, UNKNOWN_TYPES);
      setAt(body, q, v);
      return `${q.join(".")} = ${JSON.stringify(v)}`;
    }
    case 5: {
      // Duplicate an array element (two tools of one name, two results of one call, …).
      const arrays = all.filter((q) =>
        Array.isArray(getAt(body, q)) &&
        (getAt(body, q) as unknown[]).length > 0
      );
      if (arrays.length === 0) return mutate(r, body, endpoint);
      const q = pick(r, arrays);
      const xs = getAt(body, q) as unknown[];
      const i = r.int(0, xs.length - 1);
      xs.splice(r.int(0, xs.length), 0, structuredClone(xs[i]));
      return `duplicate ${q.join(".")}[${i}]`;
    }
    case 6:
      body.model = pick(r, ODD_MODELS);
      return `model = ${JSON.stringify(body.model)}`;
    case 7:
      body.stream = pick(r, ["true", "false", 1, 0, null, {}, true, false]);
      return `stream = ${JSON.stringify(body.stream)}`;
    case 8: {
      // An unknown field where an object is.
      const objs = all.filter((q) => isObj(getAt(body, q)));
      const q = objs.length > 0 && r.next() < 0.7 ? pick(r, objs) : [];
      const o = (q.length === 0 ? body : getAt(body, q)) as Obj;
      const k = pick(r, ["foo", "cache_control", "id", "extra_body", "$schema", "name", "index"]);
      o[k] = oddValue(r, undefined);
      return `add ${[...q, k].join(".")}`;
    }
    case 9:
      return mutateUrls(r, body, all) ?? mutate(r, body, endpoint);
    case 10:
      return addOrphan(r, body, endpoint);
    case 11: {
      // A number somewhere becomes odd (negative, fractional, huge).
      const nums = all.filter((q) => typeof getAt(body, q) === "number");
      const q = nums.length > 0 ? pick(r, nums) : null;
      const field = q ?? [pick(r, numericFields(endpoint))];
      const v = pick(r, ODD_NUMBERS);
      setAt(body, field, r.next() < 0.2 ? String(v) : v);
      return `${field.join(".")} = ${v}`;
    }
    case 12: {
      // Emptied containers: messages/input/tools/content.
      const cs = all.filter((q) =>
        ["messages", "input", "tools", "content", "system", "stop"]
          .includes(String(q.at(-1)))
      );
      if (cs.length === 0) return mutate(r, body, endpoint);
      const q = pick(r, cs);
      const v = pick(r, [[], "", {}, [""], [{}], [null]]);
      setAt(body, q, v);
      return `${q.join(".")} = ${JSON.stringify(v)}`;
    }
    default: {
      if (typeof was !== "string" || typeof key !== "string") return mutate(r, body, endpoint);
      const v = pick(r, ODD_STRINGS.slice(0, -1)) + was;
      setAt(body, p, v);
      return `${at} prefixed`;
    }
  }
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function numericFields(e: Endpoint): string[] {
  switch (e) {
    case "chat":
      return ["max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "seed"];
    case "messages":
      return ["max_tokens", "temperature", "top_p", "top_k"];
    case "responses":
      return ["max_output_tokens", "temperature", "top_p", "top_logprobs", "max_tool_calls"];
    case "embeddings":
      return ["dimensions"];
    case "images":
      return ["n", "seed"];
  }
}

/** An odd data URL (or link) where an image or file is, or a new image part. */
function mutateUrls(r: Rng, body: Obj, all: PathStep[][]): string | undefined {
  const urls = all.filter((q) => {
    const k = String(q.at(-1));
    return ["url", "image_url", "file_data", "data"].includes(k) &&
      typeof getAt(body, q) === "string";
  });
  if (urls.length === 0) return undefined;
  const q = pick(r, urls);
  const k = String(q.at(-1));
  const v = k === "data"
    ? pick(r, ["", "!!!", "AAAA", PNG_1PX.slice(0, 10)])
    : pick(r, ODD_DATA_URLS);
  setAt(body, q, v);
  return `${q.join(".")} = ${v.slice(0, 40)}`;
}

/** A tool result without its call, or a call without its result, at the end of the history. */
function addOrphan(r: Rng, body: Obj, e: Endpoint): string {
  const id = pick(r, ["call_orphan", "toolu_orphan", "", "call_1", "toolu_1"]);
  if (e === "chat" && Array.isArray(body.messages)) {
    body.messages.push(
      r.next() < 0.5 ? { role: "tool", tool_call_id: id, content: "late" } : {
        role: "assistant",
        tool_calls: [{ id, type: "function", function: { name: "nope", arguments: "{" } }],
      },
    );
    return `orphan chat tool message ${id}`;
  }
  if (e === "messages" && Array.isArray(body.messages)) {
    body.messages.push(
      r.next() < 0.5
        ? { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "late" }] }
        : { role: "assistant", content: [{ type: "tool_use", id, name: "nope", input: {} }] },
    );
    return `orphan messages tool block ${id}`;
  }
  if (e === "responses") {
    const input = Array.isArray(body.input)
      ? body.input
      : [{ role: "user", content: String(body.input ?? "") }];
    input.push(
      r.next() < 0.5
        ? { type: "function_call_output", call_id: id, output: "late" }
        : { type: "function_call", call_id: id, name: "nope", arguments: "{" },
    );
    body.input = input;
    return `orphan responses item ${id}`;
  }
  return "nothing";
}

/**
 * A mock marker put in a prompt text, so the answer carries tool calls, reasoning, searches,
 * cache use, a cut-short finish — or, when `failing`, an upstream error or broken stream.
 */
export function steer(r: Rng, body: Obj, failing: boolean): string | undefined {
  const texts = paths(body).filter((q) => {
    const k = String(q.at(-1));
    return typeof getAt(body, q) === "string" &&
      (k === "text" || k === "content" || k === "input" || k === "prompt" ||
        k === "instructions" || typeof q.at(-1) === "number");
  });
  if (texts.length === 0) return undefined;
  const names = paths(body).filter((q) => q.at(-1) === "name" && typeof getAt(body, q) === "string")
    .map((q) => getAt(body, q) as string).filter((n) => /^[\w-]+$/.test(n));
  const keys = failing
    ? [
      pick(r, [
        "error=500",
        "error=502",
        "error=503",
        "error=529",
        "error=429",
        "error=400",
        "error=401",
        "error=403",
        "error=413",
        "cut=2",
        "fail=2",
        "overflow",
        "usage=none",
      ]),
    ]
    : [
      pick(r, ["tokens=1", "tokens=3", "tokens=40", "finish=length", "finish=content_filter"]),
      ...(names.length > 0 && r.next() < 0.6
        ? [`tool=${pick(r, names)}`, pick(r, ["tools=1", "tools=3"])]
        : []),
      ...(r.next() < 0.4 ? ["reasoning=6"] : []),
      ...(r.next() < 0.2 ? ["searches=1"] : []),
      ...(r.next() < 0.2 ? ["cache_read=4,cache_write=3"] : []),
    ];
  const marker = `[[mock:${keys.join(",")}]]`;
  const q = pick(r, texts);
  setAt(body, q, `${getAt(body, q)} ${marker}`);
  return marker;
}

// ---- the checks ------------------------------------------------------------------------------

const FAMILY: Record<Endpoint, "generic" | "messages" | "coded"> = {
  chat: "generic",
  responses: "generic",
  messages: "messages",
  embeddings: "coded",
  images: "coded",
};

/** What is wrong with an error body of `endpoint` at `status` (empty: nothing). */
export function envelopeProblems(endpoint: Endpoint, status: number, text: string): string[] {
  let body: Obj;
  try {
    body = JSON.parse(text);
  } catch {
    return [`error body is not JSON: ${text.slice(0, 120)}`];
  }
  const err = isObj(body.error) ? body.error : undefined;
  if (!err) return [`no error object: ${text.slice(0, 200)}`];
  const out: string[] = [];
  if (typeof err.message !== "string" || err.message === "") out.push("error.message");
  switch (FAMILY[endpoint]) {
    case "generic":
      if (Object.keys(body).join() !== "error") out.push(`top-level keys ${Object.keys(body)}`);
      if (err.code !== status) out.push(`error.code ${err.code} ≠ ${status}`);
      if (!isObj(err.metadata)) out.push("error.metadata not an object");
      break;
    case "messages":
      if (body.type !== "error") out.push(`type ${body.type}`);
      if (err.type !== messagesErrorType(status)) out.push(`error.type ${err.type} at ${status}`);
      break;
    case "coded":
      if (typeof err.type !== "string") out.push("error.type");
      if (typeof err.code !== "string") out.push("error.code");
      break;
  }
  return out.map((p) => `${p}: ${text.slice(0, 300)}`);
}

export interface Outcome {
  status: number;
  problems: string[];
  /** The upstream calls the request made. */
  upstream: { path: string; body: unknown }[];
  /** The error body, when the answer was one. */
  text?: string;
}

/** Sends one body and checks the answer, the money and the upstream body. */
export async function runCase(
  g: FaultGateway,
  key: string,
  accountId: string,
  endpoint: Endpoint,
  body: unknown,
  opts: { failing?: boolean; timeoutMs?: number } = {},
): Promise<Outcome> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const problems: string[] = [];
  const before = (await g.store.getAccount(accountId))!;
  const calls = g.mock.stats.total;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  let status = 0;
  let reported: number | undefined;
  let errorText: string | undefined;
  try {
    const res = await fetch(`${g.url}${PATH[endpoint]}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: ctl.signal,
    });
    status = res.status;
    const ct = res.headers.get("content-type") ?? "";
    if (res.status >= 400) {
      const text = errorText = await res.text();
      if (res.status >= 500 && !opts.failing) {
        problems.push(`a ${res.status}: ${text.slice(0, 300)}`);
      }
      if (!ct.includes("application/json")) problems.push(`error content-type ${ct}`);
      problems.push(...envelopeProblems(endpoint, res.status, text));
    } else if (ct.includes("text/event-stream")) {
      const sse = await readSse(res);
      if (!opts.failing) problems.push(...streamProblems(endpoint, sse.data));
      reported = reportedCost(endpoint, sse.data);
    } else {
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        problems.push(`200 body is not JSON: ${text.slice(0, 120)}`);
      }
      if (parsed !== undefined) {
        reported = costOf(parsed);
        problems.push(...answerProblems(endpoint, parsed, (body as Obj)?.model));
      }
    }
  } catch (e) {
    problems.push(ctl.signal.aborted ? `no answer within ${timeoutMs} ms` : `fetch: ${e}`);
  } finally {
    clearTimeout(timer);
  }
  await g.settled();
  await g.mock.idle();
  await g.settled();
  const after = (await g.store.getAccount(accountId))!;
  const held = after.held - await g.store.leased(accountId);
  if (held !== 0n) problems.push(`held ${held} after the answer`);
  const debited = before.balance - after.balance;
  if (status >= 400 && debited !== 0n) problems.push(`refused (${status}) yet debited ${debited}`);
  if (status === 200 && reported !== undefined) {
    // usage.cost is what was debited, in roubles (a float: within a nano-rouble or two).
    const said = BigInt(Math.round(reported * 1e9));
    const off = said - debited;
    if (off > 2n || off < -2n) problems.push(`usage.cost ${reported} but debited ${debited} nano`);
  }
  const made = g.mock.stats.total - calls;
  const upstream = g.mock.stats.calls.slice(g.mock.stats.calls.length - made)
    .map((c) => ({ path: c.path, body: c.body }));
  if (status === 200) {
    for (const u of upstream) {
      // A body passed through in the client's own format keeps what the client sent; only
      // what the gateway made of it is the gateway's.
      const own = `/v1/${PATH[endpoint].slice(4)}`;
      const inherited = new Set(
        upstreamProblems(own, body).map((p) => unindexed(p.slice(own.length))),
      );
      const passed = u.path.endsWith(PATH[endpoint].slice(3));
      problems.push(
        ...upstreamProblems(u.path, u.body).filter((p) => {
          const what = unindexed(p.slice(p.indexOf(": ")));
          // Transcoded, a fault of the client's own body (two tools of one name) is the
          // client's still; passed through, anything it sent is.
          return !inherited.has(what) || (!passed && !TRANSCODED_AS_SENT.test(what));
        }),
        ...blankOnly(u.path, u.body, body),
      );
    }
  }
  return { status, problems, upstream, text: errorText };
}

/** Faults of a client's body that a transcoding carries over as they were. */
const TRANSCODED_AS_SENT = /duplicate tool name/;

/**
 * A transcoded body with no messages where the client's held only blank text: the gateway
 * passes that on for the upstream's 400 to explain (see FINDINGS), which is not flagged;
 * any other empty `messages` is.
 */
function blankOnly(path: string, upstream: unknown, client: unknown): string[] {
  if (
    !path.endsWith("/messages") || !isObj(upstream) || !Array.isArray(upstream.messages) ||
    upstream.messages.length > 0
  ) return [];
  const texts: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === "string") texts.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (isObj(v)) {
      for (const k of ["content", "text", "input", "instructions", "messages", "system"]) {
        walk(v[k]);
      }
    }
  };
  walk(client);
  return texts.length > 0 && texts.every((t) => t.trim() === "") ? [] : [`${path}: messages empty`];
}

/** A problem without the positions it names (a pass-through may merge or drop messages). */
const unindexed = (p: string) => p.replace(/\[\d+\]/g, "[]").replace(/ \S*_\w{8}\b/g, "");

/** The money invariants of the account (balance = Σ ledger, held = Σ holds, debits = costs). */
export function ledgerProblems(g: FaultGateway, accountId: string): Promise<string[]> {
  return checkInvariants(g.store, [accountId]);
}

/** A whole answer not of its format's shape (the spec's fields, the slug asked for). */
function answerProblems(endpoint: Endpoint, a: unknown, model: unknown): string[] {
  if (!isObj(a)) return ["answer not an object"];
  const out: string[] = [];
  const want = (ok: boolean, what: string) =>
    ok || out.push(`${what}: ${JSON.stringify(a).slice(0, 200)}`);
  switch (endpoint) {
    case "chat": {
      want(a.object === "chat.completion", "chat object");
      const c = Array.isArray(a.choices) ? a.choices[0] : undefined;
      want(isObj(c) && isObj(c.message) && c.message.role === "assistant", "chat choice");
      want(isObj(a.usage) && typeof a.usage.prompt_tokens === "number", "chat usage");
      break;
    }
    case "messages":
      want(a.type === "message" && a.role === "assistant", "message type/role");
      want(Array.isArray(a.content), "message content");
      want(a.model === model, `message model ${a.model} ≠ ${model}`);
      want(isObj(a.usage) && typeof a.usage.cost === "number", "message usage.cost");
      break;
    case "responses":
      want(a.object === "response" && Array.isArray(a.output), "response object/output");
      want(a.model === model, `response model ${a.model} ≠ ${model}`);
      want(typeof a.output_text === "string" || a.output_text === undefined, "output_text");
      want(isObj(a.usage) && typeof a.usage.cost === "number", "response usage.cost");
      break;
    case "embeddings":
    case "images":
      want(Array.isArray(a.data) && a.data.length > 0, `${endpoint} data`);
      break;
  }
  return out;
}

/** `usage.cost` of a whole answer (chat, messages, responses, embeddings, images). */
function costOf(body: unknown): number | undefined {
  if (!isObj(body)) return undefined;
  const usage = isObj(body.usage)
    ? body.usage
    : isObj(body.response) && isObj(body.response.usage)
    ? body.response.usage
    : undefined;
  return typeof usage?.cost === "number" ? usage.cost : undefined;
}

/** The last `usage.cost` a stream carries. */
function reportedCost(endpoint: Endpoint, data: string[]): number | undefined {
  let cost: number | undefined;
  for (const d of data) {
    if (d === "[DONE]") continue;
    try {
      const e = JSON.parse(d);
      const c = endpoint === "messages" && e.type !== "message_delta" ? undefined : costOf(e);
      if (c !== undefined) cost = c;
    } catch { /* reported by streamProblems */ }
  }
  return cost;
}

/** A stream that ends without its terminal event (or with garbage) is a problem. */
function streamProblems(endpoint: Endpoint, data: string[]): string[] {
  const out: string[] = [];
  const events: Obj[] = [];
  for (const d of data) {
    if (d === "[DONE]") continue;
    try {
      events.push(JSON.parse(d));
    } catch {
      out.push(`stream data is not JSON: ${d.slice(0, 80)}`);
    }
  }
  const types = events.map((e) => String(e.type));
  switch (endpoint) {
    case "chat": {
      if (data.at(-1) !== "[DONE]") out.push("chat stream without [DONE]");
      // Tool calls: each index opens with its id and name, once.
      const opened = new Set<number>();
      for (const e of events) {
        const choice = Array.isArray(e.choices) ? e.choices[0] : undefined;
        const calls = isObj(choice) && isObj(choice.delta) ? choice.delta.tool_calls : undefined;
        for (const c of Array.isArray(calls) ? calls.filter(isObj) : []) {
          const f = isObj(c.function) ? c.function : {};
          if (typeof c.index !== "number") out.push("chat tool call delta without index");
          else if (!opened.has(c.index)) {
            opened.add(c.index);
            if (typeof c.id !== "string" || typeof f.name !== "string") {
              out.push(`chat tool call ${c.index} opens without id or name`);
            }
          } else if (c.id !== undefined && c.id !== null) {
            out.push(`chat tool call ${c.index} opened twice`);
          }
        }
      }
      break;
    }
    case "messages": {
      if (!types.includes("message_stop") && !types.includes("error")) {
        out.push(`messages stream ends at ${types.at(-1)}`);
      }
      if (types[0] !== "message_start") out.push(`messages stream starts with ${types[0]}`);
      // Blocks open in index order, each once, and close before the message ends.
      const open = new Set<number>();
      let next = 0;
      for (const e of events) {
        const i = e.index as number;
        if (e.type === "content_block_start") {
          if (i !== next) out.push(`content_block_start ${i}, expected ${next}`);
          next = i + 1;
          open.add(i);
        } else if (e.type === "content_block_delta" && !open.has(i)) {
          out.push(`content_block_delta for block ${i} not open`);
        } else if (e.type === "content_block_stop") {
          if (!open.delete(i)) out.push(`content_block_stop for block ${i} not open`);
        } else if (e.type === "message_delta" && open.size > 0) {
          out.push(`message_delta with blocks ${[...open]} open`);
        }
      }
      break;
    }
    case "responses": {
      if (
        !["response.completed", "response.failed", "response.incomplete", "error"]
          .includes(types.at(-1)!)
      ) out.push(`responses stream ends at ${types.at(-1)}`);
      if (types[0] !== "response.created") out.push(`responses stream starts with ${types[0]}`);
      // Sequence numbers rise by one; every item added is done, at its output_index.
      let seq = -1;
      const added = new Map<number, string>();
      for (const e of events) {
        if (typeof e.sequence_number === "number") {
          if (seq >= 0 && e.sequence_number !== seq + 1) {
            out.push(`sequence_number ${e.sequence_number} after ${seq}`);
          }
          seq = e.sequence_number;
        }
        const item = isObj(e.item) ? e.item : undefined;
        if (e.type === "response.output_item.added") {
          added.set(e.output_index as number, String(item?.type));
        } else if (e.type === "response.output_item.done") {
          if (added.get(e.output_index as number) !== String(item?.type)) {
            out.push(`output_item.done ${e.output_index} (${item?.type}) not added as such`);
          }
          added.delete(e.output_index as number);
        }
      }
      if (types.at(-1) === "response.completed" && added.size > 0) {
        out.push(`items ${[...added.keys()]} added, never done`);
      }
      const done = events.at(-1);
      const resp = isObj(done?.response) ? done.response : undefined;
      if (done?.type === "response.completed" && !Array.isArray(resp?.output)) {
        out.push("response.completed without output");
      }
      break;
    }
  }
  return out;
}

// ---- what the upstream APIs define -----------------------------------------------------------

const CHAT_TOP = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "n",
  "stop",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "seed",
  "frequency_penalty",
  "presence_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "user",
  "reasoning_effort",
  "metadata",
  "store",
  "service_tier",
  "prediction",
  "modalities",
  "audio",
  "web_search_options",
  "verbosity",
  "prompt_cache_key",
  "prompt_cache_retention",
  "safety_identifier",
  // OpenRouter's own
  "reasoning",
  "include_reasoning",
  "usage",
  "provider",
  "transforms",
  "models",
  "plugins",
  "top_k",
  "min_p",
  "top_a",
  "repetition_penalty",
  "route",
  "image_config",
  "session_id",
  "cache_control",
]);

const MESSAGES_TOP = new Set([
  "model",
  "messages",
  "max_tokens",
  "system",
  "stop_sequences",
  "stream",
  "temperature",
  "top_p",
  "top_k",
  "tools",
  "tool_choice",
  "metadata",
  "thinking",
  "service_tier",
  "container",
  "mcp_servers",
  "context_management",
  "output_config",
  "output_format",
  "inference_geo",
  "cache_control",
]);

const RESPONSES_TOP = new Set([
  "model",
  "input",
  "instructions",
  "stream",
  "stream_options",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "reasoning",
  "store",
  "include",
  "text",
  "max_output_tokens",
  "max_tool_calls",
  "temperature",
  "top_p",
  "top_logprobs",
  "metadata",
  "previous_response_id",
  "conversation",
  "truncation",
  "user",
  "service_tier",
  "prompt",
  "prompt_cache_key",
  "prompt_cache_retention",
  "safety_identifier",
  "background",
  "client_metadata",
  // OpenRouter's own
  "usage",
  "provider",
  "plugins",
  "models",
  "transforms",
  "top_k",
  "session_id",
]);

const MESSAGE_BLOCKS = new Set([
  "text",
  "image",
  "document",
  "search_result",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "mcp_tool_use",
  "mcp_tool_result",
  "container_upload",
]);

const CHAT_PARTS = new Set(["text", "image_url", "input_audio", "file", "refusal"]);

const RESPONSES_ITEMS = new Set([
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "item_reference",
  "web_search_call",
  "file_search_call",
  "computer_call",
  "computer_call_output",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
  "custom_tool_call",
  "custom_tool_call_output",
  "compaction",
]);

const RESPONSES_PARTS = new Set([
  "input_text",
  "input_image",
  "input_file",
  "input_audio",
  "output_text",
  "refusal",
  "reasoning_text",
  "summary_text",
]);

/** Shapes in an upstream body that the upstream's own API does not define. */
export function upstreamProblems(path: string, body: unknown): string[] {
  if (!isObj(body)) return [`upstream body not an object at ${path}`];
  const out: string[] = [];
  const extra = (allowed: Set<string>) =>
    Object.keys(body).filter((k) => !allowed.has(k)).forEach((k) =>
      out.push(`${path}: field ${k}`)
    );
  if (path.endsWith("/chat/completions")) {
    extra(CHAT_TOP);
    const msgs = body.messages;
    if (!Array.isArray(msgs) || msgs.length === 0) out.push(`${path}: messages empty`);
    for (const [i, m] of (Array.isArray(msgs) ? msgs : []).entries()) {
      if (!isObj(m)) {
        out.push(`${path}: messages[${i}] not an object`);
        continue;
      }
      if (!["system", "developer", "user", "assistant", "tool"].includes(String(m.role))) {
        out.push(`${path}: messages[${i}].role ${m.role}`);
      }
      if (m.role === "tool" && typeof m.tool_call_id !== "string") {
        out.push(`${path}: messages[${i}] tool without tool_call_id`);
      }
      const c = m.content;
      if (Array.isArray(c)) {
        for (const p of c) {
          if (!isObj(p) || !CHAT_PARTS.has(String(p.type))) {
            out.push(`${path}: messages[${i}] part ${JSON.stringify(p)?.slice(0, 80)}`);
          } else if (p.type === "text" && typeof p.text !== "string") {
            out.push(`${path}: messages[${i}] text part without text`);
          } else if (p.type === "image_url" && !isObj(p.image_url)) {
            out.push(`${path}: messages[${i}] image_url part without image_url object`);
          }
        }
      } else if (typeof c !== "string" && !(m.role === "assistant" && c == null)) {
        out.push(`${path}: messages[${i}].content ${JSON.stringify(c)?.slice(0, 60)}`);
      }
    }
    toolsProblems(path, body.tools, "chat", out);
    chatRules(path, body, out);
  } else if (path.endsWith("/messages")) {
    extra(MESSAGES_TOP);
    if (
      typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) ||
      body.max_tokens < 1
    ) out.push(`${path}: max_tokens ${body.max_tokens}`);
    const msgs = Array.isArray(body.messages) ? body.messages : [];
    if (!Array.isArray(body.messages)) out.push(`${path}: no messages`);
    let prevToolUses = new Set<string>();
    for (const [i, m] of msgs.entries()) {
      // The newest Claude models take a system message mid-conversation.
      if (!isObj(m) || !["user", "assistant", "system"].includes(String(m.role))) {
        out.push(`${path}: messages[${i}].role ${isObj(m) ? m.role : m}`);
        continue;
      }
      const blocks = typeof m.content === "string"
        ? [{ type: "text", text: m.content }]
        : Array.isArray(m.content)
        ? m.content
        : null;
      if (!blocks) {
        out.push(`${path}: messages[${i}].content ${JSON.stringify(m.content)?.slice(0, 60)}`);
        continue;
      }
      if (blocks.length === 0) out.push(`${path}: messages[${i}] has no content`);
      const uses = new Set<string>();
      for (const b of blocks) {
        if (!isObj(b) || !MESSAGE_BLOCKS.has(String(b.type))) {
          out.push(`${path}: messages[${i}] block ${JSON.stringify(b)?.slice(0, 80)}`);
          continue;
        }
        // A last user turn of blank text alone is passed on, for the upstream's 400 to say.
        if (
          b.type === "text" && (typeof b.text !== "string" || b.text.trim() === "") &&
          !(i === msgs.length - 1 && blocks.length === 1)
        ) {
          out.push(`${path}: messages[${i}] empty text block`);
        }
        if (b.type === "tool_use") uses.add(String(b.id));
        if (b.type === "tool_result" && !prevToolUses.has(String(b.tool_use_id))) {
          out.push(`${path}: messages[${i}] tool_result without its tool_use`);
        }
      }
      prevToolUses = m.role === "assistant" ? uses : new Set();
    }
    toolsProblems(path, body.tools, "messages", out);
    anthropicRules(path, body, out);
  } else if (path.endsWith("/responses")) {
    extra(RESPONSES_TOP);
    const input = body.input;
    if (typeof input !== "string" && !Array.isArray(input)) out.push(`${path}: input ${input}`);
    for (const [i, it] of (Array.isArray(input) ? input : []).entries()) {
      if (!isObj(it)) {
        out.push(`${path}: input[${i}] not an object`);
        continue;
      }
      const type = it.type ?? "message";
      if (!RESPONSES_ITEMS.has(String(type))) out.push(`${path}: input[${i}].type ${type}`);
      if (type === "message") {
        if (!["user", "assistant", "system", "developer"].includes(String(it.role))) {
          out.push(`${path}: input[${i}].role ${it.role}`);
        }
        if (Array.isArray(it.content)) {
          for (const p of it.content) {
            if (!isObj(p) || !RESPONSES_PARTS.has(String(p.type))) {
              out.push(`${path}: input[${i}] part ${JSON.stringify(p)?.slice(0, 80)}`);
            }
          }
        } else if (typeof it.content !== "string") {
          out.push(`${path}: input[${i}].content ${JSON.stringify(it.content)?.slice(0, 60)}`);
        }
      }
      if (
        (type === "function_call" || type === "function_call_output") &&
        typeof it.call_id !== "string"
      ) out.push(`${path}: input[${i}] without call_id`);
    }
    toolsProblems(path, body.tools, "responses", out);
    responsesRules(path, body, out);
  }
  return out;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Rules OpenAI's chat API holds a body to beyond its shape. */
function chatRules(path: string, body: Obj, out: string[]): void {
  if (Array.isArray(body.stop) && body.stop.length > 4) out.push(`${path}: more than 4 stop`);
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObj) : [];
  const names = tools.map((t) => (t.function as Obj | undefined)?.name);
  for (const n of names) {
    if (typeof n === "string" && !TOOL_NAME.test(n)) out.push(`${path}: tool name ${n}`);
  }
  const tc = body.tool_choice;
  if (isObj(tc) && isObj(tc.function) && !names.includes(tc.function.name)) {
    out.push(`${path}: tool_choice names a tool not declared`);
  }
  if (tc !== undefined && tools.length === 0 && tc !== "none" && tc !== "auto") {
    out.push(`${path}: tool_choice without tools`);
  }
  // Every tool message answers a call of the assistant message before it, and every call is
  // answered before the next non-tool message.
  let open = new Set<string>();
  for (const m of Array.isArray(body.messages) ? body.messages.filter(isObj) : []) {
    if (m.role === "tool") {
      if (!open.has(String(m.tool_call_id))) out.push(`${path}: tool message without its call`);
      open.delete(String(m.tool_call_id));
      continue;
    }
    if (open.size > 0) out.push(`${path}: tool calls left unanswered`);
    open = new Set(
      (Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObj) : []).map((c) => String(c.id)),
    );
  }
  const rf = body.response_format;
  if (isObj(rf) && rf.type === "json_schema" && !(isObj(rf.json_schema) && rf.json_schema.name)) {
    out.push(`${path}: json_schema without a name`);
  }
}

/** Rules Anthropic's messages API holds a body to beyond its shape. */
function anthropicRules(path: string, body: Obj, out: string[]): void {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObj) : [];
  const names = tools.map((t) => t.name);
  for (const n of names) {
    if (typeof n === "string" && !TOOL_NAME.test(n)) out.push(`${path}: tool name ${n}`);
  }
  const tc = body.tool_choice;
  if (isObj(tc) && tc.type === "tool" && !names.includes(tc.name)) {
    out.push(`${path}: tool_choice names a tool not declared`);
  }
  const stops = Array.isArray(body.stop_sequences) ? body.stop_sequences : [];
  if (stops.some((x) => typeof x !== "string" || x.trim() === "")) {
    out.push(`${path}: blank stop sequence`);
  }
  const th = body.thinking;
  if (isObj(th) && th.type === "enabled") {
    const budget = th.budget_tokens;
    if (typeof budget !== "number" || budget < 1024) out.push(`${path}: thinking budget ${budget}`);
    if (
      typeof budget === "number" && typeof body.max_tokens === "number" &&
      budget >= body.max_tokens
    ) out.push(`${path}: thinking budget ≥ max_tokens`);
  }
  if (isObj(th) && th.type !== "disabled") {
    if (body.temperature !== undefined && body.temperature !== 1) {
      out.push(`${path}: temperature with thinking`);
    }
    if (body.top_k !== undefined) out.push(`${path}: top_k with thinking`);
    if (isObj(tc) && (tc.type === "any" || tc.type === "tool")) {
      out.push(`${path}: forced tool use with thinking`);
    }
  }
  let marks = 0;
  const count = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(count);
    else if (isObj(v)) {
      if (v.cache_control !== undefined && v !== body) marks++;
      Object.values(v).forEach(count);
    }
  };
  count([body.system, body.messages, body.tools]);
  if (marks > 4) out.push(`${path}: ${marks} cache_control marks (4 at most)`);
}

/** Rules OpenAI's responses API holds a body to beyond its shape. */
function responsesRules(path: string, body: Obj, out: string[]): void {
  const input = Array.isArray(body.input) ? body.input.filter(isObj) : [];
  const calls = new Set(
    input.filter((i) => i.type === "function_call" || i.type === "custom_tool_call")
      .map((i) => i.call_id),
  );
  for (const i of input) {
    if (
      (i.type === "function_call_output" || i.type === "custom_tool_call_output") &&
      !calls.has(i.call_id)
    ) out.push(`${path}: ${i.type} without its call`);
  }
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObj) : [];
  for (const t of tools) {
    if (t.type === "function" && (typeof t.name !== "string" || !TOOL_NAME.test(t.name))) {
      out.push(`${path}: tool name ${t.name}`);
    }
  }
  const f = isObj(body.text) ? body.text.format : undefined;
  if (isObj(f) && f.type === "json_schema" && (!f.name || !isObj(f.schema))) {
    out.push(`${path}: text.format json_schema without name or schema`);
  }
}

function toolsProblems(path: string, tools: unknown, kind: string, out: string[]): void {
  if (tools === undefined) return;
  if (!Array.isArray(tools)) {
    out.push(`${path}: tools not an array`);
    return;
  }
  const names = new Set<string>();
  for (const t of tools) {
    if (!isObj(t)) {
      out.push(`${path}: tool ${t}`);
      continue;
    }
    const name = kind === "chat" ? (t.function as Obj | undefined)?.name : t.name;
    if (kind === "chat" && t.type === "function" && !isObj(t.function)) {
      out.push(`${path}: chat tool without function`);
    }
    if (typeof name === "string") {
      if (names.has(name)) out.push(`${path}: duplicate tool name ${name}`);
      names.add(name);
    }
  }
}

/**
 * OpenAI chat completions, rendered as recorded in
 * ../shared/fixtures/upstream/openai/chat-*.sse: `data: <chunk>\n\n` per chunk, a role chunk,
 * content or tool-call chunks, a finish chunk, the `choices: []` usage chunk when
 * `stream_options.include_usage` is set, then `data: [DONE]\n\n`. Chunks carry an
 * `obfuscation` padding field like the real ones.
 */
import type { Answer, AnswerInput, DeclaredTool, Finish } from "./answer.ts";
import { Frames, type StreamParts } from "./plan.ts";
import { alnum, CREATED, obj, q } from "./util.ts";

const FINISH: Record<Finish, string> = {
  stop: "stop",
  length: "length",
  content_filter: "content_filter",
  tool: "tool_calls",
};

const ids = (a: Answer) => ({
  id: "chatcmpl-" + alnum(a.seed, 29),
  call: (i: number) => "call_" + alnum(a.seed + i + 1, 24),
});

export function chatUsage(a: Answer): Record<string, unknown> {
  const u = a.usage;
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: u.reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const PAD = "mockmockmockmock";

function pad(n: number): string {
  return PAD.slice(0, 4 + (n * 7) % 12);
}

/**
 * How many choices a chat request asks for (`n`, 1 by default). Each is the same answer; the
 * usage reports the output of all of them, as OpenAI bills every choice.
 */
export function chatChoices(body: Record<string, unknown>): number {
  const n = body.n;
  return typeof n === "number" && Number.isInteger(n) && n > 1 && n <= maxChoices ? n : 1;
}

/** OpenAI's own bound on `n`. */
const maxChoices = 128;

export function chatStream(a: Answer, body: Record<string, unknown>): StreamParts {
  const { id, call } = ids(a);
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${CREATED},` +
    `"model":${q(a.model)},"service_tier":"default","system_fingerprint":"fp_mock","choices":[`;
  let index = 0;
  const choice = (delta: string, finish: string | null, n: number) =>
    `${head}{"index":${index},"delta":${delta},"logprobs":null,"finish_reason":${
      finish === null ? "null" : q(finish)
    }}],"usage":null,"obfuscation":"${pad(n)}"}\n\n`;

  const f = new Frames(a.hiddenReasoning);
  const textual = a.text.length > 0 || a.tools.length === 0;
  const choices = chatChoices(body);
  // Choice after choice, each finished once all are written, as OpenAI ends an `n` stream.
  for (index = 0; index < choices; index++) {
    f.meta(choice(
      textual
        ? `{"role":"assistant","content":"","refusal":null}`
        : `{"role":"assistant","content":null}`,
      null,
      0,
    ));
    // OpenRouter's reasoning deltas (shown only when asked for: see wantsChatReasoning).
    a.reasoning.forEach((r, i) => f.content(choice(`{"reasoning":${q(r)}}`, null, r.length + i)));
    a.text.forEach((t, i) => f.content(choice(`{"content":${q(t)}}`, null, t.length + i)));
    // A search's pages come after the text they support, as OpenRouter's web plugin sends them.
    if (a.usage.webSearches > 0 && a.text.length > 0) {
      f.meta(choice(`{"annotations":${JSON.stringify(citations(a))}}`, null, 3));
    }
    a.tools.forEach((t, i) => {
      f.meta(choice(
        `{"tool_calls":[{"index":${i},"id":"${call(index * maxChoices + i)}","type":"function",` +
          `"function":{"name":${q(t.name)},"arguments":""}}]}`,
        null,
        i,
      ));
      for (const piece of t.chunks) {
        f.content(
          choice(
            `{"tool_calls":[{"index":${i},"function":{"arguments":${q(piece)}}}]}`,
            null,
            piece.length,
          ),
        );
      }
    });
  }
  const tailStart = f.list.length;
  for (index = 0; index < choices; index++) f.meta(choice("{}", FINISH[a.finish], 1));
  const wantUsage = obj(body.stream_options).include_usage === true;
  if (wantUsage && a.reportUsage) {
    f.meta(
      `${head}],"usage":${JSON.stringify(chatUsage(a))},"obfuscation":"${pad(2)}"}\n\n`,
      true,
    );
  }
  f.meta("data: [DONE]\n\n");
  return {
    frames: f.finish(),
    tailStart,
    fail: () =>
      `data: {"error":{"message":"The server had an error while processing your request. Sorry about that!",` +
      `"type":"server_error","param":null,"code":"server_error"}}\n\n`,
  };
}

export function chatWhole(a: Answer, body: Record<string, unknown> = {}): string {
  const { id, call } = ids(a);
  const message = (index: number): Record<string, unknown> => {
    const m: Record<string, unknown> = {
      role: "assistant",
      content: a.text.length > 0 || a.tools.length === 0 ? a.text.join("") : null,
      refusal: null,
      annotations: a.text.length > 0 ? citations(a) : [],
    };
    if (a.reasoning.length > 0) m.reasoning = a.reasoning.join("");
    if (a.tools.length > 0) {
      m.tool_calls = a.tools.map((t, i) => ({
        id: call(index * maxChoices + i),
        type: "function",
        function: { name: t.name, arguments: t.args },
      }));
    }
    return m;
  };
  const out: Record<string, unknown> = {
    id,
    object: "chat.completion",
    created: CREATED,
    model: a.model,
    choices: Array.from({ length: chatChoices(body) }, (_, index) => ({
      index,
      message: message(index),
      logprobs: null,
      finish_reason: FINISH[a.finish],
    })),
  };
  if (a.reportUsage) out.usage = chatUsage(a);
  out.service_tier = "default";
  out.system_fingerprint = "fp_mock";
  return JSON.stringify(out);
}

/**
 * Whether a chat request asks for visible reasoning in OpenRouter's dialect (`reasoning`
 * not turned off or excluded, or `include_reasoning`). OpenAI's own chat API never shows it.
 */
export function wantsChatReasoning(body: Record<string, unknown>): boolean {
  if (body.include_reasoning === true) return true;
  const r = body.reasoning;
  if (r === null || typeof r !== "object") return false;
  const o = r as Record<string, unknown>;
  return o.enabled !== false && o.exclude !== true;
}

/** Functions declared in a chat request's `tools`. */
export function chatTools(body: Record<string, unknown>): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools.flatMap((t) => {
    const f = obj(obj(t).function);
    return typeof f.name === "string" ? [{ name: f.name, schema: f.parameters }] : [];
  });
}

/** The answer's shape a chat request asks for (`response_format`). */
export function chatFormat(body: Record<string, unknown>): AnswerInput["format"] {
  const f = obj(body.response_format);
  if (f.type === "json_object") return "json_object";
  const schema = obj(f.json_schema).schema;
  return f.type === "json_schema" ? obj(schema) : undefined;
}

/**
 * The pages a search found, as `url_citation` annotations over the whole text: how OpenRouter's
 * web plugin (and OpenAI's search models) cite them. None without searches.
 */
function citations(a: Answer): Record<string, unknown>[] {
  const end = a.text.join("").length;
  return Array.from({ length: a.usage.webSearches }, (_, i) => ({
    type: "url_citation",
    url_citation: {
      url: `https://example.com/mock/${i + 1}`,
      title: `Mock result ${i + 1}`,
      content: "",
      start_index: 0,
      end_index: end,
    },
  }));
}

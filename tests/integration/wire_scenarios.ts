/**
 * Upstream wire scenarios beyond the recorded fixtures: every streaming event and output
 * item type the current OpenAI (chat, responses) and Anthropic (messages) APIs can emit,
 * each as a stream and as a whole body, with what a client of any format must get from it.
 */

type Obj = Record<string, unknown>;
export type Protocol = "openai-chat" | "anthropic-messages" | "openai-responses";

export interface Expect {
  /** The answer's text, every text block joined. */
  text: string;
  /** Reasoning text a format with a place for it must show (joined). */
  reasoning?: string;
  tools?: { id: string; name: string; args: string }[];
  /** Internal finish reason. */
  finish: "stop" | "length" | "tool_calls" | "content_filter" | "error";
  /** Tokens the generation must be billed for. */
  input: number;
  output: number;
  /** Citation URLs a format with annotations could carry. */
  citations?: string[];
  /** A refusal text (chat and responses have a field for it). */
  refusal?: string;
  /** Web searches the upstream ran, each billed at the catalogue's `web_search` price. */
  searches?: number;
}

export interface Scenario {
  name: string;
  protocol: Protocol;
  stream: string;
  body: Obj;
  expect: Expect;
}

const ev = (event: string, data: Obj) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const a = (data: Obj) => ev(String(data.type), data);
const d = (data: Obj | string) =>
  `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

// ---------------------------------------------------------------------------------------------
// Anthropic messages

const msgStart = (usage: Obj = { input_tokens: 40, output_tokens: 1 }) =>
  a({
    type: "message_start",
    message: {
      id: "msg_wc1",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
const cbStart = (index: number, content_block: Obj) =>
  a({ type: "content_block_start", index, content_block });
const cbDelta = (index: number, delta: Obj) => a({ type: "content_block_delta", index, delta });
const cbStop = (index: number) => a({ type: "content_block_stop", index });
const msgDelta = (stop_reason: string, usage: Obj) =>
  a({ type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage });
const msgStop = a({ type: "message_stop" });
const ping = a({ type: "ping" });

const anthropicBody = (content: Obj[], stop_reason: string, usage: Obj): Obj => ({
  id: "msg_wc1",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  content,
  stop_reason,
  stop_sequence: null,
  usage,
});

const webCitation = {
  type: "web_search_result_location",
  cited_text: "Deno 2 was released in October 2024.",
  url: "https://deno.com/blog/v2.0",
  title: "Announcing Deno 2",
  encrypted_index: "Eo8BCioIAhgBIiQ",
};

const docCitation = {
  type: "char_location",
  cited_text: "The grass is green.",
  document_index: 0,
  document_title: "Doc",
  start_char_index: 0,
  end_char_index: 19,
};

export const ANTHROPIC: Scenario[] = [
  {
    name: "thinking with signature_delta, ping, text with citations_delta",
    protocol: "anthropic-messages",
    stream: msgStart() + ping +
      cbStart(0, { type: "thinking", thinking: "", signature: "" }) +
      cbDelta(0, { type: "thinking_delta", thinking: "Let me check " }) + ping +
      cbDelta(0, { type: "thinking_delta", thinking: "the document." }) +
      cbDelta(0, { type: "signature_delta", signature: "EqQBCkYIBxgCKkBsig==" }) + cbStop(0) +
      cbStart(1, { type: "text", text: "" }) +
      cbDelta(1, { type: "text_delta", text: "According to it, " }) + cbStop(1) +
      cbStart(2, { type: "text", text: "", citations: [] }) +
      cbDelta(2, { type: "citations_delta", citation: docCitation }) +
      cbDelta(2, { type: "text_delta", text: "the grass is green" }) + cbStop(2) +
      cbStart(3, { type: "text", text: "" }) +
      cbDelta(3, { type: "text_delta", text: "." }) + cbStop(3) +
      msgDelta("end_turn", { output_tokens: 57 }) + msgStop,
    body: anthropicBody(
      [
        {
          type: "thinking",
          thinking: "Let me check the document.",
          signature: "EqQBCkYIBxgCKkBsig==",
        },
        { type: "text", text: "According to it, " },
        { type: "text", text: "the grass is green", citations: [docCitation] },
        { type: "text", text: "." },
      ],
      "end_turn",
      { input_tokens: 40, output_tokens: 57 },
    ),
    expect: {
      text: "According to it, the grass is green.",
      reasoning: "Let me check the document.",
      finish: "stop",
      input: 40,
      output: 57,
    },
  },
  {
    name: "redacted_thinking, tool_use with input_json_delta split mid-token",
    protocol: "anthropic-messages",
    stream: msgStart({
      input_tokens: 12,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 8,
      output_tokens: 1,
    }) +
      cbStart(0, { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT" }) +
      cbStop(0) +
      cbStart(1, { type: "text", text: "" }) +
      cbDelta(1, { type: "text_delta", text: "Checking both." }) + cbStop(1) +
      cbStart(2, { type: "tool_use", id: "toolu_A", name: "get_weather", input: {} }) +
      cbDelta(2, { type: "input_json_delta", partial_json: "" }) +
      cbDelta(2, { type: "input_json_delta", partial_json: '{"ci' }) +
      cbDelta(2, { type: "input_json_delta", partial_json: 'ty": "Par' }) +
      cbDelta(2, { type: "input_json_delta", partial_json: 'is \\u00e9"}' }) + cbStop(2) +
      cbStart(3, { type: "tool_use", id: "toolu_B", name: "get_time", input: {} }) +
      cbStop(3) +
      msgDelta("tool_use", { output_tokens: 88 }) + msgStop,
    body: anthropicBody(
      [
        { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT" },
        { type: "text", text: "Checking both." },
        { type: "tool_use", id: "toolu_A", name: "get_weather", input: { city: "Paris é" } },
        { type: "tool_use", id: "toolu_B", name: "get_time", input: {} },
      ],
      "tool_use",
      {
        input_tokens: 12,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 8,
        output_tokens: 88,
      },
    ),
    expect: {
      text: "Checking both.",
      tools: [
        { id: "toolu_A", name: "get_weather", args: '{"city":"Paris é"}' },
        { id: "toolu_B", name: "get_time", args: "{}" },
      ],
      finish: "tool_calls",
      input: 120,
      output: 88,
    },
  },
  {
    name: "server tools: web_search, web_fetch, code execution results, cited text, pause_turn",
    protocol: "anthropic-messages",
    stream: msgStart({ input_tokens: 300, output_tokens: 3 }) +
      cbStart(0, { type: "text", text: "" }) +
      cbDelta(0, { type: "text_delta", text: "Searching." }) + cbStop(0) +
      cbStart(1, { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }) +
      cbDelta(1, { type: "input_json_delta", partial_json: '{"query": "deno 2 rel' }) +
      cbDelta(1, { type: "input_json_delta", partial_json: 'ease"}' }) + cbStop(1) +
      cbStart(2, {
        type: "web_search_tool_result",
        tool_use_id: "srvtoolu_1",
        content: [{
          type: "web_search_result",
          url: "https://deno.com/blog/v2.0",
          title: "Announcing Deno 2",
          encrypted_content: "EqgfCioIARgBIiQ",
          page_age: null,
        }],
      }) + cbStop(2) +
      cbStart(3, { type: "server_tool_use", id: "srvtoolu_2", name: "web_fetch", input: {} }) +
      cbDelta(3, {
        type: "input_json_delta",
        partial_json: '{"url":"https://deno.com/blog/v2.0"}',
      }) +
      cbStop(3) +
      cbStart(4, {
        type: "web_fetch_tool_result",
        tool_use_id: "srvtoolu_2",
        content: {
          type: "web_fetch_result",
          url: "https://deno.com/blog/v2.0",
          content: {
            type: "document",
            source: { type: "text", media_type: "text/plain", data: "Deno 2 is here." },
            title: "Deno 2",
          },
          retrieved_at: "2026-11-01T00:00:00Z",
        },
      }) + cbStop(4) +
      cbStart(5, {
        type: "server_tool_use",
        id: "srvtoolu_3",
        name: "bash_code_execution",
        input: {},
      }) +
      cbDelta(5, { type: "input_json_delta", partial_json: '{"command":"echo 2"}' }) + cbStop(5) +
      cbStart(6, {
        type: "bash_code_execution_tool_result",
        tool_use_id: "srvtoolu_3",
        content: {
          type: "bash_code_execution_result",
          stdout: "2\n",
          stderr: "",
          return_code: 0,
          content: [],
        },
      }) + cbStop(6) +
      cbStart(7, { type: "text", text: "" }) +
      cbDelta(7, { type: "citations_delta", citation: webCitation }) +
      cbDelta(7, { type: "text_delta", text: "Deno 2 came out in October 2024" }) + cbStop(7) +
      cbStart(8, { type: "text", text: "" }) +
      cbDelta(8, { type: "text_delta", text: "." }) + cbStop(8) +
      msgDelta("pause_turn", {
        input_tokens: 300,
        output_tokens: 210,
        server_tool_use: { web_search_requests: 1, web_fetch_requests: 1 },
      }) + msgStop,
    body: anthropicBody(
      [
        { type: "text", text: "Searching." },
        {
          type: "server_tool_use",
          id: "srvtoolu_1",
          name: "web_search",
          input: { query: "deno 2 release" },
        },
        {
          type: "web_search_tool_result",
          tool_use_id: "srvtoolu_1",
          content: [{
            type: "web_search_result",
            url: "https://deno.com/blog/v2.0",
            title: "Announcing Deno 2",
            encrypted_content: "EqgfCioIARgBIiQ",
            page_age: null,
          }],
        },
        {
          type: "server_tool_use",
          id: "srvtoolu_3",
          name: "bash_code_execution",
          input: { command: "echo 2" },
        },
        {
          type: "bash_code_execution_tool_result",
          tool_use_id: "srvtoolu_3",
          content: {
            type: "bash_code_execution_result",
            stdout: "2\n",
            stderr: "",
            return_code: 0,
            content: [],
          },
        },
        { type: "text", text: "Deno 2 came out in October 2024", citations: [webCitation] },
        { type: "text", text: "." },
      ],
      "pause_turn",
      {
        input_tokens: 300,
        output_tokens: 210,
        server_tool_use: { web_search_requests: 1, web_fetch_requests: 1 },
      },
    ),
    expect: {
      text: "Searching.Deno 2 came out in October 2024.",
      finish: "stop",
      input: 300,
      output: 210,
      citations: ["https://deno.com/blog/v2.0"],
      searches: 1,
    },
  },
  {
    name: "stop_reason refusal",
    protocol: "anthropic-messages",
    stream: msgStart() + cbStart(0, { type: "text", text: "" }) +
      cbDelta(0, { type: "text_delta", text: "I can't help" }) + cbStop(0) +
      msgDelta("refusal", { output_tokens: 4 }) + msgStop,
    body: anthropicBody([{ type: "text", text: "I can't help" }], "refusal", {
      input_tokens: 40,
      output_tokens: 4,
    }),
    expect: { text: "I can't help", finish: "content_filter", input: 40, output: 4 },
  },
  {
    name: "stop_reason model_context_window_exceeded",
    protocol: "anthropic-messages",
    stream: msgStart() + cbStart(0, { type: "text", text: "" }) +
      cbDelta(0, { type: "text_delta", text: "Long" }) + cbStop(0) +
      msgDelta("model_context_window_exceeded", { output_tokens: 9 }) + msgStop,
    body: anthropicBody(
      [{ type: "text", text: "Long" }],
      "model_context_window_exceeded",
      { input_tokens: 40, output_tokens: 9 },
    ),
    expect: { text: "Long", finish: "length", input: 40, output: 9 },
  },
];

/** A stream that fails mid-way: billed from what the gateway counted, an error in-stream. */
export const ANTHROPIC_ERROR_STREAM = msgStart() + cbStart(0, { type: "text", text: "" }) +
  cbDelta(0, { type: "text_delta", text: "Partial" }) +
  a({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });

// ---------------------------------------------------------------------------------------------
// OpenAI chat

const chunk = (delta: Obj, finish: string | null = null, extra: Obj = {}) =>
  d({
    id: "chatcmpl-wc1",
    object: "chat.completion.chunk",
    created: 1764300000,
    model: "gpt-4o-2024-08-06",
    system_fingerprint: "fp_wc",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...extra,
  });
const usageChunk = (prompt: number, completion: number, details: Obj = {}) =>
  d({
    id: "chatcmpl-wc1",
    object: "chat.completion.chunk",
    created: 1764300000,
    model: "gpt-4o-2024-08-06",
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, ...details },
    },
  });
const chatBody = (message: Obj, finish: string, prompt: number, completion: number): Obj => ({
  id: "chatcmpl-wc1",
  object: "chat.completion",
  created: 1764300000,
  model: "gpt-4o-2024-08-06",
  choices: [{
    index: 0,
    message: { role: "assistant", ...message },
    logprobs: null,
    finish_reason: finish,
  }],
  usage: {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  },
});

const urlCitation = {
  type: "url_citation",
  url_citation: {
    start_index: 0,
    end_index: 20,
    url: "https://deno.com/blog/v2.0",
    title: "Announcing Deno 2",
  },
};

export const CHAT: Scenario[] = [
  {
    name: "refusal deltas",
    protocol: "openai-chat",
    stream: chunk({ role: "assistant", content: null, refusal: "" }) +
      chunk({ refusal: "I'm sorry, " }) + chunk({ refusal: "I can't help with that." }) +
      chunk({}, "stop") + usageChunk(30, 9) + d("[DONE]"),
    body: chatBody({ content: null, refusal: "I'm sorry, I can't help with that." }, "stop", 30, 9),
    expect: {
      text: "I'm sorry, I can't help with that.",
      refusal: "I'm sorry, I can't help with that.",
      finish: "stop",
      input: 30,
      output: 9,
    },
  },
  {
    name: "parallel tool calls split across chunks, index gap, usage-only final chunk",
    protocol: "openai-chat",
    stream: chunk({ role: "assistant", content: null }) +
      chunk({
        tool_calls: [{
          index: 0,
          id: "call_A",
          type: "function",
          function: { name: "get_weather", arguments: "" },
        }],
      }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }) +
      chunk({
        tool_calls: [{
          index: 2,
          id: "call_B",
          type: "function",
          function: { name: "get_time", arguments: '{"tz":' },
        }],
      }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Paris"}' } }] }) +
      chunk({ tool_calls: [{ index: 2, function: { arguments: '"UTC"}' } }] }) +
      chunk({}, "tool_calls") + usageChunk(80, 40) + d("[DONE]"),
    body: chatBody(
      {
        content: null,
        tool_calls: [
          {
            id: "call_A",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
          {
            id: "call_B",
            type: "function",
            function: { name: "get_time", arguments: '{"tz":"UTC"}' },
          },
        ],
      },
      "tool_calls",
      80,
      40,
    ),
    expect: {
      text: "",
      tools: [
        { id: "call_A", name: "get_weather", args: '{"city":"Paris"}' },
        { id: "call_B", name: "get_time", args: '{"tz":"UTC"}' },
      ],
      finish: "tool_calls",
      input: 80,
      output: 40,
    },
  },
  {
    name: "logprobs, url_citation annotations, content_filter",
    protocol: "openai-chat",
    stream: chunk({ role: "assistant", content: "" }) +
      d({
        id: "chatcmpl-wc1",
        object: "chat.completion.chunk",
        created: 1764300000,
        model: "gpt-4o-2024-08-06",
        choices: [{
          index: 0,
          delta: { content: "Deno 2 came out in 2024" },
          logprobs: {
            content: [{ token: "Deno", logprob: -0.1, bytes: [68], top_logprobs: [] }],
            refusal: null,
          },
          finish_reason: null,
        }],
      }) +
      chunk({ annotations: [urlCitation] }) +
      chunk({}, "content_filter") + usageChunk(25, 7) + d("[DONE]"),
    body: chatBody(
      { content: "Deno 2 came out in 2024", annotations: [urlCitation] },
      "content_filter",
      25,
      7,
    ),
    expect: {
      text: "Deno 2 came out in 2024",
      finish: "content_filter",
      input: 25,
      output: 7,
      citations: ["https://deno.com/blog/v2.0"],
    },
  },
  {
    name: "audio output with transcript",
    protocol: "openai-chat",
    stream: chunk({
      role: "assistant",
      content: null,
      audio: { id: "audio_1", data: "UklGR", expires_at: 1764303600, transcript: "" },
    }) +
      chunk({ audio: { data: "gAAAA" } }) + chunk({ audio: { transcript: "Hello " } }) +
      chunk({ audio: { transcript: "there." } }) + chunk({}, "stop") +
      usageChunk(20, 50, { audio_tokens: 40 }) + d("[DONE]"),
    body: chatBody(
      {
        content: null,
        audio: {
          id: "audio_1",
          data: "UklGRgAAAA",
          expires_at: 1764303600,
          transcript: "Hello there.",
        },
      },
      "stop",
      20,
      50,
    ),
    expect: { text: "", finish: "stop", input: 20, output: 50 },
  },
];

export const CHAT_ERROR_STREAM = chunk({ role: "assistant", content: "Partial" }) +
  d({ error: { message: "The server had an error", type: "server_error", code: null } });

// ---------------------------------------------------------------------------------------------
// OpenAI responses

let seq = 0;
const r = (data: Obj) => ev(String(data.type), { ...data, sequence_number: seq++ });
const resp = (status: string, output: Obj[], usage: Obj | null, extra: Obj = {}): Obj => ({
  id: "resp_wc1",
  object: "response",
  created_at: 1764300000,
  status,
  model: "gpt-5-2025-08-07",
  output,
  usage,
  error: null,
  incomplete_details: null,
  ...extra,
});
const rusage = (input: number, output: number, reasoning = 0) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: input + output,
});
const created = () =>
  r({ type: "response.created", response: resp("in_progress", [], null) }) +
  r({ type: "response.in_progress", response: resp("in_progress", [], null) });

const annotation = {
  type: "url_citation",
  start_index: 0,
  end_index: 23,
  url: "https://deno.com/blog/v2.0",
  title: "Announcing Deno 2",
};
const reasoningItem = {
  id: "rs_1",
  type: "reasoning",
  summary: [
    { type: "summary_text", text: "**Plan** look it up" },
    { type: "summary_text", text: "**Answer** from memory" },
  ],
  encrypted_content: "gAAAAABenc",
};
const textMessage = (text: string, annotations: Obj[] = []) => ({
  id: "msg_1",
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations, logprobs: [] }],
});

function responsesR1(): string {
  seq = 0;
  return created() +
    r({
      type: "response.output_item.added",
      output_index: 0,
      item: { id: "rs_1", type: "reasoning", summary: [] },
    }) +
    r({
      type: "response.reasoning_summary_part.added",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 0,
      part: { type: "summary_text", text: "" },
    }) +
    r({
      type: "response.reasoning_summary_text.delta",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 0,
      delta: "**Plan** look it up",
    }) +
    r({
      type: "response.reasoning_summary_text.done",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 0,
      text: "**Plan** look it up",
    }) +
    r({
      type: "response.reasoning_summary_part.done",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 0,
      part: { type: "summary_text", text: "**Plan** look it up" },
    }) +
    r({
      type: "response.reasoning_summary_part.added",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 1,
      part: { type: "summary_text", text: "" },
    }) +
    r({
      type: "response.reasoning_summary_text.delta",
      item_id: "rs_1",
      output_index: 0,
      summary_index: 1,
      delta: "**Answer** from memory",
    }) +
    r({ type: "response.output_item.done", output_index: 0, item: reasoningItem }) +
    r({
      type: "response.output_item.added",
      output_index: 1,
      item: { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] },
    }) +
    r({
      type: "response.content_part.added",
      item_id: "msg_1",
      output_index: 1,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] },
    }) +
    r({
      type: "response.output_text.delta",
      item_id: "msg_1",
      output_index: 1,
      content_index: 0,
      delta: "Deno 2 came out in 2024",
      logprobs: [],
    }) +
    r({
      type: "response.output_text.annotation.added",
      item_id: "msg_1",
      output_index: 1,
      content_index: 0,
      annotation_index: 0,
      annotation,
    }) +
    r({
      type: "response.output_text.done",
      item_id: "msg_1",
      output_index: 1,
      content_index: 0,
      text: "Deno 2 came out in 2024",
      logprobs: [],
    }) +
    r({
      type: "response.content_part.done",
      item_id: "msg_1",
      output_index: 1,
      content_index: 0,
      part: { type: "output_text", text: "Deno 2 came out in 2024", annotations: [annotation] },
    }) +
    r({
      type: "response.output_item.done",
      output_index: 1,
      item: textMessage("Deno 2 came out in 2024", [annotation]),
    }) +
    r({
      type: "response.completed",
      response: resp("completed", [
        reasoningItem,
        textMessage("Deno 2 came out in 2024", [annotation]),
      ], rusage(50, 120, 90)),
    });
}

const webItem = {
  id: "ws_1",
  type: "web_search_call",
  status: "completed",
  action: {
    type: "search",
    query: "deno 2 release",
    sources: [{ type: "url", url: "https://deno.com/blog/v2.0" }],
  },
};
const fileItem = {
  id: "fs_1",
  type: "file_search_call",
  status: "completed",
  queries: ["deno"],
  results: null,
};
const imgItem = {
  id: "ig_1",
  type: "image_generation_call",
  status: "completed",
  result: "iVBORw0KGgo=",
  revised_prompt: "a dinosaur",
};
const mcpList = {
  id: "mcpl_1",
  type: "mcp_list_tools",
  server_label: "deepwiki",
  tools: [{ name: "ask", input_schema: {} }],
};
const mcpCall = {
  id: "mcp_1",
  type: "mcp_call",
  server_label: "deepwiki",
  name: "ask",
  arguments: '{"q":"deno"}',
  output: "Deno is a runtime.",
  error: null,
};
const customCall = {
  id: "ctc_1",
  type: "custom_tool_call",
  status: "completed",
  call_id: "call_C",
  name: "run_sql",
  input: "SELECT 1",
};
const fnCall = {
  id: "fc_1",
  type: "function_call",
  status: "completed",
  call_id: "call_F",
  name: "get_weather",
  arguments: '{"city":"Paris"}',
};

function responsesR2(): string {
  seq = 0;
  const out = [webItem, fileItem, imgItem, mcpList, mcpCall, customCall, fnCall];
  let s = created();
  // web search
  s += r({
    type: "response.output_item.added",
    output_index: 0,
    item: { ...webItem, status: "in_progress", action: { type: "search" } },
  });
  s += r({ type: "response.web_search_call.in_progress", output_index: 0, item_id: "ws_1" });
  s += r({ type: "response.web_search_call.searching", output_index: 0, item_id: "ws_1" });
  s += r({ type: "response.web_search_call.completed", output_index: 0, item_id: "ws_1" });
  s += r({ type: "response.output_item.done", output_index: 0, item: webItem });
  // file search
  s += r({
    type: "response.output_item.added",
    output_index: 1,
    item: { ...fileItem, status: "in_progress" },
  });
  s += r({ type: "response.file_search_call.searching", output_index: 1, item_id: "fs_1" });
  s += r({ type: "response.file_search_call.completed", output_index: 1, item_id: "fs_1" });
  s += r({ type: "response.output_item.done", output_index: 1, item: fileItem });
  // image generation with partial images
  s += r({
    type: "response.output_item.added",
    output_index: 2,
    item: { id: "ig_1", type: "image_generation_call", status: "in_progress", result: null },
  });
  s += r({ type: "response.image_generation_call.in_progress", output_index: 2, item_id: "ig_1" });
  s += r({ type: "response.image_generation_call.generating", output_index: 2, item_id: "ig_1" });
  s += r({
    type: "response.image_generation_call.partial_image",
    output_index: 2,
    item_id: "ig_1",
    partial_image_index: 0,
    partial_image_b64: "iVBOR",
  });
  s += r({ type: "response.image_generation_call.completed", output_index: 2, item_id: "ig_1" });
  s += r({ type: "response.output_item.done", output_index: 2, item: imgItem });
  // mcp
  s += r({ type: "response.output_item.added", output_index: 3, item: { ...mcpList, tools: [] } });
  s += r({ type: "response.mcp_list_tools.in_progress", output_index: 3, item_id: "mcpl_1" });
  s += r({ type: "response.mcp_list_tools.completed", output_index: 3, item_id: "mcpl_1" });
  s += r({ type: "response.output_item.done", output_index: 3, item: mcpList });
  s += r({
    type: "response.output_item.added",
    output_index: 4,
    item: { ...mcpCall, arguments: "", output: null },
  });
  s += r({ type: "response.mcp_call.in_progress", output_index: 4, item_id: "mcp_1" });
  s += r({
    type: "response.mcp_call_arguments.delta",
    output_index: 4,
    item_id: "mcp_1",
    delta: '{"q":',
  });
  s += r({
    type: "response.mcp_call_arguments.delta",
    output_index: 4,
    item_id: "mcp_1",
    delta: '"deno"}',
  });
  s += r({
    type: "response.mcp_call_arguments.done",
    output_index: 4,
    item_id: "mcp_1",
    arguments: '{"q":"deno"}',
  });
  s += r({ type: "response.mcp_call.completed", output_index: 4, item_id: "mcp_1" });
  s += r({ type: "response.output_item.done", output_index: 4, item: mcpCall });
  // custom tool call
  s += r({
    type: "response.output_item.added",
    output_index: 5,
    item: { ...customCall, input: "", status: "in_progress" },
  });
  s += r({
    type: "response.custom_tool_call_input.delta",
    output_index: 5,
    item_id: "ctc_1",
    delta: "SELECT",
  });
  s += r({
    type: "response.custom_tool_call_input.delta",
    output_index: 5,
    item_id: "ctc_1",
    delta: " 1",
  });
  s += r({
    type: "response.custom_tool_call_input.done",
    output_index: 5,
    item_id: "ctc_1",
    input: "SELECT 1",
  });
  s += r({ type: "response.output_item.done", output_index: 5, item: customCall });
  // function call
  s += r({
    type: "response.output_item.added",
    output_index: 6,
    item: { ...fnCall, arguments: "", status: "in_progress" },
  });
  s += r({
    type: "response.function_call_arguments.delta",
    output_index: 6,
    item_id: "fc_1",
    delta: '{"city":',
  });
  s += r({
    type: "response.function_call_arguments.delta",
    output_index: 6,
    item_id: "fc_1",
    delta: '"Paris"}',
  });
  s += r({
    type: "response.function_call_arguments.done",
    output_index: 6,
    item_id: "fc_1",
    arguments: '{"city":"Paris"}',
  });
  s += r({ type: "response.output_item.done", output_index: 6, item: fnCall });
  s += r({ type: "response.completed", response: resp("completed", out, rusage(500, 300)) });
  return s;
}

const refusalMessage = {
  id: "msg_2",
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "refusal", refusal: "I can't help with that." }],
};
function responsesR3(): string {
  seq = 0;
  return created() +
    r({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...refusalMessage, status: "in_progress", content: [] },
    }) +
    r({
      type: "response.content_part.added",
      output_index: 0,
      item_id: "msg_2",
      content_index: 0,
      part: { type: "refusal", refusal: "" },
    }) +
    r({
      type: "response.refusal.delta",
      output_index: 0,
      item_id: "msg_2",
      content_index: 0,
      delta: "I can't ",
    }) +
    r({
      type: "response.refusal.delta",
      output_index: 0,
      item_id: "msg_2",
      content_index: 0,
      delta: "help with that.",
    }) +
    r({
      type: "response.refusal.done",
      output_index: 0,
      item_id: "msg_2",
      content_index: 0,
      refusal: "I can't help with that.",
    }) +
    r({
      type: "response.content_part.done",
      output_index: 0,
      item_id: "msg_2",
      content_index: 0,
      part: refusalMessage.content[0],
    }) +
    r({ type: "response.output_item.done", output_index: 0, item: refusalMessage }) +
    r({ type: "response.completed", response: resp("completed", [refusalMessage], rusage(20, 8)) });
}

function responsesR4(): string {
  seq = 0;
  const partial = textMessage("Once upon");
  return created() +
    r({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...partial, status: "in_progress", content: [] },
    }) +
    r({
      type: "response.content_part.added",
      output_index: 0,
      item_id: "msg_1",
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] },
    }) +
    r({
      type: "response.output_text.delta",
      output_index: 0,
      item_id: "msg_1",
      content_index: 0,
      delta: "Once upon",
    }) +
    r({
      type: "response.incomplete",
      response: resp("incomplete", [{ ...partial, status: "incomplete" }], rusage(20, 16), {
        incomplete_details: { reason: "max_output_tokens" },
      }),
    });
}

export const RESPONSES: Scenario[] = [
  {
    name: "reasoning with two summary parts + encrypted content, text with url_citation annotation",
    protocol: "openai-responses",
    stream: responsesR1(),
    body: resp(
      "completed",
      [reasoningItem, textMessage("Deno 2 came out in 2024", [annotation])],
      rusage(50, 120, 90),
    ),
    expect: {
      text: "Deno 2 came out in 2024",
      reasoning: "**Plan** look it up\n\n**Answer** from memory",
      finish: "stop",
      input: 50,
      output: 120,
      citations: ["https://deno.com/blog/v2.0"],
    },
  },
  {
    name:
      "hosted tools: web_search, file_search, image_generation partial, mcp, custom + function calls",
    protocol: "openai-responses",
    stream: responsesR2(),
    body: resp(
      "completed",
      [webItem, fileItem, imgItem, mcpList, mcpCall, customCall, fnCall],
      rusage(500, 300),
    ),
    expect: {
      text: "",
      tools: [
        { id: "call_C", name: "run_sql", args: "SELECT 1" },
        { id: "call_F", name: "get_weather", args: '{"city":"Paris"}' },
      ],
      finish: "tool_calls",
      input: 500,
      output: 300,
      searches: 1,
    },
  },
  {
    name: "refusal content part",
    protocol: "openai-responses",
    stream: responsesR3(),
    body: resp("completed", [refusalMessage], rusage(20, 8)),
    expect: {
      text: "I can't help with that.",
      refusal: "I can't help with that.",
      finish: "stop",
      input: 20,
      output: 8,
    },
  },
  {
    name: "response.incomplete max_output_tokens",
    protocol: "openai-responses",
    stream: responsesR4(),
    body: resp(
      "incomplete",
      [{ ...textMessage("Once upon"), status: "incomplete" }],
      rusage(20, 16),
      {
        incomplete_details: { reason: "max_output_tokens" },
      },
    ),
    expect: { text: "Once upon", finish: "length", input: 20, output: 16 },
  },
];

export const ALL: Scenario[] = [...ANTHROPIC, ...CHAT, ...RESPONSES];

// ---------------------------------------------------------------------------------------------
// Streams that fail mid-way (error events, response.failed): billed once, an in-stream error.

function responsesFailed(): string {
  seq = 0;
  return created() +
    r({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...textMessage(""), status: "in_progress", content: [] },
    }) +
    r({
      type: "response.output_text.delta",
      output_index: 0,
      item_id: "msg_1",
      content_index: 0,
      delta: "Partial",
    }) +
    r({
      type: "response.failed",
      response: resp("failed", [], rusage(20, 3), {
        error: { code: "server_error", message: "The model failed" },
      }),
    });
}
function responsesError(): string {
  seq = 0;
  return created() +
    r({
      type: "response.output_item.added",
      output_index: 0,
      item: { ...textMessage(""), status: "in_progress", content: [] },
    }) +
    r({
      type: "response.output_text.delta",
      output_index: 0,
      item_id: "msg_1",
      content_index: 0,
      delta: "Partial",
    }) +
    r({ type: "error", code: "server_error", message: "Something broke", param: null });
}

export const FAILING: { name: string; protocol: Protocol; stream: string }[] = [
  {
    name: "anthropic error event mid-stream",
    protocol: "anthropic-messages",
    stream: ANTHROPIC_ERROR_STREAM,
  },
  { name: "chat error chunk mid-stream", protocol: "openai-chat", stream: CHAT_ERROR_STREAM },
  {
    name: "responses response.failed mid-stream",
    protocol: "openai-responses",
    stream: responsesFailed(),
  },
  {
    name: "responses error event mid-stream",
    protocol: "openai-responses",
    stream: responsesError(),
  },
];

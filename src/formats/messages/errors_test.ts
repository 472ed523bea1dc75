import assert from "node:assert/strict";
import { errorBody } from "../../http/envelopes.ts";
import { decodeChatError } from "../chat/errors.ts";
import { decodeResponsesStreamError } from "../responses/errors.ts";
import {
  asPromptTooLong,
  decodeMessagesError,
  decodeMessagesStreamError,
  sanitizeUpstreamMessage,
} from "./errors.ts";

const body = (type: string, message: string) =>
  JSON.stringify({ type: "error", error: { type, message }, request_id: "req_011CabcDEF" });

Deno.test("upstream 400 stays 400 with the upstream message", () => {
  const e = decodeMessagesError(400, body("invalid_request_error", "max_tokens: Field required"));
  assert.equal(e.status, 400);
  assert.equal(e.message, "max_tokens: Field required");
  assert.deepEqual(errorBody("messages", e), {
    type: "error",
    error: { type: "invalid_request_error", message: "max_tokens: Field required" },
  });
});

Deno.test("upstream 400 about our credit balance is the provider's failure (502)", () => {
  const e = decodeMessagesError(
    400,
    body("invalid_request_error", "Your credit balance is too low to access the Anthropic API."),
  );
  assert.equal(e.status, 502);
  assert.doesNotMatch(e.message, /credit balance/);
});

Deno.test("an upstream 402, or our credit balance under another status or in the stream, says nothing of it", () => {
  const words = "Your credit balance is too low to access the Anthropic API.";
  for (
    const e of [
      decodeMessagesError(402, body("billing_error", words)),
      decodeMessagesError(402, "Payment Required"),
      decodeMessagesError(500, body("api_error", words)),
      decodeMessagesStreamError({
        type: "error",
        error: { type: "billing_error", message: words },
      }),
    ]
  ) {
    assert.equal(e.status, 502);
    assert.doesNotMatch(JSON.stringify(errorBody("messages", e)), /credit|Anthropic|Payment/i);
  }
});

Deno.test("upstream 401 (our key) becomes a 502 that says nothing of the key", () => {
  const e = decodeMessagesError(
    401,
    body("authentication_error", "invalid x-api-key sk-ant-api03-XYZ"),
  );
  assert.equal(e.status, 502);
  assert.doesNotMatch(e.message, /x-api-key|sk-ant/);
});

Deno.test("upstream 403 is the spec's 403 permission_error (model access denied), in the gateway's words", () => {
  const e = decodeMessagesError(
    403,
    body(
      "permission_error",
      "Your API key sk-ant-api03-XYZ does not have permission to use claude-x",
    ),
  );
  assert.equal(e.status, 403);
  assert.equal(e.message, "the model provider denied access to the model");
});

Deno.test("upstream 429 stays 429 without the organisation id", () => {
  const e = decodeMessagesError(
    429,
    body(
      "rate_limit_error",
      "would exceed the rate limit for your organization (d3f27ff7-9afe-4ee2-9645-76ecfc73c2b7)",
    ),
  );
  assert.equal(e.status, 429);
  assert.doesNotMatch(e.message, /d3f27ff7/);
  assert.equal((errorBody("messages", e).error as { type: string }).type, "rate_limit_error");
});

Deno.test("upstream 529 overloaded becomes 503 overloaded_error", () => {
  const e = decodeMessagesError(529, {
    type: "error",
    error: { type: "overloaded_error", message: "Overloaded" },
  });
  assert.equal(e.status, 503);
  assert.equal((errorBody("messages", e).error as { type: string }).type, "overloaded_error");
});

Deno.test("upstream 5xx, 404 and bodies that are not JSON become 502", () => {
  assert.equal(decodeMessagesError(500, body("api_error", "Internal server error")).status, 502);
  assert.equal(decodeMessagesError(404, body("not_found_error", "model: claude-x")).status, 502);
  const html = decodeMessagesError(502, "<html>Bad Gateway</html>");
  assert.equal(html.status, 502);
  assert.equal(decodeMessagesError(500, undefined).message, "upstream provider error (HTTP 500)");
});

Deno.test("in-stream errors are classified by their type", () => {
  const s = (type: string) =>
    decodeMessagesStreamError({ type: "error", error: { type, message: "m" } }).status;
  assert.equal(s("overloaded_error"), 503);
  assert.equal(s("rate_limit_error"), 429);
  assert.equal(s("api_error"), 502);
  assert.equal(s("invalid_request_error"), 502);
  assert.equal(s("authentication_error"), 502);
});

Deno.test("sanitising removes keys, uuids and request ids and bounds the length", () => {
  assert.equal(
    sanitizeUpstreamMessage(
      "key sk-ant-api03-abc_DEF-1 org 123e4567-e89b-12d3-a456-426614174000 req_011CVEA3",
    ),
    "key [redacted] org [redacted] [redacted]",
  );
  assert.equal(sanitizeUpstreamMessage("x".repeat(5000)).length, 1001);
});

Deno.test("a context overflow in any provider's words is Anthropic's 'prompt is too long', with its counts", () => {
  const openai = (message: string, code: string | number | null = "context_length_exceeded") =>
    asPromptTooLong(
      decodeChatError(400, { error: { message, type: "invalid_request_error", code } }),
    ).message;
  assert.equal(
    openai(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens. Please reduce the length of the messages.",
    ),
    "prompt is too long: 130415 tokens > 128000 maximum",
  );
  // GPT-5's words.
  assert.equal(
    openai(
      "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300123 tokens. Please reduce the length of the messages.",
    ),
    "prompt is too long: 300123 tokens > 272000 maximum",
  );
  // OpenRouter's: a numeric code, its own words.
  assert.equal(
    openai(
      'This endpoint\'s maximum context length is 131,072 tokens. However, you requested about 140,000 tokens (139000 of text input, 1000 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
      400,
    ),
    "prompt is too long: 140000 tokens > 131072 maximum",
  );
  // The responses API gives no counts: its words follow.
  assert.equal(
    asPromptTooLong(
      decodeResponsesStreamError({
        code: "context_length_exceeded",
        message: "Your input exceeds the context window of this model.",
      }),
    ).message,
    "prompt is too long: Your input exceeds the context window of this model.",
  );
  // Anthropic's own stays as it came; another 400 is left alone.
  const own = decodeMessagesError(
    400,
    body("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
  );
  assert.equal(asPromptTooLong(own).message, "prompt is too long: 208310 tokens > 200000 maximum");
  // Gemini's, through OpenRouter.
  assert.equal(
    openai(
      "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
      400,
    ),
    "prompt is too long: 1200000 tokens > 1048576 maximum",
  );
  // Behind OpenRouter's prefix (Claude through OpenRouter), Anthropic's words lead.
  assert.equal(
    openai("Provider returned error: prompt is too long: 208310 tokens > 200000 maximum", 400),
    "prompt is too long: 208310 tokens > 200000 maximum",
  );
  assert.equal(
    openai("Invalid 'temperature'.", "decimal_below_min_value"),
    "Invalid 'temperature'.",
  );
});

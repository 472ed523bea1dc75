import assert from "node:assert/strict";
import { decodeChatError, decodeChatStreamError, sanitizeMessage } from "./errors.ts";

// Bodies of the shapes OpenAI sends (see the recordings under shared/fixtures), our own values.
const openaiError = (message: string, code: string | null, type = "invalid_request_error") => ({
  error: { message, type, param: null, code },
});

const CASES: [string, number, unknown, number, RegExp][] = [
  [
    "a bad parameter stays a 400 with the upstream's words",
    400,
    openaiError(
      "Unsupported value: 'temperature' does not support 0.5 with this model.",
      "unsupported_value",
    ),
    400,
    /^Unsupported value: 'temperature'/,
  ],
  [
    "our rejected key is a 502 that says nothing of the key",
    401,
    openaiError(
      "Incorrect API key provided: sk-proj-********************1234. See platform.",
      "invalid_api_key",
    ),
    502,
    /^the model provider rejected the gateway's request$/,
  ],
  [
    "our exhausted provider credit is a 502",
    402,
    { error: { message: "Insufficient credits", code: 402 } },
    502,
    /rejected the gateway's request/,
  ],
  [
    "OpenRouter's bare provider error says what the vendor said (its metadata.raw)",
    400,
    {
      error: {
        message: "Provider returned error",
        code: 400,
        metadata: {
          raw: JSON.stringify({
            error: {
              code: 400,
              message: "Unable to submit request because function call `ls` in the 2. content " +
                "block is missing a `thought_signature`.",
              status: "INVALID_ARGUMENT",
            },
          }),
          provider_name: "Google",
        },
      },
      user_id: "user_2sxOYVmS9AcRqi12cDDGyhs8tTa",
    },
    400,
    /^Provider returned error: Unable to submit request because .* missing a `thought_signature`\.$/,
  ],
  [
    "a moderation refusal stays a 403",
    403,
    {
      error: {
        code: 403,
        message: "Your input was flagged by moderation",
        metadata: { reasons: ["x"] },
      },
    },
    403,
    /flagged by moderation/,
  ],
  [
    "another 403 (no access to the model) is the spec's 403, in the gateway's words",
    403,
    openaiError("Project proj_AbCdEf123456 does not have access to model gpt-5", "model_not_found"),
    403,
    /^the model provider denied access to the model$/,
  ],
  [
    "a missing model at the provider is a 502",
    404,
    openaiError(
      "The model `gpt-9` does not exist or you do not have access to it.",
      "model_not_found",
    ),
    502,
    /not available at the provider/,
  ],
  [
    "OpenRouter's 404 for a model none of whose endpoints takes the request's tools is the client's 400, in its words",
    404,
    {
      error: {
        message:
          "No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing",
        code: 404,
      },
    },
    400,
    /^No endpoints found that support tool use\./,
  ],
  [
    "so is its 404 for a tool choice no endpoint takes",
    404,
    {
      error: {
        message:
          "No endpoints found that support the provided 'tool_choice' value. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing",
        code: 404,
      },
    },
    400,
    /^No endpoints found that support the provided 'tool_choice' value/,
  ],
  [
    "OpenRouter's 404 for a model it does not know stays a 502",
    404,
    { error: { message: "No endpoints found for x-ai/grok-0.", code: 404 } },
    502,
    /not available at the provider/,
  ],
  [
    "a provider timeout is a 504",
    408,
    openaiError("Request timed out.", "timeout"),
    504,
    /did not answer in time/,
  ],
  [
    "a rate limit stays a 429, organisation id removed",
    429,
    openaiError(
      "Rate limit reached for gpt-4o in organization org-Zx81abc9Qw on tokens per min (TPM).",
      "rate_limit_exceeded",
      "tokens",
    ),
    429,
    /^Rate limit reached for gpt-4o in organization \*\*\* on tokens per min/,
  ],
  [
    "our exhausted quota is a 502, not the client's rate limit",
    429,
    openaiError(
      "You exceeded your current quota, please check your plan.",
      "insufficient_quota",
      "insufficient_quota",
    ),
    502,
    /quota/,
  ],
  [
    "an upstream 500 is a 502",
    500,
    openaiError("The server had an error", null, "server_error"),
    502,
    /HTTP 500/,
  ],
  ["an upstream 503 is a 502", 503, "<html>Service Unavailable</html>", 502, /HTTP 503/],
  ["a 422 is a client error", 422, "Unprocessable: messages too long", 400, /^Unprocessable/],
];

for (const [what, status, body, want, message] of CASES) {
  Deno.test(`decodeChatError: ${what}`, () => {
    const e = decodeChatError(status, body);
    assert.equal(e.status, want);
    assert.match(e.message, message);
  });
}

Deno.test("decodeChatError: a 429 keeps the upstream's Retry-After", () => {
  assert.equal(
    decodeChatError(429, openaiError("slow down", "rate_limit_exceeded"), 12).retryAfter,
    12,
  );
});

Deno.test("decodeChatError: a JSON body given as text is read as JSON", () => {
  const e = decodeChatError(400, JSON.stringify(openaiError("bad 'stop'", "invalid_value")));
  assert.equal(e.message, "bad 'stop'");
});

Deno.test("decodeChatError: an empty body still gives a message", () => {
  assert.equal(decodeChatError(400, undefined).message, "the model provider rejected the request");
  assert.equal(decodeChatError(429, {}).message, "rate limited by the model provider");
});

Deno.test("decodeChatStreamError: always a 502 with the sanitised message", () => {
  const e = decodeChatStreamError({
    code: "server_error",
    message: "key sk-or-v1-0123456789abcdef bad",
  });
  assert.equal(e.status, 502);
  assert.equal(e.message, "key *** bad");
  assert.equal(decodeChatStreamError("Internal error").message, "Internal error");
  assert.equal(decodeChatStreamError(null).message, "the model provider failed");
});

Deno.test("sanitizeMessage removes keys, bearer tokens, account ids and long tokens", () => {
  const planted = [
    "sk-proj-Abc123Def456Ghi789",
    "sk-ant-api03-AAAAAAAAAAAAAAAA",
    "sk-or-v1-0123456789abcdef",
    "xai-0123456789abcdefABCDEF",
    "gsk_0123456789abcdefABCDEF",
    "AIzaSyA0123456789abcdefghij",
    "org-Zx81abc9Qw",
    "proj_AbCdEf123456",
    "eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ikp",
  ];
  for (const secret of planted) {
    const out = sanitizeMessage(`failed for ${secret} today`);
    assert.ok(!out.includes(secret), out);
    assert.match(out, /^failed for \S+ today$/);
  }
  assert.equal(sanitizeMessage("Authorization: Bearer abc.def-ghi"), "Authorization: Bearer ***");
  assert.equal(sanitizeMessage("api_key=hunter2 rejected"), "*** rejected");
  assert.equal(
    sanitizeMessage("Unsupported value: 'messages[0].role' does not support 'developer'."),
    "Unsupported value: 'messages[0].role' does not support 'developer'.",
  );
  assert.equal(sanitizeMessage("x".repeat(5000)).length <= 1000, true);
});

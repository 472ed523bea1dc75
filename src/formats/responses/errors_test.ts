import assert from "node:assert/strict";
import { decodeResponsesError, decodeResponsesStreamError } from "./errors.ts";

const err = (message: string, type: string, code: string | null = null) => ({
  error: { message, type, param: null, code },
});

Deno.test("decodeResponsesError: the spec's status table for the responses endpoint", () => {
  const cases: [number, unknown, number][] = [
    [400, err("Invalid 'temperature'", "invalid_request_error", "decimal_below_min_value"), 400],
    [422, err("bad", "invalid_request_error"), 400],
    [401, err("Incorrect API key provided: sk-proj-abc***xyz", "invalid_request_error"), 502],
    [402, "Payment Required", 502],
    [403, err("Your request was flagged by our moderation", "invalid_request_error"), 403],
    [403, err("Project proj_AbCdEf123456 does not have access", "invalid_request_error"), 403],
    [404, err("The model `gpt-x` does not exist", "invalid_request_error", "model_not_found"), 502],
    [408, "Request Timeout", 408],
    [429, err("Rate limit reached for gpt-5 in organization org-AbC123def456", "tokens"), 429],
    [429, err("You exceeded your current quota", "insufficient_quota", "insufficient_quota"), 502],
    [500, err("The server had an error", "server_error"), 502],
    [503, "<html>Service Unavailable</html>", 502],
    [504, "Gateway Timeout", 504],
    [524, "", 504],
  ];
  for (const [status, body, expected] of cases) {
    assert.equal(
      decodeResponsesError(status, body).status,
      expected,
      `${status} ${JSON.stringify(body)}`,
    );
  }
});

Deno.test("decodeResponsesError: nothing about the gateway's provider account leaks", () => {
  const cases: [number, unknown][] = [
    [
      401,
      err(
        "Incorrect API key provided: sk-proj-abcdefghij1234. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
      ),
    ],
    [
      429,
      err(
        "Rate limit reached for gpt-5 in organization org-AbC123def456 on tokens per min",
        "tokens",
        "rate_limit_exceeded",
      ),
    ],
    [
      429,
      err(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
      ),
    ],
    [
      403,
      err(
        "Project `proj_AbCdEf123456` does not have access to model `o3`",
        "invalid_request_error",
        "model_not_found",
      ),
    ],
  ];
  for (const [status, body] of cases) {
    const e = decodeResponsesError(status, body);
    assert.doesNotMatch(e.message, /sk-proj|org-AbC|proj_AbC|api-keys|billing/, e.message);
  }
});

Deno.test("decodeResponsesError: a 429 keeps the upstream's Retry-After, as does an overloaded 503", () => {
  const e = decodeResponsesError(429, err("Rate limit reached", "requests"), 7);
  assert.equal(e.retryAfter, 7);
  assert.equal(e.message, "Rate limit reached");
  const busy = decodeResponsesError(
    503,
    err("The engine is currently overloaded", "server_error"),
    3,
  );
  assert.deepEqual([busy.status, busy.retryAfter], [502, 3]);
  assert.equal(decodeResponsesError(500, err("oops", "server_error"), 3).retryAfter, undefined);
});

Deno.test("decodeResponsesStreamError: in-stream codes keep the status class the client can act on", () => {
  const cases: [unknown, number, RegExp][] = [
    [{ code: "rate_limit_exceeded", message: "slow down" }, 429, /slow down/],
    [{ code: "context_length_exceeded", message: "too long" }, 400, /too long/],
    [{ code: "invalid_prompt", message: "flagged" }, 400, /flagged/],
    [{ code: "server_error", message: "oops" }, 502, /oops/],
    [{ type: "insufficient_quota", code: "insufficient_quota", message: "pay us" }, 502, /quota/],
    [{ code: "vector_store_timeout", message: "vs" }, 502, /provider failed/],
    [null, 502, /provider failed/],
  ];
  for (const [error, status, message] of cases) {
    const e = decodeResponsesStreamError(error);
    assert.equal(e.status, status, JSON.stringify(error));
    assert.match(e.message, message);
  }
});

Deno.test("streamError: an overloaded provider is this endpoint's 502 in the stream too", async () => {
  const { streamError } = await import("./errors.ts");
  const { GatewayError, PROVIDER_OVERLOADED } = await import("../../http/gateway_error.ts");
  const e = streamError(new GatewayError(503, "overloaded", { code: PROVIDER_OVERLOADED }));
  assert.equal((e.error as { code: number }).code, 502);
  const none = streamError(new GatewayError(503, "no provider"));
  assert.equal((none.error as { code: number }).code, 503, "no provider at all stays 503");
});

Deno.test("decodeResponsesStreamError: a full context window keeps its code for the client (Codex branches on it)", async () => {
  const { responsesErrorCode, streamError } = await import("./errors.ts");
  const message = "Your input exceeds the context window of this model.";
  for (
    const error of [
      { code: "context_length_exceeded", message },
      { type: "invalid_request_error", code: "context_length_exceeded", message, param: "input" },
    ]
  ) {
    const e = decodeResponsesStreamError(error);
    assert.equal(e.status, 400);
    assert.equal(responsesErrorCode(e), "context_length_exceeded");
    assert.equal(streamError(e).code, "context_length_exceeded");
  }
  const limited = decodeResponsesStreamError({ code: "rate_limit_exceeded", message: "slow" });
  assert.equal(responsesErrorCode(limited), "rate_limit_exceeded");
  const other = decodeResponsesStreamError({ code: "invalid_prompt", message: "flagged" });
  assert.equal(responsesErrorCode(other), "invalid_prompt");
});

/** Codex's reading of an in-stream rate limit's wait (codex-rs codex-api sse/responses.rs). */
const CODEX_WAIT = /try again in\s*(\d+(?:\.\d+)?)\s*(s|ms|seconds?)/i;

Deno.test("an in-stream rate limit says when to try again, in the error event and response.failed", async () => {
  const { streamError } = await import("./errors.ts");
  const { responseError } = await import("./response_object.ts");
  const { decodeMessagesStreamError } = await import("../messages/errors.ts");
  const { GatewayError } = await import("../../http/gateway_error.ts");
  // Anthropic's in-stream rate limit names no wait: the gateway's HTTP default is said.
  const claude = decodeMessagesStreamError({
    type: "error",
    error: {
      type: "rate_limit_error",
      message: "Number of request tokens has exceeded your rate limit",
    },
  });
  for (const said of [streamError(claude), responseError(claude)]) {
    assert.equal(said.code, "rate_limit_exceeded");
    assert.equal(String(said.message).match(CODEX_WAIT)?.[1], "5", String(said.message));
  }
  // OpenAI's own words that name the wait stay as they came.
  const openai = decodeResponsesStreamError({
    code: "rate_limit_exceeded",
    message: "Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 1.5s.",
  });
  assert.equal(streamError(openai).message, openai.message);
  assert.equal(responseError(openai).message, openai.message);
  // Other errors are left alone.
  const other = new GatewayError(502, "the model provider failed");
  assert.equal(streamError(other).message, "the model provider failed");
});

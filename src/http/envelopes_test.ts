/**
 * The spec's five error bodies, rendered exactly: generic, coded, message-format, the
 * limiter's own 429 (with Retry-After) and the plain-text 404.
 */
import assert from "node:assert/strict";
import {
  errorBody,
  messagesErrorType,
  renderError,
  renderNotFound,
  renderRateLimited,
} from "./envelopes.ts";
import {
  badRequest,
  GatewayError,
  insufficientBalance,
  modelNotFound,
  noProvider,
  unauthorized,
} from "./gateway_error.ts";

Deno.test("envelopes: generic is {error:{code:int,message,metadata:object}} and nothing else", async () => {
  const res = renderError("generic", unauthorized("invalid or revoked API key"));
  assert.equal(res.status, 401);
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(await res.json(), {
    error: { code: 401, message: "invalid or revoked API key", metadata: {} },
  });
});

Deno.test("envelopes: generic keeps metadata (it may name the provider)", () => {
  const e = new GatewayError(502, "upstream failed", { metadata: { provider_name: "openai" } });
  assert.deepEqual(errorBody("generic", e), {
    error: { code: 502, message: "upstream failed", metadata: { provider_name: "openai" } },
  });
});

Deno.test("envelopes: coded is {error:{message,type:string,code:string}}", async () => {
  const res = renderError("coded", unauthorized("invalid API key"));
  assert.equal(res.status, 401);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "type"]);
  assert.equal(body.error.message, "invalid API key");
  assert.equal(typeof body.error.type, "string");
  assert.equal(typeof body.error.code, "string");
});

Deno.test("envelopes: coded uses the spec's named type/code pairs on 400", () => {
  assert.deepEqual(errorBody("coded", modelNotFound("nope/nope")), {
    error: {
      message: 'model not found: "nope/nope"',
      type: "invalid_model",
      code: "MODEL_NOT_FOUND",
    },
  });
  // A slug no catalogue has, 100 000 characters long, is quoted clipped.
  const long = modelNotFound("x/" + "y".repeat(99_998)).message;
  assert.ok(long.length < 300, `${long.length} characters`);
  assert.match(long, /… \(100000 characters\)$/);
  const params = badRequest("aspect_ratio must be one of 1:1", "IMAGE_PARAMS_INVALID");
  assert.deepEqual(errorBody("coded", params), {
    error: {
      message: "aspect_ratio must be one of 1:1",
      type: "invalid_request",
      code: "IMAGE_PARAMS_INVALID",
    },
  });
});

Deno.test("envelopes: coded 402 carries extra fields such as currentBalance", () => {
  const body = errorBody("coded", insufficientBalance({ currentBalance: 1.5 })) as {
    error: Record<string, unknown>;
  };
  assert.equal(body.error.currentBalance, 1.5);
  assert.equal(body.error.message, "Недостаточно средств на балансе");
  assert.equal(typeof body.error.type, "string");
  assert.equal(typeof body.error.code, "string");
});

Deno.test("envelopes: message-format is {type:'error',error:{type,message}} and nothing else", async () => {
  const res = renderError("messages", unauthorized("invalid API key"));
  assert.equal(res.status, 401);
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(await res.json(), {
    type: "error",
    error: { type: "authentication_error", message: "invalid API key" },
  });
});

Deno.test("envelopes: message-format error.type follows the spec's table", () => {
  const table: [number, string][] = [
    [400, "invalid_request_error"],
    [401, "authentication_error"],
    [402, "invalid_request_error"],
    [403, "permission_error"],
    [404, "not_found_error"],
    [429, "rate_limit_error"],
    [503, "overloaded_error"],
    [500, "api_error"],
    [502, "api_error"],
    [504, "api_error"],
  ];
  for (const [status, type] of table) assert.equal(messagesErrorType(status), type, `${status}`);
});

Deno.test("envelopes: Retry-After is set from the error (503 no provider)", async () => {
  const res = renderError("generic", noProvider("openai/gpt-4o-mini"));
  assert.equal(res.status, 503);
  assert.equal(res.headers.get("retry-after"), "5");
  await res.body?.cancel();
});

Deno.test("envelopes: extra headers pass through (Allow on 405)", async () => {
  const res = renderError("messages", new GatewayError(405, "use POST"), { allow: "POST" });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "POST");
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "invalid_request_error");
});

Deno.test("envelopes: limiter 429 is {error:string,code:'RATE_LIMITED',retryAfter:int} + Retry-After", async () => {
  const res = renderRateLimited(12.3);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "13");
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.deepEqual(Object.keys(body).sort(), ["code", "error", "retryAfter"]);
  assert.equal(typeof body.error, "string");
  assert.equal(body.code, "RATE_LIMITED");
  assert.equal(body.retryAfter, 13);
  assert.ok(Number.isInteger(body.retryAfter));
});

Deno.test("envelopes: limiter 429 never says Retry-After: 0", async () => {
  const res = renderRateLimited(0);
  assert.equal(res.headers.get("retry-after"), "1");
  assert.equal((await res.json()).retryAfter, 1);
});

Deno.test("envelopes: 404 is plain text '404 Not Found', not JSON", async () => {
  const res = renderNotFound();
  assert.equal(res.status, 404);
  const type = res.headers.get("content-type") ?? "";
  assert.match(type, /^text\/plain/);
  assert.doesNotMatch(type, /json/);
  assert.equal(await res.text(), "404 Not Found");
});

import assert from "node:assert/strict";
import { fitsOpenAIStrict } from "./openai_strict.ts";

const closed = (properties: Record<string, unknown>) => ({
  type: "object",
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});

Deno.test("fitsOpenAIStrict: closed objects with every property required, at any depth", () => {
  assert.equal(fitsOpenAIStrict(closed({})), true);
  assert.equal(fitsOpenAIStrict(closed({ a: { type: ["string", "null"] } })), true);
  const refs = {
    ...closed({ a: { $ref: "#/$defs/A" }, b: { anyOf: [{ type: "string" }, closed({})] } }),
    $defs: { A: closed({ n: { type: "integer", minimum: 1 } }) },
  };
  assert.equal(fitsOpenAIStrict(refs), true);
  assert.equal(fitsOpenAIStrict({ ...refs, $defs: { A: { type: "object" } } }), false);
  assert.equal(fitsOpenAIStrict(closed({ b: { anyOf: [{ type: "object" }] } })), false);
  assert.equal(
    fitsOpenAIStrict(closed({ l: { type: "array", items: { type: "object" } } })),
    false,
  );
});

Deno.test("fitsOpenAIStrict: an open or optional property, a keyword strict mode lacks, a root that is no object", () => {
  assert.equal(fitsOpenAIStrict({ type: "object" }), false);
  assert.equal(fitsOpenAIStrict({ ...closed({ a: { type: "string" } }), required: [] }), false);
  assert.equal(fitsOpenAIStrict(closed({ a: { allOf: [{ type: "string" }] } })), false);
  assert.equal(fitsOpenAIStrict(closed({ a: { type: "array", uniqueItems: true } })), false);
  assert.equal(fitsOpenAIStrict({ anyOf: [closed({})] }), false);
  assert.equal(fitsOpenAIStrict(closed({ a: true })), false);
});

// Each of these OpenAI's strict mode refuses with a 400 (a messages client's strict tool or
// output format that reached OpenAI unconstrained before, and was answered, now would not be).
Deno.test("fitsOpenAIStrict: a schema of no type (`{}`, untyped items) is not taken", () => {
  // OpenAI: "In context=('properties', 'a'), schema must have a 'type' key."
  assert.equal(fitsOpenAIStrict(closed({ a: {} })), false);
  assert.equal(fitsOpenAIStrict(closed({ a: { description: "anything" } })), false);
  assert.equal(fitsOpenAIStrict(closed({ l: { type: "array", items: {} } })), false);
  // A reference names its type elsewhere.
  assert.equal(
    fitsOpenAIStrict({ ...closed({ a: { $ref: "#/$defs/A" } }), $defs: { A: closed({}) } }),
    true,
  );
});

Deno.test("fitsOpenAIStrict: oneOf (a discriminated union, as Pydantic and zod write it) is not taken", () => {
  const union = { oneOf: [closed({ k: { type: "string" } }), closed({ n: { type: "number" } })] };
  assert.equal(fitsOpenAIStrict(closed({ u: union })), false);
});

Deno.test("fitsOpenAIStrict: tuples and schemas past OpenAI's limits are not taken", () => {
  const tuple = { type: "array", prefixItems: [{ type: "string" }], items: false };
  assert.equal(fitsOpenAIStrict(closed({ t: tuple })), false);
  assert.equal(
    fitsOpenAIStrict(closed({ t: { type: "array", items: [{ type: "string" }] } })),
    false,
  );
  // Ten levels of objects are within the limit, eleven are not.
  const nested = (levels: number): Record<string, unknown> =>
    levels === 1 ? closed({}) : closed({ a: nested(levels - 1) });
  assert.equal(fitsOpenAIStrict(nested(10)), true);
  assert.equal(fitsOpenAIStrict(nested(11)), false);
  // 1 000 enum values in all are the limit.
  const values = (n: number) => ({ type: "string", enum: Array.from({ length: n }, String) });
  assert.equal(fitsOpenAIStrict(closed({ e: values(1_000) })), true);
  assert.equal(fitsOpenAIStrict(closed({ e: values(600), f: values(600) })), false);
  // 5 000 properties in all.
  const many = (n: number) =>
    closed(Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string" }])));
  assert.equal(fitsOpenAIStrict(many(5_000)), true);
  assert.equal(fitsOpenAIStrict(closed({ a: many(2_600), b: many(2_600) })), false);
});

Deno.test("fitsOpenAIStrict: a string format outside OpenAI's nine is not taken", () => {
  // OpenAI: "In context=('properties', 'url'), 'uri' is not a valid format." Anthropic's strict
  // mode takes `uri` (zod's .url(), MCP servers' tool schemas).
  assert.equal(fitsOpenAIStrict(closed({ url: { type: "string", format: "uri" } })), false);
  for (const format of ["date-time", "date", "time", "duration", "email", "hostname", "uuid"]) {
    assert.equal(fitsOpenAIStrict(closed({ a: { type: "string", format } })), true, format);
  }
});

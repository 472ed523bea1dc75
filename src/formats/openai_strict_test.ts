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

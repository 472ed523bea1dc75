import assert from "node:assert/strict";
import { anthropicOutputSchema } from "./output_schema.ts";

Deno.test("output schema: bounds and patterns move into descriptions, objects with properties are closed", () => {
  const out = anthropicOutputSchema({
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: {
      name: { type: "string", minLength: 1, pattern: "^[a-z]+$", description: "Lower case" },
      age: { type: "integer", minimum: 0, maximum: 150 },
      tags: { type: "array", items: { type: "string", format: "email" }, minItems: 1, maxItems: 5 },
      when: { type: "string", format: "date-time" },
      site: { type: "string", format: "idn-hostname" },
      inner: { type: "object", properties: { a: { type: "boolean" } } },
    },
    required: ["name", "age"],
  });
  assert.deepEqual(out, {
    type: "object",
    properties: {
      name: {
        type: "string",
        description: 'Lower case\n\n{minLength: 1, pattern: "^[a-z]+$"}',
      },
      age: { type: "integer", description: "{minimum: 0, maximum: 150}" },
      tags: {
        type: "array",
        items: { type: "string", format: "email" },
        minItems: 1,
        description: "{maxItems: 5}",
      },
      when: { type: "string", format: "date-time" },
      site: { type: "string", description: '{format: "idn-hostname"}' },
      inner: {
        type: "object",
        properties: { a: { type: "boolean" } },
        additionalProperties: false,
      },
    },
    required: ["name", "age"],
    additionalProperties: false,
  });
});

Deno.test("output schema: oneOf becomes anyOf, definitions become $defs and their refs follow", () => {
  const out = anthropicOutputSchema({
    type: "object",
    properties: {
      pet: { oneOf: [{ $ref: "#/definitions/Cat" }, { type: "null" }] },
      kind: { type: "string", enum: ["a", "b"] },
    },
    definitions: { Cat: { type: "object", properties: { lives: { type: "integer" } } } },
  });
  assert.deepEqual(out?.properties, {
    pet: { anyOf: [{ $ref: "#/$defs/Cat" }, { type: "null" }] },
    kind: { enum: ["a", "b"] },
  });
  assert.deepEqual(out?.$defs, {
    Cat: {
      type: "object",
      properties: { lives: { type: "integer" } },
      additionalProperties: false,
    },
  });
});

Deno.test("output schema: what cannot be expressed is undefined (the caller instructs instead)", () => {
  // A root that is not an object.
  assert.equal(anthropicOutputSchema({ type: "array", items: { type: "string" } }), undefined);
  // Recursion, through definitions and through the root.
  const tree = {
    type: "object",
    properties: { root: { $ref: "#/$defs/Node" } },
    $defs: {
      Node: {
        type: "object",
        properties: { kids: { type: "array", items: { $ref: "#/$defs/Node" } } },
      },
    },
  };
  assert.equal(anthropicOutputSchema(tree), undefined);
  assert.equal(
    anthropicOutputSchema({ type: "object", properties: { next: { $ref: "#" } } }),
    undefined,
  );
  // Not recursive: two properties sharing one definition.
  assert.ok(anthropicOutputSchema({
    type: "object",
    properties: { a: { $ref: "#/$defs/P" }, b: { $ref: "#/$defs/P" } },
    $defs: { P: { type: "string" } },
  }));
});

Deno.test("output schema: a root $ref is its definition; $ref descriptions and allOf beside anyOf stay", () => {
  const out = anthropicOutputSchema({
    $ref: "#/definitions/Answer",
    definitions: {
      Answer: {
        type: "object",
        properties: {
          who: { $ref: "#/definitions/Name", description: "The author" },
          what: { anyOf: [{ type: "string" }, { type: "null" }], allOf: [{ title: "x" }] },
        },
        required: ["who"],
      },
      Name: { type: "string" },
    },
  });
  assert.equal(out?.type, "object");
  assert.deepEqual(out?.properties, {
    who: { $ref: "#/$defs/Name", description: "The author" },
    what: { anyOf: [{ type: "string" }, { type: "null" }], allOf: [{ title: "x" }] },
  });
  assert.deepEqual(Object.keys(out?.$defs as object), ["Answer", "Name"]);
});

Deno.test("output schema: what closing or the subset would change is left to an instruction", () => {
  const root = (properties: Record<string, unknown>) => ({ type: "object", properties });
  for (
    const schema of [
      // A map: closing it would leave {} its only value.
      root({ tags: { type: "object", additionalProperties: { type: "string" } } }),
      root({ any: { type: "object" } }),
      { type: "object", additionalProperties: true, properties: { a: { type: "string" } } },
      { type: "object" },
      // Boolean schemas, tuples.
      root({ x: true }),
      root({ pair: { type: "array", items: [{ type: "string" }, { type: "number" }] } }),
      root({ pair: { type: "array", prefixItems: [{ type: "string" }] } }),
    ]
  ) {
    assert.equal(anthropicOutputSchema(schema), undefined, JSON.stringify(schema));
  }
});

import assert from "node:assert/strict";
import { instanceOf } from "./instance.ts";

Deno.test("instance: a value that fits the schema's types, enums, formats, bounds and refs", () => {
  const v = instanceOf({
    type: "object",
    properties: {
      city: { type: "string" },
      unit: { enum: ["c", "f"] },
      days: { type: "integer", minimum: 3, maximum: 7 },
      ratio: { type: "number", exclusiveMaximum: 0 },
      at: { type: "string", format: "date-time" },
      code: { type: "string", minLength: 12, maxLength: 12 },
      tags: { type: "array", items: { type: "string" }, minItems: 2 },
      maybe: { anyOf: [{ type: "null" }, { type: "boolean" }] },
      kind: { const: "fixed" },
      pet: { $ref: "#/$defs/Pet" },
      list: { type: ["array", "null"], items: { type: "integer" } },
    },
    $defs: { Pet: { type: "object", properties: { name: { type: "string" } } } },
  }, 2);
  assert.deepEqual(v, {
    city: "mock city 2",
    unit: "c",
    days: 3,
    ratio: -0.5,
    at: "2026-01-01T00:00:00Z",
    code: "mock code 2x",
    tags: ["mock tags 2", "mock tags 2"],
    maybe: true,
    kind: "fixed",
    pet: { name: "mock name 2" },
    list: [1],
  });
});

Deno.test("instance: a recursive schema ends instead of looping", () => {
  const v = instanceOf({
    type: "object",
    properties: { next: { $ref: "#" } },
  }) as Record<string, unknown>;
  let depth = 0;
  for (let at: unknown = v; at && typeof at === "object"; at = (at as { next?: unknown }).next) {
    depth++;
  }
  assert.ok(depth > 1 && depth < 20, `depth ${depth}`);
});

Deno.test("instance: tuples, empty arrays, and a recursion through anyOf ending in its null branch", () => {
  assert.deepEqual(
    instanceOf({
      type: "object",
      properties: {
        pair: { type: "array", items: [{ type: "string" }, { type: "integer" }] },
        none: { type: "array", items: { type: "string" }, maxItems: 0 },
      },
    }),
    { pair: ["mock pair 1", 1], none: [] },
  );
  const list = instanceOf({
    type: "object",
    properties: { value: { type: "integer" }, next: { anyOf: [{ $ref: "#" }, { type: "null" }] } },
  });
  let at = list as { next: unknown } | null;
  let depth = 0;
  while (at && typeof at === "object") {
    at = at.next as { next: unknown } | null;
    depth++;
  }
  assert.equal(at, null, "the list ends in null, which the schema allows");
  assert.ok(depth > 1 && depth < 20);
});

/** `class Node(BaseModel): value: int; children: list["Node"]`, as pydantic states it. */
const NODE = {
  type: "object",
  properties: {
    value: { type: "integer" },
    children: { type: "array", items: { $ref: "#/$defs/Node" } },
  },
  required: ["value", "children"],
  additionalProperties: false,
};

/** Every node of a made-up tree is whole (a value, a list of children); its depth. */
function treeDepth(tree: unknown, label: string): number {
  let depth = 0;
  const walk = (x: unknown): void => {
    assert.ok(x !== null && typeof x === "object", `${label}: a node, got ${JSON.stringify(x)}`);
    const { value, children } = x as { value: unknown; children: unknown };
    assert.equal(typeof value, "number", `${label}: a node, got ${JSON.stringify(x)}`);
    assert.ok(Array.isArray(children), label);
    depth++;
    for (const c of children) walk(c);
  };
  walk(tree);
  return depth;
}

Deno.test("instance: a recursive list of children (pydantic's tree) ends in an empty list, not null", () => {
  // As the SDKs' parse helpers send it: no branch allows null, so the recursion can only end
  // in an empty array. The root is the model itself, its definition repeated under `$defs`.
  const depth = treeDepth(instanceOf({ ...NODE, $defs: { Node: NODE } }), "root");
  assert.ok(depth > 1 && depth < 20, `depth ${depth}`);
});

Deno.test("instance: a tree under a field, or behind allOf, ends in empty lists, not in hollow nodes", () => {
  // `class Answer(BaseModel): tree: Node`: the recursion starts one level down, and whether
  // the limit fell on the list's reference or on the node it names depended on that level.
  const wrapped = NODE.properties.children;
  const viaAllOf = {
    ...NODE,
    properties: { ...NODE.properties, children: { ...wrapped, items: { allOf: [wrapped.items] } } },
  };
  for (const [label, n] of [["field", NODE], ["allOf", viaAllOf]] as const) {
    const v = instanceOf({
      type: "object",
      properties: { tree: { $ref: "#/$defs/Node" } },
      required: ["tree"],
      $defs: { Node: n },
    }) as { tree: unknown };
    const depth = treeDepth(v.tree, label);
    assert.ok(depth > 1 && depth < 20, `${label}: depth ${depth}`);
  }
});

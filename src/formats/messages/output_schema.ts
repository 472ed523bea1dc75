/**
 * A client's JSON schema as Anthropic's structured outputs take it (`output_config.format`).
 * Anthropic accepts a subset of JSON Schema and answers 400 to the rest: no numeric or length
 * bounds, no `pattern`, `minItems` of 0 or 1 only, closed objects (`additionalProperties:
 * false`), a short list of string formats, `anyOf` but not `oneOf`, no recursion. Schemas made
 * for OpenAI's strict mode and by the SDKs' zod helpers fit that once rewritten the way
 * Anthropic's own SDK rewrites a messages client's: what the subset cannot say moves into the
 * field's description, where the model still reads it.
 *
 * `undefined` when the rewrite would change what the schema allows rather than only how it is
 * said — an open object (a map, or one with no properties: closing it would leave `{}` its
 * only value), a tuple, a boolean schema, recursion, a root that is not an object. The caller
 * then asks for the format in words, as for a model without structured outputs.
 */
import { isObject } from "../json.ts";

type Schema = Record<string, unknown>;

const STRING_FORMATS = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "uri",
  "ipv4",
  "ipv6",
  "uuid",
]);

/** Keys that name no constraint and would only clutter a description. */
const DROPPED = new Set(["$schema", "$id", "$comment", "examples", "default"]);

/** The rewrite cannot keep the schema's meaning. */
class Inexpressible extends Error {}

export function anthropicOutputSchema(schema: Record<string, unknown>): Schema | undefined {
  const defs = { ...defsOf(schema) };
  if (recursive(schema, defs)) return undefined;
  try {
    let out = rewrite(schema);
    // A root that only refers to a definition (zod-to-json-schema with a name): that
    // definition is the root.
    if (typeof out.$ref === "string" && out.type === undefined) {
      const name = /^#\/\$defs\/(.+)$/.exec(out.$ref)?.[1];
      const target = name !== undefined ? (out.$defs as Schema | undefined)?.[name] : undefined;
      if (!isObject(target)) return undefined;
      out = { ...target, $defs: out.$defs };
    }
    return out.type === "object" ? out : undefined;
  } catch (e) {
    if (e instanceof Inexpressible) return undefined;
    throw e;
  }
}

function defsOf(s: Schema): Schema {
  return {
    ...(isObject(s.definitions) ? s.definitions : {}),
    ...(isObject(s.$defs) ? s.$defs : {}),
  };
}

/** A subschema: a boolean one (`true`, `false`) has no counterpart in the subset. */
function sub(v: unknown): Schema {
  if (!isObject(v)) throw new Inexpressible();
  return rewrite(v);
}

function rewrite(input: Schema): Schema {
  const s: Schema = { ...input };
  const out: Schema = {};
  const take = (k: string) => {
    const v = s[k];
    delete s[k];
    return v;
  };
  for (const k of DROPPED) delete s[k];

  const defs = defsOf(s);
  delete s.definitions;
  delete s.$defs;
  if (Object.keys(defs).length > 0) {
    out.$defs = Object.fromEntries(Object.entries(defs).map(([k, v]) => [k, sub(v)]));
  }
  const ref = take("$ref");
  if (typeof ref === "string") {
    // zod-to-json-schema and older tools write `#/definitions/…`; the rewrite keeps `$defs`.
    out.$ref = ref.replace(/^#\/definitions\//, "#/$defs/");
    if (typeof s.description === "string") out.description = s.description;
    return out;
  }
  const enumValues = s.enum;
  if (Array.isArray(enumValues) && enumValues.length > 0 && enumValues.every(primitive)) {
    out.enum = take("enum");
  }
  if ("const" in s && primitive(s.const)) out.const = take("const");
  const literal = "enum" in out || "const" in out;
  const type = take("type");
  if (!literal && type !== undefined) out.type = type;

  const anyOf = take("anyOf");
  const oneOf = take("oneOf");
  const allOf = take("allOf");
  const union = [
    ...(Array.isArray(anyOf) ? anyOf : []),
    ...(Array.isArray(oneOf) ? oneOf : []),
  ];
  if (union.length > 0) out.anyOf = union.map(sub);
  if (Array.isArray(allOf)) out.allOf = allOf.map(sub);

  for (const k of ["title", "description"]) {
    if (typeof s[k] === "string") out[k] = take(k);
  }
  const types = Array.isArray(type) ? type : [type];
  if (types.includes("object") || (type === undefined && isObject(s.properties))) {
    const props = isObject(s.properties) ? s.properties : {};
    const open = s.additionalProperties;
    if (Object.keys(props).length === 0 || (open !== undefined && open !== false)) {
      throw new Inexpressible();
    }
    delete s.properties;
    delete s.additionalProperties;
    out.properties = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, sub(v)]));
    const required = take("required");
    if (Array.isArray(required)) out.required = required;
    out.additionalProperties = false;
  }
  if (types.includes("array")) {
    const items = take("items");
    if (Array.isArray(items) || s.prefixItems !== undefined) throw new Inexpressible();
    if (items !== undefined) out.items = sub(items);
    const min = s.minItems;
    if (min === 0 || min === 1) out.minItems = take("minItems");
  }
  if (types.includes("string")) {
    const format = s.format;
    if (typeof format === "string" && STRING_FORMATS.has(format)) out.format = take("format");
  }
  // What is left constrains the value in ways the subset cannot say: the model reads it.
  const rest = Object.entries(s);
  if (rest.length > 0) {
    const note = rest.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ");
    out.description = typeof out.description === "string"
      ? `${out.description}\n\n{${note}}`
      : `{${note}}`;
  }
  return out;
}

/** Whether a definition refers to itself, directly or through others, or to the root. */
function recursive(schema: Schema, defs: Schema): boolean {
  const refsOf = (v: unknown, into: Set<string>): Set<string> => {
    if (Array.isArray(v)) { for (const x of v) refsOf(x, into); }
    else if (isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        if (k === "$ref" && typeof x === "string") {
          const m = /^#(?:\/(?:\$defs|definitions)\/(.+)|)$/.exec(x);
          // A bare `#` is the root itself.
          into.add(m?.[1] ?? "#");
        } else if (k !== "$defs" && k !== "definitions") refsOf(x, into);
      }
    }
    return into;
  };
  const edges = new Map<string, Set<string>>();
  edges.set("#", refsOf(schema, new Set()));
  for (const [name, d] of Object.entries(defs)) edges.set(name, refsOf(d, new Set()));
  const state = new Map<string, "open" | "done">();
  const cycle = (n: string): boolean => {
    if (state.get(n) === "open") return true;
    if (state.get(n) === "done") return false;
    state.set(n, "open");
    for (const next of edges.get(n) ?? []) if (cycle(next)) return true;
    state.set(n, "done");
    return false;
  };
  return [...edges.keys()].some(cycle);
}

function primitive(v: unknown): boolean {
  return v === null || typeof v !== "object";
}

/**
 * A client's JSON schema as Anthropic's structured outputs take it (`output_config.format`).
 * Anthropic accepts a subset of JSON Schema and answers 400 to the rest: no numeric or length
 * bounds, no `pattern`, `minItems` of 0 or 1 only, objects closed (`additionalProperties:
 * false`), a short list of string formats, `anyOf` but not `oneOf`, no recursion. Such
 * schemas are what OpenAI's strict mode and the SDKs' zod helpers produce, so a chat or
 * responses client's schema is rewritten the way Anthropic's own SDK rewrites a messages
 * client's: what the subset cannot say moves into the field's description, where the model
 * still reads it.
 *
 * `undefined` when the schema cannot be expressed at all (its root is not an object, or it
 * refers to itself); the caller then asks for the format in words instead.
 */

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
const DROPPED = new Set(["$schema", "$id", "$comment", "examples", "default", "strict", "name"]);

export function anthropicOutputSchema(schema: Record<string, unknown>): Schema | undefined {
  const defs = { ...obj(schema.definitions), ...obj(schema.$defs) };
  if (recursive(schema, defs)) return undefined;
  const out = rewrite(schema);
  if (out.type !== "object") return undefined;
  return out;
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

  const defs = { ...obj(take("definitions")), ...obj(take("$defs")) };
  if (Object.keys(defs).length > 0) {
    out.$defs = Object.fromEntries(
      Object.entries(defs).map(([k, v]) => [k, isSchema(v) ? rewrite(v) : v]),
    );
  }
  const ref = take("$ref");
  if (typeof ref === "string") {
    // zod-to-json-schema and older tools write `#/definitions/…`; the rewrite keeps `$defs`.
    out.$ref = ref.replace(/^#\/definitions\//, "#/$defs/");
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
  const union = Array.isArray(anyOf) ? anyOf : Array.isArray(oneOf) ? oneOf : undefined;
  if (union) out.anyOf = union.map((v) => (isSchema(v) ? rewrite(v) : v));
  else if (Array.isArray(allOf)) out.allOf = allOf.map((v) => (isSchema(v) ? rewrite(v) : v));

  for (const k of ["title", "description"]) {
    if (typeof s[k] === "string") out[k] = take(k);
  }
  const types = Array.isArray(type) ? type : [type];
  if (types.includes("object") || (type === undefined && isSchema(s.properties))) {
    const props = obj(take("properties"));
    out.properties = Object.fromEntries(
      Object.entries(props).map(([k, v]) => [k, isSchema(v) ? rewrite(v) : v]),
    );
    const required = take("required");
    if (Array.isArray(required)) out.required = required;
    // Closed, whatever the client said: Anthropic takes no other value.
    take("additionalProperties");
    out.additionalProperties = false;
  }
  if (types.includes("array")) {
    const items = take("items");
    if (isSchema(items)) out.items = rewrite(items);
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

/** Whether a definition refers to itself, directly or through others. */
function recursive(schema: Schema, defs: Schema): boolean {
  const refsOf = (v: unknown, into: Set<string>): Set<string> => {
    if (Array.isArray(v)) { for (const x of v) refsOf(x, into); }
    else if (isSchema(v)) {
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

function obj(v: unknown): Schema {
  return isSchema(v) ? v : {};
}

function isSchema(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

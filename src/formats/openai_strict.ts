/**
 * Whether a JSON schema is one OpenAI's strict mode takes (`strict: true` on a chat or
 * responses function): every object closed (`additionalProperties: false`) with every one of
 * its properties required, a root that is an object, every schema typed, none of the keywords
 * strict mode does not support, within its limits
 * (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas). Where unsure
 * it says no: a schema wrongly thought to fit is a 400 for a request OpenAI's default mode
 * answers, one wrongly thought not to fit only goes unconstrained.
 * OpenAI answers 400 to a strict tool whose schema is anything else ("'required' is required to
 * be supplied and to be an array including every key in properties"), where Anthropic's strict
 * mode takes optional properties: a messages client's strict tool reaches OpenAI strict only
 * when its schema is also one of these.
 */
import { isObject, type Obj } from "./json.ts";

/**
 * Keywords strict mode refuses (composition, conditionals, and object and array extras).
 * `oneOf` among them: OpenAI takes `anyOf` alone (a discriminated union Pydantic or zod writes
 * as `oneOf` is refused), as tuples (`prefixItems`, an array of `items`) are.
 */
const UNSUPPORTED = [
  "allOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
  "patternProperties",
  "unevaluatedProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "unevaluatedItems",
  "contains",
  "minContains",
  "maxContains",
  "uniqueItems",
  "prefixItems",
];

/** The string formats strict mode takes ("'uri' is not a valid format", of any other). */
const FORMATS = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "uuid",
]);

/**
 * OpenAI's limits on a strict schema: levels of objects, properties and enum values in all
 * (https://platform.openai.com/docs/guides/structured-outputs#objects-have-limitations-on-nesting-depth-and-size).
 */
const MAX_DEPTH = 10;
const MAX_PROPERTIES = 5_000;
const MAX_ENUM_VALUES = 1_000;

/** What a schema has used of the limits so far. */
interface Tally {
  properties: number;
  enumValues: number;
}

export function fitsOpenAIStrict(schema: Obj): boolean {
  const tally: Tally = { properties: 0, enumValues: 0 };
  return schema.type === "object" && fits(schema, 0, tally) &&
    tally.properties <= MAX_PROPERTIES && tally.enumValues <= MAX_ENUM_VALUES;
}

/** `depth`: the objects `s` sits in. */
function fits(s: unknown, depth: number, tally: Tally): boolean {
  if (!isObject(s)) return false; // `true`/`false` schemas are not taken
  if (UNSUPPORTED.some((k) => k in s)) return false;
  // Every schema names its type, but for a reference or a union ("schema must have a 'type'
  // key" is OpenAI's 400 to `{}`, an untyped `items`, a bare `enum`).
  if (s.type === undefined && typeof s.$ref !== "string" && !Array.isArray(s.anyOf)) {
    return false;
  }
  if (Array.isArray(s.items)) return false; // a tuple
  if (s.format !== undefined && !FORMATS.has(s.format as string)) return false;
  if (Array.isArray(s.enum)) tally.enumValues += s.enum.length;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  let inner = depth;
  if (types.includes("object") || isObject(s.properties)) {
    if (s.additionalProperties !== false) return false;
    const props = isObject(s.properties) ? Object.keys(s.properties) : [];
    const required = Array.isArray(s.required) ? s.required : [];
    if (!props.every((p) => required.includes(p))) return false;
    tally.properties += props.length;
    inner = depth + 1;
    if (inner > MAX_DEPTH) return false;
  }
  const defs: unknown[] = [
    ...(isObject(s.$defs) ? Object.values(s.$defs) : []),
    ...(isObject(s.definitions) ? Object.values(s.definitions) : []),
  ];
  const subs: unknown[] = [
    ...(isObject(s.properties) ? Object.values(s.properties) : []),
    ...(Array.isArray(s.anyOf) ? s.anyOf : []),
    ...(s.items === undefined ? [] : [s.items]),
  ];
  // Definitions are counted from the top: where they are used is not followed.
  return defs.every((d) => fits(d, 0, tally)) && subs.every((x) => fits(x, inner, tally));
}

/**
 * `schema` as OpenAI's strict mode takes it, or undefined where it cannot. An `enum` or
 * `const` without a `type` is given the one its values have: the Anthropic SDK's zod helper
 * writes `z.enum` so, Anthropic takes it, and OpenAI's strict mode answers it 400 ("schema must
 * have a 'type' key"). The type adds nothing the values did not say; the schema is copied
 * where it changes, the client's left as it came.
 */
export function openAIStrictSchema(schema: Obj): Obj | undefined {
  const typed = withValueTypes(schema) as Obj;
  return fitsOpenAIStrict(typed) ? typed : undefined;
}

/** The schema with its untyped `enum` and `const` nodes typed (where the walk of `fits` goes). */
function withValueTypes(s: unknown): unknown {
  if (!isObject(s)) return s;
  let out: Obj = s;
  const set = (k: string, v: unknown) => {
    if (out === s) out = { ...s };
    out[k] = v;
  };
  if (s.type === undefined) {
    const values = Array.isArray(s.enum) ? s.enum : "const" in s ? [s.const] : undefined;
    const type = values && typeOfValues(values);
    if (type !== undefined) set("type", type);
  }
  for (const key of ["properties", "$defs", "definitions"]) {
    const m = s[key];
    if (!isObject(m)) continue;
    const entries = Object.entries(m).map(([k, v]) => [k, withValueTypes(v)] as const);
    if (entries.some(([k, v]) => v !== m[k])) set(key, Object.fromEntries(entries));
  }
  if (Array.isArray(s.anyOf)) {
    const anyOf = s.anyOf.map(withValueTypes);
    if (anyOf.some((v, i) => v !== (s.anyOf as unknown[])[i])) set("anyOf", anyOf);
  }
  if (isObject(s.items)) {
    const items = withValueTypes(s.items);
    if (items !== s.items) set("items", items);
  }
  return out;
}

/** The JSON type (or types) of `values`, undefined where one is an object or an array. */
function typeOfValues(values: unknown[]): string | string[] | undefined {
  const types = new Set<string>();
  for (const v of values) {
    if (v === null) types.add("null");
    else if (typeof v === "string" || typeof v === "boolean") types.add(typeof v);
    else if (typeof v === "number") types.add(Number.isInteger(v) ? "integer" : "number");
    else return undefined;
  }
  if (types.has("number")) types.delete("integer");
  const list = [...types];
  return list.length === 0 ? undefined : list.length === 1 ? list[0] : list;
}

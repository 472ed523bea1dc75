/**
 * Whether a JSON schema is one OpenAI's strict mode takes (`strict: true` on a chat or
 * responses function): every object closed (`additionalProperties: false`) with every one of
 * its properties required, a root that is an object, and none of the keywords strict mode does
 * not support (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas).
 * OpenAI answers 400 to a strict tool whose schema is anything else ("'required' is required to
 * be supplied and to be an array including every key in properties"), where Anthropic's strict
 * mode takes optional properties: a messages client's strict tool reaches OpenAI strict only
 * when its schema is also one of these.
 */
import { isObject, type Obj } from "./json.ts";

/** Keywords strict mode refuses (composition, conditionals, and object and array extras). */
const UNSUPPORTED = [
  "allOf",
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
];

export function fitsOpenAIStrict(schema: Obj): boolean {
  return schema.type === "object" && fits(schema);
}

function fits(s: unknown): boolean {
  if (!isObject(s)) return typeof s !== "boolean"; // `true`/`false` schemas are not taken
  if (UNSUPPORTED.some((k) => k in s)) return false;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.includes("object") || isObject(s.properties)) {
    if (s.additionalProperties !== false) return false;
    const props = isObject(s.properties) ? Object.keys(s.properties) : [];
    const required = Array.isArray(s.required) ? s.required : [];
    if (!props.every((p) => required.includes(p))) return false;
  }
  const subs: unknown[] = [
    ...(isObject(s.properties) ? Object.values(s.properties) : []),
    ...(isObject(s.$defs) ? Object.values(s.$defs) : []),
    ...(isObject(s.definitions) ? Object.values(s.definitions) : []),
    ...(Array.isArray(s.anyOf) ? s.anyOf : []),
    ...(Array.isArray(s.prefixItems) ? s.prefixItems : []),
    ...(s.items === undefined ? [] : Array.isArray(s.items) ? s.items : [s.items]),
  ];
  return subs.every(fits);
}

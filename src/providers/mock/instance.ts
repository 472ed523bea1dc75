/**
 * A made-up value that fits a JSON schema: what the mock answers where a request constrains
 * the answer's shape (a tool's parameters, a structured-output format), so that a client that
 * validates what it gets (the SDKs' `parse` helpers, an agent's tool runner) can go on. Not a
 * validator: it follows the keywords such schemas use (`type`, `properties`, `required`,
 * `items`, `enum`, `const`, `anyOf`/`oneOf`/`allOf`, `$ref` into `$defs`/`definitions`,
 * string `format`s, numeric bounds, `minItems`), and gives up on anything else with `null`.
 */

type Schema = Record<string, unknown>;

/**
 * Nesting deeper than this (a recursive `$ref`) ends: an object with no properties, an empty
 * array, or, for a reference, null where the schema allows it.
 */
const depthMax = 8;

/**
 * Set where the limit cut a value the schema does not allow (a reference's null, a hollow
 * object): a list around it ends empty instead, whatever level the cut fell on.
 */
let cut = false;

/**
 * A value for `schema`; strings read `mock <name> <n>`, `n` telling apart parallel calls of
 * one tool.
 */
export function instanceOf(schema: unknown, n = 1): unknown {
  const root = isSchema(schema) ? schema : {};
  cut = false;
  return value(root, root, "value", n, 0);
}

function value(s: Schema, root: Schema, name: string, n: number, depth: number): unknown {
  if (typeof s.$ref === "string") {
    const target = resolve(root, s.$ref);
    if (target && depth < depthMax) return value(target, root, name, n, depth + 1);
    if (target) cut = true;
    return null;
  }
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const k of ["anyOf", "oneOf"] as const) {
    const options = s[k];
    if (Array.isArray(options) && options.length > 0) {
      // A branch that is not merely `null`: `anyOf: [X, {type: "null"}]` is how an optional
      // field is written, and null would say nothing. Deep in a recursion, the null branch
      // ends it.
      const deep = depth >= depthMax;
      const pick = options.find((o) => isSchema(o) && (o.type !== "null") !== deep) ??
        options[0];
      return isSchema(pick) ? value(pick, root, name, n, depth + 1) : null;
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) {
    const merged: Schema = {};
    for (const part of s.allOf) if (isSchema(part)) Object.assign(merged, part);
    return value(merged, root, name, n, depth + 1);
  }
  const type = Array.isArray(s.type)
    ? s.type.find((t) => t !== "null") ?? s.type[0]
    : s.type ?? (isSchema(s.properties) ? "object" : s.items !== undefined ? "array" : undefined);
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      if (depth >= depthMax) {
        if (isSchema(s.properties) && Object.keys(s.properties).length > 0) cut = true;
        return out;
      }
      const props = isSchema(s.properties) ? s.properties : {};
      for (const [k, p] of Object.entries(props)) {
        out[k] = isSchema(p) ? value(p, root, k, n, depth + 1) : null;
      }
      return out;
    }
    case "array": {
      const min = typeof s.minItems === "number" && s.minItems > 1 ? s.minItems : 1;
      if (depth >= depthMax || s.maxItems === 0) return [];
      if (Array.isArray(s.items)) {
        // A tuple: one value per position.
        return s.items.map((it) => isSchema(it) ? value(it, root, name, n, depth + 1) : null);
      }
      const item = isSchema(s.items) ? s.items : {};
      // An item the limit cut would be null or hollow, which a recursive list of models
      // (pydantic's `children: list["Node"]`) does not allow: there an empty list is what
      // ends the recursion, unless the schema demands items.
      const outer = cut;
      cut = false;
      const items = Array.from(
        { length: Math.min(min, 16) },
        () => value(item, root, name, n, depth + 1),
      );
      const ended = cut;
      cut = outer;
      if (!ended) return items;
      if (!(typeof s.minItems === "number" && s.minItems > 0)) return [];
      cut = true;
      return items;
    }
    case "string":
      return stringOf(s, name, n);
    case "integer":
    case "number":
      return numberOf(s, type === "integer");
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return `mock ${name} ${n}`;
  }
}

const FORMATS: Record<string, string> = {
  "date-time": "2026-01-01T00:00:00Z",
  date: "2026-01-01",
  time: "00:00:00Z",
  duration: "P1D",
  email: "mock@example.com",
  hostname: "example.com",
  uri: "https://example.com/",
  url: "https://example.com/",
  ipv4: "192.0.2.1",
  ipv6: "2001:db8::1",
  uuid: "00000000-0000-4000-8000-000000000001",
};

function stringOf(s: Schema, name: string, n: number): string {
  const f = typeof s.format === "string" ? FORMATS[s.format] : undefined;
  if (f) return f;
  let out = `mock ${name} ${n}`;
  const min = typeof s.minLength === "number" ? s.minLength : 0;
  const max = typeof s.maxLength === "number" ? s.maxLength : Infinity;
  while (out.length < min) out += "x";
  return out.length > max ? out.slice(0, Math.max(0, max)) : out;
}

function numberOf(s: Schema, integer: boolean): number {
  const lo = typeof s.minimum === "number"
    ? s.minimum
    : typeof s.exclusiveMinimum === "number"
    ? s.exclusiveMinimum + (integer ? 1 : 0.5)
    : undefined;
  const hi = typeof s.maximum === "number"
    ? s.maximum
    : typeof s.exclusiveMaximum === "number"
    ? s.exclusiveMaximum - (integer ? 1 : 0.5)
    : undefined;
  let v = lo !== undefined && lo > 1 ? lo : hi !== undefined && hi < 1 ? hi : 1;
  if (integer) v = Math.ceil(v);
  return v;
}

function resolve(root: Schema, ref: string): Schema | undefined {
  if (!ref.startsWith("#")) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(1).split("/").filter((p) => p !== "")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    at = isSchema(at) ? at[key] : undefined;
  }
  return isSchema(at) ? at : undefined;
}

function isSchema(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The wording of request validation failures (zod issues → the 400 message that names the
 * field), shared by the client formats. Each format keeps its own way of choosing which issue
 * of a union speaks; the phrases and the field names are these.
 */
import type { z } from "zod";

export type Issue = z.core.$ZodIssue;

/**
 * Messages for issues the schema did not word itself, as a per-parse `error` map
 * (`schema.safeParse(body, { error: defaultIssueMessage })`); the field name is added later.
 */
export function defaultIssueMessage(iss: z.core.$ZodRawIssue): string {
  switch (iss.code) {
    case "invalid_type":
      return iss.input === undefined ? "is required" : `must be ${article(String(iss.expected))}`;
    case "invalid_value":
      return iss.values.length === 1
        ? `must be ${JSON.stringify(iss.values[0])}`
        : `must be one of ${iss.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      return `must be at least ${String(iss.minimum)}`;
    case "too_big":
      return `must be at most ${String(iss.maximum)}`;
    default:
      return "is invalid";
  }
}

/** A zod type name as a noun phrase: "int" → "an integer", "string" → "a string". */
export function article(expected: string): string {
  switch (expected) {
    case "int":
      return "an integer";
    case "array":
    case "object":
      return `an ${expected}`;
    case "record":
      return "an object";
    default:
      return `a ${expected}`;
  }
}

/**
 * "a string", "one of \"auto\", \"none\"" for an issue about the value itself (no path below
 * it: a union branch that failed on the type or the value, not deeper); else undefined.
 */
export function shallowPhrase(i: Issue): string | undefined {
  if (i.path.length > 0) return undefined;
  if (i.code === "invalid_type") return article(String(i.expected));
  if (i.code === "invalid_value") {
    const vs = i.values.map((v) => JSON.stringify(v));
    return vs.length === 1 ? vs[0] : `one of ${vs.join(", ")}`;
  }
  return undefined;
}

/** ["messages", 0, "content"] → "messages[0].content"; the root is `root`. */
export function fieldName(path: readonly PropertyKey[], root = "request body"): string {
  let s = "";
  for (const k of path) {
    if (typeof k === "number") s += `[${k}]`;
    else s += s === "" ? String(k) : `.${String(k)}`;
  }
  return s === "" ? root : s;
}

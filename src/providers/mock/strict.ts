/**
 * OpenAI's refusal of a strict function whose parameters its strict mode cannot hold to
 * (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas): the top
 * object must list every property in `required` and be closed. Checked at the top level only,
 * which is where an optional property usually is; only for a function that says `strict: true`.
 */
import { obj } from "./util.ts";

export function strictSchemaRefusal(
  body: Record<string, unknown>,
  protocol: "chat" | "responses",
): string | undefined {
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    const f = protocol === "chat" ? obj(obj(t).function) : obj(t);
    if (f.strict !== true || typeof f.name !== "string" || obj(t).type !== "function") continue;
    const p = obj(f.parameters);
    const where = `Invalid schema for function '${f.name}': In context=()`;
    const required = Array.isArray(p.required) ? p.required : [];
    const missing = Object.keys(obj(p.properties)).find((k) => !required.includes(k));
    if (missing !== undefined) {
      return `${where}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
    }
    if (p.additionalProperties !== false) {
      return `${where}, 'additionalProperties' is required to be supplied and to be false.`;
    }
  }
  return undefined;
}

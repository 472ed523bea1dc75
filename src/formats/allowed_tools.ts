/**
 * An `allowed_tools` tool choice (chat's and responses') for an upstream that takes no subset
 * of the declared tools (OpenRouter; other vendors through the internal form): the allowed
 * tools alone, and a plain choice over them.
 */
type Obj = Record<string, unknown>;

/**
 * Rewrites `body` in place: its `tools` become those `listed` allows (`key` names a declared
 * and a listed tool alike), its `tool_choice` "none" when none is left, "auto" unless `mode`
 * is "required", else the one tool by name (`named`, the format's choice of it, or undefined
 * where it has none) or "required".
 */
export function keepAllowedTools(
  body: Obj,
  listed: unknown,
  mode: unknown,
  key: (tool: Obj) => string,
  named: (tool: Obj) => unknown,
): void {
  const allowed = new Set((Array.isArray(listed) ? listed as Obj[] : []).map(key));
  const kept = (Array.isArray(body.tools) ? body.tools as Obj[] : []).filter((t) =>
    allowed.has(key(t))
  );
  if (kept.length > 0) body.tools = kept;
  else delete body.tools;
  const [only] = kept;
  body.tool_choice = !only
    ? "none"
    : mode !== "required"
    ? "auto"
    : (kept.length === 1 ? named(only) : undefined) ?? "required";
}

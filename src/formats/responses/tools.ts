/**
 * A responses request's tools as an upstream of another protocol (openai-chat,
 * anthropic-messages) sees them — JSON function tools with names matching
 * `^[a-zA-Z0-9_-]{1,64}$` — and the way back from a call of such a function to the item the
 * client expects. Used by `toInternal` (request.ts) and by the encoder (encode.ts); both build
 * the same `ToolMap` from the client's body, so a name goes out and comes back the same way.
 *
 * - `function` tools stay functions, under their own name when it is valid.
 * - `namespace` tools (`{type: "namespace", name, description, tools: [function|custom…]}`,
 *   Codex's MCP servers and multi-agent tools) are flattened: each member becomes a tool named
 *   `<namespace>__<name>` (`mcp__srv__` + `tool` → `mcp__srv__tool`, the name Codex itself uses
 *   for MCP tools). A call comes back as the member's `name` with the `namespace` field, the
 *   Responses API's shape for a namespaced call; history items carrying `namespace` map the
 *   same way out.
 * - `custom` tools (free-form input, e.g. Codex's `apply_patch`) become a function taking
 *   `{"input": string}`, the description saying so and quoting the grammar or regex of the
 *   `format`, if any; a call comes back as a `custom_tool_call` whose `input` is that string.
 * - a client-executed `tool_search` (`execution: "client"`: Codex searches its deferred tools
 *   itself) becomes a function with the client's own parameter schema; a call comes back as a
 *   `tool_search_call` item (`arguments` an object). The tools a `tool_search_output` item
 *   loaded join the tool list, as they would at OpenAI, and the output reads as a tool result
 *   naming them.
 * - every other tool type (`web_search`, `file_search`, `code_interpreter`, a hosted
 *   `tool_search`, `mcp`, …) runs at OpenAI: `builtIns` names it, and the request needs an
 *   openai-responses upstream.
 *
 * A name that is invalid, too long or already taken gets a hash suffix (`…_1a2b3c4d`); names
 * that are valid as sent are assigned first, so a client's plain function keeps its name.
 */
import type { Tool } from "../../events/text_request.ts";
import { type Obj, parseObject } from "../json.ts";

export type ToolKind = "function" | "custom" | "tool_search";

/** What the client declared behind one internal tool name. */
export interface ToolTarget {
  kind: ToolKind;
  name: string;
  namespace?: string;
}

/** The longest function name OpenAI and Anthropic accept. */
export const TOOL_NAME_MAX = 64;
const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_SEARCH_KEY = "\u0001tool_search";

const keyOf = (name: string, namespace?: string) => `${namespace ?? ""}\u0000${name}`;

/** A declared tool, before its internal name is assigned. */
interface Entry {
  key: string;
  target: ToolTarget;
  def?: Obj;
  namespaceDescription?: string;
}

export class ToolMap {
  /** The internal tools, in the order the client declared them. */
  readonly tools: Tool[] = [];
  /** The tools only an openai-responses upstream serves, by type. */
  readonly builtIns: string[] = [];
  readonly #byKey = new Map<string, string>();
  readonly #byName = new Map<string, ToolTarget>();

  constructor(body: Obj | undefined) {
    const entries: Entry[] = [];
    for (const t of asArray(body?.tools)) this.#declare(t, entries, true);
    const input = body?.input;
    if (Array.isArray(input)) {
      // Tools a client-executed tool search loaded are callable from then on.
      for (const item of input as Obj[]) {
        if (item?.type === "tool_search_output" && isClientCall(item)) {
          for (const t of asArray(item.tools)) this.#declare(t, entries, false);
        }
      }
    }
    // Names valid as sent first, so that a flattened or fixed-up name never takes one of them.
    for (const e of entries) {
      if (VALID_NAME.test(e.target.name) && !e.target.namespace) this.#assign(e);
    }
    for (const e of entries) this.#assign(e);
    const seen = new Set<string>();
    for (const e of entries) {
      if (!e.def || seen.has(e.key)) continue;
      seen.add(e.key);
      this.tools.push(toolOf(this.#byKey.get(e.key)!, e));
    }
    // Calls in the history name tools the request may no longer declare.
    if (Array.isArray(input)) {
      for (const item of input as Obj[]) {
        if (item?.type === "function_call" || item?.type === "custom_tool_call") {
          if (typeof item.name !== "string") continue;
          const namespace = nonEmptyString(item.namespace);
          this.#assign({
            key: keyOf(item.name, namespace),
            target: {
              kind: item.type === "custom_tool_call" ? "custom" : "function",
              name: item.name,
              ...(namespace ? { namespace } : {}),
            },
          });
        } else if (item?.type === "tool_search_call" && isClientCall(item)) {
          this.#assign({
            key: TOOL_SEARCH_KEY,
            target: { kind: "tool_search", name: "tool_search" },
          });
        }
      }
    }
  }

  /** The internal name of the client's tool `name` (in `namespace`). */
  name(name: string, namespace?: string | null): string {
    return this.#byKey.get(keyOf(name, namespace ?? undefined)) ?? name;
  }

  /** The internal name of the client-executed tool search. */
  get toolSearch(): string {
    return this.#byKey.get(TOOL_SEARCH_KEY) ?? "tool_search";
  }

  /** The client's tool behind an internal name; undefined for a name the map never gave. */
  target(internal: string): ToolTarget | undefined {
    return this.#byName.get(internal);
  }

  /** A `tool_search_output` as the text of a tool result: what it loaded. */
  searchResult(tools: unknown): string {
    const names: string[] = [];
    for (const t of asArray(tools)) {
      if (t.type === "namespace") {
        const ns = nonEmptyString(t.name);
        for (const m of asArray(t.tools)) {
          if (typeof m.name === "string") names.push(this.name(m.name, ns));
        }
      } else if (typeof t.name === "string") names.push(this.name(t.name));
    }
    return names.length === 0
      ? "No matching tools were found."
      : `Loaded ${names.length} tool${names.length === 1 ? "" : "s"}, now available to call: ` +
        names.join(", ");
  }

  #declare(t: Obj, entries: Entry[], fromRequest: boolean): void {
    switch (t.type) {
      case "function":
      case "custom":
        if (typeof t.name !== "string") return;
        entries.push({ key: keyOf(t.name), target: { kind: t.type, name: t.name }, def: t });
        return;
      case "namespace": {
        const namespace = nonEmptyString(t.name);
        if (!namespace) return;
        const namespaceDescription = nonEmptyString(t.description);
        for (const m of asArray(t.tools)) {
          if ((m.type === "function" || m.type === "custom") && typeof m.name === "string") {
            entries.push({
              key: keyOf(m.name, namespace),
              target: { kind: m.type, name: m.name, namespace },
              def: m,
              namespaceDescription,
            });
          } else if (fromRequest) this.builtIns.push(String(m.type));
        }
        return;
      }
      case "tool_search":
        if (t.execution === "client") {
          entries.push({
            key: TOOL_SEARCH_KEY,
            target: { kind: "tool_search", name: "tool_search" },
            def: t,
          });
          return;
        }
        if (fromRequest) this.builtIns.push("tool_search");
        return;
      default:
        if (fromRequest) this.builtIns.push(String(t.type));
    }
  }

  #assign(e: Entry): void {
    if (this.#byKey.has(e.key)) return;
    const t = e.target;
    const wanted = t.namespace
      ? (t.namespace.endsWith("__") ? t.namespace + t.name : `${t.namespace}__${t.name}`)
      : t.name;
    let name = wanted.replace(/[^a-zA-Z0-9_-]/g, "_") || "tool";
    if (name.length > TOOL_NAME_MAX || this.#byName.has(name)) {
      const base = name;
      const tag = `_${fnv1a(e.key)}`;
      name = base.slice(0, TOOL_NAME_MAX - tag.length) + tag;
      for (let n = 2; this.#byName.has(name); n++) {
        name = base.slice(0, TOOL_NAME_MAX - tag.length - String(n).length) + tag + n;
      }
    }
    this.#byKey.set(e.key, name);
    this.#byName.set(name, t);
  }
}

/** The internal tool for a declared one. */
function toolOf(name: string, e: Entry): Tool {
  const d = e.def!;
  if (e.target.kind === "custom") return customTool(name, d);
  const tool: Tool = {
    name,
    parameters: (d.parameters as Obj | null | undefined) ?? { type: "object", properties: {} },
  };
  let description = typeof d.description === "string" ? d.description : undefined;
  if (e.namespaceDescription) {
    const part = `Part of ${e.target.namespace}: ${e.namespaceDescription}`;
    description = description ? `${description}\n\n${part}` : part;
  }
  if (description !== undefined) tool.description = description;
  if (e.target.kind === "function" && typeof d.strict === "boolean") tool.strict = d.strict;
  return tool;
}

/** A custom tool as a function taking its free-form text in `input`. */
function customTool(name: string, d: Obj): Tool {
  const format = (d.format ?? undefined) as Obj | undefined;
  let how = "This free-form tool is called as a function here: put the whole text, exactly " +
    "as the tool expects it, in the `input` string argument (only that envelope is JSON).";
  if (format?.type === "grammar" && typeof format.definition === "string") {
    how += format.syntax === "regex"
      ? ` The text must match this regular expression:\n${format.definition}`
      : ` The text must match this ${
        typeof format.syntax === "string" ? `${format.syntax} ` : ""
      }grammar:\n${format.definition}`;
  }
  const description = typeof d.description === "string" && d.description !== ""
    ? `${d.description}\n\n${how}`
    : how;
  return {
    name,
    description,
    parameters: {
      type: "object",
      properties: { input: { type: "string", description: "The tool's free-form input text." } },
      required: ["input"],
      additionalProperties: false,
    },
  };
}

/** The free-form text of a custom tool call from the function arguments the model wrote. */
export function customInput(args: string): string {
  // Not a JSON object with a string `input`: the model wrote the text itself.
  const input = parseObject(args)?.input;
  return typeof input === "string" ? input : args;
}

/** A tool search call's `arguments`: the object the model wrote, or {} when it is not one. */
export function searchArguments(args: string): Obj {
  return parseObject(args) ?? {}; // {} for an unfinished or broken call
}

/** A tool search item of a client-executed search: it carries the `call_id` of the call. */
export function isClientCall(item: Obj): boolean {
  return typeof item.call_id === "string" && item.call_id !== "";
}

function asArray(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter((x): x is Obj => x !== null && typeof x === "object") : [];
}

function nonEmptyString(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** FNV-1a, 32 bits, as 8 hex digits. */
function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

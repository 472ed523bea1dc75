import assert from "node:assert/strict";
import { webSearchAllowance } from "./quota.ts";

Deno.test("web search allowance: max_uses when stated, a default when not, nothing without the tool", () => {
  const fn = { type: "function", name: "f", parameters: {} };
  assert.equal(webSearchAllowance({}), 0);
  assert.equal(webSearchAllowance({ tools: [fn, { name: "bash", input_schema: {} }] }), 0);
  // Claude Code's WebSearch: Anthropic's server tool with max_uses.
  assert.equal(
    webSearchAllowance({
      tools: [fn, { type: "web_search_20250305", name: "web_search", max_uses: 8 }],
    }),
    8,
  );
  // Responses' web_search tools cannot bound the count: the default is held.
  const dflt = webSearchAllowance({ tools: [{ type: "web_search" }] });
  assert.ok(dflt > 0);
  assert.equal(webSearchAllowance({ tools: [{ type: "web_search_preview" }, fn] }), dflt);
  // Absurd or malformed bounds do not make absurd holds.
  assert.equal(
    webSearchAllowance({ tools: [{ type: "web_search_20250305", max_uses: 1e12 }] }),
    1000,
  );
  assert.equal(
    webSearchAllowance({ tools: [{ type: "web_search_20250305", max_uses: "9" }] }),
    dflt,
  );
  assert.equal(webSearchAllowance({ tools: "web_search" }), 0);
  assert.equal(webSearchAllowance({ tools: [null, 3] }), 0);
});

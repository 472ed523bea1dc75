/**
 * A tool choice forcing the hosted search (Claude Code's WebSearch tool forces Anthropic's
 * `web_search` server tool) for an upstream where the search is no function: OpenAI's
 * responses API has no choice of its hosted `web_search` and refuses a function choice of a
 * name no function has; OpenRouter's web plugin searches whatever the choice.
 */
import type { TextRequest, ToolChoice } from "../events/text_request.ts";

/**
 * The choice to send beside the request's function tools: a forced call of the search
 * becomes "required" where no function could answer it instead, else "auto".
 */
export function choiceBesideSearch(req: TextRequest): ToolChoice | undefined {
  const tc = req.toolChoice;
  if (tc?.type !== "tool" || !req.webSearch || req.webSearch.optional) return tc;
  if (req.tools?.some((t) => t.name === tc.name)) return tc;
  return req.tools?.length ? { type: "auto" } : { type: "required" };
}

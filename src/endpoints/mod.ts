import type { Route } from "../app.ts";
import type { AppContext } from "../pipeline/context.ts";

/** The non-text endpoints (embeddings, images, stored files), mounted by server.ts. */
export function nonTextRoutes(_ctx: AppContext): Route[] {
  return [];
}

import assert from "node:assert/strict";
import { startupLine } from "./startup_line.ts";

const facts = { models: 460, aliases: 11, embeddingModels: 34, store: "PostgreSQL" };

Deno.test("start-up line: the model count is the listing's, aliases and embeddings named apart", () => {
  assert.equal(
    startupLine({ ...facts, limits: "memory" }),
    "Tollgate: 471 models in GET /v1/models (460 + 11 aliases), 34 embedding models, PostgreSQL",
  );
});

Deno.test("start-up line: limits are said to be in Redis only while Redis answers", () => {
  assert.match(startupLine({ ...facts, limits: "redis" }), /, limits in Redis$/);
  const down = startupLine({ ...facts, limits: { redisDown: "127.0.0.1:1" } });
  assert.ok(!down.includes("limits in Redis"), down);
  assert.match(down, /limits in memory \(Redis at 127\.0\.0\.1:1 unreachable/);
});

/**
 * The start-up line: what this process serves and where its state lives, in figures an
 * operator can check against the API (`GET /v1/models` lists the models and the aliases;
 * `GET /v1/embeddings/models` the embedding models).
 */
export interface StartupFacts {
  models: number;
  aliases: number;
  embeddingModels: number;
  /** `embedded store in ./data`, `PostgreSQL`. */
  store: string;
  /** Where rate limits are counted: in this process, in Redis, or in this process until Redis answers. */
  limits: "memory" | "redis" | { redisDown: string };
}

export function startupLine(f: StartupFacts): string {
  const listed = f.models + f.aliases;
  const limits = f.limits === "memory"
    ? ""
    : f.limits === "redis"
    ? ", limits in Redis"
    : `, limits in memory (Redis at ${f.limits.redisDown} unreachable: per-instance until it answers)`;
  return `Tollgate: ${listed} models in GET /v1/models (${f.models} + ${f.aliases} aliases), ` +
    `${f.embeddingModels} embedding models, ${f.store}${limits}`;
}

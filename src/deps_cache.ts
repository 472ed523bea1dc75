/** Imported only by the Dockerfile's dependency layer: every runtime dependency, nothing else. */
import "zod";
import "postgres";
import "@electric-sql/pglite";
import "redis";

/**
 * `deno task mock-upstream`: the mock upstream as a process, for the benchmark and
 * `deno task dev`. Environment: MOCK_PORT (default 8788), MOCK_HOSTNAME (default
 * 127.0.0.1), MOCK_FIRST_TOKEN_MS and MOCK_TOKEN_MS (default 0), MOCK_TOKENS (answer
 * length, default 16). Prints the base URL on stdout.
 */
import { startMock } from "./server.ts";

function envInt(name: string, fallback: number): number {
  const v = Deno.env.get(name);
  if (v === undefined || v === "") return fallback;
  if (!/^\d+$/.test(v)) {
    throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

if (import.meta.main) {
  const mock = startMock({
    port: envInt("MOCK_PORT", 8788),
    hostname: Deno.env.get("MOCK_HOSTNAME") || "127.0.0.1",
    defaults: {
      firstTokenMs: envInt("MOCK_FIRST_TOKEN_MS", 0),
      tokenMs: envInt("MOCK_TOKEN_MS", 0),
      tokens: envInt("MOCK_TOKENS", 16),
    },
  });
  // deno-lint-ignore no-console
  console.log(`mock upstream listening on ${mock.url}`);
  const stop = async () => {
    await mock.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGTERM", stop);
}

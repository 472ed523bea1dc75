/**
 * `deno task dev`: the mock upstream and the gateway pointed at it, so every endpoint can be
 * tried without a provider key. The mock answers as OpenAI (chat, responses, embeddings,
 * images) and Anthropic (messages); OpenRouter's slot serves every other catalogue slug.
 */
import { startMock } from "../src/providers/mock/server.ts";

const mockPort = Number(Deno.env.get("MOCK_PORT") ?? 8788);
const mock = startMock({ port: mockPort, hostname: "127.0.0.1" });
console.log(`Mock upstream on ${mock.url}`);

const env = {
  ...Deno.env.toObject(),
  OPENAI_API_KEY: "mock-key",
  OPENAI_BASE_URL: `${mock.url}/v1`,
  ANTHROPIC_API_KEY: "mock-key",
  ANTHROPIC_BASE_URL: mock.url,
  OPENROUTER_API_KEY: "mock-key",
  OPENROUTER_BASE_URL: `${mock.url}/v1`,
};
const gateway = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "--allow-net",
    "--allow-env",
    "--allow-read",
    "--allow-write",
    "--allow-sys",
    new URL("../src/main.ts", import.meta.url).pathname,
  ],
  env,
  stdin: "null",
}).spawn();

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(sig, () => {
    try {
      gateway.kill(sig);
    } catch { /* already gone */ }
  });
}
const status = await gateway.status;
await mock.close();
Deno.exit(status.code);

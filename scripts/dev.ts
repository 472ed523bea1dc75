/**
 * `deno task dev`: the mock upstream and the gateway pointed at it, so every endpoint can be
 * tried without a provider key. The mock answers as OpenAI (chat, responses, embeddings,
 * images) and Anthropic (messages); OpenRouter's slot serves every other catalogue slug.
 */
import { startMock } from "../src/providers/mock/server.ts";
import { describeError } from "../src/lib/describe_error.ts";

/** The mock's start-up failures read as the gateway's own: one line naming the variable. */
function cannotStart(message: string): never {
  console.error(`Tollgate could not start. ${message}`);
  Deno.exit(1);
}

const rawPort = Deno.env.get("MOCK_PORT") || "8788";
if (!/^\d+$/.test(rawPort) || Number(rawPort) > 65535) {
  cannotStart(`MOCK_PORT=${JSON.stringify(rawPort)} is invalid: a whole number from 0 to 65535`);
}
const mockPort = Number(rawPort);
let mock: ReturnType<typeof startMock>;
try {
  mock = startMock({ port: mockPort, hostname: "127.0.0.1" });
} catch (e) {
  cannotStart(
    e instanceof Deno.errors.AddrInUse
      ? `MOCK_PORT=${mockPort} is in use: another process listens there; stop it or set MOCK_PORT`
      : `MOCK_PORT=${mockPort}: cannot listen: ${describeError(e)}`,
  );
}
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

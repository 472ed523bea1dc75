/** `deno task dev` start-up failures: one line naming the variable, as the gateway's own. */
import assert from "node:assert/strict";

const DEV = new URL("./dev.ts", import.meta.url).pathname;

async function devStderr(env: Record<string, string>): Promise<{ code: number; err: string }> {
  const dataDir = await Deno.makeTempDir();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", DEV],
      env: { PATH: Deno.env.get("PATH") ?? "", DATA_DIR: dataDir, PORT: "0", ...env },
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    return { code: out.code, err: new TextDecoder().decode(out.stderr).trim() };
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

Deno.test("dev: a MOCK_PORT in use stops start-up with one line naming it", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const { code, err } = await devStderr({ MOCK_PORT: String(port) });
    assert.equal(code, 1, err);
    assert.equal(
      err,
      `Tollgate could not start. MOCK_PORT=${port} is in use: another process listens there; stop it or set MOCK_PORT`,
    );
  } finally {
    listener.close();
  }
});

Deno.test("dev: a MOCK_PORT that is no port stops start-up with one line naming it", async () => {
  const { code, err } = await devStderr({ MOCK_PORT: "abc" });
  assert.equal(code, 1, err);
  assert.equal(
    err,
    'Tollgate could not start. MOCK_PORT="abc" is invalid: a whole number from 0 to 65535',
  );
});

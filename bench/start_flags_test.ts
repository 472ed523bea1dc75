/** The benchmark starts Tollgate as `deno task start` does: with the start task's flags. */
import assert from "node:assert/strict";
import { startFlagsOf } from "./run.ts";

Deno.test("bench: Tollgate's flags are the ones deno.json's start task passes", async () => {
  const start = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)))
    .tasks.start as string;
  const flags = startFlagsOf(start);
  assert.equal(start, `deno run ${flags.join(" ")} src/main.ts`);
  assert.ok(flags.some((f) => /^--v8-flags=\S*max-semi-space-size/.test(f)), start);
  assert.ok(!flags.includes("-A") && !flags.includes("--allow-all"), start);
  assert.deepEqual(startFlagsOf("deno run -A src/main.ts"), []);
  assert.deepEqual(startFlagsOf("deno run --v8-flags=--a=1,--b --allow-net x.ts"), [
    "--v8-flags=--a=1,--b",
    "--allow-net",
  ]);
});

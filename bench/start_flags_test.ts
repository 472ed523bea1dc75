/** The benchmark starts Tollgate as `deno task start` does: with the start task's V8 flags. */
import assert from "node:assert/strict";
import { v8FlagsOf } from "./run.ts";

Deno.test("bench: Tollgate's V8 flags are the ones deno.json's start task passes", async () => {
  const start = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)))
    .tasks.start as string;
  const flags = v8FlagsOf(start);
  assert.equal(flags.length, 1);
  assert.ok(start.includes(` ${flags[0]} `), start);
  assert.match(flags[0], /^--v8-flags=\S*max-semi-space-size/);
  assert.deepEqual(v8FlagsOf("deno run -A src/main.ts"), []);
  assert.deepEqual(v8FlagsOf("deno run --v8-flags=--a=1,--b --allow-net x.ts"), [
    "--v8-flags=--a=1,--b",
  ]);
});

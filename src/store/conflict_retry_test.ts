import assert from "node:assert/strict";
import { CONFLICT_RETRIES, retryingConflicts } from "./postgres.ts";

const failing = (codes: (string | undefined)[]) => {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    run: () => {
      const code = codes[calls++];
      return code === undefined
        ? Promise.resolve("done")
        : Promise.reject(Object.assign(new Error(`sqlstate ${code}`), { code }));
    },
  };
};

Deno.test("conflicts: a statement PostgreSQL rolled back for a deadlock or a serialization conflict runs again", async () => {
  const f = failing(["40P01", "40001"]);
  assert.equal(await retryingConflicts(f.run), "done");
  assert.equal(f.calls, 3);
});

Deno.test("conflicts: any other failure is not retried, and a conflict only so often", async () => {
  const other = failing(["23505"]);
  await assert.rejects(retryingConflicts(other.run), /sqlstate 23505/);
  assert.equal(other.calls, 1, "a unique violation is the statement's answer, not a conflict");
  const always = failing(Array(CONFLICT_RETRIES + 5).fill("40P01"));
  await assert.rejects(retryingConflicts(always.run), /sqlstate 40P01/);
  assert.equal(always.calls, CONFLICT_RETRIES + 1);
});

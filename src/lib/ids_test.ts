import assert from "node:assert/strict";
import { newId } from "./ids.ts";

Deno.test("ids are the prefix, then 23 base62 characters, and do not repeat", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 20_000; i++) {
    const id = newId("gen");
    assert.match(id, /^gen_[0-9A-Za-z]{23}$/);
    seen.add(id);
  }
  assert.equal(seen.size, 20_000);
  assert.match(newId("op", 32), /^op_[0-9A-Za-z]{43}$/);
});

Deno.test("id characters are uniform: no character is favoured by the byte-to-base62 mapping", () => {
  // `byte % 62` without rejection would draw each of the first 8 characters 5 times in 256
  // and the others 4: 25 % more often, far outside the bound below.
  const counts = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < 20_000; i++) {
    for (const ch of newId("x").slice(2)) {
      counts.set(ch, (counts.get(ch) ?? 0) + 1);
      total++;
    }
  }
  assert.equal(counts.size, 62);
  const expected = total / 62;
  for (const [ch, n] of counts) {
    assert.ok(Math.abs(n - expected) / expected < 0.06, `${ch}: ${n} against ${expected}`);
  }
});

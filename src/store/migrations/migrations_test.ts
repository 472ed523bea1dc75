import assert from "node:assert/strict";
import { migrations } from "./index.ts";

Deno.test("each embedded migration equals its .sql file", async () => {
  for (const m of migrations) {
    const file = await Deno.readTextFile(new URL(`./${m.name}.sql`, import.meta.url));
    assert.equal(m.sql, file, `${m.name}.ts differs from ${m.name}.sql`);
  }
});

Deno.test("migration versions are 1..n in order and match their names", () => {
  migrations.forEach((m, i) => {
    assert.equal(m.version, i + 1);
    assert.equal(m.name.slice(0, 3), String(m.version).padStart(3, "0"));
  });
});

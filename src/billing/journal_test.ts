import assert from "node:assert/strict";
import { Journal } from "./journal.ts";
import type { GenerationOpen, Store } from "../store/store.ts";

const gen = (id: string): GenerationOpen => ({
  id,
  accountId: "acc",
  keyId: "key",
  endpoint: "chat",
  model: "m",
  stream: true,
  hold: 1n,
});

Deno.test("journal: once stopped, a write in flight schedules no further step", async () => {
  let writes = 0;
  const store = {
    journal: async () => {
      writes++;
      await new Promise((r) => setTimeout(r, 30));
    },
  } as unknown as Store;
  const g = gen("gen_j");
  const open = [{ g, created: new Date(Date.now() - 5_000) }];
  const journal = new Journal(store, () => open, (fn) => fn());
  journal.opened(g.id);
  const tick = journal.tick(); // a write in flight…
  journal.stop(); // …when the wallet closes
  await tick;
  assert.equal(writes, 1);
  await new Promise((r) => setTimeout(r, 2_300)); // past a checkpoint interval
  assert.equal(writes, 1, "no step after stop");
});

Deno.test("journal: closing says whether a write carried the generation, landed or not", async () => {
  let fail = true;
  const store = {
    journal: () => fail ? Promise.reject(new Error("answer lost")) : Promise.resolve(),
  } as unknown as Store;
  const [old, young, later] = [gen("gen_old"), gen("gen_young"), gen("gen_later")];
  const open = [
    { g: old, created: new Date(Date.now() - 5_000) },
    { g: young, created: new Date() },
    { g: later, created: new Date(Date.now() - 5_000) },
  ];
  const journal = new Journal(store, () => open, (fn) => fn());
  for (const { g } of open) journal.opened(g.id);
  // The write fails (its answer may have been lost after it landed): `old` may be in the store.
  await journal.tick();
  journal.stop();
  assert.equal(journal.closed(old.id), true);
  assert.equal(journal.closed(young.id), false, "too young to be journaled");
  fail = false;
  assert.equal(journal.closed("gen_unknown"), false);
  assert.equal(journal.closed(later.id), true);
});

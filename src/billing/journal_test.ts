import assert from "node:assert/strict";
import { Journal } from "./journal.ts";
import type { GenerationOpen, Store } from "../store/store.ts";

Deno.test("journal: once stopped, a write in flight schedules no further step", async () => {
  let writes = 0;
  const store = {
    journal: async () => {
      writes++;
      await new Promise((r) => setTimeout(r, 30));
    },
  } as unknown as Store;
  const g: GenerationOpen = {
    id: "gen_j",
    accountId: "acc",
    keyId: "key",
    endpoint: "chat",
    model: "m",
    stream: true,
    hold: 1n,
  };
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

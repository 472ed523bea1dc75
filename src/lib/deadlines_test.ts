import assert from "node:assert/strict";
import { deadline, tickMs } from "./deadlines.ts";

Deno.test("deadlines: each fires once, after its time and no later than a tick past it", async () => {
  const fired: [string, number][] = [];
  const t0 = performance.now();
  deadline(30, () => fired.push(["a", performance.now() - t0]));
  deadline(90, () => fired.push(["b", performance.now() - t0]));
  // A timer of its own due a tick past `a`: how late this process's timers ran (a loaded
  // machine runs them all late), which `a` may be too.
  const lateness = new Promise<number>((r) =>
    setTimeout(() => r(performance.now() - t0 - (30 + tickMs)), 30 + tickMs)
  );
  await new Promise((r) => setTimeout(r, 90 + 3 * tickMs));
  assert.deepEqual(fired.map(([n]) => n), ["a", "b"]);
  const [[, a], [, b]] = fired;
  assert.ok(a >= 30 && b >= 90, `fired early: ${a} ms, ${b} ms`);
  const late = await lateness;
  assert.ok(a < 30 + 3 * tickMs + late, `fired late: ${a} ms (timers ${late.toFixed(0)} ms late)`);
});

Deno.test("deadlines: one cleared in time never fires, and the others still do", async () => {
  let cleared = 0;
  let kept = 0;
  const clear = deadline(20, () => cleared++);
  deadline(40, () => kept++);
  clear();
  clear();
  await new Promise((r) => setTimeout(r, 40 + 3 * tickMs));
  assert.equal(cleared, 0);
  assert.equal(kept, 1);
});

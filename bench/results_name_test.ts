/** Which file a benchmark run writes: a narrowed run never replaces the full one's figures. */
import assert from "node:assert/strict";
import { resultsName } from "./run.ts";

const whole = {
  mode: "default" as const,
  targets: undefined,
  scenarios: undefined,
  concurrency: undefined,
  portkey: true,
  profile: false,
  tuned: false,
};

Deno.test("bench: the default and full modes, every point, write latest", () => {
  assert.equal(resultsName(whole), "latest");
  assert.equal(resultsName({ ...whole, mode: "full" }), "latest");
});

Deno.test("bench: quick, narrowed, Portkey-less, re-timed or profiled runs write partial", () => {
  assert.equal(resultsName({ ...whole, mode: "quick" }), "partial");
  assert.equal(resultsName({ ...whole, targets: ["tollgate"] }), "partial");
  assert.equal(resultsName({ ...whole, scenarios: ["chat"] }), "partial");
  assert.equal(resultsName({ ...whole, concurrency: [32] }), "partial");
  assert.equal(resultsName({ ...whole, portkey: false }), "partial");
  assert.equal(resultsName({ ...whole, profile: true }), "partial");
  assert.equal(resultsName({ ...whole, tuned: true }), "partial");
});

import assert from "node:assert/strict";
import { scopeEndUsers } from "./upstream_user.ts";

Deno.test("scopeEndUsers: a huge metadata.user_id with an @ and no dot costs no backtracking", () => {
  // 100 kB of one: the address test, run on every Anthropic call, took ~10 s of the one thread
  // on it (each start position rescanned the rest), stalling every other account's calls.
  const id = "a".repeat(50_000) + "@" + "b".repeat(50_000);
  const body: Record<string, unknown> = { metadata: { user_id: id } };
  const t0 = performance.now();
  scopeEndUsers(body, true, "acct_1");
  const took = performance.now() - t0;
  assert.ok(took < 500, `${took} ms`);
  assert.match((body.metadata as { user_id: string }).user_id, /^acct_1:[0-9a-f]{57}$/);
});

Deno.test("scopeEndUsers: an address goes to Anthropic hashed, other ids as sent", () => {
  const sent = (id: string) => {
    const body: Record<string, unknown> = { metadata: { user_id: id } };
    scopeEndUsers(body, true, "acct_1");
    return (body.metadata as { user_id: string }).user_id;
  };
  assert.match(sent("bob@example.com"), /^acct_1:[0-9a-f]{57}$/);
  assert.match(sent("x bob.smith@mail.example.org y"), /^acct_1:[0-9a-f]{57}$/);
  assert.equal(sent("alice"), "acct_1:alice");
  assert.equal(sent("user@host"), "acct_1:user@host");
  assert.equal(sent("bob@example.com"), sent("bob@example.com"));
});

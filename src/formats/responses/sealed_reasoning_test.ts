import assert from "node:assert/strict";
import {
  isSealedReasoning,
  openSealedReasoning,
  type SealedReasoning,
  sealReasoning,
} from "./sealed_reasoning.ts";

Deno.test("a sealed thinking block, signed or redacted, opens to the same parts", () => {
  const blocks: SealedReasoning[] = [
    { text: "", signature: "EqQBCkYIBxgCKkA=" },
    { text: 'Let me think… ünïcødé, emoji 🙂, quotes " and \\ and\nnewlines', signature: "Eq+/==" },
    { text: "x".repeat(200_000), signature: "s".repeat(500) },
    { text: "", redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
  ];
  for (const block of blocks) {
    const sealed = sealReasoning(block);
    assert.ok(isSealedReasoning(sealed));
    assert.match(sealed, /^tg\.rs\.[A-Za-z0-9_-]+$/, "url-safe, no padding");
    assert.deepEqual(openSealedReasoning(sealed), block);
  }
});

Deno.test("what the gateway did not seal, or a damaged seal, does not open", () => {
  const sealed = sealReasoning({ text: "think", signature: "sig" });
  const seal = (v: unknown) => "tg.rs." + btoa(JSON.stringify(v));
  for (
    const data of [
      "gAAAAABoEXAMPLE", // OpenAI's Fernet token
      "EmwKAhgBEgy3", // Anthropic's redacted_thinking data
      sealed.slice(0, -3),
      sealed + "!",
      seal({ t: "text only" }),
      seal({ t: "t", s: "" }),
      seal({ t: "t", s: "sig", r: "both" }),
      seal(["t", "sig"]),
      "tg.rs.",
    ]
  ) {
    assert.equal(openSealedReasoning(data), undefined, data);
  }
  assert.equal(isSealedReasoning("gAAAAABo"), false);
  assert.equal(isSealedReasoning(undefined), false);
});

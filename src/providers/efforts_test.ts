import assert from "node:assert/strict";
import { nearestEffort, withModelEffort, withReasoningKept } from "./efforts.ts";
import type { TextRequest } from "../events/text_request.ts";
import { loadProviders } from "./provider.ts";
import { PROTOCOL } from "./protocols/mod.ts";

Deno.test("efforts: the nearest the model takes, the higher on a tie", () => {
  const lowHigh = ["low", "medium", "high"] as const;
  assert.equal(nearestEffort("xhigh", lowHigh), "high");
  assert.equal(nearestEffort("minimal", lowHigh), "low");
  assert.equal(nearestEffort("none", lowHigh), "low");
  assert.equal(nearestEffort("medium", lowHigh), "medium");
  // gpt-5.1: none but not minimal; minimal is as near none as low, and goes up.
  assert.equal(nearestEffort("minimal", ["none", "low", "medium", "high"]), "low");
  assert.equal(nearestEffort("low", ["high"]), "high");
});

Deno.test("efforts: a request's effort fitted by the first set naming the model", () => {
  const sets = [
    { models: ["openai/gpt-5.1-codex*"], efforts: ["low", "medium", "high"] as const },
    { models: ["openai/gpt-5.1*"], efforts: ["none", "low", "medium", "high"] as const },
  ].map((s) => ({ ...s, efforts: [...s.efforts] }));
  const req = (effort: "xhigh" | "none"): TextRequest => ({
    model: "x",
    system: [],
    messages: [],
    stream: false,
    reasoning: { effort, summary: "auto" },
  });
  const codex = withModelEffort(req("xhigh"), "openai/gpt-5.1-codex-mini", sets);
  assert.deepEqual(codex.reasoning, { effort: "high", summary: "auto" });
  assert.equal(withModelEffort(req("none"), "openai/gpt-5.1", sets).reasoning?.effort, "none");
  assert.equal(withModelEffort(req("none"), "openai/gpt-5.1-codex", sets).reasoning?.effort, "low");
  // A model no set names, and a request without an effort, are left as they are.
  const same = req("xhigh");
  assert.equal(withModelEffort(same, "openai/gpt-5.4", sets), same);
});

Deno.test("efforts: reasoning turned off asks for the least the model takes", () => {
  const sets = [
    { models: ["openai/gpt-5"], efforts: ["minimal", "low", "medium", "high"] as const },
    { models: ["openai/o3*"], efforts: ["low", "medium", "high"] as const },
    { models: ["openai/gpt-5.4"], efforts: ["none", "low", "medium", "high", "xhigh"] as const },
  ].map((s) => ({ ...s, efforts: [...s.efforts] }));
  const off: TextRequest = {
    model: "x",
    system: [],
    messages: [],
    stream: false,
    reasoning: { enabled: false },
  };
  assert.equal(withModelEffort(off, "openai/gpt-5", sets).reasoning?.effort, "minimal");
  assert.equal(withModelEffort(off, "openai/o3-mini", sets).reasoning?.effort, "low");
  assert.equal(withModelEffort(off, "openai/gpt-5.4", sets).reasoning?.effort, "none");
  // A model no set names is left to its default, as before.
  assert.equal(withModelEffort(off, "google/gemini-2.5-flash", sets), off);
});

Deno.test("efforts: reasoning off on a model that cannot stop reasoning is its least effort", () => {
  const req = (reasoning: TextRequest["reasoning"]): TextRequest => ({
    model: "m",
    system: [],
    messages: [],
    stream: false,
    reasoning,
  });
  const mandatory = { efforts: ["high", "medium", "low"] };
  assert.deepEqual(withReasoningKept(req({ enabled: false }), mandatory).reasoning, {
    effort: "low",
  });
  assert.deepEqual(withReasoningKept(req({ effort: "none" }), mandatory).reasoning, {
    effort: "low",
  });
  assert.deepEqual(withReasoningKept(req({ enabled: false }), {}).reasoning, { effort: "low" });
  assert.deepEqual(
    withReasoningKept(req({ enabled: false }), { efforts: ["none", "minimal"] }).reasoning,
    {
      effort: "minimal",
    },
  );
  // Reasoning asked for, or a model that can stop: as it was.
  const high = req({ effort: "high" });
  assert.equal(withReasoningKept(high, mandatory), high);
  const off = req({ enabled: false });
  assert.equal(withReasoningKept(off, undefined), off);
});

Deno.test("efforts: xhigh reaches Claude as xhigh where the model takes it (Opus 4.7 on), high before, thinking off stays off", async () => {
  const { enabled } = await loadProviders(
    undefined,
    (n) => n === "ANTHROPIC_API_KEY" ? "k" : undefined,
  );
  const anthropic = enabled.find((p) => p.id === "anthropic")!;
  const ask = (slug: string, reasoning: TextRequest["reasoning"]) => {
    const req: TextRequest = {
      model: slug,
      system: [],
      messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
      stream: true,
      reasoning,
    };
    return PROTOCOL["anthropic-messages"].fromInternal(
      withModelEffort(req, slug, anthropic.reasoningEfforts),
      slug,
      anthropic,
      64000,
    );
  };
  const effortOf = (body: Record<string, unknown>) =>
    (body.output_config as { effort?: string } | undefined)?.effort;
  assert.equal(effortOf(ask("anthropic/claude-opus-4.7", { effort: "xhigh" })), "xhigh");
  assert.equal(effortOf(ask("anthropic/claude-sonnet-5", { effort: "xhigh" })), "xhigh");
  assert.equal(effortOf(ask("anthropic/claude-opus-4.6", { effort: "xhigh" })), "high");
  assert.equal(effortOf(ask("anthropic/claude-opus-4.7", { effort: "minimal" })), "low");
  const off = ask("anthropic/claude-opus-4.7", { enabled: false });
  assert.equal(off.thinking, undefined);
  assert.equal(off.output_config, undefined);
});

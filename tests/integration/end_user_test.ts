/**
 * End-user ids reach the upstream scoped to the paying account: every account's calls go out
 * on the operator's one provider account, where a provider that flags an end user would
 * otherwise block every account's end user of the same name.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

type Sent = { user?: string; safety_identifier?: string; metadata?: { user_id?: string } };
const lastSent = (g: TestGateway) => g.mock.stats.calls.at(-1)!.body as Sent;

Deno.test("end users: the same user id of two accounts reaches each upstream as two ids", () =>
  withGateway(async (g) => {
    const other = await g.account("100");
    const seen: Record<string, Sent[]> = {};
    for (const [accountId, key] of [[g.accountId, g.key], [other.accountId, other.key]]) {
      const oa = new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0 });
      const an = new Anthropic({ apiKey: key, baseURL: g.url, maxRetries: 0 });
      const sent: Sent[] = [];
      // Chat (passed through to OpenAI, and transcoded to Anthropic), responses, messages.
      await oa.chat.completions.create({
        model: "openai/gpt-4.1-mini",
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
        user: "alice",
        safety_identifier: "alice-sid",
      });
      sent.push(lastSent(g));
      await oa.chat.completions.create({
        model: "anthropic/claude-sonnet-4.5",
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
        user: "alice",
      });
      sent.push(lastSent(g));
      await oa.responses.create({
        model: "openai/gpt-4.1-mini",
        input: "hi [[mock:tokens=2]]",
        safety_identifier: "alice",
      });
      sent.push(lastSent(g));
      // Claude Code's user id is a JSON object of ~150 characters.
      const claudeCode = JSON.stringify({
        device_id: "d".repeat(64),
        account_uuid: "",
        session_id: "0b1c2d3e-0000-4000-8000-000000000000",
      });
      await an.messages.create({
        model: "anthropic/claude-sonnet-4.5",
        max_tokens: 8,
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
        metadata: { user_id: "alice" },
      });
      sent.push(lastSent(g));
      await an.messages.create({
        model: "openai/gpt-4.1-mini",
        max_tokens: 8,
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
        metadata: { user_id: claudeCode },
      });
      sent.push(lastSent(g));
      seen[accountId] = sent;

      const [chat, chatClaude, responses, messages, claudeCodeToOpenAI] = sent;
      assert.equal(chat.user, `${accountId}:alice`);
      assert.equal(chat.safety_identifier, `${accountId}:alice-sid`);
      assert.equal(chatClaude.metadata?.user_id, `${accountId}:alice`);
      assert.equal(responses.safety_identifier, `${accountId}:alice`);
      assert.equal(messages.metadata?.user_id, `${accountId}:alice`);
      // OpenAI takes at most 64 characters: the account, then as much of a hash as fits.
      assert.match(claudeCodeToOpenAI.user!, new RegExp(`^${accountId}:[0-9a-f]+$`));
      assert.ok(claudeCodeToOpenAI.user!.length <= 64, claudeCodeToOpenAI.user);
      assert.ok(!claudeCodeToOpenAI.user!.includes("device"));
    }
    const [a, b] = Object.values(seen);
    assert.notEqual(a[0].user, b[0].user);
    assert.notEqual(a[4].user, b[4].user);
  }));

Deno.test("end users: an email as the user id reaches Anthropic as an opaque id, as it requires", () =>
  // Anthropic refuses a `metadata.user_id` that holds an email address (400 "user_id appears
  // to contain an email address"); a chat client (the openai SDK, LangChain, the AI SDK,
  // LiteLLM) often names its end user so, and OpenAI takes it as sent.
  withGateway(async (g) => {
    const oa = new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
    const an = new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });
    const ask = (model: string, user: string) =>
      oa.chat.completions.create({
        model,
        messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
        user,
      });
    await ask("anthropic/claude-sonnet-4.5", "Bob.Smith@example.com");
    const first = lastSent(g).metadata!.user_id!;
    assert.ok(!first.includes("@"), first);
    assert.match(first, new RegExp(`^${g.accountId}:[0-9a-f]{16,}$`));
    // Still one stable id per end user, and another user's is another.
    await an.messages.create({
      model: "anthropic/claude-sonnet-4.5",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi [[mock:tokens=2]]" }],
      metadata: { user_id: "Bob.Smith@example.com" },
    });
    assert.equal(lastSent(g).metadata!.user_id, first);
    await ask("anthropic/claude-sonnet-4.5", "carol@example.com");
    assert.notEqual(lastSent(g).metadata!.user_id, first);
    // An id without an address is kept readable. OpenAI gets the address hashed too (its docs
    // ask for that), the same id, and so does OpenRouter, which may hand it on to Anthropic.
    await ask("anthropic/claude-sonnet-4.5", "alice");
    assert.equal(lastSent(g).metadata!.user_id, `${g.accountId}:alice`);
    await ask("openai/gpt-4.1-mini", "Bob.Smith@example.com");
    assert.equal(lastSent(g).user, first);
    await ask("openai/gpt-4.1-mini", "alice");
    assert.equal(lastSent(g).user, `${g.accountId}:alice`);
  }));

/**
 * A PDF given inline is file input, an image image input, in every client format: a model
 * that reads files and no images (o3-mini) takes a PDF. One that reads no files takes it only
 * through OpenRouter, which parses a PDF to text for any model: Gemma 3 (images, no files)
 * gets it there, GPT-4 Turbo goes there rather than to OpenAI's own API, and with no such
 * upstream the request is a 400 naming file input. Through the real SDKs.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

/** Reads files (PDF), no images. */
const FILES_ONLY = "openai/o3-mini";
/** Reads images, no files; served through OpenRouter alone. */
const IMAGES_ONLY = "google/gemma-3-27b-it";
/** Reads images, no files; served by OpenAI's own API, and by OpenRouter. */
const FIRST_PARTY_IMAGES_ONLY = "openai/gpt-4-turbo";

const PDF_BASE64 = btoa("%PDF-1.4\n%%EOF\n");
const PDF_DATA_URL = `data:application/pdf;base64,${PDF_BASE64}`;

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
const anthropic = (g: TestGateway) =>
  new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });

/** One request carrying a PDF, in each client format. */
const withPdf: Record<string, (g: TestGateway, model: string) => Promise<unknown>> = {
  chat: (g, model) =>
    openai(g).chat.completions.create({
      model,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Summarise. [[mock:tokens=2]]" },
          { type: "file", file: { filename: "a.pdf", file_data: PDF_DATA_URL } },
        ],
      }],
    }),
  responses: (g, model) =>
    openai(g).responses.create({
      model,
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "Summarise. [[mock:tokens=2]]" },
          { type: "input_file", filename: "a.pdf", file_data: PDF_DATA_URL },
        ],
      }],
    }),
  messages: (g, model) =>
    anthropic(g).messages.create({
      model,
      max_tokens: 64,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Summarise. [[mock:tokens=2]]" },
          {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: PDF_BASE64 },
          },
        ],
      }],
    }),
};

for (const [format, call] of Object.entries(withPdf)) {
  Deno.test(`file input (${format}): a PDF reaches a model that reads files but no images`, () =>
    withGateway(async (g) => {
      await call(g, FILES_ONLY);
      assert.equal(g.mock.stats.calls.length, 1);
      assert.ok(JSON.stringify(g.mock.stats.calls[0].body).includes(PDF_BASE64));
    }));

  Deno.test(`file input (${format}): a PDF to a model that reads no files goes to OpenRouter, which parses it`, () =>
    withGateway(async (g) => {
      for (const model of [IMAGES_ONLY, FIRST_PARTY_IMAGES_ONLY]) {
        g.mock.stats.calls.length = 0;
        await call(g, model);
        assert.equal(g.mock.stats.calls.length, 1, model);
        const sent = g.mock.stats.calls[0];
        assert.equal((sent.body as { model: string }).model, model, "OpenRouter takes the slug");
        assert.match(sent.headers.authorization, /mock-openrouter-key/);
        assert.ok(JSON.stringify(sent.body).includes(PDF_BASE64));
      }
    }));

  Deno.test(`file input (${format}): without OpenRouter, a PDF to a model that reads no files is a 400 naming file input`, () =>
    withGateway(async (g) => {
      const e = await call(g, FIRST_PARTY_IMAGES_ONLY).then(
        () => assert.fail("no error"),
        (e) => e as { status: number; message: string },
      );
      assert.equal(e.status, 400);
      assert.match(e.message, /does not accept file input/);
      assert.equal(g.mock.stats.calls.length, 0);
    }, { withoutKeys: ["OPENROUTER_API_KEY"] }));
}

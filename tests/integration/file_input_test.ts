/**
 * A PDF given inline is file input, an image image input, in every client format: a model
 * that reads files and no images (o3-mini) takes a PDF, one that reads images and no files
 * (Gemma 3) refuses it, as chat's own check has it. Through the real SDKs.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

/** Reads files (PDF), no images. */
const FILES_ONLY = "openai/o3-mini";
/** Reads images, no files. */
const IMAGES_ONLY = "google/gemma-3-27b-it";

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

  Deno.test(`file input (${format}): a PDF to a model that reads no files is a 400 naming file input`, () =>
    withGateway(async (g) => {
      const e = await call(g, IMAGES_ONLY).then(
        () => assert.fail("no error"),
        (e) => e as { status: number; message: string },
      );
      assert.equal(e.status, 400);
      assert.match(e.message, /does not accept file input/);
      assert.equal(g.mock.stats.calls.length, 0);
    }));
}

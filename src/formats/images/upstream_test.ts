import assert from "node:assert/strict";
import { GatewayError } from "../../http/gateway_error.ts";
import type { ImageParams } from "./request.ts";
import {
  aspectForSize,
  chatImagesBody,
  decodeChatImagesBody,
  decodeImagesApiBody,
  imagesApiBody,
  imagesApiPath,
  sizeForAspect,
} from "./upstream.ts";

const params = (p: Partial<ImageParams> = {}): ImageParams => ({
  prompt: "a fox",
  n: 1,
  responseFormat: "url",
  references: [],
  ...p,
});

Deno.test("sizes and aspect ratios", () => {
  assert.equal(sizeForAspect("1:1"), "1024x1024");
  assert.equal(sizeForAspect("16:9"), "1536x1024");
  assert.equal(sizeForAspect("9:16"), "1024x1536");
  assert.equal(sizeForAspect("auto"), "auto");
  assert.equal(aspectForSize("1536x1024"), "3:2");
  assert.equal(aspectForSize("1920x1080"), "16:9");
  assert.equal(aspectForSize("auto"), undefined);
});

Deno.test("Images API body: generation and edit", () => {
  assert.equal(imagesApiPath(params()), "/images/generations");
  assert.deepEqual(
    imagesApiBody(
      params({ aspectRatio: "16:9", quality: "high", seed: 3, outputFormat: "webp" }),
      "gpt-image-1",
      2,
      [],
      false,
    ),
    {
      model: "gpt-image-1",
      prompt: "a fox",
      n: 2,
      size: "1536x1024",
      quality: "high",
      output_format: "webp",
    },
  );
  const edit = params({
    references: ["https://e/x.png"],
    size: "1024x1024",
    background: "opaque",
    seed: 9,
  });
  assert.equal(imagesApiPath(edit), "/images/edits");
  assert.deepEqual(imagesApiBody(edit, "m", 1, ["data:image/png;base64,AAAA"], true), {
    model: "m",
    prompt: "a fox",
    size: "1024x1024",
    background: "opaque",
    seed: 9,
    images: [{ image_url: "data:image/png;base64,AAAA" }],
  });
});

Deno.test("chat body for images", () => {
  assert.deepEqual(
    chatImagesBody(params({ size: "1024x1024", resolution: "1K" }), "g/m", 1, [], {
      textOutput: false,
      openrouterUsage: false,
    }),
    {
      model: "g/m",
      messages: [{ role: "user", content: "a fox" }],
      modalities: ["image"],
      image_config: { aspect_ratio: "1:1", image_size: "1K" },
    },
  );
  const b = chatImagesBody(params(), "g/m", 2, ["https://e/x.png"], {
    textOutput: true,
    openrouterUsage: true,
  });
  assert.deepEqual(b.modalities, ["image", "text"]);
  assert.equal(b.n, 2);
  assert.deepEqual(b.usage, { include: true });
  assert.deepEqual((b.messages as { content: unknown }[])[0].content, [
    { type: "text", text: "a fox" },
    { type: "image_url", image_url: { url: "https://e/x.png" } },
  ]);
});

Deno.test("Images API answer decoding", () => {
  const up = decodeImagesApiBody({
    created: 1,
    data: [{ b64_json: "AAAA" }, { url: "https://e/y.png" }],
    usage: {
      input_tokens: 5,
      input_tokens_details: { text_tokens: 3, image_tokens: 2 },
      output_tokens: 272,
      total_tokens: 277,
    },
    output_format: "png",
    size: "1024x1024",
    quality: "low",
  });
  assert.deepEqual(up.images, [{ b64: "AAAA" }, { url: "https://e/y.png" }]);
  assert.equal(up.inputTokens, 5);
  assert.equal(up.inputImageTokens, 2);
  assert.equal(up.outputTokens, 272);
  assert.deepEqual(up.extras, { output_format: "png", size: "1024x1024", quality: "low" });
  for (const bad of [null, {}, { data: [{}] }, { data: [5] }]) {
    assert.throws(
      () => decodeImagesApiBody(bad),
      (e: unknown) => e instanceof GatewayError && e.status === 502,
    );
  }
});

Deno.test("chat answer decoding: message.images, content parts, text and cost", () => {
  const up = decodeChatImagesBody({
    choices: [{
      message: {
        content: [{ type: "text", text: "here" }, {
          type: "image_url",
          image_url: { url: "data:image/png;base64,BBBB" },
        }],
        images: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }],
      },
    }],
    usage: { prompt_tokens: 3, completion_tokens: 1290, cost: 0.039 },
  });
  assert.deepEqual(up.images, [
    { url: "data:image/png;base64,AAAA" },
    { url: "data:image/png;base64,BBBB" },
  ]);
  assert.equal(up.text, "here");
  assert.equal(up.costUsd, "0.039");
  assert.equal(up.outputTokens, 1290);
  // OpenRouter on the operator's own provider key: its fee, and what the provider charged.
  const byok = decodeChatImagesBody({
    choices: [{ message: { images: [{ type: "image_url", image_url: { url: "data:,A" } }] } }],
    usage: { cost: 0.002, is_byok: true, cost_details: { upstream_inference_cost: 0.039 } },
  });
  assert.equal(byok.costUsd, "0.041");
  const textOnly = decodeChatImagesBody({
    choices: [{ message: { content: "I cannot draw that" } }],
  });
  assert.deepEqual(textOnly.images, []);
  assert.equal(textOnly.text, "I cannot draw that");
  assert.throws(
    () => decodeChatImagesBody({ error: { message: "upstream broke" } }),
    (e: unknown) =>
      e instanceof GatewayError && e.status === 502 && /upstream broke/.test(e.message),
  );
  assert.throws(() => decodeChatImagesBody({}), GatewayError);
});

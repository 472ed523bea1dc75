import assert from "node:assert/strict";
import { Catalogue } from "../../catalogue/catalogue.ts";
import { GatewayError } from "../../http/gateway_error.ts";
import { parseImagesRequest } from "./request.ts";

const catalogue = await Catalogue.load();
const parse = (b: Record<string, unknown>) => parseImagesRequest(b, catalogue);

function fails(body: Record<string, unknown>, code: string, message?: RegExp) {
  assert.throws(() => parse(body), (e: unknown) => {
    assert.ok(e instanceof GatewayError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.code, code, e.message);
    if (message) assert.match(e.message, message);
    return true;
  }, JSON.stringify(body));
}

Deno.test("images request: defaults", () => {
  const c = parse({ model: "openai/gpt-image-1", prompt: "a cat" });
  assert.equal(c.requestedModel, "openai/gpt-image-1");
  assert.deepEqual(c.params, {
    prompt: "a cat",
    n: 1,
    size: undefined,
    quality: undefined,
    responseFormat: "b64_json",
    outputFormat: undefined,
    background: undefined,
    seed: undefined,
    aspectRatio: undefined,
    resolution: undefined,
    references: [],
    stream: false,
  });
  assert.equal(c.nUpstream, 1);
});

Deno.test("images request: model codes", () => {
  fails({ prompt: "x" }, "MODEL_REQUIRED");
  fails({ prompt: "x", model: 7 }, "MODEL_REQUIRED");
  fails({ model: "x/none", prompt: "x" }, "MODEL_NOT_FOUND");
  fails({ model: "openai/gpt-4o-mini", prompt: "x" }, "MODEL_NOT_IMAGE_CAPABLE");
  fails({ model: "openai/gpt-image-1" }, "INVALID_REQUEST", /prompt is required/);
  fails({ model: "openai/gpt-image-1", prompt: "   " }, "INVALID_REQUEST");
  fails({ model: "openai/gpt-image-1", prompt: 5 }, "INVALID_REQUEST");
});

Deno.test("images request: values checked against described capabilities, listing them", () => {
  const m2 = "openai/gpt-image-2";
  fails(
    { model: m2, prompt: "x", background: "transparent" },
    "IMAGE_PARAMS_INVALID",
    /"auto", "opaque"/,
  );
  fails({ model: m2, prompt: "x", aspect_ratio: "4:5" }, "IMAGE_PARAMS_INVALID", /"1:1"/);
  // Described without resolutions: sized by size or aspect_ratio, which the 400 names.
  for (const resolution of ["4K", "banana"]) {
    fails(
      { model: m2, prompt: "x", resolution },
      "IMAGE_PARAMS_INVALID",
      /takes no resolution.*size.*aspect_ratio \("1:1"/,
    );
  }
  assert.equal(parse({ model: m2, prompt: "x", quality: "high" }).params.quality, "high");
  // quality outside low/medium/high is passed on as given
  assert.equal(parse({ model: m2, prompt: "x", quality: "hd" }).params.quality, "hd");
  const seedream = "bytedance-seed/seedream-4.5";
  fails(
    { model: seedream, prompt: "x", resolution: "512" },
    "IMAGE_PARAMS_INVALID",
    /"1K", "2K", "4K"/,
  );
  assert.equal(parse({ model: seedream, prompt: "x", resolution: "2K" }).params.resolution, "2K");
  // Described without quality levels: low/medium/high have nothing to select; auto and values
  // outside the three are passed on.
  for (const quality of ["low", "medium", "high"]) {
    fails(
      { model: seedream, prompt: "x", quality },
      "IMAGE_PARAMS_INVALID",
      /takes no quality level \(allowed values: none\)/,
    );
  }
  assert.equal(parse({ model: seedream, prompt: "x", quality: "auto" }).params.quality, "auto");
  assert.equal(parse({ model: seedream, prompt: "x", quality: "hd" }).params.quality, "hd");
  const flux = "black-forest-labs/flux.2-pro";
  fails(
    { model: flux, prompt: "x", output_format: "webp" },
    "IMAGE_PARAMS_INVALID",
    /"png", "jpeg"/,
  );
  // n above the model's stated most: asked of the upstream capped, not refused
  const c = parse({ model: flux, prompt: "x", n: 4 });
  assert.equal(c.params.n, 4);
  assert.equal(c.nUpstream, 1);
  fails(
    { model: flux, prompt: "x", input_references: Array(9).fill("https://e.com/a.png") },
    "IMAGE_PARAMS_INVALID",
    /takes at most 8/,
  );
});

Deno.test("images request: models without described capabilities get values passed on", () => {
  const c = parse({
    model: "openai/gpt-image-1",
    prompt: "x",
    resolution: "3K",
    aspect_ratio: "7:3",
    quality: "low",
    seed: 3,
    size: "1536x1024",
    output_format: "jpeg",
    background: "transparent",
    response_format: "url",
    n: 10,
    input_references: ["https://e.com/a.png", "data:image/png;base64,AAAA"],
  });
  assert.equal(c.params.resolution, "3K");
  // …in the field's form: a value with no nearest is refused, naming the form.
  fails(
    { model: "openai/gpt-image-1", prompt: "x", resolution: "banana" },
    "IMAGE_PARAMS_INVALID",
    /"512", "1K", "2K", "4K"/,
  );
  assert.equal(c.params.aspectRatio, "7:3");
  assert.equal(c.params.responseFormat, "url");
  assert.equal(c.nUpstream, 10);
  assert.equal(c.params.references.length, 2);
});

Deno.test("images request: shapes of every field", () => {
  const m = "openai/gpt-image-1";
  for (
    const [field, value] of [
      ["n", 0],
      ["n", 11],
      ["n", "2"],
      ["size", "1024"],
      ["size", 1024],
      ["response_format", "png"],
      ["output_format", "tiff"],
      ["background", "blue"],
      ["seed", 1.5],
      ["aspect_ratio", "wide"],
      ["input_references", "https://e.com/a.png"],
      ["input_references", ["file:///etc/passwd"]],
      ["input_references", Array(17).fill("https://e.com/a.png")],
    ] as const
  ) {
    fails({ model: m, prompt: "x", [field]: value }, "IMAGE_PARAMS_INVALID");
  }
  assert.equal(parse({ model: m, prompt: "x", size: "auto" }).params.size, "auto");
  assert.equal(parse({ model: m, prompt: "x", input_references: [] }).params.references.length, 0);
});

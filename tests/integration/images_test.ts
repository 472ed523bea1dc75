/**
 * Images end to end: the real `openai` SDK → a real gateway over HTTP → the mock upstream
 * (Images API), or a small fake chat upstream that returns images inside chat messages
 * (OpenRouter style). Money and stored files checked against the store.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  checkInvariants,
  heldByGenerations,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.ts";
import { waitFor } from "../helpers/time.ts";
import { nanoToRub } from "../../src/billing/money.ts";
import { type BlobStore, setBlobStore } from "../../src/blobs/mod.ts";
import { allowReferenceHostsForTests } from "../../src/endpoints/images.ts";
import { solidPng } from "../../src/providers/mock/png.ts";
import { tokensPerImage } from "../../src/formats/images/cost.ts";

/** Image-only, token-priced, no described capabilities: openai (Images API), then openrouter. */
const MODEL = "openai/gpt-image-1";
/** Described capabilities: aspect ratios, qualities, backgrounds (auto, opaque). */
const CAPS_MODEL = "openai/gpt-image-2";
/** Text + image output (chat only), resolutions 512/1K/2K/4K. */
const CHAT_MODEL = "google/gemini-3.1-flash-image";
/** Flat $0.035 per image. */
const PER_IMAGE_MODEL = "recraft/recraft-v4.1";

type Params = OpenAI.Images.ImageGenerateParamsNonStreaming;

function client(g: TestGateway, key = g.key) {
  return new OpenAI({ apiKey: key, baseURL: g.baseURL, maxRetries: 0, timeout: 60_000 });
}

function generate(g: TestGateway, body: Record<string, unknown>) {
  return client(g).images.generate(body as unknown as Params).withResponse();
}

async function withGateway(
  fn: (g: TestGateway) => Promise<void>,
  opts: Parameters<typeof startGateway>[0] = {},
) {
  const dataDir = await Deno.makeTempDir({ prefix: "tollgate-images-" });
  const g = await startGateway({ ...opts, config: { DATA_DIR: dataDir, ...opts.config } });
  try {
    await fn(g);
    await g.settled();
    assert.deepEqual(await checkInvariants(g.store, [g.accountId]), []);
  } finally {
    await g.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

async function post(g: TestGateway, body: unknown, key: string | null = g.key) {
  const res = await fetch(`${g.baseURL}/images/generations`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

async function account(g: TestGateway) {
  return (await g.store.getAccount(g.accountId))!;
}

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47];

Deno.test("images: b64_json by default, usage with cost, the debit equals the cost", async () => {
  await withGateway(async (g) => {
    const before = (await account(g)).balance;
    const raw = await generate(g, { model: MODEL, prompt: "a red square" });
    const r = raw.data;
    assert.ok(r.created > 0);
    assert.equal(r.data!.length, 1);
    const png = Uint8Array.fromBase64(r.data![0].b64_json!);
    assert.deepEqual([...png.subarray(0, 4)], PNG_MAGIC);
    assert.equal(r.data![0].url, undefined);
    const usage = r.usage as unknown as Record<string, unknown>;
    assert.equal(typeof usage.input_tokens, "number");
    // The SDKs type it as required beside input_tokens (openai-python reads None without it).
    assert.deepEqual(usage.input_tokens_details, {
      text_tokens: usage.input_tokens,
      image_tokens: 0,
    });
    assert.equal(usage.output_tokens, 272);
    assert.equal(usage.total_tokens, (usage.input_tokens as number) + 272);
    assert.ok((usage.cost as number) > 0);
    const genId = raw.response.headers.get("x-generation-id")!;
    await g.settled();
    const after = await account(g);
    assert.equal(nanoToRub(before - after.balance), usage.cost);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
    const gen = (await g.store.getGeneration(g.accountId, genId))!;
    assert.equal(gen.status, "completed");
    assert.equal(gen.endpoint, "images");
    assert.equal(gen.provider, "openai");
    assert.equal(gen.usageSource, "upstream");
    const call = g.mock.stats.calls.at(-1)!;
    assert.match(call.path, /\/images\/generations$/);
    const body = call.body as Record<string, unknown>;
    assert.equal(body.model, "gpt-image-1");
    assert.equal(body.response_format, undefined);
  });
});

Deno.test("images: stream: true (the SDK's async iterator) gets each image as image_generation.completed, usage on the last", async () => {
  await withGateway(async (g) => {
    const before = (await account(g)).balance;
    const stream = await client(g).images.generate(
      {
        model: MODEL,
        prompt: "two red squares",
        n: 2,
        stream: true,
        partial_images: 1,
      } as unknown as Params & { stream: true },
    );
    const events: Record<string, unknown>[] = [];
    for await (const e of stream as unknown as AsyncIterable<Record<string, unknown>>) {
      events.push(e);
    }
    assert.deepEqual(events.map((e) => e.type), [
      "image_generation.completed",
      "image_generation.completed",
    ]);
    for (const e of events) {
      const png = Uint8Array.fromBase64(e.b64_json as string);
      assert.deepEqual([...png.subarray(0, 4)], PNG_MAGIC);
      assert.equal(typeof e.created_at, "number");
      assert.equal(e.output_format, "png");
    }
    assert.equal(events[0].usage, undefined, "the cost is told once");
    const usage = events[1].usage as Record<string, unknown>;
    assert.ok((usage.cost as number) > 0);
    const details = usage.input_tokens_details as Record<string, number>;
    assert.equal(details.text_tokens + details.image_tokens, usage.input_tokens);
    await g.settled();
    assert.equal(nanoToRub(before - (await account(g)).balance), usage.cost);
    const body = g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    assert.equal(body.stream, undefined, "the upstream call is whole");
  });
});

Deno.test("images: a streamed image's event tells the size and quality made, as the whole answer does", async () => {
  await withGateway(async (g) => {
    // Asked for neither: the provider picks them and says which (the mock: 1024x1024, low).
    const whole = await post(g, { model: MODEL, prompt: "a red square" });
    assert.equal(whole.status, 200, JSON.stringify(whole.json));
    const res = await fetch(`${g.baseURL}/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: MODEL, prompt: "a red square", stream: true }),
    });
    assert.equal(res.status, 200);
    const data = (await res.text()).split("\n").filter((l) => l.startsWith("data: "));
    assert.equal(data.length, 1);
    const event = JSON.parse(data[0].slice(6));
    // OpenAI's completed event describes the generated image; "auto" is what was asked.
    for (const k of ["size", "quality", "output_format"]) {
      assert.equal(event[k], whole.json[k], k);
    }
    assert.notEqual(event.size, "auto");
  });
});

Deno.test("images: url mode stores each image; the link serves the same bytes", async () => {
  await withGateway(async (g) => {
    const prompt = "two blue circles";
    const urls = await generate(g, { model: MODEL, prompt, n: 2, response_format: "url" });
    const b64 = await generate(g, { model: MODEL, prompt, n: 2 });
    assert.equal(urls.data.data!.length, 2);
    for (let i = 0; i < 2; i++) {
      const url = urls.data.data![i].url!;
      assert.equal(urls.data.data![i].b64_json, undefined);
      assert.match(url, new RegExp(`^${g.url}/v1/files/file_[0-9A-Za-z]{25}$`));
      const res = await fetch(url); // no key: the link is the capability
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/png");
      assert.equal(res.headers.get("cache-control"), "public, max-age=31536000, immutable");
      const bytes = new Uint8Array(await res.arrayBuffer());
      assert.deepEqual(bytes, Uint8Array.fromBase64(b64.data.data![i].b64_json!));
      const id = url.slice(url.lastIndexOf("/") + 1);
      const row = (await g.store.getBlob(id))!;
      assert.equal(row.accountId, g.accountId);
      assert.equal(row.size, bytes.byteLength);
      const again = await fetch(url, { headers: { "if-none-match": res.headers.get("etag")! } });
      assert.equal(again.status, 304);
      await again.body?.cancel();
    }
    assert.notDeepEqual(urls.data.data![0].url, urls.data.data![1].url);
    const missing = await fetch(`${g.url}/v1/files/file_0000000000000000000000000`);
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), "404 Not Found");
    const junk = await fetch(`${g.url}/v1/files/../../etc/passwd`);
    assert.equal(junk.status, 404);
    await junk.body?.cancel();
  });
});

Deno.test("images: a stored link in input_references makes an edit with those bytes", async () => {
  await withGateway(async (g) => {
    const first = await generate(g, {
      model: MODEL,
      prompt: "a cat",
      response_format: "url",
    });
    const url = first.data.data![0].url!;
    const stored = new Uint8Array(await (await fetch(url)).arrayBuffer());
    const edit = await generate(g, {
      model: MODEL,
      prompt: "the same cat wearing a hat",
      input_references: [url],
    });
    assert.equal(edit.data.data!.length, 1);
    const call = g.mock.stats.calls.at(-1)!;
    assert.match(call.path, /\/images\/edits$/);
    const images = (call.body as { images: { image_url: string }[] }).images;
    assert.equal(images.length, 1);
    const sent = images[0].image_url;
    assert.ok(sent.startsWith("data:image/png;base64,"));
    assert.deepEqual(Uint8Array.fromBase64(sent.slice(sent.indexOf(",") + 1)), stored);
    // The mock charges 85 input tokens per input image.
    const usage = edit.data.usage as unknown as {
      input_tokens: number;
      input_tokens_details: { text_tokens: number; image_tokens: number };
    };
    assert.ok(usage.input_tokens >= 85);
    // The reference images' part, as the Images API reported it.
    assert.ok(usage.input_tokens_details.image_tokens >= 85);
    assert.equal(
      usage.input_tokens_details.text_tokens + usage.input_tokens_details.image_tokens,
      usage.input_tokens,
    );
    // The same link under the port's other loopback name is still ours, not a private host.
    const aliased = url.replace("://127.0.0.1:", "://localhost:");
    assert.notEqual(aliased, url);
    const again = await generate(g, { model: MODEL, prompt: "a hat", input_references: [aliased] });
    assert.equal(again.data.data!.length, 1);
  });
});

Deno.test("images: other references are fetched safely; private addresses are refused", async () => {
  const png = solidPng(10, 200, 30);
  const origin = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response(png as BodyInit, { headers: { "content-type": "image/png" } }),
  );
  const ref = `http://127.0.0.1:${origin.addr.port}/ref.png`;
  try {
    await withGateway(async (g) => {
      const before = await account(g);
      const calls = g.mock.stats.total;
      const refused = await post(g, { model: MODEL, prompt: "edit", input_references: [ref] });
      assert.equal(refused.status, 400);
      assert.equal(refused.json.error.code, "INPUT_REFERENCE_INVALID");
      assert.match(refused.json.error.message, /not public/);
      const metadata = await post(g, {
        model: MODEL,
        prompt: "edit",
        input_references: ["http://169.254.169.254/latest/meta-data/x.png"],
      });
      assert.equal(metadata.status, 400);
      assert.equal(g.mock.stats.total, calls);
      await g.settled();
      assert.equal((await account(g)).balance, before.balance);

      // With the test-only exemption for the local origin, the bytes reach the upstream.
      allowReferenceHostsForTests(g.gw.ctx, [`127.0.0.1:${origin.addr.port}`]);
      const ok = await post(g, { model: MODEL, prompt: "edit", input_references: [ref] });
      assert.equal(ok.status, 200);
      const sent = (g.mock.stats.calls.at(-1)!.body as { images: { image_url: string }[] })
        .images[0].image_url;
      assert.deepEqual(Uint8Array.fromBase64(sent.slice(sent.indexOf(",") + 1)), png);
    });
  } finally {
    await origin.shutdown();
  }
});

Deno.test("images: every request error has its code, and none reaches the upstream", async () => {
  await withGateway(async (g) => {
    const cases: [unknown, number, string | undefined, RegExp?][] = [
      ["{not json", 400, "INVALID_REQUEST", /malformed JSON/],
      [{ model: MODEL }, 400, "INVALID_REQUEST", /prompt is required/],
      [{ model: MODEL, prompt: "" }, 400, "INVALID_REQUEST", /prompt is required/],
      [{ prompt: "x" }, 400, "MODEL_REQUIRED"],
      [{ model: "nobody/nothing", prompt: "x" }, 400, "MODEL_NOT_FOUND"],
      [{ model: "openai/gpt-4o-mini", prompt: "x" }, 400, "MODEL_NOT_IMAGE_CAPABLE"],
      [{ model: "baai/bge-base-en-v1.5", prompt: "x" }, 400, "MODEL_NOT_IMAGE_CAPABLE"],
      [{ model: MODEL, prompt: "x", n: 0 }, 400, "IMAGE_PARAMS_INVALID", /from 1 to 10/],
      [{ model: MODEL, prompt: "x", n: 11 }, 400, "IMAGE_PARAMS_INVALID", /from 1 to 10/],
      [{ model: MODEL, prompt: "x", n: 1.5 }, 400, "IMAGE_PARAMS_INVALID"],
      [{ model: MODEL, prompt: "x", size: "huge" }, 400, "IMAGE_PARAMS_INVALID", /WIDTHxHEIGHT/],
      [
        { model: MODEL, prompt: "x", response_format: "png" },
        400,
        "IMAGE_PARAMS_INVALID",
        /"b64_json", "url"/,
      ],
      [
        { model: CAPS_MODEL, prompt: "x", background: "transparent" },
        400,
        "IMAGE_PARAMS_INVALID",
        /allowed values: "auto", "opaque"/,
      ],
      [
        { model: CAPS_MODEL, prompt: "x", aspect_ratio: "5:4" },
        400,
        "IMAGE_PARAMS_INVALID",
        /allowed values: "1:1", "3:2"/,
      ],
      [
        { model: CHAT_MODEL, prompt: "x", resolution: "8K" },
        400,
        "IMAGE_PARAMS_INVALID",
        /allowed values: "512", "1K", "2K", "4K"/,
      ],
      [
        { model: MODEL, prompt: "x", aspect_ratio: "wide" },
        400,
        "IMAGE_PARAMS_INVALID",
        /width:height/,
      ],
      [
        { model: MODEL, prompt: "x", input_references: Array(17).fill("https://e.com/a.png") },
        400,
        "IMAGE_PARAMS_INVALID",
        /at most 16/,
      ],
      [
        { model: MODEL, prompt: "x", input_references: ["ftp://e.com/a.png"] },
        400,
        "IMAGE_PARAMS_INVALID",
      ],
      [
        {
          model: MODEL,
          prompt: "x",
          input_references: [`${g.url}/v1/files/file_0000000000000000000000000`],
        },
        400,
        "INPUT_REFERENCE_INVALID",
        /no such stored file/,
      ],
    ];
    for (const [body, status, code, message] of cases) {
      const r = await post(g, body);
      const what = JSON.stringify(body).slice(0, 120);
      assert.equal(r.status, status, what);
      assert.equal(r.json.error.code, code, what);
      assert.equal(typeof r.json.error.type, "string", what);
      assert.equal(typeof r.json.error.message, "string", what);
      if (message) assert.match(r.json.error.message, message, what);
    }
    const anonymous = await post(g, { model: MODEL, prompt: "x" }, null);
    assert.equal(anonymous.status, 401);
    // Accepted and ignored: user, style, moderation, output_compression, unknown fields.
    const ignored = await post(g, {
      model: MODEL,
      prompt: "fine",
      user: "u",
      style: "vivid",
      moderation: "low",
      output_compression: 50,
      something_new: true,
    });
    assert.equal(ignored.status, 200);
    const sent = g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    for (const k of ["user", "style", "moderation", "output_compression", "something_new"]) {
      assert.equal(k in sent, false, k);
    }
    assert.equal(g.mock.stats.total, 1);
    // Also via the SDK: the error object carries the code.
    await assert.rejects(
      client(g).images.generate({ model: "nobody/nothing", prompt: "x" } as Params),
      (e: unknown) =>
        e instanceof OpenAI.APIError && e.status === 400 &&
        (e.error as Record<string, unknown>).code === "MODEL_NOT_FOUND",
    );
  });
});

Deno.test("images: a balance below the estimate is a 402 with currentBalance in roubles", async () => {
  await withGateway(async (g) => {
    const poor = await g.account("0.5");
    const r = await post(g, { model: MODEL, prompt: "expensive", n: 4 }, poor.key);
    assert.equal(r.status, 402);
    assert.equal(r.json.error.currentBalance, 0.5);
    assert.match(r.json.error.message, /резервирует до [\d,]+ ₽/, "says what was held");
    assert.equal(r.json.error.code, "INSUFFICIENT_BALANCE");
    assert.equal(g.mock.stats.total, 0);
    await assert.rejects(
      client(g, poor.key).images.generate({ model: MODEL, prompt: "x" } as Params),
      (e: unknown) =>
        e instanceof OpenAI.APIError && e.status === 402 &&
        (e.error as Record<string, unknown>).currentBalance === 0.5,
    );
    assert.deepEqual(await checkInvariants(g.store, [poor.accountId]), []);
  });
});

Deno.test("images: currentBalance leaves out what is held by calls in flight", async () => {
  await withGateway(async (g) => {
    const acct = await g.account("30");
    // A slow call holds most of the balance (a high-quality image, 24.25 ₽) while another asks.
    const slow = post(
      g,
      { model: MODEL, prompt: "slow [[mock:first=1500]]", quality: "high" },
      acct.key,
    );
    // Its hold is taken before the upstream is asked: once the mock has the call, it holds.
    await waitFor("the slow call upstream", () => g.mock.stats.calls.length > 0 || undefined);
    const r = await post(g, { model: MODEL, prompt: "now", quality: "high" }, acct.key);
    assert.equal(r.status, 402);
    // 30 ₽ less the slow call's hold (24.2482275 ₽): not the whole balance.
    assert.equal(r.json.error.currentBalance, 5.7517725, JSON.stringify(r.json));
    assert.match(r.json.error.message, /резервирует до 24,25 ₽/);
    assert.equal((await slow).status, 200);
  });
});

Deno.test("images: on a leasing instance currentBalance never counts a lease the balance read misses", async () => {
  await withGateway(async (g) => {
    const poor = await g.account("0.5");
    const { store, quota } = g.gw.ctx;
    const [key] = await store.listKeys(poor.accountId);
    // Another call of the account is admitted while the 402's balance is read, and the lease
    // it takes commits after that read: the read's `held` has no part of it, this instance's
    // unused lease does.
    const read = store.getAccount.bind(store);
    let raced = false;
    store.getAccount = async (id: string) => {
      const snapshot = await read(id);
      if (id === poor.accountId && !raced) {
        raced = true;
        const open = {
          id: "gen_racing",
          accountId: id,
          keyId: key.id,
          endpoint: "chat",
          model: "openai/gpt-4o-mini",
          stream: false,
          hold: 100_000_000n,
        };
        assert.ok(await quota.reserve(open));
        await quota.settle({
          generationId: open.id,
          status: "failed",
          cost: 0n,
          costDetails: {},
          provider: null,
          upstreamModel: null,
          finishReason: null,
          tokens: {},
          usageSource: "none",
          latencyMs: null,
          ttftMs: null,
          error: "raced",
        });
      }
      return snapshot;
    };
    try {
      const r = await post(g, { model: MODEL, prompt: "expensive", n: 4 }, poor.key);
      assert.equal(r.status, 402);
      assert.ok(raced);
      // At most the balance, which nothing has been spent from.
      assert.equal(r.json.error.currentBalance, 0.5, JSON.stringify(r.json));
    } finally {
      store.getAccount = read;
    }
    await g.settled();
    await quota.close();
    assert.deepEqual(await checkInvariants(store, [poor.accountId]), []);
  }, { quota: "lease" });
});

Deno.test("images: a provider failure is a 502 and costs nothing", async () => {
  await withGateway(async (g) => {
    const before = await account(g);
    const r = await post(g, { model: MODEL, prompt: "fail please [[mock:fail]]" });
    assert.equal(r.status, 502);
    assert.equal(r.json.error.type, "provider_error");
    assert.match(r.headers.get("x-generation-id") ?? "", /^gen_/);
    // openai (Images API) failed, then openrouter (chat) failed too.
    assert.deepEqual(g.mock.stats.calls.map((c) => c.protocol), ["images", "chat"]);
    const chat = g.mock.stats.calls[1].body as Record<string, unknown>;
    assert.deepEqual(chat.modalities, ["image"]);
    assert.equal(chat.model, MODEL);
    await g.settled();
    const after = await account(g);
    assert.equal(after.balance, before.balance);
    assert.equal(await heldByGenerations(g.store, after.id), 0n);
    const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    assert.equal(gen.status, "failed");
    assert.equal(gen.cost, 0n);
  });
});

Deno.test("images: if storing fails, that image comes back as b64_json (and is paid for)", async () => {
  await withGateway(async (g) => {
    let puts = 0;
    const failing: BlobStore = {
      kind: "failing",
      put() {
        puts++;
        return Promise.reject(new Error("disk full"));
      },
      get: () => Promise.resolve(null),
    };
    setBlobStore(g.gw.ctx, failing);
    const r = await generate(g, { model: MODEL, prompt: "keep me", n: 2, response_format: "url" });
    assert.equal(puts, 2);
    assert.equal(r.data.data!.length, 2);
    for (const d of r.data.data!) {
      assert.equal(d.url, undefined);
      assert.deepEqual([...Uint8Array.fromBase64(d.b64_json!).subarray(0, 4)], PNG_MAGIC);
    }
    assert.ok((r.data.usage as unknown as { cost: number }).cost > 0);
  });
});

Deno.test("images: without provider usage the debit is counted from the images returned, at the quality made", async () => {
  await withGateway(async (g) => {
    const raw = await generate(g, { model: MODEL, prompt: "quiet [[mock:usage=none]]", n: 3 });
    assert.equal(raw.data.data!.length, 3);
    // Asked for no quality or size, the provider chose them and said so.
    const made = raw.data as unknown as { quality: string; size: string };
    assert.deepEqual([made.quality, made.size], ["low", "1024x1024"]);
    const usage = raw.data.usage as unknown as Record<string, unknown>;
    assert.equal(usage.input_tokens, undefined);
    assert.ok((usage.cost as number) > 0);
    await g.settled();
    const gen = (await g.store.getGeneration(
      g.accountId,
      raw.response.headers.get("x-generation-id")!,
    ))!;
    assert.equal(gen.usageSource, "counted");
    assert.equal(gen.tokens.output, 3 * tokensPerImage({ quality: "low", size: "1024x1024" }));
    assert.ok(gen.tokens.output! < 3 * tokensPerImage({ quality: "low" }), "square, not oblong");
    assert.ok(gen.tokens.output! < 3 * tokensPerImage({}), "not the top-quality estimate");
    // The spec's usage carries output_tokens and total_tokens even then: the counted figures.
    assert.equal(usage.output_tokens, gen.tokens.output);
    assert.equal(usage.total_tokens, gen.tokens.output);
    assert.equal(nanoToRub(gen.cost), usage.cost);
  });
});

Deno.test("images: per-image prices debit price × images returned", async () => {
  await withGateway(async (g) => {
    const r = await generate(g, { model: PER_IMAGE_MODEL, prompt: "three logos", n: 3 });
    assert.equal(r.data.data!.length, 3);
    const usage = r.data.usage as unknown as { cost: number; cost_details: Record<string, number> };
    // 3 × $0.035 × 92.5 RUB/USD × 1.05 markup
    assert.equal(usage.cost, 10.198125);
    assert.equal(usage.cost_details.upstream_inference_output_cost, 9.7125);
    const body = g.mock.stats.calls.at(-1)!.body as Record<string, unknown>;
    assert.equal(body.model, "recraft-v4.1");
    assert.equal(body.n, 3);
  }, {
    providers: {
      providers: [{
        id: "imagehost",
        protocols: ["openai-images"],
        baseUrl: "http://unused.invalid",
        baseUrlEnv: "OPENAI_BASE_URL",
        keyEnv: "OPENAI_API_KEY",
        serves: ["recraft/*"],
      }],
    },
  });
});

Deno.test("images: chat upstreams return images in messages (OpenRouter style)", async () => {
  const png = solidPng(1, 2, 3);
  const seen: Record<string, unknown>[] = [];
  const fake = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const body = await req.json();
    seen.push(body);
    return Response.json({
      id: "gen-1",
      object: "chat.completion",
      created: 1,
      model: body.model,
      choices: [{
        index: 0,
        finish_reason: "stop",
        message: {
          role: "assistant",
          content: "Here is your image.",
          images: [{
            type: "image_url",
            image_url: { url: `data:image/png;base64,${png.toBase64()}` },
          }],
        },
      }],
      usage: { prompt_tokens: 10, completion_tokens: 1300, total_tokens: 1310, cost: 0.04 },
    });
  });
  try {
    await withGateway(async (g) => {
      const first = await generate(g, {
        model: CHAT_MODEL,
        prompt: "a wide landscape",
        aspect_ratio: "16:9",
        resolution: "2K",
        seed: 7,
        response_format: "url",
      });
      const url = first.data.data![0].url!;
      assert.deepEqual(new Uint8Array(await (await fetch(url)).arrayBuffer()), png);
      const usage = first.data.usage as unknown as Record<string, number>;
      assert.equal(usage.input_tokens, 10);
      assert.equal(usage.output_tokens, 1300);
      // The provider's own cost wins: $0.04 × 92.5 × 1.05.
      assert.equal(usage.cost, 3.885);
      const body = seen[0];
      assert.equal(body.model, CHAT_MODEL);
      assert.deepEqual(body.modalities, ["image", "text"]);
      assert.deepEqual(body.image_config, { aspect_ratio: "16:9", image_size: "2K" });
      assert.equal(body.seed, 7);
      assert.deepEqual(body.usage, { include: true });
      assert.deepEqual(body.messages, [{ role: "user", content: "a wide landscape" }]);

      // An edit through chat: the stored link goes up inline, as a data URL part.
      await generate(g, { model: CHAT_MODEL, prompt: "add a moon", input_references: [url] });
      const content = (seen[1].messages as { content: unknown[] }[])[0].content;
      assert.deepEqual(content[0], { type: "text", text: "add a moon" });
      assert.deepEqual(content[1], {
        type: "image_url",
        image_url: { url: `data:image/png;base64,${png.toBase64()}` },
      });
    }, {
      providers: {
        providers: [{
          id: "chatimages",
          protocols: ["openai-chat"],
          baseUrl: `http://127.0.0.1:${fake.addr.port}`,
          keyEnv: "OPENAI_API_KEY",
          serves: ["google/*"],
          upstreamName: "{slug}",
          quirks: { openrouterUsage: true },
        }],
      },
    });
  } finally {
    await fake.shutdown();
  }
});

Deno.test("images: a provider that does not answer in time is the spec's 502, and nothing is charged", async () => {
  await withGateway(async (g) => {
    const before = (await account(g)).balance;
    const res = await post(g, { model: MODEL, prompt: "slow [[mock:first=3000]]" });
    assert.equal(res.status, 502, JSON.stringify(res.json));
    assert.equal(res.json.error.type, "provider_error");
    assert.match(res.json.error.message, /in time/);
    await g.settled();
    assert.equal((await account(g)).balance, before);
  }, {
    providers: {
      providers: [{
        id: "openai",
        protocols: ["openai-images"],
        baseUrl: "https://api.openai.com/v1",
        baseUrlEnv: "OPENAI_BASE_URL",
        keyEnv: "OPENAI_API_KEY",
        serves: ["openai/*"],
        timeouts: { imagesMs: 300 },
      }],
    },
  });
});

/**
 * An image call (the upstream answers after `firstMs`) its client leaves once the upstream has
 * it; its generation once it no longer runs.
 */
async function leaveImageCall(g: TestGateway, firstMs: number) {
  const ac = new AbortController();
  const p = fetch(`${g.baseURL}/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: `slow [[mock:first=${firstMs}]]` }),
    signal: ac.signal,
  }).catch((e) => e);
  for (let i = 0; i < 100 && g.mock.stats.calls.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 100));
  ac.abort();
  assert.equal(((await p) as Error).name, "AbortError");
  let gen;
  for (let i = 0; i < 100; i++) {
    [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    if (gen && gen.status !== "running") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await g.settled();
  return gen;
}

Deno.test("images: an image call its client left (policy abort) is cancelled at no cost, not a shutdown's 503", async () => {
  await withGateway(async (g) => {
    const before = (await account(g)).balance;
    const gen = await leaveImageCall(g, 5000);
    assert.equal(gen?.status, "cancelled", "the client left: not failed, not a shutdown");
    assert.equal(gen!.cost, 0n);
    assert.equal(g.mock.stats.calls.length, 1, "and no other provider was asked");
    assert.equal((await account(g)).balance, before);
  });
});

Deno.test("images: with CANCEL_POLICY=drain an image the client left is still made, stored and billed", async () => {
  await withGateway(async (g) => {
    const before = (await account(g)).balance;
    const gen = await leaveImageCall(g, 600);
    await g.mock.idle();
    assert.equal(gen?.status, "completed", "the upstream's image was made");
    assert.equal(g.mock.stats.calls.length, 1, "and no other provider was asked");
    assert.ok(gen!.cost > 0n);
    assert.equal(before - (await account(g)).balance, gen!.cost);
  }, { config: { CANCEL_POLICY: "drain" } });
});

Deno.test("images: a model that makes images through chat answers from the dev mock too, and is billed", async () => {
  await withGateway(async (g) => {
    const before = await account(g);
    const r = await generate(g, { model: CHAT_MODEL, prompt: "a lighthouse" });
    assert.equal(r.data.data!.length, 1);
    for (const d of r.data.data!) {
      assert.deepEqual([...Uint8Array.fromBase64(d.b64_json!).subarray(0, 4)], PNG_MAGIC);
    }
    const call = g.mock.stats.calls.at(-1)!;
    assert.equal(call.protocol, "chat");
    const cost = (r.data.usage as unknown as { cost: number }).cost;
    assert.ok(cost > 0);
    await g.settled();
    assert.equal(nanoToRub(before.balance - (await account(g)).balance), cost);
  });
});

Deno.test("images: an image model's answer costs the same through chat as through the images endpoint", async () => {
  await withGateway(async (g) => {
    const viaImages = await generate(g, { model: CHAT_MODEL, prompt: "a lighthouse" });
    const viaChat = await client(g).chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: "user", content: "a lighthouse" }],
      modalities: ["image", "text"],
    } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    type Costed = { cost: number; cost_details: Record<string, number> };
    const images = viaImages.data.usage as unknown as Costed & { output_tokens: number };
    const chat = viaChat.usage as unknown as Costed & { completion_tokens: number };
    assert.equal(chat.completion_tokens, images.output_tokens);
    // The image tokens at the model's image output price (20× its text output), both ways.
    assert.equal(
      chat.cost_details.upstream_inference_output_cost,
      images.cost_details.upstream_inference_output_cost,
    );
    assert.ok(chat.cost > 0.9 * images.cost, `${chat.cost} against ${images.cost}`);
  });
});

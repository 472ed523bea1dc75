/**
 * Structured outputs through the SDKs' own helpers (`chat.completions.parse`,
 * `responses.parse`, `messages.parse`), on Claude and OpenAI models: a Claude model that holds
 * its answer to a schema is sent the schema natively (`output_config.format`, rewritten to the
 * subset Anthropic takes), one that does not is asked in words; and what the mock answers to a
 * schema is JSON that fits it, so the helpers parse it.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import OpenAI from "openai";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { type TestGateway, withGateway } from "../helpers/gateway.ts";

const CLAUDE = "anthropic/claude-sonnet-4.5";
/** A Claude model whose catalogue entry does not list `structured_outputs`. */
const OLD_CLAUDE = "anthropic/claude-sonnet-4";

const Weather = z.object({
  city: z.string().min(2),
  celsius: z.number().min(-90).max(60),
  conditions: z.enum(["sunny", "rain", "snow"]),
  hourly: z.array(z.object({ hour: z.number().int(), celsius: z.number() })).max(24),
  observed: z.string().nullable(),
});

const openai = (g: TestGateway) => new OpenAI({ apiKey: g.key, baseURL: g.baseURL, maxRetries: 0 });
const anthropic = (g: TestGateway) =>
  new Anthropic({ apiKey: g.key, baseURL: g.url, maxRetries: 0 });

type Body = Record<string, unknown> & {
  output_config?: { format?: { type: string; schema: Record<string, unknown> } };
  system?: { text: string }[];
};

const sent = (g: TestGateway, i = 0) => g.mock.stats.calls[i].body as Body;

function assertWeather(v: unknown) {
  const w = Weather.parse(v);
  assert.equal(w.conditions, "sunny");
  assert.equal(w.hourly.length, 1);
}

Deno.test("structured outputs: chat parse() on Claude sends the schema natively and parses the answer", async () => {
  await withGateway(async (g) => {
    const r = await openai(g).chat.completions.parse({
      model: CLAUDE,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      response_format: zodResponseFormat(Weather, "weather"),
    });
    assertWeather(r.choices[0].message.parsed);
    const body = sent(g);
    assert.equal(g.mock.stats.calls[0].protocol, "messages");
    const schema = body.output_config?.format?.schema;
    assert.equal(body.output_config?.format?.type, "json_schema");
    assert.ok(schema, "output_config.format carries the schema");
    // The subset Anthropic takes: bounds move into descriptions, objects are closed.
    const props = schema.properties as Record<string, Record<string, unknown>>;
    assert.equal(props.celsius.minimum, undefined);
    assert.match(String(props.celsius.description), /minimum: -90/);
    assert.equal(props.city.minLength, undefined);
    assert.equal(schema.additionalProperties, false);
    assert.ok(!JSON.stringify(body.system ?? []).includes("JSON schema"), "no instruction");
  });
});

Deno.test("structured outputs: a streamed chat parse() on Claude assembles the parsed answer", async () => {
  await withGateway(async (g) => {
    const stream = openai(g).chat.completions.stream({
      model: CLAUDE,
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      response_format: zodResponseFormat(Weather, "weather"),
    });
    const final = await stream.finalChatCompletion();
    assertWeather(final.choices[0].message.parsed);
  });
});

Deno.test("structured outputs: a Claude model without them is asked for the format in words", async () => {
  await withGateway(async (g) => {
    const r = await openai(g).chat.completions.create({
      model: OLD_CLAUDE,
      messages: [{ role: "user", content: "Weather? [[mock:tokens=2]]" }],
      response_format: zodResponseFormat(Weather, "weather"),
    });
    assert.equal(r.choices[0].message.content, "tok0 tok1");
    const body = sent(g);
    assert.equal(body.output_config, undefined);
    assert.match(JSON.stringify(body.system), /JSON schema \(weather\)/);
  });
});

Deno.test("structured outputs: a prefill on Claude keeps the instruction (Anthropic refuses a schema beside one)", async () => {
  await withGateway(async (g) => {
    await openai(g).chat.completions.create({
      model: CLAUDE,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: "{" },
      ],
      response_format: zodResponseFormat(Weather, "weather"),
    });
    const body = sent(g);
    assert.equal(body.output_config, undefined);
    assert.match(JSON.stringify(body.system), /JSON schema/);
  });
});

Deno.test("structured outputs: responses parse() on Claude and on an OpenAI model", async () => {
  await withGateway(async (g) => {
    for (const model of [CLAUDE, "openai/gpt-4o-mini"]) {
      const r = await openai(g).responses.parse({
        model,
        input: "Weather in Rome?",
        text: { format: zodTextFormat(Weather, "weather") },
      });
      assertWeather(r.output_parsed);
    }
    assert.ok(sent(g, 0).output_config?.format, "Claude got the schema natively");
  });
});

Deno.test("structured outputs: messages parse() on Claude (passed through) and on an OpenAI model (transcoded)", async () => {
  await withGateway(async (g) => {
    for (const model of [CLAUDE, "openai/gpt-4o-mini"]) {
      const r = await anthropic(g).messages.parse({
        model,
        max_tokens: 1024,
        messages: [{ role: "user", content: "Weather in Lima?" }],
        output_config: { format: zodOutputFormat(Weather) },
      });
      assertWeather(r.parsed_output);
    }
    assert.equal(g.mock.stats.calls[1].protocol, "chat");
    const rf = sent(g, 1).response_format as {
      type: string;
      json_schema: { schema: unknown; strict?: boolean };
    };
    assert.equal(rf.type, "json_schema");
    // Anthropic holds the answer to the schema; OpenAI does in its strict mode, which takes it.
    assert.equal(rf.json_schema.strict, true);
  });
});

Deno.test("structured outputs: a tool call's arguments fit the tool's schema, so runTools' zod parsing succeeds", async () => {
  await withGateway(async (g) => {
    const seen: unknown[] = [];
    const runner = openai(g).chat.completions.runTools({
      model: CLAUDE,
      messages: [{ role: "user", content: "Weather in Paris? [[mock:tool=get_weather]]" }],
      tools: [{
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather for a city",
          parameters: {
            type: "object",
            properties: {
              city: { type: "string" },
              unit: { type: "string", enum: ["c", "f"] },
              days: { type: "integer", minimum: 1, maximum: 7 },
            },
            required: ["city", "unit", "days"],
            additionalProperties: false,
          },
          parse: (s: string) => {
            const args = z.object({
              city: z.string(),
              unit: z.enum(["c", "f"]),
              days: z.number().int().min(1).max(7),
            }).parse(JSON.parse(s));
            seen.push(args);
            return args;
          },
          function: () => "sunny",
        },
      }],
      max_tokens: 64,
    }, { maxChatCompletions: 1 });
    await runner.done().catch(() => {});
    assert.deepEqual(seen, [{ city: "mock city 1", unit: "c", days: 1 }]);
  });
});

Deno.test("structured outputs: a recursive model (a tree) parses on an OpenAI model, chat and responses", async () => {
  // The SDKs send a self-referencing model inlined at the root (zod's `$ref: "#"`, pydantic's
  // `$defs`): the answer's deepest list must end empty, as no branch of the schema allows null.
  type Tree = { value: number; children: Tree[] };
  const Tree: z.ZodType<Tree> = z.object({
    value: z.number(),
    get children() {
      return z.array(Tree);
    },
  });
  const depth = (t: Tree): number => 1 + Math.max(0, ...t.children.map(depth));
  await withGateway(async (g) => {
    const chat = await openai(g).chat.completions.parse({
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "A tree, please" }],
      response_format: zodResponseFormat(Tree, "tree"),
    });
    const fromChat = chat.choices[0].message.parsed!;
    assert.ok(depth(fromChat) > 1, JSON.stringify(fromChat));
    const r = await openai(g).responses.parse({
      model: "openai/gpt-4o-mini",
      input: "A tree, please",
      text: { format: zodTextFormat(Tree, "tree") },
    });
    assert.ok(depth(r.output_parsed!) > 1, JSON.stringify(r.output_parsed));
    assert.match(JSON.stringify(sent(g).response_format), /"\$ref"/, "the schema refers to itself");
  });
});

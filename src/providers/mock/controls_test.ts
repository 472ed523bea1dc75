import assert from "node:assert/strict";
import { parseControls } from "./controls.ts";

Deno.test("markers: several keys, several markers, bare keys", () => {
  const c = parseControls(
    "say [[mock:tokens=5,first=10, every=2]] and [[mock:tool=get_weather,tools=2,echo]]",
    {},
  );
  assert.deepEqual(c, {
    tokens: 5,
    first: 10,
    every: 2,
    tool: "get_weather",
    tools: 2,
    echo: true,
  });
});

Deno.test("markers: headers win over the body; dashes become underscores", () => {
  const c = parseControls("[[mock:tokens=5,usage=none]]", {
    "x-mock-tokens": "7",
    "x-mock-cache-read": "30",
    "x-mock-cache-write": "4",
    "x-mock-finish": "length",
    "authorization": "Bearer x",
  });
  assert.deepEqual(c, { tokens: 7, usage: false, cacheRead: 30, cacheWrite: 4, finish: "length" });
});

Deno.test("markers: malformed values and unknown keys are ignored; values are bounded", () => {
  const c = parseControls(
    "[[mock:tokens=abc,error=200,finish=maybe,nope=1,cut=-1,tokens=9999999]]",
    {},
  );
  assert.deepEqual(c, { tokens: 100_000 });
  assert.deepEqual(parseControls("[[mock:error=503]]", {}), { error: 503 });
  assert.deepEqual(parseControls("no markers [[mock:tokens=3", {}), {});
});

Deno.test("markers: args is base64 (either alphabet, padded or not) of UTF-8 text", () => {
  const json = '{"subagent_type":"general-purpose","prompt":"Grüße, «мир» ✓?"}';
  const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(json)));
  const url = b64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  assert.deepEqual(parseControls(`[[mock:tool=Agent,args=${b64},steps=1]]`, {}), {
    tool: "Agent",
    args: json,
    steps: 1,
  });
  assert.equal(parseControls(`[[mock:args=${url}]]`, {}).args, json);
  assert.equal(parseControls("[[mock:args=not base64!]]", {}).args, undefined);
  // Bytes that are not UTF-8 are no text to send.
  assert.equal(parseControls("[[mock:args=/w]]", {}).args, undefined);
});

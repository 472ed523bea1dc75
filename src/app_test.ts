import assert from "node:assert/strict";
import { pathOf } from "./app.ts";

Deno.test("pathOf reads the same path as the URL parser", () => {
  for (
    const url of [
      "http://127.0.0.1:8080/v1/chat/completions",
      "http://localhost/v1/messages?beta=true",
      "http://localhost/v1/models#frag",
      "https://gw.example.com/v1/generations/gen_abc%2Fdef",
      "http://localhost/v1/../v1/chat/completions",
      "http://localhost/v1/./models",
      "http://localhost/v1\\models",
      "http://localhost",
      "http://localhost/",
      "http://localhost/v1/models/?x=/y",
      "http://[::1]:8080/health",
      "http://localhost/v1/file.name.json",
    ]
  ) {
    assert.equal(pathOf(url), new URL(url).pathname, url);
  }
});

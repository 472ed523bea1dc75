/**
 * A client that leaves while the gateway peeks at the upstream's first event: the call is the
 * client's cancellation, not an upstream failure, whatever the peek's last read brought.
 */
import assert from "node:assert/strict";
import { MODEL, settledGeneration, withGateway } from "../helpers/chat.ts";

Deno.test("stream peek: a client leaving as the first token arrives settles as cancelled", () =>
  withGateway(async (g) => {
    const client = new AbortController();
    const enc = new TextEncoder();
    const chunk = (delta: Record<string, unknown>) =>
      `data: ${
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion.chunk",
          created: 1,
          model: "gpt-4o-mini",
          choices: [{ index: 0, delta, finish_reason: null }],
        })
      }\n\n`;
    const realFetch = globalThis.fetch;
    // The upstream's first token and the client's disconnect land in the same turn: the
    // chunk is already the pending read's when the disconnect cancels the upstream body.
    globalThis.fetch = (input, init) => {
      if (!String(input instanceof Request ? input.url : input).startsWith(g.mock.url)) {
        return realFetch(input, init);
      }
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          // As fetch does: the call's signal breaks its body.
          init?.signal?.addEventListener("abort", () => c.error(init.signal!.reason));
        },
        pull(c) {
          if (sent) return new Promise(() => {}); // the rest never comes
          sent = true;
          c.enqueue(enc.encode(chunk({ role: "assistant", content: "tok0" })));
          client.abort();
        },
      }, { highWaterMark: 0 });
      return Promise.resolve(
        new Response(body, { headers: { "content-type": "text/event-stream" } }),
      );
    };
    let res: Response;
    try {
      res = await g.gw.handler(
        new Request(`${g.baseURL}/chat/completions`, {
          method: "POST",
          signal: client.signal,
          headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: MODEL,
            stream: true,
            messages: [{ role: "user", content: "hi" }],
          }),
        }),
        { remoteAddr: "127.0.0.1" },
      );
    } finally {
      globalThis.fetch = realFetch;
    }
    // What the server does with an answer for a client that is gone: it starts the body.
    await res.body?.pipeTo(new WritableStream()).catch(() => {});
    // The settlement may still be in a batch: the store lists it once that is written.
    await g.settled();
    const [gen] = await g.store.listGenerations(g.accountId, { limit: 1 });
    assert.ok(gen, "the call's generation");
    const settled = await settledGeneration(g, g.accountId, gen.id);
    assert.equal(settled.status, "cancelled", `status ${settled.status}, error ${settled.error}`);
  }));

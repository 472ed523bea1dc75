import { startGateway } from "../helpers/gateway.ts";
Deno.test("probe", async () => {
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const g = await startGateway();
    console.log("start", performance.now() - t);
    const r = await fetch(g.url + "/v1/models");
    console.log(r.status, r.headers.get("cache-control"), r.headers.get("etag"), (await r.text()).length);
    await g.close();
  }
});

/**
 * Deno Deploy entry: the app exported as `{ fetch }`. Requires DATABASE_URL (no file-system
 * writes here: the embedded store needs a disk Deploy does not give); REDIS_URL shares rate
 * limits across isolates. Holds stay in the store one by one (no leased wallet): an isolate
 * can be evicted at any moment, and settlements gathered in memory would go unbilled.
 */
import { loadConfig } from "./config.ts";
import { buildGateway, type Gateway } from "./server.ts";

let gateway: Promise<Gateway> | undefined;

function get(): Promise<Gateway> {
  gateway ??= (() => {
    const cfg = loadConfig();
    if (!cfg.DATABASE_URL) throw new Error("config: DATABASE_URL is required on Deno Deploy");
    return buildGateway(cfg);
  })();
  return gateway;
}

export default {
  async fetch(req: Request, info?: Deno.ServeHandlerInfo): Promise<Response> {
    const gw = await get();
    const addr = info?.remoteAddr;
    return gw.handler(req, { remoteAddr: addr && addr.transport === "tcp" ? addr.hostname : "" });
  },
};

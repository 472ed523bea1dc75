/**
 * Diagnostic target `tollgate-nostore`: Tollgate's real pipeline (src/server.ts
 * `buildGateway`) over a store that does no work — the key lookup returns one fixed key,
 * `reserve` and `settle` succeed at once. Measured next to `tollgate`, it separates the cost
 * of the store from the cost of everything else (auth, validation, routing, the stream
 * stage, metering), i.e. the most a leased, batched wallet (design §10) could win. Not in the
 * default run: `deno task bench --targets=tollgate,tollgate-nostore,floor-scan`.
 * Environment as for src/main.ts (provider keys and base URLs, PORT); prints the key.
 */
import { parseConfig } from "../src/config.ts";
import { buildGateway } from "../src/server.ts";
import type { KeyAuth, Store } from "../src/store/store.ts";

const cfg = parseConfig({ ...Deno.env.toObject(), LOG_LEVEL: "error", DATABASE_URL: undefined });
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const key = `${cfg.KEY_PREFIX}_` +
  Array.from(crypto.getRandomValues(new Uint8Array(40)), (b) => alphabet[b % 62]).join("");
const now = new Date();
const auth: KeyAuth = {
  key: {
    id: "key_bench",
    accountId: "acc_bench",
    prefix: key.slice(0, 7),
    label: null,
    revoked: false,
    rpmLimit: null,
    spendLimit: null,
    spent: 0n,
    lastUsed: null,
    created: now,
  },
  account: {
    id: "acc_bench",
    name: "bench",
    balance: 10n ** 24n,
    held: 0n,
    defaultModel: null,
    rpmLimit: null,
    created: now,
  },
};
const impl: Partial<Store> = {
  migrate: async () => {},
  ping: async () => {},
  close: async () => {},
  findKeyByHash: () => Promise.resolve(auth),
  touchKey: async () => {},
  reserve: () => Promise.resolve(true),
  settle: () => Promise.resolve(true),
  staleGenerations: () => Promise.resolve([]),
};
const store = new Proxy(impl, {
  get: (t, name: string) =>
    (t as Record<string, unknown>)[name] ??
      (() => Promise.reject(new Error(`tollgate-nostore: store.${name} is not available`))),
}) as Store;

const gw = await buildGateway(cfg, { store });
console.log(key);
Deno.serve({
  hostname: "127.0.0.1",
  port: cfg.PORT,
  onListen: ({ port }) => console.log(`tollgate-nostore listening on http://127.0.0.1:${port}`),
}, (req, info) => gw.handler(req, { remoteAddr: (info.remoteAddr as Deno.NetAddr).hostname }));
// Exit through Deno.exit so that `--cpu-prof` writes its profile.
Deno.addSignalListener("SIGTERM", () => Deno.exit(0));

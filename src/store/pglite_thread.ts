/**
 * The embedded driver on a thread of its own. PGlite is PostgreSQL compiled to WASM, and each
 * statement runs synchronously on the thread that calls it: on the gateway's thread, a batch
 * of settlements held every request in flight for its whole length. Here PGlite lives in a
 * Worker, so the request thread does none of its work: with a core to spare the two run in
 * parallel, and on one core the operating system time-slices them.
 *
 * Same `Db` contract as `openPglite`: the worker runs that very driver, and this side only
 * forwards calls. A transaction's statements carry its id, and PGlite's own lock keeps every
 * other statement out until it ends, exactly as in-thread.
 */
import { type Db, param, statementsOnly } from "./db.ts";
import type { PgliteDb } from "./pglite.ts";

/** What this side asks of the worker. `tx` routes a statement into an open transaction. */
export type Call =
  | { op: "open"; dataDir?: string; from?: ArrayBuffer }
  | { op: "query"; sql: string; params: unknown[]; tx?: number }
  | { op: "exec"; sql: string; tx?: number }
  | { op: "batch"; name: string; sql: string; arg: string }
  | { op: "begin"; tx: number }
  | { op: "end"; tx: number; commit: boolean }
  | { op: "dump" }
  | { op: "close" };

/** The worker's answer to call `id`. Errors cross as their message and own fields. */
export type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: WireError };

export interface WireError {
  name: string;
  message: string;
  fields: Record<string, unknown>;
}

/** An error as it crosses the thread boundary: PostgreSQL's fields (code, detail, …) kept. */
export function toWire(e: unknown): WireError {
  if (!(e instanceof Error)) return { name: "Error", message: String(e), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (v === null || ["string", "number", "boolean"].includes(typeof v)) fields[k] = v;
  }
  return { name: e.name, message: e.message, fields };
}

function fromWire(w: WireError): Error {
  const e = Object.assign(new Error(w.message), w.fields);
  e.name = w.name;
  return e;
}

/**
 * Opens PGlite in a Worker: under `dataDir/pg`, or in memory when `dataDir` is undefined;
 * `from` starts from a `dump()` (tests).
 */
export async function openPgliteThread(
  dataDir: string | undefined,
  opts: { from?: Blob } = {},
): Promise<PgliteDb> {
  const worker = new Worker(new URL("./pglite_worker.ts", import.meta.url).href, {
    type: "module",
  });
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let seq = 0;
  let broken: Error | undefined;
  worker.onmessage = ({ data }: MessageEvent<Reply>) => {
    const p = pending.get(data.id);
    if (!p) return;
    pending.delete(data.id);
    if (data.ok) p.resolve(data.value);
    else p.reject(fromWire(data.error));
  };
  // A worker that dies (WASM abort, out of memory) fails what is in flight and every later
  // call: the store is then unavailable, which requests answer with 503.
  worker.onerror = (ev: ErrorEvent) => {
    ev.preventDefault();
    broken = new Error(`embedded database thread failed: ${ev.message}`);
    for (const p of pending.values()) p.reject(broken);
    pending.clear();
  };

  const call = <T>(c: Call, transfer: Transferable[] = []): Promise<T> => {
    if (broken) return Promise.reject(broken);
    const id = ++seq;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, call: c }, transfer);
    });
  };

  const from = opts.from ? await opts.from.arrayBuffer() : undefined;
  try {
    await call({ op: "open", dataDir, from }, from ? [from] : []);
  } catch (e) {
    worker.terminate();
    throw e;
  }

  const statements = (tx?: number): Pick<Db, "query" | "exec"> => ({
    query: <T>(sql: string, params: unknown[] = []) =>
      call<T[]>({ op: "query", sql, params: params.map(param), tx }),
    exec: (sql: string) => call<void>({ op: "exec", sql, tx }),
  });
  let txSeq = 0;

  return {
    ...statements(),
    trustedBatch: <T>(name: string, sql: string, arg: string) =>
      call<T[]>({ op: "batch", name, sql, arg }),
    async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      const tx = ++txSeq;
      await call({ op: "begin", tx });
      let result: T;
      try {
        result = await fn(statementsOnly(statements(tx)));
      } catch (e) {
        await call({ op: "end", tx, commit: false }).catch(() => {});
        throw e;
      }
      await call({ op: "end", tx, commit: true });
      return result;
    },
    async dump() {
      return new Blob([await call<ArrayBuffer>({ op: "dump" })]);
    },
    async close() {
      try {
        if (!broken) await call({ op: "close" });
      } finally {
        worker.terminate();
      }
    },
  };
}

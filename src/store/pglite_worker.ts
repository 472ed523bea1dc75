/**
 * The worker side of `openPgliteThread`: runs the in-thread driver and answers each call.
 * Calls are handled as they arrive, without waiting for one another; PGlite's own lock
 * orders the statements, and keeps a transaction's statements alone until it ends.
 */
import { getPriority, setPriority } from "node:os";
import type { Db } from "./db.ts";
import { openPglite, type PgliteDb } from "./pglite.ts";
import { type Call, type Reply, toWire } from "./pglite_thread.ts";

const port = self as unknown as {
  onmessage: ((ev: MessageEvent<{ id: number; call: Call }>) => void) | null;
  postMessage(m: Reply, transfer?: Transferable[]): void;
};

/**
 * The store's thread runs at a lower priority than the requests' (a nice value above 0, on
 * Linux, where it is per thread). Its work is the settlement batches, written behind the
 * requests they bill; on a busy core a batch statement (several ms) otherwise takes the core
 * from the requests being served, and a request arriving then waits for it. Under sustained
 * load the batches still get their share: when their backlog is full, new requests wait for
 * the store (batches.ts), and the core is the store's.
 */
const STORE_NICE = 10;

/**
 * Lowers this thread's priority by STORE_NICE. On Linux `setpriority` with no id (0) names the
 * calling thread, not the process: the requests' thread keeps its own. Elsewhere it would name
 * the whole process, so only Linux is asked. (Not by the thread's id from `/proc/thread-self`:
 * Deno 2 lets only `--allow-all` read that, which `deno task start` does not grant.)
 */
function lowerPriority(): void {
  if (Deno.build.os !== "linux") return;
  try {
    setPriority(Math.min(19, getPriority() + STORE_NICE));
  } catch {
    // Not permitted (`--allow-sys` withheld): the store runs at the requests' priority.
  }
}
lowerPriority();

/**
 * The dump as PGlite reads it (`arrayBuffer()` and `type` are all it asks of a Blob), without a
 * Blob: a Blob's bytes live in the process's blob store until the Blob is collected, and a
 * terminated worker's never are, so every store a test opened from the template kept its dump
 * (~40 MB) for good; a suite without DATABASE_URL grew past 20 GB and was killed.
 */
function bytesAsBlob(bytes: ArrayBuffer): Blob {
  return { arrayBuffer: () => Promise.resolve(bytes), type: "" } as unknown as Blob;
}

let db: PgliteDb | undefined;
/** Open transactions: the handle their statements run on, and how to end them. */
const open = new Map<number, { tx: Db; end(commit: boolean): void }>();
/** How each transaction ended: committed, rolled back (ROLLBACK), or failed. */
const outcomes = new Map<number, Promise<void>>();
/** Thrown into a transaction's body to make PGlite roll it back. */
const ROLLBACK = new Error("rollback");

function begin(id: number, on: PgliteDb): Promise<void> {
  return new Promise((begun, failed) => {
    const outcome = on.transaction(async (tx) => {
      await new Promise<void>((commit, rollback) => {
        open.set(id, { tx, end: (ok) => ok ? commit() : rollback(ROLLBACK) });
        begun();
      });
    });
    outcomes.set(id, outcome);
    outcome.catch((e) => {
      // Failed before its body ran (BEGIN refused): nothing will end it.
      if (!open.has(id)) {
        outcomes.delete(id);
        failed(e);
      }
    });
  });
}

async function end(id: number, commit: boolean): Promise<void> {
  const entry = open.get(id);
  if (!entry) throw new Error(`no open transaction ${id}`);
  entry.end(commit);
  try {
    await outcomes.get(id);
  } catch (e) {
    if (e !== ROLLBACK) throw e;
  } finally {
    open.delete(id);
    outcomes.delete(id);
  }
}

async function run(c: Call): Promise<{ value: unknown; transfer?: Transferable[] }> {
  if (c.op === "open") {
    db = await openPglite(c.dataDir, { from: c.from ? bytesAsBlob(c.from) : undefined });
    return { value: null };
  }
  if (!db) throw new Error("the embedded database is not open");
  const on = (tx?: number): Db => {
    if (tx === undefined) return db!;
    const entry = open.get(tx);
    if (!entry) throw new Error(`no open transaction ${tx}`);
    return entry.tx;
  };
  switch (c.op) {
    case "query":
      return { value: await on(c.tx).query(c.sql, c.params) };
    case "exec":
      return { value: await on(c.tx).exec(c.sql) };
    case "batch":
      return { value: await db.trustedBatch!(c.name, c.sql, c.arg) };
    case "begin":
      return { value: await begin(c.tx, db) };
    case "end":
      return { value: await end(c.tx, c.commit) };
    case "dump": {
      const buf = await (await db.dump()).arrayBuffer();
      return { value: buf, transfer: [buf] };
    }
    case "close":
      await db.close();
      db = undefined;
      return { value: null };
  }
}

port.onmessage = async ({ data: { id, call } }) => {
  try {
    const { value, transfer } = await run(call);
    port.postMessage({ id, ok: true, value }, transfer);
  } catch (e) {
    port.postMessage({ id, ok: false, error: toWire(e) });
  }
};

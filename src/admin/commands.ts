/**
 * The operator commands, shared by the CLI (`deno task admin …`) and the server's operator
 * endpoint. `runAdmin` parses argv, runs one command against a store, and answers with a
 * JSON-ready `result` plus the same facts as text. Bad arguments come back as `ok: false`
 * with the usage; failures of the command itself (an unknown account) are thrown.
 *
 * Money in results is roubles as a JSON number with at most 9 decimals (design §5); money in
 * arguments is roubles as typed (`100`, `12.5`), parsed exactly.
 */
import { Catalogue } from "../catalogue/catalogue.ts";
import type { Account, Generation, LedgerEntry, Store } from "../store/store.ts";
import { NotFoundError } from "../store/errors.ts";
import { generateKey } from "../store/keys.ts";
import { formatRub, rubToNano } from "../billing/money.ts";
import { tokensJson } from "../pipeline/generations.ts";

export type AdminReply =
  | { ok: true; result: Record<string, unknown>; text: string }
  | { ok: false; usage: string; error: string };

export const USAGE = `Usage: deno task admin [--json] <command> [options]

Commands:
  account create --name NAME [--balance RUB]
  account show --account ID
  account set-default-model --account ID --model SLUG|none
  account set-limits --account ID --rpm N|none
  key create --account ID [--label LABEL]
  key list --account ID
  key revoke KEY_ID
  key set-limits KEY_ID [--rpm N|none] [--spend RUB|none]
  topup --account ID --amount RUB --idempotency-key K
  balance --account ID
  ledger --account ID [--limit N]
  generations --account ID [--limit N] [--before GENERATION_ID]

Amounts are roubles with at most 9 decimals (100, 12.5). Options may come in any order,
as --opt VALUE or --opt=VALUE. --json prints one JSON object instead of text.`;

/** Rows a `generations` listing shows by default, and at most (one screen; one response). */
const GENERATIONS_LIMIT_DEFAULT = 20;
const GENERATIONS_LIMIT_MAX = 1000;
/**
 * Ledger entries a listing shows by default, and at most: an account's whole history (one
 * entry per generation) read at once would stall the server that runs the command for it.
 */
const LEDGER_LIMIT_DEFAULT = 100;
const LEDGER_LIMIT_MAX = 10_000;
/** PostgreSQL `integer`. */
const INT_MAX = 2 ** 31 - 1;

/** An argument error: becomes `ok: false` with the usage. */
class UsageError extends Error {}

/** A command that refuses what it was asked (beyond a missing row): thrown, exit status 1. */
export class CommandError extends Error {
  override name = "CommandError";
}

interface Args {
  /** Positionals after the command words. */
  rest: string[];
  opts: Map<string, string>;
}

interface Command {
  /** Options it accepts (without `--`); all take a value. */
  options: string[];
  /** Positionals it takes after the command words. */
  positionals: string[];
  run(store: Store, args: Args, cfg: AdminConfig): Promise<Out>;
}

export interface AdminConfig {
  keyPrefix: string;
  /** The running gateway's figures not in the store yet (its in-memory wallet's). */
  inMemory?: (accountId: string) => { held: bigint; pending: bigint } | undefined;
}

type Out = { result: Record<string, unknown>; text: string };

/** Flags that take no value and are accepted anywhere (`--json` is the CLI's business). */
const SWITCHES = new Set(["json", "help"]);

export async function runAdmin(
  store: Store,
  argv: string[],
  cfg: AdminConfig,
): Promise<AdminReply> {
  try {
    // No shell passes one, but the operator API can: PostgreSQL text cannot hold it, so the
    // store refused the command with a 500 that named no argument.
    const nul = argv.findIndex((a) => a.includes("\u0000"));
    if (nul >= 0) throw new UsageError(`argument ${nul + 1} holds a NUL character (U+0000)`);
    const { words, opts, switches } = tokenize(argv);
    if (switches.has("help") || words[0] === "help") {
      return { ok: true, result: { usage: USAGE }, text: USAGE };
    }
    if (words.length === 0) throw new UsageError("no command given");
    const [name, command, positionals] = resolve(words);
    for (const key of opts.keys()) {
      if (!command.options.includes(key)) throw new UsageError(`${name}: unknown option --${key}`);
    }
    if (positionals.length !== command.positionals.length) {
      const want = command.positionals.join(" ") || "no arguments";
      throw new UsageError(`${name}: expected ${want}`);
    }
    const { result, text } = await command.run(store, { rest: positionals, opts }, cfg);
    return { ok: true, result, text };
  } catch (e) {
    if (e instanceof UsageError) return { ok: false, usage: USAGE, error: e.message };
    throw e;
  }
}

function tokenize(argv: string[]) {
  const words: string[] = [];
  const opts = new Map<string, string>();
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h") {
      switches.add("help");
      continue;
    }
    if (!arg.startsWith("--")) {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const key = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (key === "") throw new UsageError(`bad option: ${arg}`);
    if (SWITCHES.has(key) && eq === -1) {
      switches.add(key);
      continue;
    }
    let value: string;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) {
        throw new UsageError(`--${key} needs a value`);
      }
      value = next;
      i++;
    }
    if (opts.has(key)) throw new UsageError(`--${key} given twice`);
    opts.set(key, value);
  }
  return { words, opts, switches };
}

/** The command named by the first one or two words, and the words after it. */
function resolve(words: string[]): [string, Command, string[]] {
  const two = words.slice(0, 2).join(" ");
  if (COMMANDS[two]) return [two, COMMANDS[two], words.slice(2)];
  if (COMMANDS[words[0]]) return [words[0], COMMANDS[words[0]], words.slice(1)];
  const group = Object.keys(COMMANDS).filter((c) => c.startsWith(`${words[0]} `));
  if (group.length > 0) {
    const subs = group.map((c) => c.split(" ")[1]).join(", ");
    throw new UsageError(
      words[1] === undefined
        ? `${words[0]}: which one? (${subs})`
        : `unknown command: ${two} (${words[0]} takes ${subs})`,
    );
  }
  throw new UsageError(`unknown command: ${words[0]}`);
}

// --- argument readers ---

function required(args: Args, key: string): string {
  const v = args.opts.get(key);
  if (v === undefined || v === "") throw new UsageError(`--${key} is required`);
  return v;
}

/**
 * The largest amount the CLI takes. Balances are nano-roubles in a signed 64-bit column
 * (about 9.2 billion roubles); one amount stays well inside it.
 */
const MAX_AMOUNT_NANO = 1_000_000_000n * 1_000_000_000n;

/** Roubles as typed → nano-roubles; negative or over-precise amounts are usage errors. */
function rub(key: string, text: string, opts: { positive?: boolean } = {}): bigint {
  if (text.trim().startsWith("-")) throw new UsageError(`--${key} cannot be negative`);
  // Plain digits only: `1e3` is not an amount anyone types on purpose, and `1e30000000`
  // would be a number of thirty million digits.
  if (!/^\d{1,10}(\.\d{1,9})?$/.test(text.trim())) {
    throw new UsageError(`--${key} must be roubles with at most 9 decimals, e.g. 100 or 12.5`);
  }
  const nano = rubToNano(text);
  if (nano > MAX_AMOUNT_NANO) {
    throw new UsageError(`--${key} must be at most ${formatRub(MAX_AMOUNT_NANO)} roubles`);
  }
  if (opts.positive && nano === 0n) throw new UsageError(`--${key} must be more than zero`);
  return nano;
}

function int(key: string, text: string, min: number, max: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) {
    throw new UsageError(`--${key} must be a whole number from ${min} to ${max}`);
  }
  return n;
}

/** `none` clears a limit. */
function orNone<T>(text: string | undefined, parse: (t: string) => T): T | null | undefined {
  if (text === undefined) return undefined;
  return text === "none" ? null : parse(text);
}

/**
 * The account as a running embedded gateway sees it: its holds and its latest settlements are
 * in memory until written, and count as the store's would.
 */
function withMemory(a: Account, cfg: AdminConfig): Account {
  const mem = cfg.inMemory?.(a.id);
  return mem ? { ...a, balance: a.balance - mem.pending, held: a.held + mem.held } : a;
}

async function account(store: Store, id: string): Promise<Account> {
  const a = await store.getAccount(id);
  if (!a) throw new NotFoundError(`no such account: ${id}`);
  return a;
}

// --- rendering ---

const rubText = (nano: bigint) => `${formatRub(nano)} RUB`;
const limitText = (v: unknown) => v === null || v === undefined ? "none" : String(v);
/**
 * A request-rate limit of its own, or the gateway's default: RATE_LIMIT_RPM for a key,
 * ACCOUNT_RATE_LIMIT_RPM for an account ("none" read as no limit at all).
 */
const rpmText = (v: unknown) => v === null || v === undefined ? "default" : String(v);

function accountJson(a: Account) {
  return {
    id: a.id,
    name: a.name,
    balance: formatRub(a.balance),
    held: formatRub(a.held),
    default_model: a.defaultModel,
    rpm_limit: a.rpmLimit,
    created: a.created.toISOString(),
  };
}

function ledgerJson(e: LedgerEntry) {
  return {
    id: e.id,
    kind: e.kind,
    amount: formatRub(e.amount),
    generation_id: e.generationId,
    idempotency_key: e.idempotencyKey,
    created: e.created.toISOString(),
  };
}

function generationJson(g: Generation) {
  return {
    id: g.id,
    created: g.created.toISOString(),
    endpoint: g.endpoint,
    model: g.model,
    provider: g.provider,
    upstream_model: g.upstreamModel,
    stream: g.stream,
    status: g.status,
    finish_reason: g.finishReason,
    tokens: tokensJson(g.tokens),
    cost: formatRub(g.cost),
    usage_source: g.usageSource,
    latency_ms: g.latencyMs,
    error: g.error,
  };
}

/** Aligned columns, for listings. */
function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n");
}

// --- the commands ---

const COMMANDS: Record<string, Command> = {
  "account create": {
    options: ["name", "balance"],
    positionals: [],
    async run(store, args) {
      const name = required(args, "name");
      const balanceText = args.opts.get("balance");
      const balance = balanceText === undefined ? 0n : rub("balance", balanceText);
      const a = await store.createAccount(name, balance);
      return {
        result: { id: a.id, balance: formatRub(a.balance) },
        text: `created account ${a.id} (${name}), balance ${rubText(a.balance)}`,
      };
    },
  },

  "account show": {
    options: ["account"],
    positionals: [],
    async run(store, args, cfg) {
      const a = withMemory(await account(store, required(args, "account")), cfg);
      return {
        result: accountJson(a),
        text: [
          `account       ${a.id} (${a.name})`,
          `balance       ${rubText(a.balance)}`,
          `held          ${rubText(a.held)}`,
          `default model ${a.defaultModel ?? "none"}`,
          `rpm limit     ${rpmText(a.rpmLimit)}`,
          `created       ${a.created.toISOString()}`,
        ].join("\n"),
      };
    },
  },

  "account set-default-model": {
    options: ["account", "model"],
    positionals: [],
    async run(store, args) {
      const id = required(args, "account");
      const model = orNone(required(args, "model"), (m) => m) ?? null;
      if (model !== null) {
        // Checked now, not at the account's next request: a bare upstream name or a typo
        // would make every request that names no model a 400.
        const file = Deno.env.get("CATALOGUE_FILE");
        const catalogue = await Catalogue.load(file ? { models: file } : {});
        const found = catalogue.resolve(model);
        if (!found) {
          // The slug the API's 400 would name for the same bare upstream name.
          const meant = catalogue.suggest(model);
          throw new CommandError(
            `${model} is not a catalogue slug (vendor/model, see GET /v1/models)` +
              (meant ? `: did you mean ${meant}?` : ""),
          );
        }
        if (found.kind === "embedding" || !found.architecture.output_modalities.includes("text")) {
          throw new CommandError(`${model} does not generate text: it cannot be a default model`);
        }
      }
      await store.setDefaultModel(id, model);
      return {
        result: { id, default_model: model },
        text: `account ${id}: default model ${model ?? "none"}`,
      };
    },
  },

  "account set-limits": {
    options: ["account", "rpm"],
    positionals: [],
    async run(store, args) {
      const id = required(args, "account");
      const rpm = orNone(required(args, "rpm"), (t) => int("rpm", t, 0, INT_MAX)) ?? null;
      await store.setAccountRpm(id, rpm);
      return { result: { id, rpm_limit: rpm }, text: `account ${id}: rpm limit ${rpmText(rpm)}` };
    },
  },

  "key create": {
    options: ["account", "label"],
    positionals: [],
    async run(store, args, cfg) {
      const id = required(args, "account");
      const k = await generateKey(cfg.keyPrefix);
      const rec = await store.createKey(id, k.hash, k.display, args.opts.get("label") ?? null);
      return {
        result: { id: rec.id, key: k.key },
        text: `created key ${rec.id} for account ${id}:\n\n  ${k.key}\n\n` +
          "This is the only time the key is shown; store it now.",
      };
    },
  },

  "key list": {
    options: ["account"],
    positionals: [],
    async run(store, args) {
      const a = await account(store, required(args, "account"));
      const keys = (await store.listKeys(a.id)).map((k) => ({
        id: k.id,
        prefix: k.prefix,
        label: k.label,
        revoked: k.revoked,
        last_used: k.lastUsed?.toISOString() ?? null,
        created: k.created.toISOString(),
        rpm: k.rpmLimit,
        spend_limit: k.spendLimit === null ? null : formatRub(k.spendLimit),
        spent: formatRub(k.spent),
      }));
      const rows = keys.map((k) => [
        k.id,
        `${k.prefix}…`,
        k.label ?? "",
        k.revoked ? "revoked" : "active",
        k.last_used ?? "never used",
        `rpm ${rpmText(k.rpm)}`,
        `spend ${k.spent}/${limitText(k.spend_limit)}`,
      ]);
      return {
        result: { keys },
        text: rows.length ? table(rows) : `account ${a.id} has no keys`,
      };
    },
  },

  "key revoke": {
    options: [],
    positionals: ["KEY_ID"],
    async run(store, args) {
      const [id] = args.rest;
      const done = await store.revokeKey(id);
      if (!done) throw new NotFoundError(`no such key: ${id}`);
      // Idempotent: revoking twice succeeds, and says the key already was.
      return {
        result: { id, revoked: true, ...(done === "already revoked" ? { already: true } : {}) },
        text: done === "already revoked" ? `key ${id} was already revoked` : `revoked key ${id}`,
      };
    },
  },

  "key set-limits": {
    options: ["rpm", "spend"],
    positionals: ["KEY_ID"],
    async run(store, args) {
      const [id] = args.rest;
      const rpm = orNone(args.opts.get("rpm"), (t) => int("rpm", t, 0, INT_MAX));
      const spend = orNone(args.opts.get("spend"), (t) => rub("spend", t));
      if (rpm === undefined && spend === undefined) {
        throw new UsageError("key set-limits: give --rpm and/or --spend");
      }
      await store.setKeyLimits(id, { rpm, spend });
      const result: Record<string, unknown> = { id };
      const text: string[] = [];
      if (rpm !== undefined) {
        result.rpm = rpm;
        text.push(`rpm limit ${rpmText(rpm)}`);
      }
      if (spend !== undefined) {
        result.spend_limit = spend === null ? null : formatRub(spend);
        text.push(`spend limit ${spend === null ? "none" : rubText(spend)}`);
      }
      return { result, text: `key ${id}: ${text.join(", ")}` };
    },
  },

  "topup": {
    options: ["account", "amount", "idempotency-key"],
    positionals: [],
    async run(store, args, cfg) {
      const id = required(args, "account");
      const amount = rub("amount", required(args, "amount"), { positive: true });
      const idem = required(args, "idempotency-key");
      await account(store, id);
      const { entry, applied } = await store.topup(id, amount, idem).catch((e) => {
        // PostgreSQL's "bigint out of range": the sum passed the column's 64 bits.
        if (/out of range/i.test(String((e as Error)?.message))) {
          throw new CommandError(
            `crediting ${
              rubText(amount)
            } would take ${id}'s balance past the largest the store keeps; nothing was done`,
          );
        }
        throw e;
      });
      if (!applied && (entry.accountId !== id || entry.amount !== amount)) {
        // Nothing changed, but the operator meant something else: say so, loudly.
        throw new CommandError(
          `idempotency key ${idem} was already used to credit ${rubText(entry.amount)} to ` +
            `${entry.accountId}; nothing was done`,
        );
      }
      const a = withMemory(await account(store, id), cfg);
      return {
        result: { applied, balance: formatRub(a.balance) },
        text: applied
          ? `credited ${rubText(amount)} to ${id}; balance ${rubText(a.balance)}`
          : `already applied (idempotency key ${idem}); balance ${rubText(a.balance)}`,
      };
    },
  },

  "balance": {
    options: ["account"],
    positionals: [],
    async run(store, args, cfg) {
      const a = withMemory(await account(store, required(args, "account")), cfg);
      const { balance, held } = a;
      // Leases (PostgreSQL: instances admit requests against them) are part of held.
      const leased = await store.leased(a.id);
      return {
        result: {
          balance: formatRub(balance),
          held: formatRub(held),
          leased: formatRub(leased),
        },
        text: `balance ${rubText(balance)}, held ${rubText(held)} (leased by instances ` +
          `${rubText(leased)}), available ${rubText(balance - held)}`,
      };
    },
  },

  "ledger": {
    options: ["account", "limit"],
    positionals: [],
    async run(store, args) {
      const a = await account(store, required(args, "account"));
      const limitArg = args.opts.get("limit");
      const limit = limitArg === undefined
        ? LEDGER_LIMIT_DEFAULT
        : int("limit", limitArg, 1, LEDGER_LIMIT_MAX);
      // One more than shown: whether earlier entries were left out.
      const got = await store.listLedger(a.id, { last: limit + 1 });
      const hasMore = got.length > limit;
      const entries = hasMore ? got.slice(1) : got;
      const rows = entries.map((e) => [
        e.created.toISOString(),
        e.kind,
        formatRub(e.amount),
        e.generationId ?? e.idempotencyKey ?? "",
      ]);
      return {
        result: { entries: entries.map(ledgerJson), has_more: hasMore },
        text: !rows.length
          ? `account ${a.id} has no ledger entries`
          : hasMore
          ? `(earlier entries not shown; --limit up to ${LEDGER_LIMIT_MAX})\n${table(rows)}`
          : table(rows),
      };
    },
  },

  "generations": {
    options: ["account", "limit", "before"],
    positionals: [],
    async run(store, args) {
      const a = await account(store, required(args, "account"));
      const limitArg = args.opts.get("limit");
      const limit = limitArg === undefined
        ? GENERATIONS_LIMIT_DEFAULT
        : int("limit", limitArg, 1, GENERATIONS_LIMIT_MAX);
      const gens = await store.listGenerations(a.id, { limit, before: args.opts.get("before") });
      const rows = gens.map((g) => [
        g.created.toISOString(),
        g.id,
        g.model,
        g.status,
        formatRub(g.cost),
        `${g.tokens.input ?? "?"}→${g.tokens.output ?? "?"}`,
      ]);
      return {
        result: { generations: gens.map(generationJson) },
        text: rows.length ? table(rows) : `account ${a.id} has no generations`,
      };
    },
  },
};

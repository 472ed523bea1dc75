/**
 * The numbered migrations, in order. Each `NNN_name.sql` is the reviewed text; its twin
 * `NNN_name.ts` embeds the same text so no file is read at run time (Deno Deploy), and
 * `migrations_test.ts` keeps the two equal. To add one: write `002_x.sql`, generate
 * `002_x.ts` the same way, append it here. Never edit an applied migration.
 */
import init from "./001_init.ts";
import leanIndexes from "./002_lean_indexes.ts";
import leases from "./003_leases.ts";
import checkpoints from "./004_checkpoints.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  { version: 1, name: "001_init", sql: init },
  { version: 2, name: "002_lean_indexes", sql: leanIndexes },
  { version: 3, name: "003_leases", sql: leases },
  { version: 4, name: "004_checkpoints", sql: checkpoints },
];

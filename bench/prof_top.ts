/**
 * Where the time goes in a V8 CPU profile (`deno run --cpu-prof`, or `deno task bench
 * --profile`, which writes bench/results/profile/*.cpuprofile):
 *   deno run -A bench/prof_top.ts <file.cpuprofile> [rows]
 */
import { profileTop } from "./run.ts";

if (import.meta.main) {
  const [file, rows] = Deno.args;
  if (!file) {
    console.error("usage: deno run -A bench/prof_top.ts <file.cpuprofile> [rows]");
    Deno.exit(2);
  }
  console.log(profileTop(JSON.parse(await Deno.readTextFile(file)), Number(rows ?? 25)));
}

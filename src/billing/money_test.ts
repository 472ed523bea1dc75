import assert from "node:assert/strict";
import {
  add,
  ceilNano,
  formatDec,
  formatKopecksUp,
  formatRub,
  mul,
  mulInt,
  nanoToRub,
  parseDec,
  roundDec,
  rubToNano,
} from "./money.ts";

Deno.test("parseDec reads plain, fractional and exponent forms exactly", () => {
  assert.deepEqual(parseDec("0.0000025"), { n: 25n, scale: 7 });
  assert.deepEqual(parseDec("12"), { n: 12n, scale: 0 });
  assert.deepEqual(parseDec("1e-6"), { n: 1n, scale: 6 });
  assert.deepEqual(parseDec("-1"), { n: -1n, scale: 0 });
  assert.deepEqual(parseDec("2.5e2"), { n: 250n, scale: 0 });
  assert.throws(() => parseDec("abc"));
  assert.throws(() => parseDec(""));
  assert.throws(() => parseDec("NaN"));
});

Deno.test("a cost is exact: 1000 tokens at $0.0000025 and 92.5 RUB/USD with 5 % markup", () => {
  const usd = mulInt(parseDec("0.0000025"), 1000); // $0.0025
  const rub = mul(usd, parseDec("92.5")); // 0.23125 RUB
  const withMarkup = mul(rub, add(parseDec("1"), parseDec("0.05"))); // 0.2428125
  assert.equal(ceilNano(withMarkup), 242_812_500n);
});

Deno.test("ceilNano rounds any fraction of a nano-rouble up, never down", () => {
  assert.equal(ceilNano(parseDec("0.0000000001")), 1n);
  assert.equal(ceilNano(parseDec("0.000000001")), 1n);
  assert.equal(ceilNano(parseDec("0.0000000010001")), 2n);
  assert.equal(ceilNano(parseDec("0")), 0n);
});

Deno.test("formatRub and nanoToRub render at most nine decimals", () => {
  assert.equal(formatRub(242_812_500n), "0.2428125");
  assert.equal(formatRub(100_000_000_000n), "100");
  assert.equal(formatRub(-1n), "-0.000000001");
  assert.equal(nanoToRub(1n), 0.000000001);
});

Deno.test("rubToNano takes operator amounts and refuses sub-nano precision", () => {
  assert.equal(rubToNano("100"), 100_000_000_000n);
  assert.equal(rubToNano("0.5"), 500_000_000n);
  assert.throws(() => rubToNano("0.0000000001"));
});

Deno.test("formatDec and roundDec give plain decimal strings", () => {
  assert.equal(formatDec(parseDec("1e-7")), "0.0000001");
  assert.equal(formatDec(roundDec(parseDec("0.123456789123"), 9)), "0.123456789");
  assert.equal(formatDec(parseDec("-0.5")), "-0.5");
});

Deno.test("formatKopecksUp: kopecks rounded up, so the figure shown is enough", () => {
  assert.equal(formatKopecksUp(0n), "0,00");
  assert.equal(formatKopecksUp(1n), "0,01");
  assert.equal(formatKopecksUp(10_000_000n), "0,01");
  assert.equal(formatKopecksUp(10_000_001n), "0,02");
  assert.equal(formatKopecksUp(124_350_000_000n), "124,35");
});

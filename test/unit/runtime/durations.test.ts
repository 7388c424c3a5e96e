// runtime/durations.ts: the one duration grammar of every flag and config key.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import {
  durationSetting,
  formatDuration,
  MAX_DURATION_MS,
  optionalDuration,
  parseDuration,
} from "../../../runtime/durations";

const ROOT = path.resolve(__dirname, "../../../..");
const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

describe("runtime/durations parseDuration", () => {
  const accepted: [string, number][] = [
    ["500ms", 500],
    ["30s", 30_000],
    ["10m", 600_000],
    ["1h", 3_600_000],
    ["1.5s", 1500],
    ["0s", 0],
    ["0.5ms", 1],
    ["0.4ms", 0],
    ["1h30m", 5_400_000],
    ["1m30s", 90_000],
    ["2h45m30s500ms", 9_930_500],
    ["30s1h", 3_630_000],
    ["1.5h", 5_400_000],
    ["007s", 7000],
    [" 30s ", 30_000],
    ["\t5m\n", 300_000],
  ];
  for (const [text, ms] of accepted) it(`${JSON.stringify(text)} → ${ms}`, () => assert.equal(parseDuration(text), ms));

  const refused = [
    "",
    " ",
    "10",
    "600",
    "0",
    "5 minutes",
    "30 s",
    "1h 30m",
    "-5s",
    "+5s",
    ".5s",
    "5.s",
    "1d",
    "1us",
    "1µs",
    "1ns",
    "5M",
    "5S",
    "1h30",
    "s",
    "ms",
    "1e3ms",
    "0x10s",
    "1,5s",
    `1${"0".repeat(400)}h`,
  ];
  for (const text of refused)
    it(`${JSON.stringify(text)} is not a duration`, () => assert.equal(parseDuration(text), undefined));

  it("the sum of several terms is the sum of each term's value", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 10_000 }),
            fc.constantFrom(...(Object.keys(UNITS) as (keyof typeof UNITS)[])),
          ),
          { minLength: 1, maxLength: 5 },
        ),
        (terms) => {
          const text = terms.map(([amount, unit]) => `${amount}${unit}`).join("");
          assert.equal(
            parseDuration(text),
            terms.reduce((sum, [amount, unit]) => sum + amount * UNITS[unit], 0),
          );
        },
      ),
    );
  });

  it("formatDuration's spelling reads back as the same number of milliseconds, and is the shortest single-unit one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_DURATION_MS }), (ms) => {
        const text = formatDuration(ms);
        assert.equal(parseDuration(text), ms);
        for (const [unit, factor] of Object.entries(UNITS)) {
          if (ms >= factor && ms % factor === 0)
            assert.ok(text.length <= `${ms / factor}${unit}`.length, `${text} vs ${ms / factor}${unit}`);
        }
      }),
    );
  });

  it("formatDuration: exact spellings", () => {
    assert.deepEqual(
      [0, 1, 999, 1000, 1500, 30_000, 90_000, 300_000, 600_000, 3_600_000, 5_400_000, MAX_DURATION_MS].map(
        formatDuration,
      ),
      ["0ms", "1ms", "999ms", "1s", "1500ms", "30s", "90s", "5m", "10m", "1h", "90m", "596h"],
    );
  });

  it("anything with a sign, a blank inside, or without a unit at its end is refused", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.constantFrom("ms", "s", "m", "h"),
        fc.constantFrom("-", "+", ""),
        fc.constantFrom(" ", ""),
        (amount, unit, sign, blank) => {
          fc.pre(sign !== "" || blank !== "");
          assert.equal(parseDuration(`${sign}${amount}${blank}${unit}`), undefined);
          assert.equal(parseDuration(`${amount}${unit}${amount}`), undefined);
        },
      ),
    );
  });
});

describe("runtime/durations durationSetting", () => {
  const cases: [string, unknown, number | undefined, string][] = [
    ["a flag", "10m", undefined, "ok 600000"],
    ["a flag without unit", "10", undefined, '--x: expected a duration such as 30s, 10m or 1h30m, got "10"'],
    ["a YAML number", 600, undefined, "--x: expected a duration such as 30s, 10m or 1h30m, got 600"],
    ["a YAML list", ["10m"], undefined, '--x: expected a duration such as 30s, 10m or 1h30m, got ["10m"]'],
    ["below the minimum", "10ms", 1000, '--x: expected a duration of at least 1s, got "10ms"'],
    ["at the minimum", "1s", 1000, "ok 1000"],
    ["at the maximum", "596h", undefined, `ok ${MAX_DURATION_MS}`],
    [
      "above the maximum (a timer would fire at once)",
      "597h",
      undefined,
      '--x: expected a duration of at most 596h, got "597h"',
    ],
  ];
  for (const [name, value, minMs, expected] of cases) {
    it(name, () => {
      const read = durationSetting(value, "--x", minMs === undefined ? {} : { minMs });
      assert.equal(read.ok ? `ok ${read.ms}` : read.problem, expected);
    });
  }
  it("596h is below Node's timer limit (2^31−1 ms)", () =>
    assert.ok(MAX_DURATION_MS <= 2 ** 31 - 1 && MAX_DURATION_MS + 3_600_000 > 2 ** 31 - 1));
});

describe("runtime/durations optionalDuration", () => {
  const cases: [unknown, number, string[]][] = [
    [undefined, 7, []],
    [null, 7, []],
    ["", 7, []],
    ["2s", 2000, []],
    ["2", 7, ['k: expected a duration such as 30s, 10m or 1h30m, got "2"']],
    ["0.5s", 7, ['k: expected a duration of at least 1s, got "0.5s"']],
  ];
  for (const [value, ms, problems] of cases) {
    it(`${JSON.stringify(value)} → ${ms}${problems.length > 0 ? ", a problem" : ""}`, () => {
      const found = ["an earlier problem"];
      assert.equal(optionalDuration(value, "k", 7, found, { minMs: 1000 }), ms);
      assert.deepEqual(found, ["an earlier problem", ...problems]);
    });
  }
});

describe("every duration the docs and examples write parses to the value they mean", () => {
  /** Each duration written after a duration flag or key, or in a "Durations" line. */
  function durationsIn(file: string): string[] {
    const text = fs.readFileSync(path.join(ROOT, file), "utf8");
    const found: string[] = [];
    const afterName =
      /(?:--(?:drift-interval|full-refresh-interval|operation-timeout|shutdown-timeout|nodeLifecyclePeriod|nodeAddressRefreshPeriod)|\b(?:driftInterval|fullRefreshInterval|operationTimeout|nodeLifecyclePeriod|nodeAddressRefreshPeriod))[`\s|:(]+([0-9][0-9a-z.]*)/g;
    for (const match of text.matchAll(afterName)) found.push(match[1]);
    for (const line of text.split("\n").filter((l) => /Durations/.test(l))) {
      const list = /Durations(?: accept)?:? ([^.]*(?:\.\d[^.]*)*)/.exec(line)?.[1] ?? "";
      for (const item of list.matchAll(/`?([0-9][0-9a-z.]*)`?/g)) found.push(item[1]);
    }
    return found;
  }
  const MEANT: Record<string, number> = {
    "500ms": 500,
    "1.5s": 1500,
    "30s": 30_000,
    "1h30m": 5_400_000,
    "1m": 60_000,
    "5m": 300_000,
    "10m": 600_000,
    "20m": 1_200_000,
    "1h": 3_600_000,
    "24h": 86_400_000,
  };
  const files: [string, string[]][] = [
    ["README.md", ["10m"]],
    ["docs/guides/configuration.md", ["10m", "24h", "20m", "500ms", "1.5s", "10m", "1h30m"]],
    ["docs/explanation/daemon.md", ["10m", "24h", "30s"]],
    ["docs/operations/never.md", ["20m"]],
    ["docs/operations/runbook.md", ["20m"]],
    ["docs/development/benchmarks.md", ["30s"]],
    ["controllers/node/README.md", ["1m", "5m", "30s", "500ms", "30s", "5m", "1h"]],
    ["examples/dccm.yaml", ["10m", "24h", "5m", "30s"]],
    ["bin/daemonCommand.ts", ["500ms", "30s", "10m", "1h"]],
  ];
  for (const [file, expected] of files) {
    it(file, () => {
      const found = durationsIn(file);
      assert.deepEqual(found, expected);
      assert.deepEqual(
        found.map((text) => parseDuration(text)),
        found.map((text) => MEANT[text]),
      );
    });
  }
});

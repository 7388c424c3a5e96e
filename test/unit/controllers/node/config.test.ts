// Node controller config keys: defaults, durations, and problems that name the key.

import * as assert from "node:assert/strict";

import { parseNodeConfig } from "../../../../controllers/node/config";

describe("controllers/node/config parseNodeConfig", () => {
  it("defaults", () => {
    const problems: string[] = [];
    assert.deepEqual(parseNodeConfig({}, problems), {
      computeEndpoint: undefined,
      addressRefreshMs: 300_000,
      lifecycleCheckMs: 30_000,
      workers: 10,
      zones: undefined,
    });
    assert.deepEqual(problems, []);
  });

  it("parses every key", () => {
    const problems: string[] = [];
    const c = parseNodeConfig(
      {
        computeEndpoint: "http://127.0.0.1:8080/compute/v1",
        nodeAddressRefreshPeriod: "2m",
        nodeLifecyclePeriod: "45s",
        nodeWorkers: "4",
        nodeZones: "us-central1-a, us-central1-f",
      },
      problems,
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(c, {
      computeEndpoint: "http://127.0.0.1:8080/compute/v1/",
      addressRefreshMs: 120_000,
      lifecycleCheckMs: 45_000,
      workers: 4,
      zones: ["us-central1-a", "us-central1-f"],
    });
  });

  const bad: [Record<string, unknown>, string][] = [
    [
      { computeEndpoint: "compute.googleapis.com" },
      'computeEndpoint: expected an http(s) URL such as https://compute.googleapis.com/compute/v1/, got "compute.googleapis.com"',
    ],
    [
      { nodeAddressRefreshPeriod: "soon" },
      'nodeAddressRefreshPeriod: expected a duration such as 30s, 10m or 1h30m, got "soon"',
    ],
    [{ nodeLifecyclePeriod: "10ms" }, 'nodeLifecyclePeriod: expected a duration of at least 1s, got "10ms"'],
    [{ nodeLifecyclePeriod: "597h" }, 'nodeLifecyclePeriod: expected a duration of at most 596h, got "597h"'],
    // One grammar with the daemon's flags (runtime/durations.ts): a unit is required, no blank inside.
    [{ nodeLifecyclePeriod: 30_000 }, "nodeLifecyclePeriod: expected a duration such as 30s, 10m or 1h30m, got 30000"],
    [
      { nodeLifecyclePeriod: "30000" },
      'nodeLifecyclePeriod: expected a duration such as 30s, 10m or 1h30m, got "30000"',
    ],
    [
      { nodeAddressRefreshPeriod: "5 m" },
      'nodeAddressRefreshPeriod: expected a duration such as 30s, 10m or 1h30m, got "5 m"',
    ],
    [{ nodeWorkers: "0" }, 'nodeWorkers: expected an integer from 1 to 100, got "0"'],
    [{ nodeWorkers: 2.5 }, "nodeWorkers: expected an integer from 1 to 100, got 2.5"],
    [
      { nodeZones: "us-central1" },
      'nodeZones: expected zone names like us-central1-a (list or comma-separated), got "us-central1"',
    ],
  ];
  for (const [raw, problem] of bad) {
    it(`rejects ${JSON.stringify(raw)}: ${problem}`, () => {
      const problems: string[] = [];
      const config = parseNodeConfig(raw, problems);
      assert.deepEqual(problems, [problem]);
      // The bad key falls back to its default; the others are untouched.
      assert.deepEqual(config, parseNodeConfig({}, []));
    });
  }

  it("durations: several terms, fractions and blanks around", () => {
    const problems: string[] = [];
    const c = parseNodeConfig({ nodeAddressRefreshPeriod: "1h30m", nodeLifecyclePeriod: " 1.5s " }, problems);
    assert.deepEqual(problems, []);
    assert.deepEqual([c.addressRefreshMs, c.lifecycleCheckMs], [5_400_000, 1500]);
  });

  it("every problem is reported, in key order", () => {
    const problems: string[] = [];
    parseNodeConfig({ nodeZones: "x", nodeWorkers: "many", nodeLifecyclePeriod: "1" }, problems);
    assert.deepEqual(problems, [
      'nodeLifecyclePeriod: expected a duration such as 30s, 10m or 1h30m, got "1"',
      'nodeWorkers: expected an integer from 1 to 100, got "many"',
      'nodeZones: expected zone names like us-central1-a (list or comma-separated), got "x"',
    ]);
  });
});

// Node controller config keys: defaults, durations, and problems that name the key.

import * as assert from "node:assert/strict";

import { parseDuration, parseNodeConfig } from "../../nodes/config";

describe("nodes/config parseNodeConfig", () => {
    it("defaults", () => {
        const problems: string[] = [];
        assert.deepEqual(parseNodeConfig({}, problems), {
            computeEndpoint: undefined, addressRefreshMs: 300_000, lifecycleCheckMs: 30_000, workers: 10, zones: undefined,
        });
        assert.deepEqual(problems, []);
    });

    it("parses every key", () => {
        const problems: string[] = [];
        const c = parseNodeConfig({
            computeEndpoint: "http://127.0.0.1:8080/compute/v1",
            nodeAddressRefreshPeriod: "2m",
            nodeLifecyclePeriod: "45s",
            nodeWorkers: "4",
            nodeZones: "us-central1-a, us-central1-f",
        }, problems);
        assert.deepEqual(problems, []);
        assert.deepEqual(c, {
            computeEndpoint: "http://127.0.0.1:8080/compute/v1/",
            addressRefreshMs: 120_000,
            lifecycleCheckMs: 45_000,
            workers: 4,
            zones: ["us-central1-a", "us-central1-f"],
        });
    });

    const bad: [string, Record<string, unknown>][] = [
        ["computeEndpoint", { computeEndpoint: "compute.googleapis.com" }],
        ["nodeAddressRefreshPeriod", { nodeAddressRefreshPeriod: "soon" }],
        ["nodeLifecyclePeriod", { nodeLifecyclePeriod: "10ms" }],
        ["nodeWorkers", { nodeWorkers: "0" }],
        ["nodeWorkers", { nodeWorkers: 2.5 }],
        ["nodeZones", { nodeZones: "us-central1" }],
    ];
    for (const [key, raw] of bad) {
        it(`rejects ${JSON.stringify(raw)} naming ${key}`, () => {
            const problems: string[] = [];
            parseNodeConfig(raw, problems);
            assert.equal(problems.length, 1);
            assert.ok(problems[0]?.startsWith(`${key}: `), problems[0]);
        });
    }

    it("parseDuration", () => {
        assert.equal(parseDuration("500ms"), 500);
        assert.equal(parseDuration("1.5s"), 1500);
        assert.equal(parseDuration("1h"), 3_600_000);
        assert.equal(parseDuration(250), 250);
        assert.equal(parseDuration("5 minutes"), undefined);
        assert.equal(parseDuration(-1), undefined);
    });
});

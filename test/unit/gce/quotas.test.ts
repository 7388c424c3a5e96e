import * as assert from "node:assert/strict";

import { parseQuotas, readProjectQuotas, type QuotaApi } from "../../../gce/quotas";

describe("gce/quotas", () => {
  it("parseQuotas: each { metric, limit, usage } of a Region or Project body; malformed entries skipped", () => {
    assert.deepEqual(
      parseQuotas({
        kind: "compute#region",
        quotas: [
          { metric: "STATIC_ADDRESSES", limit: 8.0, usage: 3.0 },
          { metric: "IN_USE_ADDRESSES", limit: 8, usage: 1, owner: "projects/p" },
          { metric: "CPUS", limit: "24" },
          "junk",
          { limit: 1, usage: 0 },
        ],
      }),
      [
        { metric: "STATIC_ADDRESSES", limit: 8, usage: 3 },
        { metric: "IN_USE_ADDRESSES", limit: 8, usage: 1 },
      ],
    );
    assert.deepEqual(parseQuotas({ kind: "compute#project" }), []);
    assert.deepEqual(parseQuotas(undefined), []);
  });

  it("readProjectQuotas: the region's and the project's at once", async () => {
    const calls: string[] = [];
    const api: QuotaApi = {
      getRegionQuotas: async (project, region) => {
        calls.push(`regions.get ${project} ${region}`);
        return [{ metric: "STATIC_ADDRESSES", limit: 8, usage: 1 }];
      },
      getProjectQuotas: async (project) => {
        calls.push(`projects.get ${project}`);
        return [{ metric: "FIREWALLS", limit: 100, usage: 4 }];
      },
    };
    assert.deepEqual(await readProjectQuotas(api, "p", "us-central1"), {
      region: "us-central1",
      regional: [{ metric: "STATIC_ADDRESSES", limit: 8, usage: 1 }],
      global: [{ metric: "FIREWALLS", limit: 100, usage: 4 }],
    });
    assert.deepEqual(calls.sort(), ["projects.get p", "regions.get p us-central1"]);
  });
});

// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: GCE's timing and limits (limits.ts).
import * as assert from "node:assert/strict";

import { startGceEmulator } from "../index";
import type { Json, JsonObject } from "../json";
import { GceState } from "../state";
import { GceLimits, restRateGroup } from "../limits";
import { ENDPOINT, PROJECT, REGION, T, NETWORKS, regional, world, gceError } from "./rulesFixtures";

describe("GCE emulator rules: timing and limits (limits.ts, one row per rule)", () => {
  const ZONE_A = `${REGION}-a`;
  /** A state whose creates pass the quotas of `limits`. */
  function limited(quotas: ConstructorParameters<typeof GceLimits>[0]): GceState {
    const state = world();
    const limits = new GceLimits(quotas);
    state.setCreateGuard((key, properties, existing) => limits.checkQuota(key, properties, existing));
    return state;
  }
  /** A clock the test moves. */
  function clock(): { now: () => number; set: (ms: number) => void } {
    let t = 1_000_000;
    return { now: () => t, set: (ms) => (t = ms) };
  }

  it("STATIC_ADDRESSES: static external addresses per region up to the limit; one more is 403 quotaExceeded; internal ones and other regions do not count", () => {
    const state = limited({ quotas: { STATIC_ADDRESSES: 1 } });
    state.create(T.address, { ...regional, name: "a1" });
    state.create(T.address, { ...regional, name: "i1", addressType: "INTERNAL", subnetwork: "k8s-subnet" });
    state.create(T.address, { project: PROJECT, region: "europe-west1", name: "eu" });
    const e = gceError(() => state.create(T.address, { ...regional, name: "a2" }));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1."],
    );
    assert.equal(state.find({ kind: "addresses", project: PROJECT, scope: REGION, name: "a2" }), undefined);
  });

  it("INTERNAL_ADDRESSES counts static internal addresses per region", () => {
    const state = limited({ quotas: { INTERNAL_ADDRESSES: 1 } });
    state.create(T.address, { ...regional, name: "i1", addressType: "INTERNAL", subnetwork: "k8s-subnet" });
    const e = gceError(() =>
      state.create(T.address, { ...regional, name: "i2", addressType: "INTERNAL", subnetwork: "k8s-subnet" }),
    );
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'INTERNAL_ADDRESSES' exceeded. Limit: 1.0 in region us-central1."],
    );
  });

  it("ROUTES is a project quota: 'globally'", () => {
    const state = limited({ quotas: { ROUTES: 1 } });
    const route = (name: string, dest: string): JsonObject => ({
      project: PROJECT,
      name,
      network: "k8s-net",
      destRange: dest,
      nextHopInstance: "node-1",
      nextHopInstanceZone: ZONE_A,
    });
    state.create(T.route, route("r1", "10.4.0.0/24"));
    const e = gceError(() => state.create(T.route, route("r2", "10.4.1.0/24")));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'ROUTES' exceeded. Limit: 1.0 globally."],
    );
  });

  it("a quota is counted against creates out of band too (another tool's resources use the project's quota)", () => {
    const state = limited({ quotas: { STATIC_ADDRESSES: 1 } });
    state.insertOutOfBand("addresses", { name: "theirs" });
    const e = gceError(() => state.create(T.address, { ...regional, name: "ours" }));
    assert.equal(e.message, "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1.");
  });

  it("rate quotas: a group's requests per interval, then 403 rateLimitExceeded with the per-minute message; each group counted apart; refilled at the next interval", () => {
    const c = clock();
    c.set(120_000);
    const limits = new GceLimits({ ratePerInterval: { Queries: 2, "Read requests": 1 }, now: c.now });
    limits.admit(PROJECT, "Queries");
    limits.admit(PROJECT, "Queries");
    limits.admit(PROJECT, "Read requests");
    limits.admit(PROJECT, "List requests");
    const e = gceError(() => limits.admit(PROJECT, "Queries"));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [
        403,
        "rateLimitExceeded",
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.",
      ],
    );
    assert.equal(
      gceError(() => limits.admit(PROJECT, "Read requests")).message.includes("'Read requests per minute'"),
      true,
    );
    limits.admit("other-project", "Queries");
    c.set(179_999);
    assert.equal(gceError(() => limits.admit(PROJECT, "Queries")).reason, "rateLimitExceeded");
    c.set(180_000);
    limits.admit(PROJECT, "Queries");
    assert.deepEqual(limits.counts(), { rateLimited: { Queries: 2, "Read requests": 1 }, quotaExceeded: {} });
  });

  it("rate quota groups: a get is a read, a list and listInstances are lists, operations get and wait are operation reads, the rest mutations", () => {
    const base = "/compute/v1/projects/{project}";
    const rows: ReadonlyArray<readonly [string, string, string | undefined]> = [
      ["GET", `${base}/regions/{region}/forwardingRules/{name}`, "Read requests"],
      ["GET", `${base}/zones/{zone}`, "Read requests"],
      ["GET", `${base}/regions/{region}/forwardingRules`, "List requests"],
      ["GET", `${base}/aggregated/instances`, "List requests"],
      ["POST", `${base}/zones/{zone}/instanceGroups/{name}/listInstances`, "List requests"],
      ["GET", `${base}/regions/{region}/operations/{operation}`, "Operation read requests"],
      ["POST", `${base}/global/operations/{operation}/wait`, "Operation read requests"],
      ["DELETE", `${base}/regions/{region}/addresses/{name}`, "Queries"],
      ["POST", `${base}/regions/{region}/addresses`, "Queries"],
      ["GET", "/emulator/resources", undefined],
    ];
    assert.deepEqual(
      rows.map(([m, p]) => restRateGroup(m, p)),
      rows.map(([, , g]) => g),
    );
  });

  it("operations: PENDING (progress 0, no endTime) for the first tenth of the kind's latency, then RUNNING, then DONE with endTime", () => {
    const c = clock();
    const limits = new GceLimits({ operationLatencyMs: { forwardingRules: 1000 }, now: c.now });
    const start = c.now();
    const op: JsonObject = {
      name: "operation-1",
      selfLink: "http://x/op/1",
      status: "DONE",
      progress: 100,
      endTime: "t",
    };
    const view = (at: number): Json[] => {
      c.set(start + at);
      const v = limits.operationView(op);
      return [v.status ?? null, v.progress ?? null, v.endTime ?? null];
    };
    assert.deepEqual(limits.operationStarted(op, "forwardingRules").status, "PENDING");
    assert.deepEqual(view(99), ["PENDING", 0, null]);
    assert.deepEqual(view(500), ["RUNNING", 50, null]);
    assert.deepEqual(view(1000), ["DONE", 100, new Date(start + 1000).toISOString()]);
    assert.deepEqual(
      limits.operationStarted({ selfLink: "http://x/op/2", status: "DONE" }, "addresses").status,
      "DONE",
    );
  });

  it("operations.wait returns DONE even when a timer fires before the wall clock reaches the end (Node's setTimeout may wake a millisecond early by Date.now)", async () => {
    const c = clock();
    const slept: number[] = [];
    const limits = new GceLimits({
      operationLatencyMs: { forwardingRules: 40 },
      now: c.now,
      sleep: async (ms) => {
        slept.push(ms);
        c.set(c.now() + Math.max(ms - 1, 1));
      },
    });
    const op = limits.operationStarted({ selfLink: "http://x/op/early", status: "DONE" }, "forwardingRules");
    assert.equal(op.status, "PENDING");
    await limits.waitFor("http://x/op/early");
    assert.deepEqual(
      [limits.operationView({ selfLink: "http://x/op/early", status: "DONE" }).status, slept],
      ["DONE", [40, 1]],
    );
  });

  it("REST: a DELETE answers a PENDING operation; operations.wait returns it DONE; the provider face answers after the operation's latency", async () => {
    const slept: number[] = [];
    const gce = await startGceEmulator({
      networks: NETWORKS,
      limits: {
        operationLatencyMs: { forwardingRules: 40, addresses: 5000 },
        sleep: (ms) => {
          slept.push(ms);
          return new Promise((resolve) => setTimeout(resolve, Math.min(ms, 50)));
        },
      },
    });
    try {
      const P = `projects/${PROJECT}/regions/${REGION}`;
      gce.state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" });
      const del = (await (
        await fetch(`${gce.computeEndpoint}${P}/forwardingRules/fr`, { method: "DELETE" })
      ).json()) as JsonObject;
      assert.deepEqual([del.status, del.progress, "endTime" in del], ["PENDING", 0, false]);
      const waited = (await (await fetch(`${String(del.selfLink)}/wait`, { method: "POST" })).json()) as JsonObject;
      assert.equal(waited.status, "DONE");
      slept.length = 0;
      const created = await fetch(`${gce.endpoint}/emulator/provider/create`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: T.address, inputs: { ...regional, name: "slow" } }),
      });
      assert.equal(created.status, 200);
      assert.deepEqual(slept, [5000]);
    } finally {
      await gce.stop();
    }
  });

  it("regions.get and projects.get answer quotas[] { metric, limit, usage }: the region's addresses, the project's load-balancing quotas; an unenforced quota's limit is 1,000,000; projects.get is a Read request", async () => {
    const gce = await startGceEmulator({
      networks: NETWORKS,
      limits: {
        quotas: { STATIC_ADDRESSES: 8, FORWARDING_RULES: 3, FIREWALLS: 100 },
        ratePerInterval: { "Read requests": 2 },
      },
    });
    try {
      gce.state.create(T.address, { ...regional, name: "a1" });
      gce.state.create(T.address, { project: PROJECT, region: "europe-west1", name: "eu" });
      gce.state.create(T.address, { ...regional, name: "i1", addressType: "INTERNAL", subnetwork: "k8s-subnet" });
      gce.state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" });
      gce.state.create(T.forwardingRule, { project: PROJECT, region: "europe-west1", name: "fr-eu", portRange: "80" });
      const region = (await (
        await fetch(`${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}`)
      ).json()) as JsonObject;
      assert.deepEqual(region.quotas, [
        { metric: "STATIC_ADDRESSES", limit: 8, usage: 1 },
        { metric: "INTERNAL_ADDRESSES", limit: 1_000_000, usage: 1 },
      ]);
      const project = await fetch(`${gce.computeEndpoint}projects/${PROJECT}`);
      assert.deepEqual(
        [project.status, await project.json()],
        [
          200,
          {
            kind: "compute#project",
            name: PROJECT,
            quotas: [
              { metric: "FORWARDING_RULES", limit: 3, usage: 2 },
              { metric: "TARGET_POOLS", limit: 1_000_000, usage: 0 },
              { metric: "BACKEND_SERVICES", limit: 1_000_000, usage: 0 },
              { metric: "HEALTH_CHECKS", limit: 1_000_000, usage: 0 },
              { metric: "FIREWALLS", limit: 100, usage: 0 },
              { metric: "ROUTES", limit: 1_000_000, usage: 0 },
            ],
            selfLink: `${gce.endpoint}/compute/v1/projects/${PROJECT}`,
          },
        ],
      );
      assert.equal((await fetch(`${gce.computeEndpoint}projects/${PROJECT}`)).status, 403);
    } finally {
      await gce.stop();
    }
  });

  it("FORWARDING_RULES is a project quota: rules of every region count; one more is 'globally'", () => {
    const state = limited({ quotas: { FORWARDING_RULES: 1 } });
    state.create(T.forwardingRule, { project: PROJECT, region: "europe-west1", name: "fr-eu", portRange: "80" });
    const e = gceError(() => state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" }));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'FORWARDING_RULES' exceeded. Limit: 1.0 globally."],
    );
  });

  it("a rate-limited REST call is 403 rateLimitExceeded with Google's error body", async () => {
    const gce = await startGceEmulator({ networks: NETWORKS, limits: { ratePerInterval: { "List requests": 1 } } });
    try {
      const list = `${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}/addresses`;
      assert.equal((await fetch(list)).status, 200);
      const res = await fetch(list);
      assert.deepEqual(
        [res.status, await res.json()],
        [
          403,
          {
            error: {
              code: 403,
              message:
                "Quota exceeded for quota metric 'List requests' and limit 'List requests per minute' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.",
              errors: [{ reason: "rateLimitExceeded" }],
            },
          },
        ],
      );
      assert.deepEqual(gce.limits.counts(), { rateLimited: { "List requests": 1 }, quotaExceeded: {} });
    } finally {
      await gce.stop();
    }
  });

  it("a deleted VM leaves its unmanaged instance groups (size follows)", () => {
    const state = world();
    const NET = `projects/${PROJECT}/global/networks/k8s-net`;
    state.putInstance(PROJECT, ZONE_A, "node-4", { networkInterfaces: [{ network: "k8s-net" }] });
    state.create(T.instanceGroup, {
      project: PROJECT,
      zone: ZONE_A,
      name: "ig",
      network: NET,
      instances: [`${ZONE_A}/node-1`, `${ZONE_A}/node-4`],
    });
    state.deleteOutOfBand({ kind: "instances", project: PROJECT, scope: ZONE_A, name: "node-1" });
    const group = state.get({ kind: "instanceGroups", project: PROJECT, scope: ZONE_A, name: "ig" });
    assert.deepEqual(
      [group.properties.instances, group.properties.size],
      [[`${ENDPOINT}/compute/v1/projects/${PROJECT}/zones/${ZONE_A}/instances/node-4`], 1],
    );
  });
});

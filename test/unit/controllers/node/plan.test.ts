// Table tests of the node controller's sync plans (controllers/node/plan.ts): which Nodes are looked up, when
// bookkeeping makes a sync skip, what a lookup turns into, and how a delete's outcome ends the run.

import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import type { Instance } from "../../../../gce";
import { UNINITIALIZED_TAINT, type InstanceLookup } from "../../../../controllers/node/decide";
import {
  afterDelete,
  JUST_INITIALIZED_MS,
  lookupError,
  lookupTarget,
  type LookupTarget,
  type NodeSyncState,
  planAddresses,
  planAddressWrite,
  planInitialize,
  planInitializeWrite,
  planLifecycle,
  type SyncClock,
  worst,
} from "../../../../controllers/node/plan";
import type { ReconcileResult } from "../../../../runtime/queue";
import type { WatchedNode } from "../../../../watcher/trim";

const PID = "gce://p/us-central1-a/n1";
const TAINT = { key: UNINITIALIZED_TAINT, value: "true", effect: "NoSchedule" };
const CLOCK: SyncClock = { now: 1_000_000, addressRefreshMs: 60_000, lifecycleCheckMs: 30_000 };

function node(over: Partial<WatchedNode> = {}): WatchedNode {
  return {
    name: "n1",
    uid: "u1",
    resourceVersion: "7",
    deleting: false,
    labels: {},
    taints: [],
    addresses: [],
    ...over,
  };
}

function instance(over: Partial<Instance> = {}): Instance {
  return {
    name: "n1",
    project: "p",
    zone: "us-central1-a",
    machineType: "e2-medium",
    networkInterfaces: [{ networkIP: "10.0.0.5", accessConfigs: [], ipv6AccessConfigs: [] }],
    ...over,
  };
}

const byPid: LookupTarget = { by: "providerID", pid: { project: "p", zone: "us-central1-a", name: "n1" } };
const byName: LookupTarget = { by: "name", name: "n1" };

describe("controllers/node/plan", () => {
  describe("lookupTarget", () => {
    const cases: { name: string; node: WatchedNode; want: LookupTarget }[] = [
      { name: "gce:// providerID → by providerID", node: node({ providerID: PID }), want: byPid },
      { name: "no providerID → by name", node: node(), want: byName },
      { name: "foreign providerID → by name", node: node({ providerID: "aws:///us-east-1a/i-1" }), want: byName },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(lookupTarget(c.node), c.want));
    }
  });

  describe("planLifecycle", () => {
    const cases: { name: string; node: WatchedNode; state: NodeSyncState; want: ReturnType<typeof planLifecycle> }[] = [
      {
        name: "NotReady with providerID, never checked → check",
        node: node({ providerID: PID, ready: "False" }),
        state: {},
        want: { kind: "check", pid: { project: "p", zone: "us-central1-a", name: "n1" } },
      },
      {
        name: "Unknown → check",
        node: node({ providerID: PID, ready: "Unknown" }),
        state: {},
        want: { kind: "check", pid: { project: "p", zone: "us-central1-a", name: "n1" } },
      },
      { name: "Ready → skip", node: node({ providerID: PID, ready: "True" }), state: {}, want: { kind: "skip" } },
      {
        name: "no Ready condition (Unknown, as the stock CCM reads it) → check",
        node: node({ providerID: PID }),
        state: {},
        want: { kind: "check", pid: { project: "p", zone: "us-central1-a", name: "n1" } },
      },
      { name: "no providerID → skip", node: node({ ready: "False" }), state: {}, want: { kind: "skip" } },
      {
        name: "checked less than half a period ago → skip",
        node: node({ providerID: PID, ready: "False" }),
        state: { lastLifecycleCheck: CLOCK.now - 14_999 },
        want: { kind: "skip" },
      },
      {
        name: "checked half a period ago → check",
        node: node({ providerID: PID, ready: "False" }),
        state: { lastLifecycleCheck: CLOCK.now - 15_000 },
        want: { kind: "check", pid: { project: "p", zone: "us-central1-a", name: "n1" } },
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(planLifecycle(c.node, c.state, CLOCK), c.want));
    }
  });

  describe("afterDelete", () => {
    it("deleted → ok, announced", () =>
      assert.deepEqual(afterDelete("n1", "deleted"), { result: { kind: "ok" }, announce: true, recheck: false }));
    it("already gone → ok, silent", () =>
      assert.deepEqual(afterDelete("n1", "gone"), { result: { kind: "ok" }, announce: false, recheck: false }));
    it("precondition failed → retry with a fresh check, silent", () => {
      const got = afterDelete("n1", "conflict");
      assert.equal(got.announce, false);
      assert.equal(got.recheck, true);
      assert.equal(got.result.kind, "retry");
      assert.equal(
        got.result.kind === "retry" ? (got.result.error as Error).message : "",
        "delete node n1: precondition failed, node changed",
      );
    });
  });

  describe("planInitialize", () => {
    const cases: { name: string; node: WatchedNode; state: NodeSyncState; want: ReturnType<typeof planInitialize> }[] =
      [
        {
          name: "no taint → initialized",
          node: node({ taints: [{ key: "other", effect: "NoSchedule" }] }),
          state: {},
          want: { kind: "initialized" },
        },
        {
          name: "tainted, by name",
          node: node({ taints: [TAINT] }),
          state: {},
          want: { kind: "initialize", target: byName },
        },
        {
          name: "tainted, by providerID",
          node: node({ taints: [TAINT], providerID: PID }),
          state: {},
          want: { kind: "initialize", target: byPid },
        },
        {
          name: "tainted copy of a Node we just initialized → await our own update",
          node: node({ taints: [TAINT] }),
          state: { justInitialized: { uid: "u1", at: CLOCK.now - JUST_INITIALIZED_MS + 1 } },
          want: { kind: "awaitOwnUpdate" },
        },
        {
          name: "just initialized, but long ago → initialize again",
          node: node({ taints: [TAINT] }),
          state: { justInitialized: { uid: "u1", at: CLOCK.now - JUST_INITIALIZED_MS } },
          want: { kind: "initialize", target: byName },
        },
        {
          name: "just initialized another Node of that name (other uid) → initialize",
          node: node({ taints: [TAINT] }),
          state: { justInitialized: { uid: "u0", at: CLOCK.now } },
          want: { kind: "initialize", target: byName },
        },
      ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(planInitialize(c.node, c.state, CLOCK), c.want));
    }
  });

  describe("planInitializeWrite", () => {
    it("found: the initialization patch, addresses first when they differ", () => {
      const got = planInitializeWrite(
        node({ taints: [TAINT], addresses: [{ type: "Hostname", address: "n1" }] }),
        byName,
        { kind: "found", instance: instance() },
      );
      assert.deepEqual(got, {
        kind: "write",
        writeAddresses: true,
        zone: "us-central1-a",
        patch: {
          providerID: PID,
          labels: {
            "topology.kubernetes.io/zone": "us-central1-a",
            "failure-domain.beta.kubernetes.io/zone": "us-central1-a",
            "topology.kubernetes.io/region": "us-central1",
            "failure-domain.beta.kubernetes.io/region": "us-central1",
            "node.kubernetes.io/instance-type": "e2-medium",
            "beta.kubernetes.io/instance-type": "e2-medium",
          },
          addresses: [
            { type: "InternalIP", address: "10.0.0.5" },
            { type: "Hostname", address: "n1" },
          ],
          removeTaint: UNINITIALIZED_TAINT,
        },
      });
    });

    it("found with the addresses already right: no status write", () => {
      const addresses = [
        { type: "InternalIP", address: "10.0.0.5" },
        { type: "Hostname", address: "n1" },
      ];
      const got = planInitializeWrite(node({ taints: [TAINT], addresses }), byName, {
        kind: "found",
        instance: instance(),
      });
      assert.equal(got.kind === "write" && got.writeAddresses, false);
    });

    const failures: {
      name: string;
      target: LookupTarget;
      lookup: Exclude<InstanceLookup, { kind: "found" }>;
      message: string;
    }[] = [
      {
        name: "instances.get 404",
        target: byPid,
        lookup: { kind: "notFound", scope: "instance", project: "p", zone: "us-central1-a", name: "n1" },
        message: "initialize node n1: instance p/us-central1-a/n1 does not exist",
      },
      {
        name: "no such name in the region",
        target: byName,
        lookup: { kind: "notFound", scope: "region", name: "n1", zones: ["us-central1-a", "us-central1-b"] },
        message: "initialize node n1: no instance named n1 in zones us-central1-a, us-central1-b",
      },
      {
        name: "name in two zones",
        target: byName,
        lookup: { kind: "ambiguous", name: "n1", zones: ["us-central1-a", "us-central1-b"] },
        message:
          "initialize node n1: an instance named n1 exists in several zones (us-central1-a, us-central1-b); set the kubelet's --provider-id",
      },
      {
        name: "lookup error",
        target: byPid,
        lookup: { kind: "error", error: new Error("HTTP 503") },
        message: "initialize node n1: looking up instance p/us-central1-a/n1 failed",
      },
    ];
    for (const c of failures) {
      it(`${c.name} → fail: ${c.message}`, () => {
        const got = planInitializeWrite(node({ taints: [TAINT] }), c.target, c.lookup);
        assert.equal(got.kind, "fail");
        assert.equal(got.kind === "fail" ? got.error.message : "", c.message);
        assert.deepEqual(lookupError("n1", c.target, c.lookup).message, c.message);
      });
    }

    it("a lookup error is the cause", () => {
      const cause = new Error("HTTP 503");
      const got = planInitializeWrite(node({ taints: [TAINT] }), byPid, { kind: "error", error: cause });
      assert.equal(got.kind === "fail" ? got.error.cause : undefined, cause);
    });
  });

  describe("planAddresses", () => {
    const cases: { name: string; state: NodeSyncState; want: ReturnType<typeof planAddresses> }[] = [
      { name: "never synced → lookup", state: {}, want: { kind: "lookup", target: byName } },
      {
        name: "synced less than half a period ago → skip",
        state: { lastAddressSync: CLOCK.now - 29_999 },
        want: { kind: "skip" },
      },
      {
        name: "synced half a period ago → lookup",
        state: { lastAddressSync: CLOCK.now - 30_000 },
        want: { kind: "lookup", target: byName },
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(planAddresses(node(), c.state, CLOCK), c.want));
    }
  });

  describe("planAddressWrite", () => {
    const current = [
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "Hostname", address: "n1" },
    ];
    const cases: {
      name: string;
      node: WatchedNode;
      lookup: InstanceLookup;
      want: ReturnType<typeof planAddressWrite>;
    }[] = [
      {
        name: "unchanged → none",
        node: node({ addresses: current }),
        lookup: { kind: "found", instance: instance() },
        want: { kind: "none" },
      },
      {
        name: "new IP → write, Hostname kept",
        node: node({ addresses: current }),
        lookup: {
          kind: "found",
          instance: instance({
            networkInterfaces: [
              { networkIP: "10.0.0.6", accessConfigs: [{ natIP: "34.1.1.1" }], ipv6AccessConfigs: [] },
            ],
          }),
        },
        want: {
          kind: "write",
          addresses: [
            { type: "InternalIP", address: "10.0.0.6" },
            { type: "ExternalIP", address: "34.1.1.1" },
            { type: "Hostname", address: "n1" },
          ],
        },
      },
      {
        name: "instance without addresses and no Hostname → none",
        node: node(),
        lookup: { kind: "found", instance: instance({ networkInterfaces: [] }) },
        want: { kind: "none" },
      },
      {
        name: "gone → none (the lifecycle's business)",
        node: node({ addresses: current }),
        lookup: { kind: "notFound", scope: "instance", project: "p", zone: "us-central1-a", name: "n1" },
        want: { kind: "none" },
      },
      {
        name: "ambiguous → none",
        node: node({ addresses: current }),
        lookup: { kind: "ambiguous", name: "n1", zones: ["a", "b"] },
        want: { kind: "none" },
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(planAddressWrite(c.node, c.lookup), c.want));
    }

    it("lookup error → retry naming the Node, with the cause", () => {
      const cause = new Error("HTTP 503");
      const got = planAddressWrite(node(), { kind: "error", error: cause });
      assert.equal(got.kind, "retry");
      assert.equal(got.kind === "retry" ? got.error.message : "", "refresh addresses of node n1");
      assert.equal(got.kind === "retry" ? got.error.cause : undefined, cause);
    });
  });

  describe("worst", () => {
    const retry: ReconcileResult = { kind: "retry", error: new Error("x") };
    const later: ReconcileResult = { kind: "retryAfter", ms: 5, reason: "r" };
    const giveUp: ReconcileResult = { kind: "giveUp", reason: "g" };
    const ok: ReconcileResult = { kind: "ok" };
    const cases: [ReconcileResult[], ReconcileResult][] = [
      [[], ok],
      [[ok, ok], ok],
      [[ok, giveUp], giveUp],
      [[later, giveUp], later],
      [[ok, retry, later], retry],
    ];
    for (const [input, want] of cases) {
      it(`${input.map((r) => r.kind).join(", ") || "nothing"} → ${want.kind}`, () =>
        assert.deepEqual(worst(...input), want));
    }

    it("property: the result is one of the inputs (or ok) and outranks each of them", () => {
      const rank = { retry: 3, retryAfter: 2, giveUp: 1, ok: 0 } as const;
      fc.assert(
        fc.property(fc.array(fc.constantFrom(retry, later, giveUp, ok)), (results) => {
          const got = worst(...results);
          assert.ok(results.includes(got) || (got.kind === "ok" && results.every((r) => r.kind === "ok")));
          for (const r of results) {
            assert.ok(rank[got.kind] >= rank[r.kind]);
          }
        }),
      );
    });
  });
});

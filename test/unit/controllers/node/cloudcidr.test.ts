// Table tests of the node controller's pod CIDRs from alias IP ranges (podCIDRSource cloud) and of
// the shutdown taint: controllers/node/decide.ts and plan.ts, every instance status, every stack.

import * as assert from "node:assert/strict";

import type { V1Node } from "@kubernetes/client-node";
import * as fc from "fast-check";

import type { Instance, NetworkInterface } from "../../../../gce";
import {
  applyNodeMergePatch,
  decidePodCIDRs,
  decideShutdownTaint,
  type InstanceLookup,
  podCIDRCondition,
  podCIDRsFromInstance,
  SHUTDOWN_TAINT,
  shutdownTaintPatch,
  UNINITIALIZED_TAINT,
} from "../../../../controllers/node/decide";
import {
  type NodeSyncState,
  planPodCIDRs,
  podCIDRLookupResult,
  type SyncClock,
} from "../../../../controllers/node/plan";
import type { PodCIDRStack } from "../../../../model";
import type { WatchedNode } from "../../../../watcher/trim";

const CLOCK: SyncClock = { now: 1_000_000, addressRefreshMs: 60_000, lifecycleCheckMs: 30_000 };
const NOW = new Date("2026-01-01T00:00:00.000Z");
const SHUTDOWN = { key: SHUTDOWN_TAINT, effect: "NoSchedule" };
const OTHER = { key: "dedicated", value: "gpu", effect: "NoSchedule" };

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

function nic(over: Partial<NetworkInterface> = {}): NetworkInterface {
  return { name: "nic0", networkIP: "10.0.0.5", accessConfigs: [], ipv6AccessConfigs: [], ...over };
}

function instance(nics: NetworkInterface[], status?: string): Instance {
  return {
    name: "n1",
    project: "p",
    zone: "us-central1-a",
    machineType: "e2-medium",
    networkInterfaces: nics,
    ...(status === undefined ? {} : { status }),
  };
}

const ALIAS = {
  aliasIpRanges: [{ ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" }, { ipCidrRange: "10.4.9.0/24" }],
};

describe("controllers/node/decide and plan: pod CIDRs and the shutdown taint", () => {
  describe("podCIDRsFromInstance: the stock CCM's CloudAllocator reading", () => {
    const cases: {
      name: string;
      nics: NetworkInterface[];
      stack: PodCIDRStack;
      want: ReturnType<typeof podCIDRsFromInstance>;
    }[] = [
      {
        name: "IPv4: nic0's first alias range",
        nics: [nic(ALIAS)],
        stack: "IPv4",
        want: { kind: "ok", cidrs: ["10.4.1.0/24"] },
      },
      {
        name: "nic0 wins over an earlier other interface",
        nics: [nic({ name: "nic1", aliasIpRanges: [{ ipCidrRange: "10.9.0.0/24" }] }), nic(ALIAS)],
        stack: "IPv4",
        want: { kind: "ok", cidrs: ["10.4.1.0/24"] },
      },
      {
        name: "no nic0: the first interface",
        nics: [nic({ name: "eth-a", aliasIpRanges: [{ ipCidrRange: "10.9.0.0/24" }] })],
        stack: "IPv4",
        want: { kind: "ok", cidrs: ["10.9.0.0/24"] },
      },
      {
        name: "IPv4 without an alias range",
        nics: [nic()],
        stack: "IPv4",
        want: {
          kind: "unavailable",
          message: "instance p/us-central1-a/n1 has no alias IP range on nic0 (podCIDRStack IPv4)",
        },
      },
      {
        name: "no interface at all",
        nics: [],
        stack: "IPv4",
        want: { kind: "unavailable", message: "instance p/us-central1-a/n1 has no network interface" },
      },
      {
        name: "IPv4_IPv6: IPv4 first, the /112 of the internal IPv6 address",
        nics: [nic({ ...ALIAS, ipv6Address: "fd20:0:0:1:0:1::" })],
        stack: "IPv4_IPv6",
        want: { kind: "ok", cidrs: ["10.4.1.0/24", "fd20:0:0:1:0:1::/112"] },
      },
      {
        name: "IPv6_IPv4: IPv6 first, from the external IPv6 when there is no internal one",
        nics: [nic({ ...ALIAS, ipv6AccessConfigs: [{}, { externalIpv6: "2600:1900:4000:7f3:0:1::" }] })],
        stack: "IPv6_IPv4",
        want: { kind: "ok", cidrs: ["2600:1900:4000:7f3:0:1::/112", "10.4.1.0/24"] },
      },
      {
        name: "IPv6 only",
        nics: [nic({ ipv6Address: "fd20:0:0:1:0:2::" })],
        stack: "IPv6",
        want: { kind: "ok", cidrs: ["fd20:0:0:1:0:2::/112"] },
      },
      {
        name: "dual-stack without IPv6",
        nics: [nic(ALIAS)],
        stack: "IPv4_IPv6",
        want: {
          kind: "unavailable",
          message: "instance p/us-central1-a/n1 has no IPv6 address on nic0 (podCIDRStack IPv4_IPv6)",
        },
      },
      {
        name: "dual-stack without alias range",
        nics: [nic({ ipv6Address: "fd20::5" })],
        stack: "IPv6_IPv4",
        want: {
          kind: "unavailable",
          message: "instance p/us-central1-a/n1 has no alias IP range on nic0 (podCIDRStack IPv6_IPv4)",
        },
      },
      {
        name: "dual-stack with neither",
        nics: [nic()],
        stack: "IPv4_IPv6",
        want: {
          kind: "unavailable",
          message:
            "instance p/us-central1-a/n1 has no alias IP range and no IPv6 address on nic0 (podCIDRStack IPv4_IPv6)",
        },
      },
      {
        name: "IPv6 without IPv6",
        nics: [nic(ALIAS)],
        stack: "IPv6",
        want: {
          kind: "unavailable",
          message: "instance p/us-central1-a/n1 has no IPv6 address on nic0 (podCIDRStack IPv6)",
        },
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(podCIDRsFromInstance(instance(c.nics), c.stack), c.want));
    }
  });

  describe("decidePodCIDRs: written once, never changed", () => {
    const ok = { kind: "ok", cidrs: ["10.4.1.0/24"] } as const;
    const cases: {
      name: string;
      node: WatchedNode;
      from: Parameters<typeof decidePodCIDRs>[1];
      want: ReturnType<typeof decidePodCIDRs>;
    }[] = [
      { name: "no CIDR yet → assign", node: node(), from: ok, want: { kind: "assign", cidrs: ["10.4.1.0/24"] } },
      { name: "the VM's → in sync", node: node({ podCIDRs: ["10.4.1.0/24"] }), from: ok, want: { kind: "inSync" } },
      {
        name: "another CIDR → mismatch, never a patch",
        node: node({ podCIDRs: ["10.64.3.0/24"] }),
        from: ok,
        want: {
          kind: "mismatch",
          message:
            "Node n1 has pod CIDRs 10.64.3.0/24 but its VM's range is 10.4.1.0/24; spec.podCIDRs cannot change: recreate the Node (delete it, the kubelet registers it again) to take the VM's range",
        },
      },
      {
        name: "dual-stack order differs → mismatch",
        node: node({ podCIDRs: ["fd20::/112", "10.4.1.0/24"] }),
        from: { kind: "ok", cidrs: ["10.4.1.0/24", "fd20::/112"] },
        want: {
          kind: "mismatch",
          message:
            "Node n1 has pod CIDRs fd20::/112,10.4.1.0/24 but its VM's range is 10.4.1.0/24,fd20::/112; spec.podCIDRs cannot change: recreate the Node (delete it, the kubelet registers it again) to take the VM's range",
        },
      },
      {
        name: "no CIDR and the VM has none → unavailable",
        node: node(),
        from: {
          kind: "unavailable",
          message: "instance p/us-central1-a/n1 has no alias IP range on nic0 (podCIDRStack IPv4)",
        },
        want: {
          kind: "unavailable",
          message:
            "Node n1 has no pod CIDR and none can be read: instance p/us-central1-a/n1 has no alias IP range on nic0 (podCIDRStack IPv4)",
        },
      },
      {
        name: "a CIDR, and the VM lost its range → left alone",
        node: node({ podCIDRs: ["10.4.1.0/24"] }),
        from: { kind: "unavailable", message: "x" },
        want: { kind: "inSync" },
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(decidePodCIDRs(c.node, c.from), c.want));
    }
  });

  describe("podCIDRCondition: NetworkUnavailable, written only on change", () => {
    const implicit = { status: "False", reason: "RouteCreated", message: "NodeController create implicit route" };
    it("assigned, no condition yet → False with the stock CCM's reason and message", () =>
      assert.deepEqual(podCIDRCondition(node(), true, NOW), {
        type: "NetworkUnavailable",
        ...implicit,
        lastHeartbeatTime: NOW,
        lastTransitionTime: NOW,
      }));
    it("assigned and already False RouteCreated → nothing", () =>
      assert.equal(podCIDRCondition(node({ networkUnavailable: { ...implicit } }), true, NOW), undefined));
    it("unassigned → True NoPodCIDR naming why", () =>
      assert.deepEqual(podCIDRCondition(node(), false, NOW, "no range"), {
        type: "NetworkUnavailable",
        status: "True",
        reason: "NoPodCIDR",
        message: "No pod CIDR from the VM's alias IP ranges: no range",
        lastHeartbeatTime: NOW,
        lastTransitionTime: NOW,
      }));
    it("same status, new message → transition time kept", () =>
      assert.deepEqual(
        podCIDRCondition(
          node({
            networkUnavailable: {
              status: "True",
              reason: "NoRouteCreated",
              lastTransitionTime: "2025-12-01T00:00:00.000Z",
            },
          }),
          false,
          NOW,
          "x",
        ),
        {
          type: "NetworkUnavailable",
          status: "True",
          reason: "NoPodCIDR",
          message: "No pod CIDR from the VM's alias IP ranges: x",
          lastHeartbeatTime: NOW,
          lastTransitionTime: new Date("2025-12-01T00:00:00.000Z"),
        },
      ));
  });

  describe("planPodCIDRs: how often Compute is asked", () => {
    const settled = node({
      providerID: "gce://p/us-central1-a/n1",
      podCIDRs: ["10.4.1.0/24"],
      networkUnavailable: { status: "False", reason: "RouteCreated" },
    });
    const byPid = {
      kind: "lookup",
      target: { by: "providerID", pid: { project: "p", zone: "us-central1-a", name: "n1" } },
    } as const;
    const cases: { name: string; node: WatchedNode; state: NodeSyncState; want: ReturnType<typeof planPodCIDRs> }[] = [
      {
        name: "never checked → lookup (by name without providerID)",
        node: node(),
        state: {},
        want: { kind: "lookup", target: { by: "name", name: "n1" } },
      },
      {
        name: "unsettled, checked 14 s ago → skip",
        node: node(),
        state: { lastPodCIDRCheck: CLOCK.now - 14_000 },
        want: { kind: "skip" },
      },
      {
        name: "unsettled, checked 15 s ago (half the lifecycle period) → lookup",
        node: node(),
        state: { lastPodCIDRCheck: CLOCK.now - 15_000 },
        want: { kind: "lookup", target: { by: "name", name: "n1" } },
      },
      {
        name: "settled, checked 29 s ago → skip",
        node: settled,
        state: { lastPodCIDRCheck: CLOCK.now - 29_000 },
        want: { kind: "skip" },
      },
      {
        name: "settled, checked 30 s ago (half the refresh period) → lookup",
        node: settled,
        state: { lastPodCIDRCheck: CLOCK.now - 30_000 },
        want: byPid,
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(planPodCIDRs(c.node, c.state, CLOCK), c.want));
    }
    it("a failed lookup is retried, naming the Node; a missing instance is not this sync's business", () => {
      const err = new Error("HTTP 503");
      const retry = podCIDRLookupResult(node(), { kind: "error", error: err });
      assert.equal(retry.kind, "retry");
      assert.equal(retry.kind === "retry" ? retry.error.message : "", "read pod CIDRs of node n1");
      assert.equal(retry.kind === "retry" ? retry.error.cause : undefined, err);
      assert.deepEqual(
        podCIDRLookupResult(node(), { kind: "notFound", scope: "region", name: "n1", zones: ["us-central1-a"] }),
        { kind: "none" },
      );
    });
  });

  describe("decideShutdownTaint: every instance status", () => {
    // Compute v1 Instance.status values (instances resource reference).
    const STATUSES: [string, boolean][] = [
      ["PROVISIONING", false],
      ["STAGING", false],
      ["RUNNING", false],
      ["STOPPING", true],
      ["TERMINATED", true],
      ["SUSPENDING", true],
      ["SUSPENDED", true],
      ["REPAIRING", false],
      ["DEPROVISIONING", false],
    ];
    const found = (status: string): InstanceLookup => ({ kind: "found", instance: instance([nic()], status) });
    for (const [status, shutdown] of STATUSES) {
      for (const ready of ["False", "Unknown"] as const) {
        it(`NotReady (${ready}), ${status}, untainted → ${shutdown ? "add" : "none"}`, () =>
          assert.deepEqual(
            decideShutdownTaint(node({ ready }), found(status)),
            shutdown ? { kind: "add", status } : { kind: "none" },
          ));
        it(`NotReady (${ready}), ${status}, tainted → ${shutdown ? "none" : "remove"}`, () =>
          assert.deepEqual(
            decideShutdownTaint(node({ ready, taints: [SHUTDOWN] }), found(status)),
            shutdown ? { kind: "none" } : { kind: "remove", reason: `instance is ${status}` },
          ));
      }
      it(`Ready, ${status}, tainted → remove (the kubelet runs)`, () =>
        assert.deepEqual(decideShutdownTaint(node({ ready: "True", taints: [SHUTDOWN] }), found(status)), {
          kind: "remove",
          reason: "node is Ready",
        }));
    }
    const unknown: [string, InstanceLookup | undefined][] = [
      ["no lookup", undefined],
      ["lookup failed", { kind: "error", error: new Error("timeout") }],
      ["instance gone", { kind: "notFound", scope: "instance", project: "p", zone: "us-central1-a", name: "n1" }],
      ["no status in the body", { kind: "found", instance: instance([nic()]) }],
    ];
    for (const [what, lookup] of unknown) {
      it(`${what}: a tainted NotReady Node keeps it, an untainted one stays so`, () => {
        assert.deepEqual(decideShutdownTaint(node({ ready: "Unknown", taints: [SHUTDOWN] }), lookup), { kind: "none" });
        assert.deepEqual(decideShutdownTaint(node({ ready: "Unknown" }), lookup), { kind: "none" });
      });
    }
    it("a Ready untainted Node → none without a lookup", () =>
      assert.deepEqual(decideShutdownTaint(node({ ready: "True" }), undefined), { kind: "none" }));
  });

  describe("shutdownTaintPatch", () => {
    it("adds NoSchedule after the other taints", () =>
      assert.deepEqual(shutdownTaintPatch(node({ taints: [OTHER] }), true), {
        taints: [OTHER, { key: SHUTDOWN_TAINT, effect: "NoSchedule" }],
      }));
    it("removes it and keeps the others", () =>
      assert.deepEqual(shutdownTaintPatch(node({ taints: [SHUTDOWN, OTHER] }), false), { taints: [OTHER] }));
    it("the last taint gone → field removed", () =>
      assert.deepEqual(shutdownTaintPatch(node({ taints: [SHUTDOWN] }), false), { taints: null }));
    it("already as wanted → no patch", () => {
      assert.equal(shutdownTaintPatch(node({ taints: [SHUTDOWN] }), true), undefined);
      assert.equal(shutdownTaintPatch(node({ taints: [OTHER] }), false), undefined);
    });
    it("property: add then remove gives back the other taints, and never touches the uninitialized taint", () => {
      const taint = fc.record({
        key: fc.constantFrom("a", "b", UNINITIALIZED_TAINT),
        effect: fc.constantFrom("NoSchedule", "NoExecute"),
      });
      fc.assert(
        fc.property(fc.uniqueArray(taint, { selector: (t) => t.key }), (taints) => {
          const added = shutdownTaintPatch(node({ taints }), true);
          assert.ok(added !== undefined && added.taints !== undefined && added.taints !== null);
          assert.deepEqual(added.taints.slice(0, -1), taints);
          const removed = shutdownTaintPatch(node({ taints: added.taints }), false);
          assert.deepEqual(removed, { taints: taints.length === 0 ? null : taints });
        }),
      );
    });
  });

  describe("applyNodeMergePatch podCIDRs", () => {
    it("sets spec.podCIDR to the first and spec.podCIDRs to all", () => {
      const n: V1Node = { metadata: { name: "n1" }, spec: { providerID: "gce://p/z/n1" } };
      assert.deepEqual(applyNodeMergePatch(n, { podCIDRs: ["10.4.1.0/24", "fd20::/112"] }).spec, {
        providerID: "gce://p/z/n1",
        podCIDR: "10.4.1.0/24",
        podCIDRs: ["10.4.1.0/24", "fd20::/112"],
      });
    });
  });
});

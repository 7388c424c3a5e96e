// Table tests of the node controller's pure decisions (controllers/node/decide.ts).

import * as assert from "node:assert/strict";

import type { V1Node, V1NodeCondition } from "@kubernetes/client-node";
import * as fc from "fast-check";

import type { Instance } from "../../../../gce";
import {
  applyNodeMergePatch,
  desiredAddresses,
  initializationMergePatch,
  initializationPatch,
  type InstanceLookup,
  instanceAddresses,
  parseProviderID,
  regionOfZone,
  routeCondition,
  type RouteStatus,
  shouldDeleteNode,
  UNINITIALIZED_TAINT,
  unmanagedReason,
} from "../../../../controllers/node/decide";
import { trimWatchedNode, type WatchedNode } from "../../../../watcher/trim";

const TAINT = { key: UNINITIALIZED_TAINT, value: "true", effect: "NoSchedule" };

function node(
  opts: {
    name?: string;
    providerID?: string;
    ready?: "True" | "False" | "Unknown";
    taints?: { key: string; value?: string; effect: string }[];
    labels?: Record<string, string>;
    addresses?: { type: string; address: string }[];
    conditions?: V1NodeCondition[];
    deleting?: boolean;
  } = {},
): V1Node {
  const conditions: V1NodeCondition[] = [...(opts.conditions ?? [])];
  if (opts.ready !== undefined) {
    conditions.push({ type: "Ready", status: opts.ready });
  }
  return {
    metadata: {
      name: opts.name ?? "n1",
      uid: "u1",
      resourceVersion: "7",
      ...(opts.labels === undefined ? {} : { labels: opts.labels }),
      ...(opts.deleting === true ? { deletionTimestamp: new Date(0) } : {}),
    },
    spec: {
      ...(opts.providerID === undefined ? {} : { providerID: opts.providerID }),
      ...(opts.taints === undefined ? {} : { taints: opts.taints }),
    },
    status: { conditions, addresses: opts.addresses ?? [] },
  };
}

/** The node controller reads Nodes as the watch cache trims them. */
function view(n: V1Node): WatchedNode {
  return trimWatchedNode(n);
}

function instance(over: Partial<Instance> = {}): Instance {
  return {
    name: "n1",
    project: "p",
    zone: "us-central1-b",
    machineType: "e2-standard-4",
    networkInterfaces: [{ networkIP: "10.0.0.5", accessConfigs: [{ natIP: "34.1.2.3" }], ipv6AccessConfigs: [] }],
    ...over,
  };
}

describe("controllers/node/decide", () => {
  describe("unmanagedReason: cloud.google.com/gke-unmanaged-node=true leaves the Node alone", () => {
    const UNMANAGED = "cloud.google.com/gke-unmanaged-node";
    const REASON = "label cloud.google.com/gke-unmanaged-node=true: not a VM dccm manages";
    const cases: [string, V1Node, string | undefined][] = [
      ["a plain Node", node(), undefined],
      ["labelled true", node({ labels: { [UNMANAGED]: "true" } }), REASON],
      [
        "labelled true, tainted uninitialized, NotReady, with a providerID",
        node({ labels: { [UNMANAGED]: "true" }, taints: [TAINT], ready: "False", providerID: "gce://p/z/n1" }),
        REASON,
      ],
      ['labelled "True" (not the exact value)', node({ labels: { [UNMANAGED]: "True" } }), undefined],
      ['labelled "false"', node({ labels: { [UNMANAGED]: "false" } }), undefined],
    ];
    for (const [what, n, expected] of cases) {
      it(`${what} → ${expected ?? "managed"}`, () => {
        assert.equal(unmanagedReason(view(n)), expected);
      });
    }
  });

  describe("parseProviderID", () => {
    const cases: [string | undefined, ReturnType<typeof parseProviderID>][] = [
      ["gce://p/us-central1-a/n1", { project: "p", zone: "us-central1-a", name: "n1" }],
      ["gce://my-proj/europe-west4-c/node-7", { project: "my-proj", zone: "europe-west4-c", name: "node-7" }],
      [undefined, undefined],
      ["", undefined],
      ["aws:///us-east-1a/i-123", undefined],
      ["gce://p/zone-only", undefined],
      ["gce://p/z/n/extra", undefined],
    ];
    for (const [input, want] of cases) {
      it(`${String(input)} → ${JSON.stringify(want)}`, () => assert.deepEqual(parseProviderID(input), want));
    }
  });

  it("regionOfZone", () => {
    assert.equal(regionOfZone("us-central1-a"), "us-central1");
    assert.equal(regionOfZone("europe-west4-c"), "europe-west4");
  });

  describe("instanceAddresses", () => {
    const cases: { name: string; inst: Instance; want: { type: string; address: string }[] }[] = [
      {
        name: "internal + external",
        inst: instance(),
        want: [
          { type: "InternalIP", address: "10.0.0.5" },
          { type: "ExternalIP", address: "34.1.2.3" },
        ],
      },
      {
        name: "internal only",
        inst: instance({ networkInterfaces: [{ networkIP: "10.0.0.5", accessConfigs: [{}], ipv6AccessConfigs: [] }] }),
        want: [{ type: "InternalIP", address: "10.0.0.5" }],
      },
      {
        name: "dual stack with internal IPv6",
        inst: instance({
          networkInterfaces: [
            { networkIP: "10.0.0.5", ipv6Address: "fd20::5", accessConfigs: [], ipv6AccessConfigs: [] },
          ],
        }),
        want: [
          { type: "InternalIP", address: "10.0.0.5" },
          { type: "InternalIP", address: "fd20::5" },
        ],
      },
      {
        name: "dual stack with external IPv6 (reported as InternalIP, like the stock provider)",
        inst: instance({
          networkInterfaces: [
            {
              networkIP: "10.0.0.5",
              accessConfigs: [{ natIP: "34.1.2.3" }],
              ipv6AccessConfigs: [{ externalIpv6: "2600:1900::5" }],
            },
          ],
        }),
        want: [
          { type: "InternalIP", address: "10.0.0.5" },
          { type: "ExternalIP", address: "34.1.2.3" },
          { type: "InternalIP", address: "2600:1900::5" },
        ],
      },
      {
        name: "two NICs: nic0 internal first, then nic1",
        inst: instance({
          networkInterfaces: [
            { networkIP: "10.0.0.5", accessConfigs: [{ natIP: "34.1.2.3" }], ipv6AccessConfigs: [] },
            { networkIP: "10.1.0.5", accessConfigs: [], ipv6AccessConfigs: [] },
          ],
        }),
        want: [
          { type: "InternalIP", address: "10.0.0.5" },
          { type: "InternalIP", address: "10.1.0.5" },
          { type: "ExternalIP", address: "34.1.2.3" },
        ],
      },
      { name: "no NICs", inst: instance({ networkInterfaces: [] }), want: [] },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(instanceAddresses(c.inst), c.want));
    }

    it("keeps the kubelet's Hostname, drops its guessed InternalIP", () => {
      const n = node({
        addresses: [
          { type: "InternalIP", address: "192.168.1.1" },
          { type: "Hostname", address: "n1.c.p.internal" },
        ],
      });
      assert.deepEqual(desiredAddresses(view(n), instance()), [
        { type: "InternalIP", address: "10.0.0.5" },
        { type: "ExternalIP", address: "34.1.2.3" },
        { type: "Hostname", address: "n1.c.p.internal" },
      ]);
    });
  });

  describe("initializationPatch + initializationMergePatch", () => {
    it("sets providerID, all six labels, addresses and removes only the uninitialized taint", () => {
      const other = { key: "dedicated", value: "gpu", effect: "NoSchedule" };
      const n = node({
        taints: [TAINT, other],
        labels: { keep: "me" },
        addresses: [{ type: "Hostname", address: "n1" }],
      });
      const patch = initializationPatch(view(n), instance());
      assert.equal(patch.providerID, "gce://p/us-central1-b/n1");
      assert.deepEqual(patch.labels, {
        "topology.kubernetes.io/zone": "us-central1-b",
        "failure-domain.beta.kubernetes.io/zone": "us-central1-b",
        "topology.kubernetes.io/region": "us-central1",
        "failure-domain.beta.kubernetes.io/region": "us-central1",
        "node.kubernetes.io/instance-type": "e2-standard-4",
        "beta.kubernetes.io/instance-type": "e2-standard-4",
      });
      assert.deepEqual(patch.addresses, [
        { type: "InternalIP", address: "10.0.0.5" },
        { type: "ExternalIP", address: "34.1.2.3" },
        { type: "Hostname", address: "n1" },
      ]);
      const mp = initializationMergePatch(view(n), patch);
      assert.deepEqual(mp, { labels: patch.labels, providerID: "gce://p/us-central1-b/n1", taints: [other] });
      const out = applyNodeMergePatch(n, mp ?? {});
      assert.equal(out.spec?.providerID, "gce://p/us-central1-b/n1");
      assert.deepEqual(out.spec?.taints, [other]);
      assert.equal(out.metadata?.labels?.["keep"], "me");
      assert.equal(out.metadata?.labels?.["topology.kubernetes.io/zone"], "us-central1-b");
      assert.deepEqual(n.spec?.taints, [TAINT, other], "input not mutated");
    });

    it("patches only labels that differ, and removes the taint list when it empties", () => {
      const n = node({
        taints: [TAINT],
        labels: {
          "topology.kubernetes.io/zone": "us-central1-b",
          "failure-domain.beta.kubernetes.io/zone": "us-central1-b",
        },
      });
      const mp = initializationMergePatch(view(n), initializationPatch(view(n), instance()));
      assert.deepEqual(Object.keys(mp?.labels ?? {}).sort(), [
        "beta.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
      ]);
      assert.equal(mp?.taints, null);
    });

    it("never rewrites an existing providerID (immutable field)", () => {
      const n = node({ providerID: "gce://p/us-central1-b/n1", taints: [TAINT] });
      assert.equal(initializationPatch(view(n), instance()).providerID, undefined);
    });

    it("region comes from the instance's zone", () => {
      const patch = initializationPatch(view(node()), instance({ zone: "europe-west4-a" }));
      assert.equal(patch.labels["topology.kubernetes.io/region"], "europe-west4");
    });

    it("no instance-type labels when the machine type is unknown", () => {
      const patch = initializationPatch(view(node()), instance({ machineType: "" }));
      assert.equal(patch.labels["node.kubernetes.io/instance-type"], undefined);
    });

    it("is idempotent: nothing to patch once applied", () => {
      const n = node({ taints: [TAINT] });
      const once = applyNodeMergePatch(
        n,
        initializationMergePatch(view(n), initializationPatch(view(n), instance())) ?? {},
      );
      assert.equal(once.spec?.taints, undefined, "empty taint list removed");
      assert.equal(initializationMergePatch(view(once), initializationPatch(view(once), instance())), undefined);
    });

    it("property: for any labels and taints, one patch reaches the fixed point and keeps foreign data", () => {
      const key = fc.constantFrom(
        "a",
        "b",
        "topology.kubernetes.io/zone",
        "node.kubernetes.io/instance-type",
        UNINITIALIZED_TAINT,
      );
      fc.assert(
        fc.property(
          fc.dictionary(key, fc.constantFrom("x", "us-central1-b")),
          fc.array(fc.record({ key, effect: fc.constantFrom("NoSchedule", "NoExecute") })),
          fc.option(fc.constantFrom("gce://p/us-central1-b/n1", "gce://q/z/n")),
          (labels, taints, providerID) => {
            const n = node({ labels, taints, ...(providerID === null ? {} : { providerID }) });
            const patch = initializationPatch(view(n), instance());
            const out = applyNodeMergePatch(n, initializationMergePatch(view(n), patch) ?? {});
            assert.equal(initializationMergePatch(view(out), patch), undefined);
            assert.ok(!(out.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT));
            assert.deepEqual(
              (out.spec?.taints ?? []).map((t) => ({ ...t })),
              taints.filter((t) => t.key !== UNINITIALIZED_TAINT).map((t) => ({ ...t })),
            );
            assert.equal(out.spec?.providerID, providerID ?? "gce://p/us-central1-b/n1");
            for (const [k, v] of Object.entries(labels)) {
              assert.equal(out.metadata?.labels?.[k], patch.labels[k] ?? v);
            }
          },
        ),
      );
    });
  });

  describe("shouldDeleteNode", () => {
    const pid = "gce://p/us-central1-a/n1";
    const gone: InstanceLookup = {
      kind: "notFound",
      scope: "instance",
      project: "p",
      zone: "us-central1-a",
      name: "n1",
    };
    const permission = Object.assign(
      new Error("compute instances.get ...: HTTP 403: Required 'compute.instances.get' permission"),
      { status: 403 },
    );
    const cases: { name: string; node: V1Node; lookup: InstanceLookup; want: boolean }[] = [
      {
        name: "NotReady + 404 in its own zone → delete",
        node: node({ providerID: pid, ready: "False" }),
        lookup: gone,
        want: true,
      },
      {
        name: "Unknown + 404 in its own zone → delete",
        node: node({ providerID: pid, ready: "Unknown" }),
        lookup: gone,
        want: true,
      },
      { name: "Ready + 404 → keep", node: node({ providerID: pid, ready: "True" }), lookup: gone, want: false },
      // The stock CCM reads a missing Ready condition as Unknown (cloud-provider nodelifecycle MonitorNodes).
      {
        name: "no Ready condition (Unknown) + 404 in its own zone → delete",
        node: node({ providerID: pid }),
        lookup: gone,
        want: true,
      },
      {
        name: "no Ready condition (Unknown) + instance found → keep",
        node: node({ providerID: pid }),
        lookup: { kind: "found", instance: instance({ zone: "us-central1-a" }) },
        want: false,
      },
      {
        name: "already deleting → keep",
        node: node({ providerID: pid, ready: "False", deleting: true }),
        lookup: gone,
        want: false,
      },
      { name: "no providerID → keep", node: node({ ready: "False" }), lookup: gone, want: false },
      {
        name: "foreign providerID → keep",
        node: node({ providerID: "aws:///x/i-1", ready: "False" }),
        lookup: gone,
        want: false,
      },
      {
        name: "404 for another zone (instance lives elsewhere) → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { ...gone, zone: "us-central1-b" },
        want: false,
      },
      {
        name: "404 for another project → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { ...gone, project: "q" },
        want: false,
      },
      {
        name: "not found by name in the region → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { kind: "notFound", scope: "region", name: "n1", zones: ["us-central1-a", "us-central1-b"] },
        want: false,
      },
      {
        name: "timeout → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { kind: "error", error: new Error("timed out") },
        want: false,
      },
      {
        name: "permission error → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { kind: "error", error: permission },
        want: false,
      },
      {
        name: "ambiguous → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { kind: "ambiguous", name: "n1", zones: ["us-central1-a", "us-central1-b"] },
        want: false,
      },
      {
        name: "found → keep",
        node: node({ providerID: pid, ready: "False" }),
        lookup: { kind: "found", instance: instance({ zone: "us-central1-a" }) },
        want: false,
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const d = shouldDeleteNode(view(c.node), c.lookup);
        assert.equal(d.delete, c.want, d.reason);
        assert.ok(d.reason.length > 0);
      });
    }

    it("property: deletes only on a 404 for exactly the providerID's instance of a non-Ready Node", () => {
      const seg = fc.constantFrom("p", "q", "us-central1-a", "us-central1-b", "n1", "n2");
      const lookupArb: fc.Arbitrary<InstanceLookup> = fc.oneof(
        fc.record({
          kind: fc.constant("notFound" as const),
          scope: fc.constant("instance" as const),
          project: seg,
          zone: seg,
          name: seg,
        }),
        fc.record({
          kind: fc.constant("notFound" as const),
          scope: fc.constant("region" as const),
          name: seg,
          zones: fc.array(seg),
        }),
        fc.record({ kind: fc.constant("ambiguous" as const), name: seg, zones: fc.array(seg) }),
        fc.constant<InstanceLookup>({ kind: "error", error: new Error("boom") }),
        seg.map((z): InstanceLookup => ({ kind: "found", instance: instance({ zone: z }) })),
      );
      fc.assert(
        fc.property(
          fc.option(fc.tuple(seg, seg, seg)),
          fc.option(fc.constantFrom<"True" | "False" | "Unknown">("True", "False", "Unknown")),
          lookupArb,
          (p, ready, lookup) => {
            const providerID = p === null ? undefined : `gce://${p[0]}/${p[1]}/${p[2]}`;
            const n = node({
              ...(providerID === undefined ? {} : { providerID }),
              ...(ready === null ? {} : { ready }),
            });
            const d = shouldDeleteNode(view(n), lookup);
            // A Node without a Ready condition counts as Unknown, as the stock CCM's does.
            const expected =
              p !== null &&
              ready !== "True" &&
              lookup.kind === "notFound" &&
              lookup.scope === "instance" &&
              lookup.project === p[0] &&
              lookup.zone === p[1] &&
              lookup.name === p[2];
            assert.equal(d.delete, expected);
          },
        ),
      );
    });
  });

  describe("routeCondition", () => {
    const now = new Date("2025-01-01T00:00:00Z");
    const earlier = new Date("2024-12-31T00:00:00Z");
    const created: V1NodeCondition = {
      type: "NetworkUnavailable",
      status: "False",
      reason: "RouteCreated",
      message: "RouteController created a route",
      lastTransitionTime: earlier,
      lastHeartbeatTime: earlier,
    };
    const cases: {
      name: string;
      node: V1Node;
      status: RouteStatus;
      want: { status: string; reason: string; transition: Date; warning: boolean } | undefined;
    }[] = [
      { name: "pending → no change", node: node(), status: "pending", want: undefined },
      {
        name: "created, no condition → False/RouteCreated",
        node: node(),
        status: "created",
        want: { status: "False", reason: "RouteCreated", transition: now, warning: false },
      },
      {
        name: "created, already RouteCreated → no write",
        node: node({ conditions: [created] }),
        status: "created",
        want: undefined,
      },
      {
        name: "failed, no condition → True/NoRouteCreated + warning",
        node: node(),
        status: { failed: "quota exceeded" },
        want: { status: "True", reason: "NoRouteCreated", transition: now, warning: true },
      },
      {
        name: "failed after created → transition",
        node: node({ conditions: [created] }),
        status: { failed: "quota exceeded" },
        want: { status: "True", reason: "NoRouteCreated", transition: now, warning: true },
      },
      {
        name: "kubelet's NetworkUnavailable=True (other reason) → RouteCreated",
        node: node({
          conditions: [
            {
              type: "NetworkUnavailable",
              status: "True",
              reason: "NoRouteCreated",
              message: "Node created without a route",
              lastTransitionTime: earlier,
            },
          ],
        }),
        status: "created",
        want: { status: "False", reason: "RouteCreated", transition: now, warning: false },
      },
      {
        name: "same status, new failure message → rewrite, keep transition time",
        node: node({
          conditions: [
            {
              type: "NetworkUnavailable",
              status: "True",
              reason: "NoRouteCreated",
              message: "Could not create a route: old",
              lastTransitionTime: earlier,
            },
          ],
        }),
        status: { failed: "new" },
        want: { status: "True", reason: "NoRouteCreated", transition: earlier, warning: true },
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const got = routeCondition(view(c.node), c.status, now);
        if (c.want === undefined) {
          assert.equal(got, undefined);
          return;
        }
        assert.ok(got !== undefined);
        assert.equal(got.condition.type, "NetworkUnavailable");
        assert.equal(got.condition.status, c.want.status);
        assert.equal(got.condition.reason, c.want.reason);
        assert.deepEqual(got.condition.lastTransitionTime, c.want.transition);
        assert.deepEqual(got.condition.lastHeartbeatTime, now);
        assert.equal(got.warning !== undefined, c.want.warning);
      });
    }

    it("accepts ISO strings from watch events as lastTransitionTime", () => {
      const n = node({
        conditions: [
          {
            type: "NetworkUnavailable",
            status: "True",
            reason: "NoRouteCreated",
            message: "x",
            lastTransitionTime: "2024-12-31T00:00:00Z" as unknown as Date,
          },
        ],
      });
      const got = routeCondition(view(n), { failed: "y" }, now);
      assert.deepEqual(got?.condition.lastTransitionTime, earlier);
    });
  });
});

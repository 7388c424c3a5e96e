/**
 * The daemon controllers' pure decisions (controllers/cluster/controller.ts planClusterSync,
 * controllers/service/controller.ts planServiceSync) and the checked parsing of stack outputs: one row
 * per branch the executors take.
 */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import {
  appliedClusterOf,
  clusterOutputs,
  clusterReadyFor,
  planClusterSync,
  type ClusterSyncAction,
  type ClusterSyncInput,
} from "../../../controllers/cluster/controller";

import {
  planServiceSync,
  recordedReferences,
  type ServiceSyncAction,
  type ServiceSyncInput,
} from "../../../controllers/service/controller";
import {
  ReferenceUnion,
  StackRecords,
  withReferences,
  type ClusterReferences,
  type StackRecord,
} from "../../../controllers/stackRuns";
import { NOTHING_OBSERVED, type ObservedCloud, type ServiceDesired, LB_FINALIZER } from "../../../model";
import type { ServiceMeta } from "../../../watcher/informers";
import { DesiredCache } from "../../../model/desiredCache";
import { CONFIG, denyFirewall, externalServiceDesired, gceNode, lbService } from "../../support/builders";
import { ingressOf } from "../../../components/outputs";

describe("daemon/clusterController: planClusterSync", () => {
  const base: ClusterSyncInput = { hash: "h2", refresh: false, published: true, instancesObserved: true };
  const cases: Array<[string, StackRecord, Partial<ClusterSyncInput>, ClusterSyncAction]> = [
    ["no cluster stack wanted (no Nodes yet)", { known: false }, { hash: undefined }, { kind: "none" }],
    ["applied and published: nothing", { known: true, recorded: {}, applied: "h2" }, {}, { kind: "none" }],
    [
      "applied and published, instances not asked yet: still nothing (no Compute call)",
      { known: true, recorded: {}, applied: "h2" },
      { instancesObserved: false },
      { kind: "none" },
    ],
    [
      "a new desired state: ask GCE about instances first",
      { known: true, recorded: {}, applied: "h1" },
      { instancesObserved: false },
      { kind: "observeInstances" },
    ],
    [
      "after a restart, not read yet: read it",
      { known: true, applied: undefined },
      { published: false },
      { kind: "inspect" },
    ],
    [
      "after a restart, the stack already declares it: publish what it recorded",
      { known: true, recorded: {}, applied: "h2" },
      { published: false },
      { kind: "publishRecorded" },
    ],
    ["a change: apply", { known: true, recorded: {}, applied: "h1" }, {}, { kind: "apply", hash: "h2", drift: false }],
    [
      "a drift pass of the applied state",
      { known: true, recorded: {}, applied: "h2" },
      { refresh: true },
      { kind: "apply", hash: "h2", drift: true },
    ],
    [
      "a drift pass merged with a change is not counted as drift",
      { known: true, recorded: {}, applied: "h1" },
      { refresh: true },
      { kind: "apply", hash: "h2", drift: false },
    ],
  ];
  for (const [title, record, input, expected] of cases)
    it(title, () => assert.deepEqual(planClusterSync(record, { ...base, ...input }), expected));
});

describe("daemon/clusterController: clusterOutputs (checked)", () => {
  const cases: Array<[string, Record<string, unknown>, ReturnType<typeof clusterOutputs>]> = [
    [
      "the recorded shape",
      {
        instanceGroups: { "us-central1-a": "ig-a", "us-central1-a/k8s-ig2--c1": "ig-a-2" },
        instanceGroupMembers: { "us-central1-a/k8s-ig--c1": ["n1"], "us-central1-a/k8s-ig2--c1": ["n2"] },
        routes: { n1: "r1" },
        legacyNodeHealthCheck: "hc",
      },
      {
        instanceGroups: { "us-central1-a": "ig-a", "us-central1-a/k8s-ig2--c1": "ig-a-2" },
        instanceGroupMembers: { "us-central1-a/k8s-ig--c1": ["n1"], "us-central1-a/k8s-ig2--c1": ["n2"] },
        routes: { n1: "r1" },
        legacyNodeHealthCheck: "hc",
      },
    ],
    [
      "nothing recorded (a stack applied before groups were numbered has no members)",
      {},
      { instanceGroups: {}, instanceGroupMembers: {}, routes: {} },
    ],
    [
      "the node health-check firewall above the deny rules (enableL4DenyFirewall)",
      { instanceGroups: {}, nodeHealthCheckFirewallPriority: 999 },
      { instanceGroups: {}, instanceGroupMembers: {}, routes: {}, nodeHealthCheckFirewallPriority: 999 },
    ],
    [
      "values of another type are left out",
      {
        instanceGroups: { a: "ig-a", b: 3, c: null },
        instanceGroupMembers: { "a/g": ["n1", 2], b: "n3" },
        routes: ["r1"],
        legacyNodeHealthCheck: 7,
        nodeHealthCheckFirewallPriority: "999",
      },
      { instanceGroups: { a: "ig-a" }, instanceGroupMembers: { "a/g": ["n1"] }, routes: {} },
    ],
  ];
  for (const [title, outputs, expected] of cases) it(title, () => assert.deepEqual(clusterOutputs(outputs), expected));
});

describe("daemon/clusterController: clusterReadyFor (a Service stack waits for what it needs of the cluster stack)", () => {
  const LB = "a1b4e28ba2fa141d2883f0016d3cca42";
  const UID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
  const plain = externalServiceDesired("default", "web", UID, LB, [80]);
  const denying: ServiceDesired = { ...plain, denyFirewall: denyFirewall("default/web", LB, "ipv4") };
  const applied = (outputs: Record<string, unknown>) =>
    appliedClusterOf(
      clusterOutputs({ instanceGroups: { "us-central1-a": "ig-a", "us-central1-b": "ig-b" }, ...outputs }),
    );
  const cases: Array<[string, ReturnType<typeof appliedClusterOf> | undefined, ServiceDesired, boolean]> = [
    ["nothing applied yet", undefined, plain, false],
    ["its groups applied", applied({}), plain, true],
    [
      "a zone's group missing",
      appliedClusterOf(clusterOutputs({ instanceGroups: { "us-central1-a": "ig-a" } })),
      plain,
      false,
    ],
    [
      "a deny rule, the node health-check firewall still at 1000: wait (its probes would be denied)",
      applied({}),
      denying,
      false,
    ],
    [
      "a deny rule, the node health-check firewall at 999",
      applied({ nodeHealthCheckFirewallPriority: 999 }),
      denying,
      true,
    ],
  ];
  for (const [title, cluster, service, ready] of cases)
    it(title, () => assert.equal(clusterReadyFor(cluster, service), ready));
});

describe("daemon/serviceController: ingressOf (checked)", () => {
  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    [
      "the Service's IPs",
      { loadBalancers: { "default/web": { ingress: ["34.1.2.3", "34.1.2.4"] } } },
      ["34.1.2.3", "34.1.2.4"],
    ],
    ["another Service's entry only", { loadBalancers: { "default/other": { ingress: ["34.1.2.3"] } } }, []],
    ["no loadBalancers output", {}, []],
    ["loadBalancers not an object", { loadBalancers: ["x"] }, []],
    [
      "non-string IPs are left out",
      { loadBalancers: { "default/web": { ingress: ["34.1.2.3", 5, null] } } },
      ["34.1.2.3"],
    ],
    ["ingress not a list", { loadBalancers: { "default/web": { ingress: "34.1.2.3" } } }, []],
  ];
  for (const [title, outputs, expected] of cases)
    it(title, () => assert.deepEqual(ingressOf(outputs, "default", "web"), expected));
});

describe("daemon/stackRuns: ReferenceUnion", () => {
  it("unions zones (sorted, once each) and the legacy health check; a replaced or dropped stack takes its part away", () => {
    const union = new ReferenceUnion();
    const b = { zones: ["us-central1-b"], legacyHealthCheck: false };
    const ab = { zones: ["us-central1-a", "us-central1-b"], legacyHealthCheck: true };
    assert.deepEqual(union.union(), { zones: [], legacyHealthCheck: false });
    union.replace(undefined, b);
    union.replace(undefined, ab);
    assert.deepEqual(union.union(), { zones: ["us-central1-a", "us-central1-b"], legacyHealthCheck: true });
    union.replace(ab, { zones: ["us-central1-c"], legacyHealthCheck: false });
    assert.deepEqual(union.union(), { zones: ["us-central1-b", "us-central1-c"], legacyHealthCheck: false });
    union.replace(b, undefined);
    assert.deepEqual(union.union(), { zones: ["us-central1-c"], legacyHealthCheck: false });
  });

  it("after any sequence of sets and drops, equals the union of what each stack points at now", () => {
    const zone = fc.constantFrom("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f");
    const references = fc.record({ zones: fc.array(zone, { maxLength: 3 }), legacyHealthCheck: fc.boolean() });
    const step = fc.tuple(fc.integer({ min: 0, max: 5 }), fc.option(references, { nil: undefined }));
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const union = new ReferenceUnion();
        const current = new Map<number, ClusterReferences>();
        for (const [stack, next] of steps) {
          union.replace(current.get(stack), next);
          if (next === undefined) current.delete(stack);
          else current.set(stack, next);
        }
        const naive = [...current.values()];
        assert.deepEqual(union.union(), {
          zones: [...new Set(naive.flatMap((reference) => reference.zones))].sort(),
          legacyHealthCheck: naive.some((reference) => reference.legacyHealthCheck),
        });
      }),
    );
  });
});

describe("enableL4DenyFirewall off: which Service stacks still hold a deny rule (ObservedCloud.denyRulesHeld, denyRulesUnread)", () => {
  const LB = "a0123456789abcdef0123456789abcde";
  const recorded = (firewalls: unknown): Record<string, unknown> => ({
    loadBalancers: { "default/web": { ingress: ["34.1.2.3"], resources: { firewalls } } },
  });
  const cases: Array<[string, Record<string, unknown>, ClusterReferences]> = [
    [
      "its IPv4 deny rule recorded",
      recorded([`k8s-fw-${LB}`, `k8s-fw-${LB}-deny`]),
      { zones: [], legacyHealthCheck: false, denyRules: ["default/web"] },
    ],
    [
      "its IPv6 deny rule only (SingleStack IPv6)",
      recorded([`k8s-fw-${LB}-ipv6`, `k8s-fw-${LB}-deny-ipv6`]),
      { zones: [], legacyHealthCheck: false, denyRules: ["default/web"] },
    ],
    [
      "allow rules only (never had one, or deleted)",
      recorded([`k8s-fw-${LB}`, `k8s-${LB}-http-hc`, `k8s-fw-${LB}-ipv6`]),
      { zones: [], legacyHealthCheck: false },
    ],
    [
      "another Service's entry only",
      { loadBalancers: { "default/other": { resources: { firewalls: [`k8s-fw-${LB}-deny`] } } } },
      { zones: [], legacyHealthCheck: false },
    ],
    ["not of the recorded shape", recorded("k8s-fw-x-deny"), { zones: [], legacyHealthCheck: false }],
    ["nothing recorded", {}, { zones: [], legacyHealthCheck: false }],
  ];
  for (const [title, outputs, expected] of cases)
    it(`recordedReferences: ${title}`, () => assert.deepEqual(recordedReferences(outputs, "default", "web"), expected));

  const held: ClusterReferences = {
    zones: ["us-central1-a"],
    legacyHealthCheck: false,
    denyRules: ["default/a", "default/b"],
  };
  const observed: Array<[string, ObservedCloud, ClusterReferences, boolean, ObservedCloud]> = [
    [
      "deny rules held",
      NOTHING_OBSERVED,
      held,
      false,
      {
        ...NOTHING_OBSERVED,
        referencedZones: ["us-central1-a"],
        referencedGroups: [],
        denyRulesHeld: ["default/a", "default/b"],
      },
    ],
    [
      "unread stacks, the cluster's firewall recorded at 999",
      NOTHING_OBSERVED,
      { zones: [], legacyHealthCheck: false, unread: true },
      true,
      { ...NOTHING_OBSERVED, referencedGroups: [], denyRulesUnread: true },
    ],
    [
      "unread stacks, the cluster's firewall at 1000: nothing to hold",
      NOTHING_OBSERVED,
      { zones: [], legacyHealthCheck: false, unread: true },
      false,
      { ...NOTHING_OBSERVED, referencedGroups: [] },
    ],
    [
      "none held any more: the fields go (the desired state as without them)",
      { ...NOTHING_OBSERVED, denyRulesHeld: ["default/a"], denyRulesUnread: true },
      { zones: [], legacyHealthCheck: false },
      true,
      { ...NOTHING_OBSERVED, referencedGroups: [] },
    ],
  ];
  for (const [title, before, references, aboveDeny, expected] of observed)
    it(`withReferences: ${title}`, () =>
      assert.deepStrictEqual(withReferences(before, references, aboveDeny), expected));

  it("StackRecords: the Service stacks known at the start are unread until each is referenced or forgotten; the cluster stack is none of them", () => {
    const records = new StackRecords(["cluster", "service.default.a", "service.default.b"]);
    assert.deepEqual(records.references(), { zones: [], legacyHealthCheck: false, unread: true });
    records.setReferences(records.get("service.default.a"), {
      zones: [],
      legacyHealthCheck: false,
      denyRules: ["default/a"],
    });
    assert.deepEqual(records.references(), {
      zones: [],
      legacyHealthCheck: false,
      denyRules: ["default/a"],
      unread: true,
    });
    assert.equal(records.forget("service.default.b"), true, "the last unread: the union changed");
    assert.deepEqual(records.references(), { zones: [], legacyHealthCheck: false, denyRules: ["default/a"] });
    records.setReferences(records.get("service.default.a"), { zones: [], legacyHealthCheck: false });
    assert.deepEqual(records.references(), { zones: [], legacyHealthCheck: false });
  });
});

describe("daemon/serviceController: planServiceSync", () => {
  const cache = new DesiredCache(CONFIG);
  cache.update({
    nodes: [gceNode("n1", "u1", "us-central1-a", [])],
    services: [
      lbService("default", "web", "11111111-2222-4333-8444-555555555555"),
      lbService("default", "pinned", "22222222-2222-4333-8444-555555555556", { loadBalancerIP: "34.9.9.9" }),
    ],
  });
  const web = cache.view("service.default.web").service as ServiceDesired;
  const pinned = cache.view("service.default.pinned").service as ServiceDesired;
  const meta = (over: Partial<ServiceMeta> = {}): ServiceMeta => ({
    namespace: "default",
    name: "web",
    uid: "uid-1",
    type: "LoadBalancer",
    finalizers: [LB_FINALIZER],
    ingress: [],
    deleting: false,
    ...over,
  });
  const base: ServiceSyncInput = {
    namespace: "default",
    name: "web",
    service: web,
    hash: "h2",
    rejections: [],
    meta: meta(),
    refresh: false,
    clusterReady: true,
    loadBalancerClasses: ["dccm.io/gce"],
  };
  const recorded = { loadBalancers: { "default/web": { ingress: ["34.1.2.3"] } } };
  const syncing = { prefix: "Error syncing load balancer", tell: true } as const;
  const cases: Array<[string, StackRecord, Partial<ServiceSyncInput>, ServiceSyncAction]> = [
    [
      "desired, but the object is not in the cache yet: nothing",
      { known: false },
      { meta: undefined },
      { kind: "none" },
    ],
    [
      "the cluster stack does not hold its zones yet: wait",
      { known: false },
      { clusterReady: false },
      { kind: "waitForCluster" },
    ],
    [
      "applied: the published status is written back if changed",
      { known: true, recorded: {}, applied: "h2", published: ["34.1.2.3"] },
      {},
      { kind: "publish", ingress: ["34.1.2.3"], restored: false },
    ],
    [
      "read after a restart, never published since: restore the status from what it recorded",
      { known: true, recorded, applied: "h2" },
      {},
      { kind: "publish", ingress: ["34.1.2.3"], restored: true },
    ],
    ["known but not read since the start: read it", { known: true }, {}, { kind: "inspect", failure: syncing }],
    [
      "read, recording an older state: apply",
      { known: true, recorded, applied: "h1" },
      {},
      { kind: "apply", hash: "h2", changed: true, verifyIp: false, addFinalizer: false },
    ],
    [
      "a new Service: GCE asked what exists under its names, stack and finalizer first, then apply",
      { known: false, recorded: {} },
      { meta: meta({ finalizers: [] }) },
      { kind: "apply", hash: "h2", changed: true, verifyIp: false, addFinalizer: true, firstUp: true },
    ],
    [
      "a stack read after a start that never applied (an adoption refused, a first up failed): GCE asked first",
      { known: true, recorded: {} },
      {},
      { kind: "apply", hash: "h2", changed: true, verifyIp: false, addFinalizer: false, firstUp: true },
    ],
    [
      "a change",
      { known: true, recorded, applied: "h1" },
      {},
      { kind: "apply", hash: "h2", changed: true, verifyIp: false, addFinalizer: false },
    ],
    [
      "a drift pass",
      { known: true, recorded, applied: "h2" },
      { refresh: true },
      { kind: "apply", hash: "h2", changed: false, verifyIp: false, addFinalizer: false },
    ],
    [
      "a changed loadBalancerIP is checked against GCE",
      { known: true, recorded, applied: "h1" },
      { service: pinned },
      { kind: "apply", hash: "h2", changed: true, verifyIp: true, addFinalizer: false },
    ],
    [
      "an unchanged loadBalancerIP on a drift pass is not",
      { known: true, recorded, applied: "h2" },
      { service: pinned, refresh: true },
      { kind: "apply", hash: "h2", changed: false, verifyIp: false, addFinalizer: false },
    ],
    [
      "invalid, not told yet",
      { known: false },
      {
        service: undefined,
        rejections: [{ service: "default/web", field: "spec.ports[0].protocol", message: "SCTP is not supported" }],
      },
      { kind: "reject", message: "SCTP is not supported", tell: true, token: "uid-1 h2" },
    ],
    [
      "invalid, this object and spec told already",
      { known: false, toldRejection: "uid-1 h2" },
      {
        service: undefined,
        rejections: [{ service: "default/web", field: "spec.ports[0].protocol", message: "SCTP is not supported" }],
      },
      { kind: "reject", message: "SCTP is not supported", tell: false, token: "uid-1 h2" },
    ],
    [
      "invalid, deleted and created again unchanged before the sync (another uid): told again",
      { known: false, toldRejection: "uid-1 h2" },
      {
        service: undefined,
        meta: meta({ uid: "uid-2" }),
        rejections: [{ service: "default/web", field: "spec.ports[0].protocol", message: "SCTP is not supported" }],
      },
      { kind: "reject", message: "SCTP is not supported", tell: true, token: "uid-2 h2" },
    ],
    [
      "gone, nothing of ours: forget",
      { known: false },
      { service: undefined, hash: undefined, meta: undefined },
      { kind: "forget" },
    ],
    [
      "gone, a stack not read since the start: read it first (proof of ownership)",
      { known: true },
      { service: undefined, hash: undefined, meta: undefined },
      { kind: "inspect", failure: { prefix: "Error deleting load balancer", tell: false } },
    ],
    [
      "gone, its stack read: destroy and remove it",
      { known: true, recorded },
      { service: undefined, hash: undefined, meta: undefined },
      {
        kind: "remove",
        removal: { destroy: true, clearIngress: false, removeFinalizer: false, announce: false },
        failure: { prefix: "Error deleting load balancer", tell: false },
      },
    ],
    [
      "being deleted with our finalizer and stack: destroy, told",
      { known: true, recorded },
      { service: undefined, hash: undefined, meta: meta({ deleting: true }) },
      {
        kind: "remove",
        removal: { destroy: true, clearIngress: false, removeFinalizer: true, announce: true },
        failure: { prefix: "Error deleting load balancer", tell: true },
      },
    ],
    [
      "being deleted, our finalizer but no stack: only the finalizer goes",
      { known: false },
      { service: undefined, hash: undefined, meta: meta({ deleting: true }) },
      {
        kind: "remove",
        removal: { destroy: false, clearIngress: false, removeFinalizer: true, announce: true },
        failure: { prefix: "Error deleting load balancer", tell: true },
      },
    ],
  ];
  for (const [title, record, input, expected] of cases)
    it(title, () => assert.deepEqual(planServiceSync(record, { ...base, ...input }), expected));
});

/**
 * controllers/service/plan.ts: the Service controller's pure decisions (planServiceSync) and what a
 * Service stack points at in the cluster stack, one row per branch the executor takes.
 */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import {
  planServiceSync,
  recordedReferences,
  referencesOf,
  refreshActionOf,
  sameReferences,
  type ServiceSyncAction,
  type ServiceSyncInput,
} from "../../../../controllers/service/plan";
import type { ClusterReferences } from "../../../../controllers/references";
import type { StackRecord } from "../../../../controllers/stackRecords";
import { type Rejection, type ServiceDesired, LB_FINALIZER } from "../../../../model";
import type { ServiceMeta } from "../../../../watcher/informers";
import { DesiredCache } from "../../../../model/desiredCache";
import { CONFIG, externalServiceDesired, gceNode, lbService } from "../../../support/builders";

describe("controllers/service/plan: planServiceSync", () => {
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
    negsListed: true,
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
      "a neg Service whose NEGs were not listed since the start, changed: wait for the NEG controller",
      { known: true, recorded, applied: "h1" },
      { negsListed: false },
      { kind: "waitForNegs" },
    ],
    [
      "a neg Service whose NEGs were not listed since the start, unchanged: its status is published all the same",
      { known: true, recorded, applied: "h2" },
      { negsListed: false },
      { kind: "publish", ingress: ["34.1.2.3"], restored: true },
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
      "applied and published, but the stack holds <lb> it should not (a pin, an earlier release): apply, no change, to release it",
      { known: true, recorded: {}, applied: "h2", published: ["34.1.2.3"] },
      { addressToRelease: true },
      { kind: "apply", hash: "h2", changed: false, verifyIp: false, addFinalizer: false },
    ],
    [
      "read after a restart, unchanged, holding <lb> it should not: apply, no change, to release it",
      { known: true, recorded, applied: "h2" },
      { addressToRelease: true },
      { kind: "apply", hash: "h2", changed: false, verifyIp: false, addFinalizer: false },
    ],
    [
      "a change while holding <lb>: the change applies (and releases it)",
      { known: true, recorded, applied: "h1", published: ["34.1.2.3"] },
      { addressToRelease: true },
      { kind: "apply", hash: "h2", changed: true, verifyIp: false, addFinalizer: false },
    ],
    [
      "holding <lb>, not read since the start: read it first",
      { known: true, applied: "h2" },
      { addressToRelease: true },
      { kind: "inspect", failure: syncing },
    ],
    [
      "applied and published, addressToRelease false: publish as before",
      { known: true, recorded: {}, applied: "h2", published: ["34.1.2.3"] },
      { addressToRelease: false },
      { kind: "publish", ingress: ["34.1.2.3"], restored: false },
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

describe("controllers/service/plan: recordedReferences: which Service stacks still hold a deny rule (enableL4DenyFirewall off)", () => {
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
    [
      "the NEGs a neg Service's stack declares are its own: nothing the cluster stack keeps",
      {
        loadBalancers: {
          "default/web": {
            resources: { firewalls: [], networkEndpointGroups: [`us-central1-b/${LB}`, `us-central1-a/${LB}`] },
          },
        },
      },
      { zones: [], legacyHealthCheck: false },
    ],
  ];
  for (const [title, outputs, expected] of cases)
    it(title, () => assert.deepEqual(recordedReferences(outputs, "default", "web"), expected));
});

describe("controllers/service/plan: properties", () => {
  const cache = new DesiredCache(CONFIG);
  cache.update({
    nodes: [gceNode("n1", "u1", "us-central1-a", [])],
    services: [lbService("default", "web", "11111111-2222-4333-8444-555555555555")],
  });
  const web = cache.view("service.default.web").service as ServiceDesired;
  const record: fc.Arbitrary<StackRecord> = fc.record(
    {
      known: fc.boolean(),
      recorded: fc.constant<Record<string, unknown>>({ loadBalancers: { "default/web": { ingress: ["34.1.2.3"] } } }),
      applied: fc.constantFrom("h1", "h2"),
      published: fc.constant<string[]>(["34.1.2.3"]),
      toldRejection: fc.constantFrom("uid-1 h2", "uid-1 h1"),
    },
    { requiredKeys: ["known"] },
  );
  const meta: fc.Arbitrary<ServiceMeta | undefined> = fc.option(
    fc.record({
      namespace: fc.constant("default"),
      name: fc.constant("web"),
      uid: fc.constant("uid-1"),
      type: fc.constantFrom("LoadBalancer", "ClusterIP"),
      finalizers: fc.subarray([LB_FINALIZER]),
      ingress: fc.constant<string[]>([]),
      deleting: fc.boolean(),
    }),
    { nil: undefined },
  );
  const input = (desired: boolean, rejected: boolean): fc.Arbitrary<ServiceSyncInput> =>
    fc.record({
      namespace: fc.constant("default"),
      name: fc.constant("web"),
      service: fc.constant(desired ? web : undefined),
      hash: fc.constant(desired || rejected ? "h2" : undefined),
      rejections: fc.constant<Rejection[]>(
        rejected ? [{ service: "default/web", field: "spec.ports[0].protocol", message: "SCTP is not supported" }] : [],
      ),
      meta,
      refresh: fc.boolean(),
      clusterReady: fc.boolean(),
      negsListed: fc.boolean(),
      loadBalancerClasses: fc.constant<string[]>(["dccm.io/gce"]),
      addressToRelease: fc.boolean(),
    });

  it("nothing is deleted because of bad input: an invalid Service is only ever rejected", () => {
    fc.assert(fc.property(record, input(false, true), (r, i) => assert.equal(planServiceSync(r, i).kind, "reject")));
  });

  it("an address to release is never left for a publish: a ready, read, wanted Service runs", () => {
    fc.assert(
      fc.property(record, input(true, false), (r, i) => {
        const action = planServiceSync(r, i);
        if (
          i.addressToRelease === true &&
          i.meta !== undefined &&
          i.clusterReady &&
          i.negsListed &&
          r.recorded !== undefined
        )
          assert.equal(action.kind, "apply");
      }),
    );
  });

  it("a wanted load balancer is never removed, and runs only once the cluster stack holds what it points at and its NEGs were listed", () => {
    fc.assert(
      fc.property(record, input(true, false), (r, i) => {
        const action = planServiceSync(r, i);
        assert.ok(!["remove", "forget", "reject"].includes(action.kind), action.kind);
        if (action.kind === "apply") assert.deepEqual([i.clusterReady, i.negsListed], [true, true]);
      }),
    );
  });
});

describe("controllers/service/plan: sameReferences and refreshActionOf", () => {
  const base: ClusterReferences = { zones: ["us-central1-a"], legacyHealthCheck: false, denyRules: ["default/a"] };
  const cases: Array<[string, ClusterReferences, boolean]> = [
    ["the same", { ...base }, true],
    ["a zone more", { ...base, zones: ["us-central1-a", "us-central1-b"] }, false],
    ["the legacy check", { ...base, legacyHealthCheck: true }, false],
    ["no deny rule", { zones: ["us-central1-a"], legacyHealthCheck: false }, false],
    ["unread", { ...base, unread: true }, false],
  ];
  for (const [title, other, same] of cases)
    it(`sameReferences: ${title}`, () => assert.equal(sameReferences(base, other), same));

  const actions: Array<[ServiceSyncAction["kind"], "apply" | "reject" | "other"]> = [
    ["apply", "apply"],
    ["inspect", "apply"],
    ["reject", "reject"],
    ["publish", "other"],
    ["waitForCluster", "other"],
    ["remove", "other"],
    ["forget", "other"],
    ["none", "other"],
  ];
  for (const [action, answered] of actions)
    it(`refreshActionOf: ${action} → ${answered}`, () => assert.equal(refreshActionOf(action), answered));
});

describe("controllers/service/plan: referencesOf a neg Service", () => {
  it("names nothing of the cluster stack: its NEGs are its own stack's", () => {
    const LB = "a0123456789abcdef0123456789abcde";
    const base = externalServiceDesired("default", "web", "1b4e28ba-2fa1-41d2-883f-0016d3cca427", LB, [80]);
    assert.deepEqual(
      referencesOf({
        ...base,
        backend: "neg",
        backendZones: [],
        backendNegs: [
          { zone: "us-central1-b", name: LB, subnetwork: "k8s-subnet" },
          { zone: "us-central1-a", name: `${LB}-0badcafe`, subnetwork: "k8s-subnet-2" },
        ],
      }),
      { zones: [], legacyHealthCheck: false },
    );
  });
});

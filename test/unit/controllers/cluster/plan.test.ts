/**
 * controllers/cluster/plan.ts: the cluster stack controller's pure decisions (planClusterSync) and
 * the checked parsing of its outputs, one row per branch the executor takes.
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
} from "../../../../controllers/cluster/plan";
import type { StackRecord } from "../../../../controllers/stackRecords";
import type { ServiceDesired } from "../../../../model";
import { denyFirewall, externalServiceDesired } from "../../../support/builders";

describe("controllers/cluster/plan: planClusterSync", () => {
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

describe("controllers/cluster/plan: clusterOutputs (checked)", () => {
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

describe("controllers/cluster/plan: clusterReadyFor (a Service stack waits for what it needs of the cluster stack)", () => {
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

describe("controllers/cluster/plan: properties", () => {
  const record = fc.record(
    {
      known: fc.boolean(),
      recorded: fc.constant({}),
      applied: fc.constantFrom("h1", "h2"),
    },
    { requiredKeys: ["known"] },
  );
  const input = fc.record({
    hash: fc.option(fc.constantFrom("h1", "h2"), { nil: undefined }),
    refresh: fc.boolean(),
    published: fc.boolean(),
    instancesObserved: fc.boolean(),
  });

  it("a sync ends: once instances are observed and the stack read, the plan is none, publishRecorded or apply", () => {
    fc.assert(
      fc.property(record, input, (r, i) => {
        const action = planClusterSync({ ...r, recorded: {} }, { ...i, instancesObserved: true });
        assert.ok(["none", "publishRecorded", "apply"].includes(action.kind), action.kind);
      }),
    );
  });

  it("an apply runs the desired hash, and is a drift pass only when that hash is the applied one", () => {
    fc.assert(
      fc.property(record, input, (r, i) => {
        const action = planClusterSync(r, i);
        if (action.kind !== "apply") return;
        assert.equal(action.hash, i.hash);
        assert.equal(action.drift, i.refresh && r.applied === i.hash);
      }),
    );
  });

  it("clusterOutputs never throws and keeps only values of the recorded shape", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.anything()), (outputs) => {
        const checked = clusterOutputs(outputs);
        for (const value of Object.values(checked.instanceGroups)) assert.equal(typeof value, "string");
        for (const value of Object.values(checked.routes)) assert.equal(typeof value, "string");
        for (const list of Object.values(checked.instanceGroupMembers))
          for (const name of list) assert.equal(typeof name, "string");
      }),
    );
  });
});

describe("controllers/cluster/plan: a neg Service waits for nothing of the cluster stack but what it names (its NEGs are its own stack's)", () => {
  const LB = "a1b4e28ba2fa141d2883f0016d3cca42";
  const UID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
  const negService: ServiceDesired = externalServiceDesired("default", "web", UID, LB, [80], {
    backend: "neg",
    backendZones: [],
    backendNegs: [
      { zone: "us-central1-a", name: LB, subnetwork: "k8s-subnet" },
      { zone: "us-central1-b", name: LB, subnetwork: "k8s-subnet" },
    ],
  });

  it("clusterOutputs leaves out what a cluster stack of an earlier build recorded of NEGs", () =>
    assert.deepEqual(clusterOutputs({ networkEndpointGroupMembers: { [`us-central1-a/${LB}`]: ["n1"] } }), {
      instanceGroups: {},
      instanceGroupMembers: {},
      routes: {},
    }));

  const cases: Array<[string, ReturnType<typeof appliedClusterOf> | undefined, boolean]> = [
    ["nothing applied yet", undefined, false],
    ["a cluster stack applied, no NEG in it", appliedClusterOf(clusterOutputs({})), true],
  ];
  for (const [title, cluster, ready] of cases)
    it(`clusterReadyFor: ${title} → ${ready}`, () => assert.equal(clusterReadyFor(cluster, negService), ready));
});

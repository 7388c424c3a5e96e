/** Tier 1: the drift pass's pure parts (drift/declared.ts, drift/plan.ts, drift/applied.ts) and the full refresh cadence. */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import type { StepEventStateMetadata } from "@pulumi/pulumi/automation";
import { appliedResource, describeDifference, driftOf } from "../../../drift/declared";
import { AppliedBook, appliedFromDeployment, appliedOf } from "../../../drift/applied";
import { RunStates } from "../../../stacks/states";
import { appliedGroups, planDriftPass } from "../../../drift/plan";

const LINK = "https://compute.googleapis.com/compute/v1/projects/p";

const RULE_INPUTS = {
  project: "p",
  region: "us-central1",
  name: "a1",
  description: '{"kubernetes.io/service-name":"default/web"}',
  ipAddress: "203.0.113.1",
  ipProtocol: "TCP",
  loadBalancingScheme: "EXTERNAL",
  networkTier: "PREMIUM",
  ports: ["80"],
  backendService: `${LINK}/regions/us-central1/backendServices/a1`,
  __defaults: [],
};

const RULE_LISTED = {
  kind: "compute#forwardingRule",
  name: "a1",
  description: '{"kubernetes.io/service-name":"default/web"}',
  IPAddress: "203.0.113.1",
  IPProtocol: "TCP",
  loadBalancingScheme: "EXTERNAL",
  networkTier: "PREMIUM",
  ports: ["80"],
  backendService: "projects/p/regions/us-central1/backendServices/a1",
  region: `${LINK}/regions/us-central1`,
  selfLink: `${LINK}/regions/us-central1/forwardingRules/a1`,
  fingerprint: "x",
};

const FIREWALL_INPUTS = {
  project: "p",
  name: "k8s-fw-a1",
  network: "k8s-net",
  description: "d",
  direction: "INGRESS",
  sourceRanges: ["10.0.0.0/8", "0.0.0.0/0"],
  targetTags: ["node"],
  allows: [{ protocol: "tcp", ports: ["80", "443"] }],
};

const FIREWALL_LISTED = {
  name: "k8s-fw-a1",
  network: `${LINK}/global/networks/k8s-net`,
  description: "d",
  direction: "INGRESS",
  priority: 1000,
  sourceRanges: ["0.0.0.0/0", "10.0.0.0/8"],
  targetTags: ["node"],
  allowed: [{ IPProtocol: "tcp", ports: ["80", "443"] }],
  disabled: false,
};

function applied(type: string, id: string, inputs: Record<string, unknown>) {
  const resource = appliedResource(type, id, inputs);
  assert.ok(resource !== undefined, `${type} is declared`);
  return resource;
}

const rule = () =>
  applied(
    "gcp:compute/forwardingRule:ForwardingRule",
    "projects/p/regions/us-central1/forwardingRules/a1",
    RULE_INPUTS,
  );
const fw = () => applied("gcp:compute/firewall:Firewall", "projects/p/global/firewalls/k8s-fw-a1", FIREWALL_INPUTS);

describe("drift/declared: what a stack declared of a GCE resource", () => {
  it("appliedResource: the id, and the declared fields under the Compute API's names, without identity or the provider's bookkeeping", () => {
    assert.deepEqual(rule(), {
      id: "forwardingRules/us-central1/a1",
      declared: JSON.stringify({
        IPAddress: "203.0.113.1",
        IPProtocol: "TCP",
        backendService: "projects/p/regions/us-central1/backendServices/a1",
        loadBalancingScheme: "EXTERNAL",
        networkTier: "PREMIUM",
        ports: "80",
      }),
    });
    assert.deepEqual(fw(), {
      id: "firewalls/global/k8s-fw-a1",
      declared: JSON.stringify({
        allowed: [{ IPProtocol: "tcp", ports: ["443", "80"] }],
        direction: "INGRESS",
        network: "k8s-net",
        sourceRanges: ["0.0.0.0/0", "10.0.0.0/8"],
        targetTags: "node",
      }),
    });
  });

  it("appliedResource: the fields the components ignore (a description everywhere: written at creation only) are never compared, and a single port is GCE's range form", () => {
    const group = applied(
      "gcp:compute/instanceGroup:InstanceGroup",
      "projects/p/zones/us-central1-a/instanceGroups/k8s-ig--c1",
      {
        project: "p",
        zone: "us-central1-a",
        name: "k8s-ig--c1",
        description: "ignored",
        network: "ignored",
        instances: [`${LINK}/zones/us-central1-a/instances/n2`, `${LINK}/zones/us-central1-a/instances/n1`],
      },
    );
    assert.deepEqual(group, {
      id: "instanceGroups/us-central1-a/k8s-ig--c1",
      declared: JSON.stringify({
        instances: ["projects/p/zones/us-central1-a/instances/n1", "projects/p/zones/us-central1-a/instances/n2"],
      }),
    });
    const route = applied("gcp:compute/route:Route", "projects/p/global/routes/r1", {
      project: "p",
      name: "r1",
      nextHopInstanceZone: "us-central1-a",
      priority: 1000,
      destRange: "10.64.1.0/24",
    });
    assert.equal(route.declared, JSON.stringify({ destRange: "10.64.1.0/24", priority: 1000 }));
    const pool = applied("gcp:compute/forwardingRule:ForwardingRule", "projects/p/regions/r/forwardingRules/a2", {
      project: "p",
      region: "r",
      name: "a2",
      portRange: "80",
    });
    assert.equal(pool.declared, JSON.stringify({ portRange: "80-80" }));
  });

  it("appliedResource: undefined for what is not a GCE resource dccm declares, or has no GCE id", () => {
    assert.equal(appliedResource("pulumi:pulumi:Stack", "x", {}), undefined);
    assert.equal(appliedResource("dccm:gcp:ServiceLoadBalancer", "", {}), undefined);
    assert.equal(appliedResource("gcp:compute/firewall:Firewall", undefined, FIREWALL_INPUTS), undefined);
    assert.equal(appliedResource("gcp:compute/firewall:Firewall", "k8s-fw-a1", FIREWALL_INPUTS), undefined);
  });

  it("driftOf: equal up to links, bare names, list order, one-element lists, empty defaults and GCE's own fields", () => {
    assert.deepEqual(driftOf(rule(), RULE_LISTED), []);
    assert.deepEqual(driftOf(fw(), FIREWALL_LISTED), []);
    const withFalse = applied("gcp:compute/forwardingRule:ForwardingRule", "projects/p/regions/r/forwardingRules/i1", {
      project: "p",
      region: "r",
      name: "i1",
      allowGlobalAccess: false,
      portRange: "80",
    });
    assert.deepEqual(driftOf(withFalse, { name: "i1", portRange: "80-80" }), []);
    const pool = applied("gcp:compute/targetPool:TargetPool", "projects/p/regions/r/targetPools/a1", {
      project: "p",
      region: "r",
      name: "a1",
      healthChecks: `${LINK}/global/httpHealthChecks/hc`,
    });
    assert.deepEqual(driftOf(pool, { name: "a1", healthChecks: ["projects/p/global/httpHealthChecks/hc"] }), []);
    const backend = applied(
      "gcp:compute/regionBackendService:RegionBackendService",
      "projects/p/regions/r/backendServices/a1",
      {
        project: "p",
        region: "r",
        name: "a1",
        network: "ignored",
        backends: [{ group: `${LINK}/zones/a/instanceGroups/g`, balancingMode: "CONNECTION" }],
      },
    );
    assert.deepEqual(
      driftOf(backend, {
        name: "a1",
        backends: [{ group: "projects/p/zones/a/instanceGroups/g", balancingMode: "CONNECTION", capacityScaler: 1 }],
      }),
      [],
    );
  });

  it("driftOf: every field that differs, with what was declared and what was found", () => {
    const changed = {
      ...FIREWALL_LISTED,
      sourceRanges: ["0.0.0.0/0"],
      allowed: [{ IPProtocol: "tcp", ports: ["80"] }],
      description: undefined,
    };
    assert.deepEqual(driftOf(fw(), changed).map(describeDifference), [
      'allowed: declared [{"IPProtocol":"tcp","ports":["443","80"]}], found [{"IPProtocol":"tcp","ports":"80"}]',
      'sourceRanges: declared ["0.0.0.0/0","10.0.0.0/8"], found "0.0.0.0/0"',
    ]);
    assert.deepEqual(
      driftOf(rule(), { ...RULE_LISTED, backendService: "projects/p/regions/us-central1/backendServices/other" }).map(
        describeDifference,
      ),
      [
        'backendService: declared "projects/p/regions/us-central1/backendServices/a1", found "projects/p/regions/us-central1/backendServices/other"',
      ],
    );
    // A group of the same name in another zone is another group.
    const backend = applied(
      "gcp:compute/regionBackendService:RegionBackendService",
      "projects/p/regions/r/backendServices/a1",
      {
        project: "p",
        region: "r",
        name: "a1",
        backends: [{ group: `${LINK}/zones/a/instanceGroups/g` }, { group: `${LINK}/zones/b/instanceGroups/g` }],
      },
    );
    assert.equal(
      driftOf(backend, {
        backends: [{ group: "projects/p/zones/a/instanceGroups/g" }, { group: "projects/p/zones/c/instanceGroups/g" }],
      }).length,
      1,
    );
  });

  it("driftOf: a deny rule's denies are Compute's denied, and destinationRanges and priority are compared as declared", () => {
    const deny = applied("gcp:compute/firewall:Firewall", "projects/p/global/firewalls/k8s-fw-a1-deny", {
      project: "p",
      name: "k8s-fw-a1-deny",
      network: "k8s-net",
      direction: "INGRESS",
      sourceRanges: ["0.0.0.0/0"],
      destinationRanges: ["203.0.113.1"],
      targetTags: ["node"],
      denies: [{ protocol: "all" }],
      priority: 1000,
    });
    const listed = {
      name: "k8s-fw-a1-deny",
      network: `${LINK}/global/networks/k8s-net`,
      direction: "INGRESS",
      priority: 1000,
      sourceRanges: ["0.0.0.0/0"],
      destinationRanges: ["203.0.113.1"],
      targetTags: ["node"],
      denied: [{ IPProtocol: "all" }],
      disabled: false,
    };
    assert.deepEqual(driftOf(deny, listed), []);
    assert.deepEqual(
      driftOf(deny, {
        ...listed,
        priority: 65534,
        destinationRanges: undefined,
        denied: [{ IPProtocol: "tcp", ports: ["22"] }],
      }).map(describeDifference),
      [
        'denied: declared [{"IPProtocol":"all"}], found [{"IPProtocol":"tcp","ports":"22"}]',
        'destinationRanges: declared "203.0.113.1", found nothing',
        "priority: declared 1000, found 65534",
      ],
    );
    const allow = applied("gcp:compute/firewall:Firewall", "projects/p/global/firewalls/k8s-fw-a1", {
      ...FIREWALL_INPUTS,
      destinationRanges: ["203.0.113.1"],
      priority: 999,
    });
    assert.deepEqual(driftOf(allow, { ...FIREWALL_LISTED, destinationRanges: ["203.0.113.1"], priority: 999 }), []);
    assert.deepEqual(driftOf(allow, FIREWALL_LISTED).map(describeDifference), [
      'destinationRanges: declared "203.0.113.1", found nothing',
      "priority: declared 999, found 1000",
    ]);
  });

  it("driftOf: a resource always matches the listing of itself, whatever order GCE lists its sets in (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.ipV4().map((ip) => `${ip}/32`),
          { minLength: 0, maxLength: 6 },
        ),
        fc.uniqueArray(fc.integer({ min: 1, max: 65535 }).map(String), { minLength: 1, maxLength: 5 }),
        (ranges, ports) => {
          const resource = applied("gcp:compute/firewall:Firewall", "projects/p/global/firewalls/f", {
            ...FIREWALL_INPUTS,
            sourceRanges: ranges,
            allows: [{ protocol: "tcp", ports }],
          });
          const listed = {
            ...FIREWALL_LISTED,
            sourceRanges: [...ranges].reverse(),
            allowed: [{ IPProtocol: "tcp", ports: [...ports].reverse() }],
          };
          return driftOf(resource, listed).length === 0;
        },
      ),
    );
  });
});

describe("drift/plan: the stacks a drift pass refreshes", () => {
  it("only stacks with a resource missing or changed, each with why", () => {
    const snapshots = [
      { stack: "service.default.web", generation: 3, resources: [rule(), fw()] },
      {
        stack: "service.default.ok",
        generation: 4,
        resources: [
          applied("gcp:compute/firewall:Firewall", "projects/p/global/firewalls/ok", {
            ...FIREWALL_INPUTS,
            name: "ok",
          }),
        ],
      },
      { stack: "service.default.empty", generation: 5, resources: [] },
    ];
    const listed = new Map<string, Record<string, unknown>>([
      ["firewalls/global/k8s-fw-a1", { ...FIREWALL_LISTED, targetTags: ["other"] }],
      ["firewalls/global/ok", { ...FIREWALL_LISTED, name: "ok" }],
    ]);
    assert.deepEqual(planDriftPass(snapshots, listed), [
      {
        stack: "service.default.web",
        generation: 3,
        reasons: [
          "forwardingRules/us-central1/a1: missing",
          'firewalls/global/k8s-fw-a1: targetTags: declared "node", found "other"',
        ],
      },
    ]);
  });

  it("appliedGroups: every instance group the stacks hold, once", () => {
    const group = applied("gcp:compute/instanceGroup:InstanceGroup", "projects/p/zones/z/instanceGroups/g", {
      project: "p",
      zone: "z",
      name: "g",
      instances: [],
    });
    assert.deepEqual(
      appliedGroups([
        { stack: "cluster", generation: 1, resources: [group, fw()] },
        { stack: "other", generation: 2, resources: [group] },
      ]),
      [{ zone: "z", name: "g" }],
    );
  });
});

function state(
  urn: string,
  id: string,
  inputs: Record<string, unknown>,
  type = "gcp:compute/firewall:Firewall",
): StepEventStateMetadata {
  return { type, urn, custom: true, id, parent: "", provider: "", inputs, outputs: {} };
}

describe("drift/applied: what each stack last applied", () => {
  it("RunStates: the last state of each URN; deletes drop it, delete-replaced keeps the replacement", () => {
    const steps = new RunStates();
    const a = state("urn:a", "projects/p/global/firewalls/a", { name: "a", project: "p", direction: "EGRESS" });
    const a2 = state("urn:a", "projects/p/global/firewalls/a", { name: "a", project: "p", direction: "INGRESS" });
    const b = state("urn:b", "projects/p/global/firewalls/b", { name: "b", project: "p" });
    steps.record("refresh", a, a);
    steps.record("create-replacement", a2, a);
    steps.record("delete-replaced", undefined, a);
    steps.record("same", b, b);
    steps.record("delete", undefined, b);
    steps.record("same", state("urn:s", "s", {}, "pulumi:pulumi:Stack"), undefined);
    const c = state("urn:c", "projects/p/global/firewalls/c", { name: "c", project: "p" });
    steps.record("same", c, c);
    steps.record("refresh", null, c);
    assert.deepEqual(appliedOf(steps.resources()), [
      { id: "firewalls/global/a", declared: JSON.stringify({ direction: "INGRESS" }) },
    ]);
  });

  it("appliedFromDeployment: custom resources of dccm's kinds; a deployment with pending operations is unknown", () => {
    const deployment = {
      resources: [
        { type: "pulumi:pulumi:Stack", urn: "s", custom: false },
        {
          type: "gcp:compute/firewall:Firewall",
          urn: "f",
          custom: true,
          id: "projects/p/global/firewalls/f",
          inputs: { project: "p", name: "f", direction: "INGRESS" },
        },
        {
          type: "gcp:compute/firewall:Firewall",
          urn: "g",
          custom: true,
          id: "projects/p/global/firewalls/g",
          delete: true,
          inputs: {},
        },
      ],
    };
    assert.deepEqual(appliedFromDeployment(deployment), [
      { id: "firewalls/global/f", declared: JSON.stringify({ direction: "INGRESS" }) },
    ]);
    assert.equal(appliedFromDeployment({ ...deployment, pending_operations: [{ type: "creating" }] }), undefined);
  });

  it("AppliedBook: a snapshot of the known stacks; every change bumps the generation", () => {
    const book = new AppliedBook();
    book.set("a", []);
    book.set("b", undefined);
    const first = book.generation("a");
    assert.deepEqual(book.snapshot(), [{ stack: "a", resources: [], generation: first }]);
    book.set("a", [fw()]);
    assert.notEqual(book.generation("a"), first);
    book.forget("a");
    assert.deepEqual([book.snapshot(), book.generation("a")], [[], undefined]);
  });
});

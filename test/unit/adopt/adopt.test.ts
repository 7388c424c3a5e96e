import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import {
  planAdoption,
  previewIps,
  promotedAddressId,
  servicesToPinOnTargetPool,
  withTargetPoolPins,
  type GceItem,
  type Inventory,
  type StackAdoption,
} from "../../../adopt/plan";
import { formatAdoption, summarizeAdoption } from "../../../adopt/report";
import type { AdoptionReport } from "../../../adopt/adopter";
import { declaredResourceIds, gceResourceId } from "../../../gce/ids";
import { declareStack } from "../../../components/stack";
import type { AddressPin } from "../../../components/serviceLoadBalancer";
import {
  desiredState,
  loadBalancerName,
  type ClusterSnapshot,
  type Config,
  type DesiredState,
  type Scope,
} from "../../../model";
import { capture } from "../../support/fakes/pulumiMocks";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const UID = {
  web: "11111111-aaaa-4aaa-8aaa-111111111111",
  local: "22222222-bbbb-4bbb-8bbb-222222222222",
  ilb: "33333333-cccc-4ccc-8ccc-333333333333",
  fixed: "44444444-dddd-4ddd-8ddd-444444444444",
} as const;
const LB = {
  web: loadBalancerName(UID.web),
  local: loadBalancerName(UID.local),
  ilb: loadBalancerName(UID.ilb),
  fixed: loadBalancerName(UID.fixed),
};
const R = "projects/dccm-test/regions/us-central1";
const G = "projects/dccm-test/global";
const Z = (zone: string): string => `projects/dccm-test/zones/${zone}`;
const V1 = "https://www.googleapis.com/compute/v1/";

const SNAPSHOT: ClusterSnapshot = {
  nodes: [
    gceNode("node-a1", "aaaaaaaa-0000-4000-8000-000000000001", "us-central1-a", ["10.64.1.0/24"]),
    gceNode("node-b2", "bbbbbbbb-0000-4000-8000-000000000002", "us-central1-b", ["10.64.2.0/24"]),
  ],
  services: [
    // External, the config's default mode (backend-service): the stock CCM serves it from a target pool.
    lbService("default", "web", UID.web, {
      ports: [
        { protocol: "TCP", port: 80 },
        { protocol: "TCP", port: 443 },
      ],
    }),
    lbService("default", "local", UID.local, {
      annotations: { "dccm.io/backend": "target-pool" },
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 30100,
    }),
    lbService("default", "ilb", UID.ilb, { annotations: { "networking.gke.io/load-balancer-type": "Internal" } }),
    lbService("default", "fixed", UID.fixed, { loadBalancerIP: "34.0.0.9" }),
  ],
};

function inventory(entries: [string, Record<string, unknown>][]): Inventory {
  return new Map(entries.map(([id, properties]): [string, GceItem] => [id, { id, properties }]));
}

/** What the stock CCM left for the four Services and two nodes (adopt tests read names, IPs and targets only). */
const STOCK = inventory([
  [
    `${R}/forwardingRules/${LB.web}`,
    { name: LB.web, IPAddress: "34.0.0.1", target: `${V1}${R}/targetPools/${LB.web}` },
  ],
  [`${R}/targetPools/${LB.web}`, { name: LB.web }],
  [`${G}/firewalls/k8s-fw-${LB.web}`, { name: `k8s-fw-${LB.web}` }],
  [`${G}/httpHealthChecks/k8s-c0ffee1234-node`, { name: "k8s-c0ffee1234-node" }],
  [`${G}/firewalls/k8s-c0ffee1234-node-http-hc`, { name: "k8s-c0ffee1234-node-http-hc" }],
  [
    `${R}/forwardingRules/${LB.local}`,
    { name: LB.local, IPAddress: "34.0.0.2", target: `${V1}${R}/targetPools/${LB.local}` },
  ],
  [`${R}/targetPools/${LB.local}`, { name: LB.local }],
  [`${G}/httpHealthChecks/${LB.local}`, { name: LB.local }],
  [`${G}/firewalls/k8s-fw-${LB.local}`, { name: `k8s-fw-${LB.local}` }],
  [`${G}/firewalls/k8s-${LB.local}-http-hc`, { name: `k8s-${LB.local}-http-hc` }],
  [
    `${R}/forwardingRules/${LB.ilb}`,
    { name: LB.ilb, IPAddress: "10.0.0.5", backendService: `${V1}${R}/backendServices/${LB.ilb}` },
  ],
  [`${R}/backendServices/${LB.ilb}`, { name: LB.ilb }],
  [`${G}/firewalls/k8s-fw-${LB.ilb}`, { name: `k8s-fw-${LB.ilb}` }],
  [`${G}/firewalls/k8s-c0ffee1234-node-hc`, { name: "k8s-c0ffee1234-node-hc" }],
  [`${Z("us-central1-a")}/instanceGroups/k8s-ig--c0ffee1234`, { name: "k8s-ig--c0ffee1234" }],
  [`${Z("us-central1-b")}/instanceGroups/k8s-ig--c0ffee1234`, { name: "k8s-ig--c0ffee1234" }],
  [
    `${R}/forwardingRules/${LB.fixed}`,
    { name: LB.fixed, IPAddress: "34.0.0.9", target: `${V1}${R}/targetPools/${LB.fixed}` },
  ],
  [`${G}/routes/prod-aaaaaaaa-0000-4000-8000-000000000001`, { name: "prod-aaaaaaaa-0000-4000-8000-000000000001" }],
  [`${G}/routes/prod-bbbbbbbb-0000-4000-8000-000000000002`, { name: "prod-bbbbbbbb-0000-4000-8000-000000000002" }],
  // Another cluster's and another Service's resources: never part of any plan.
  [
    `${R}/forwardingRules/a99999999999949998999999999999`,
    { name: "a99999999999949998999999999999", IPAddress: "34.0.0.99" },
  ],
]);

const NOTHING_HELD = (): ReadonlySet<string> => new Set();

/** Every IPv4 address reserved for the Service's life: the stock CCM's ephemeral IPs are promoted. */
const ALWAYS: Config = { ...CONFIG, addressReservation: "always" };

function pinnedDesired(config: Config = CONFIG): DesiredState {
  const pins = servicesToPinOnTargetPool(desiredState(SNAPSHOT, config), SNAPSHOT.services, STOCK);
  return desiredState({ ...SNAPSHOT, services: withTargetPoolPins(SNAPSHOT.services, pins) }, config);
}

/** What planAdoption gives for the four Services in either mode; `always` adds the promotions. */
function expectedPlans(promote: boolean): StackAdoption[] {
  const promotion = (
    service: "ilb" | "local" | "web",
    ip: string,
    kind: { addressType: "INTERNAL"; subnetwork: string } | { addressType: "EXTERNAL"; networkTier: "PREMIUM" },
  ): Pick<StackAdoption, "promotion" | "replacementPin"> => {
    const reservation = {
      name: LB[service],
      region: "us-central1",
      ip,
      ...kind,
      description: `{"kubernetes.io/service-name":"default/${service}"}`,
    };
    // Transient: the same reservation, made only if the adoption replaces the stock rule.
    return promote ? { promotion: reservation } : { replacementPin: reservation };
  };
  return [
    {
      stack: "cluster",
      imports: [
        `${G}/firewalls/k8s-c0ffee1234-node-http-hc`,
        `${G}/httpHealthChecks/k8s-c0ffee1234-node`,
        `${G}/routes/prod-aaaaaaaa-0000-4000-8000-000000000001`,
        `${G}/routes/prod-bbbbbbbb-0000-4000-8000-000000000002`,
        `${Z("us-central1-a")}/instanceGroups/k8s-ig--c0ffee1234`,
        `${Z("us-central1-b")}/instanceGroups/k8s-ig--c0ffee1234`,
      ],
      leftovers: [],
    },
    {
      stack: "service.default.fixed",
      service: "default/fixed",
      imports: [`${R}/forwardingRules/${LB.fixed}`],
      leftovers: [],
    },
    {
      stack: "service.default.ilb",
      service: "default/ilb",
      imports: [`${G}/firewalls/k8s-fw-${LB.ilb}`, `${R}/backendServices/${LB.ilb}`, `${R}/forwardingRules/${LB.ilb}`],
      ...promotion("ilb", "10.0.0.5", { addressType: "INTERNAL", subnetwork: "k8s-subnet" }),
      leftovers: [`${G}/firewalls/k8s-c0ffee1234-node-hc`],
    },
    {
      stack: "service.default.local",
      service: "default/local",
      imports: [
        `${G}/firewalls/k8s-${LB.local}-http-hc`,
        `${G}/firewalls/k8s-fw-${LB.local}`,
        `${G}/httpHealthChecks/${LB.local}`,
        `${R}/forwardingRules/${LB.local}`,
        `${R}/targetPools/${LB.local}`,
      ],
      ...promotion("local", "34.0.0.2", { addressType: "EXTERNAL", networkTier: "PREMIUM" }),
      leftovers: [],
    },
    {
      stack: "service.default.web",
      service: "default/web",
      imports: [`${G}/firewalls/k8s-fw-${LB.web}`, `${R}/forwardingRules/${LB.web}`, `${R}/targetPools/${LB.web}`],
      ...promotion("web", "34.0.0.1", { addressType: "EXTERNAL", networkTier: "PREMIUM" }),
      leftovers: [],
    },
  ];
}

describe("adopt/plan", () => {
  it("pins only the external Services the stock CCM serves from a target pool that the config would move (no annotation)", () => {
    assert.deepEqual(servicesToPinOnTargetPool(desiredState(SNAPSHOT, CONFIG), SNAPSHOT.services, STOCK), [
      "default/fixed",
      "default/web",
    ]);
    const pinned = withTargetPoolPins(SNAPSHOT.services, ["default/web"]);
    assert.deepEqual(pinned[0].annotations, { "dccm.io/backend": "target-pool" });
    assert.deepEqual(pinned[1].annotations, { "dccm.io/backend": "target-pool" });
    assert.deepEqual(pinned[2].annotations, { "networking.gke.io/load-balancer-type": "Internal" });
    assert.equal(pinned[3], SNAPSHOT.services[3], "unpinned Services are the very same objects");
  });

  it("plans every stack (transient, the default): what exists under its names is imported, no IP promoted (each keeps its ephemeral one, reserved only if --allow-replace replaces its rule), the stock-only names left", () => {
    assert.deepEqual(planAdoption(pinnedDesired(), STOCK, NOTHING_HELD), expectedPlans(false));
  });

  it("plans every stack (addressReservation always): what exists under its names is imported, the ephemeral IP promoted first, the stock-only names left", () => {
    assert.deepEqual(planAdoption(pinnedDesired(ALWAYS), STOCK, NOTHING_HELD), expectedPlans(true));
  });

  it("never imports what a stack holds, and promotes no IP for a stack that holds anything", () => {
    const held = new Map<string, ReadonlySet<string>>([
      ["cluster", new Set([`${Z("us-central1-a")}/instanceGroups/k8s-ig--c0ffee1234`])],
      ["service.default.web", new Set([`${R}/targetPools/${LB.web}`])],
    ]);
    const plans = planAdoption(pinnedDesired(), STOCK, (stack) => held.get(stack) ?? new Set());
    const cluster = plans.find((plan) => plan.stack === "cluster");
    const web = plans.find((plan) => plan.stack === "service.default.web");
    assert.equal(cluster?.imports.includes(`${Z("us-central1-a")}/instanceGroups/k8s-ig--c0ffee1234`), false);
    assert.equal(cluster?.imports.length, 5);
    assert.deepEqual(web, {
      stack: "service.default.web",
      service: "default/web",
      imports: [`${G}/firewalls/k8s-fw-${LB.web}`, `${R}/forwardingRules/${LB.web}`],
      leftovers: [],
    });
  });

  const withAddress = inventory([
    [`${R}/forwardingRules/${LB.web}`, { name: LB.web, IPAddress: "34.0.0.1" }],
    [`${R}/addresses/${LB.web}`, { name: LB.web, address: "34.0.0.1" }],
  ]);

  it("plans nothing where GCE has nothing of the cluster (either mode)", () => {
    assert.deepEqual(planAdoption(pinnedDesired(), new Map(), NOTHING_HELD), []);
    assert.deepEqual(planAdoption(pinnedDesired(ALWAYS), new Map(), NOTHING_HELD), []);
  });

  it("transient: an existing static address <lb> is neither imported nor promoted (the stack declares none at rest)", () => {
    assert.deepEqual(planAdoption(pinnedDesired(), withAddress, NOTHING_HELD), [
      {
        stack: "service.default.web",
        service: "default/web",
        imports: [`${R}/forwardingRules/${LB.web}`],
        leftovers: [],
      },
    ]);
  });

  it("addressReservation always: imports an existing static address instead of promoting", () => {
    assert.deepEqual(planAdoption(pinnedDesired(ALWAYS), withAddress, NOTHING_HELD), [
      {
        stack: "service.default.web",
        service: "default/web",
        imports: [`${R}/addresses/${LB.web}`, `${R}/forwardingRules/${LB.web}`],
        leftovers: [],
      },
    ]);
  });

  it("transient: no promotion, so nothing previewed on a promoted IP", () => {
    const desired = pinnedDesired();
    const web = planAdoption(desired, STOCK, NOTHING_HELD).find((plan) => plan.stack === "service.default.web");
    assert.ok(web !== undefined);
    assert.equal(web.promotion, undefined);
    assert.deepEqual([...previewIps(desired, web).entries()], []);
  });

  it("addressReservation always: previews a promoted Service's forwarding rules on the IP they keep; the promoted address's ID", () => {
    const desired = pinnedDesired(ALWAYS);
    const web = planAdoption(desired, STOCK, NOTHING_HELD).find((plan) => plan.stack === "service.default.web");
    assert.ok(web?.promotion !== undefined);
    // Its firewall too: it opens towards the address (destinationRanges), whose IP a preview cannot know.
    assert.deepEqual(
      [...previewIps(desired, web).entries()],
      [
        [`${R}/forwardingRules/${LB.web}`, "34.0.0.1"],
        [`${G}/firewalls/k8s-fw-${LB.web}`, "34.0.0.1"],
      ],
    );
    assert.equal(promotedAddressId(desired, web.promotion), `${R}/addresses/${LB.web}`);
    const cluster = planAdoption(desired, STOCK, NOTHING_HELD)[0];
    assert.deepEqual([...previewIps(desired, cluster).entries()], []);
  });
});

/** Every GCE ID the scope's program registers under mocks, and the import IDs it registers with. */
async function registeredIds(
  desired: DesiredState,
  scope: Scope,
  imports: ReadonlySet<string>,
  ips: ReadonlyMap<string, string> = new Map(),
  addressPins?: ReadonlyMap<string, AddressPin>,
): Promise<{ ids: string[]; imported: string[]; ruleIps: string[]; firewallDestinations: string[] }> {
  const mockState = (
    type: string,
    inputs: Record<string, unknown>,
  ): { id: string; state: Record<string, unknown> } => ({
    id: `${type}/${String(inputs.name)}`,
    // An address reserved on a literal (a pin) holds it, as in GCE; any other gets one.
    state: { ...inputs, address: inputs.address ?? "198.51.100.5" },
  });
  const captured = await capture(mockState, (opts) => {
    declareStack(desired, scope, { imports, previewIps: ips, ...(addressPins !== undefined ? { addressPins } : {}) });
    return new pulumi.ComponentResource("test:index:Root", "root", {}, opts);
  });
  const custom = captured.registered.filter((resource) => resource.custom);
  const ids = custom
    .map((resource) => gceResourceId(resource.type, resource.inputs) ?? `no id: ${resource.name}`)
    .sort();
  const imported = custom.flatMap((resource) => (resource.importId !== undefined ? [resource.importId] : [])).sort();
  const ruleIps = custom
    .filter((resource) => resource.type === "gcp:compute/forwardingRule:ForwardingRule")
    .map((resource) => `${String(resource.inputs.name)} ${String(resource.inputs.ipAddress)}`)
    .sort();
  const firewallDestinations = custom
    .filter((resource) => resource.type === "gcp:compute/firewall:Firewall")
    .map((resource) => `${String(resource.inputs.name)} ${JSON.stringify(resource.inputs.destinationRanges)}`)
    .sort();
  return { ids, imported, ruleIps, firewallDestinations };
}

describe("components: declaredResourceIds and the adoption transformation (Pulumi mocks)", () => {
  const desired = pinnedDesired();
  const scopes: Scope[] = [
    { kind: "cluster" },
    { kind: "service", namespace: "default", name: "web" },
    { kind: "service", namespace: "default", name: "local" },
    { kind: "service", namespace: "default", name: "ilb" },
    { kind: "service", namespace: "default", name: "fixed" },
    { kind: "all" },
  ];
  for (const scope of scopes) {
    it(`declaredResourceIds is exactly what the program registers, scope ${scope.kind === "service" ? scope.name : scope.kind}`, async () => {
      const { ids, imported } = await registeredIds(desired, scope, new Set());
      assert.deepEqual([...declaredResourceIds(desired, scope)].sort(), ids);
      assert.deepEqual(imported, []);
    });
  }
  const always = pinnedDesired(ALWAYS);
  // Every IPv4 Service's <lb>, but the one on its user-owned loadBalancerIP.
  const ADDRESSES_ALWAYS = new Map([
    ["all", 3],
    ["web", 1],
    ["local", 1],
    ["ilb", 1],
    ["fixed", 0],
  ]);
  for (const scope of scopes.filter((candidate) => candidate.kind !== "cluster")) {
    it(`declaredResourceIds is exactly what the program registers with addressReservation always, scope ${scope.kind === "service" ? scope.name : scope.kind}`, async () => {
      const { ids } = await registeredIds(always, scope, new Set());
      const declared = [...declaredResourceIds(always, scope)].sort();
      assert.deepEqual(declared, ids);
      assert.equal(
        declared.filter((id) => id.includes("/addresses/")).length,
        ADDRESSES_ALWAYS.get(scope.kind === "service" ? scope.name : "all"),
      );
    });
  }

  // A zone beyond the group limit (limit 1): numbered groups in the cluster stack and in every backend service.
  const grouped = desiredState(
    {
      ...SNAPSHOT,
      nodes: [...SNAPSHOT.nodes, gceNode("node-a3", "aaaaaaaa-0000-4000-8000-000000000003", "us-central1-a", [])],
    },
    { ...CONFIG, instanceGroupLimit: 1 },
  );
  for (const scope of [
    { kind: "cluster" },
    { kind: "service", namespace: "default", name: "ilb" },
    { kind: "all" },
  ] as Scope[]) {
    it(`declaredResourceIds is exactly what the program registers with numbered groups, scope ${scope.kind === "service" ? scope.name : scope.kind}`, async () => {
      assert.ok(grouped.cluster.instanceGroups.some((group) => group.index !== undefined));
      const { ids } = await registeredIds(grouped, scope, new Set());
      assert.deepEqual([...declaredResourceIds(grouped, scope)].sort(), ids);
    });
  }

  // IPv6 halves: dual-stack external with its own address, IPv6-only internal (ETP Local, two protocols), a user-owned IPv6 IP.
  const ipv6 = desiredState(
    {
      ...SNAPSHOT,
      services: [
        lbService("default", "dual", "55555555-eeee-4eee-8eee-555555555555", {
          ipFamilies: ["IPv4", "IPv6"],
          ipFamilyPolicy: "RequireDualStack",
        }),
        lbService("default", "v6", "66666666-ffff-4fff-8fff-666666666666", {
          ipFamilies: ["IPv6"],
          annotations: { "networking.gke.io/load-balancer-type": "Internal" },
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 31000,
          ports: [
            { protocol: "TCP", port: 53 },
            { protocol: "UDP", port: 53 },
          ],
        }),
        lbService("default", "fixed6", "77777777-1111-4111-8111-777777777777", {
          ipFamilies: ["IPv4", "IPv6"],
          ipFamilyPolicy: "PreferDualStack",
          loadBalancerIP: "2001:db8::5",
        }),
      ],
    },
    CONFIG,
  );
  for (const name of ["dual", "v6", "fixed6"]) {
    it(`declaredResourceIds is exactly what the program registers for IPv6, scope ${name}`, async () => {
      assert.deepEqual(ipv6.rejected, []);
      const scope: Scope = { kind: "service", namespace: "default", name };
      const { ids } = await registeredIds(ipv6, scope, new Set());
      assert.deepEqual([...declaredResourceIds(ipv6, scope)].sort(), ids);
    });
  }

  it("gives the import option to exactly the children whose ID is adopted, and previews a promoted rule on its IP", async () => {
    const imports = new Set([
      `${R}/targetPools/${LB.web}`,
      `${G}/firewalls/k8s-fw-${LB.web}`,
      `${R}/forwardingRules/${LB.ilb}`,
      `${G}/routes/not-declared`,
    ]);
    const ips = new Map([
      [`${R}/forwardingRules/${LB.web}`, "34.0.0.1"],
      [`${G}/firewalls/k8s-fw-${LB.web}`, "34.0.0.1"],
    ]);
    const { imported, ruleIps, firewallDestinations } = await registeredIds(
      desired,
      { kind: "service", namespace: "default", name: "web" },
      imports,
      ips,
    );
    assert.deepEqual(imported, [`${G}/firewalls/k8s-fw-${LB.web}`, `${R}/targetPools/${LB.web}`]);
    assert.deepEqual(ruleIps, [`${LB.web} 34.0.0.1`]);
    assert.deepEqual(firewallDestinations, [`k8s-fw-${LB.web} ["34.0.0.1"]`]);
  });
});

describe("components: a run's address pins (components/stack.ts, Adoption.addressPins)", () => {
  const desired = pinnedDesired();
  const address = `${R}/addresses/${LB.web}`;
  const all: Scope = { kind: "all" };

  it("a pin with reserve: that Service's <lb> declared and imported, its rule and firewall on the IP; the others as without it", async () => {
    const pins = new Map([["default/web", { ip: "34.0.0.1", reserve: true }]]);
    const pinned = await registeredIds(desired, all, new Set([address]), new Map(), pins);
    const plain = await registeredIds(desired, all, new Set());
    assert.deepEqual(pinned.ids, [...plain.ids, address].sort());
    assert.deepEqual(pinned.imported, [address]);
    assert.deepEqual(
      pinned.ruleIps.filter((rule) => rule.startsWith(LB.web)),
      [`${LB.web} 34.0.0.1`],
    );
    assert.deepEqual(
      pinned.ruleIps.filter((rule) => !rule.startsWith(LB.web)),
      plain.ruleIps.filter((rule) => !rule.startsWith(LB.web)),
    );
    assert.ok(pinned.firewallDestinations.includes(`k8s-fw-${LB.web} ["34.0.0.1"]`));
  });

  it("a pin without reserve (the release): no <lb>, the rule on the literal IP", async () => {
    const pins = new Map([["default/web", { ip: "34.0.0.1", reserve: false }]]);
    const released = await registeredIds(desired, all, new Set(), new Map(), pins);
    const plain = await registeredIds(desired, all, new Set());
    assert.deepEqual(released.ids, plain.ids);
    assert.deepEqual(
      released.ruleIps.filter((rule) => rule.startsWith(LB.web)),
      [`${LB.web} 34.0.0.1`],
    );
    assert.deepEqual(
      plain.ruleIps.filter((rule) => rule.startsWith(LB.web)),
      [`${LB.web} undefined`],
    );
  });
});

describe("adopt/report", () => {
  const report: AdoptionReport = {
    pinned: ["default/web"],
    stacks: [
      {
        stack: "cluster",
        imported: ["cluster:ig-us-central1-a", "cluster:node-hc-fw"],
        changes: [
          {
            op: "create",
            type: "gcp:compute/regionHealthCheck:RegionHealthCheck",
            name: "cluster:node-hc",
            urn: "u1",
            fields: [],
            replaceBecause: [],
          },
        ],
        leftovers: [],
      },
      {
        stack: "service.default.web",
        service: "default/web",
        promotion: {
          name: LB.web,
          region: "us-central1",
          ip: "34.0.0.1",
          addressType: "EXTERNAL",
          networkTier: "PREMIUM",
          description: "d",
        },
        imported: ["default/web:firewall", "default/web:forwarding-rule-tcp"],
        changes: [
          {
            op: "create",
            type: "gcp:compute/address:Address",
            name: "default/web:address",
            urn: "u2",
            fields: [],
            replaceBecause: [],
          },
          {
            op: "update",
            type: "gcp:compute/firewall:Firewall",
            name: "default/web:firewall",
            urn: "u3",
            fields: [{ path: "description", old: "stock", new: "dccm" }],
            replaceBecause: [],
          },
        ],
        leftovers: [],
      },
      {
        stack: "service.default.ilb",
        service: "default/ilb",
        imported: [],
        changes: [
          {
            op: "replace",
            type: "gcp:compute/route:Route",
            name: "r",
            urn: "u4",
            fields: [{ path: "priority", old: 900, new: 1000 }],
            replaceBecause: ["priority"],
          },
        ],
        leftovers: [`${G}/firewalls/k8s-c0ffee1234-node-hc`],
        refused: "would replace r (pass --allow-replace to accept)",
      },
    ],
  };

  it("prints each stack's promotion, imports, changes field by field and leftovers, then the counts", () => {
    assert.equal(
      formatAdoption(report, true),
      [
        "Service default/web: would be pinned to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)",
        "Cluster (stack cluster): would be adopted",
        "  import cluster:ig-us-central1-a",
        "  import cluster:node-hc-fw",
        "  create RegionHealthCheck cluster:node-hc",
        "Service default/web (stack service.default.web): would be adopted",
        `  promote 34.0.0.1 (ephemeral, in use by forwarding rule ${LB.web}) to static Address ${LB.web}`,
        "  import default/web:firewall",
        "  import default/web:forwarding-rule-tcp",
        "  update Firewall default/web:firewall",
        '      description: "stock" → "dccm"',
        "Service default/ilb (stack service.default.ilb): not adopted: would replace r (pass --allow-replace to accept)",
        "  replace Route r because priority",
        "      priority: 900 → 1000",
        `  leave ${G}/firewalls/k8s-c0ffee1234-node-hc (the stock CCM's name, which dccm does not use; delete it once the Service is served)`,
        "Adoption: 1 addresses to promote, 4 to import, 1 to update in place, 1 to replace, 1 to create, 1 stacks refused",
        "",
      ].join("\n"),
    );
    assert.deepEqual(summarizeAdoption(report), {
      promote: 1,
      import: 4,
      update: 1,
      replace: 1,
      create: 1,
      refused: 1,
    });
    assert.match(formatAdoption(report, false), /^Service default\/web: pinned to its target pool/);
  });
});

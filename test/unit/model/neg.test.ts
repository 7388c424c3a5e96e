// Backend `neg` (docs/guides/services.md, "NEG backends and subsetting"): how a Service asks for it,
// its NEGs in the cluster stack and its backend service's list of them, the nodes grouped by
// (zone, subnetwork) in both modes, the notices, and what a node's entry changes.
import * as assert from "node:assert/strict";

import { desiredState } from "../../../model/desired";
import { DesiredCache, stackHashes } from "../../../model/desiredCache";
import {
  instanceGroupIndex,
  instanceGroupKey,
  isNegOf,
  negName,
  parseInstanceGroupName,
  subnetInstanceGroupName,
  subnetworkHash,
} from "../../../model/names";
import {
  NOTHING_OBSERVED,
  type Config,
  type DesiredState,
  type NegSpec,
  type NodeInfo,
  type ObservedCloud,
  type Rejection,
  type ServiceInfo,
} from "../../../model/types";
import { CONFIG, externalServiceDesired, gceNode, lbService, ZONE } from "../../support/builders";

const A = "us-central1-a";
const B = "us-central1-b";
const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const LB = "a0f1e2d3c4b5a49788695a4b3c2d1e0f";
const KEY = "default/svc";
const DESCRIPTION = '{"kubernetes.io/service-name":"default/svc"}';
/** printf other-subnet | sha256sum | cut -c1-8 */
const OTHER_HASH = "eb0aa583";

let uidCount = 0;
function node(name: string, zone: string, ip: string | undefined, over: Partial<NodeInfo> = {}): NodeInfo {
  uidCount += 1;
  return gceNode(name, `00000000-0000-4000-8000-0000000001${String(uidCount).padStart(2, "0")}`, zone, [], {
    ...(ip !== undefined ? { internalIP: ip } : {}),
    ...over,
  });
}

const N1 = node("n1", A, "10.0.0.1");
const N2 = node("n2", A, "10.0.0.2", { labels: { [ZONE]: A, pool: "edge" } });
const N3 = node("n3", B, "10.0.1.3", { labels: { [ZONE]: B, pool: "edge" } });
const NO_IP = node("n4", B, undefined);
const NODES = [N1, N2, N3, NO_IP];

function svc(over: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", "svc", UID, { ...over });
}

function neg(annotations: Record<string, string> = {}, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return svc({ annotations: { "dccm.io/backend": "neg", ...annotations }, ...over });
}

function run(
  services: ServiceInfo[],
  config: Partial<Config> = {},
  observed: ObservedCloud = NOTHING_OBSERVED,
  nodes: NodeInfo[] = NODES,
): DesiredState {
  return desiredState({ nodes, services }, { ...CONFIG, ...config }, observed);
}

function rejections(service: ServiceInfo, config: Partial<Config> = {}): [string, string][] {
  const state = run([service], config);
  assert.deepStrictEqual(state.services, []);
  return state.rejected.map((r: Rejection) => [r.field, r.message]);
}

function negSpec(zone: string, name: string, subnetwork: string, endpoints: [string, string][]): NegSpec {
  return {
    name,
    zone,
    subnetwork,
    service: KEY,
    description: DESCRIPTION,
    endpoints: endpoints.map(([instance, ipAddress]) => ({ instance, ipAddress })),
  };
}

describe("model: backend neg, how a Service asks for it", () => {
  const cases: [string, ServiceInfo, Partial<Config>, { backend: string; scheme: string }][] = [
    ["annotation neg, external", neg(), {}, { backend: "neg", scheme: "EXTERNAL" }],
    [
      "annotation neg, internal",
      neg({ "networking.gke.io/load-balancer-type": "Internal" }),
      {},
      { backend: "neg", scheme: "INTERNAL" },
    ],
    ["config backendMode neg, external", svc(), { backendMode: "neg" }, { backend: "neg", scheme: "EXTERNAL" }],
    [
      "config backendMode neg, internal",
      svc({ annotations: { "networking.gke.io/load-balancer-type": "Internal" } }),
      { backendMode: "neg" },
      { backend: "neg", scheme: "INTERNAL" },
    ],
    [
      "config backendMode target-pool, internal: instance groups, as before",
      svc({ annotations: { "networking.gke.io/load-balancer-type": "Internal" } }),
      { backendMode: "target-pool" },
      { backend: "backend-service", scheme: "INTERNAL" },
    ],
    [
      "class networking.gke.io/l4-regional-internal, listed: neg, internal",
      svc({ loadBalancerClass: "networking.gke.io/l4-regional-internal" }),
      { loadBalancerClasses: ["networking.gke.io/l4-regional-internal"] },
      { backend: "neg", scheme: "INTERNAL" },
    ],
    [
      "class networking.gke.io/l4-regional-external, listed: neg, external (annotation neg agrees)",
      svc({ loadBalancerClass: "networking.gke.io/l4-regional-external", annotations: { "dccm.io/backend": "neg" } }),
      { loadBalancerClasses: ["networking.gke.io/l4-regional-external"], backendMode: "target-pool" },
      { backend: "neg", scheme: "EXTERNAL" },
    ],
  ];
  for (const [name, service, config, want] of cases) {
    it(name, () => {
      const state = run([service], config);
      assert.deepStrictEqual(state.rejected, []);
      assert.deepStrictEqual(
        state.services.map((s) => ({ backend: s.backend, scheme: s.scheme })),
        [want],
      );
    });
  }

  it("a GKE class not listed in loadBalancerClasses is another controller's: ignored", () => {
    const state = run([svc({ loadBalancerClass: "networking.gke.io/l4-regional-internal" })]);
    assert.deepStrictEqual([state.services, state.rejected], [[], []]);
  });

  const refused: [string, ServiceInfo, Partial<Config>, [string, string][]][] = [
    [
      "class internal, annotation External",
      svc({
        loadBalancerClass: "networking.gke.io/l4-regional-internal",
        annotations: { "networking.gke.io/load-balancer-type": "External" },
      }),
      { loadBalancerClasses: ["networking.gke.io/l4-regional-internal"] },
      [
        [
          "metadata.annotations[networking.gke.io/load-balancer-type]",
          "Service default/svc: metadata.annotations[networking.gke.io/load-balancer-type]: says External, but spec.loadBalancerClass networking.gke.io/l4-regional-internal is internal",
        ],
      ],
    ],
    [
      "class external, legacy annotation Internal",
      svc({
        loadBalancerClass: "networking.gke.io/l4-regional-external",
        annotations: { "cloud.google.com/load-balancer-type": "internal" },
      }),
      { loadBalancerClasses: ["networking.gke.io/l4-regional-external"] },
      [
        [
          "metadata.annotations[cloud.google.com/load-balancer-type]",
          "Service default/svc: metadata.annotations[cloud.google.com/load-balancer-type]: says Internal, but spec.loadBalancerClass networking.gke.io/l4-regional-external is external",
        ],
      ],
    ],
    [
      "class external, annotation backend-service",
      svc({
        loadBalancerClass: "networking.gke.io/l4-regional-external",
        annotations: { "dccm.io/backend": "backend-service" },
      }),
      { loadBalancerClasses: ["networking.gke.io/l4-regional-external"] },
      [
        [
          "metadata.annotations[dccm.io/backend]",
          'Service default/svc: metadata.annotations[dccm.io/backend]: "backend-service" does not go with spec.loadBalancerClass networking.gke.io/l4-regional-external, which is neg',
        ],
      ],
    ],
    [
      "internal, target-pool (neg is allowed, target pools still are not)",
      svc({ annotations: { "networking.gke.io/load-balancer-type": "Internal", "dccm.io/backend": "target-pool" } }),
      {},
      [
        [
          "metadata.annotations[dccm.io/backend]",
          "Service default/svc: metadata.annotations[dccm.io/backend]: internal load balancers cannot use target pools",
        ],
      ],
    ],
    [
      "node-selector without neg",
      svc({ annotations: { "dccm.io/node-selector": "pool=edge" } }),
      {},
      [
        [
          "metadata.annotations[dccm.io/node-selector]",
          "Service default/svc: metadata.annotations[dccm.io/node-selector]: choosing nodes per Service needs backend neg (metadata.annotations[dccm.io/backend]: neg or config backendMode: neg); this Service's backend is backend-service",
        ],
      ],
    ],
    [
      "node-selector not a selector",
      neg({ "dccm.io/node-selector": "pool in edge" }),
      {},
      [
        [
          "metadata.annotations[dccm.io/node-selector]",
          'Service default/svc: metadata.annotations[dccm.io/node-selector]: "pool in edge" is not key, !key, key=value, key!=value, key in (values) or key notin (values)',
        ],
      ],
    ],
    [
      "node-selector empty",
      neg({ "dccm.io/node-selector": " " }),
      {},
      [
        [
          "metadata.annotations[dccm.io/node-selector]",
          "Service default/svc: metadata.annotations[dccm.io/node-selector]: is empty (remove the annotation to use every eligible node)",
        ],
      ],
    ],
    [
      "weighted-load-balancing other than pods-per-node",
      neg({ "networking.gke.io/weighted-load-balancing": "pods" }),
      {},
      [
        [
          "metadata.annotations[networking.gke.io/weighted-load-balancing]",
          'Service default/svc: metadata.annotations[networking.gke.io/weighted-load-balancing]: "pods" is not pods-per-node',
        ],
      ],
    ],
    [
      "spec.trafficDistribution not a string",
      neg({}, { trafficDistribution: 3 as unknown as string }),
      {},
      [
        [
          "spec.trafficDistribution",
          "Service default/svc: spec.trafficDistribution: expected a string or nothing, got 3",
        ],
      ],
    ],
  ];
  for (const [name, service, config, want] of refused) {
    it(`refused: ${name}`, () => {
      assert.deepStrictEqual(rejections(service, config), want);
    });
  }

  it("refused: no config subnetwork (a NEG names its subnetwork; the network's name is one only on an auto-mode network, and what Compute reports is unknown after a restart until it answers)", () => {
    const message =
      "Service default/svc: backend neg needs config subnetwork: the subnetwork of the nodes' network endpoint " +
      "groups (dccm does not guess it)";
    const reported: ObservedCloud = { ...NOTHING_OBSERVED, instanceSubnets: { [`${A}/n1`]: "k8s-subnet" } };
    assert.deepStrictEqual(
      [NOTHING_OBSERVED, reported].map((observed) =>
        run([neg()], { subnetwork: undefined }, observed).rejected.map((r) => [r.field, r.message]),
      ),
      [[["backends", message]], [["backends", message]]],
    );
  });
});

describe("model: backend neg, the NEGs and the backend service", () => {
  it("an external Service: one NEG per zone in the default subnetwork holding its nodes with an internal IP; the backend service lists them; a node without one is a warning", () => {
    const state = run([neg()]);
    assert.deepStrictEqual(state.rejected, []);
    assert.deepStrictEqual(state.services, [
      externalServiceDesired("default", "svc", UID, LB, [80], {
        backend: "neg",
        backendZones: [],
        backendNegs: [
          { zone: A, name: LB, subnetwork: "k8s-subnet" },
          { zone: B, name: LB, subnetwork: "k8s-subnet" },
        ],
      }),
    ]);
    assert.deepStrictEqual(state.networkEndpointGroups, [
      negSpec(A, LB, "k8s-subnet", [
        ["n1", "10.0.0.1"],
        ["n2", "10.0.0.2"],
      ]),
      negSpec(B, LB, "k8s-subnet", [["n3", "10.0.1.3"]]),
    ]);
    assert.deepStrictEqual(state.warnings, [
      "node n4: no InternalIP in status.addresses; left out of network endpoint groups",
    ]);
  });

  it("no neg Service: no networkEndpointGroups key and no warning about internal IPs (an existing cluster's state as before)", () => {
    const state = run([svc()]);
    assert.equal("networkEndpointGroups" in state, false);
    assert.equal("networkEndpointGroups" in state.cluster, false);
    assert.deepStrictEqual(state.warnings, []);
  });

  it("a NEG the NEG controller listed empty while it must hold nodes: the backend service stays on the instance groups (negsPending) until it is filled", () => {
    const pending = run(
      [neg()],
      {},
      { ...NOTHING_OBSERVED, negMembers: { [`${B}/${LB}`]: [], [`${A}/${LB}`]: ["n1"] } },
    );
    assert.deepStrictEqual(pending.services, [
      externalServiceDesired("default", "svc", UID, LB, [80], {
        backend: "neg",
        backendZones: [A, B],
        backendNegs: [
          { zone: A, name: LB, subnetwork: "k8s-subnet" },
          { zone: B, name: LB, subnetwork: "k8s-subnet" },
        ],
        negsPending: true,
      }),
    ]);
    // The endpoints to fill it with are the same.
    assert.deepStrictEqual(pending.networkEndpointGroups, run([neg()]).networkEndpointGroups);
    const filled = run(
      [neg()],
      {},
      { ...NOTHING_OBSERVED, negMembers: { [`${B}/${LB}`]: ["n3"], [`${A}/${LB}`]: ["n1", "n2"] } },
    );
    assert.equal(filled.services[0].negsPending, undefined);
    assert.deepStrictEqual(filled.services[0].backendZones, []);
  });

  it("not pending: a NEG not listed yet (after a start), or listed empty when it must stay empty", () => {
    assert.equal(run([neg()]).services[0].negsPending, undefined);
    const picky = neg({ "dccm.io/node-selector": "pool in (edge), !gpu" });
    const observed = { ...NOTHING_OBSERVED, negMembers: { [`${A}/${LB}`]: ["n2"], [`${B}/${LB}`]: ["n3"] } };
    assert.equal(run([picky], {}, observed).services[0].negsPending, undefined);
  });

  it("dccm.io/node-selector narrows the nodes; a zone without a selected node has no NEG", () => {
    const state = run([neg({ "dccm.io/node-selector": "pool in (edge), !gpu" })]);
    assert.deepStrictEqual(state.networkEndpointGroups, [
      negSpec(A, LB, "k8s-subnet", [["n2", "10.0.0.2"]]),
      negSpec(B, LB, "k8s-subnet", [["n3", "10.0.1.3"]]),
    ]);
    const none = run([neg({ "dccm.io/node-selector": "pool=core" })]);
    assert.equal(none.networkEndpointGroups, undefined);
    assert.deepStrictEqual(none.services[0].backendNegs, []);
  });

  it("several subnetworks: a zone's nodes of another subnetwork get a NEG of their own, <lb>-<8 hex of sha256(subnetwork)>", () => {
    const observed: ObservedCloud = { ...NOTHING_OBSERVED, instanceSubnets: { [`${A}/n2`]: "other-subnet" } };
    const state = run([neg()], {}, observed);
    assert.deepStrictEqual(state.services[0].backendNegs, [
      { zone: A, name: LB, subnetwork: "k8s-subnet" },
      { zone: A, name: `${LB}-${OTHER_HASH}`, subnetwork: "other-subnet" },
      { zone: B, name: LB, subnetwork: "k8s-subnet" },
    ]);
    assert.deepStrictEqual(state.networkEndpointGroups, [
      negSpec(A, LB, "k8s-subnet", [["n1", "10.0.0.1"]]),
      negSpec(A, `${LB}-${OTHER_HASH}`, "other-subnet", [["n2", "10.0.0.2"]]),
      negSpec(B, LB, "k8s-subnet", [["n3", "10.0.1.3"]]),
    ]);
  });

  it("an internal Service (ETP Cluster) holds 25 nodes; those its NEGs held stay (ObservedCloud.negMembers) whatever the hash order", () => {
    const many = Array.from({ length: 30 }, (_, i) => node(`m${String(i).padStart(2, "0")}`, A, `10.1.0.${i}`));
    const internal = neg({ "networking.gke.io/load-balancer-type": "Internal" });
    const first = run([internal], {}, NOTHING_OBSERVED, many);
    const members = (first.networkEndpointGroups ?? [])[0].endpoints.map((e) => e.instance);
    assert.equal(members.length, 25);
    const left = many.map((n) => n.name).filter((name) => !members.includes(name));
    // Held before: the five left out, and twenty of the others.
    const held = [...left, ...members.slice(0, 20)].sort();
    const again = run([internal], {}, { ...NOTHING_OBSERVED, negMembers: { [`${A}/${LB}`]: held } }, many);
    assert.deepStrictEqual(
      (again.networkEndpointGroups ?? [])[0].endpoints.map((e) => e.instance),
      held,
    );
    assert.deepStrictEqual(again.services[0].notices, undefined);
  });

  it("ETP Local with more eligible nodes than the subset: a SubsetTruncated notice (stable as nodes come and go)", () => {
    const many = Array.from({ length: 252 }, (_, i) => node(`l${String(i).padStart(3, "0")}`, A, `10.2.0.${i % 250}`));
    const local = neg(
      { "networking.gke.io/load-balancer-type": "Internal" },
      { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 },
    );
    const state = run([local], {}, NOTHING_OBSERVED, many);
    assert.equal((state.networkEndpointGroups ?? [])[0].endpoints.length, 250);
    assert.deepStrictEqual(state.services[0].notices, [
      {
        reason: "SubsetTruncated",
        message:
          "externalTrafficPolicy Local: the load balancer reaches a subset of 250 of the eligible nodes (GCE_VM_IP subsetting); pods on nodes outside it get no traffic from it (dccm does not read EndpointSlices)",
      },
    ]);
    const fewer = stackHashes(run([local], {}, NOTHING_OBSERVED, many.slice(1)));
    assert.equal(fewer.get("service.default.svc"), stackHashes(state).get("service.default.svc"));
  });

  it("traffic policies: zonal affinity (internal neg, PreferSameZone or PreferClose); weighted load balancing (external neg, ETP Local), else an UnsupportedConfiguration notice", () => {
    const internal = { "networking.gke.io/load-balancer-type": "Internal" };
    const pick = (s: ServiceInfo, config: Partial<Config> = {}): unknown => {
      const d = run([s], config).services[0];
      return [d.zonalAffinity, d.weightedLoadBalancing, d.notices];
    };
    assert.deepStrictEqual(pick(neg(internal, { trafficDistribution: "PreferSameZone" })), [
      true,
      undefined,
      undefined,
    ]);
    assert.deepStrictEqual(pick(neg(internal, { trafficDistribution: "PreferClose" })), [true, undefined, undefined]);
    assert.deepStrictEqual(pick(neg({}, { trafficDistribution: "PreferClose" })), [undefined, undefined, undefined]);
    assert.deepStrictEqual(pick(svc({ annotations: internal, trafficDistribution: "PreferClose" })), [
      undefined,
      undefined,
      undefined,
    ]);
    const weighted = { "networking.gke.io/weighted-load-balancing": "pods-per-node" };
    assert.deepStrictEqual(pick(neg(weighted, { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 })), [
      undefined,
      true,
      undefined,
    ]);
    assert.deepStrictEqual(pick(neg(weighted)), [
      undefined,
      undefined,
      [
        {
          reason: "UnsupportedConfiguration",
          message:
            "metadata.annotations[networking.gke.io/weighted-load-balancing]: weighted load balancing needs spec.externalTrafficPolicy Local; not applied",
        },
      ],
    ]);
    assert.deepStrictEqual(
      pick(svc({ annotations: weighted, externalTrafficPolicy: "Local", healthCheckNodePort: 31000 })),
      [
        undefined,
        undefined,
        [
          {
            reason: "UnsupportedConfiguration",
            message:
              "metadata.annotations[networking.gke.io/weighted-load-balancing]: weighted load balancing needs backend neg; not applied",
          },
        ],
      ],
    );
  });
});

describe("model: nodes grouped by (zone, subnetwork), instance-group mode", () => {
  it("another subnetwork's nodes get k8s-ig--<clusterId>-<8 hex of sha256(subnetwork)>; the backend service lists every group", () => {
    const observed: ObservedCloud = { ...NOTHING_OBSERVED, instanceSubnets: { [`${A}/n2`]: "other-subnet" } };
    const state = run([svc()], {}, observed);
    assert.deepStrictEqual(state.cluster.instanceGroups, [
      {
        name: "k8s-ig--c0ffee1234",
        zone: A,
        description: '{"kubernetes.io/cluster-id":"c0ffee1234"}',
        instances: ["n1"],
      },
      {
        name: `k8s-ig--c0ffee1234-${OTHER_HASH}`,
        zone: A,
        subnetworkHash: OTHER_HASH,
        description: '{"kubernetes.io/cluster-id":"c0ffee1234"}',
        instances: ["n2"],
      },
      {
        name: "k8s-ig--c0ffee1234",
        zone: B,
        description: '{"kubernetes.io/cluster-id":"c0ffee1234"}',
        instances: ["n3", "n4"],
      },
    ]);
    assert.deepStrictEqual(state.services[0].backendGroups, [
      { zone: A, name: "k8s-ig--c0ffee1234" },
      { zone: A, name: `k8s-ig--c0ffee1234-${OTHER_HASH}`, subnetworkHash: OTHER_HASH },
      { zone: B, name: "k8s-ig--c0ffee1234" },
    ]);
  });

  it("a single-subnet cluster: the desired state is byte-identical whether Compute reported the subnetworks or not, and with or without internal IPs", () => {
    const plain = NODES.map(({ internalIP: _ip, ...rest }) => rest);
    const services = [
      svc(),
      svc({
        name: "int",
        uid: "1f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
        annotations: { "networking.gke.io/load-balancer-type": "Internal" },
      }),
    ];
    const before = JSON.stringify(desiredState({ nodes: plain, services }, CONFIG));
    const reported: ObservedCloud = {
      ...NOTHING_OBSERVED,
      instanceSubnets: { [`${A}/n1`]: "k8s-subnet", [`${A}/n2`]: "k8s-subnet", [`${B}/n3`]: "k8s-subnet" },
    };
    assert.equal(JSON.stringify(desiredState({ nodes: NODES, services }, CONFIG, reported)), before);
  });

  it("no subnetwork in the config and every node in one subnetwork not named as the network: the same groups as before Compute reported it (an upgrade renames nothing)", () => {
    const { subnetwork: _subnetwork, ...withoutSubnetwork } = CONFIG;
    const services = [svc()];
    const before = JSON.stringify(desiredState({ nodes: NODES, services }, withoutSubnetwork));
    const reported: ObservedCloud = {
      ...NOTHING_OBSERVED,
      instanceSubnets: { [`${A}/n1`]: "k8s-subnet", [`${A}/n2`]: "k8s-subnet", [`${B}/n3`]: "k8s-subnet" },
    };
    assert.equal(JSON.stringify(desiredState({ nodes: NODES, services }, withoutSubnetwork, reported)), before);
  });

  it("no subnetwork in the config and nodes in two: the network's namesake, else the first by name, keeps the plain group names", () => {
    const { subnetwork: _subnetwork, ...withoutSubnetwork } = CONFIG;
    const observed: ObservedCloud = {
      ...NOTHING_OBSERVED,
      instanceSubnets: { [`${A}/n1`]: "b-subnet", [`${A}/n2`]: "other-subnet", [`${B}/n3`]: "b-subnet" },
    };
    const state = desiredState({ nodes: NODES, services: [svc()] }, withoutSubnetwork, observed);
    const names = state.cluster.instanceGroups.map((g) => `${g.zone} ${g.name}`);
    assert.deepStrictEqual(names, [
      `${A} k8s-ig--c0ffee1234`,
      `${A} k8s-ig--c0ffee1234-${OTHER_HASH}`,
      `${B} k8s-ig--c0ffee1234`,
    ]);
  });

  it("an internal Service over 250 VMs of instance groups: a BackendLimit notice; at 250, none", () => {
    const fleet = (count: number): NodeInfo[] =>
      Array.from({ length: count }, (_, i) => node(`v${String(i).padStart(3, "0")}`, i % 2 === 0 ? A : B, undefined));
    const internal = svc({ annotations: { "networking.gke.io/load-balancer-type": "Internal" } });
    assert.deepStrictEqual(run([internal], {}, NOTHING_OBSERVED, fleet(251)).services[0].notices, [
      {
        reason: "BackendLimit",
        message:
          "internal passthrough load balancers distribute to at most 250 VMs with instance-group backends, and this Service's instance groups hold more: some nodes get no traffic; set backendMode: neg (config, or annotation dccm.io/backend: neg) to serve it from a subset of at most 250 nodes",
      },
    ]);
    assert.equal(run([internal], {}, NOTHING_OBSERVED, fleet(250)).services[0].notices, undefined);
    assert.equal(run([svc()], {}, NOTHING_OBSERVED, fleet(251)).services[0].notices, undefined);
  });
});

describe("model: a node's entry in neg mode changes the cluster stack only", () => {
  const services = [
    neg(),
    neg(
      { "networking.gke.io/load-balancer-type": "Internal", "dccm.io/node-selector": "pool=edge" },
      {
        name: "int",
        uid: "1f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
      },
    ),
    svc({
      name: "local",
      uid: "2f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 31000,
    }),
  ];
  const joiner = node("n5", B, "10.0.1.5", { labels: { [ZONE]: B, pool: "edge" } });

  it("desiredState: after n5 joins zone b, every Service stack's hash is what it was; the cluster stack's moved", () => {
    const before = stackHashes(run(services, { backendMode: "neg" }));
    const after = stackHashes(run(services, { backendMode: "neg" }, NOTHING_OBSERVED, [...NODES, joiner]));
    assert.deepStrictEqual([...after.keys()], [...before.keys()]);
    for (const [stack, hash] of before) if (stack !== "cluster") assert.equal(after.get(stack), hash, stack);
    assert.notEqual(after.get("cluster"), before.get("cluster"));
  });

  it("DesiredCache: n5 joining (and leaving) is one change, the cluster stack's", () => {
    const cache = new DesiredCache({ ...CONFIG, backendMode: "neg" });
    cache.update({ nodes: NODES, services });
    assert.deepStrictEqual(
      cache.update({ nodes: [...NODES, joiner], services }).map((c) => c.stack),
      ["cluster"],
    );
    assert.deepStrictEqual(
      cache.update({ nodes: NODES, services }).map((c) => c.stack),
      ["cluster"],
    );
  });
});

describe("model/names: NEG and subnetwork group names", () => {
  it("negName: the load balancer's name in the default subnetwork, <lb>-<8 hex> in another; isNegOf knows both", () => {
    assert.equal(negName(LB, "k8s-subnet", "k8s-subnet"), LB);
    assert.equal(negName(LB, "other-subnet", "k8s-subnet"), `${LB}-${OTHER_HASH}`);
    assert.equal(subnetworkHash("other-subnet"), OTHER_HASH);
    assert.deepStrictEqual(
      [LB, `${LB}-${OTHER_HASH}`, `${LB}-udp`, `${LB}x`, "a0f1e2d3c4b5a49788695a4b3c2d1e0e"].map((n) => isNegOf(LB, n)),
      [true, true, false, false, false],
    );
  });

  it("subnetInstanceGroupName: k8s-ig--<id>-<8 hex>, numbered k8s-ig<n>--<id>-<8 hex>, the cluster ID cut to fit 63; parseInstanceGroupName reads them all back", () => {
    const id46 = "c".repeat(46);
    const rows: [string, number, string][] = [
      ["c0ffee1234", 1, `k8s-ig--c0ffee1234-${OTHER_HASH}`],
      ["c0ffee1234", 2, `k8s-ig2--c0ffee1234-${OTHER_HASH}`],
      [id46, 1, `k8s-ig--${id46}-${OTHER_HASH}`],
      [id46, 12, `k8s-ig12--${"c".repeat(44)}-${OTHER_HASH}`],
    ];
    for (const [id, index, name] of rows) {
      assert.equal(subnetInstanceGroupName(id, "other-subnet", index), name);
      assert.ok(name.length <= 63);
      assert.deepStrictEqual(parseInstanceGroupName(id, name), { index, subnetHash: OTHER_HASH });
    }
    assert.deepStrictEqual(parseInstanceGroupName("c0ffee1234", "k8s-ig--c0ffee1234"), { index: 1, subnetHash: "" });
    assert.deepStrictEqual(parseInstanceGroupName("c0ffee1234", "k8s-ig3--c0ffee1234"), { index: 3, subnetHash: "" });
    assert.equal(parseInstanceGroupName("c0ffee1234", "k8s-ig--c0ffee12345"), undefined);
    assert.equal(parseInstanceGroupName("c0ffee1234", "k8s-ig1--c0ffee1234"), undefined);
    assert.equal(instanceGroupIndex("c0ffee1234", `k8s-ig--c0ffee1234-${OTHER_HASH}`), undefined);
  });

  it("instanceGroupKey: the zone for the default subnetwork's first group only", () => {
    assert.deepStrictEqual(
      [
        { zone: A, name: "k8s-ig--c0ffee1234" },
        { zone: A, name: "k8s-ig2--c0ffee1234", index: 2 },
        { zone: A, name: `k8s-ig--c0ffee1234-${OTHER_HASH}`, subnetworkHash: OTHER_HASH },
      ].map(instanceGroupKey),
      [A, `${A}/k8s-ig2--c0ffee1234`, `${A}/k8s-ig--c0ffee1234-${OTHER_HASH}`],
    );
  });
});

describe("model: a 600-node cluster in neg mode (what `dccm render` declares)", () => {
  const ZONES = ["us-central1-a", "us-central1-b", "us-central1-c"];
  const fleet: NodeInfo[] = Array.from({ length: 600 }, (_, i) =>
    node(`v${String(i).padStart(3, "0")}`, ZONES[i % 3], `10.1.${Math.floor(i / 200)}.${i % 200}`),
  );
  const INTERNAL = { "networking.gke.io/load-balancer-type": "Internal" };
  const LOCAL = { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 };
  const services = [
    lbService("default", "int-cluster", "11000000-0000-4000-8000-000000000000", { annotations: INTERNAL }),
    lbService("default", "int-local", "12000000-0000-4000-8000-000000000000", { annotations: INTERNAL, ...LOCAL }),
    lbService("default", "ext-cluster", "13000000-0000-4000-8000-000000000000"),
    lbService("default", "ext-local", "14000000-0000-4000-8000-000000000000", LOCAL),
  ];
  const state = desiredState({ nodes: fleet, services }, { ...CONFIG, backendMode: "neg" });
  const endpointsPerZone = (key: string): number[] =>
    ZONES.map((zone) =>
      (state.networkEndpointGroups ?? [])
        .filter((group) => group.service === key && group.zone === zone)
        .reduce((sum, group) => sum + group.endpoints.length, 0),
    );

  it("each Service's NEGs hold ingress-gce's subset size, spread evenly over the three zones; no internal one over 250", () => {
    assert.deepStrictEqual(
      Object.fromEntries(
        services.map((s) => [`${s.namespace}/${s.name}`, endpointsPerZone(`${s.namespace}/${s.name}`)]),
      ),
      {
        "default/int-cluster": [8, 8, 9],
        "default/int-local": [83, 83, 84],
        "default/ext-cluster": [83, 83, 84],
        "default/ext-local": [200, 200, 200],
      },
    );
    for (const service of state.services) {
      assert.equal(service.backend, "neg", service.key);
      assert.deepStrictEqual(
        service.backendNegs?.map((ref) => ref.zone),
        ZONES,
        `${service.key}: one NEG per zone, in the config's subnetwork`,
      );
    }
  });

  it("only the internal ETP=Local Service, whose 600 eligible nodes exceed its subset, carries SubsetTruncated", () => {
    assert.deepStrictEqual(
      state.services.map((s) => [s.key, (s.notices ?? []).map((n) => n.reason)]),
      [
        ["default/ext-cluster", []],
        ["default/ext-local", []],
        ["default/int-cluster", []],
        ["default/int-local", ["SubsetTruncated"]],
      ],
    );
  });
});

// Tier 2: GCE_VM_IP NEG backends (issue 41) under pulumi.runtime.setMocks: the cluster stack's NEGs
// and endpoint lists, a `neg` Service's backend services, and what both record in their outputs.
import * as assert from "node:assert/strict";

import * as pulumi from "@pulumi/pulumi";

import { capture as captureUnderMocks, nameOf, type Captured } from "../../support/fakes/pulumiMocks";

import { ClusterNetwork } from "../../../components/clusterNetwork";
import { ServiceLoadBalancer, type ClusterRefs } from "../../../components/serviceLoadBalancer";
import { declareStack } from "../../../components/stack";
import { declaredResourceIds, gceResourceId } from "../../../gce/ids";
import { stackSlice } from "../../../components/outputs";
import type { ClusterDesired, DesiredState, NegSpec, ServiceDesired } from "../../../model/types";
import {
  backendServiceInputs,
  externalServiceDesired,
  fixtureCluster,
  IG_A,
  IG_B,
  NETWORK,
  NODE_HC,
  PROJECT,
  REGION,
  V1,
} from "../../support/builders";

const MOCK_LINK = "https://mock.test";

function mockState(type: string, inputs: Record<string, unknown>): { id: string; state: Record<string, unknown> } {
  const name = typeof inputs.name === "string" ? inputs.name : "";
  const state: Record<string, unknown> = { ...inputs, selfLink: `${MOCK_LINK}/${type}/${name}` };
  if (type === "gcp:compute/forwardingRule:ForwardingRule" && inputs.ipAddress === undefined)
    state.ipAddress = "198.51.100.77";
  if (type === "gcp:compute/address:Address") state.address = "198.51.100.5";
  return { id: `${type}/${name}`, state };
}

function capture<T extends pulumi.Resource>(build: (opts: pulumi.ComponentResourceOptions) => T): Promise<Captured<T>> {
  return captureUnderMocks(mockState, build);
}

function value<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

const T = {
  neg: "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
  endpoints: "gcp:compute/networkEndpointList:NetworkEndpointList",
  backendService: "gcp:compute/regionBackendService:RegionBackendService",
} as const;

const LB = "a1b4e28ba2fa141d2883f0016d3cca42";
const UID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
const NEG_DESCRIPTION = '{"kubernetes.io/service-name":"default/web"}';

const NEGS: NegSpec[] = [
  {
    name: LB,
    zone: "us-central1-a",
    subnetwork: "k8s-subnet",
    service: "default/web",
    description: NEG_DESCRIPTION,
    endpoints: [
      { instance: "node-a1", ipAddress: "10.0.0.11" },
      { instance: "node-a2", ipAddress: "10.0.0.12" },
    ],
  },
  {
    name: `${LB}-0badcafe`,
    zone: "us-central1-a",
    subnetwork: "k8s-subnet-2",
    service: "default/web",
    description: NEG_DESCRIPTION,
    endpoints: [{ instance: "node-a3", ipAddress: "10.1.0.13" }],
  },
  {
    name: LB,
    zone: "us-central1-b",
    subnetwork: "k8s-subnet",
    service: "default/web",
    description: NEG_DESCRIPTION,
    endpoints: [],
  },
];

function negInputs(neg: NegSpec, description = NEG_DESCRIPTION): Record<string, unknown> {
  return {
    project: PROJECT,
    zone: neg.zone,
    name: neg.name,
    description,
    networkEndpointType: "GCE_VM_IP",
    network: `projects/${PROJECT}/global/networks/${NETWORK}`,
    subnetwork: `projects/${PROJECT}/regions/${REGION}/subnetworks/${neg.subnetwork}`,
  };
}

function endpointListInputs(neg: NegSpec): Record<string, unknown> {
  return {
    project: PROJECT,
    zone: neg.zone,
    networkEndpointGroup: neg.name,
    networkEndpoints: neg.endpoints.map((endpoint) => ({ instance: endpoint.instance, ipAddress: endpoint.ipAddress })),
  };
}

const NEG_LINK = (zone: string, name: string): string => `${V1}/zones/${zone}/networkEndpointGroups/${name}`;

describe("components: GCE_VM_IP NEG backends (Pulumi mocks)", () => {
  describe("ClusterNetwork with networkEndpointGroups", () => {
    const cluster: ClusterDesired = { ...fixtureCluster([]), networkEndpointGroups: NEGS };
    let captured: Captured<ClusterNetwork>;
    before(async () => {
      captured = await capture((opts) => new ClusterNetwork("cluster", { cluster }, opts));
    });

    it("declares today's set plus, per NEG, a NetworkEndpointGroup and its NetworkEndpointList", () => {
      assert.deepStrictEqual(
        captured.registered.map((r) => [r.type, r.name]).sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)),
        [
          ["dccm:gcp:ClusterNetwork", "cluster"],
          ["gcp:compute/instanceGroup:InstanceGroup", "cluster:ig-us-central1-a"],
          ["gcp:compute/instanceGroup:InstanceGroup", "cluster:ig-us-central1-b"],
          [T.neg, `cluster:neg-us-central1-a-${LB}`],
          [T.neg, `cluster:neg-us-central1-a-${LB}-0badcafe`],
          [T.endpoints, `cluster:neg-us-central1-a-${LB}-0badcafe-endpoints`],
          [T.endpoints, `cluster:neg-us-central1-a-${LB}-endpoints`],
          [T.neg, `cluster:neg-us-central1-b-${LB}`],
          [T.endpoints, `cluster:neg-us-central1-b-${LB}-endpoints`],
          ["gcp:compute/regionHealthCheck:RegionHealthCheck", "cluster:node-hc"],
          ["gcp:compute/firewall:Firewall", "cluster:node-hc-fw"],
        ],
      );
    });

    it("exact inputs: GCE_VM_IP in the NEG's zone, network and subnetwork as relative URLs; endpoints {instance, ipAddress}, no port", () => {
      for (const neg of NEGS) {
        const group = captured.registered.find((r) => r.name === `cluster:neg-${neg.zone}-${neg.name}`);
        assert.deepStrictEqual(group?.inputs, negInputs(neg));
        const list = captured.registered.find((r) => r.name === `cluster:neg-${neg.zone}-${neg.name}-endpoints`);
        assert.deepStrictEqual(list?.inputs, endpointListInputs(neg));
      }
    });

    it("options: a NEG is parented to the component and ignores its description; its list is parented to the NEG", () => {
      const negs = captured.constructions.filter((c) => c.type === T.neg);
      assert.equal(negs.length, 3);
      for (const construction of negs) {
        assert.equal(construction.parent, captured.component);
        assert.equal(construction.deleteBeforeReplace, true);
        assert.deepStrictEqual(construction.ignoreChanges, ["description"]);
      }
      const lists = captured.constructions.filter((c) => c.type === T.endpoints);
      assert.deepStrictEqual(
        lists.map((c) => [c.name, c.parent === undefined ? undefined : nameOf(c.parent)]),
        [
          [`cluster:neg-us-central1-a-${LB}-endpoints`, `cluster:neg-us-central1-a-${LB}`],
          [`cluster:neg-us-central1-a-${LB}-0badcafe-endpoints`, `cluster:neg-us-central1-a-${LB}-0badcafe`],
          [`cluster:neg-us-central1-b-${LB}-endpoints`, `cluster:neg-us-central1-b-${LB}`],
        ],
      );
    });

    it("outputs: every NEG's self link and members by <zone>/<name>", async () => {
      const network = captured.component;
      assert.deepStrictEqual(network.networkEndpointGroupMembers, {
        [`us-central1-a/${LB}`]: ["node-a1", "node-a2"],
        [`us-central1-a/${LB}-0badcafe`]: ["node-a3"],
        [`us-central1-b/${LB}`]: [],
      });
      assert.equal(await value(network.networkEndpointGroups[`us-central1-b/${LB}`]), `${MOCK_LINK}/${T.neg}/${LB}`);
    });

    it("the owner marker goes into a NEG's description", async () => {
      const owned = await capture(
        (opts) =>
          new ClusterNetwork(
            "cluster",
            { cluster, owner: { clusterId: "c0ffee1234", clusterUid: "5f0d6c1e-0000-4000-8000-000000000001" } },
            opts,
          ),
      );
      const group = owned.registered.find((r) => r.name === `cluster:neg-us-central1-b-${LB}`);
      assert.deepStrictEqual(
        group?.inputs,
        negInputs(
          NEGS[2],
          '{"kubernetes.io/service-name":"default/web","dccm.io/cluster-id":"c0ffee1234","dccm.io/cluster-uid":"5f0d6c1e-0000-4000-8000-000000000001"}',
        ),
      );
    });
  });

  describe("upgrade: a desired state without networkEndpointGroups", () => {
    function desired(cluster: ClusterDesired): DesiredState {
      return { cluster, services: [], rejected: [], warnings: [] };
    }

    it("the cluster stack registers exactly today's set and records today's outputs", async () => {
      let keys: string[] = [];
      const captured = await capture((opts) => {
        const declared = declareStack(desired(fixtureCluster([])), { kind: "cluster" }, undefined, undefined);
        keys = Object.keys(declared.outputs).sort();
        return new pulumi.ComponentResource("test:Root", "root", {}, opts);
      });
      assert.deepStrictEqual(captured.registered.map((r) => [r.type, r.name]).sort(), [
        ["dccm:gcp:ClusterNetwork", "cluster"],
        ["gcp:compute/firewall:Firewall", "cluster:node-hc-fw"],
        ["gcp:compute/instanceGroup:InstanceGroup", "cluster:ig-us-central1-a"],
        ["gcp:compute/instanceGroup:InstanceGroup", "cluster:ig-us-central1-b"],
        ["gcp:compute/regionHealthCheck:RegionHealthCheck", "cluster:node-hc"],
        ["test:Root", "root"],
      ]);
      assert.deepStrictEqual(keys, ["instanceGroupMembers", "instanceGroups", "loadBalancers", "routes"]);
    });

    it("gce/ids: declaredResourceIds of a cluster with NEGs is exactly what the program registers with a GCE name (an endpoint list has none)", async () => {
      const withNegs = desired({ ...fixtureCluster([]), networkEndpointGroups: NEGS });
      const captured = await capture((opts) => {
        declareStack(withNegs, { kind: "cluster" }, undefined, undefined);
        return new pulumi.ComponentResource("test:Root", "root", {}, opts);
      });
      const custom = captured.registered.filter((r) => r.custom);
      assert.deepEqual(
        custom.filter((r) => gceResourceId(r.type, r.inputs) === undefined).map((r) => r.type),
        [T.endpoints, T.endpoints, T.endpoints],
      );
      const ids = custom.flatMap((r) => {
        const id = gceResourceId(r.type, r.inputs);
        return id === undefined ? [] : [id];
      });
      assert.deepEqual([...declaredResourceIds(withNegs, { kind: "cluster" })].sort(), ids.sort());
      assert.deepEqual(
        ids.filter((id) => id.includes("/networkEndpointGroups/")),
        [
          `projects/${PROJECT}/zones/us-central1-a/networkEndpointGroups/${LB}`,
          `projects/${PROJECT}/zones/us-central1-a/networkEndpointGroups/${LB}-0badcafe`,
          `projects/${PROJECT}/zones/us-central1-b/networkEndpointGroups/${LB}`,
        ],
      );
    });

    it("with NEGs the cluster stack also records networkEndpointGroupMembers", async () => {
      let members: unknown;
      await capture((opts) => {
        const declared = declareStack(
          desired({ ...fixtureCluster([]), networkEndpointGroups: NEGS }),
          { kind: "cluster" },
          undefined,
          undefined,
        );
        members = declared.outputs.networkEndpointGroupMembers;
        return new pulumi.ComponentResource("test:Root", "root", {}, opts);
      });
      assert.deepStrictEqual(members, {
        [`us-central1-a/${LB}`]: ["node-a1", "node-a2"],
        [`us-central1-a/${LB}-0badcafe`]: ["node-a3"],
        [`us-central1-b/${LB}`]: [],
      });
    });

    it("a Service stack's slice carries no NEG of the cluster (its own are in backendNegs); without NEGs the slice is as before", () => {
      const scope = { kind: "service" as const, namespace: "default", name: "web" };
      assert.deepStrictEqual(
        stackSlice(desired({ ...fixtureCluster([]), networkEndpointGroups: NEGS }), scope).cluster
          .networkEndpointGroups,
        [],
      );
      assert.equal("networkEndpointGroups" in stackSlice(desired(fixtureCluster([])), scope).cluster, false);
    });
  });

  describe("ServiceLoadBalancer with backend neg", () => {
    const REFS: ClusterRefs = {
      nodeHealthCheck: NODE_HC,
      legacyNodeHealthCheck: `${V1}/global/httpHealthChecks/k8s-c0ffee1234-node`,
      instanceGroups: { "us-central1-a": IG_A, "us-central1-b": IG_B },
    };
    const BACKEND_NEGS = [
      { zone: "us-central1-a", name: LB, subnetwork: "k8s-subnet" },
      { zone: "us-central1-a", name: `${LB}-0badcafe`, subnetwork: "k8s-subnet-2" },
      { zone: "us-central1-b", name: LB, subnetwork: "k8s-subnet" },
    ];
    const NEG_BACKENDS = BACKEND_NEGS.map((neg) => ({
      group: NEG_LINK(neg.zone, neg.name),
      balancingMode: "CONNECTION",
    }));

    function negService(over: Partial<ServiceDesired> = {}): ServiceDesired {
      return externalServiceDesired("default", "web", UID, LB, [80], {
        backend: "neg",
        backendZones: [],
        backendNegs: BACKEND_NEGS,
        ...over,
      });
    }

    function build(service: ServiceDesired, refs: ClusterRefs = REFS): Promise<Captured<ServiceLoadBalancer>> {
      return capture(
        (opts) =>
          new ServiceLoadBalancer(
            "default/web",
            { service, project: PROJECT, region: REGION, network: NETWORK, cluster: refs },
            opts,
          ),
      );
    }

    const backendsOf = (captured: Captured<ServiceLoadBalancer>) =>
      captured.registered.filter((r) => r.type === T.backendService).map((r) => [r.name, r.inputs]);

    it("external TCP: the backend service lists the NEGs by link, CONNECTION, draining 30 s; no other field changes", async () => {
      const captured = await build(negService());
      assert.deepStrictEqual(backendsOf(captured), [
        [
          "default/web:backend-tcp",
          backendServiceInputs(LB, NEG_DESCRIPTION, NODE_HC, {
            backends: NEG_BACKENDS,
            connectionDrainingTimeoutSec: 30,
          }),
        ],
      ]);
      assert.deepStrictEqual(captured.component.resources.networkEndpointGroups, [
        `us-central1-a/${LB}`,
        `us-central1-a/${LB}-0badcafe`,
        `us-central1-b/${LB}`,
      ]);
      assert.deepStrictEqual(
        captured.registered.map((r) => r.type).sort(),
        [
          "dccm:gcp:ServiceLoadBalancer",
          "gcp:compute/firewall:Firewall",
          "gcp:compute/forwardingRule:ForwardingRule",
          T.backendService,
        ].sort(),
      );
    });

    it("mixed TCP/UDP: draining 30 s on TCP, 0 on UDP", async () => {
      const captured = await build(
        negService({
          reserveAddress: true,
          frontends: [
            { name: LB, protocol: "TCP", ports: [80], portSelection: { kind: "ports", ports: ["80"] } },
            {
              name: `${LB}-udp`,
              protocol: "UDP",
              ports: [53],
              portSelection: { kind: "ports", ports: ["53"] },
            },
          ],
        }),
      );
      assert.deepStrictEqual(
        captured.registered
          .filter((r) => r.type === T.backendService)
          .map((r) => [r.name, r.inputs.protocol, r.inputs.connectionDrainingTimeoutSec]),
        [
          ["default/web:backend-tcp", "TCP", 30],
          ["default/web:backend-udp", "UDP", 0],
        ],
      );
    });

    it("internal with zonalAffinity: networkPassThroughLbTrafficPolicy spills cross-zone", async () => {
      const captured = await build(negService({ scheme: "INTERNAL", subnetwork: "k8s-subnet", zonalAffinity: true }));
      const backend = captured.registered.find((r) => r.type === T.backendService);
      assert.deepStrictEqual(backend?.inputs, {
        ...backendServiceInputs(LB, NEG_DESCRIPTION, NODE_HC, {
          loadBalancingScheme: "INTERNAL",
          network: NETWORK,
          backends: NEG_BACKENDS,
          connectionDrainingTimeoutSec: 30,
          networkPassThroughLbTrafficPolicy: { zonalAffinity: { spillover: "ZONAL_AFFINITY_SPILL_CROSS_ZONE" } },
        }),
      });
    });

    it("external with weightedLoadBalancing: localityLbPolicy WEIGHTED_MAGLEV", async () => {
      const captured = await build(negService({ weightedLoadBalancing: true }));
      const backend = captured.registered.find((r) => r.type === T.backendService);
      assert.equal(backend?.inputs.localityLbPolicy, "WEIGHTED_MAGLEV");
      assert.equal(backend?.inputs.networkPassThroughLbTrafficPolicy, undefined);
    });

    it("a NEG the same program declares is referenced by its resource's link", async () => {
      const declared = `${MOCK_LINK}/${T.neg}/${LB}`;
      const captured = await build(negService(), {
        ...REFS,
        networkEndpointGroups: { [`us-central1-b/${LB}`]: declared },
      });
      const backend = captured.registered.find((r) => r.type === T.backendService);
      assert.deepStrictEqual(backend?.inputs.backends, [
        NEG_BACKENDS[0],
        NEG_BACKENDS[1],
        { group: declared, balancingMode: "CONNECTION" },
      ]);
    });

    it("an instance-group Service: no draining, no NEG field, no networkEndpointGroups in its resources (upgrade changes nothing)", async () => {
      const captured = await build(externalServiceDesired("default", "web", UID, LB, [80]));
      const backend = captured.registered.find((r) => r.type === T.backendService);
      assert.deepStrictEqual(backend?.inputs, backendServiceInputs(LB, NEG_DESCRIPTION, NODE_HC));
      assert.equal("networkEndpointGroups" in captured.component.resources, false);
      await pulumi.runtime.disconnect();
    });
  });
});

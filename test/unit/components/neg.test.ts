// Tier 2: GCE_VM_IP NEG backends (issue 41) under pulumi.runtime.setMocks: a `neg` Service's stack
// declares its NEGs (no endpoints: the NEG controller's) and its backend services list them; the
// cluster stack declares none.
import * as assert from "node:assert/strict";

import * as pulumi from "@pulumi/pulumi";

import { capture as captureUnderMocks, nameOf, type Captured } from "../../support/fakes/pulumiMocks";

import { ServiceLoadBalancer, type ClusterRefs } from "../../../components/serviceLoadBalancer";
import { clusterRefsByName, declareStack } from "../../../components/stack";
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

const T = {
  neg: "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
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

/** The mock's self link of a NEG the component declares. */
const NEG_LINK = (name: string): string => `${MOCK_LINK}/${T.neg}/${name}`;

describe("components: GCE_VM_IP NEG backends (Pulumi mocks)", () => {
  describe("stacks and IDs", () => {
    const WEB = externalServiceDesired("default", "web", UID, LB, [80], {
      backend: "neg",
      backendZones: [],
      backendNegs: NEGS.map(({ zone, name, subnetwork }) => ({ zone, name, subnetwork })),
    });
    function desired(cluster: ClusterDesired, services: ServiceDesired[] = []): DesiredState {
      return {
        cluster,
        services,
        rejected: [],
        warnings: [],
        ...(services.length > 0 ? { networkEndpointGroups: NEGS } : {}),
      };
    }

    it("the cluster stack of a cluster with neg Services registers exactly the set and records the outputs it has without them", async () => {
      let keys: string[] = [];
      const captured = await capture((opts) => {
        const declared = declareStack(desired(fixtureCluster([]), [WEB]), { kind: "cluster" }, undefined, undefined);
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

    it("gce/ids: declaredResourceIds of a neg Service's stack is exactly what its program registers, its NEGs included", async () => {
      const scope = { kind: "service" as const, namespace: "default", name: "web" };
      const state = desired(fixtureCluster([]), [WEB]);
      const captured = await capture((opts) => {
        declareStack(stackSlice(state, scope), scope, undefined, undefined);
        return new pulumi.ComponentResource("test:Root", "root", {}, opts);
      });
      const ids = captured.registered
        .filter((r) => r.custom)
        .flatMap((r) => {
          const id = gceResourceId(r.type, r.inputs);
          return id === undefined ? [] : [id];
        });
      assert.deepEqual([...declaredResourceIds(state, scope)].sort(), ids.sort());
      assert.deepEqual(ids.filter((id) => id.includes("/networkEndpointGroups/")).sort(), [
        `projects/${PROJECT}/zones/us-central1-a/networkEndpointGroups/${LB}`,
        `projects/${PROJECT}/zones/us-central1-a/networkEndpointGroups/${LB}-0badcafe`,
        `projects/${PROJECT}/zones/us-central1-b/networkEndpointGroups/${LB}`,
      ]);
    });

    it("a Service stack's slice carries its own NEGs' endpoints only (which only the stack program from CI declares)", () => {
      const scope = { kind: "service" as const, namespace: "default", name: "web" };
      const other: NegSpec = { ...NEGS[0], name: "a0ther", service: "default/other" };
      const state = { ...desired(fixtureCluster([]), [WEB]), networkEndpointGroups: [...NEGS, other] };
      const slice = stackSlice(state, scope);
      assert.deepStrictEqual(slice.networkEndpointGroups, NEGS);
      assert.deepStrictEqual(slice.services, [WEB]);
      assert.equal("networkEndpointGroups" in stackSlice(desired(fixtureCluster([])), scope), false);
    });

    it("the stack program from CI (negEndpoints: stack) declares each NEG's endpoints as a NetworkEndpointList under it; the daemon's (controller) none", async () => {
      const scope = { kind: "service" as const, namespace: "default", name: "web" };
      const state = desired(fixtureCluster([]), [WEB]);
      const fromCi = await capture((opts) => {
        declareStack(stackSlice(state, scope), scope, undefined, undefined, "stack");
        return new pulumi.ComponentResource("test:Root", "root", {}, opts);
      });
      const lists = fromCi.registered.filter((r) => r.type === "gcp:compute/networkEndpointList:NetworkEndpointList");
      const byName = (a: [string, unknown], b: [string, unknown]): number => (a[0] < b[0] ? -1 : 1);
      assert.deepStrictEqual(
        lists.map((r): [string, unknown] => [r.name, r.inputs]).sort(byName),
        NEGS.map((neg): [string, unknown] => [
          `default/web:neg-${neg.zone}-${neg.name}-endpoints`,
          {
            project: PROJECT,
            zone: neg.zone,
            networkEndpointGroup: neg.name,
            networkEndpoints: neg.endpoints.map(({ instance, ipAddress }) => ({ instance, ipAddress })),
          },
        ]).sort(byName),
      );
      const direct = await capture(
        (opts) =>
          new ServiceLoadBalancer(
            "default/web",
            {
              service: WEB,
              project: PROJECT,
              region: REGION,
              network: NETWORK,
              cluster: clusterRefsByName(state),
              negEndpoints: NEGS,
            },
            opts,
          ),
      );
      const parents = direct.constructions
        .filter((c) => c.type === "gcp:compute/networkEndpointList:NetworkEndpointList")
        .map((c) => (c.parent === undefined ? undefined : nameOf(c.parent)));
      assert.deepStrictEqual(parents.sort(), NEGS.map((neg) => `default/web:neg-${neg.zone}-${neg.name}`).sort());
      const backend = direct.constructions.find((c) => c.type === T.backendService);
      assert.deepStrictEqual(
        [...(backend?.dependsOn ?? [])].sort(),
        NEGS.map((neg) => `default/web:neg-${neg.zone}-${neg.name}-endpoints`).sort(),
      );
      const fromDaemon = await capture((opts) => {
        declareStack(stackSlice(state, scope), scope);
        return new pulumi.ComponentResource("test:Root", "root", {}, opts);
      });
      assert.equal(
        fromDaemon.registered.filter((r) => r.type === "gcp:compute/networkEndpointList:NetworkEndpointList").length,
        0,
      );
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
      group: NEG_LINK(neg.name),
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

    it("declares, per NEG, a GCE_VM_IP NetworkEndpointGroup in its zone, network and subnetwork (relative URLs), without endpoints", async () => {
      const captured = await build(negService());
      assert.deepStrictEqual(
        captured.registered.filter((r) => r.type === T.neg).map((r) => [r.name, r.inputs]),
        NEGS.map((neg) => [`default/web:neg-${neg.zone}-${neg.name}`, negInputs(neg)]),
      );
      assert.deepStrictEqual(
        captured.registered.filter((r) => r.type === "gcp:compute/networkEndpointList:NetworkEndpointList"),
        [],
      );
    });

    it("options: a NEG is parented to the component, deleted before it is replaced, and ignores its description", async () => {
      const captured = await build(negService());
      const negs = captured.constructions.filter((c) => c.type === T.neg);
      assert.equal(negs.length, 3);
      for (const construction of negs) {
        assert.equal(construction.parent, captured.component);
        assert.equal(construction.deleteBeforeReplace, true);
        assert.deepStrictEqual(construction.ignoreChanges, ["description"]);
      }
    });

    it("the owner marker goes into a NEG's description", async () => {
      const owned = await capture(
        (opts) =>
          new ServiceLoadBalancer(
            "default/web",
            {
              service: negService(),
              project: PROJECT,
              region: REGION,
              network: NETWORK,
              cluster: REFS,
              owner: { clusterId: "c0ffee1234", clusterUid: "5f0d6c1e-0000-4000-8000-000000000001" },
            },
            opts,
          ),
      );
      const group = owned.registered.find((r) => r.name === `default/web:neg-us-central1-b-${LB}`);
      assert.deepStrictEqual(
        group?.inputs,
        negInputs(
          NEGS[2],
          '{"kubernetes.io/service-name":"default/web","dccm.io/cluster-id":"c0ffee1234","dccm.io/cluster-uid":"5f0d6c1e-0000-4000-8000-000000000001"}',
        ),
      );
    });

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
          T.neg,
          T.neg,
          T.neg,
        ].sort(),
      );
    });

    it("negsPending: the NEGs are declared, the backend service lists the instance groups as an instance-group Service's, and the resources name no NEG", async () => {
      const captured = await build(negService({ backendZones: ["us-central1-a", "us-central1-b"], negsPending: true }));
      assert.deepStrictEqual(
        captured.registered.filter((r) => r.type === T.neg).map((r) => r.name),
        NEGS.map((neg) => `default/web:neg-${neg.zone}-${neg.name}`),
      );
      assert.deepStrictEqual(backendsOf(captured), [
        ["default/web:backend-tcp", backendServiceInputs(LB, NEG_DESCRIPTION, NODE_HC)],
      ]);
      assert.equal("networkEndpointGroups" in captured.component.resources, false);
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

    it("an instance-group Service: no NEG, no draining, no NEG field, no networkEndpointGroups in its resources (upgrade changes nothing)", async () => {
      const captured = await build(externalServiceDesired("default", "web", UID, LB, [80]));
      assert.equal(captured.registered.filter((r) => r.type === T.neg).length, 0);
      const backend = captured.registered.find((r) => r.type === T.backendService);
      assert.deepStrictEqual(backend?.inputs, backendServiceInputs(LB, NEG_DESCRIPTION, NODE_HC));
      assert.equal("networkEndpointGroups" in captured.component.resources, false);
      await pulumi.runtime.disconnect();
    });
  });
});

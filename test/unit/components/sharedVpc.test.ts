// Tier 2: a Shared VPC (`networkProject`) under pulumi.runtime.setMocks: the exact registered set with
// each resource's project, and the network references of the service project's resources.
import * as assert from "node:assert/strict";

import * as pulumi from "@pulumi/pulumi";

import { capture as captureUnderMocks, type Captured } from "../../support/fakes/pulumiMocks";

import { ClusterNetwork } from "../../../components/clusterNetwork";
import { ServiceLoadBalancer, type ClusterRefs } from "../../../components/serviceLoadBalancer";
import type { ClusterDesired, ServiceDesired } from "../../../model/types";
import {
  describedBy,
  denyFirewall,
  externalServiceDesired,
  fixtureCluster,
  healthCheckFirewall,
  httpHealthCheck,
  IG_A,
  IG_B,
  NETWORK,
  NODE_HC,
  PROJECT,
  REGION,
  route,
  TO_ADDRESS,
} from "../../support/builders";

const HOST = "vpc-host";
const HOST_NETWORK = `projects/${HOST}/global/networks/${NETWORK}`;
const HOST_SUBNET = (name: string): string => `projects/${HOST}/regions/${REGION}/subnetworks/${name}`;

function mockState(type: string, inputs: Record<string, unknown>): { id: string; state: Record<string, unknown> } {
  const name = typeof inputs.name === "string" ? inputs.name : "";
  const state: Record<string, unknown> = { ...inputs, selfLink: `https://mock.test/${type}/${name}` };
  if (type === "gcp:compute/address:Address") state.address = "10.128.0.9";
  return { id: `${type}/${name}`, state };
}

function capture<T extends pulumi.Resource>(build: (opts: pulumi.ComponentResourceOptions) => T): Promise<Captured<T>> {
  return captureUnderMocks(mockState, build);
}

/** `[type, Pulumi name, project input]` of every custom resource, sorted by name. */
function placed(captured: Captured<pulumi.Resource>): [string, string, unknown][] {
  return captured.registered
    .filter((r) => r.custom)
    .map((r): [string, string, unknown] => [r.type, r.name, r.inputs.project])
    .sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

function inputsOf(captured: Captured<pulumi.Resource>, name: string): Record<string, unknown> | undefined {
  return captured.registered.find((r) => r.name === name)?.inputs;
}

const T = {
  address: "gcp:compute/address:Address",
  backend: "gcp:compute/regionBackendService:RegionBackendService",
  firewall: "gcp:compute/firewall:Firewall",
  group: "gcp:compute/instanceGroup:InstanceGroup",
  hc: "gcp:compute/regionHealthCheck:RegionHealthCheck",
  neg: "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
  route: "gcp:compute/route:Route",
  rule: "gcp:compute/forwardingRule:ForwardingRule",
} as const;

const NEG_LB = "a1b4e28ba2fa141d2883f0016d3cca42";

const CLUSTER: ClusterDesired = {
  ...fixtureCluster([route("node-a1", "11111111-1111-4111-8111-111111111111", "10.64.1.0/24", "us-central1-a")]),
  networkProject: HOST,
};

const REFS: ClusterRefs = {
  nodeHealthCheck: NODE_HC,
  legacyNodeHealthCheck: "",
  instanceGroups: { "us-central1-a": IG_A, "us-central1-b": IG_B },
};

const INTERNAL_LB = "a2b4e28ba2fa141d2883f0016d3cca42";
const INTERNAL: ServiceDesired = externalServiceDesired("db", "internal", "2b4e28ba", INTERNAL_LB, [5432], {
  scheme: "INTERNAL",
  subnetwork: "ilb-subnet",
  reserveAddress: true,
  allowGlobalAccess: false,
  networkProject: HOST,
});

const LOCAL_LB = "a3b4e28ba2fa141d2883f0016d3cca42";
const LOCAL_HC = httpHealthCheck(`k8s-${LOCAL_LB}`, 30123, describedBy("default/local"));
const LOCAL: ServiceDesired = externalServiceDesired("default", "local", "3b4e28ba", LOCAL_LB, [80], {
  reserveAddress: true,
  healthCheck: { kind: "dedicated", spec: LOCAL_HC },
  healthCheckFirewall: healthCheckFirewall(`k8s-${LOCAL_LB}-http-hc`, 30123, describedBy("default/local"), TO_ADDRESS),
  denyFirewall: denyFirewall("default/local", LOCAL_LB, "ipv4"),
  networkProject: HOST,
});

function lb(service: ServiceDesired): Promise<Captured<ServiceLoadBalancer>> {
  return capture(
    (opts) =>
      new ServiceLoadBalancer(
        service.key,
        { service, project: PROJECT, region: REGION, network: NETWORK, cluster: REFS },
        opts,
      ),
  );
}

describe("components: a Shared VPC (networkProject) under Pulumi mocks", () => {
  afterEach(() => pulumi.runtime.disconnect());

  it("ClusterNetwork: the route and the node health-check firewall in the host project, the rest in project", async () => {
    const captured = await capture((opts) => new ClusterNetwork("cluster", { cluster: CLUSTER }, opts));
    assert.deepStrictEqual(placed(captured), [
      [T.group, "cluster:ig-us-central1-a", PROJECT],
      [T.group, "cluster:ig-us-central1-b", PROJECT],
      [T.hc, "cluster:node-hc", PROJECT],
      [T.firewall, "cluster:node-hc-fw", HOST],
      [T.route, "cluster:route-node-a1", HOST],
    ]);
  });

  it("ClusterNetwork: exact inputs of the route, the firewall and a group", async () => {
    const captured = await capture((opts) => new ClusterNetwork("cluster", { cluster: CLUSTER }, opts));
    assert.deepStrictEqual(inputsOf(captured, "cluster:route-node-a1"), {
      project: HOST,
      name: "prod-11111111-1111-4111-8111-111111111111",
      network: NETWORK,
      destRange: "10.64.1.0/24",
      // The instance stays the service project's: the VM is there.
      nextHopInstance: `https://www.googleapis.com/compute/v1/projects/${PROJECT}/zones/us-central1-a/instances/node-a1`,
      nextHopInstanceZone: "us-central1-a",
      priority: 1000,
      description: "k8s-node-route",
    });
    assert.deepStrictEqual(inputsOf(captured, "cluster:node-hc-fw"), {
      project: HOST,
      name: "k8s-c0ffee1234-node-http-hc",
      network: NETWORK,
      description: '{"kubernetes.io/cluster-id":"c0ffee1234"}',
      direction: "INGRESS",
      sourceRanges: ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"],
      targetTags: ["k8s-node"],
      allows: [{ protocol: "tcp", ports: ["10256"] }],
      priority: 1000,
    });
    assert.deepStrictEqual(inputsOf(captured, "cluster:ig-us-central1-b"), {
      project: PROJECT,
      zone: "us-central1-b",
      name: "k8s-ig--c0ffee1234",
      description: '{"kubernetes.io/cluster-id":"c0ffee1234"}',
      network: HOST_NETWORK,
      instances: [`https://www.googleapis.com/compute/v1/projects/${PROJECT}/zones/us-central1-b/instances/node-b1`],
    });
  });

  it("a neg Service's NEG: in project, naming the host's network and subnetwork", async () => {
    const captured = await lb(
      externalServiceDesired("default", "web", "1b4e28ba", NEG_LB, [80], {
        backend: "neg",
        backendZones: [],
        backendNegs: [{ zone: "us-central1-a", name: NEG_LB, subnetwork: "k8s-subnet" }],
        networkProject: HOST,
      }),
    );
    assert.deepStrictEqual(inputsOf(captured, `default/web:neg-us-central1-a-${NEG_LB}`), {
      project: PROJECT,
      zone: "us-central1-a",
      name: NEG_LB,
      description: '{"kubernetes.io/service-name":"default/web"}',
      networkEndpointType: "GCE_VM_IP",
      network: HOST_NETWORK,
      subnetwork: HOST_SUBNET("k8s-subnet"),
    });
  });

  it("internal Service: its firewall in the host project; address, rule and backend service in project, naming the host's network and subnetwork", async () => {
    const captured = await lb(INTERNAL);
    assert.deepStrictEqual(placed(captured), [
      [T.address, "db/internal:address", PROJECT],
      [T.backend, "db/internal:backend-tcp", PROJECT],
      [T.firewall, "db/internal:firewall", HOST],
      [T.rule, "db/internal:forwarding-rule-tcp", PROJECT],
    ]);
    assert.deepStrictEqual(inputsOf(captured, "db/internal:address")?.subnetwork, HOST_SUBNET("ilb-subnet"));
    assert.deepStrictEqual(inputsOf(captured, "db/internal:backend-tcp")?.network, HOST_NETWORK);
    const rule = inputsOf(captured, "db/internal:forwarding-rule-tcp");
    assert.deepStrictEqual([rule?.network, rule?.subnetwork], [HOST_NETWORK, HOST_SUBNET("ilb-subnet")]);
    assert.deepStrictEqual(inputsOf(captured, "db/internal:firewall")?.network, NETWORK);
  });

  it("external ETP=Local Service with the deny rule: its three firewalls in the host project, the rest in project, no network reference", async () => {
    const captured = await lb(LOCAL);
    assert.deepStrictEqual(placed(captured), [
      [T.address, "default/local:address", PROJECT],
      [T.backend, "default/local:backend-tcp", PROJECT],
      [T.firewall, "default/local:deny-firewall", HOST],
      [T.firewall, "default/local:firewall", HOST],
      [T.rule, "default/local:forwarding-rule-tcp", PROJECT],
      [T.hc, "default/local:hc", PROJECT],
      [T.firewall, "default/local:hc-firewall", HOST],
    ]);
    for (const name of ["default/local:address", "default/local:backend-tcp", "default/local:forwarding-rule-tcp"]) {
      const inputs = inputsOf(captured, name);
      assert.deepStrictEqual([inputs?.network, inputs?.subnetwork], [undefined, undefined], name);
    }
  });
});

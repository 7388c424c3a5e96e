// test/support/e2e/stockCcm.ts against the GCE emulator: exactly the resources the stock GCE CCM leaves
// (names, order, properties), ephemeral IPs (no address left), shared resources created once, a
// mixed-protocol Service left alone, and a second seed refused with GCE's 409.

import * as assert from "node:assert/strict";

import {
  GceError,
  type GceEmulator,
  type JsonObject,
  type ResourceListing,
  startGceEmulator,
} from "../../../../emulator/gce";
import { ComputeClient } from "../../../../gce";
import {
  seedStockCcm,
  STOCK_ILB_FINALIZER,
  STOCK_LB_CLEANUP_FINALIZER,
  type StockCluster,
  type StockNode,
  type StockService,
} from "../../../support/e2e/stockCcm";

const PROJECT = "dccm-test";
const REGION = "us-central1";
const NOW = "2025-03-04T05:06:07.000Z";

const CLUSTER: StockCluster = {
  project: PROJECT,
  region: REGION,
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  clusterId: "c1",
  clusterName: "a-very-long-cluster-name-for-routes",
  nodeTags: ["k8s-node"],
};

const NODES: StockNode[] = [
  { name: "node-a1", zone: "us-central1-a", uid: "0a1b2c3d-0000-4000-8000-000000000001", podCIDR: "10.64.0.0/24" },
  { name: "node-a2", zone: "us-central1-a", uid: "0a1b2c3d-0000-4000-8000-000000000002", podCIDR: "10.64.1.0/24" },
  { name: "node-b1", zone: "us-central1-b", uid: "0a1b2c3d-0000-4000-8000-000000000003" },
  // Labelled out of load balancers (v0.28.2 excludes it whatever the value): its route only.
  {
    name: "node-c1",
    zone: "us-central1-c",
    uid: "0a1b2c3d-0000-4000-8000-000000000004",
    podCIDR: "10.64.2.0/24",
    labels: { "node.kubernetes.io/exclude-from-external-load-balancers": "false" },
  },
];

const tcp = (port: number, nodePort: number): StockService["ports"][number] => ({ port, protocol: "TCP", nodePort });
const SERVICES: StockService[] = [
  {
    namespace: "default",
    name: "web",
    uid: "5f0c7e2a-1b3d-4c5e-8f90-a1b2c3d4e5f6",
    scheme: "External",
    ports: [tcp(80, 30080), tcp(443, 30443)],
    externalTrafficPolicy: "Cluster",
  },
  {
    namespace: "default",
    name: "local",
    uid: "6a1d8f3b-2c4e-4d6f-9a01-b2c3d4e5f6a7",
    scheme: "External",
    ports: [tcp(8080, 30808)],
    externalTrafficPolicy: "Local",
    healthCheckNodePort: 30500,
    sessionAffinity: "ClientIP",
    sourceRanges: ["10.0.0.0/8"],
  },
  {
    namespace: "default",
    name: "ilb",
    uid: "7b2e9a4c-3d5f-4e70-8b12-c3d4e5f6a7b8",
    scheme: "Internal",
    ports: [tcp(80, 30081)],
    externalTrafficPolicy: "Cluster",
  },
  {
    namespace: "default",
    name: "dns",
    uid: "8c3fab5d-4e60-4f81-9c23-d4e5f6a7b8c9",
    scheme: "External",
    ports: [{ port: 53, protocol: "UDP", nodePort: 30053 }],
    externalTrafficPolicy: "Cluster",
  },
  {
    namespace: "default",
    name: "mixed",
    uid: "9d40bc6e-5f71-4092-8d34-e5f6a7b8c9d0",
    scheme: "External",
    ports: [tcp(53, 30054), { port: 53, protocol: "UDP", nodePort: 30055 }],
    externalTrafficPolicy: "Cluster",
  },
];

// "a" + the UID without dashes, cut to 32 (written out, not computed).
const WEB = "a5f0c7e2a1b3d4c5e8f90a1b2c3d4e5f";
const LOCAL = "a6a1d8f3b2c4e4d6f9a01b2c3d4e5f6a";
const ILB = "a7b2e9a4c3d5f4e708b12c3d4e5f6a7b";
const DNS = "a8c3fab5d4e604f819c23d4e5f6a7b8c";
const ROUTE_PREFIX = "a-very-long-cluster-name-f";
const HC_RANGES = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"];

describe("test/support/e2e/stockCcm: what the stock GCE CCM leaves in GCE", function () {
  let gce: GceEmulator;
  let v1: (rel: string) => string;

  beforeEach(async () => {
    gce = await startGceEmulator({
      now: () => new Date(NOW),
      networks: [
        {
          name: "k8s-net",
          autoCreateSubnetworks: false,
          subnetworks: [{ name: "k8s-subnet", ipCidrRange: "10.130.0.0/20" }],
        },
      ],
      instanceNetwork: "k8s-net",
    });
    v1 = (rel) => `${gce.endpoint}/compute/v1/projects/${PROJECT}/${rel}`;
    for (const n of NODES) gce.putInstance(n.name, { zone: n.zone, tags: ["k8s-node"] });
  });
  afterEach(async () => gce?.stop());

  /** A resource's properties without the per-run ones (id, times, fingerprints). */
  function props(kind: string, name: string): JsonObject {
    const r: ResourceListing | undefined = gce.listResources().find((x) => x.kind === kind && x.name === name);
    assert.ok(r, `${kind}/${name} exists`);
    const { id: _id, creationTimestamp: _t, fingerprint: _f, labelFingerprint: _l, ...rest } = r.properties;
    return rest;
  }

  it("exports the stock CCM's finalizers", () => {
    assert.deepEqual(
      [STOCK_ILB_FINALIZER, STOCK_LB_CLEANUP_FINALIZER],
      ["gke.networking.io/l4-ilb-v1", "service.kubernetes.io/load-balancer-cleanup"],
    );
  });

  it("creates exactly the stock resources, in the stock order, with ephemeral IPs", () => {
    const seed = seedStockCcm(gce, CLUSTER, SERVICES, NODES);
    assert.deepEqual(seed.ips, {
      "default/web": "203.0.113.1",
      "default/local": "203.0.113.2",
      "default/ilb": "10.130.0.6",
      "default/dns": "203.0.113.3",
    });
    const expected = [
      ["routes", "global", `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000001`],
      ["routes", "global", `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000002`],
      ["routes", "global", `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000004`],
      ["firewalls", "global", `k8s-fw-${WEB}`],
      ["firewalls", "global", "k8s-c1-node-http-hc"],
      ["httpHealthChecks", "global", "k8s-c1-node"],
      ["targetPools", REGION, WEB],
      ["forwardingRules", REGION, WEB],
      ["firewalls", "global", `k8s-fw-${LOCAL}`],
      ["firewalls", "global", `k8s-${LOCAL}-http-hc`],
      ["httpHealthChecks", "global", LOCAL],
      ["targetPools", REGION, LOCAL],
      ["forwardingRules", REGION, LOCAL],
      ["instanceGroups", "us-central1-a", "k8s-ig--c1"],
      ["instanceGroups", "us-central1-b", "k8s-ig--c1"],
      ["globalHealthChecks", "global", "k8s-c1-node"],
      ["backendServices", REGION, ILB],
      ["forwardingRules", REGION, ILB],
      ["firewalls", "global", `k8s-fw-${ILB}`],
      ["firewalls", "global", "k8s-c1-node-hc"],
      ["firewalls", "global", `k8s-fw-${DNS}`],
      ["targetPools", REGION, DNS],
      ["forwardingRules", REGION, DNS],
    ];
    assert.deepEqual(
      seed.resources.map((r) => [r.kind, r.scope, r.name]),
      expected,
    );
    const inGce = gce
      .listResources()
      .filter((r) => r.kind !== "instances")
      .map((r) => [r.kind, r.scope, r.name].join(" "));
    assert.deepEqual(inGce, expected.map((r) => r.join(" ")).sort());
    // Each Service's address was reserved during its sync and released once its rule held the IP.
    assert.deepEqual(
      gce
        .history()
        .filter((h) => h.kind === "addresses")
        .map((h) => `${h.op} ${h.name}`),
      [
        `create ${WEB}`,
        `delete ${WEB}`,
        `create ${LOCAL}`,
        `delete ${LOCAL}`,
        `create ${ILB}`,
        `delete ${ILB}`,
        `create ${DNS}`,
        `delete ${DNS}`,
      ],
    );
  });

  it("shapes each kind as the stock CCM does", () => {
    seedStockCcm(gce, CLUSTER, SERVICES, NODES);
    const network = v1("global/networks/k8s-net");
    const subnetwork = v1(`regions/${REGION}/subnetworks/k8s-subnet`);
    const instance = (zone: string, name: string): string => v1(`zones/${zone}/instances/${name}`);
    assert.deepEqual(props("routes", `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000001`), {
      name: `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000001`,
      project: PROJECT,
      destRange: "10.64.0.0/24",
      nextHopInstance: instance("us-central1-a", "node-a1"),
      network,
      priority: 1000,
      description: "k8s-node-route",
      selfLink: v1(`global/routes/${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000001`),
    });
    // The route controller routes every Node with a podCIDR, the excluded one too, on the CCM's network.
    assert.deepEqual(
      [
        props("routes", `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000004`).nextHopInstance,
        props("routes", `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000004`).network,
      ],
      [instance("us-central1-c", "node-c1"), network],
    );
    assert.deepEqual(props("firewalls", `k8s-fw-${WEB}`), {
      name: `k8s-fw-${WEB}`,
      project: PROJECT,
      description: '{"kubernetes.io/service-name":"default/web", "kubernetes.io/service-ip":"203.0.113.1"}',
      network,
      sourceRanges: ["0.0.0.0/0"],
      targetTags: ["k8s-node"],
      allows: [{ protocol: "tcp", ports: ["80", "443"] }],
      destinationRanges: ["203.0.113.1"],
      direction: "INGRESS",
      priority: 1000,
      disabled: false,
      selfLink: v1(`global/firewalls/k8s-fw-${WEB}`),
    });
    assert.deepEqual(props("firewalls", "k8s-c1-node-http-hc"), {
      name: "k8s-c1-node-http-hc",
      project: PROJECT,
      description: '{"kubernetes.io/cluster-id":"c1"}',
      network,
      sourceRanges: HC_RANGES,
      targetTags: ["k8s-node"],
      allows: [{ protocol: "tcp", ports: ["10256"] }],
      destinationRanges: ["203.0.113.1"],
      direction: "INGRESS",
      priority: 1000,
      disabled: false,
      selfLink: v1("global/firewalls/k8s-c1-node-http-hc"),
    });
    assert.deepEqual(
      props("firewalls", `k8s-${LOCAL}-http-hc`).description,
      '{"kubernetes.io/service-name":"default/local", "kubernetes.io/service-ip":"203.0.113.2"}',
    );
    assert.deepEqual(props("firewalls", `k8s-fw-${LOCAL}`).sourceRanges, ["10.0.0.0/8"]);
    assert.deepEqual(props("firewalls", `k8s-fw-${DNS}`).allows, [{ protocol: "udp", ports: ["53"] }]);
    assert.deepEqual(props("httpHealthChecks", "k8s-c1-node"), {
      name: "k8s-c1-node",
      project: PROJECT,
      port: 10256,
      requestPath: "/healthz",
      description: '{"kubernetes.io/service-name":"k8s-c1-node"}',
      checkIntervalSec: 8,
      timeoutSec: 1,
      healthyThreshold: 1,
      unhealthyThreshold: 3,
      selfLink: v1("global/httpHealthChecks/k8s-c1-node"),
    });
    assert.deepEqual(
      [props("httpHealthChecks", LOCAL).port, props("httpHealthChecks", LOCAL).description],
      [30500, `{"kubernetes.io/service-name":"${LOCAL}"}`],
    );
    assert.deepEqual(props("targetPools", WEB), {
      name: WEB,
      project: PROJECT,
      region: REGION,
      description: '{"kubernetes.io/service-name":"default/web"}',
      instances: [
        instance("us-central1-a", "node-a1"),
        instance("us-central1-a", "node-a2"),
        instance("us-central1-b", "node-b1"),
      ],
      sessionAffinity: "NONE",
      healthChecks: v1("global/httpHealthChecks/k8s-c1-node"),
      selfLink: v1(`regions/${REGION}/targetPools/${WEB}`),
    });
    assert.deepEqual(
      [props("targetPools", LOCAL).sessionAffinity, props("targetPools", LOCAL).healthChecks],
      ["CLIENT_IP", v1(`global/httpHealthChecks/${LOCAL}`)],
    );
    assert.deepEqual(props("forwardingRules", WEB), {
      name: WEB,
      project: PROJECT,
      region: REGION,
      description: '{"kubernetes.io/service-name":"default/web"}',
      ipAddress: "203.0.113.1",
      ipProtocol: "TCP",
      portRange: "80-443",
      target: v1(`regions/${REGION}/targetPools/${WEB}`),
      networkTier: "PREMIUM",
      loadBalancingScheme: "EXTERNAL",
      selfLink: v1(`regions/${REGION}/forwardingRules/${WEB}`),
    });
    assert.deepEqual(
      [props("forwardingRules", DNS).ipProtocol, props("forwardingRules", DNS).portRange],
      ["UDP", "53-53"],
    );
    assert.deepEqual(props("instanceGroups", "k8s-ig--c1"), {
      name: "k8s-ig--c1",
      project: PROJECT,
      zone: "us-central1-a",
      instances: [instance("us-central1-a", "node-a1"), instance("us-central1-a", "node-a2")],
      size: 2,
      selfLink: v1("zones/us-central1-a/instanceGroups/k8s-ig--c1"),
    });
    assert.deepEqual(props("globalHealthChecks", "k8s-c1-node"), {
      name: "k8s-c1-node",
      project: PROJECT,
      checkIntervalSec: 8,
      timeoutSec: 1,
      healthyThreshold: 1,
      unhealthyThreshold: 3,
      httpHealthCheck: { port: 10256, requestPath: "/healthz" },
      type: "HTTP",
      selfLink: v1("global/healthChecks/k8s-c1-node"),
    });
    assert.deepEqual(props("backendServices", ILB), {
      name: ILB,
      project: PROJECT,
      region: REGION,
      description: '{"kubernetes.io/service-name":"default/ilb"}',
      protocol: "TCP",
      loadBalancingScheme: "INTERNAL",
      sessionAffinity: "NONE",
      healthChecks: v1("global/healthChecks/k8s-c1-node"),
      backends: [
        { group: v1("zones/us-central1-a/instanceGroups/k8s-ig--c1"), balancingMode: "CONNECTION" },
        { group: v1("zones/us-central1-b/instanceGroups/k8s-ig--c1"), balancingMode: "CONNECTION" },
      ],
      selfLink: v1(`regions/${REGION}/backendServices/${ILB}`),
    });
    assert.deepEqual(props("forwardingRules", ILB), {
      name: ILB,
      project: PROJECT,
      region: REGION,
      description: '{"kubernetes.io/service-name":"default/ilb"}',
      ipAddress: "10.130.0.6",
      ipProtocol: "TCP",
      loadBalancingScheme: "INTERNAL",
      backendService: v1(`regions/${REGION}/backendServices/${ILB}`),
      ports: ["80"],
      subnetwork,
      network,
      networkTier: "PREMIUM",
      selfLink: v1(`regions/${REGION}/forwardingRules/${ILB}`),
    });
    assert.deepEqual(props("firewalls", "k8s-c1-node-hc"), {
      name: "k8s-c1-node-hc",
      project: PROJECT,
      network,
      sourceRanges: HC_RANGES,
      targetTags: ["k8s-node"],
      allows: [{ protocol: "tcp", ports: ["10256"] }],
      direction: "INGRESS",
      priority: 1000,
      disabled: false,
      selfLink: v1("global/firewalls/k8s-c1-node-hc"),
    });
    assert.deepEqual(
      gce.listResources().filter((r) => r.kind === "addresses"),
      [],
    );
  });

  it("the ephemeral IPs can be promoted to static addresses by name (what adoption keeps them with)", async () => {
    const seed = seedStockCcm(gce, CLUSTER, SERVICES, NODES);
    const client = new ComputeClient({ endpoint: gce.computeEndpoint });
    assert.equal(
      await client.insertAddress(PROJECT, REGION, {
        name: WEB,
        address: seed.ips["default/web"] ?? "",
        networkTier: "PREMIUM",
      }),
      "created",
    );
    assert.equal(
      await client.insertAddress(PROJECT, REGION, {
        name: ILB,
        address: seed.ips["default/ilb"] ?? "",
        addressType: "INTERNAL",
        subnetwork: `projects/${PROJECT}/regions/${REGION}/subnetworks/k8s-subnet`,
      }),
      "created",
    );
    assert.deepEqual(
      gce
        .listResources()
        .filter((r) => r.kind === "addresses")
        .map((r) => [r.name, r.properties.address]),
      [
        [WEB, "203.0.113.1"],
        [ILB, "10.130.0.6"],
      ],
    );
    assert.equal(props("forwardingRules", WEB).ipAddress, "203.0.113.1");
  });

  it("seeding twice fails with the emulator's 409 for the first resource", () => {
    seedStockCcm(gce, CLUSTER, SERVICES, NODES);
    const route = `${ROUTE_PREFIX}-0a1b2c3d-0000-4000-8000-000000000001`;
    assert.throws(
      () => seedStockCcm(gce, CLUSTER, SERVICES, NODES),
      (e: unknown) => {
        assert.ok(e instanceof Error);
        assert.equal(
          e.message,
          `seedStockCcm: creating routes global/${route}: The resource 'projects/${PROJECT}/global/routes/${route}' already exists`,
        );
        assert.ok(e.cause instanceof GceError);
        assert.deepEqual([e.cause.status, e.cause.reason], [409, "alreadyExists"]);
        return true;
      },
    );
  });
});

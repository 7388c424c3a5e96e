// An upgrade changes nothing: with the default config (no health-check key, no new annotation), a
// cluster of every Service kind hashes as it did before the GKE annotations and the health-check
// keys (the hashes below were computed by main at 45f5b7e). The defaults written out explicitly
// hash the same too.
import * as assert from "node:assert/strict";

import { parseConfig } from "../../../model/config";
import { desiredState } from "../../../model/desired";
import { stackHashes } from "../../../model/desiredCache";
import type { Config, NodeInfo, ServiceInfo } from "../../../model/types";

const CONFIG: Config = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  nodeTags: ["k8s-node"],
  clusterName: "prod",
  clusterId: "c0ffee1234",
  clusterCIDR: "10.64.0.0/14",
  backendMode: "backend-service",
  configureRoutes: true,
  loadBalancerClasses: ["dccm.io/gce"],
};

const NODES: NodeInfo[] = [
  {
    name: "n-a",
    uid: "00000000-0000-4000-8000-000000000001",
    providerID: "gce://dccm-test/us-central1-a/n-a",
    labels: { "topology.kubernetes.io/zone": "us-central1-a" },
    taints: [],
    deleting: false,
    podCIDRs: ["10.64.0.0/24"],
  },
  {
    name: "n-b",
    uid: "00000000-0000-4000-8000-000000000002",
    providerID: "gce://dccm-test/us-central1-b/n-b",
    labels: { "topology.kubernetes.io/zone": "us-central1-b" },
    taints: [],
    deleting: false,
    podCIDRs: ["10.64.1.0/24"],
  },
];

/** Two protocols; ETP=Local with a user IP and ranges; internal; target pool; dual-stack; IPv6-only ETP=Local. */
const SERVICES: ServiceInfo[] = [
  {
    namespace: "default",
    name: "web",
    uid: "1a100000-0000-4000-8000-000000000000",
    type: "LoadBalancer",
    annotations: {},
    ports: [
      { protocol: "TCP", port: 80 },
      { protocol: "UDP", port: 53 },
    ],
    loadBalancerSourceRanges: [],
    deleting: false,
  },
  {
    namespace: "default",
    name: "local",
    uid: "2a200000-0000-4000-8000-000000000000",
    type: "LoadBalancer",
    annotations: {},
    ports: [{ protocol: "TCP", port: 443 }],
    externalTrafficPolicy: "Local",
    healthCheckNodePort: 31000,
    loadBalancerIP: "203.0.113.7",
    loadBalancerSourceRanges: ["10.0.0.0/8"],
    deleting: false,
  },
  {
    namespace: "default",
    name: "ilb",
    uid: "3a300000-0000-4000-8000-000000000000",
    type: "LoadBalancer",
    annotations: {
      "networking.gke.io/load-balancer-type": "Internal",
      "networking.gke.io/internal-load-balancer-subnet": "ilb-subnet",
    },
    ports: [{ protocol: "TCP", port: 8080 }],
    sessionAffinity: "ClientIP",
    deleting: false,
    loadBalancerSourceRanges: [],
  },
  {
    namespace: "default",
    name: "pool",
    uid: "4a400000-0000-4000-8000-000000000000",
    type: "LoadBalancer",
    annotations: { "dccm.io/backend": "target-pool" },
    ports: [{ protocol: "TCP", port: 80 }],
    loadBalancerSourceRanges: [],
    deleting: false,
  },
  {
    namespace: "default",
    name: "dual",
    uid: "5a500000-0000-4000-8000-000000000000",
    type: "LoadBalancer",
    annotations: { "dccm.io/ipv6-subnet": "dual-subnet" },
    ports: [{ protocol: "TCP", port: 80 }],
    ipFamilies: ["IPv4", "IPv6"],
    ipFamilyPolicy: "RequireDualStack",
    loadBalancerSourceRanges: [],
    deleting: false,
  },
  {
    namespace: "default",
    name: "v6local",
    uid: "6a600000-0000-4000-8000-000000000000",
    type: "LoadBalancer",
    annotations: {},
    ports: [{ protocol: "TCP", port: 80 }],
    externalTrafficPolicy: "Local",
    healthCheckNodePort: 31001,
    ipFamilies: ["IPv6"],
    ipFamilyPolicy: "SingleStack",
    loadBalancerSourceRanges: [],
    deleting: false,
  },
];

const HASHES_BEFORE: [string, string][] = [
  ["cluster", "9f29a75b9224fe60483dc4e39079a73b"],
  ["service.default.dual", "fe5df14e84e1ce911523cf719f1b3a01"],
  ["service.default.ilb", "44f73a82e90b3115a4e4e06ff44fd7e8"],
  ["service.default.local", "e4009a1c03da0d9925a5f5c6d0970109"],
  ["service.default.pool", "f74bde0a810852ad884a33f8350d107a"],
  ["service.default.v6local", "13185e384b00a48b9eacdc5480a2d375"],
  ["service.default.web", "16bde7a06c86904080e775237933cc82"],
];

function hashes(config: Config): [string, string][] {
  const state = desiredState({ nodes: NODES, services: SERVICES }, config);
  assert.deepStrictEqual(state.rejected, []);
  return [...stackHashes(state)].sort(([a], [b]) => (a < b ? -1 : 1));
}

describe("model: an upgrade keeps every stack hash (GKE annotations, health-check keys)", () => {
  it("the default config: the hashes of before", () => assert.deepStrictEqual(hashes(CONFIG), HASHES_BEFORE));

  it("the health-check defaults written out: the same hashes", () => {
    const config = parseConfig({
      ...CONFIG,
      healthCheckSourceRanges: "130.211.0.0/22,35.191.0.0/16,209.85.152.0/22,209.85.204.0/22",
      healthCheckSourceRangesIPv6: ["2600:2d00:1:b029::/64", "2600:1901:8001::/48"],
      nodeHealthCheckPort: 10256,
      nodeHealthCheckPath: "/healthz",
    });
    assert.deepStrictEqual(hashes(config), HASHES_BEFORE);
  });

  it("firewallManagement managed written out: the same hashes", () =>
    assert.deepStrictEqual(hashes(parseConfig({ ...CONFIG, firewallManagement: "managed" })), HASHES_BEFORE));

  it("firewallManagement manual: every stack hashes anew (each declares its firewalls no more)", () => {
    const manual = new Map(hashes(parseConfig({ ...CONFIG, firewallManagement: "manual" })));
    assert.deepStrictEqual(
      [...manual.keys()],
      HASHES_BEFORE.map(([stack]) => stack),
    );
    for (const [stack, hash] of HASHES_BEFORE) assert.notEqual(manual.get(stack), hash, stack);
  });
});

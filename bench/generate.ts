/** Synthetic clusters for the benchmarks: deterministic, shaped like a big production cluster. */
import type { ClusterSnapshot, NodeInfo, ServiceInfo } from "../model";

/** The index leads: load balancer names keep only the first 31 hex digits of a UID. */
function uid(prefix: number, index: number): string {
  return `${index.toString(16).padStart(8, "0")}-${prefix.toString(16).padStart(4, "0")}-4000-8000-000000000000`;
}

export function generateCluster(
  nodeCount: number,
  serviceCount: number,
  zones: string[] = ["us-central1-a", "us-central1-b", "us-central1-c"],
): ClusterSnapshot {
  const nodes: NodeInfo[] = [];
  for (let i = 0; i < nodeCount; i++) {
    const zone = zones[i % zones.length];
    const name = `node-${i}`;
    nodes.push({
      name,
      uid: uid(1, i),
      providerID: `gce://bench-project/${zone}/${name}`,
      labels: {
        "topology.kubernetes.io/zone": zone,
        ...(i % 50 === 0 ? { "node.kubernetes.io/exclude-from-external-load-balancers": "true" } : {}),
      },
      taints: i % 97 === 0 ? [{ key: "ToBeDeletedByClusterAutoscaler", effect: "NoSchedule" }] : [],
      deleting: false,
      podCIDRs: [`10.${64 + Math.floor(i / 256)}.${i % 256}.0/24`],
    });
  }
  const services: ServiceInfo[] = [];
  for (let i = 0; i < serviceCount; i++) {
    const local = i % 3 === 0;
    services.push({
      namespace: `team-${i % 40}`,
      name: `svc-${i}`,
      uid: uid(2, i),
      type: "LoadBalancer",
      annotations: i % 10 === 0 ? { "networking.gke.io/load-balancer-type": "Internal" } : {},
      ports: [
        { protocol: "TCP", port: 80, nodePort: 30000 + (i % 2000) },
        { protocol: "TCP", port: 443, nodePort: 32000 + (i % 700) },
      ],
      ...(local
        ? { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 + (i % 900) }
        : { externalTrafficPolicy: "Cluster" }),
      loadBalancerSourceRanges: i % 7 === 0 ? ["10.0.0.0/8", "192.168.0.0/16"] : [],
      deleting: false,
    });
  }
  return { nodes, services };
}

export const BENCH_CONFIG_RAW = {
  project: "bench-project",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  nodeTags: ["k8s-node"],
  clusterName: "bench",
  clusterId: "b3nch",
  clusterCIDR: "10.64.0.0/10",
};

/** kubectl-style List of the same cluster, for running the real stack program on it. */
export function toKubectlList(snapshot: ClusterSnapshot): unknown {
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      ...snapshot.nodes.map((node) => ({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: node.name, uid: node.uid, labels: node.labels },
        spec: { providerID: node.providerID, podCIDRs: node.podCIDRs, taints: node.taints },
      })),
      ...snapshot.services.map((service) => ({
        apiVersion: "v1",
        kind: "Service",
        metadata: {
          name: service.name,
          namespace: service.namespace,
          uid: service.uid,
          annotations: service.annotations,
        },
        spec: {
          type: service.type,
          ports: service.ports,
          externalTrafficPolicy: service.externalTrafficPolicy,
          healthCheckNodePort: service.healthCheckNodePort,
          loadBalancerSourceRanges: service.loadBalancerSourceRanges,
        },
      })),
    ],
  };
}

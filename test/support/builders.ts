// Constants and builders shared by the unit tests: the fixture's configuration and cluster, the
// model's inputs (NodeInfo, ServiceInfo), its expected outputs (ClusterDesired, ServiceDesired and
// their specs) and the Pulumi inputs the components declare for them. Every value is written out
// here as docs/explanation/architecture.md#names and docs/guides/services.md#service-semantics gives it; nothing is computed with the code under test.

import type {
  ClusterDesired,
  Config,
  DenyFirewallSpec,
  FirewallDestination,
  FirewallSpec,
  HttpHealthCheckSpec,
  InstanceGroupSpec,
  Ipv6Desired,
  NodeInfo,
  RouteSpec,
  ServiceDesired,
  ServiceInfo,
} from "../../model/types";

// ---- Labels ------------------------------------------------------------------------------------------

export const ZONE = "topology.kubernetes.io/zone";
export const EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers";

// ---- The configuration (test/fixtures/config.json) ---------------------------------------------------

export const PROJECT = "dccm-test";
export const REGION = "us-central1";
export const NETWORK = "k8s-net";

export const CONFIG: Config = {
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

// ---- Model inputs ------------------------------------------------------------------------------------

/** A node located by its providerID in `zone` of the project, zone label set, not excluded. */
export function gceNode(
  name: string,
  uid: string,
  zone: string,
  podCIDRs: string[],
  over: Partial<NodeInfo> = {},
): NodeInfo {
  return {
    name,
    uid,
    providerID: `gce://dccm-test/${zone}/${name}`,
    labels: { [ZONE]: zone },
    taints: [],
    deleting: false,
    podCIDRs,
    ...over,
  };
}

/** A type LoadBalancer Service with one TCP port 80 and nothing else set. */
export function lbService(namespace: string, name: string, uid: string, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return {
    namespace,
    name,
    uid,
    type: "LoadBalancer",
    annotations: {},
    ports: [{ protocol: "TCP", port: 80 }],
    loadBalancerSourceRanges: [],
    deleting: false,
    ...over,
  };
}

// ---- Model outputs -----------------------------------------------------------------------------------

export const CLUSTER_DESCRIPTION = '{"kubernetes.io/cluster-id":"c0ffee1234"}';
/** The four Google health-check source ranges. */
export const HC_RANGES = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"];

export function describedBy(key: string): string {
  return `{"kubernetes.io/service-name":"${key}"}`;
}

/** An HTTP health check on `port` /healthz, 8/1/1/3. */
export function httpHealthCheck(name: string, port: number, description: string): HttpHealthCheckSpec {
  return {
    name,
    port,
    requestPath: "/healthz",
    checkIntervalSec: 8,
    timeoutSec: 1,
    healthyThreshold: 1,
    unhealthyThreshold: 3,
    description,
  };
}

/** The destination of a Service's firewalls while dccm reserves its address: that address. */
export const TO_ADDRESS: FirewallDestination = { kind: "address" };

/**
 * A firewall opening TCP `port` to the four Google health-check ranges on the node tag, at priority
 * 1000; towards `destination` when given (an external Service's own check), else every node IP.
 */
export function healthCheckFirewall(
  name: string,
  port: number,
  description: string,
  destination?: FirewallDestination,
  priority = 1000,
): FirewallSpec {
  return {
    name,
    description,
    sourceRanges: HC_RANGES,
    targetTags: ["k8s-node"],
    allows: [{ protocol: "tcp", ports: [String(port)] }],
    ...(destination !== undefined ? { destination } : {}),
    priority,
  };
}

/** The traffic firewall k8s-fw-<lb> of the Service `key`, on the node tag, towards `destination` (default: its reserved address), priority 1000. */
export function serviceFirewall(
  key: string,
  lb: string,
  sourceRanges: string[],
  allows: FirewallSpec["allows"],
  destination: FirewallDestination = TO_ADDRESS,
  priority = 1000,
): FirewallSpec {
  return {
    name: `k8s-fw-${lb}`,
    description: describedBy(key),
    sourceRanges,
    targetTags: ["k8s-node"],
    allows,
    destination,
    priority,
  };
}

/** `enableL4DenyFirewall`: k8s-fw-<lb>-deny (`-deny-ipv6`), every protocol from anywhere of the family towards `destination`, priority 1000. */
export function denyFirewall(
  key: string,
  lb: string,
  family: "ipv4" | "ipv6",
  destination: FirewallDestination = TO_ADDRESS,
): DenyFirewallSpec {
  return {
    name: family === "ipv4" ? `k8s-fw-${lb}-deny` : `k8s-fw-${lb}-deny-ipv6`,
    description: describedBy(key),
    sourceRanges: family === "ipv4" ? ["0.0.0.0/0"] : ["::/0"],
    targetTags: ["k8s-node"],
    destination,
    priority: 1000,
  };
}

/** Google's IPv6 health-checker ranges (external passthrough, then internal passthrough), as the model sorts them. */
export const HC_RANGES_IPV6 = ["2600:1901:8001::/48", "2600:2d00:1:b029::/64"];

/**
 * The IPv6 half of the Service `key`: k8s-fw-<lb>-ipv6 open to `sourceRanges` for `allows`, and
 * k8s-<lb>-http-hc-ipv6 opening TCP `hcPort` to Google's IPv6 health checkers, on the node tag.
 */
export function ipv6Half(
  key: string,
  lb: string,
  subnetwork: string,
  sourceRanges: string[],
  allows: FirewallSpec["allows"],
  hcPort: number,
  userIP?: string,
  scheme: "EXTERNAL" | "INTERNAL" = "EXTERNAL",
): Ipv6Desired {
  const destination: FirewallDestination = userIP !== undefined ? { kind: "ip", ip: userIP } : TO_ADDRESS;
  return {
    subnetwork,
    ...(userIP !== undefined ? { userIP } : {}),
    firewall: {
      name: `k8s-fw-${lb}-ipv6`,
      description: describedBy(key),
      sourceRanges,
      targetTags: ["k8s-node"],
      allows,
      destination,
      priority: 1000,
    },
    healthCheckFirewall: {
      name: `k8s-${lb}-http-hc-ipv6`,
      description: describedBy(key),
      sourceRanges: HC_RANGES_IPV6,
      targetTags: ["k8s-node"],
      allows: [{ protocol: "tcp", ports: [String(hcPort)] }],
      // The stock CCM's health-check firewall: towards the IP for an external load balancer, every node IP for an internal one.
      ...(scheme === "EXTERNAL" ? { destination } : {}),
      priority: 1000,
    },
  };
}

/** The cluster's shared node health check k8s-<clusterId>-node on 10256. */
export const SHARED_HC: HttpHealthCheckSpec = httpHealthCheck("k8s-c0ffee1234-node", 10256, CLUSTER_DESCRIPTION);
export const NODE_HC_FIREWALL: FirewallSpec = healthCheckFirewall(
  "k8s-c0ffee1234-node-http-hc",
  10256,
  CLUSTER_DESCRIPTION,
);

export function route(node: string, uid: string, destRange: string, zone: string, nextHopInstance = node): RouteSpec {
  return {
    name: `prod-${uid}`,
    node,
    destRange,
    nextHopInstance,
    nextHopInstanceZone: zone,
    priority: 1000,
    description: "k8s-node-route",
  };
}

/** The fixture's instance groups: node-b2 has the exclude label, node-c1 the autoscaler taint, so zone c has no backend, so no group. */
export const FIXTURE_INSTANCE_GROUPS: InstanceGroupSpec[] = [
  {
    name: "k8s-ig--c0ffee1234",
    zone: "us-central1-a",
    description: CLUSTER_DESCRIPTION,
    instances: ["node-a1", "node-a2"],
  },
  { name: "k8s-ig--c0ffee1234", zone: "us-central1-b", description: CLUSTER_DESCRIPTION, instances: ["node-b1"] },
];

/** The fixture's cluster part of the DesiredState, with these routes. */
export function fixtureCluster(routes: RouteSpec[]): ClusterDesired {
  return {
    stack: "cluster",
    project: "dccm-test",
    region: "us-central1",
    network: "k8s-net",
    clusterId: "c0ffee1234",
    instanceGroups: FIXTURE_INSTANCE_GROUPS,
    nodeHealthCheck: SHARED_HC,
    nodeHealthCheckFirewall: NODE_HC_FIREWALL,
    legacyNodeHealthCheck: false,
    routes,
  };
}

/**
 * What an external Service with these TCP ports becomes: shared health check, backend service on
 * zones a and b, traffic firewall open to all. The firewall lists the ports one by one, so give no
 * two adjacent ones (the model collapses those to a range).
 */
export function externalServiceDesired(
  namespace: string,
  name: string,
  uid: string,
  lb: string,
  ports: number[],
  over: Partial<ServiceDesired> = {},
): ServiceDesired {
  const key = `${namespace}/${name}`;
  const portStrings = ports.map(String);
  return {
    key,
    stack: `service.${namespace}.${name}`,
    namespace,
    name,
    uid,
    lbName: lb,
    description: describedBy(key),
    scheme: "EXTERNAL",
    backend: "backend-service",
    networkTier: "PREMIUM",
    allowGlobalAccess: false,
    frontends: [{ name: lb, protocol: "TCP", ports, portSelection: { kind: "ports", ports: portStrings } }],
    sessionAffinity: "NONE",
    healthCheck: { kind: "shared", spec: SHARED_HC },
    firewall: serviceFirewall(key, lb, ["0.0.0.0/0"], [{ protocol: "tcp", ports: portStrings }]),
    backendZones: ["us-central1-a", "us-central1-b"],
    backendInstances: [],
    ...over,
  };
}

// ---- Pulumi inputs the components declare ------------------------------------------------------------

export const V1 = "https://www.googleapis.com/compute/v1/projects/dccm-test";
export const IG_A = `${V1}/zones/us-central1-a/instanceGroups/k8s-ig--c0ffee1234`;
export const IG_B = `${V1}/zones/us-central1-b/instanceGroups/k8s-ig--c0ffee1234`;
export const NODE_HC = `${V1}/regions/us-central1/healthChecks/k8s-c0ffee1234-node`;

export function instanceUrl(zone: string, name: string): string {
  return `${V1}/zones/${zone}/instances/${name}`;
}

export function instanceGroupInputs(zone: string, instances: string[]): Record<string, unknown> {
  return {
    project: PROJECT,
    zone,
    name: "k8s-ig--c0ffee1234",
    description: CLUSTER_DESCRIPTION,
    network: `projects/${PROJECT}/global/networks/${NETWORK}`,
    instances: instances.map((name) => instanceUrl(zone, name)),
  };
}

/** A regional health check on `port` /healthz, 8/1/1/3. */
export function regionHealthCheckInputs(name: string, port: number, description: string): Record<string, unknown> {
  return {
    project: PROJECT,
    region: REGION,
    name,
    description,
    checkIntervalSec: 8,
    timeoutSec: 1,
    healthyThreshold: 1,
    unhealthyThreshold: 3,
    httpHealthCheck: { port, requestPath: "/healthz" },
  };
}

/** A global legacy HTTP health check on `port` /healthz, 8/1/1/3. */
export function legacyHealthCheckInputs(name: string, port: number, description: string): Record<string, unknown> {
  return {
    project: PROJECT,
    name,
    description,
    port,
    requestPath: "/healthz",
    checkIntervalSec: 8,
    timeoutSec: 1,
    healthyThreshold: 1,
    unhealthyThreshold: 3,
  };
}

/** A firewall's inputs; `destinationIP` is the load balancer's IP the spec's destination resolves to (the mocks' address, or the user's). */
export function firewallInputs(spec: FirewallSpec, destinationIP?: string): Record<string, unknown> {
  return {
    project: PROJECT,
    name: spec.name,
    network: NETWORK,
    description: spec.description,
    direction: "INGRESS",
    sourceRanges: spec.sourceRanges,
    ...(destinationIP !== undefined ? { destinationRanges: [destinationIP] } : {}),
    targetTags: spec.targetTags,
    allows: spec.allows,
    priority: spec.priority,
  };
}

/** A deny firewall's inputs, towards `destinationIP`. */
export function denyFirewallInputs(spec: DenyFirewallSpec, destinationIP: string): Record<string, unknown> {
  return {
    project: PROJECT,
    name: spec.name,
    network: NETWORK,
    description: spec.description,
    direction: "INGRESS",
    sourceRanges: spec.sourceRanges,
    destinationRanges: [destinationIP],
    targetTags: spec.targetTags,
    denies: [{ protocol: "all" }],
    priority: spec.priority,
  };
}

export function routeInputs(
  node: string,
  uid: string,
  destRange: string,
  zone: string,
  nextHopInstance = node,
): Record<string, unknown> {
  return {
    project: PROJECT,
    name: `prod-${uid}`,
    network: NETWORK,
    destRange,
    nextHopInstance: instanceUrl(zone, nextHopInstance),
    nextHopInstanceZone: zone,
    priority: 1000,
    description: "k8s-node-route",
  };
}

export function externalAddressInputs(
  lb: string,
  description: string,
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    project: PROJECT,
    region: REGION,
    name: lb,
    description,
    addressType: "EXTERNAL",
    networkTier: "PREMIUM",
    ...over,
  };
}

/** An external TCP backend service, session affinity NONE, on the instance groups of zones a and b. */
export function backendServiceInputs(
  lb: string,
  description: string,
  healthChecks: string,
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    project: PROJECT,
    region: REGION,
    name: lb,
    description,
    protocol: "TCP",
    loadBalancingScheme: "EXTERNAL",
    sessionAffinity: "NONE",
    healthChecks,
    backends: [
      { group: IG_A, balancingMode: "CONNECTION" },
      { group: IG_B, balancingMode: "CONNECTION" },
    ],
    ...over,
  };
}

/** An external Premium TCP forwarding rule on these ports to a backend service. */
export function forwardingRuleInputs(
  lb: string,
  description: string,
  ipAddress: string,
  ports: string[],
  backendService: string,
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    project: PROJECT,
    region: REGION,
    name: lb,
    description,
    ipAddress,
    ipProtocol: "TCP",
    loadBalancingScheme: "EXTERNAL",
    ports,
    networkTier: "PREMIUM",
    backendService,
    ...over,
  };
}

// What the stock GCE cloud-controller-manager (kubernetes/cloud-provider-gcp, providers/gce) leaves
// in GCE once it has synced a cluster's nodes and LoadBalancer Services, created in the GCE
// emulator out of band (as the stock CCM's own Compute calls would), in the stock CCM's order. The
// ground dccm's adoption of a stock cluster is proven on. Each shape cites the stock function it
// comes from; the names are gce_loadbalancer_naming.go's.
//
// The real stock CCM runs too (realStockCcm.ts, test/e2e/stock-ccm.e2e.ts). Compared with its
// output for the same Services and Nodes, this seed differs only in order (a target pool's
// instances, an internal backend service's backends, which Service's IP the shared node
// health-check firewall names: the real one syncs in its own order). The internal forwarding
// rule's networkTier agrees too: PREMIUM here, and PREMIUM in the emulator for the real CCM's rule
// inserted over REST without one (GCE's default, emulator/gce/kinds.ts defaultFor). This seed stays
// for what the real CCM cannot set up: a cluster state at one precise moment (a Service changed
// after the last sync).

import type { GceEmulator, GceKind, JsonObject } from "../../../emulator/gce";

/** The finalizer the stock CCM puts on internal LoadBalancer Services (gce_loadbalancer_internal.go, ILBFinalizerV1, addFinalizer in ensureInternalLoadBalancer). */
export const STOCK_ILB_FINALIZER = "gke.networking.io/l4-ilb-v1";
/**
 * The only finalizer an external (target-pool) Service gets: k8s.io/cloud-provider's service
 * controller adds it to every load balancer (internal ones too). The stock CCM's external path adds
 * none of its own: gce_loadbalancer_external.go only reads `gke.networking.io/l4-netlb-v2`
 * (ELBRbsFinalizer, Services handled by ingress-gce) to skip them; `gke.networking.io/l4-netlb-v1`
 * seen on GKE Services comes from GKE's own controllers, not from cloud-provider-gcp.
 */
export const STOCK_LB_CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

export interface StockCluster {
  readonly project: string;
  readonly region: string;
  /** Network name. */
  readonly network: string;
  /** Subnetwork name of internal load balancers; default the network's name (an auto-mode network's subnetwork). */
  readonly subnetwork?: string;
  readonly clusterId: string;
  readonly clusterName: string;
  /** The CCM's configured node tags (gce.conf node-tags): the target tags of its firewalls. */
  readonly nodeTags: readonly string[];
}

/** The stock CCM of the e2e cluster (E2E_CONFIG's project, network and cluster id, on subnetwork `k8s-subnet`). */
export const E2E_STOCK_CLUSTER: StockCluster = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  clusterId: "e2e0cafe",
  clusterName: "e2e",
  nodeTags: ["k8s-node"],
};

export interface StockService {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly scheme: "External" | "Internal";
  readonly ports: ReadonlyArray<{ readonly port: number; readonly protocol: "TCP" | "UDP"; readonly nodePort: number }>;
  readonly externalTrafficPolicy: "Cluster" | "Local";
  readonly healthCheckNodePort?: number;
  readonly sessionAffinity?: "None" | "ClientIP";
  readonly sourceRanges?: readonly string[];
}

export interface StockNode {
  readonly name: string;
  readonly zone: string;
  readonly uid: string;
  readonly podCIDR?: string;
  /** The Node's labels; `node.kubernetes.io/exclude-from-external-load-balancers` with any value leaves it out of every load balancer (its route stays). */
  readonly labels?: Readonly<Record<string, string>>;
}

export interface StockResource {
  readonly kind: GceKind;
  readonly scope: string;
  readonly name: string;
}

export interface StockSeed {
  /** The load balancer IP of each Service, by `namespace/name` (a Service the stock CCM refuses has none). */
  readonly ips: Record<string, string>;
  /** Every resource the seed leaves in GCE, in creation order (an address reserved during a sync and released is not listed). */
  readonly resources: StockResource[];
}

// gce_loadbalancer.go init(): the default of --cloud-provider-gce-lb-src-cidrs (health checkers and L4 proxies).
const L4_LB_SOURCE_RANGES = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"];
// gce.go: gceHcCheckIntervalSeconds, gceHcTimeoutSeconds, gceHcHealthyThreshold, gceHcUnhealthyThreshold.
const HC_TIMING = { checkIntervalSec: 8, timeoutSec: 1, healthyThreshold: 1, unhealthyThreshold: 3 };
// GetNodesHealthCheckPort / GetNodesHealthCheckPath (kube-proxy's healthz), and the path of
// servicehelpers.GetServiceHealthCheckPathPort for ETP=Local.
const NODES_HC_PORT = 10256;
const HC_PATH = "/healthz";
// gce.go k8sNodeRouteTag.
const ROUTE_DESCRIPTION = "k8s-node-route";
// gce_loadbalancer_internal.go maxL4ILBPorts: beyond it the rule takes allPorts.
const MAX_ILB_PORTS = 5;
// k8s.io/api core/v1 LabelNodeExcludeBalancers.
const LABEL_EXCLUDE_BALANCERS = "node.kubernetes.io/exclude-from-external-load-balancers";

/**
 * k8s.io/cloud-provider v0.28.2 (the stock CCM's, providers/go.mod) controllers/service/controller.go
 * nodeIncludedPredicate: a Node carrying the exclusion label is left out of every load balancer,
 * whatever the label's value (v0.34.0 and later read the value with strconv.ParseBool: see
 * model/rules.ts isBackendNode). The route controller does not look at it.
 */
export function stockIncludesNode(n: StockNode): boolean {
  return n.labels?.[LABEL_EXCLUDE_BALANCERS] === undefined;
}

/** cloudprovider.DefaultLoadBalancerName: "a" + the UID without dashes, cut to 32. */
export function stockLoadBalancerName(uid: string): string {
  return `a${uid.replace(/-/g, "")}`.slice(0, 32);
}

/** gce_loadbalancer_naming.go makeServiceDescription / makeHealthCheckDescription / forwardingRuleDescription.marshal. */
function serviceDescription(serviceName: string): string {
  return `{"kubernetes.io/service-name":"${serviceName}"}`;
}

/** gce_loadbalancer_naming.go makeFirewallDescription (note the space after the comma). */
function firewallDescription(serviceName: string, ip: string): string {
  return `{"kubernetes.io/service-name":"${serviceName}", "kubernetes.io/service-ip":"${ip}"}`;
}

/** gce_loadbalancer_internal.go getPortRanges: sorted, duplicates dropped, consecutive ports merged into `a-b`. */
export function stockPortRanges(ports: readonly number[]): string[] {
  const sorted = [...new Set(ports)].sort((a, b) => a - b);
  const out: string[] = [];
  let start: number | undefined;
  let prev: number | undefined;
  for (const p of [...sorted, Number.NaN]) {
    if (start !== undefined && prev !== undefined && p !== prev + 1) {
      out.push(start === prev ? String(start) : `${start}-${prev}`);
      start = undefined;
    }
    start ??= p;
    prev = p;
  }
  return out;
}

/** gce_loadbalancer_external.go translateAffinityType. */
function affinity(s: StockService): string {
  return s.sessionAffinity === "ClientIP" ? "CLIENT_IP" : "NONE";
}

class Seeder {
  readonly ips: Record<string, string> = {};
  readonly resources: StockResource[] = [];
  private readonly v1: string;

  /** The Nodes the service controller hands to EnsureLoadBalancer (the route controller takes them all). */
  private readonly hosts: readonly StockNode[];

  constructor(
    private readonly gce: GceEmulator,
    private readonly cluster: StockCluster,
    private readonly nodes: readonly StockNode[],
  ) {
    this.v1 = `${gce.computeEndpoint}projects/${cluster.project}`;
    this.hosts = nodes.filter(stockIncludesNode);
  }

  link(rel: string): string {
    return `${this.v1}/${rel}`;
  }

  get networkUrl(): string {
    return this.link(`global/networks/${this.cluster.network}`);
  }

  get subnetworkUrl(): string {
    return this.link(`regions/${this.cluster.region}/subnetworks/${this.cluster.subnetwork ?? this.cluster.network}`);
  }

  instanceUrl(n: StockNode): string {
    return this.link(`zones/${n.zone}/instances/${n.name}`);
  }

  has(kind: GceKind, scope: string, name: string): boolean {
    return this.resources.some((r) => r.kind === kind && r.scope === scope && r.name === name);
  }

  insert(kind: GceKind, scope: string, properties: JsonObject): JsonObject {
    const name = String(properties.name);
    try {
      const created = this.gce.insertOutOfBand(kind, properties, { project: this.cluster.project, scope });
      this.resources.push({ kind, scope, name });
      return created.properties;
    } catch (cause) {
      throw new Error(
        `seedStockCcm: creating ${kind} ${scope}/${name}: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause },
      );
    }
  }

  /** The address the stock CCM reserves while it syncs, then releases once the rule holds the IP. */
  release(name: string): void {
    try {
      this.gce.deleteOutOfBand("addresses", name, { project: this.cluster.project, scope: this.cluster.region });
    } catch (cause) {
      throw new Error(
        `seedStockCcm: releasing address ${name}: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause },
      );
    }
    const at = this.resources.findIndex((r) => r.kind === "addresses" && r.name === name);
    this.resources.splice(at, 1);
  }

  firewall(
    name: string,
    description: string | undefined,
    protocol: string,
    ports: string[],
    sourceRanges: readonly string[],
    destination: string | undefined,
  ): void {
    this.insert("firewalls", "global", {
      name,
      ...(description === undefined ? {} : { description }),
      network: this.networkUrl,
      sourceRanges: [...sourceRanges],
      targetTags: [...this.cluster.nodeTags],
      allows: [{ protocol: protocol.toLowerCase(), ports }],
      ...(destination === undefined ? {} : { destinationRanges: [destination] }),
    });
  }

  /**
   * gce_routes.go CreateRoute, called by k8s.io/cloud-provider's route controller
   * (controllers/route/route_controller.go reconcile: every Node with a podCIDR, whatever its
   * labels, so a Node excluded from load balancers has its route too) with the node's UID as name
   * hint: `truncateClusterName(clusterName)-<uid>`, next hop `zones/<zone>/instances/<name>`, the
   * CCM's own network (g.NetworkURL(), not the instance's), priority 1000, description
   * k8sNodeRouteTag.
   */
  routes(): void {
    for (const n of this.nodes) {
      if (n.podCIDR === undefined) {
        continue;
      }
      this.insert("routes", "global", {
        name: `${this.cluster.clusterName.slice(0, 26)}-${n.uid}`,
        destRange: n.podCIDR,
        nextHopInstance: `zones/${n.zone}/instances/${n.name}`,
        network: this.networkUrl,
        priority: 1000,
        description: ROUTE_DESCRIPTION,
      });
    }
  }

  /**
   * gce_loadbalancer_external.go ensureExternalLoadBalancer, first sync: ensureStaticIP reserves
   * `<lb>`; the traffic firewall (createFirewall → firewallObject); createTargetPoolAndHealthCheck:
   * the health-check firewall (ensureHTTPHealthCheckFirewall), the legacy HttpHealthCheck
   * (ensureHTTPHealthCheck → makeHTTPHealthCheck), the target pool; createForwardingRule; then the
   * deferred DeleteRegionAddress releases `<lb>` ("just demotes it to ephemeral").
   */
  external(s: StockService): void {
    const lb = stockLoadBalancerName(s.uid);
    const serviceName = `${s.namespace}/${s.name}`;
    const region = this.cluster.region;
    const protocol = s.ports[0]?.protocol ?? "TCP";
    const ip = String(
      this.insert("addresses", region, {
        name: lb,
        description: serviceDescription(serviceName),
        networkTier: "PREMIUM",
      }).address,
    );
    this.firewall(
      `k8s-fw-${lb}`,
      firewallDescription(serviceName, ip),
      protocol,
      stockPortRanges(s.ports.map((p) => p.port)),
      s.sourceRanges ?? ["0.0.0.0/0"],
      ip,
    );
    const local = s.externalTrafficPolicy === "Local";
    // MakeNodesHealthCheckName / the Service's own <lb> for ETP=Local; MakeHealthCheckFirewallName.
    const hcName = local ? lb : `k8s-${this.cluster.clusterId}-node`;
    const hcPort = local ? (s.healthCheckNodePort ?? 0) : NODES_HC_PORT;
    const hcFirewall = local ? `k8s-${lb}-http-hc` : `k8s-${this.cluster.clusterId}-node-http-hc`;
    if (!this.has("firewalls", "global", hcFirewall)) {
      // The shared one keeps the destination range of the Service that created it: the stock CCM
      // compares description, ports and sources only, never its destination.
      const description = local
        ? firewallDescription(serviceName, ip)
        : `{"kubernetes.io/cluster-id":"${this.cluster.clusterId}"}`;
      this.firewall(hcFirewall, description, "TCP", [String(hcPort)], L4_LB_SOURCE_RANGES, ip);
    }
    if (!this.has("httpHealthChecks", "global", hcName)) {
      // makeHTTPHealthCheck: described with the health check's own name as the service name.
      this.insert("httpHealthChecks", "global", {
        name: hcName,
        port: hcPort,
        requestPath: HC_PATH,
        description: serviceDescription(hcName),
        ...HC_TIMING,
      });
    }
    this.insert("targetPools", region, {
      name: lb,
      description: serviceDescription(serviceName),
      instances: this.hosts.map((n) => this.instanceUrl(n)),
      sessionAffinity: affinity(s),
      healthChecks: this.link(`global/httpHealthChecks/${hcName}`),
    });
    const ports = s.ports.map((p) => p.port);
    // loadBalancerPortRange: one range from the lowest to the highest port.
    this.insert("forwardingRules", region, {
      name: lb,
      description: serviceDescription(serviceName),
      ipAddress: ip,
      ipProtocol: protocol,
      portRange: `${Math.min(...ports)}-${Math.max(...ports)}`,
      target: this.link(`regions/${region}/targetPools/${lb}`),
      networkTier: "PREMIUM",
    });
    this.release(lb);
    this.ips[serviceName] = ip;
  }

  /**
   * gce_loadbalancer_internal.go ensureInternalInstanceGroups / ensureInternalInstanceGroup: one
   * unmanaged group `k8s-ig--<clusterId>` per zone with nodes (the stock CCM iterates a map, so its
   * zone order varies: sorted here), created with a name only, then the zone's nodes added.
   */
  instanceGroups(): string[] {
    const zones = [...new Set(this.hosts.map((n) => n.zone))].sort();
    const name = `k8s-ig--${this.cluster.clusterId}`;
    return zones.map((zone) => {
      if (!this.has("instanceGroups", zone, name)) {
        const members = this.hosts.filter((n) => n.zone === zone).sort((a, b) => (a.name < b.name ? -1 : 1));
        this.insert("instanceGroups", zone, { name, instances: members.map((n) => this.instanceUrl(n)) });
      }
      return this.link(`zones/${zone}/instanceGroups/${name}`);
    });
  }

  /**
   * gce_loadbalancer_internal.go ensureInternalLoadBalancer, first sync: the instance groups, the
   * global health check (ensureInternalHealthCheck → newInternalLBHealthCheck), the address the
   * addressManager holds (HoldAddress), the backend service (ensureInternalBackendService), the
   * forwarding rule (ensureInternalForwardingRule), the firewalls (ensureInternalFirewalls), then
   * the deferred ReleaseAddress.
   */
  internal(s: StockService): void {
    const lb = stockLoadBalancerName(s.uid);
    const serviceName = `${s.namespace}/${s.name}`;
    const region = this.cluster.region;
    const protocol = s.ports[0]?.protocol ?? "TCP";
    const groups = this.instanceGroups();
    const shared = s.externalTrafficPolicy !== "Local";
    // makeHealthCheckName, makeHealthCheckFirewallName; a shared check has no description.
    const hcName = shared ? `k8s-${this.cluster.clusterId}-node` : lb;
    const hcPort = shared ? NODES_HC_PORT : (s.healthCheckNodePort ?? 0);
    if (!this.has("globalHealthChecks", "global", hcName)) {
      this.insert("globalHealthChecks", "global", {
        name: hcName,
        ...(shared ? {} : { description: serviceDescription(serviceName) }),
        ...HC_TIMING,
        httpHealthCheck: { port: hcPort, requestPath: HC_PATH },
      });
    }
    const address = this.insert("addresses", region, {
      name: lb,
      description: serviceDescription(serviceName),
      addressType: "INTERNAL",
      subnetwork: this.subnetworkUrl,
    });
    const ip = String(address.address);
    this.insert("backendServices", region, {
      name: lb,
      description: serviceDescription(serviceName),
      protocol,
      loadBalancingScheme: "INTERNAL",
      sessionAffinity: affinity(s),
      healthChecks: this.link(`global/healthChecks/${hcName}`),
      // backendsFromGroupLinks sends the group only; GCE gives an INTERNAL backend service's
      // backends balancingMode CONNECTION, which is what a read of it shows.
      backends: groups.map((group) => ({ group, balancingMode: "CONNECTION" })),
    });
    const ports = s.ports.map((p) => String(p.port));
    this.insert("forwardingRules", region, {
      name: lb,
      description: serviceDescription(serviceName),
      ipAddress: ip,
      ipProtocol: protocol,
      loadBalancingScheme: "INTERNAL",
      backendService: this.link(`regions/${region}/backendServices/${lb}`),
      ...(ports.length > MAX_ILB_PORTS ? { allPorts: true } : { ports }),
      subnetwork: this.subnetworkUrl,
      network: this.networkUrl,
      // No networkTier, as ensureInternalLoadBalancer sends none: GCE (and the emulator) reads the
      // rule back with PREMIUM (forwardingRules reference, networkTier: "If this field is not
      // specified, it is assumed to be PREMIUM"), the real stock output.
    });
    this.firewall(
      `k8s-fw-${lb}`,
      firewallDescription(serviceName, ip),
      protocol,
      stockPortRanges(s.ports.map((p) => p.port)),
      s.sourceRanges ?? ["0.0.0.0/0"],
      ip,
    );
    const hcFirewall = shared ? `k8s-${this.cluster.clusterId}-node-hc` : `${lb}-hc`;
    if (!this.has("firewalls", "global", hcFirewall)) {
      this.firewall(hcFirewall, undefined, "TCP", [String(hcPort)], L4_LB_SOURCE_RANGES, undefined);
    }
    this.release(lb);
    this.ips[serviceName] = ip;
  }
}

/**
 * Creates in `gce`, out of band, exactly what the stock CCM leaves after it synced `nodes` (their
 * routes, by the route controller, for every Node; the load balancers take only the Nodes
 * `stockIncludesNode` keeps) and then `services` in order (shared health checks, their
 * firewalls and the instance groups once). A Service mixing protocols gets nothing: EnsureLoadBalancer
 * refuses it (gce_loadbalancer.go checkMixedProtocol). The instances must already be in the emulator
 * (`gce.putInstance`). Throws, with GCE's error as cause, when a resource exists already.
 */
export function seedStockCcm(
  gce: GceEmulator,
  cluster: StockCluster,
  services: readonly StockService[],
  nodes: readonly StockNode[],
): StockSeed {
  const seeder = new Seeder(gce, cluster, nodes);
  seeder.routes();
  for (const s of services) {
    if (s.ports.length === 0 || s.ports.some((p) => p.protocol !== s.ports[0]?.protocol)) {
      continue;
    }
    if (s.scheme === "Internal") {
      seeder.internal(s);
    } else {
      seeder.external(s);
    }
  }
  return { ips: seeder.ips, resources: seeder.resources };
}

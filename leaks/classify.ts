/**
 * Leaks: GCE resources that look like this cluster's and that no stack owns. Pure (no I/O): which
 * observed resources are candidates, and which of them dccm can prove it made.
 *
 * Names alone prove nothing: the stock CCM and other clusters in the project use the same name
 * forms and descriptions (a load balancer's resources carry a Service key `ns/name`, which the
 * stock CCM writes too). Nor does the ledger: it records the names dccm planned, not who made a
 * resource under them (the stock CCM's load balancer of a Service dccm did not adopt has the same
 * name and description). What proves a resource dccm's is the owner marker only dccm writes, at
 * creation only (model/names.ts OwnerMarker): our clusterId AND our cluster's kube-system UID.
 *
 * - cluster resources (`k8s-ig--<id>` and `k8s-ig<n>--<id>`, `k8s-<id>-node`, `k8s-<id>-node-http-hc`)
 *   named for our clusterId are proven when their description carries our marker;
 * - load balancer resources (named from a Service UID) are proven when their description carries
 *   our marker and names a Service; the ledger and the cluster's Services only tell which unmarked
 *   ones are this cluster's (reported unproven);
 * - routes are never proven: their description is the stock CCM's and they carry no marker.
 *
 * Everything else that only looks like ours is `unproven`: reported, never deleted. Resources an
 * older dccm made (before the marker) are unproven too.
 */
import {
  denyFirewallName,
  describedObject,
  describedOwner,
  instanceGroupIndex,
  ipv6Name,
  loadBalancerName,
  nodeHealthCheckFirewallName,
  nodeHealthCheckName,
  protocolSuffixedName,
  ROUTE_DESCRIPTION,
  serviceHealthCheckFirewallName,
  trafficFirewallName,
} from "../model";
import { ObservedResource, ResourceKind, resourceId, RESOURCE_KINDS } from "../gce/resources";

/** One entry of the ledger: a load balancer name dccm was about to create resources under. */
export interface LedgerEntry {
  /** The clusterId of the daemon that wrote it (one per cluster: leaks/ledger.ts decideClusterId refuses another). */
  clusterId: string;
  /** `namespace/name` of the Service. */
  service: string;
  uid: string;
}

/** What the cluster says about candidates (evidence only: nothing here proves a leak). */
export interface ClusterFacts {
  /** Every Service, by `namespace/name`: its UID, and whether another controller's class owns it. */
  services: ReadonlyMap<string, { uid: string; foreign: boolean }>;
  /** Node UID → Node name. */
  nodes: ReadonlyMap<string, string>;
}

export interface LeakConfig {
  clusterId: string;
  /** UID of this cluster's kube-system Namespace: with clusterId, the owner marker dccm writes (model/names.ts OwnerMarker). */
  clusterUid: string;
  clusterName: string;
  configureRoutes: boolean;
}

export type Proof = "proven" | "unproven";

export interface Leak {
  resource: ObservedResource;
  proof: Proof;
  /** Why it is taken for this cluster's and, when unproven, what proof is missing. */
  why: string;
}

const LB_SHAPE = "a[0-9a-f]{31}";
/** Load balancer names by the shape of a resource name, per kind (the look-alike rule only). */
/** `-ipv6` (model/names.ts ipv6Name): the IPv6 twins of forwarding rules, addresses and firewalls. */
const LB_NAME_SHAPES: Partial<Record<ResourceKind, RegExp[]>> = {
  forwardingRules: [new RegExp(`^(${LB_SHAPE})(?:-tcp|-udp)?(?:-ipv6)?$`)],
  backendServices: [new RegExp(`^(${LB_SHAPE})(?:-tcp|-udp)?$`)],
  targetPools: [new RegExp(`^(${LB_SHAPE})$`)],
  healthChecks: [new RegExp(`^(${LB_SHAPE})$`)],
  httpHealthChecks: [new RegExp(`^(${LB_SHAPE})$`)],
  addresses: [new RegExp(`^(${LB_SHAPE})(?:-ipv6)?$`)],
  // A Service's NEG in the zone's default subnetwork is named as its load balancer, one in another
  // subnetwork `<lb>-<8 hex of the subnetwork's hash>` (model/names.ts).
  networkEndpointGroups: [new RegExp(`^(${LB_SHAPE})(?:-[0-9a-f]{8})?$`)],
  firewalls: [
    new RegExp(`^k8s-fw-(${LB_SHAPE})(?:-deny)?(?:-ipv6)?$`),
    new RegExp(`^k8s-(${LB_SHAPE})-http-hc(?:-ipv6)?$`),
  ],
};

/**
 * Every `kind/name` the resources of one load balancer can have (model/names.ts), IPv6 twins
 * included; of its NEGs, the default subnetwork's (another subnetwork's is known by its shape only).
 */
export function loadBalancerFamily(lb: string): Array<[ResourceKind, string]> {
  const protocols = [lb, protocolSuffixedName(lb, "TCP"), protocolSuffixedName(lb, "UDP")];
  return [
    ["addresses", lb],
    ["addresses", ipv6Name(lb)],
    ...protocols.map((name): [ResourceKind, string] => ["forwardingRules", name]),
    ...protocols.map((name): [ResourceKind, string] => ["forwardingRules", ipv6Name(name)]),
    ...protocols.map((name): [ResourceKind, string] => ["backendServices", name]),
    ["targetPools", lb],
    ["networkEndpointGroups", lb],
    ["healthChecks", lb],
    ["httpHealthChecks", lb],
    ["firewalls", trafficFirewallName(lb)],
    ["firewalls", ipv6Name(trafficFirewallName(lb))],
    ["firewalls", serviceHealthCheckFirewallName(lb)],
    ["firewalls", ipv6Name(serviceHealthCheckFirewallName(lb))],
    ["firewalls", denyFirewallName(lb)],
    ["firewalls", ipv6Name(denyFirewallName(lb))],
  ];
}

function familyIndex(lbNames: Iterable<string>): Map<string, string> {
  const index = new Map<string, string>();
  for (const lb of lbNames) for (const [kind, name] of loadBalancerFamily(lb)) index.set(`${kind}/${name}`, lb);
  return index;
}

function lbNameByShape(resource: ObservedResource): string | undefined {
  for (const shape of LB_NAME_SHAPES[resource.kind] ?? []) {
    const match = shape.exec(resource.name);
    if (match?.[1] !== undefined) return match[1];
  }
  return undefined;
}

/** The Service key a description names (`{"kubernetes.io/service-name":"ns/name",…}`), if any. */
export function describedService(description: string): string | undefined {
  const key = describedObject(description)?.["kubernetes.io/service-name"];
  return typeof key === "string" ? key : undefined;
}

function isClusterNamed(resource: ObservedResource, clusterId: string): boolean {
  switch (resource.kind) {
    case "instanceGroups":
      // The zone's first group and its numbered ones (model/names.ts instanceGroupIndex).
      return instanceGroupIndex(clusterId, resource.name) !== undefined;
    case "healthChecks":
    case "httpHealthChecks":
      return resource.name === nodeHealthCheckName(clusterId);
    case "firewalls":
      return resource.name === nodeHealthCheckFirewallName(clusterId);
    default:
      return false;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The leaks among `observed`, sorted in deletion order (RESOURCE_KINDS, then scope and name). `owned`
 * holds the resourceId of every resource a stack of this cluster records: those are never leaks.
 * `ledger` is this cluster's ledger (every entry; entries of other clusterIds are another dccm's).
 */
export function classifyLeaks(
  observed: readonly ObservedResource[],
  owned: ReadonlySet<string>,
  ledger: ReadonlyMap<string, LedgerEntry>,
  cluster: ClusterFacts,
  config: LeakConfig,
): Leak[] {
  const classifier = new LeakClassifier(ledger, cluster, config);
  const leaks: Leak[] = [];
  for (const resource of observed) {
    if (owned.has(resourceId(resource))) continue;
    const leak = classifier.classify(resource);
    if (leak !== undefined) leaks.push(leak);
  }
  return leaks.sort(compareLeaks);
}

/** The indexes one classification pass looks resources up in, and one rule per kind of proof. */
class LeakClassifier {
  /** This cluster's ledger entries (another clusterId is another dccm, which reports its own). */
  private readonly ours: Map<string, LedgerEntry>;
  private readonly ledgerIndex: Map<string, string>;
  private readonly othersIndex: Map<string, string>;
  /** Load balancer name → Service key, for the Services of ours that exist. */
  private readonly liveByLb = new Map<string, string>();
  private readonly liveIndex: Map<string, string>;
  /** Service key → its load balancer name, for every Service that exists. */
  private readonly liveLbOf: Map<string, string>;

  constructor(
    ledger: ReadonlyMap<string, LedgerEntry>,
    private readonly cluster: ClusterFacts,
    private readonly config: LeakConfig,
  ) {
    this.ours = new Map([...ledger].filter(([, entry]) => entry.clusterId === config.clusterId));
    this.ledgerIndex = familyIndex(this.ours.keys());
    this.othersIndex = familyIndex(
      [...ledger].filter(([, entry]) => entry.clusterId !== config.clusterId).map(([lb]) => lb),
    );
    for (const [key, service] of cluster.services)
      if (!service.foreign) this.liveByLb.set(loadBalancerName(service.uid), key);
    this.liveIndex = familyIndex(this.liveByLb.keys());
    this.liveLbOf = new Map([...cluster.services].map(([key, service]) => [key, loadBalancerName(service.uid)]));
  }

  classify(resource: ObservedResource): Leak | undefined {
    if (isClusterNamed(resource, this.config.clusterId)) return this.clusterResource(resource);
    const proven = this.markedLoadBalancer(resource);
    if (proven !== undefined) return proven;
    // A NEG in another subnetwork is named `<lb>-<hash>`: its family entry is its load balancer's NEG.
    const familyName =
      resource.kind === "networkEndpointGroups" ? (lbNameByShape(resource) ?? resource.name) : resource.name;
    const familyKey = `${resource.kind}/${familyName}`;
    const lb = this.ledgerIndex.get(familyKey);
    if (lb !== undefined) return this.ledgerRecorded(resource, lb);
    if (this.othersIndex.has(familyKey)) return undefined;
    const liveLb = this.liveIndex.get(familyKey);
    if (liveLb !== undefined) {
      return {
        resource,
        proof: "unproven",
        why: `named for Service ${this.liveByLb.get(liveLb) ?? "?"} of this cluster, but dccm's ledger has no entry for load balancer ${liveLb}: another controller (the stock CCM, for one) may have made it`,
      };
    }
    return this.serviceLookAlike(resource) ?? this.nodeRoute(resource);
  }

  /** `this cluster's dccm (clusterId …, kube-system UID …)`: whose marker proves. */
  private ourDccm(): string {
    return `this cluster's dccm (clusterId ${this.config.clusterId}, kube-system UID ${this.config.clusterUid})`;
  }

  private isOurs(description: string): boolean {
    const owner = describedOwner(description);
    return owner?.clusterId === this.config.clusterId && owner.clusterUid === this.config.clusterUid;
  }

  /** Why a description that is not ours does not prove: no marker, or another dccm's. */
  private markerProblem(description: string): string {
    const owner = describedOwner(description);
    if (owner === undefined) {
      return `its description ${JSON.stringify(description)} carries no owner marker of ${this.ourDccm()}: the stock CCM, another controller or a dccm older than the marker may have made it`;
    }
    return `its description names dccm of clusterId ${owner.clusterId} (kube-system UID ${owner.clusterUid}) as its maker, not ${this.ourDccm()}`;
  }

  private clusterResource(resource: ObservedResource): Leak {
    const { clusterId } = this.config;
    if (this.isOurs(resource.description))
      return {
        resource,
        proof: "proven",
        why: `named for cluster ${clusterId} and its description carries the owner marker of ${this.ourDccm()}`,
      };
    return {
      resource,
      proof: "unproven",
      why: `named for cluster ${clusterId}, but ${this.markerProblem(resource.description)}`,
    };
  }

  /** A load balancer resource whose description carries our marker and names its Service: proven. */
  private markedLoadBalancer(resource: ObservedResource): Leak | undefined {
    const lb = lbNameByShape(resource);
    const service = describedService(resource.description);
    if (lb === undefined || service === undefined || !this.isOurs(resource.description)) return undefined;
    const live = this.liveLbOf.get(service) === lb;
    return {
      resource,
      proof: "proven",
      why:
        `its description carries the owner marker of ${this.ourDccm()} and names Service ${service}` +
        (live
          ? " (the Service still exists: if its load balancer uses this, deleting it takes that down until dccm creates it again)"
          : ""),
    };
  }

  /** Named for a load balancer our ledger records, without our marker: this cluster's, never proven. */
  private ledgerRecorded(resource: ObservedResource, lb: string): Leak | undefined {
    const entry = this.ours.get(lb);
    if (entry === undefined) return undefined;
    return {
      resource,
      proof: "unproven",
      why: `dccm's ledger records load balancer ${lb} for Service ${entry.service}, but ${this.markerProblem(resource.description)}`,
    };
  }

  /** A Service of another controller's class, named for its own UID, is that controller's. */
  private serviceLookAlike(resource: ObservedResource): Leak | undefined {
    const shaped = lbNameByShape(resource);
    const key = describedService(resource.description);
    if (shaped === undefined || key === undefined || !this.liveLbOf.has(key) || this.liveLbOf.get(key) === shaped)
      return undefined;
    return {
      resource,
      proof: "unproven",
      why: `its description names Service ${key} of this cluster, but ${shaped} is not that Service's load balancer name and dccm's ledger has no entry for it: a Service of the same name in another cluster looks the same`,
    };
  }

  private nodeRoute(resource: ObservedResource): Leak | undefined {
    if (resource.kind !== "routes" || !this.config.configureRoutes || resource.description !== ROUTE_DESCRIPTION)
      return undefined;
    const prefix = `${this.config.clusterName.slice(0, 26)}-`;
    const uid = resource.name.startsWith(prefix) ? resource.name.slice(prefix.length) : "";
    const node = UUID.test(uid) ? this.cluster.nodes.get(uid) : undefined;
    if (node === undefined) return undefined;
    return {
      resource,
      proof: "unproven",
      why: `named for Node ${node} of this cluster, but a route's name and description name no cluster, so dccm cannot prove it made it`,
    };
  }
}

function compareLeaks(a: Leak, b: Leak): number {
  const kinds = RESOURCE_KINDS.indexOf(a.resource.kind) - RESOURCE_KINDS.indexOf(b.resource.kind);
  if (kinds !== 0) return kinds;
  return a.resource.scope.localeCompare(b.resource.scope) || a.resource.name.localeCompare(b.resource.name);
}

/** Counts by kind and proof, every combination present (zeros included), for the gauge. */
export function leakCounts(leaks: readonly Leak[]): Array<{ kind: ResourceKind; proof: Proof; count: number }> {
  const counts: Array<{ kind: ResourceKind; proof: Proof; count: number }> = [];
  for (const kind of RESOURCE_KINDS) {
    for (const proof of ["proven", "unproven"] as const) {
      counts.push({
        kind,
        proof,
        count: leaks.filter((leak) => leak.resource.kind === kind && leak.proof === proof).length,
      });
    }
  }
  return counts;
}

/** Longest Event message we write (the apiserver keeps 1 KiB of an event.k8s.io note). */
const MESSAGE_LIMIT = 1024;

/** The Warning event's message: counts, then every leak's id and proof, cut to the Event limit. */
export function leakMessage(leaks: readonly Leak[]): string {
  const proven = leaks.filter((leak) => leak.proof === "proven").length;
  const head =
    `${leaks.length} GCE resource${leaks.length === 1 ? "" : "s"} of this cluster owned by no stack ` +
    `(${proven} proven, ${leaks.length - proven} unproven; dccm gc --dry-run says why, dccm gc deletes only proven ones): `;
  const items = leaks.map((leak) => `${resourceId(leak.resource)} (${leak.proof})`);
  let text = head + items.join(", ");
  for (let shown = items.length - 1; text.length > MESSAGE_LIMIT && shown >= 0; shown--) {
    text = `${head}${items.slice(0, shown).join(", ")}${shown > 0 ? ", " : ""}… and ${items.length - shown} more`;
  }
  return text;
}

/**
 * Plain data that crosses the watcher → model → components boundary. Only the Node and Service
 * fields the model reads are kept, so snapshots stay small on big clusters and can be hashed.
 */

import type { NamedAddress } from "./addressNames";

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface NodeInfo {
  name: string;
  uid: string;
  providerID?: string;
  labels: Record<string, string>;
  taints: Taint[];
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
  podCIDRs: string[];
  /**
   * The first InternalIP of status.addresses: the address of the Node's GCE_VM_IP network endpoint
   * (backend `neg`). Absent: the Node is no NEG endpoint (told in DesiredState.warnings).
   */
  internalIP?: string;
}

export type PortProtocol = "TCP" | "UDP" | "SCTP";

export interface ServicePort {
  name?: string;
  /** As written in the Service; validated by the model (unknown values are rejected there). */
  protocol: string;
  port: number;
  nodePort?: number;
}

export interface ServiceInfo {
  namespace: string;
  name: string;
  uid: string;
  type: string;
  loadBalancerClass?: string;
  annotations: Record<string, string>;
  ports: ServicePort[];
  externalTrafficPolicy?: string;
  healthCheckNodePort?: number;
  loadBalancerIP?: string;
  loadBalancerSourceRanges: string[];
  sessionAffinity?: string;
  /**
   * spec.ipFamilies and spec.ipFamilyPolicy, set only when they differ from `["IPv4"]` /
   * `SingleStack` (watcher/trim.ts): absent, a Service is IPv4 single-stack, so the snapshots of
   * IPv4 Services are what they were before dccm read these fields.
   */
  ipFamilies?: string[];
  ipFamilyPolicy?: string;
  /** spec.trafficDistribution, when set (`PreferSameZone`, the deprecated `PreferClose`, …). */
  trafficDistribution?: string;
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
}

export interface ClusterSnapshot {
  nodes: NodeInfo[];
  services: ServiceInfo[];
}

/**
 * What backs a load balancer. `backend-service`: a backend service over the cluster's instance
 * groups; `target-pool`: a target pool (external only); `neg`: a backend service over the Service's
 * own zonal GCE_VM_IP network endpoint groups, each holding a stable subset of the eligible nodes
 * (model/subsets.ts), as GKE's L4 controllers (kubernetes/ingress-gce pkg/neg/syncers/subsets.go).
 */
export type BackendMode = "backend-service" | "target-pool" | "neg";

/**
 * How long a Service's IPv4 address is reserved. `transient` (the default, as the stock CCM): the
 * forwarding rule keeps an ephemeral IP, reserved as `<lb>` only while a run replaces the rule.
 * `always`: `<lb>` is reserved for the Service's life, so its IP survives even a forwarding rule
 * deleted out of band.
 */
export const ADDRESS_RESERVATIONS = ["transient", "always"] as const;
export type AddressReservation = (typeof ADDRESS_RESERVATIONS)[number];
/**
 * config `firewallManagement`'s values, in the order its error lists them (docs/guides/shared-vpc.md).
 * `auto` (managed until GCE refuses a firewall write) is refused until it is built (issue 42).
 */
export const FIREWALL_MANAGEMENTS = ["managed", "manual"] as const;
export type FirewallManagement = (typeof FIREWALL_MANAGEMENTS)[number];

export const POD_CIDR_SOURCES = ["none", "cloud"] as const;
export type PodCIDRSource = (typeof POD_CIDR_SOURCES)[number];
/** The stock CCM's cluster stack types (cloud_cidr_allocator.go clusterStackType). */
export const POD_CIDR_STACKS = ["IPv4", "IPv4_IPv6", "IPv6_IPv4", "IPv6"] as const;
export type PodCIDRStack = (typeof POD_CIDR_STACKS)[number];

export interface Config {
  project: string;
  region: string;
  /** VPC network name. */
  network: string;
  /** Default subnetwork for internal load balancers. */
  subnetwork?: string;
  /** Network tags of the nodes: the target of every firewall. */
  nodeTags: string[];
  clusterName: string;
  clusterId: string;
  /** Pod CIDR of the cluster; when set, node podCIDRs outside it get no route. */
  clusterCIDR?: string;
  /** Default backend kind for external load balancers. */
  backendMode: BackendMode;
  /** Absent: `transient`. */
  addressReservation?: AddressReservation;
  /** Declare one route per node podCIDR (always false with podCIDRSource `cloud`). */
  configureRoutes: boolean;
  /**
   * Where Nodes' pod CIDRs come from. Absent (`none`, the default): not from dccm
   * (kube-controller-manager allocates them, dccm routes them when configureRoutes). `cloud`: the
   * alias IP ranges of each Node's VM, written by the node controller; no routes.
   */
  podCIDRSource?: PodCIDRSource;
  /** IP families of the pod CIDRs in `cloud` mode, in spec.podCIDRs order; absent: IPv4. */
  podCIDRStack?: PodCIDRStack;
  /** The loadBalancerClass values handled besides "no class". */
  loadBalancerClasses: string[];
  /** Instances per instance group; unset: INSTANCE_GROUP_MAX_INSTANCES (model/limits.ts). */
  instanceGroupLimit?: number;
  /** The stock CCM's `--enable-l4-deny-firewall`: a deny rule per external load balancer, allow rules at 999. */
  enableL4DenyFirewall?: boolean;
  /**
   * Zones whose first instance group is declared whether or not a Node runs there, and which every
   * backend-service load balancer lists: a Node arriving in or leaving one changes the cluster stack
   * only (docs/guides/services.md#service-semantics, "Instance groups"). Sorted, without repeats.
   */
  instanceGroupZones?: string[];
  /** The health checkers' IPv4 ranges (the stock CCM's `--cloud-provider-gce-lb-src-cidrs`); absent: Google's (model/healthcheck.ts). */
  healthCheckSourceRanges?: string[];
  /** The health checkers' IPv6 ranges; absent: Google's. */
  healthCheckSourceRangesIPv6?: string[];
  /** The node probe of ETP=Cluster load balancers; absent: kube-proxy's 10256. */
  nodeHealthCheckPort?: number;
  /** Its request path; absent: `/healthz`. */
  nodeHealthCheckPath?: string;
  /**
   * The Shared VPC host project (the stock CCM's gce.conf `network-project-id`): firewalls and routes
   * live there, and network and subnetwork references name it. Absent: `project`.
   */
  networkProject?: string;
  /**
   * Who writes the firewalls. Absent: `managed` (dccm). `manual`: a network team, from the gcloud
   * commands dccm publishes (Event `LoadBalancerManualChange`); dccm declares none.
   */
  firewallManagement?: "manual";
}

export type NetworkTier = "PREMIUM" | "STANDARD";
export type LbScheme = "EXTERNAL" | "INTERNAL";
export type IpProtocol = "TCP" | "UDP";

export interface HttpHealthCheckSpec {
  name: string;
  port: number;
  requestPath: string;
  checkIntervalSec: number;
  timeoutSec: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
  description: string;
  /**
   * Set when the Service's annotations name its timings: they are then declared on every run. Unset,
   * the timings are written at creation and a repair leaves them as they are, so an operator's hand
   * tuning stays (docs/guides/services.md#health-checks).
   */
  timingsDeclared?: true;
}

export interface FirewallAllow {
  protocol: string;
  ports: string[];
}

/**
 * Where a Service's firewall opens: towards the load balancer's IP of the rule's family only
 * (`destinationRanges`, as the stock CCM's `firewallObject`), never every IP of the tagged nodes.
 * `address`: the load balancer's own IP — of the address dccm reserves (`<lb>`, `<lb>-ipv6`), or
 * the forwarding rule's ephemeral one — known once it exists; `ip`: a user-owned `spec.loadBalancerIP`.
 */
export type FirewallDestination = { kind: "address" } | { kind: "ip"; ip: string };

/** GCE's default firewall priority; with `enableL4DenyFirewall` the allow rules move one above it. */
export const FIREWALL_PRIORITY_DEFAULT = 1000;
export const FIREWALL_PRIORITY_ALLOW_ABOVE_DENY = FIREWALL_PRIORITY_DEFAULT - 1;

export interface FirewallSpec {
  name: string;
  description: string;
  sourceRanges: string[];
  targetTags: string[];
  allows: FirewallAllow[];
  /** Unset: every IP of the target nodes (the cluster's node health-check firewall, an internal Service's health-check firewall). */
  destination?: FirewallDestination;
  priority: number;
}

/** `k8s-fw-<lb>-deny`: denies every protocol from anywhere towards the load balancer's IP, below its allow rules. */
export interface DenyFirewallSpec {
  name: string;
  description: string;
  sourceRanges: string[];
  targetTags: string[];
  destination: FirewallDestination;
  priority: number;
}

export interface InstanceRef {
  /** Zone of the GCE instance. */
  zone: string;
  /** GCE instance name. */
  name: string;
}

export interface InstanceGroupSpec {
  name: string;
  zone: string;
  /** Only on the zone's second and later groups (model/groups.ts): its number, from 2. */
  index?: number;
  /**
   * Only on a group of a subnetwork other than the cluster's default (config `subnetwork`, else the
   * network's name): names.ts subnetworkHash of it. An unmanaged group holds VMs of one subnetwork.
   */
  subnetworkHash?: string;
  description: string;
  /** Instance names of this group, sorted. */
  instances: string[];
}

/** One instance group a backend service lists. */
export interface GroupRef {
  zone: string;
  name: string;
  /** As on InstanceGroupSpec: only on numbered groups. */
  index?: number;
  /** As on InstanceGroupSpec: only on groups outside the default subnetwork. */
  subnetworkHash?: string;
}

export interface RouteSpec {
  name: string;
  node: string;
  destRange: string;
  nextHopInstance: string;
  nextHopInstanceZone: string;
  priority: number;
  description: string;
}

/** A GCE_VM_IP endpoint: a VM and its primary internal IPv4 address (no port). */
export interface NegEndpoint {
  /** GCE instance name, in the NEG's zone. */
  instance: string;
  ipAddress: string;
}

/**
 * One zonal GCE_VM_IP network endpoint group of a `neg` Service: the nodes of its subset in one
 * (zone, subnetwork). The group is declared in the Service's stack (ServiceDesired.backendNegs);
 * its endpoints are kept by the NEG controller (controllers/neg/), in no stack, so a node's entry or
 * exit runs no stack for them: one attach or detach per NEG it enters or leaves, as ingress-gce's
 * NEG syncers do.
 */
export interface NegSpec {
  name: string;
  zone: string;
  /** Subnetwork name: every endpoint's VM has its NIC there (one subnetwork per NEG). */
  subnetwork: string;
  /** The owning Service's key, `<namespace>/<name>`. */
  service: string;
  description: string;
  /** Sorted by instance. */
  endpoints: NegEndpoint[];
}

/** One NEG a `neg` Service's backend service lists. */
export interface NegRef {
  zone: string;
  name: string;
  subnetwork: string;
}

/** A Warning a Service's plan carries, told as an Event on each change of its stack. */
export interface ServiceNotice {
  reason: "BackendLimit" | "SubsetTruncated" | "UnsupportedConfiguration" | "MixedStaticIP";
  message: string;
}

export interface ClusterDesired {
  stack: string;
  project: string;
  region: string;
  network: string;
  clusterId: string;
  instanceGroups: InstanceGroupSpec[];
  nodeHealthCheck: HttpHealthCheckSpec;
  nodeHealthCheckFirewall: FirewallSpec;
  /** A legacy HTTP health check of the same name, needed only while a target-pool Service exists. */
  legacyNodeHealthCheck: boolean;
  routes: RouteSpec[];
  /**
   * config `networkProject`, the Shared VPC host: its routes and firewall live there, and its groups' and
   * NEGs' network and subnetwork name it. Absent without one (stack hashes unchanged).
   */
  networkProject?: string;
  /** config `firewallManagement: manual`: the node health-check firewall is published, not declared. Absent: declared (stack hashes unchanged). */
  firewallManagement?: "manual";
}

export interface FrontendSpec {
  /** Name of the forwarding rule and of its backend service. */
  name: string;
  protocol: IpProtocol;
  /** Service ports, sorted, unique. */
  ports: number[];
  /** Exactly one of ports (≤ 5), portRange or allPorts is used by GCE. */
  portSelection: { kind: "ports"; ports: string[] } | { kind: "range"; portRange: string } | { kind: "all" };
}

/** The IPv6 half of a load balancer (docs/guides/services.md#service-semantics, "IP families"). */
export interface Ipv6Desired {
  /** The dual-stack subnetwork the IPv6 address and forwarding rules come from. */
  subnetwork: string;
  /** When set, a user-owned static IPv6 address: used, never reserved nor released by us. */
  userIP?: string;
  /** The IPv6 traffic firewall: a GCE firewall holds ranges of one family only. */
  firewall: FirewallSpec;
  /** Opens the health check's port to Google's IPv6 health checkers. */
  healthCheckFirewall: FirewallSpec;
  /** `enableL4DenyFirewall`, external only: `k8s-fw-<lb>-deny-ipv6`. */
  denyFirewall?: DenyFirewallSpec;
}

export interface HealthCheckRef {
  /** `shared` is the cluster stack's node health check; `dedicated` belongs to this Service. */
  kind: "shared" | "dedicated";
  spec: HttpHealthCheckSpec;
}

export interface ServiceDesired {
  /** `<namespace>/<name>`. */
  key: string;
  stack: string;
  namespace: string;
  name: string;
  uid: string;
  lbName: string;
  description: string;
  scheme: LbScheme;
  backend: BackendMode;
  networkTier: NetworkTier;
  /** Internal only: the subnetwork for the address and forwarding rules. */
  subnetwork?: string;
  allowGlobalAccess: boolean;
  /** When set, a user-owned static IP: used, never reserved nor released by us. */
  userIP?: string;
  /**
   * Set when the address `<lb>` is reserved for the Service's life: config addressReservation
   * `always`, or several IPv4 forwarding rules share the IP (GCE lets rules share an IP only through
   * a reserved address). Unset (no userIP): the rule's IP is ephemeral, reserved only while a run
   * replaces the rule (controllers/service/addressPins.ts).
   */
  reserveAddress?: true;
  frontends: FrontendSpec[];
  sessionAffinity: "CLIENT_IP" | "NONE";
  healthCheck: HealthCheckRef;
  firewall: FirewallSpec;
  /** Only for ETP=Local: opens healthCheckNodePort to the health checkers. */
  healthCheckFirewall?: FirewallSpec;
  /** `enableL4DenyFirewall`, external only: `k8s-fw-<lb>-deny`, created after the allow rules moved above it. */
  denyFirewall?: DenyFirewallSpec;
  /** Zones whose instance group backs this Service (backend-service mode). */
  backendZones: string[];
  /**
   * Only when a backend zone has more than one group: every group of every backend zone, by zone
   * then number. Unset: the zones' first groups (`k8s-ig--<clusterId>`).
   */
  backendGroups?: GroupRef[];
  /** Backend instances (target-pool mode), sorted by zone then name. */
  backendInstances: InstanceRef[];
  /** Backend `neg` only: the Service's NEGs, declared in its stack beside its backend services, by zone then subnetwork. */
  backendNegs?: NegRef[];
  /**
   * Backend `neg`: some NEG the NEG controller listed holds none of the endpoints it must (just
   * created, or emptied): the backend service stays on the instance groups (backendZones,
   * backendGroups) until it is filled, so it never lists an empty NEG in place of serving nodes.
   */
  negsPending?: true;
  /**
   * Internal, spec.trafficDistribution PreferSameZone or PreferClose: the backend service's zonal
   * affinity (networkPassThroughLbTrafficPolicy), as ingress-gce pkg/l4/backends.
   */
  zonalAffinity?: true;
  /**
   * External `neg` with ETP=Local and `networking.gke.io/weighted-load-balancing: pods-per-node`:
   * localityLbPolicy WEIGHTED_MAGLEV.
   */
  weightedLoadBalancing?: true;
  /** Warnings of the plan (a backend limit, a truncated subset, an unsupported combination). */
  notices?: ServiceNotice[];
  /** Set when the load balancer serves IPv6: its IPv6 address, forwarding rules and firewalls. */
  ipv6?: Ipv6Desired;
  /**
   * Set (true) for a SingleStack IPv6 Service: no IPv4 address, forwarding rule or firewall is
   * declared (`firewall` and `healthCheckFirewall` are then unused).
   */
  ipv6Only?: boolean;
  /** Why a PreferDualStack Service serves IPv4 only: told as a Warning event on each change. */
  ipv6Fallback?: string;
  /**
   * config `networkProject`, the Shared VPC host: the Service's firewalls live there, and its
   * forwarding rules', backend services' and addresses' network and subnetwork name it. Absent
   * without one (stack hashes unchanged).
   */
  networkProject?: string;
  /** config `firewallManagement: manual`: the Service's firewalls are published, not declared. Absent: declared (stack hashes unchanged). */
  firewallManagement?: "manual";
}

export interface Rejection {
  /** `<namespace>/<name>` */
  service: string;
  field: string;
  message: string;
}

/**
 * What the daemon observed in GCE and in its own applied stacks, beside the cluster's objects. An
 * empty observation (the CLI, CI) gives the plain desired state.
 */
export interface ObservedCloud {
  /** Instances Compute answered 404 for: their Nodes are left out of instance groups and routes. */
  goneInstances: readonly InstanceRef[];
  /**
   * Zones whose instance group a Service stack's applied backends still name: the group stays
   * (emptied) until no load balancer points at it, since GCE refuses to delete a group in use.
   */
  referencedZones: readonly string[];
  /** A target pool applied by a Service stack still names the legacy node health check. */
  legacyHealthCheckReferenced: boolean;
  /**
   * The numbered groups (`<zone>/<name>`) an applied Service stack's backends still name: kept
   * (emptied) like a referenced zone's first group.
   */
  referencedGroups?: readonly string[];
  /**
   * The instance groups the cluster stack last applied (`<zone>/<name>` → instance names): a Node
   * stays in its group when others join or leave (model/groups.ts).
   */
  groupMembers?: Readonly<Record<string, readonly string[]>>;
  /**
   * The Services (`namespace/name`) whose stack, as last applied, still holds a deny rule
   * (`k8s-fw-<lb>-deny`, `-deny-ipv6`). With `enableL4DenyFirewall` off, such a Service's allow rules
   * stay at 999 and its deny rule is no longer declared: the run deletes the deny rule alone, and
   * only the next one (the stack then holds none) moves the allow rules back to 1000, so the deny
   * rule never ties them. The cluster stack's node health-check firewall stays at 999 while any is
   * listed. Unset when none.
   */
  denyRulesHeld?: readonly string[];
  /**
   * After a start, the cluster stack's node health-check firewall sat at 999 and Service stacks were
   * not read yet: any may still hold a deny rule, so the firewall stays at 999. Unset when false.
   */
  denyRulesUnread?: boolean;
  /**
   * The subnetwork (name) of each instance's first network interface, `<zone>/<instance>` → name,
   * as Compute answered: nodes are grouped by (zone, subnetwork). Absent for an instance: the
   * config's subnetwork (else the network's default).
   */
  instanceSubnets?: Readonly<Record<string, string>>;
  /** The NEGs' endpoints as the NEG controller last listed or left them, `<zone>/<name>` → instance names: subsets stay stable. */
  negMembers?: Readonly<Record<string, readonly string[]>>;
  /**
   * The regional addresses that Services name in `networking.gke.io/load-balancer-ip-addresses`, as
   * `addresses.get` answered in the config's project and region: name → address, null when GCE has
   * none of that name. A name not listed was not read yet: its Service waits (model/addressNames.ts).
   */
  addressNames?: Readonly<Record<string, NamedAddress | null>>;
}

export const NOTHING_OBSERVED: ObservedCloud = {
  goneInstances: [],
  referencedZones: [],
  legacyHealthCheckReferenced: false,
};

export interface DesiredState {
  cluster: ClusterDesired;
  /** Sorted by key. */
  services: ServiceDesired[];
  /** Sorted by service then field. */
  rejected: Rejection[];
  /** Things skipped that are not a Service's fault (a node with no known instance…), sorted. */
  warnings: string[];
  /**
   * Every `neg` Service's NEGs with the endpoints the NEG controller keeps in them, sorted by
   * Service, zone and name; in no stack. Absent when no Service is `neg`.
   */
  networkEndpointGroups?: NegSpec[];
}

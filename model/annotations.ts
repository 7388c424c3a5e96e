/** Annotation and label keys read by the model (the stock GCE CCM's, plus dccm's own). */
export const ANNOTATION_LB_TYPE = "networking.gke.io/load-balancer-type";
export const ANNOTATION_LB_TYPE_LEGACY = "cloud.google.com/load-balancer-type";
export const ANNOTATION_ILB_SUBNET = "networking.gke.io/internal-load-balancer-subnet";
export const ANNOTATION_ILB_GLOBAL_ACCESS = "networking.gke.io/internal-load-balancer-allow-global-access";
export const ANNOTATION_NETWORK_TIER = "cloud.google.com/network-tier";
export const ANNOTATION_SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges";
export const ANNOTATION_BACKEND = "dccm.io/backend";
/**
 * Backend `neg` only: a Kubernetes label selector (`a=b,c!=d,e in (f,g),h notin (i),j,!k`) narrowing
 * the nodes the Service's NEGs may hold, as hcloud's `load-balancer.hetzner.cloud/node-selector`.
 */
export const ANNOTATION_NODE_SELECTOR = "dccm.io/node-selector";
/** GKE's weighted load balancing (external `neg`, ETP=Local): `pods-per-node` → localityLbPolicy WEIGHTED_MAGLEV. */
export const ANNOTATION_WEIGHTED_LB = "networking.gke.io/weighted-load-balancing";
export const WEIGHTED_LB_PODS_PER_NODE = "pods-per-node";
/**
 * GKE's L4 classes (ingress-gce pkg/l4): listed in config `loadBalancerClasses`, a Service of one is
 * served by dccm as GKE would, with backend `neg` and the class's scheme.
 */
export const CLASS_GKE_L4_INTERNAL = "networking.gke.io/l4-regional-internal";
export const CLASS_GKE_L4_EXTERNAL = "networking.gke.io/l4-regional-external";
/** External load balancers only: the dual-stack subnetwork their IPv6 address comes from. */
export const ANNOTATION_IPV6_SUBNET = "dccm.io/ipv6-subnet";
/** GKE's (kubernetes/ingress-gce pkg/l4/annotations/service.go CustomSubnetAnnotationKey). */
export const ANNOTATION_LB_SUBNET = "networking.gke.io/load-balancer-subnet";
/**
 * GKE's: names of regional addresses the user reserved, at most one IPv4 and one IPv6; wins over
 * `spec.loadBalancerIP` (ingress-gce pkg/l4/annotations/l4_static_address.go StaticL4AddressesAnnotationKey).
 */
export const ANNOTATION_LB_IP_ADDRESSES = "networking.gke.io/load-balancer-ip-addresses";
/** GKE's: `enabled` asks a backend-service NetLB (service.go RBSAnnotationKey). */
export const ANNOTATION_L4_RBS = "cloud.google.com/l4-rbs";
/** dccm's: the health check of the Service's own (docs/guides/services.md#health-checks). */
export const ANNOTATION_HC_INTERVAL = "dccm.io/health-check-interval";
export const ANNOTATION_HC_TIMEOUT = "dccm.io/health-check-timeout";
export const ANNOTATION_HC_HEALTHY_THRESHOLD = "dccm.io/health-check-healthy-threshold";
export const ANNOTATION_HC_UNHEALTHY_THRESHOLD = "dccm.io/health-check-unhealthy-threshold";
export const ANNOTATION_HC_PORT = "dccm.io/health-check-port";
export const ANNOTATION_HC_PATH = "dccm.io/health-check-path";
/**
 * Refresh now: a new value (any string; `dccm refresh` writes a timestamp) asks the daemon to
 * refresh the Service's stack once, as a drift pass would; the daemon answers each value with one
 * Event and records it under ANNOTATION_REFRESH_HANDLED, so a restart does not refresh it again.
 * Neither is a change of the Service's load balancer (not read by the model).
 */
export const ANNOTATION_REFRESH_REQUESTED = "dccm.io/refresh-requested";
export const ANNOTATION_REFRESH_HANDLED = "dccm.io/refresh-handled";

export const LABEL_EXCLUDE_FROM_LB = "node.kubernetes.io/exclude-from-external-load-balancers";
/**
 * A Node that is not a GCE VM of the cluster (a hybrid or on-premises machine): with the value
 * `true` exactly, dccm never initializes, deletes, routes or load-balances it, as the stock CCM's
 * lister filter (kubernetes/cloud-provider-gcp pkg/controller/nodelifecycle/node_lifecycle_controller.go,
 * GCEFilteringNodeLister.List: `val == GKEUnmanagedNodeLabelValue`).
 */
export const LABEL_UNMANAGED_NODE = "cloud.google.com/gke-unmanaged-node";
export const TAINT_TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler";
export const LABEL_ZONE = "topology.kubernetes.io/zone";
export const LABEL_ZONE_LEGACY = "failure-domain.beta.kubernetes.io/zone";

export const DEFAULT_LOAD_BALANCER_CLASS = "dccm.io/gce";

/** One annotation (or label, taint) as the reference describes it. */
export interface AnnotationRow {
  readonly key: string;
  /** An older key read the same way, when the newer is absent. */
  readonly legacy?: string;
  readonly values: string;
  readonly meaning: string;
  /** Who defined the key: users copy manifests from GKE and from the stock CCM's clusters. */
  readonly origin: AnnotationOrigin;
}

export type AnnotationOrigin = "GKE" | "stock CCM" | "GKE and stock CCM" | "Kubernetes" | "cluster autoscaler" | "dccm";

/**
 * The Service annotations the model reads, for docs/reference/annotations.md: an unknown value
 * rejects the Service (`SyncLoadBalancerFailed` naming the annotation), never a silent default.
 */
export const SERVICE_ANNOTATIONS: readonly AnnotationRow[] = [
  {
    key: ANNOTATION_LB_TYPE,
    origin: "GKE and stock CCM",
    legacy: ANNOTATION_LB_TYPE_LEGACY,
    values: "`Internal`, `External` (any case)",
    meaning: "internal or external load balancer",
  },
  {
    key: ANNOTATION_ILB_SUBNET,
    origin: "GKE and stock CCM",
    values: "a subnetwork name",
    meaning:
      "internal: the subnetwork of the address and forwarding rules, IPv4 and IPv6, when `networking.gke.io/load-balancer-subnet` is absent (default config `subnetwork`)",
  },
  {
    key: ANNOTATION_ILB_GLOBAL_ACCESS,
    origin: "GKE and stock CCM",
    values: "`true`, `false`",
    meaning: "internal: global access",
  },
  {
    key: ANNOTATION_NETWORK_TIER,
    origin: "GKE and stock CCM",
    values: "`Premium`, `Standard`",
    meaning: "external: network tier (IPv6 is Premium only)",
  },
  {
    key: ANNOTATION_SOURCE_RANGES,
    origin: "Kubernetes",
    values: "CIDRs, comma-separated",
    meaning: "when `spec.loadBalancerSourceRanges` is empty",
  },
  {
    key: ANNOTATION_BACKEND,
    origin: "dccm",
    values: "`backend-service`, `target-pool`, `neg`",
    meaning:
      "backend kind (default config `backendMode`); internal: `backend-service` or `neg` (a Service of class `networking.gke.io/l4-regional-internal` or `-external` listed in `loadBalancerClasses` is `neg`)",
  },
  {
    key: ANNOTATION_NODE_SELECTOR,
    origin: "dccm",
    values:
      "a label selector: `key=value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`, comma-separated",
    meaning: "backend `neg` only: the nodes the Service's network endpoint groups may hold (among the eligible ones)",
  },
  {
    key: ANNOTATION_WEIGHTED_LB,
    origin: "GKE",
    values: "`pods-per-node`",
    meaning:
      "external, backend `neg`, `externalTrafficPolicy: Local`: weighted load balancing (localityLbPolicy WEIGHTED_MAGLEV); otherwise an `UnsupportedConfiguration` Warning",
  },
  {
    key: ANNOTATION_IPV6_SUBNET,
    origin: "dccm",
    values: "a subnetwork name",
    meaning:
      "alias of `networking.gke.io/load-balancer-subnet` for an external Service's IPv6 address (both set: they must agree); refused on an internal Service, which uses its own subnetwork",
  },
  {
    key: ANNOTATION_LB_SUBNET,
    origin: "GKE",
    values: "a subnetwork name",
    meaning:
      "internal: the subnetwork of the address and forwarding rules (wins over `networking.gke.io/internal-load-balancer-subnet`); external, IPv6 or dual-stack: the dual-stack subnetwork the IPv6 address comes from (default config `subnetwork`)",
  },
  {
    key: ANNOTATION_LB_IP_ADDRESSES,
    origin: "GKE",
    values: "names of regional addresses, comma-separated: at most one IPv4, one IPv6",
    meaning:
      "the Service's IP of each family it serves is the named address's (reserved by you in the cluster's project and region: EXTERNAL for an external Service, INTERNAL for an internal one); wins over `spec.loadBalancerIP` (both set: a Normal `MixedStaticIP` Event); a name GCE does not have, or of the wrong type or family, is refused. The addresses stay yours: dccm never releases or deletes them",
  },
  {
    key: ANNOTATION_L4_RBS,
    origin: "GKE",
    values: "`enabled`",
    meaning:
      "external: a backend-service load balancer, as `dccm.io/backend: backend-service` (with `dccm.io/backend: target-pool`: refused)",
  },
  {
    key: ANNOTATION_HC_INTERVAL,
    origin: "dccm",
    values: "seconds, 1 to 300",
    meaning:
      "the Service's own health check: seconds between probes (default 8); any health-check annotation gives an externalTrafficPolicy Cluster Service a check of its own",
  },
  {
    key: ANNOTATION_HC_TIMEOUT,
    origin: "dccm",
    values: "seconds, 1 to 300, at most the interval",
    meaning: "the Service's own health check: seconds a probe may take (default 1)",
  },
  {
    key: ANNOTATION_HC_HEALTHY_THRESHOLD,
    origin: "dccm",
    values: "1 to 10",
    meaning: "the Service's own health check: successes that make a node healthy (default 1)",
  },
  {
    key: ANNOTATION_HC_UNHEALTHY_THRESHOLD,
    origin: "dccm",
    values: "1 to 10",
    meaning: "the Service's own health check: failures that make a node unhealthy (default 3)",
  },
  {
    key: ANNOTATION_HC_PORT,
    origin: "dccm",
    values: "a port, 1 to 65535",
    meaning:
      "externalTrafficPolicy Cluster only: the node port the Service's own check probes (default config `nodeHealthCheckPort`)",
  },
  {
    key: ANNOTATION_HC_PATH,
    origin: "dccm",
    values: "an absolute path",
    meaning:
      "externalTrafficPolicy Cluster only: the path the Service's own check asks (default config `nodeHealthCheckPath`)",
  },
  {
    key: ANNOTATION_REFRESH_REQUESTED,
    origin: "dccm",
    values: "any new value (`dccm refresh` writes a timestamp)",
    meaning:
      "refresh the Service's stack now, once per value (answered by a `Refreshed` or `RefreshFailed` Event); not a change of the load balancer",
  },
  {
    key: ANNOTATION_REFRESH_HANDLED,
    origin: "dccm",
    values: "written by the daemon",
    meaning: "the last `refresh-requested` value answered (so a restart does not refresh it again)",
  },
];

/** The Node labels and taints the model reads: what takes a Node out of every load balancer, and its zone. */
export const NODE_LABELS_AND_TAINTS: readonly AnnotationRow[] = [
  {
    key: LABEL_EXCLUDE_FROM_LB,
    origin: "Kubernetes",
    values: "any value but a false one (`0`, `f`, `F`, `false`, `FALSE`, `False`: Kubernetes' rule since 1.34)",
    meaning: "label: the Node is left out of every load balancer",
  },
  {
    key: LABEL_UNMANAGED_NODE,
    origin: "stock CCM",
    values: "`true` (exactly; any other value is ignored)",
    meaning:
      "label: the Node is not a GCE VM dccm manages: never initialized, deleted, routed nor put behind a load balancer",
  },
  {
    key: TAINT_TO_BE_DELETED,
    origin: "cluster autoscaler",
    values: "any (the cluster autoscaler's taint)",
    meaning: "taint: the Node is left out of every load balancer while the autoscaler deletes it",
  },
  {
    key: LABEL_ZONE,
    origin: "Kubernetes",
    legacy: LABEL_ZONE_LEGACY,
    values: "a zone of `region`",
    meaning: "label: the Node's zone, read when it has no `spec.providerID` yet",
  },
];

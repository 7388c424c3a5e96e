/** Annotation and label keys read by the model (the stock GCE CCM's, plus dccm's own). */
export const ANNOTATION_LB_TYPE = "networking.gke.io/load-balancer-type";
export const ANNOTATION_LB_TYPE_LEGACY = "cloud.google.com/load-balancer-type";
export const ANNOTATION_ILB_SUBNET = "networking.gke.io/internal-load-balancer-subnet";
export const ANNOTATION_ILB_GLOBAL_ACCESS = "networking.gke.io/internal-load-balancer-allow-global-access";
export const ANNOTATION_NETWORK_TIER = "cloud.google.com/network-tier";
export const ANNOTATION_SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges";
export const ANNOTATION_BACKEND = "dccm.io/backend";
/** External load balancers only: the dual-stack subnetwork their IPv6 address comes from. */
export const ANNOTATION_IPV6_SUBNET = "dccm.io/ipv6-subnet";
/**
 * Refresh now: a new value (any string; `dccm refresh` writes a timestamp) asks the daemon to
 * refresh the Service's stack once, as a drift pass would; the daemon answers each value with one
 * Event and records it under ANNOTATION_REFRESH_HANDLED, so a restart does not refresh it again.
 * Neither is a change of the Service's load balancer (not read by the model).
 */
export const ANNOTATION_REFRESH_REQUESTED = "dccm.io/refresh-requested";
export const ANNOTATION_REFRESH_HANDLED = "dccm.io/refresh-handled";

export const LABEL_EXCLUDE_FROM_LB = "node.kubernetes.io/exclude-from-external-load-balancers";
export const TAINT_TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler";
export const LABEL_ZONE = "topology.kubernetes.io/zone";
export const LABEL_ZONE_LEGACY = "failure-domain.beta.kubernetes.io/zone";

export const DEFAULT_LOAD_BALANCER_CLASS = "dccm.io/gce";

/**
 * GKE's Service annotations (kubernetes/ingress-gce pkg/l4/annotations), read with GKE's meaning
 * and precedence; dccm's older keys for the same things stay as aliases.
 */
import {
  ANNOTATION_BACKEND,
  ANNOTATION_ILB_SUBNET,
  ANNOTATION_IPV6_SUBNET,
  ANNOTATION_L4_RBS,
  ANNOTATION_LB_IP_ADDRESSES,
  ANNOTATION_LB_SUBNET,
} from "./annotations";
import type { ProblemSink } from "./ipv6";
import { isValidGceName } from "./names";
import type { BackendMode, Config } from "./types";

type Read = (key: string) => string | undefined;

function field(key: string): string {
  return `metadata.annotations[${key}]`;
}

/**
 * An internal load balancer's subnetwork: `networking.gke.io/load-balancer-subnet`, else the stock
 * CCM's `networking.gke.io/internal-load-balancer-subnet`, else config `subnetwork` (ingress-gce
 * service.go GetInternalLoadBalancerAnnotationSubnet: "At first try new annotation", then the old).
 */
export function readInternalSubnet(
  annotation: Read,
  config: Pick<Config, "subnetwork">,
  problems: ProblemSink,
): string | undefined {
  for (const key of [ANNOTATION_LB_SUBNET, ANNOTATION_ILB_SUBNET]) {
    const value = annotation(key);
    if (value === undefined) continue;
    if (!isValidGceName(value)) problems.add(field(key), `"${value}" is not a valid subnetwork name`);
    return value;
  }
  return config.subnetwork;
}

/**
 * An external load balancer's IPv6 subnetwork: `networking.gke.io/load-balancer-subnet` (ingress-gce
 * service.go GetExternalLoadBalancerAnnotationSubnet, "useful only for IPv6 External
 * LoadBalancers"), or its alias `dccm.io/ipv6-subnet`, else config `subnetwork`. Both set, they
 * must name the same subnetwork: which one a user meant cannot be guessed.
 */
export function readExternalIpv6Subnet(
  annotation: Read,
  config: Pick<Config, "subnetwork">,
  problems: ProblemSink,
): string | undefined {
  const gke = annotation(ANNOTATION_LB_SUBNET);
  const alias = annotation(ANNOTATION_IPV6_SUBNET);
  for (const [key, value] of [
    [ANNOTATION_LB_SUBNET, gke],
    [ANNOTATION_IPV6_SUBNET, alias],
  ] as const)
    if (value !== undefined && !isValidGceName(value))
      problems.add(field(key), `"${value}" is not a valid subnetwork name`);
  if (gke !== undefined && alias !== undefined && gke !== alias)
    problems.add(
      field(ANNOTATION_IPV6_SUBNET),
      `"${alias}" differs from metadata.annotations[${ANNOTATION_LB_SUBNET}] "${gke}"; set one (${ANNOTATION_IPV6_SUBNET} is its alias)`,
    );
  return gke ?? alias ?? config.subnetwork;
}

/**
 * `cloud.google.com/l4-rbs: enabled` (ingress-gce service.go HasRBSAnnotation, RBSEnabled): an
 * external load balancer on a backend service, as `dccm.io/backend: backend-service`. GKE ignores
 * any other value; dccm refuses it, as every annotation value it cannot read. `backend` is what
 * `dccm.io/backend` and the config gave.
 */
export function withRbs(annotation: Read, backend: BackendMode, problems: ProblemSink): BackendMode {
  const value = annotation(ANNOTATION_L4_RBS);
  if (value === undefined) return backend;
  if (value !== "enabled") {
    problems.add(field(ANNOTATION_L4_RBS), `"${value}" is not enabled`);
    return backend;
  }
  if (annotation(ANNOTATION_BACKEND) === "target-pool") {
    problems.add(
      field(ANNOTATION_L4_RBS),
      `enabled asks for a backend service, but ${field(ANNOTATION_BACKEND)} asks for target-pool; remove one`,
    );
    return backend;
  }
  // The config's default target pool gives way; `neg` is a backend service already.
  return backend === "target-pool" ? "backend-service" : backend;
}

/** GCE's address name (RFC 1035 label), as ingress-gce l4_static_address.go addressNameRegex. */
const ADDRESS_NAME = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * `networking.gke.io/load-balancer-ip-addresses`: comma-separated address names, trimmed, empty
 * items skipped (ingress-gce l4_static_address.go ipAddressFromAnnotation). Where ingress-gce reads
 * only the first two, a third is refused: one IPv4 and one IPv6 is all a Service can use. Which
 * family each is, only GCE knows (controllers/service/addressNames.ts).
 */
export function readAddressNames(read: Read, problems: ProblemSink): string[] {
  const raw = read(ANNOTATION_LB_IP_ADDRESSES);
  if (raw === undefined) return [];
  const names: string[] = [];
  for (const item of raw.split(",")) {
    const name = item.trim();
    if (name === "") continue;
    if (!ADDRESS_NAME.test(name)) {
      problems.add(
        field(ANNOTATION_LB_IP_ADDRESSES),
        `"${name}" is not an address name (1-63 characters: a lowercase letter, then lowercase letters, digits or hyphens, not ending with a hyphen)`,
      );
      return [];
    }
    if (names.includes(name)) {
      problems.add(field(ANNOTATION_LB_IP_ADDRESSES), `"${name}" is named twice`);
      return [];
    }
    names.push(name);
  }
  if (names.length > 2) {
    problems.add(
      field(ANNOTATION_LB_IP_ADDRESSES),
      `${names.length} addresses named; at most two (one IPv4, one IPv6)`,
    );
    return [];
  }
  if (names.length === 0) problems.add(field(ANNOTATION_LB_IP_ADDRESSES), "names no address");
  return names;
}

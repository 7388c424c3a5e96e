/** GCE resource names, identical to the stock GCE cloud-controller-manager so load balancers can be adopted. */
import * as crypto from "node:crypto";

export const GCE_NAME_PATTERN = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isValidGceName(name: string): boolean {
  return GCE_NAME_PATTERN.test(name);
}

/** `"a" + service UID without dashes`, cut to 32 characters (cloud-provider's DefaultLoadBalancerName). */
export function loadBalancerName(serviceUid: string): string {
  return ("a" + serviceUid.replace(/-/g, "")).slice(0, 32);
}

/** Name of a second forwarding rule / backend service when a Service mixes protocols. */
export function protocolSuffixedName(lbName: string, protocol: string): string {
  return `${lbName}-${protocol.toLowerCase()}`;
}

/**
 * The IPv6 twin of a forwarding rule, address or firewall: GCE gives an address, a forwarding rule
 * and a firewall one IP family each. `-ipv6` is ingress-gce's suffix for its L4 IPv6 resources.
 */
export function ipv6Name(name: string): string {
  return `${name}-ipv6`;
}

export function trafficFirewallName(lbName: string): string {
  return `k8s-fw-${lbName}`;
}

/** The stock CCM's `MakeFirewallDenyName` (gce_loadbalancer_naming.go), made with `--enable-l4-deny-firewall`. */
export function denyFirewallName(lbName: string): string {
  return `k8s-fw-${lbName}-deny`;
}

/** A deny rule's name of either family (`k8s-fw-<lb>-deny`, `k8s-fw-<lb>-deny-ipv6`). */
export function isDenyFirewallName(name: string): boolean {
  return /^k8s-fw-[a-z0-9]+-deny(-ipv6)?$/.test(name);
}

export function serviceHealthCheckFirewallName(lbName: string): string {
  return `k8s-${lbName}-http-hc`;
}

export function nodeHealthCheckName(clusterId: string): string {
  return `k8s-${clusterId}-node`;
}

export function nodeHealthCheckFirewallName(clusterId: string): string {
  return `k8s-${clusterId}-node-http-hc`;
}

/**
 * The zone's `index`-th instance group (from 1). The first keeps the stock CCM's name; the others
 * put the number before the `--`, so no cluster ID (dashes and digits allowed) can give another
 * cluster's group: `k8s-ig--<id>-2` would be cluster `<id>-2`'s first group.
 */
export function instanceGroupName(clusterId: string, index = 1): string {
  return index === 1 ? `k8s-ig--${clusterId}` : `k8s-ig${index}--${clusterId}`;
}

/**
 * How the cluster stack's outputs and the Service stacks' references key a group: the zone for its
 * default subnetwork's first group (as before there were several), `<zone>/<name>` for any other.
 */
export function instanceGroupKey(group: {
  zone: string;
  name: string;
  index?: number;
  subnetworkHash?: string;
}): string {
  return group.index === undefined && group.subnetworkHash === undefined ? group.zone : `${group.zone}/${group.name}`;
}

/** The index of one of the cluster's default-subnetwork group names (1 for `k8s-ig--<id>`), undefined for any other name. */
export function instanceGroupIndex(clusterId: string, name: string): number | undefined {
  const parsed = parseInstanceGroupName(clusterId, name);
  return parsed === undefined || parsed.subnetHash !== "" ? undefined : parsed.index;
}

/** The first 8 hex digits of SHA-256 over a subnetwork name: the suffix of its groups and NEGs. */
export function subnetworkHash(subnetwork: string): string {
  return crypto.createHash("sha256").update(subnetwork).digest("hex").slice(0, 8);
}

const GCE_NAME_MAX = 63;

/**
 * A group of the zone's instances in a subnetwork other than the cluster's default one (an
 * unmanaged group holds VMs of one subnetwork): the default's name with `-<subnetworkHash>`, its
 * cluster ID cut when that would pass 63 characters.
 */
export function subnetInstanceGroupName(clusterId: string, subnetwork: string, index = 1): string {
  return subnetGroupName(clusterId, subnetworkHash(subnetwork), index);
}

/** subnetInstanceGroupName from the subnetwork's hash. */
export function subnetGroupName(clusterId: string, hash: string, index: number): string {
  const head = index === 1 ? "k8s-ig--" : `k8s-ig${index}--`;
  const room = GCE_NAME_MAX - head.length - 1 - hash.length;
  return `${head}${clusterId.slice(0, room)}-${hash}`;
}

/**
 * One of the cluster's group names → its number and its subnetwork's hash (`""`: the default
 * subnetwork); undefined for any other name. A name is the cluster's when it is exactly what
 * instanceGroupName or subnetInstanceGroupName gives.
 */
export function parseInstanceGroupName(
  clusterId: string,
  name: string,
): { index: number; subnetHash: string } | undefined {
  const match = /^k8s-ig([1-9][0-9]*)?--(.*)$/.exec(name);
  if (match === null) return undefined;
  const index = match[1] === undefined ? 1 : Number(match[1]);
  if (!Number.isSafeInteger(index) || (match[1] !== undefined && index < 2)) return undefined;
  if (name === instanceGroupName(clusterId, index)) return { index, subnetHash: "" };
  const hash = /-([0-9a-f]{8})$/.exec(name)?.[1];
  return hash !== undefined && name === subnetGroupName(clusterId, hash, index)
    ? { index, subnetHash: hash }
    : undefined;
}

/**
 * A `neg` Service's GCE_VM_IP network endpoint group in one zone: in the default subnetwork, the
 * load balancer's own name (ingress-gce names an L4 NEG as its backend service: pkg/neg/types
 * namer, L4 NEGs); in another, `<lb>-<subnetworkHash>`, cut to 63 characters.
 */
export function negName(lbName: string, subnetwork: string, defaultSubnetwork: string): string {
  if (subnetwork === defaultSubnetwork) return lbName;
  const hash = subnetworkHash(subnetwork);
  return `${lbName.slice(0, GCE_NAME_MAX - 1 - hash.length)}-${hash}`;
}

/** Whether a NEG name is one of this load balancer's (any subnetwork). */
export function isNegOf(lbName: string, name: string): boolean {
  if (name === lbName) return true;
  const head = `${lbName.slice(0, GCE_NAME_MAX - 9)}-`;
  return name.startsWith(head) && /^[0-9a-f]{8}$/.test(name.slice(head.length));
}

export function routeName(clusterName: string, nodeUid: string): string {
  return `${clusterName.slice(0, 26)}-${nodeUid}`;
}

export const CLUSTER_STACK = "cluster";

/**
 * Pulumi's rule for a stack name (pulumi/pulumi sdk/go/common/util/validation ValidateStackName,
 * with tokens.NameRegexpPattern): at most 100 characters, the first `[A-Za-z_.]`, the rest
 * `[A-Za-z0-9_.-]`. `pulumi stack init` refuses anything else ("a stack name cannot exceed 100
 * characters").
 */
export const STACK_NAME_MAX = 100;
export const STACK_NAME_PATTERN = /^[A-Za-z_.][A-Za-z0-9_.-]*$/;

/** Hex digits of SHA-256 over `<namespace>/<name>` in a shortened Service stack name (96 bits). */
export const STACK_NAME_HASH_LENGTH = 24;

const HASHED_SERVICE_STACK = new RegExp(`^service\\.[a-z0-9.-]+_[0-9a-f]{${STACK_NAME_HASH_LENGTH}}$`);

/**
 * Pulumi stack of one Service: `service.<namespace>.<name>`. Namespaces and Service names are DNS
 * labels (no dots), so the dots keep the name unambiguous and within Pulumi's alphabet. Kubernetes
 * allows 63 + 63 characters, which can exceed Pulumi's 100: a longer name keeps its first 75
 * characters, then `_` and the first 24 hex digits of SHA-256 over `<namespace>/<name>`
 * (exactly 100 characters). `_` is in no DNS label, so a shortened name is never a readable one;
 * it cannot be read back into the Service, so its stack records the key (`dccmServiceKey`,
 * stacks/runner.ts). Names that fit are unchanged, as every stack made before this rule.
 */
export function serviceStackName(namespace: string, name: string): string {
  const readable = `service.${namespace}.${name}`;
  if (readable.length <= STACK_NAME_MAX) return readable;
  const hash = crypto
    .createHash("sha256")
    .update(serviceKey(namespace, name))
    .digest("hex")
    .slice(0, STACK_NAME_HASH_LENGTH);
  return `${readable.slice(0, STACK_NAME_MAX - 1 - STACK_NAME_HASH_LENGTH)}_${hash}`;
}

/** `service.<namespace>.<name>` → its Service; undefined for a shortened name and for other stack names. */
export function parseServiceStack(stack: string): { namespace: string; name: string } | undefined {
  const match = /^service\.([a-z0-9-]+)\.([a-z0-9-]+)$/.exec(stack);
  return match ? { namespace: match[1], name: match[2] } : undefined;
}

/** Whether a stack name is a Service stack's, readable or shortened. */
export function isServiceStack(stack: string): boolean {
  return (
    parseServiceStack(stack) !== undefined || (stack.length === STACK_NAME_MAX && HASHED_SERVICE_STACK.test(stack))
  );
}

export function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** `<namespace>/<name>` back to its parts; undefined for anything else (no slash, or more than one). */
export function parseServiceKey(key: string): { namespace: string; name: string } | undefined {
  const [namespace, name, ...rest] = key.split("/");
  return namespace === undefined || name === undefined || rest.length > 0 ? undefined : { namespace, name };
}

export function serviceDescription(key: string): string {
  return JSON.stringify({ "kubernetes.io/service-name": key });
}

export function clusterDescription(clusterId: string): string {
  return JSON.stringify({ "kubernetes.io/cluster-id": clusterId });
}

export const ROUTE_DESCRIPTION = "k8s-node-route";

/**
 * Who made a resource: the daemon's clusterId and the UID of its cluster's kube-system Namespace.
 * Written into the description of every resource dccm's engine runs create (components/), never
 * into the desired state: a resource's hash, and so every existing stack, stays as it was. Only
 * dccm writes these keys, and only at creation (`description` is in every type's ignoreChanges),
 * so a resource carrying our marker was created by dccm for this cluster: the leak check's proof.
 */
export interface OwnerMarker {
  clusterId: string;
  clusterUid: string;
}

export const OWNER_CLUSTER_ID_KEY = "dccm.io/cluster-id";
export const OWNER_CLUSTER_UID_KEY = "dccm.io/cluster-uid";

/** A JSON-object description with the owner's keys added; unchanged without an owner or when it is not a JSON object. */
export function ownedDescription(description: string, owner: OwnerMarker | undefined): string {
  if (owner === undefined) return description;
  const parsed = describedObject(description);
  if (parsed === undefined) return description;
  return JSON.stringify({
    ...parsed,
    [OWNER_CLUSTER_ID_KEY]: owner.clusterId,
    [OWNER_CLUSTER_UID_KEY]: owner.clusterUid,
  });
}

/** The owner a description names (both keys, strings), if any. */
export function describedOwner(description: string): OwnerMarker | undefined {
  const parsed = describedObject(description);
  const clusterId = parsed?.[OWNER_CLUSTER_ID_KEY];
  const clusterUid = parsed?.[OWNER_CLUSTER_UID_KEY];
  return typeof clusterId === "string" && typeof clusterUid === "string" ? { clusterId, clusterUid } : undefined;
}

/** A description's JSON object, if it is one. */
export function describedObject(description: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(description);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export const LB_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

/**
 * The network as a relative URL. InstanceGroup sends `network` to GCE verbatim
 * (terraform-provider-google-beta resource_compute_instance_group.go, resourceComputeInstanceGroupCreate:
 * `instanceGroup.Network = v.(string)`), and GCE refuses a bare name there. The other resources
 * dccm declares expand a bare name themselves (ParseNetworkFieldValue), so they keep it: a changed
 * input there would only be noise in existing stacks' diffs.
 */
export function networkUrl(project: string, network: string): string {
  return network.includes("/") ? network : `projects/${project}/global/networks/${network}`;
}

/**
 * A subnetwork of the cluster's region as a relative URL, as `networkUrl` (a NEG's subnetwork is
 * a name in the desired state; a value already holding `/` is a link and kept).
 */
export function subnetworkUrl(project: string, region: string, subnetwork: string): string {
  return subnetwork.includes("/") ? subnetwork : `projects/${project}/regions/${region}/subnetworks/${subnetwork}`;
}

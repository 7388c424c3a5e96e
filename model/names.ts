/** GCE resource names, identical to the stock GCE cloud-controller-manager so load balancers can be adopted. */

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
 * first group (as before there were several), `<zone>/<name>` for a numbered one.
 */
export function instanceGroupKey(group: { zone: string; name: string; index?: number }): string {
  return group.index === undefined ? group.zone : `${group.zone}/${group.name}`;
}

/** The index of one of the cluster's group names (1 for `k8s-ig--<id>`), undefined for any other name. */
export function instanceGroupIndex(clusterId: string, name: string): number | undefined {
  if (name === instanceGroupName(clusterId)) return 1;
  const match = /^k8s-ig([1-9][0-9]*)--(.*)$/.exec(name);
  if (match === null || match[2] !== clusterId) return undefined;
  const index = Number(match[1]);
  return index >= 2 && Number.isSafeInteger(index) ? index : undefined;
}

export function routeName(clusterName: string, nodeUid: string): string {
  return `${clusterName.slice(0, 26)}-${nodeUid}`;
}

export const CLUSTER_STACK = "cluster";

/**
 * Pulumi stack of one Service. Namespaces and Service names are DNS labels (no dots), so the dots
 * keep the name unambiguous and within Pulumi's stack-name alphabet.
 */
export function serviceStackName(namespace: string, name: string): string {
  return `service.${namespace}.${name}`;
}

export function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function serviceDescription(key: string): string {
  return JSON.stringify({ "kubernetes.io/service-name": key });
}

export function clusterDescription(clusterId: string): string {
  return JSON.stringify({ "kubernetes.io/cluster-id": clusterId });
}

export const ROUTE_DESCRIPTION = "k8s-node-route";

/**
 * The subset of eligible nodes a `neg` Service's network endpoint groups hold, as GKE's L4
 * controllers pick it (kubernetes/ingress-gce pkg/neg/syncers/subsets.go): a size by scheme and
 * externalTrafficPolicy, spread over the zones, stable per Service. Pure.
 */
import * as crypto from "node:crypto";
import type { LbScheme } from "./types";

/**
 * Subset sizes, subsets.go maxSubsetSizeDefault / maxSubsetSizeLocal (internal) and
 * maxSubsetSizeNetLBCluster / maxSubsetSizeNetLBLocal (external). ETP=Local keeps more nodes, since
 * only nodes running a pod answer the health check.
 */
export const SUBSET_SIZE_INTERNAL_CLUSTER = 25;
export const SUBSET_SIZE_INTERNAL_LOCAL = 250;
export const SUBSET_SIZE_EXTERNAL_CLUSTER = 250;
export const SUBSET_SIZE_EXTERNAL_LOCAL = 3000;

/**
 * VMs an internal passthrough load balancer distributes to with instance-group backends ("there is
 * a limitation for 250 backend VMs for ILB", cloud-provider-gcp gce_loadbalancer_internal.go; GKE's
 * internal load balancing page); with NEGs an internal Service never lists more.
 */
export const INTERNAL_BACKEND_VM_LIMIT = 250;

export function subsetSize(scheme: LbScheme, local: boolean): number {
  if (scheme === "INTERNAL") return local ? SUBSET_SIZE_INTERNAL_LOCAL : SUBSET_SIZE_INTERNAL_CLUSTER;
  return local ? SUBSET_SIZE_EXTERNAL_LOCAL : SUBSET_SIZE_EXTERNAL_CLUSTER;
}

/** subsets.go getHashedName: the order of a node for one Service. */
export function hashedName(node: string, salt: string): string {
  return crypto
    .createHash("sha256")
    .update(node + ":" + salt)
    .digest("hex");
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * subsets.go pickSubsetsMinRemovals: `count` of `nodes`. Every node of `current` still in `nodes`
 * stays (the first `count` of them, in `current`'s order, when there are more); the rest come in
 * the order of hashedName(node, salt). Fewer nodes than `count`: all of them. `hash` may memoize
 * hashedName for the salt.
 */
export function pickSubsetMinRemovals(
  nodes: readonly string[],
  salt: string,
  count: number,
  current: readonly string[],
  hash: (node: string) => string = (node) => hashedName(node, salt),
): string[] {
  if (nodes.length <= count) return [...nodes];
  const present = new Set(nodes);
  const picked = new Set<string>();
  for (const node of current) if (present.has(node) && !picked.has(node)) picked.add(node);
  if (picked.size >= count) return [...picked].slice(0, count);
  const rest = nodes
    .filter((node) => !picked.has(node))
    .map((node) => ({ node, hash: hash(node) }))
    .sort((a, b) => compareText(a.hash, b.hash) || compareText(a.node, b.node));
  const subset = [...picked];
  for (const { node } of rest) {
    if (subset.length >= count) break;
    subset.push(node);
  }
  return subset;
}

/**
 * subsets.go getSubsetPerZone: zones by ascending node count (ties by name), each given the
 * remaining limit divided by the zones left, so a small zone's unused share goes to the bigger ones
 * after it. `nodesPerZone`: zone → node names; `current`: zone → the nodes its NEGs hold now, sorted.
 * Returns zone → picked nodes, for every zone given (empty when the limit is spent).
 */
export function subsetPerZone(
  nodesPerZone: ReadonlyMap<string, readonly string[]>,
  limit: number,
  salt: string,
  current: ReadonlyMap<string, readonly string[]>,
  hash?: (node: string) => string,
): Map<string, string[]> {
  const zones = [...nodesPerZone.entries()]
    .map(([zone, nodes]) => ({ zone, count: nodes.length }))
    .sort((a, b) => a.count - b.count || compareText(a.zone, b.zone));
  let remaining = limit;
  let zonesLeft = zones.length;
  const result = new Map<string, string[]>();
  for (const { zone } of zones) {
    const size = Math.floor(remaining / zonesLeft);
    const picked = pickSubsetMinRemovals(nodesPerZone.get(zone) ?? [], salt, size, current.get(zone) ?? [], hash);
    result.set(zone, picked);
    remaining -= picked.length;
    zonesLeft--;
  }
  return result;
}

/**
 * The NEG controller's pure decision: the attach and detach calls that turn what a NEG holds into
 * what the desired state gives it (model/desired.ts placeNegService), as ingress-gce's NEG syncers
 * compute endpoint sets to add and remove (kubernetes/ingress-gce pkg/neg/syncers/transaction.go).
 */
import type { NegEndpoint } from "../../model";

/** GCE takes at most this many endpoints in one attach or detach (ingress-gce pkg/neg/syncers: MAX_NETWORK_ENDPOINTS_PER_BATCH). */
export const MAX_ENDPOINTS_PER_CALL = 500;

export interface EndpointStep {
  change: "attach" | "detach";
  /** At most MAX_ENDPOINTS_PER_CALL, sorted by instance. */
  endpoints: NegEndpoint[];
}

function endpointKey(endpoint: NegEndpoint): string {
  return `${endpoint.instance}\u0000${endpoint.ipAddress}`;
}

function compareInstance(a: NegEndpoint, b: NegEndpoint): number {
  return a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : a.ipAddress < b.ipAddress ? -1 : 1;
}

function batches(change: EndpointStep["change"], endpoints: NegEndpoint[]): EndpointStep[] {
  const sorted = [...endpoints].sort(compareInstance);
  const steps: EndpointStep[] = [];
  for (let start = 0; start < sorted.length; start += MAX_ENDPOINTS_PER_CALL)
    steps.push({ change, endpoints: sorted.slice(start, start + MAX_ENDPOINTS_PER_CALL) });
  return steps;
}

/**
 * Pure: the calls, in order, from `listed` to `desired`. A VM listed with another IP is detached
 * first (a GCE_VM_IP endpoint is a VM's primary internal IP: the VM cannot be in the NEG twice);
 * then every new endpoint is attached before the others leave, so a node that stays or comes is
 * never missing while one that goes is still there.
 */
export function planEndpointSteps(desired: readonly NegEndpoint[], listed: readonly NegEndpoint[]): EndpointStep[] {
  const want = new Set(desired.map(endpointKey));
  const have = new Set(listed.map(endpointKey));
  const attach = desired.filter((endpoint) => !have.has(endpointKey(endpoint)));
  const attaching = new Set(attach.map((endpoint) => endpoint.instance));
  const leaving = listed.filter((endpoint) => !want.has(endpointKey(endpoint)));
  return [
    ...batches(
      "detach",
      leaving.filter((endpoint) => attaching.has(endpoint.instance)),
    ),
    ...batches("attach", attach),
    ...batches(
      "detach",
      leaving.filter((endpoint) => !attaching.has(endpoint.instance)),
    ),
  ];
}

/**
 * Every reason of the Kubernetes Events dccm records, with its type, the object it is recorded on
 * and when. EventRecorder.record takes only these reasons, so a new one is added here first, and
 * docs/reference/events.md (`npm run docs`) lists them all.
 */
export type EventType = "Normal" | "Warning";

export interface EventReasonRow {
  readonly type: EventType;
  /** The object the Event is about (`kubectl describe` shows it there). */
  readonly object: "Service" | "Node" | "Lease kube-system/dccm" | "Namespace kube-system" | "Node, else the Lease";
  readonly when: string;
}

export const EVENT_REASONS = {
  EnsuringLoadBalancer: {
    type: "Normal",
    object: "Service",
    when: "a Service's stack is about to run with a change of its load balancer",
  },
  EnsuredLoadBalancer: { type: "Normal", object: "Service", when: "the run changed the load balancer" },
  DeletingLoadBalancer: {
    type: "Normal",
    object: "Service",
    when: "the Service is deleted or no longer a LoadBalancer dccm serves: its stack is about to be destroyed",
  },
  DeletedLoadBalancer: { type: "Normal", object: "Service", when: "its stack is destroyed" },
  SyncLoadBalancerFailed: {
    type: "Warning",
    object: "Service",
    when: "the Service is rejected (an annotation or field dccm refuses, named in the message) or its stack run failed (GCE's reason); retried with backoff",
  },
  IPv6Unavailable: {
    type: "Warning",
    object: "Service",
    when: "a PreferDualStack Service is served IPv4 only, and why (target pool, Standard tier, no subnetwork); on each change",
  },
  BackendLimit: {
    type: "Warning",
    object: "Service",
    when: "an internal Service's instance-group backends hold more than 250 VMs, the most an internal passthrough load balancer distributes to with instance groups: `backendMode: neg` lifts it; on each change",
  },
  SubsetTruncated: {
    type: "Warning",
    object: "Service",
    when: "a `neg` Service with externalTrafficPolicy Local has more eligible nodes than its subset holds: pods on nodes outside the subset get no traffic; on each change",
  },
  UnsupportedConfiguration: {
    type: "Warning",
    object: "Service",
    when: "a Service asks for a combination dccm does not serve (e.g. `networking.gke.io/weighted-load-balancing` without externalTrafficPolicy Local): the rest is served, that part ignored; on each change",
  },
  MixedStaticIP: {
    type: "Normal",
    object: "Service",
    when: "a Service names an IPv4 address in `networking.gke.io/load-balancer-ip-addresses` and sets spec.loadBalancerIP too: the named address is used (ingress-gce's Event and wording); on each change",
  },
  LoadBalancerManualChange: {
    type: "Normal",
    object: "Service",
    when: "`firewallManagement: manual`: after each up of the Service's stack, one Event per firewall rule it needs that is missing or differs in the network project, with the ready-to-run `gcloud compute firewall-rules create|update … --project <networkProject>` command (the stock CCM's reason and wording); none once the live rules match",
  },
  DriftCorrected: {
    type: "Normal",
    object: "Service",
    when: "a refresh found GCE changed outside dccm and put it back (what, in the message)",
  },
  LoadBalancerExists: {
    type: "Warning",
    object: "Service",
    when: "before a Service stack's first up, GCE already holds resources under its load balancer's names (the stock CCM's?): held until adopted (`dccm adopt`) or deleted",
  },
  QuotaExceeded: {
    type: "Warning",
    object: "Service",
    when: "GCE refused a run for a quota (the quota, its limit and region in the message), or, before a Service's first up, the quotas as last read have no room for what it creates: held with no run (each quota short, its usage and limit, what the load balancer needs) until a load balancer is deleted. One try per quota wait. The cluster stack's goes to the Lease",
  },
  IPChangeHeld: {
    type: "Warning",
    object: "Service",
    when: "a repair would not keep the load balancer's IP: held for an operator",
  },
  Refreshed: {
    type: "Normal",
    object: "Service",
    when: "the answer to a `dccm.io/refresh-requested` value: no drift, drift repaired, or the pending change applied",
  },
  RefreshFailed: {
    type: "Warning",
    object: "Service",
    when: "the answer to a `dccm.io/refresh-requested` value that could not be carried out (invalid Service, repair held, run failed)",
  },
  AdoptionRefused: {
    type: "Warning",
    object: "Service",
    when: "`--adopt` at start-up refused the Service's stack (the reason in the message): it waits for an operator",
  },
  Synced: {
    type: "Normal",
    object: "Node",
    when: "the node controller initialized the Node (taint removed, providerID and addresses set)",
  },
  DeletingNode: { type: "Normal", object: "Node", when: "the Node's instance no longer exists: the Node is deleted" },
  ShutdownTaintAdded: {
    type: "Normal",
    object: "Node",
    when: "its VM is stopped or suspended: the shutdown taint is added",
  },
  ShutdownTaintRemoved: {
    type: "Normal",
    object: "Node",
    when: "its VM runs again or the Node is Ready: the shutdown taint is removed",
  },
  CIDRNotAvailable: {
    type: "Warning",
    object: "Node",
    when: "podCIDRSource cloud: the VM has no alias IP range to copy into spec.podCIDRs",
  },
  PodCIDRMismatch: {
    type: "Warning",
    object: "Node",
    when: "podCIDRSource cloud: the Node's spec.podCIDRs are not its VM's alias IP ranges (the apiserver refuses to change them)",
  },
  CIDRAssignmentFailed: { type: "Warning", object: "Node", when: "podCIDRSource cloud: writing spec.podCIDRs failed" },
  FailedToCreateRoute: {
    type: "Warning",
    object: "Node",
    when: "the Node's route could not be created (its NetworkUnavailable condition says so too)",
  },
  InstanceNotFound: {
    type: "Warning",
    object: "Node",
    when: "a Node's instance is gone: it is left out of instance groups and routes",
  },
  RouteRestored: {
    type: "Normal",
    object: "Node, else the Lease",
    when: "a refresh put back a route of the cluster stack changed or deleted outside dccm",
  },
  ClusterDriftCorrected: {
    type: "Normal",
    object: "Lease kube-system/dccm",
    when: "a refresh put back anything else of the cluster stack (instance groups, health check, firewalls)",
  },
  SyncClusterFailed: {
    type: "Warning",
    object: "Lease kube-system/dccm",
    when: "a cluster-stack run failed (GCE's reason); retried with backoff",
  },
  OrphanDestroysHeld: {
    type: "Warning",
    object: "Namespace kube-system",
    when: "at start-up, more Service stacks than the breaker allows have no Service: none destroyed until `--confirm-orphan-destroys N`",
  },
  LeakedResources: {
    type: "Warning",
    object: "Namespace kube-system",
    when: "the leak check found GCE resources of this cluster that no stack owns (`dccm gc` lists and deletes them)",
  },
} as const satisfies Record<string, EventReasonRow>;

export type EventReason = keyof typeof EVENT_REASONS;

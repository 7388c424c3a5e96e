/**
 * The cluster stack controller's pure decisions: what a sync does next (planClusterSync), what the
 * stack's outputs say once checked (clusterOutputs), and whether a Service stack can run on what
 * the cluster stack applied (clusterReadyFor). The executor beside it (controller.ts) does the I/O.
 */
import { backendGroupKeys, FIREWALL_PRIORITY_DEFAULT, type ServiceDesired } from "../../model";
import { isRecord } from "../../runtime/guards";
import type { StackRecord } from "../stackRecords";

export interface ClusterOutputs {
  /** instanceGroupKey (the zone for its first group, `<zone>/<name>` for the others) → self link. */
  instanceGroups: Record<string, string>;
  /** `<zone>/<name>` → instance names: the groups' membership as applied (ObservedCloud.groupMembers). */
  instanceGroupMembers: Record<string, string[]>;
  routes: Record<string, string>;
  legacyNodeHealthCheck?: string;
  /** Recorded only when not GCE's default: 999 while the deny rules are on (components/stack.ts). */
  nodeHealthCheckFirewallPriority?: number;
}

function listMap(value: unknown): Record<string, string[]> {
  if (!isRecord(value)) return {};
  const lists: Record<string, string[]> = {};
  for (const [key, list] of Object.entries(value))
    if (Array.isArray(list)) lists[key] = list.filter((item): item is string => typeof item === "string");
  return lists;
}

function stringMap(value: unknown): Record<string, string> {
  if (!isRecord(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );
}

/** The cluster stack's outputs, checked: anything not of the recorded shape is left out. */
export function clusterOutputs(outputs: Record<string, unknown>): ClusterOutputs {
  return {
    instanceGroups: stringMap(outputs.instanceGroups),
    instanceGroupMembers: listMap(outputs.instanceGroupMembers),
    routes: stringMap(outputs.routes),
    ...(typeof outputs.legacyNodeHealthCheck === "string"
      ? { legacyNodeHealthCheck: outputs.legacyNodeHealthCheck }
      : {}),
    ...(typeof outputs.nodeHealthCheckFirewallPriority === "number"
      ? { nodeHealthCheckFirewallPriority: outputs.nodeHealthCheckFirewallPriority }
      : {}),
  };
}

export type ClusterSyncAction =
  /** Nothing to apply, and what was applied is already published to the Service stacks. */
  | { kind: "none" }
  /** Ask GCE which Nodes' instances are gone first: the desired state may change. */
  | { kind: "observeInstances" }
  /** Read what the stack recorded (once after a start). */
  | { kind: "inspect" }
  /** The stack already declares the desired state: publish what it recorded. */
  | { kind: "publishRecorded" }
  /** Run `up` for `hash`; `drift`: a drift pass of an applied state (what it changed was put back). */
  | { kind: "apply"; hash: string; drift: boolean };

export interface ClusterSyncInput {
  hash: string | undefined;
  refresh: boolean;
  /** What the stack applied was published since the start. */
  published: boolean;
  /** Instances were asked about in this sync, or cannot be (no Compute access). */
  instancesObserved: boolean;
}

export function planClusterSync(record: StackRecord, input: ClusterSyncInput): ClusterSyncAction {
  if (input.hash === undefined) return { kind: "none" };
  const unchanged = record.applied === input.hash && !input.refresh;
  if (unchanged && input.published) return { kind: "none" };
  // A Node whose VM is gone would make every write of its group fail: ask before running.
  if (!input.instancesObserved) return { kind: "observeInstances" };
  if (record.recorded === undefined) return { kind: "inspect" };
  if (unchanged) return { kind: "publishRecorded" };
  return { kind: "apply", hash: input.hash, drift: input.refresh && record.applied === input.hash };
}

/** What the cluster stack last applied that Service stacks point at, or rely on. */
export interface AppliedCluster {
  /** Its groups' instanceGroupKeys. */
  zones: Set<string>;
  legacyHealthCheck: boolean;
  /** Its node health-check firewall sits above the deny rules (999). */
  nodeHealthCheckFirewallAboveDeny: boolean;
}

export function appliedClusterOf(outputs: ClusterOutputs): AppliedCluster {
  return {
    zones: new Set(Object.keys(outputs.instanceGroups)),
    legacyHealthCheck: outputs.legacyNodeHealthCheck !== undefined,
    nodeHealthCheckFirewallAboveDeny:
      outputs.nodeHealthCheckFirewallPriority !== undefined &&
      outputs.nodeHealthCheckFirewallPriority < FIREWALL_PRIORITY_DEFAULT,
  };
}

/**
 * Pure: whether a Service stack can run on what the cluster stack applied: its groups, the legacy
 * check of a target pool on the shared check, and, before it creates a deny rule, the node
 * health-check firewall moved above it (the health checkers' probes to the load balancer's IP would
 * otherwise be denied: docs/guides/services.md#service-semantics, "Deny rule").
 */
export function clusterReadyFor(applied: AppliedCluster | undefined, service: ServiceDesired): boolean {
  if (applied === undefined) return false;
  if (backendGroupKeys(service).some((key) => !applied.zones.has(key))) return false;
  if (
    service.denyFirewall !== undefined &&
    service.healthCheck.kind === "shared" &&
    !applied.nodeHealthCheckFirewallAboveDeny
  )
    return false;
  return !(service.backend === "target-pool" && service.healthCheck.kind === "shared" && !applied.legacyHealthCheck);
}

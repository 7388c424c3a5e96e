/**
 * The cluster stack's controller: instance groups, routes and the legacy node health check. A pure
 * plan per sync (planClusterSync) and a thin executor; Service stacks wait for what it applied.
 * What a drift pass put back, and a failed run, are told as Events (controllers/cluster/events.ts).
 */
import type { Logger } from "pino";
import { backendGroupKeys, CLUSTER_STACK, FIREWALL_PRIORITY_DEFAULT, type ServiceDesired } from "../../model";
import type { DesiredCache } from "../../model/desiredCache";
import { isRecord } from "../../runtime/guards";
import { describeError } from "../../runtime/errors";
import type { EventRecorder, EventTarget } from "../../runtime/events";
import type { EnqueueFlags, ReconcileResult, WorkItem } from "../../runtime/queue";
import type { ControllerMetrics } from "../metrics";
import { clusterDriftEvents, clusterFailureEvent, putBackCounts, type ClusterEvent, type NodeRef } from "./events";
import {
  describePutBack,
  type FullRefreshTimers,
  type StackRecord,
  type StackRecords,
  type StackRuns,
} from "../stackRuns";
import type { PutBack } from "../../stacks/events";
import type { StatusBook } from "../status";
import { classifyFailure, QUOTA_EXCEEDED, QUOTA_RETRY_MS, quotaExceededMessage } from "../failures";

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

/** Where the cluster stack's Events go (controllers/cluster/events.ts). */
export interface ClusterEventDeps {
  recorder: Pick<EventRecorder, "record">;
  clusterName: string;
  /** The Nodes the daemon's watch holds now. */
  nodes: () => readonly NodeRef[];
  /** The Lease kube-system/dccm with its UID; never rejects. */
  lease: () => Promise<EventTarget>;
}

export interface ClusterControllerDeps {
  cache: Pick<DesiredCache, "view">;
  records: StackRecords;
  runs: StackRuns;
  drift: FullRefreshTimers;
  metrics: ControllerMetrics;
  logger: Logger;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  /** Asks GCE which Nodes' instances are gone; absent without Compute access (node controller off). */
  observeInstances?: () => Promise<void>;
  onClusterApplied?: (outputs: ClusterOutputs) => void;
  /**
   * The groups' membership the stack recorded: after each run, and once after a start before the
   * first run, so that a Node keeps its group across a restart (model/groups.ts).
   */
  onGroupMembers?: (members: Record<string, string[]>) => void;
  /** Whether the node health-check firewall the stack recorded sits above deny rules (999): told with the membership, before the first run since a start. */
  onRecordedFirewall?: (aboveDeny: boolean) => void;
  onClusterFailed?: (error: unknown) => void;
  /** Events about the cluster stack; none recorded when absent. */
  clusterEvents?: ClusterEventDeps;
  /** The daemon's: a run cancelled by a shutdown is not reported as a failure. */
  signal?: AbortSignal;
  status?: Pick<StatusBook, "driftCorrected">;
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

export class ClusterController {
  private applied: AppliedCluster | undefined;
  /** The recorded membership was told (onGroupMembers) since the start. */
  private membersTold = false;
  /** Service stacks deferred until the cluster stack applies: they run as soon as it has. */
  private readonly waiting = new Set<string>();

  constructor(private readonly deps: ClusterControllerDeps) {}

  /** Does the cluster stack hold what this Service's load balancer points at (instance groups, legacy health check)? */
  readyFor(service: ServiceDesired): boolean {
    return clusterReadyFor(this.applied, service);
  }

  /** A Service stack that must wait: it is enqueued again, as a change, once the cluster stack applies. */
  wait(stack: string): void {
    // A nudge, not a change: a failing cluster stack keeps its backoff.
    this.deps.enqueue(CLUSTER_STACK);
    this.waiting.add(stack);
  }

  async sync(item: WorkItem): Promise<ReconcileResult> {
    const record = this.deps.records.get(CLUSTER_STACK);
    let instancesObserved = this.deps.observeInstances === undefined;
    try {
      for (;;) {
        const action = planClusterSync(record, {
          hash: this.deps.cache.view(CLUSTER_STACK).hash,
          refresh: item.refresh,
          published: this.applied !== undefined,
          instancesObserved,
        });
        switch (action.kind) {
          case "none":
            return { kind: "ok" };
          case "observeInstances":
            await this.deps.observeInstances?.();
            instancesObserved = true;
            continue;
          case "inspect":
            await this.deps.runs.inspectOnce(CLUSTER_STACK, { kind: "cluster" }, record);
            continue;
          case "publishRecorded":
            this.published(clusterOutputs(record.recorded ?? {}));
            return { kind: "ok" };
          case "apply":
            // The desired groups depend on the membership last applied: tell it before the first run.
            if (!this.membersTold && record.recorded !== undefined) {
              const recorded = clusterOutputs(record.recorded);
              // Its node health-check firewall above deny rules that unread Service stacks may still hold (ObservedCloud.denyRulesUnread).
              this.deps.onRecordedFirewall?.(appliedClusterOf(recorded).nodeHealthCheckFirewallAboveDeny);
              this.tellMembers(recorded);
              continue;
            }
            return await this.apply(item, record, action.hash, action.drift);
        }
      }
    } catch (error) {
      return await this.failed(error);
    }
  }

  /** Reads the cluster stack before anything runs; throws ForeignStackError when it is another cluster's. */
  async verify(): Promise<void> {
    const record = this.deps.records.get(CLUSTER_STACK);
    if (record.known) await this.deps.runs.inspectOnce(CLUSTER_STACK, { kind: "cluster" }, record);
  }

  private async apply(item: WorkItem, record: StackRecord, hash: string, drift: boolean): Promise<ReconcileResult> {
    // After a restart, what the cluster stack recorded still exists in GCE: Service stacks may
    // point at it even while this run fails (one bad Node or a rate-limited API must not stop
    // every load balancer).
    if (this.applied === undefined && record.recorded?.instanceGroups !== undefined)
      this.applied = appliedClusterOf(clusterOutputs(record.recorded));
    const outcome = await this.deps.runs.up(CLUSTER_STACK, { kind: "cluster" }, record, item.refresh, hash);
    const outputs = clusterOutputs(outcome.outputs);
    record.applied = hash;
    this.published(outputs);
    // After publishing: waiting Service stacks need not wait for the apiserver to take events.
    if (drift && outcome.changed.length > 0) await this.driftCorrected(outcome.changed, outputs);
    return { kind: "ok" };
  }

  private async driftCorrected(changed: PutBack[], outputs: ClusterOutputs): Promise<void> {
    this.deps.metrics.driftCorrections.inc({ kind: "cluster" });
    this.deps.status?.driftCorrected(CLUSTER_STACK, describePutBack(changed));
    for (const [resource, count] of Object.entries(putBackCounts(changed)))
      this.deps.metrics.clusterPutBack.inc({ resource }, count);
    this.deps.logger.info({ stack: CLUSTER_STACK, putBack: describePutBack(changed) }, "drift corrected");
    const events = this.deps.clusterEvents;
    if (events === undefined) return;
    for (const event of clusterDriftEvents({
      changed,
      routes: outputs.routes,
      clusterName: events.clusterName,
      nodes: events.nodes(),
    }))
      await this.record(events, event);
  }

  private async record(deps: ClusterEventDeps, event: ClusterEvent): Promise<void> {
    // involvedObject.uid of a Node is its name, as kubelet's are: `kubectl describe node` matches on it.
    const target: EventTarget =
      event.object.kind === "Node"
        ? { kind: "Node", name: event.object.name, uid: event.object.name }
        : await deps.lease();
    await deps.recorder.record(target, event.type, event.reason, event.message);
  }

  private tellMembers(outputs: ClusterOutputs): void {
    this.membersTold = true;
    this.deps.onGroupMembers?.(outputs.instanceGroupMembers);
  }

  private published(outputs: ClusterOutputs): void {
    this.applied = appliedClusterOf(outputs);
    this.tellMembers(outputs);
    this.deps.onClusterApplied?.(outputs);
    this.deps.drift.arm(CLUSTER_STACK);
    // Flagged as a change: a deferred Service must not sit out its retryAfter once it can run.
    for (const stack of this.waiting) this.deps.enqueue(stack, { changed: true });
    this.waiting.clear();
  }

  private async failed(error: unknown): Promise<ReconcileResult> {
    const verdict = classifyFailure(error, this.deps.signal?.aborted === true);
    // Never retried: the caller refuses the stack (see Reconciler).
    if (verdict.kind === "foreign") throw verdict.error;
    const description = describeError(error);
    this.deps.logger.error({ stack: CLUSTER_STACK, err: description }, "cluster stack update failed");
    this.deps.onClusterFailed?.(error);
    // As for a Service: a shutdown, or a lock another run of ours still holds, is no failure to tell.
    const events = this.deps.clusterEvents;
    if (verdict.kind === "quota") {
      // A quota (ROUTES, FIREWALLS) is not freed by trying again: one try per quota wait.
      this.deps.metrics.quotaExceeded.inc({ kind: "cluster", quota: verdict.quota.quota });
      if (events !== undefined)
        await this.record(events, {
          object: { kind: "Lease" },
          type: "Warning",
          reason: QUOTA_EXCEEDED,
          message: quotaExceededMessage("Error syncing cluster stack", verdict.quota),
        });
      return { kind: "retryAfter", ms: QUOTA_RETRY_MS, reason: `GCE quota ${verdict.quota.quota} exceeded` };
    }
    if (events !== undefined && verdict.kind === "failed") await this.record(events, clusterFailureEvent(description));
    return { kind: "retry", error };
  }
}

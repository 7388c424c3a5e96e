/**
 * The cluster stack's controller: instance groups, routes and the legacy node health check. A pure
 * plan per sync (plan.ts planClusterSync) and this thin executor; Service stacks wait for what it applied.
 * What a drift pass put back, and a failed run, are told as Events (controllers/cluster/events.ts).
 */
import type { Logger } from "pino";
import { CLUSTER_STACK, type ServiceDesired } from "../../model";
import type { DesiredCache } from "../../model/desiredCache";
import { describeError } from "../../runtime/errors";
import type { EventRecorder, EventTarget } from "../../runtime/events";
import type { EnqueueFlags, ReconcileResult, WorkItem } from "../../runtime/queue";
import type { ControllerMetrics } from "../metrics";
import { clusterDriftEvents, clusterFailureEvent, putBackCounts, type ClusterEvent, type NodeRef } from "./events";
import { describePutBack, type StackRuns } from "../stackRuns";
import type { FullRefreshTimers } from "../fullRefresh";
import type { StackRecord, StackRecords } from "../stackRecords";
import type { PutBack } from "../../stacks/events";
import {
  appliedClusterOf,
  clusterOutputs,
  clusterReadyFor,
  planClusterSync,
  type AppliedCluster,
  type ClusterOutputs,
} from "./plan";
import type { StatusBook } from "../status";
import type { ClusterObserver } from "./observer";
import { classifyFailure, QUOTA_EXCEEDED, QUOTA_RETRY_MS, quotaExceededMessage } from "../failures";

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
  records: Pick<StackRecords, "get">;
  runs: Pick<StackRuns, "inspectOnce" | "up">;
  drift: Pick<FullRefreshTimers, "arm">;
  metrics: Pick<ControllerMetrics, "driftCorrections" | "clusterPutBack" | "quotaExceeded">;
  logger: Logger;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  /** Asked about instances before a run; told what each run applied, recorded or failed on. */
  observer: Pick<ClusterObserver, "observeInstances" | "applied" | "failed" | "groupMembers" | "recordedFirewall">;
  /** Events about the cluster stack; none recorded when absent. */
  clusterEvents?: ClusterEventDeps;
  /** The daemon's: a run cancelled by a shutdown is not reported as a failure. */
  signal?: AbortSignal;
  status?: Pick<StatusBook, "driftCorrected">;
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
    let instancesObserved = this.deps.observer.observeInstances === undefined;
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
            await this.deps.observer.observeInstances?.();
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
              this.deps.observer.recordedFirewall(appliedClusterOf(recorded).nodeHealthCheckFirewallAboveDeny);
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
    this.deps.observer.groupMembers(outputs.instanceGroupMembers);
  }

  private published(outputs: ClusterOutputs): void {
    this.applied = appliedClusterOf(outputs);
    this.tellMembers(outputs);
    this.deps.observer.applied(outputs);
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
    this.deps.observer.failed(error);
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

// The thin executors of the node controller's syncs: each performs one plan of plan.ts (lookups,
// writes, events, metrics) and updates the Node's bookkeeping. Decisions stay in plan.ts and
// decide.ts; what is left here is the order of the calls.

import type { V1NodeCondition } from "@kubernetes/client-node";
import type { Logger } from "pino";

import type { EventReason, EventRecorder, EventTarget } from "../../runtime/events";
import { OK, type ReconcileResult } from "../../runtime/queue";
import type { PodCIDRStack } from "../../model";
import { retryOnConflict } from "../../runtime/retry";
import { trimWatchedNode, type WatchedNode } from "../../watcher/trim";
import {
  decidePodCIDRs,
  decideShutdownTaint,
  initializationMergePatch,
  type InstanceLookup,
  type NodeMergePatch,
  podCIDRCondition,
  podCIDRsFromInstance,
  type ProviderID,
  routeCondition,
  type RouteStatus,
  SHUTDOWN_TAINT,
  shouldDeleteNode,
  shutdownTaintPatch,
} from "./decide";
import { KubeConflictError, type NodeApi } from "./kube";
import type { InstanceLocator } from "./locate";
import type { NodeMetrics } from "./metrics";
import {
  afterDelete,
  type InitializePlan,
  type LookupTarget,
  type NodeSyncState,
  planAddresses,
  planAddressWrite,
  planInitializeWrite,
  planLifecycle,
  planPodCIDRs,
  podCIDRLookupResult,
  type SyncClock,
} from "./plan";

/** What the executors act through; the controller builds one per start(). */
export interface SyncContext {
  readonly api: NodeApi;
  readonly locator: InstanceLocator;
  readonly events: EventRecorder;
  readonly metrics: NodeMetrics;
  readonly log: Logger;
  readonly routes: { routeStatus(nodeName: string): RouteStatus } | undefined;
  /** Set with podCIDRSource cloud: the stack the Nodes' pod CIDRs are read for. */
  readonly podCIDRStack: PodCIDRStack | undefined;
  readonly clock: () => SyncClock;
}

/** Tries of one Node patch against concurrent writers (client-go's retry.DefaultRetry has 5 steps too). */
const UPDATE_ATTEMPTS = 5;

/** Node events carry the Node's name as involvedObject.uid, as kubelet's do: `kubectl describe node` matches on it. */
function nodeTarget(name: string): EventTarget {
  return { kind: "Node", name, uid: name };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function lookup(ctx: SyncContext, target: LookupTarget): Promise<InstanceLookup> {
  return target.by === "providerID" ? ctx.locator.byProviderID(target.pid) : ctx.locator.byName(target.name);
}

/** Deletes the Node when its instance is definitively gone; a result ends the reconcile, undefined carries on. */
export async function syncLifecycle(
  ctx: SyncContext,
  node: WatchedNode,
  state: NodeSyncState,
): Promise<ReconcileResult | undefined> {
  const plan = planLifecycle(node, state, ctx.clock());
  if (plan.kind === "skip") {
    return syncShutdownTaint(ctx, node, undefined);
  }
  const found = await confirmInstance(ctx, plan.pid);
  state.lastLifecycleCheck = ctx.clock().now;
  const decision = shouldDeleteNode(node, found);
  if (!decision.delete) {
    if (found.kind === "error") {
      ctx.log.warn({ node: node.name, err: found.error }, `keeping NotReady node: ${decision.reason}`);
    } else {
      ctx.log.debug({ node: node.name }, `keeping NotReady node: ${decision.reason}`);
    }
    return syncShutdownTaint(ctx, node, found);
  }
  const outcome = afterDelete(
    node.name,
    await ctx.api.deleteNode(node.name, { uid: node.uid, resourceVersion: node.resourceVersion }),
  );
  if (outcome.recheck) {
    delete state.lastLifecycleCheck;
  }
  if (outcome.announce) {
    await ctx.events.record(
      nodeTarget(node.name),
      "Normal",
      "DeletingNode",
      `Deleting node ${node.name} because ${decision.reason}`,
    );
    ctx.metrics.deletions.inc();
    ctx.log.info({ node: node.name, providerID: node.providerID }, `deleted node: ${decision.reason}`);
  }
  return outcome.result;
}

/**
 * Adds or removes the shutdown taint (decide.decideShutdownTaint); `lookup` is the lifecycle
 * check's, undefined when none ran (a Ready Node only ever loses the taint). Undefined carries on.
 */
async function syncShutdownTaint(
  ctx: SyncContext,
  node: WatchedNode,
  lookup: InstanceLookup | undefined,
): Promise<ReconcileResult | undefined> {
  const decision = decideShutdownTaint(node, lookup);
  if (decision.kind === "none") {
    return undefined;
  }
  const add = decision.kind === "add";
  try {
    const outcome = await patchWithRetry(ctx.api, node, (current) => shutdownTaintPatch(current, add));
    if (outcome !== "updated") {
      return undefined;
    }
  } catch (err) {
    return {
      kind: "retry",
      error: new Error(`${add ? "add" : "remove"} the shutdown taint of node ${node.name}`, { cause: err }),
    };
  }
  ctx.metrics.shutdownTaints.inc({ action: add ? "added" : "removed" });
  const message = add
    ? `Added taint ${SHUTDOWN_TAINT}:NoSchedule: instance is ${decision.status}`
    : `Removed taint ${SHUTDOWN_TAINT}: ${decision.reason}`;
  ctx.log.info({ node: node.name }, message);
  await ctx.events.record(
    nodeTarget(node.name),
    "Normal",
    add ? "ShutdownTaintAdded" : "ShutdownTaintRemoved",
    message,
  );
  return undefined;
}

/** A listed instance spares the instances.get; only a miss asks Compute in the providerID's zone. */
async function confirmInstance(ctx: SyncContext, pid: ProviderID): Promise<InstanceLookup> {
  const cached = ctx.locator.cachedByProviderID(pid);
  return cached !== undefined ? { kind: "found", instance: cached } : ctx.locator.confirmGone(pid);
}

/** Initializes a tainted Node: addresses, then providerID, labels and the taint's removal in one patch. */
export async function syncInitialize(
  ctx: SyncContext,
  node: WatchedNode,
  state: NodeSyncState,
  plan: Exclude<InitializePlan, { kind: "initialized" }>,
): Promise<ReconcileResult> {
  if (plan.kind === "awaitOwnUpdate") {
    return OK;
  }
  const write = planInitializeWrite(node, plan.target, await lookup(ctx, plan.target));
  if (write.kind === "fail") {
    ctx.metrics.initializations.inc({ result: "error" });
    return { kind: "retry", error: write.error };
  }
  try {
    // The status patch returns the Node at its new resourceVersion: patching from the cache
    // copy would be a guaranteed conflict plus a re-read.
    const base = write.writeAddresses
      ? trimWatchedNode(await ctx.api.setNodeAddresses(node.name, write.patch.addresses))
      : node;
    const outcome = await patchWithRetry(ctx.api, base, (current) => initializationMergePatch(current, write.patch));
    if (outcome === "gone") {
      return OK;
    }
    state.lastAddressSync = ctx.clock().now;
    state.justInitialized = { uid: node.uid, at: ctx.clock().now };
    if (outcome === "unchanged") {
      // A stale cache entry of a Node we already initialized: nothing to announce.
      return OK;
    }
  } catch (err) {
    ctx.metrics.initializations.inc({ result: "error" });
    return { kind: "retry", error: new Error(`initialize node ${node.name}`, { cause: err }) };
  }
  ctx.metrics.initializations.inc({ result: "ok" });
  ctx.log.info(
    { node: node.name, providerID: write.patch.providerID ?? node.providerID, zone: write.zone },
    "node initialized",
  );
  await ctx.events.record(nodeTarget(node.name), "Normal", "Synced", "Node synced successfully");
  return OK;
}

/**
 * Retry-on-conflict: the patch is computed from the freshest copy we have and carries its
 * resourceVersion; after a conflict the Node is re-read from the apiserver (not the cache, which
 * may lag) and the patch recomputed.
 */
async function patchWithRetry(
  api: NodeApi,
  start: WatchedNode,
  compute: (node: WatchedNode) => NodeMergePatch | undefined,
): Promise<"updated" | "unchanged" | "gone"> {
  let current = start;
  return retryOnConflict(`update node ${start.name}`, UPDATE_ATTEMPTS, async (attempt) => {
    if (attempt > 1) {
      const fresh = await api.getNode(start.name);
      if (fresh === undefined) {
        return { kind: "done", value: "gone" };
      }
      current = trimWatchedNode(fresh);
    }
    const patch = compute(current);
    if (patch === undefined) {
      return { kind: "done", value: "unchanged" };
    }
    try {
      await api.patchNode(start.name, current.resourceVersion, patch);
      return { kind: "done", value: "updated" };
    } catch (err) {
      if (err instanceof KubeConflictError) {
        return { kind: "conflict", error: err };
      }
      throw err;
    }
  });
}

/** Rewrites status.addresses of an initialized Node when its instance's addresses changed. */
export async function syncAddresses(
  ctx: SyncContext,
  node: WatchedNode,
  state: NodeSyncState,
): Promise<ReconcileResult> {
  const plan = planAddresses(node, state, ctx.clock());
  if (plan.kind === "skip") {
    return OK;
  }
  const write = planAddressWrite(node, await lookup(ctx, plan.target));
  if (write.kind === "retry") {
    return { kind: "retry", error: write.error };
  }
  state.lastAddressSync = ctx.clock().now;
  if (write.kind === "none") {
    return OK;
  }
  try {
    await ctx.api.setNodeAddresses(node.name, write.addresses);
    ctx.log.info({ node: node.name, addresses: write.addresses }, "node addresses updated");
    return OK;
  } catch (err) {
    delete state.lastAddressSync;
    return { kind: "retry", error: asError(err) };
  }
}

/**
 * podCIDRSource cloud: writes spec.podCIDR(s) from the VM's alias range onto a Node that has none
 * (once: the apiserver refuses changes), keeps NetworkUnavailable, warns when the VM has no range
 * or the Node's range is no longer its VM's.
 */
export async function syncPodCIDRs(
  ctx: SyncContext,
  node: WatchedNode,
  state: NodeSyncState,
): Promise<ReconcileResult> {
  const stack = ctx.podCIDRStack;
  if (stack === undefined) {
    return OK;
  }
  const plan = planPodCIDRs(node, state, ctx.clock());
  if (plan.kind === "skip") {
    return OK;
  }
  const looked = podCIDRLookupResult(node, await lookup(ctx, plan.target));
  if (looked.kind === "retry") {
    return { kind: "retry", error: looked.error };
  }
  state.lastPodCIDRCheck = ctx.clock().now;
  if (looked.kind === "none") {
    return OK;
  }
  const decision = decidePodCIDRs(node, podCIDRsFromInstance(looked.instance, stack));
  const now = new Date(ctx.clock().now);
  try {
    switch (decision.kind) {
      case "assign": {
        const outcome = await patchWithRetry(ctx.api, node, (current) =>
          (current.podCIDRs?.length ?? 0) > 0 ? undefined : { podCIDRs: decision.cidrs },
        );
        if (outcome === "updated") {
          ctx.metrics.podCIDRs.inc({ result: "assigned" });
          ctx.log.info({ node: node.name, podCIDRs: decision.cidrs }, "pod CIDRs set from the VM's alias IP range");
        }
        delete state.podCIDRWarning;
        await writeCondition(ctx, node.name, podCIDRCondition(node, true, now));
        return OK;
      }
      case "inSync":
        delete state.podCIDRWarning;
        await writeCondition(ctx, node.name, podCIDRCondition(node, (node.podCIDRs?.length ?? 0) > 0, now));
        return OK;
      case "unavailable":
        await warnOnce(ctx, node.name, state, "CIDRNotAvailable", decision.message, "unavailable");
        await writeCondition(ctx, node.name, podCIDRCondition(node, false, now, decision.message));
        return OK;
      case "mismatch":
        await warnOnce(ctx, node.name, state, "PodCIDRMismatch", decision.message, "mismatch");
        return OK;
    }
  } catch (err) {
    ctx.metrics.podCIDRs.inc({ result: "error" });
    delete state.lastPodCIDRCheck;
    await ctx.events.record(
      nodeTarget(node.name),
      "Warning",
      "CIDRAssignmentFailed",
      `Could not set the pod CIDRs of node ${node.name}: ${asError(err).message}`,
    );
    return { kind: "retry", error: new Error(`set pod CIDRs of node ${node.name}`, { cause: err }) };
  }
}

async function writeCondition(ctx: SyncContext, name: string, condition: V1NodeCondition | undefined): Promise<void> {
  if (condition !== undefined) {
    await ctx.api.setNodeCondition(name, condition);
  }
}

/** One Warning per distinct message and Node: the periodic re-check must not repeat it. */
async function warnOnce(
  ctx: SyncContext,
  name: string,
  state: NodeSyncState,
  reason: EventReason,
  message: string,
  result: "unavailable" | "mismatch",
): Promise<void> {
  if (state.podCIDRWarning === message) {
    return;
  }
  state.podCIDRWarning = message;
  ctx.metrics.podCIDRs.inc({ result });
  ctx.log.warn({ node: name }, message);
  await ctx.events.record(nodeTarget(name), "Warning", reason, message);
}

/** Mirrors the cluster stack's route for the Node into its NetworkUnavailable condition. */
export async function syncRouteCondition(ctx: SyncContext, node: WatchedNode): Promise<ReconcileResult> {
  if (ctx.routes === undefined) {
    return OK;
  }
  const change = routeCondition(node, ctx.routes.routeStatus(node.name), new Date(ctx.clock().now));
  if (change === undefined) {
    return OK;
  }
  try {
    await ctx.api.setNodeCondition(node.name, change.condition);
  } catch (err) {
    return { kind: "retry", error: asError(err) };
  }
  if (change.warning !== undefined) {
    await ctx.events.record(nodeTarget(node.name), "Warning", "FailedToCreateRoute", change.warning);
  }
  return OK;
}

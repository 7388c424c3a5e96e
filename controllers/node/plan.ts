// The node controller's three syncs as pure plans: what to look up and what to write for one Node,
// given the Node as the watch cache holds it, the Node's bookkeeping and the clock. No I/O: the
// executors (syncs.ts) perform the plans, and every branch here is table-tested in
// test/unit/controllers/node/plan.test.ts.
//
//   lifecycle        NotReady Node with a providerID → look its instance up → delete when gone
//   initialize       tainted Node → look its instance up → addresses, then labels/providerID/taint
//   addresses        (the initialize sync of an initialized Node) periodic refresh of status.addresses
//   route condition  NetworkUnavailable from the cluster stack's route state (decide.routeCondition)
//   pod CIDRs        (podCIDRSource cloud) spec.podCIDRs from the VM's alias range, once; NetworkUnavailable
//   shutdown taint   (inside lifecycle) the taint on a NotReady Node whose VM is stopped or suspended

import type { Instance } from "../../gce";
import type { ReconcileResult } from "../../runtime/queue";
import type { NodeAddress, WatchedNode } from "../../watcher/trim";
import {
  desiredAddresses,
  hasUninitializedTaint,
  initializationPatch,
  type InitializationPatch,
  type InstanceLookup,
  parseProviderID,
  type ProviderID,
  sameAddresses,
} from "./decide";

/**
 * Per-Node bookkeeping, one record per queue key. In memory only: after a restart every Node is
 * simply due once.
 */
export interface NodeSyncState {
  lastAddressSync?: number;
  lastLifecycleCheck?: number;
  /**
   * When we last initialized this Node (its uid then). Until the watch delivers our own update,
   * the cache still shows the taint; re-initializing from that stale copy would cost a conflict
   * and a fresh read per Node for nothing.
   */
  justInitialized?: { readonly uid: string; readonly at: number };
  /** Last pod CIDR check against Compute (podCIDRSource cloud). */
  lastPodCIDRCheck?: number;
  /** The last pod CIDR Warning sent for this Node: the same one is not repeated every period. */
  podCIDRWarning?: string;
}

export interface SyncClock {
  readonly now: number;
  readonly addressRefreshMs: number;
  readonly lifecycleCheckMs: number;
}

/** How long our own initialization vouches for a cache copy that still shows the taint. */
export const JUST_INITIALIZED_MS = 30_000;

/** How an instance is looked up: by the kubelet's providerID, else by the Node's name in the region. */
export type LookupTarget =
  { readonly by: "providerID"; readonly pid: ProviderID } | { readonly by: "name"; readonly name: string };

export function lookupTarget(node: WatchedNode): LookupTarget {
  const pid = parseProviderID(node.providerID);
  return pid !== undefined ? { by: "providerID", pid } : { by: "name", name: node.name };
}

// ---- lifecycle ----------------------------------------------------------------------------------

export type LifecyclePlan =
  | { readonly kind: "skip" }
  /** Ask Compute whether the providerID's instance still exists. */
  | { readonly kind: "check"; readonly pid: ProviderID };

/**
 * Only Nodes that are not Ready (False, Unknown, or no Ready condition at all: see isReady in
 * decide.ts) with a gce:// providerID are checked (a Node without one cannot be tied to an
 * instance), and at most every half period: update events of a NotReady Node (conditions, our own
 * writes) must not each cost a Compute call; the lifecycle ticker brings it back every period.
 */
export function planLifecycle(node: WatchedNode, state: NodeSyncState, clock: SyncClock): LifecyclePlan {
  const pid = parseProviderID(node.providerID);
  if (pid === undefined || node.ready === "True") {
    return { kind: "skip" };
  }
  const last = state.lastLifecycleCheck;
  if (last !== undefined && clock.now - last < clock.lifecycleCheckMs / 2) {
    return { kind: "skip" };
  }
  return { kind: "check", pid };
}

/** What a preconditioned delete's outcome means for the reconcile. */
export function afterDelete(
  name: string,
  outcome: "deleted" | "gone" | "conflict",
): { readonly result: ReconcileResult; readonly announce: boolean; readonly recheck: boolean } {
  switch (outcome) {
    case "deleted":
      // Announced after the fact: a delete refused by its preconditions is no news.
      return { result: { kind: "ok" }, announce: true, recheck: false };
    case "gone":
      return { result: { kind: "ok" }, announce: false, recheck: false };
    case "conflict":
      // It changed since we looked (maybe Ready again): decide again on fresh data.
      return {
        result: { kind: "retry", error: new Error(`delete node ${name}: precondition failed, node changed`) },
        announce: false,
        recheck: true,
      };
  }
}

// ---- initialize / addresses ---------------------------------------------------------------------

export type InitializePlan =
  /** Not tainted: the address refresh (and the route condition) run instead. */
  | { readonly kind: "initialized" }
  /** Tainted, but we just initialized it: our update's watch event is on its way and will enqueue it again. */
  | { readonly kind: "awaitOwnUpdate" }
  | { readonly kind: "initialize"; readonly target: LookupTarget };

export function planInitialize(node: WatchedNode, state: NodeSyncState, clock: SyncClock): InitializePlan {
  if (!hasUninitializedTaint(node)) {
    return { kind: "initialized" };
  }
  const recent = state.justInitialized;
  if (recent !== undefined && recent.uid === node.uid && clock.now - recent.at < JUST_INITIALIZED_MS) {
    return { kind: "awaitOwnUpdate" };
  }
  return { kind: "initialize", target: lookupTarget(node) };
}

export type InitializeWrite =
  | { readonly kind: "fail"; readonly error: Error }
  /**
   * Addresses first (when they differ): once the taint is gone Pods land on the Node, and they
   * (and kube-proxy) need its IPs. The status subresource cannot ride in the same patch.
   */
  | {
      readonly kind: "write";
      readonly patch: InitializationPatch;
      readonly writeAddresses: boolean;
      readonly zone: string;
    };

export function planInitializeWrite(node: WatchedNode, target: LookupTarget, lookup: InstanceLookup): InitializeWrite {
  if (lookup.kind !== "found") {
    return { kind: "fail", error: lookupError(node.name, target, lookup) };
  }
  const patch = initializationPatch(node, lookup.instance);
  return {
    kind: "write",
    patch,
    writeAddresses: !sameAddresses(node.addresses, patch.addresses),
    zone: lookup.instance.zone,
  };
}

export type AddressPlan = { readonly kind: "skip" } | { readonly kind: "lookup"; readonly target: LookupTarget };

/**
 * Due once per refresh period, with half a period of slack: the ticker fires every period, and the
 * previous sync happened a little after the previous tick.
 */
export function planAddresses(node: WatchedNode, state: NodeSyncState, clock: SyncClock): AddressPlan {
  const last = state.lastAddressSync;
  if (last !== undefined && clock.now - last < clock.addressRefreshMs / 2) {
    return { kind: "skip" };
  }
  return { kind: "lookup", target: lookupTarget(node) };
}

export type AddressWrite =
  /** The lookup failed: retry, and do not count it as a sync. */
  | { readonly kind: "retry"; readonly error: Error }
  /** Synced: nothing to write (unchanged, or not ours to describe; a gone instance is the lifecycle's business). */
  | { readonly kind: "none" }
  | { readonly kind: "write"; readonly addresses: readonly NodeAddress[] };

export function planAddressWrite(node: WatchedNode, lookup: InstanceLookup): AddressWrite {
  if (lookup.kind === "error") {
    return { kind: "retry", error: new Error(`refresh addresses of node ${node.name}`, { cause: lookup.error }) };
  }
  if (lookup.kind !== "found") {
    return { kind: "none" };
  }
  const want = desiredAddresses(node, lookup.instance);
  return want.length === 0 || sameAddresses(node.addresses, want)
    ? { kind: "none" }
    : { kind: "write", addresses: want };
}

// ---- pod CIDRs (podCIDRSource cloud) -----------------------------------------------------------

export type PodCIDRPlan = { readonly kind: "skip" } | { readonly kind: "lookup"; readonly target: LookupTarget };

/**
 * A Node without pod CIDR, or not yet NetworkUnavailable=False, is checked at most every half
 * lifecycle period (it may wait for its VM's range, and a kubelet's status updates must not each
 * cost a Compute call); a settled one every half address refresh period, to notice a VM whose
 * range no longer matches.
 */
export function planPodCIDRs(node: WatchedNode, state: NodeSyncState, clock: SyncClock): PodCIDRPlan {
  const settled = (node.podCIDRs?.length ?? 0) > 0 && node.networkUnavailable?.status === "False";
  const every = settled ? clock.addressRefreshMs : clock.lifecycleCheckMs;
  const last = state.lastPodCIDRCheck;
  if (last !== undefined && clock.now - last < every / 2) {
    return { kind: "skip" };
  }
  return { kind: "lookup", target: lookupTarget(node) };
}

/** A failed lookup is retried; a missing or ambiguous instance is the other syncs' business. */
export function podCIDRLookupResult(
  node: WatchedNode,
  lookup: InstanceLookup,
):
  | { readonly kind: "retry"; readonly error: Error }
  | { readonly kind: "none" }
  | { readonly kind: "found"; readonly instance: Instance } {
  if (lookup.kind === "error") {
    return { kind: "retry", error: new Error(`read pod CIDRs of node ${node.name}`, { cause: lookup.error }) };
  }
  return lookup.kind === "found" ? { kind: "found", instance: lookup.instance } : { kind: "none" };
}

// ---- results ------------------------------------------------------------------------------------

/** The most urgent of several results: retry before retryAfter before giveUp before ok. */
export function worst(...results: ReconcileResult[]): ReconcileResult {
  const rank = { retry: 3, retryAfter: 2, giveUp: 1, ok: 0 } as const;
  return results.reduce<ReconcileResult>((a, b) => (rank[b.kind] > rank[a.kind] ? b : a), { kind: "ok" });
}

/** Why initialization could not find the Node's instance, naming what was looked for. */
export function lookupError(
  name: string,
  target: LookupTarget,
  lookup: Exclude<InstanceLookup, { kind: "found" }>,
): Error {
  const what =
    target.by === "providerID"
      ? `instance ${target.pid.project}/${target.pid.zone}/${target.pid.name}`
      : `an instance named ${name}`;
  switch (lookup.kind) {
    case "error":
      return new Error(`initialize node ${name}: looking up ${what} failed`, { cause: lookup.error });
    case "ambiguous":
      return new Error(
        `initialize node ${name}: ${what} exists in several zones (${lookup.zones.join(", ")}); set the kubelet's --provider-id`,
      );
    case "notFound":
      return lookup.scope === "instance"
        ? new Error(`initialize node ${name}: ${what} does not exist`)
        : new Error(`initialize node ${name}: no ${what.replace(/^an /, "")} in zones ${lookup.zones.join(", ")}`);
  }
}

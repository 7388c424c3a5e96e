// Pure decisions of the node controller: what a Node should look like given its GCE instance,
// whether a Node may be deleted, and which NetworkUnavailable condition it should carry.
// No I/O here: the controller (controller.ts) feeds these functions data and performs the writes,
// so every rule below is table-tested in test/unit/controllers/node/decide.test.ts.

import type { V1Node, V1NodeCondition } from "@kubernetes/client-node";

import { LABEL_UNMANAGED_NODE, LABEL_ZONE, LABEL_ZONE_LEGACY } from "../../model/annotations";
import { isUnmanagedNode } from "../../model/rules";
import { formatProviderID, parseProviderID, type ProviderID } from "../../model/providerId";
import type { NodeAddress, NodeTaint, WatchedNode } from "../../watcher/trim";
import type { Instance } from "../../gce";
import type { PodCIDRStack } from "../../model";

export const UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized";

export const LABEL_REGION = "topology.kubernetes.io/region";
export const LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type";
// Older schedulers, PV node affinities and user manifests still select on these (the zone twins
// are the model's: model/annotations.ts).
export const LABEL_REGION_LEGACY = "failure-domain.beta.kubernetes.io/region";
export const LABEL_INSTANCE_TYPE_LEGACY = "beta.kubernetes.io/instance-type";

export const CONDITION_NETWORK_UNAVAILABLE = "NetworkUnavailable";

// One parser for the model and the node controller; nodes/ reads it through here.
export { formatProviderID, parseProviderID, type ProviderID };

/** GCE zone names are `<region>-<letter>`. */
export function regionOfZone(zone: string): string {
  const i = zone.lastIndexOf("-");
  return i <= 0 ? zone : zone.slice(0, i);
}

/**
 * Why the controller leaves `node` alone (neither initialized, addressed, tainted, conditioned nor
 * deleted), or undefined when it manages it: a Node labelled as no VM of ours, as the stock CCM's
 * node lifecycle controller filters it out of its lister.
 */
export function unmanagedReason(node: WatchedNode): string | undefined {
  return isUnmanagedNode(node) ? `label ${LABEL_UNMANAGED_NODE}=true: not a VM dccm manages` : undefined;
}

export function hasUninitializedTaint(node: WatchedNode): boolean {
  return node.taints.some((t) => t.key === UNINITIALIZED_TAINT);
}

/**
 * Addresses GCE reports for an instance, in the order consumers rely on (the first InternalIP is
 * the node IP for most tools): nic0 first, then the other NICs, IPv4 before IPv6.
 */
export function instanceAddresses(instance: Instance): NodeAddress[] {
  const out: NodeAddress[] = [];
  for (const nic of instance.networkInterfaces) {
    if (nic.networkIP !== undefined) {
      out.push({ type: "InternalIP", address: nic.networkIP });
    }
  }
  for (const nic of instance.networkInterfaces) {
    for (const ac of nic.accessConfigs) {
      if (ac.natIP !== undefined && ac.natIP !== "") {
        out.push({ type: "ExternalIP", address: ac.natIP });
      }
    }
  }
  // Like the stock GCE provider, nic0's IPv6 is reported as an InternalIP whether it is internal
  // (ULA) or external: dual-stack kubelets and CNIs pick the node's IPv6 from InternalIPs.
  const nic0 = instance.networkInterfaces[0];
  if (nic0 !== undefined) {
    const v6 = nic0.ipv6Address ?? nic0.ipv6AccessConfigs.find((a) => a.externalIpv6 !== undefined)?.externalIpv6;
    if (v6 !== undefined && v6 !== "") {
      out.push({ type: "InternalIP", address: v6 });
    }
  }
  return dedupeAddresses(out);
}

/** Cloud addresses plus the kubelet's Hostname entries (GCE does not know the node's hostname). */
export function desiredAddresses(node: WatchedNode, instance: Instance): NodeAddress[] {
  const cloud = instanceAddresses(instance);
  const hostnames = node.addresses
    .filter((a) => a.type === "Hostname")
    .map((a) => ({ type: a.type, address: a.address }));
  return dedupeAddresses([...cloud, ...hostnames]);
}

export function sameAddresses(a: readonly NodeAddress[] | undefined, b: readonly NodeAddress[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((v, i) => v.type === y[i]?.type && v.address === y[i]?.address);
}

function dedupeAddresses(list: readonly NodeAddress[]): NodeAddress[] {
  const seen = new Set<string>();
  return list.filter((a) => {
    const k = `${a.type}/${a.address}`;
    if (seen.has(k)) {
      return false;
    }
    seen.add(k);
    return true;
  });
}

/** What initialization changes on a Node; turned into a merge patch on each conflict retry. */
export interface InitializationPatch {
  /** Only set when the Node has no providerID yet (the field is immutable once set). */
  readonly providerID: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  /** Full desired `status.addresses` (written through the status subresource). */
  readonly addresses: readonly NodeAddress[];
  readonly removeTaint: string;
}

/**
 * What to set on `node` so it describes `instance`. The region is derived from the instance's
 * zone rather than taken from config, so a Node found through its providerID in another region
 * still gets labels that are true.
 */
export function initializationPatch(node: WatchedNode, instance: Instance): InitializationPatch {
  const region = regionOfZone(instance.zone);
  const labels: Record<string, string> = {
    [LABEL_ZONE]: instance.zone,
    [LABEL_ZONE_LEGACY]: instance.zone,
    [LABEL_REGION]: region,
    [LABEL_REGION_LEGACY]: region,
  };
  if (instance.machineType !== "") {
    labels[LABEL_INSTANCE_TYPE] = instance.machineType;
    labels[LABEL_INSTANCE_TYPE_LEGACY] = instance.machineType;
  }
  const current = node.providerID;
  return {
    providerID:
      current === undefined || current === ""
        ? formatProviderID({ project: instance.project, zone: instance.zone, name: instance.name })
        : undefined,
    labels,
    addresses: desiredAddresses(node, instance),
    removeTaint: UNINITIALIZED_TAINT,
  };
}

/**
 * The spec/metadata half of initialization as a JSON merge patch on `node`, or undefined when
 * the Node already has it all. A patch (with the Node's resourceVersion as precondition) rather
 * than a PUT of the whole object: a PUT from our typed client would silently drop fields newer
 * than the client's Node model.
 */
export interface NodeMergePatch {
  /** Only the keys to set; other labels are untouched by a merge patch. */
  readonly labels?: Readonly<Record<string, string>>;
  readonly providerID?: string;
  /** The complete new taint list (lists are replaced by a merge patch); null removes the field. */
  readonly taints?: readonly NodeTaint[] | null;
  /** spec.podCIDR and spec.podCIDRs: only ever written onto a Node that has none (the apiserver refuses changes). */
  readonly podCIDRs?: readonly string[];
}

export function initializationMergePatch(node: WatchedNode, patch: InitializationPatch): NodeMergePatch | undefined {
  const current = node.labels;
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(patch.labels)) {
    if (current[k] !== v) {
      labels[k] = v;
    }
  }
  const out: { labels?: Record<string, string>; providerID?: string; taints?: NodeTaint[] | null } = {};
  if (Object.keys(labels).length > 0) {
    out.labels = labels;
  }
  const pid = node.providerID;
  if (patch.providerID !== undefined && (pid === undefined || pid === "")) {
    out.providerID = patch.providerID;
  }
  const taints = node.taints;
  const kept = taints.filter((t) => t.key !== patch.removeTaint);
  if (kept.length !== taints.length) {
    out.taints = kept.length === 0 ? null : kept;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/** What the apiserver makes of a NodeMergePatch (used by the in-memory API and the tests). */
export function applyNodeMergePatch(node: V1Node, patch: NodeMergePatch): V1Node {
  const metadata = { ...(node.metadata ?? {}) };
  if (patch.labels !== undefined) {
    metadata.labels = { ...(metadata.labels ?? {}), ...patch.labels };
  }
  const spec = { ...(node.spec ?? {}) };
  if (patch.providerID !== undefined) {
    spec.providerID = patch.providerID;
  }
  if (patch.taints === null) {
    delete spec.taints;
  } else if (patch.taints !== undefined) {
    spec.taints = patch.taints.map(({ timeAdded, ...t }) =>
      timeAdded === undefined ? { ...t } : { ...t, timeAdded: new Date(timeAdded) },
    );
  }
  if (patch.podCIDRs !== undefined) {
    spec.podCIDR = patch.podCIDRs[0] ?? "";
    spec.podCIDRs = [...patch.podCIDRs];
  }
  return { ...node, metadata, spec };
}

/** What looking up a Node's instance found. */
export type InstanceLookup =
  | { readonly kind: "found"; readonly instance: Instance }
  /** instances.get answered 404 for exactly this project/zone/name. */
  | {
      readonly kind: "notFound";
      readonly scope: "instance";
      readonly project: string;
      readonly zone: string;
      readonly name: string;
    }
  /** No instance of that name in the zones we searched (says nothing about other zones). */
  | { readonly kind: "notFound"; readonly scope: "region"; readonly name: string; readonly zones: readonly string[] }
  | { readonly kind: "ambiguous"; readonly name: string; readonly zones: readonly string[] }
  | { readonly kind: "error"; readonly error: Error };

export type DeleteDecision =
  { readonly delete: true; readonly reason: string } | { readonly delete: false; readonly reason: string };

/**
 * A Node is deleted only when it is not Ready and its own instance is definitively gone: a 404
 * from instances.get on the project and zone in its providerID. Anything weaker keeps it: no
 * providerID, a name search that came up empty (the instance may live in a zone we did not
 * search — the stock CCM deletes Nodes in zones it was not told about), timeouts, permission
 * errors, ambiguous names.
 */
export function shouldDeleteNode(node: WatchedNode, lookup: InstanceLookup): DeleteDecision {
  if (node.deleting) {
    return { delete: false, reason: "already being deleted" };
  }
  // No Ready condition counts as Unknown, as the stock CCM reads it (k8s.io/cloud-provider
  // controllers/nodelifecycle/node_lifecycle_controller.go, MonitorNodes: "Default NodeReady status
  // to v1.ConditionUnknown"; only True is skipped): a Node whose kubelet never reported and whose
  // VM is gone would otherwise stay forever. The instance's 404 below is still what deletes it.
  if (node.ready === "True") {
    return { delete: false, reason: "node is Ready" };
  }
  const pid = parseProviderID(node.providerID);
  if (pid === undefined) {
    return { delete: false, reason: "no gce:// providerID: cannot tell which instance is its own" };
  }
  switch (lookup.kind) {
    case "found":
      return { delete: false, reason: `instance exists in ${lookup.instance.zone}` };
    case "ambiguous":
      return { delete: false, reason: `instance name is ambiguous (${lookup.zones.join(", ")})` };
    case "error":
      return { delete: false, reason: `lookup failed: ${lookup.error.message}` };
    case "notFound":
      if (lookup.scope !== "instance") {
        return { delete: false, reason: "not found by name only; its own zone was not asked" };
      }
      if (lookup.project !== pid.project || lookup.zone !== pid.zone || lookup.name !== pid.name) {
        return {
          delete: false,
          reason: `404 was for ${lookup.project}/${lookup.zone}/${lookup.name}, not the providerID's instance`,
        };
      }
      return { delete: true, reason: `instance ${formatProviderID(pid)} no longer exists` };
  }
}

/** Route state of one Node as the cluster stack reports it. */
export type RouteStatus = "created" | "pending" | { readonly failed: string };

export interface RouteConditionChange {
  readonly condition: V1NodeCondition;
  /** Set when the route failed: the message of the Warning event `FailedToCreateRoute`. */
  readonly warning?: string;
}

/**
 * The NetworkUnavailable condition the Node should carry, or undefined when the current one is
 * already right (or the route is still pending): writing only on change keeps
 * lastTransitionTime meaningful and spares the apiserver.
 */
export function routeCondition(node: WatchedNode, status: RouteStatus, now: Date): RouteConditionChange | undefined {
  if (status === "pending") {
    return undefined;
  }
  const want =
    status === "created"
      ? { status: "False", reason: "RouteCreated", message: "RouteController created a route" }
      : { status: "True", reason: "NoRouteCreated", message: `Could not create a route: ${status.failed}` };
  const current = node.networkUnavailable;
  if (
    current !== undefined &&
    current.status === want.status &&
    current.reason === want.reason &&
    current.message === want.message
  ) {
    return undefined;
  }
  const transitioned = current === undefined || current.status !== want.status;
  const condition: V1NodeCondition = {
    type: CONDITION_NETWORK_UNAVAILABLE,
    ...want,
    lastHeartbeatTime: now,
    lastTransitionTime: transitioned ? now : (toDate(current.lastTransitionTime) ?? now),
  };
  return typeof status === "string"
    ? { condition }
    : { condition, warning: `Could not create route for node ${node.name}: ${status.failed}` };
}

function toDate(v: string | undefined): Date | undefined {
  if (v === undefined) {
    return undefined;
  }
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

// ---- pod CIDRs from alias IP ranges (podCIDRSource cloud) ----------------------------------------

/**
 * The prefix length of a Node's IPv6 pod range: the stock CCM takes the /112 of its default
 * interface's IPv6 address (cloud-provider-gcp providers/gce GetIPV6Address, used by
 * pkg/controller/nodeipam/ipam/cloud_cidr_allocator.go updateCIDRAllocation).
 */
export const IPV6_POD_PREFIX = 112;

export type PodCIDRsFromCloud =
  | { readonly kind: "ok"; readonly cidrs: readonly string[] }
  | { readonly kind: "unavailable"; readonly message: string };

/**
 * The pod CIDRs GCE gave `instance`, in the order of the cluster's stack, as the stock CCM's
 * CloudAllocator reads them (cloud_cidr_allocator.go updateCIDRAllocation): only the default
 * interface (`nic0`, else the first), its first alias IP range for IPv4, the /112 of its IPv6
 * address (internal, else external) for IPv6; IPv4_IPv6 and IPv6_IPv4 need both.
 */
export function podCIDRsFromInstance(instance: Instance, stack: PodCIDRStack): PodCIDRsFromCloud {
  const where = `instance ${instance.project}/${instance.zone}/${instance.name}`;
  const nic = instance.networkInterfaces.find((n) => n.name === "nic0") ?? instance.networkInterfaces[0];
  if (nic === undefined) {
    return { kind: "unavailable", message: `${where} has no network interface` };
  }
  const nicName = nic.name ?? "nic0";
  const v4 = nic.aliasIpRanges?.[0]?.ipCidrRange;
  const v6Address =
    nic.ipv6Address ??
    nic.ipv6AccessConfigs.find((a) => a.externalIpv6 !== undefined && a.externalIpv6 !== "")?.externalIpv6;
  const v6 = v6Address === undefined ? undefined : `${v6Address}/${IPV6_POD_PREFIX}`;
  const missing = (what: string): PodCIDRsFromCloud => ({
    kind: "unavailable",
    message: `${where} has no ${what} on ${nicName} (podCIDRStack ${stack})`,
  });
  switch (stack) {
    case "IPv4":
      return v4 === undefined ? missing("alias IP range") : { kind: "ok", cidrs: [v4] };
    case "IPv6":
      return v6 === undefined ? missing("IPv6 address") : { kind: "ok", cidrs: [v6] };
    case "IPv4_IPv6":
    case "IPv6_IPv4":
      if (v4 === undefined || v6 === undefined) {
        return missing(
          v4 === undefined && v6 === undefined
            ? "alias IP range and no IPv6 address"
            : v4 === undefined
              ? "alias IP range"
              : "IPv6 address",
        );
      }
      return { kind: "ok", cidrs: stack === "IPv4_IPv6" ? [v4, v6] : [v6, v4] };
  }
}

export type PodCIDRDecision =
  /** The Node has no pod CIDR yet: write these (spec.podCIDR is the first). */
  | { readonly kind: "assign"; readonly cidrs: readonly string[] }
  /** Already the VM's. */
  | { readonly kind: "inSync" }
  /** The VM has no range for the stack: a Warning, and the Node stays NetworkUnavailable. */
  | { readonly kind: "unavailable"; readonly message: string }
  /** The Node's CIDRs are not its VM's any more: immutable, so a Warning and never a patch. */
  | { readonly kind: "mismatch"; readonly message: string };

function sameCIDRs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}

export function decidePodCIDRs(node: WatchedNode, fromCloud: PodCIDRsFromCloud): PodCIDRDecision {
  const current = node.podCIDRs ?? [];
  if (fromCloud.kind === "unavailable") {
    return current.length === 0
      ? { kind: "unavailable", message: `Node ${node.name} has no pod CIDR and none can be read: ${fromCloud.message}` }
      : { kind: "inSync" };
  }
  if (current.length === 0) {
    return { kind: "assign", cidrs: fromCloud.cidrs };
  }
  if (sameCIDRs(current, fromCloud.cidrs)) {
    return { kind: "inSync" };
  }
  return {
    kind: "mismatch",
    message: `Node ${node.name} has pod CIDRs ${current.join(",")} but its VM's range is ${fromCloud.cidrs.join(",")}; spec.podCIDRs cannot change: recreate the Node (delete it, the kubelet registers it again) to take the VM's range`,
  };
}

/**
 * NetworkUnavailable in `cloud` mode: False with the stock CCM's reason and message once the
 * Node has a pod CIDR (the VPC routes alias ranges itself), True while it has none. Undefined
 * when the Node already carries it (written only on change, like routeCondition).
 */
export function podCIDRCondition(
  node: WatchedNode,
  assigned: boolean,
  now: Date,
  why = "",
): V1NodeCondition | undefined {
  const want = assigned
    ? { status: "False", reason: "RouteCreated", message: "NodeController create implicit route" }
    : { status: "True", reason: "NoPodCIDR", message: `No pod CIDR from the VM's alias IP ranges: ${why}` };
  const current = node.networkUnavailable;
  if (
    current !== undefined &&
    current.status === want.status &&
    current.reason === want.reason &&
    current.message === want.message
  ) {
    return undefined;
  }
  const transitioned = current === undefined || current.status !== want.status;
  return {
    type: CONDITION_NETWORK_UNAVAILABLE,
    ...want,
    lastHeartbeatTime: now,
    lastTransitionTime: transitioned ? now : (toDate(current.lastTransitionTime) ?? now),
  };
}

// ---- the shutdown taint -------------------------------------------------------------------------

/** The cloud-provider framework's taint for a Node whose instance is shut down (k8s.io/cloud-provider api well_known_taints.go). */
export const SHUTDOWN_TAINT = "node.cloudprovider.kubernetes.io/shutdown";

/**
 * Instance statuses of a VM that is not running and will not until someone starts or resumes it
 * (Compute Engine instance life cycle: STOPPING → TERMINATED on stop or preemption, SUSPENDING →
 * SUSPENDED on suspend). PROVISIONING, STAGING, RUNNING and REPAIRING are not shut down.
 */
export const SHUTDOWN_STATUSES: ReadonlySet<string> = new Set(["STOPPING", "TERMINATED", "SUSPENDING", "SUSPENDED"]);

export type ShutdownTaintDecision =
  | { readonly kind: "none" }
  | { readonly kind: "add"; readonly status: string }
  | { readonly kind: "remove"; readonly reason: string };

export function hasShutdownTaint(node: WatchedNode): boolean {
  return node.taints.some((t) => t.key === SHUTDOWN_TAINT);
}

/**
 * Like cloud-provider's node lifecycle controller (MonitorNodes: a Ready Node loses the taint, a
 * NotReady one whose InstanceShutdown is true gets it and is not deleted), plus: a NotReady Node
 * whose VM is found in any other status loses it (the VM was started again). Without a found
 * instance (a lookup that failed, a gone VM) nothing changes.
 */
export function decideShutdownTaint(node: WatchedNode, lookup: InstanceLookup | undefined): ShutdownTaintDecision {
  const has = hasShutdownTaint(node);
  if (node.ready === "True") {
    return has ? { kind: "remove", reason: "node is Ready" } : { kind: "none" };
  }
  if (lookup?.kind !== "found" || lookup.instance.status === undefined) {
    return { kind: "none" };
  }
  const status = lookup.instance.status;
  if (SHUTDOWN_STATUSES.has(status)) {
    return has ? { kind: "none" } : { kind: "add", status };
  }
  return has ? { kind: "remove", reason: `instance is ${status}` } : { kind: "none" };
}

/** The taint list after the decision, as a merge patch on `node` (recomputed on each conflict retry). */
export function shutdownTaintPatch(node: WatchedNode, add: boolean): NodeMergePatch | undefined {
  const has = hasShutdownTaint(node);
  if (add === has) {
    return undefined;
  }
  if (add) {
    return { taints: [...node.taints, { key: SHUTDOWN_TAINT, effect: "NoSchedule" }] };
  }
  const kept = node.taints.filter((t) => t.key !== SHUTDOWN_TAINT);
  return { taints: kept.length === 0 ? null : kept };
}

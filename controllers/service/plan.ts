/**
 * The Service controller's pure decisions, in cloud-provider's shape: what a sync does next
 * (planServiceSync: what the record, the desired state and the observed Service call for), what a
 * Service stack points at in the cluster stack, and how a refresh request's sync is answered. The
 * executor beside it (controller.ts) does the I/O: the stack, the finalizer, the status and the events.
 */
import { backendGroupKeys, isDenyFirewallName, LB_FINALIZER, type Rejection, type ServiceDesired } from "../../model";
import { planRemoval, type RemovalPlan } from "../../model/removal";
import { isRecord } from "../../runtime/guards";
import type { ServiceMeta } from "../../watcher/informers";
import { ingressOf } from "../../components/outputs";
import type { ClusterReferences } from "../references";
import type { StackRecord } from "../stackRecords";

/** What a Service stack, as applied, points at in the cluster stack (its groups, the legacy check, its deny rules). */
export function referencesOf(service: ServiceDesired): ClusterReferences {
  const denies = service.denyFirewall !== undefined || service.ipv6?.denyFirewall !== undefined;
  return {
    zones: backendGroupKeys(service),
    legacyHealthCheck: service.backend === "target-pool" && service.healthCheck.kind === "shared",
    ...(denies ? { denyRules: [service.key] } : {}),
  };
}

/**
 * What a Service stack's recorded outputs tell before its first run since a start: whether it holds
 * a deny rule (`resources.firewalls` names `k8s-fw-<lb>-deny` or `-deny-ipv6`). Its groups and
 * check are told once it runs or is found unchanged, as before.
 */
export function recordedReferences(
  outputs: Record<string, unknown>,
  namespace: string,
  name: string,
): ClusterReferences {
  const loadBalancers = outputs.loadBalancers;
  const key = `${namespace}/${name}`;
  const entry = isRecord(loadBalancers) ? loadBalancers[key] : undefined;
  const resources = isRecord(entry) ? entry.resources : undefined;
  const firewalls = isRecord(resources) && Array.isArray(resources.firewalls) ? resources.firewalls : [];
  const denies = firewalls.some((firewall) => typeof firewall === "string" && isDenyFirewallName(firewall));
  return {
    zones: [],
    legacyHealthCheck: false,
    ...(denies ? { denyRules: [key] } : {}),
  };
}

export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** How a step that fails is told: the prefix of its Warning, and whether the Service is told at all. */
export interface Failure {
  prefix: "Error syncing load balancer" | "Error deleting load balancer";
  tell: boolean;
}

export type ServiceSyncAction =
  /** Nothing to do (the Service's object is not in the cache yet, or nothing of ours is left). */
  | { kind: "none" }
  /** Everything known of the stack is dropped: nothing of ours exists. */
  | { kind: "forget" }
  /** Invalid: nothing runs and nothing is deleted; `tell`: this object and spec were not told yet. */
  | { kind: "reject"; message: string; tell: boolean; token: string }
  /** The cluster stack does not hold what this load balancer points at yet. */
  | { kind: "waitForCluster" }
  /** Its NEGs were not listed since the start: whether they hold their endpoints is not known yet. */
  | { kind: "waitForNegs" }
  /** Read what the stack recorded (once after a start), then plan again. */
  | { kind: "inspect"; failure: Failure }
  /** The stack declares the desired state: write the status back if someone changed it. */
  | { kind: "publish"; ingress: string[]; restored: boolean }
  /** `firstUp`: no up of the stack ever succeeded (no applied hash): GCE is asked first what exists under its names (set only then). */
  | { kind: "apply"; hash: string; changed: boolean; verifyIp: boolean; addFinalizer: boolean; firstUp?: true }
  | { kind: "remove"; removal: RemovalPlan; failure: Failure };

export interface ServiceSyncInput {
  namespace: string;
  name: string;
  service: ServiceDesired | undefined;
  hash: string | undefined;
  rejections: readonly Rejection[];
  /** The Service object as the cache has it; undefined when gone. */
  meta: ServiceMeta | undefined;
  refresh: boolean;
  clusterReady: boolean;
  /**
   * Backend `neg`: the NEG controller has listed each of its NEGs since the start (ObservedCloud.negMembers
   * names them), so the desired state knows whether they hold their endpoints (model/desired.ts
   * placeNegService, negsPending). Always true for other Services.
   */
  negsListed: boolean;
  loadBalancerClasses: readonly string[];
  /**
   * The stack, as recorded, holds `<lb>` while the Service reserves none at rest (an earlier run's
   * pin, or a reservation made for life by an earlier release or `addressReservation: always`):
   * a run releases it (controllers/service/addressPins.ts).
   */
  addressToRelease?: boolean;
}

export function planServiceSync(record: StackRecord, input: ServiceSyncInput): ServiceSyncAction {
  const { service, hash, meta } = input;
  if (service !== undefined && hash !== undefined) {
    if (meta === undefined) return { kind: "none" };
    if (!input.clusterReady) return { kind: "waitForCluster" };
    const release = input.addressToRelease === true;
    if (record.applied === hash && !input.refresh && record.published !== undefined && !release)
      return { kind: "publish", ingress: record.published, restored: false };
    if (record.recorded === undefined)
      return { kind: "inspect", failure: { prefix: "Error syncing load balancer", tell: true } };
    const changed = record.applied !== hash;
    // Unchanged since the last run before a restart: only the status may need writing.
    if (!changed && !input.refresh && !release)
      return { kind: "publish", ingress: ingressOf(record.recorded, input.namespace, input.name), restored: true };
    if (!input.negsListed) return { kind: "waitForNegs" };
    return {
      kind: "apply",
      hash,
      changed,
      verifyIp: changed && service.userIP !== undefined,
      addFinalizer: !meta.finalizers.includes(LB_FINALIZER),
      ...(record.applied === undefined ? { firstUp: true as const } : {}),
    };
  }
  if (input.rejections.length > 0 && hash !== undefined) {
    // Per object and spec: a Service deleted and created again unchanged is a new object, told again.
    const token = `${meta?.uid ?? ""} ${hash}`;
    return {
      kind: "reject",
      message: input.rejections.map((rejection) => rejection.message).join("; "),
      tell: meta !== undefined && record.toldRejection !== token,
      token,
    };
  }
  const removal = planRemoval(meta, record.known, LB_FINALIZER, input.loadBalancerClasses);
  if (!removal.destroy && !removal.removeFinalizer) return { kind: "forget" };
  const failure: Failure = { prefix: "Error deleting load balancer", tell: removal.announce && meta !== undefined };
  // Proof before deletion: a stack recording another cluster's identity is refused by the read.
  if (removal.destroy && record.recorded === undefined) return { kind: "inspect", failure };
  return { kind: "remove", removal, failure };
}

/** Whether two unions of references say the same (the cluster stack is told only of a change). */
export function sameReferences(a: ClusterReferences, b: ClusterReferences): boolean {
  return (
    a.legacyHealthCheck === b.legacyHealthCheck &&
    sameList(a.zones, b.zones) &&
    sameList(a.denyRules ?? [], b.denyRules ?? []) &&
    a.unread === b.unread
  );
}

/** How the sync that met a refresh request went, as refreshAnswer (refreshRequest.ts) reads it. */
export function refreshActionOf(action: ServiceSyncAction["kind"]): "apply" | "reject" | "other" {
  return action === "apply" || action === "inspect" ? "apply" : action === "reject" ? "reject" : "other";
}

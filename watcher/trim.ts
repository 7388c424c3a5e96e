/**
 * Kubernetes objects → the plain snapshot entries the model reads. Structural input types, so
 * client-node objects and `kubectl get -o json` items are trimmed by the same code.
 */
import {
  ANNOTATION_REFRESH_HANDLED,
  ANNOTATION_REFRESH_REQUESTED,
  type NodeInfo,
  type ServiceInfo,
  type ServicePort,
  type Taint,
} from "../model";
import { isRecord } from "../runtime/guards";

export interface ObjectMetaLike {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: unknown;
}

export interface NodeLike {
  metadata?: ObjectMetaLike;
  spec?: {
    providerID?: string;
    podCIDR?: string;
    podCIDRs?: string[];
    taints?: { key?: string; value?: string; effect?: string; timeAdded?: unknown }[];
  };
  status?: {
    addresses?: { type?: string; address?: string }[];
    conditions?: { type?: string; status?: string; reason?: string; message?: string; lastTransitionTime?: unknown }[];
  };
}

export interface ServiceLike {
  metadata?: ObjectMetaLike;
  spec?: {
    type?: string;
    loadBalancerClass?: string;
    ports?: { name?: string; protocol?: string; port?: number; nodePort?: number }[];
    externalTrafficPolicy?: string;
    healthCheckNodePort?: number;
    loadBalancerIP?: string;
    loadBalancerSourceRanges?: string[];
    sessionAffinity?: string;
    ipFamilies?: string[];
    ipFamilyPolicy?: string;
    trafficDistribution?: string;
  };
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== "";
}

/** JSON `null` means absent, as the apiserver reads it. */
function isPresent(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/**
 * A value kept as written although it may not have the declared type: trimming never throws and
 * never guesses, so a malformed field reaches the model, which names it (model/shape.ts) and sets
 * only that object aside.
 */
function asWritten<T>(value: unknown): T {
  return value as T;
}

/** `null` or absent → empty; an object → a copy; anything else as written. */
function copyRecord(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  return isRecord(value) ? asWritten<Record<string, string>>({ ...value }) : asWritten<Record<string, string>>(value);
}

/**
 * The annotations without the refresh requests (model/annotations.ts ANNOTATION_REFRESH_*): they
 * are no input of the model, so a request is a change of the Service's meta (ServiceMeta, event
 * `serviceMeta`: its stack is looked at), not of the desired state (which would run nothing).
 */
function modelAnnotations(annotations: Record<string, string>): Record<string, string> {
  if (
    !isRecord(annotations) ||
    (!(ANNOTATION_REFRESH_REQUESTED in annotations) && !(ANNOTATION_REFRESH_HANDLED in annotations))
  )
    return annotations;
  const { [ANNOTATION_REFRESH_REQUESTED]: _requested, [ANNOTATION_REFRESH_HANDLED]: _handled, ...rest } = annotations;
  return rest;
}

/** `null` or absent → empty; an array → its items through `each`; anything else as written. */
function mapList<T>(value: unknown, each: (item: unknown) => T): T[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value.map(each) : asWritten<T[]>(value);
}

export function trimNode(node: NodeLike): NodeInfo {
  const meta: Record<string, unknown> = isRecord(node.metadata) ? node.metadata : {};
  const spec: Record<string, unknown> = isRecord(node.spec) ? node.spec : {};
  const podCIDRs =
    Array.isArray(spec.podCIDRs) && spec.podCIDRs.length > 0
      ? spec.podCIDRs
      : isSet(spec.podCIDR)
        ? [spec.podCIDR]
        : spec.podCIDRs;
  return {
    name: asWritten(meta.name ?? ""),
    uid: asWritten(meta.uid ?? ""),
    ...(isSet(spec.providerID) ? { providerID: asWritten<string>(spec.providerID) } : {}),
    labels: copyRecord(meta.labels),
    taints: mapList(spec.taints, (taint): Taint =>
      isRecord(taint)
        ? {
            key: asWritten(taint.key ?? ""),
            ...(isPresent(taint.value) ? { value: asWritten<string>(taint.value) } : {}),
            effect: asWritten(taint.effect ?? ""),
          }
        : asWritten<Taint>(taint),
    ),
    deleting: isSet(meta.deletionTimestamp),
    podCIDRs: mapList(podCIDRs, (cidr) => asWritten<string>(cidr)),
    ...internalIP(node.status),
  };
}

/**
 * The first InternalIP of status.addresses (the address of the Node's GCE_VM_IP endpoint, as
 * ingress-gce utils.GetNodeInternalIPs reads it), only when there is one: a Node without stays the
 * object it was before dccm read addresses.
 */
function internalIP(status: unknown): Pick<NodeInfo, "internalIP"> {
  if (!isRecord(status) || !Array.isArray(status.addresses)) return {};
  for (const address of status.addresses) {
    if (
      isRecord(address) &&
      address.type === "InternalIP" &&
      typeof address.address === "string" &&
      address.address !== ""
    )
      return { internalIP: address.address };
  }
  return {};
}

export function trimService(service: ServiceLike): ServiceInfo {
  const meta: Record<string, unknown> = isRecord(service.metadata) ? service.metadata : {};
  const spec: Record<string, unknown> = isRecord(service.spec) ? service.spec : {};
  return {
    namespace: asWritten(meta.namespace ?? "default"),
    name: asWritten(meta.name ?? ""),
    uid: asWritten(meta.uid ?? ""),
    type: asWritten(spec.type ?? "ClusterIP"),
    ...(isSet(spec.loadBalancerClass) ? { loadBalancerClass: asWritten<string>(spec.loadBalancerClass) } : {}),
    annotations: modelAnnotations(copyRecord(meta.annotations)),
    ports: mapList(spec.ports, (port): ServicePort =>
      isRecord(port)
        ? {
            ...(isPresent(port.name) ? { name: asWritten<string>(port.name) } : {}),
            protocol: asWritten(port.protocol ?? "TCP"),
            port: asWritten(port.port ?? 0),
            ...(isPresent(port.nodePort) ? { nodePort: asWritten<number>(port.nodePort) } : {}),
          }
        : asWritten<ServicePort>(port),
    ),
    ...(isSet(spec.externalTrafficPolicy)
      ? { externalTrafficPolicy: asWritten<string>(spec.externalTrafficPolicy) }
      : {}),
    ...(isPresent(spec.healthCheckNodePort)
      ? { healthCheckNodePort: asWritten<number>(spec.healthCheckNodePort) }
      : {}),
    ...(isSet(spec.loadBalancerIP) ? { loadBalancerIP: asWritten<string>(spec.loadBalancerIP) } : {}),
    loadBalancerSourceRanges: mapList(spec.loadBalancerSourceRanges, (range) => asWritten<string>(range)),
    ...(isSet(spec.sessionAffinity) ? { sessionAffinity: asWritten<string>(spec.sessionAffinity) } : {}),
    ...ipFamilyFields(spec),
    ...(isSet(spec.trafficDistribution) ? { trafficDistribution: asWritten<string>(spec.trafficDistribution) } : {}),
    deleting: isSet(meta.deletionTimestamp),
  };
}

/**
 * spec.ipFamilies and spec.ipFamilyPolicy, left out when they say IPv4 SingleStack (what the
 * apiserver writes on every Service of an IPv4 cluster): the trimmed copies, and so the stack
 * hashes, of IPv4 Services stay what they were before dccm read these fields.
 */
function ipFamilyFields(spec: NonNullable<ServiceLike["spec"]>): Pick<ServiceInfo, "ipFamilies" | "ipFamilyPolicy"> {
  const families: unknown = spec.ipFamilies;
  const policy: unknown = spec.ipFamilyPolicy;
  const plainFamilies =
    !isSet(families) || (Array.isArray(families) && families.length === 1 && families[0] === "IPv4");
  const plainPolicy = !isSet(policy) || policy === "SingleStack";
  if (plainFamilies && plainPolicy) return {};
  return {
    ...(isSet(families) ? { ipFamilies: mapList(spec.ipFamilies, (family) => asWritten<string>(family)) } : {}),
    ...(isSet(policy) ? { ipFamilyPolicy: asWritten<string>(policy) } : {}),
  };
}

/** A taint as the node controller writes it back: `timeAdded` is a NoExecute taint's eviction clock. */
export interface NodeTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
  /** RFC 3339, as the apiserver sent it (client-node hands Dates after a list, strings after a watch event). */
  readonly timeAdded?: string;
}

export interface NodeAddress {
  readonly type: string;
  readonly address: string;
}

/** The parts of a condition the node controller compares and keeps. */
export interface NodeConditionState {
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  /** RFC 3339. */
  readonly lastTransitionTime?: string;
}

/**
 * What the node controller reads of a Node (initialization, lifecycle, route condition), kept by
 * the watcher beside the model's NodeInfo: heartbeats, images, capacity and the kubelet's other
 * conditions are dropped on arrival.
 */
export interface WatchedNode {
  readonly name: string;
  readonly uid: string;
  /** The precondition of every write decided from this copy. */
  readonly resourceVersion: string;
  readonly deleting: boolean;
  readonly providerID?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly NodeTaint[];
  readonly addresses: readonly NodeAddress[];
  /** spec.podCIDRs (else spec.podCIDR); absent while none is assigned. Immutable once set. */
  readonly podCIDRs?: readonly string[];
  /** Status of the Ready condition; undefined until the kubelet reported one. */
  readonly ready?: string;
  readonly networkUnavailable?: NodeConditionState;
}

function rfc3339(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  return typeof value === "string" && value !== "" ? value : undefined;
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}

function objectItems(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

function nodeTaint(taint: Record<string, unknown>): NodeTaint {
  const timeAdded = rfc3339(taint.timeAdded);
  return {
    key: stringOr(taint.key, ""),
    ...(typeof taint.value === "string" ? { value: taint.value } : {}),
    effect: stringOr(taint.effect, ""),
    ...(timeAdded === undefined ? {} : { timeAdded }),
  };
}

function conditionState(condition: Record<string, unknown>): NodeConditionState {
  const lastTransitionTime = rfc3339(condition.lastTransitionTime);
  return {
    status: stringOr(condition.status, ""),
    ...(typeof condition.reason === "string" ? { reason: condition.reason } : {}),
    ...(typeof condition.message === "string" ? { message: condition.message } : {}),
    ...(lastTransitionTime === undefined ? {} : { lastTransitionTime }),
  };
}

function watchedPodCIDRs(spec: Record<string, unknown>): Pick<WatchedNode, "podCIDRs"> {
  const list = Array.isArray(spec.podCIDRs)
    ? spec.podCIDRs.filter((c): c is string => typeof c === "string" && c !== "")
    : [];
  if (list.length > 0) return { podCIDRs: list };
  return typeof spec.podCIDR === "string" && spec.podCIDR !== "" ? { podCIDRs: [spec.podCIDR] } : {};
}

/**
 * The node controller's view of a Node. Unlike trimNode it keeps only well-typed values (the
 * controller writes them back); `shared` lends its labels, so the watcher stores them once.
 */
export function trimWatchedNode(node: NodeLike, shared?: Pick<NodeInfo, "labels">): WatchedNode {
  const meta: Record<string, unknown> = isRecord(node.metadata) ? node.metadata : {};
  const spec: Record<string, unknown> = isRecord(node.spec) ? node.spec : {};
  const status: Record<string, unknown> = isRecord(node.status) ? node.status : {};
  const conditions = objectItems(status.conditions);
  const ready = conditions.find((c) => c.type === "Ready")?.status;
  const networkUnavailable = conditions.find((c) => c.type === "NetworkUnavailable");
  const labels =
    shared !== undefined && isRecord(shared.labels)
      ? shared.labels
      : isRecord(meta.labels)
        ? asWritten<Record<string, string>>({ ...meta.labels })
        : {};
  return {
    name: stringOr(meta.name, ""),
    uid: stringOr(meta.uid, ""),
    resourceVersion: stringOr(meta.resourceVersion, ""),
    deleting: isSet(meta.deletionTimestamp),
    ...(typeof spec.providerID === "string" && spec.providerID !== "" ? { providerID: spec.providerID } : {}),
    labels,
    taints: objectItems(spec.taints).map(nodeTaint),
    addresses: objectItems(status.addresses).map((a) => ({
      type: stringOr(a.type, ""),
      address: stringOr(a.address, ""),
    })),
    ...watchedPodCIDRs(spec),
    ...(typeof ready === "string" ? { ready } : {}),
    ...(networkUnavailable === undefined ? {} : { networkUnavailable: conditionState(networkUnavailable) }),
  };
}

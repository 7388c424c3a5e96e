/**
 * Kubernetes objects → the plain snapshot entries the model reads. Structural input types, so
 * client-node objects and `kubectl get -o json` items are trimmed by the same code.
 */
import type { NodeInfo, ServiceInfo, ServicePort, Taint } from "../model";

export interface ObjectMetaLike {
  name?: string;
  namespace?: string;
  uid?: string;
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
    taints?: { key?: string; value?: string; effect?: string }[];
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
  };
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== "";
}

/** JSON `null` means absent, as the apiserver reads it. */
function isPresent(value: unknown): boolean {
  return value !== undefined && value !== null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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
  return isObject(value) ? asWritten<Record<string, string>>({ ...value }) : asWritten<Record<string, string>>(value);
}

/** `null` or absent → empty; an array → its items through `each`; anything else as written. */
function mapList<T>(value: unknown, each: (item: unknown) => T): T[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value.map(each) : asWritten<T[]>(value);
}

export function trimNode(node: NodeLike): NodeInfo {
  const meta: Record<string, unknown> = isObject(node.metadata) ? node.metadata : {};
  const spec: Record<string, unknown> = isObject(node.spec) ? node.spec : {};
  const podCIDRs = Array.isArray(spec.podCIDRs) && spec.podCIDRs.length > 0 ? spec.podCIDRs : isSet(spec.podCIDR) ? [spec.podCIDR] : spec.podCIDRs;
  return {
    name: asWritten(meta.name ?? ""),
    uid: asWritten(meta.uid ?? ""),
    ...(isSet(spec.providerID) ? { providerID: asWritten<string>(spec.providerID) } : {}),
    labels: copyRecord(meta.labels),
    taints: mapList(spec.taints, (taint): Taint =>
      isObject(taint)
        ? { key: asWritten(taint.key ?? ""), ...(isPresent(taint.value) ? { value: asWritten<string>(taint.value) } : {}), effect: asWritten(taint.effect ?? "") }
        : asWritten<Taint>(taint),
    ),
    deleting: isSet(meta.deletionTimestamp),
    podCIDRs: mapList(podCIDRs, (cidr) => asWritten<string>(cidr)),
  };
}

export function trimService(service: ServiceLike): ServiceInfo {
  const meta: Record<string, unknown> = isObject(service.metadata) ? service.metadata : {};
  const spec: Record<string, unknown> = isObject(service.spec) ? service.spec : {};
  return {
    namespace: asWritten(meta.namespace ?? "default"),
    name: asWritten(meta.name ?? ""),
    uid: asWritten(meta.uid ?? ""),
    type: asWritten(spec.type ?? "ClusterIP"),
    ...(isSet(spec.loadBalancerClass) ? { loadBalancerClass: asWritten<string>(spec.loadBalancerClass) } : {}),
    annotations: copyRecord(meta.annotations),
    ports: mapList(spec.ports, (port): ServicePort =>
      isObject(port)
        ? {
            ...(isPresent(port.name) ? { name: asWritten<string>(port.name) } : {}),
            protocol: asWritten(port.protocol ?? "TCP"),
            port: asWritten(port.port ?? 0),
            ...(isPresent(port.nodePort) ? { nodePort: asWritten<number>(port.nodePort) } : {}),
          }
        : asWritten<ServicePort>(port),
    ),
    ...(isSet(spec.externalTrafficPolicy) ? { externalTrafficPolicy: asWritten<string>(spec.externalTrafficPolicy) } : {}),
    ...(isPresent(spec.healthCheckNodePort) ? { healthCheckNodePort: asWritten<number>(spec.healthCheckNodePort) } : {}),
    ...(isSet(spec.loadBalancerIP) ? { loadBalancerIP: asWritten<string>(spec.loadBalancerIP) } : {}),
    loadBalancerSourceRanges: mapList(spec.loadBalancerSourceRanges, (range) => asWritten<string>(range)),
    ...(isSet(spec.sessionAffinity) ? { sessionAffinity: asWritten<string>(spec.sessionAffinity) } : {}),
    deleting: isSet(meta.deletionTimestamp),
  };
}

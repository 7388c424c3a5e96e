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

export function trimNode(node: NodeLike): NodeInfo {
  const meta = node.metadata ?? {};
  const spec = node.spec ?? {};
  const podCIDRs = spec.podCIDRs !== undefined && spec.podCIDRs.length > 0 ? spec.podCIDRs : isSet(spec.podCIDR) ? [spec.podCIDR ?? ""] : [];
  return {
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    ...(isSet(spec.providerID) ? { providerID: spec.providerID } : {}),
    labels: { ...(meta.labels ?? {}) },
    taints: (spec.taints ?? []).map(
      (taint): Taint => ({ key: taint.key ?? "", ...(taint.value !== undefined ? { value: taint.value } : {}), effect: taint.effect ?? "" }),
    ),
    deleting: isSet(meta.deletionTimestamp),
    podCIDRs: [...podCIDRs],
  };
}

export function trimService(service: ServiceLike): ServiceInfo {
  const meta = service.metadata ?? {};
  const spec = service.spec ?? {};
  return {
    namespace: meta.namespace ?? "default",
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    type: spec.type ?? "ClusterIP",
    ...(isSet(spec.loadBalancerClass) ? { loadBalancerClass: spec.loadBalancerClass } : {}),
    annotations: { ...(meta.annotations ?? {}) },
    ports: (spec.ports ?? []).map(
      (port): ServicePort => ({
        ...(port.name !== undefined ? { name: port.name } : {}),
        protocol: port.protocol ?? "TCP",
        port: port.port ?? 0,
        ...(port.nodePort !== undefined ? { nodePort: port.nodePort } : {}),
      }),
    ),
    ...(isSet(spec.externalTrafficPolicy) ? { externalTrafficPolicy: spec.externalTrafficPolicy } : {}),
    ...(spec.healthCheckNodePort !== undefined ? { healthCheckNodePort: spec.healthCheckNodePort } : {}),
    ...(isSet(spec.loadBalancerIP) ? { loadBalancerIP: spec.loadBalancerIP } : {}),
    loadBalancerSourceRanges: [...(spec.loadBalancerSourceRanges ?? [])],
    ...(isSet(spec.sessionAffinity) ? { sessionAffinity: spec.sessionAffinity } : {}),
    deleting: isSet(meta.deletionTimestamp),
  };
}

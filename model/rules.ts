/** Decision predicates of docs/guides/services.md#service-semantics: pure, table-tested. */
import {
  LABEL_EXCLUDE_FROM_LB,
  LABEL_UNMANAGED_NODE,
  LABEL_ZONE,
  LABEL_ZONE_LEGACY,
  TAINT_TO_BE_DELETED,
} from "./annotations";
import type { Config, InstanceRef, NodeInfo, ServiceInfo } from "./types";
import { parseProviderID } from "./providerId";

/**
 * strconv.ParseBool's false spellings: the label with one of these values does not exclude; any
 * other value (a true spelling, or one ParseBool refuses) does. This is k8s.io/cloud-provider's
 * controllers/service/controller.go nodeIncludedPredicate since v0.34.0 ("respect the
 * exclude-from-external-load-balancers=false label"); v0.28.2, the stock GCE CCM's, excluded a
 * Node carrying the label whatever its value.
 */
const FALSE_VALUES = new Set(["0", "f", "F", "false", "FALSE", "False"]);

export function wantsLoadBalancer(service: ServiceInfo, config: Pick<Config, "loadBalancerClasses">): boolean {
  if (service.type !== "LoadBalancer") return false;
  if (service.deleting) return false;
  return service.loadBalancerClass === undefined || config.loadBalancerClasses.includes(service.loadBalancerClass);
}

/**
 * A Node labelled as no VM of ours: left out of everything dccm does with Nodes (instance lookups,
 * groups, NEGs, routes, initialization, deletion). Only the exact value `true` counts, as the stock
 * CCM compares it (see LABEL_UNMANAGED_NODE).
 */
export function isUnmanagedNode(node: Pick<NodeInfo, "labels">): boolean {
  return node.labels[LABEL_UNMANAGED_NODE] === "true";
}

/** Readiness is deliberately not a criterion: the health check decides, as in the stock CCM. */
export function isBackendNode(node: NodeInfo): boolean {
  if (node.deleting) return false;
  const exclude = node.labels[LABEL_EXCLUDE_FROM_LB];
  if (exclude !== undefined && !FALSE_VALUES.has(exclude)) return false;
  return !node.taints.some((taint) => taint.key === TAINT_TO_BE_DELETED);
}

export type InstanceLookup = { ok: true; instance: InstanceRef } | { ok: false; reason: string };

/** The GCE instance behind a Node: from `gce://project/zone/name`, else the zone label and the node name. */
export function nodeInstance(node: NodeInfo, project: string): InstanceLookup {
  if (node.providerID !== undefined && node.providerID !== "") {
    const id = parseProviderID(node.providerID);
    if (id === undefined)
      return {
        ok: false,
        reason: `node ${node.name}: spec.providerID "${node.providerID}" is not gce://<project>/<zone>/<name>`,
      };
    if (id.project !== project) {
      return { ok: false, reason: `node ${node.name}: instance is in project ${id.project}, not ${project}` };
    }
    return { ok: true, instance: { zone: id.zone, name: id.name } };
  }
  const zone = node.labels[LABEL_ZONE] ?? node.labels[LABEL_ZONE_LEGACY];
  if (zone === undefined || zone === "")
    return { ok: false, reason: `node ${node.name}: no spec.providerID and no ${LABEL_ZONE} label` };
  return { ok: true, instance: { zone, name: node.name } };
}

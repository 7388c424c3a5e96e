/**
 * desiredState(snapshot, config, observed): the whole GCP picture of a cluster. Pure and
 * deterministic: the same nodes and services in any order give byte-identical JSON.
 */
import { healthCheckSourceRanges, nodeProbe } from "./healthcheck";
import { assignGroups } from "./groups";
import { BACKEND_SERVICE_MAX_BACKENDS, INSTANCE_GROUP_MAX_INSTANCES } from "./limits";
import {
  CLUSTER_STACK,
  clusterDescription,
  instanceGroupIndex,
  instanceGroupName,
  nodeHealthCheckFirewallName,
  isValidGceName,
  ROUTE_DESCRIPTION,
  routeName,
  serviceKey,
} from "./names";
import { cidrContains, parseCidr4, type Cidr4 } from "./net";
import { isBackendNode, nodeInstance, wantsLoadBalancer } from "./rules";
import { allowPriority, serviceShape, sharedNodeHealthCheck, withBackends, type Backends } from "./service";
import { malformedNode, malformedService } from "./shape";
import {
  FIREWALL_PRIORITY_ALLOW_ABOVE_DENY,
  NOTHING_OBSERVED,
  type ClusterDesired,
  type ClusterSnapshot,
  type Config,
  type DesiredState,
  type GroupRef,
  type InstanceGroupSpec,
  type InstanceRef,
  type NodeInfo,
  type ObservedCloud,
  type Rejection,
  type RouteSpec,
  type ServiceDesired,
  type ServiceInfo,
} from "./types";

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function compareRejections(a: Rejection, b: Rejection): number {
  return compareText(a.service, b.service) || compareText(a.field, b.field) || compareText(a.message, b.message);
}

function compareInstances(a: InstanceRef, b: InstanceRef): number {
  return compareText(a.zone, b.zone) || compareText(a.name, b.name);
}

export interface LocatedNode {
  node: NodeInfo;
  instance: InstanceRef;
}

/** The Nodes whose GCE instance is known (valid, in our project, one Node per instance), sorted by Node name. */
export function locateNodes(nodes: readonly NodeInfo[], config: Config, warnings: string[] = []): LocatedNode[] {
  const located: LocatedNode[] = [];
  for (const node of nodes) {
    const malformed = malformedNode(node);
    if (malformed !== undefined) {
      warnings.push(malformed);
      continue;
    }
    const lookup = nodeInstance(node, config.project);
    if (lookup.ok) located.push({ node, instance: lookup.instance });
    else warnings.push(lookup.reason);
  }
  // Two Nodes claiming one instance would put it twice in a group; keep the first by name.
  located.sort((a, b) => compareText(a.node.name, b.node.name));
  const seen = new Set<string>();
  return located.filter(({ node, instance }) => {
    const id = `${instance.zone}/${instance.name}`;
    if (seen.has(id)) {
      warnings.push(`node ${node.name}: instance ${id} already belongs to another Node`);
      return false;
    }
    seen.add(id);
    return true;
  });
}

/** `<zone>/<name>` keys of the cluster's own groups → zone → group number → value. */
function byZoneIndex<T>(entries: Iterable<[string, T]>, clusterId: string): Map<string, Map<number, T>> {
  const out = new Map<string, Map<number, T>>();
  for (const [key, value] of entries) {
    const slash = key.indexOf("/");
    const index = slash < 0 ? undefined : instanceGroupIndex(clusterId, key.slice(slash + 1));
    if (index === undefined) continue;
    const zone = key.slice(0, slash);
    const zoneMap = out.get(zone) ?? new Map<number, T>();
    zoneMap.set(index, value);
    out.set(zone, zoneMap);
  }
  return out;
}

function instanceGroups(
  backends: readonly InstanceRef[],
  config: Config,
  observed: ObservedCloud,
): InstanceGroupSpec[] {
  // A configured zone's first group stands like one an applied Service stack names: declared, empty or not.
  const standingZones = new Set([...observed.referencedZones, ...(config.instanceGroupZones ?? [])]);
  const byZone = new Map<string, string[]>();
  for (const zone of standingZones) byZone.set(zone, []);
  for (const instance of backends) byZone.set(instance.zone, [...(byZone.get(instance.zone) ?? []), instance.name]);
  const previous = byZoneIndex(Object.entries(observed.groupMembers ?? {}), config.clusterId);
  const referenced = byZoneIndex(
    (observed.referencedGroups ?? []).map((key): [string, true] => [key, true]),
    config.clusterId,
  );
  for (const zone of referenced.keys()) if (!byZone.has(zone)) byZone.set(zone, []);
  const specs: InstanceGroupSpec[] = [];
  for (const zone of [...byZone.keys()].sort(compareText)) {
    const zoneReferenced = new Set(referenced.get(zone)?.keys());
    if (standingZones.has(zone)) zoneReferenced.add(1);
    const { groups } = assignGroups({
      instances: byZone.get(zone) ?? [],
      previous: previous.get(zone) ?? new Map(),
      limit: config.instanceGroupLimit ?? INSTANCE_GROUP_MAX_INSTANCES,
      referenced: zoneReferenced,
    });
    for (const [index, instances] of groups) {
      specs.push({
        name: instanceGroupName(config.clusterId, index),
        zone,
        ...(index === 1 ? {} : { index }),
        description: clusterDescription(config.clusterId),
        instances: [...instances],
      });
    }
  }
  return specs;
}

function routes(located: readonly LocatedNode[], config: Config, warnings: string[]): RouteSpec[] {
  if (!config.configureRoutes) return [];
  let clusterCidr: Cidr4 | undefined;
  if (config.clusterCIDR !== undefined) {
    const parsed = parseCidr4(config.clusterCIDR);
    if (parsed.ok) clusterCidr = parsed.cidr;
  }
  const specs: RouteSpec[] = [];
  for (const { node, instance } of located) {
    const podCidr = node.podCIDRs.find((cidr) => !cidr.includes(":"));
    if (podCidr === undefined) continue;
    const parsed = parseCidr4(podCidr);
    if (!parsed.ok) {
      warnings.push(`node ${node.name}: spec.podCIDRs: ${parsed.reason}`);
      continue;
    }
    if (clusterCidr !== undefined && !cidrContains(clusterCidr, parsed.cidr)) {
      warnings.push(
        `node ${node.name}: spec.podCIDRs: ${parsed.canonical} is outside clusterCIDR ${config.clusterCIDR}`,
      );
      continue;
    }
    const name = routeName(config.clusterName, node.uid);
    if (!isValidGceName(name)) {
      warnings.push(`node ${node.name}: metadata.uid "${node.uid}" does not give a valid route name`);
      continue;
    }
    specs.push({
      name,
      node: node.name,
      destRange: parsed.canonical,
      nextHopInstance: instance.name,
      nextHopInstanceZone: instance.zone,
      priority: 1000,
      description: ROUTE_DESCRIPTION,
    });
  }
  return specs.sort((a, b) => compareText(a.name, b.name));
}

function instanceId(instance: InstanceRef): string {
  return `${instance.zone}/${instance.name}`;
}

/** Nodes with their GCE instance, less those whose instance GCE says is gone. */
function presentNodes(
  nodes: readonly NodeInfo[],
  config: Config,
  observed: ObservedCloud,
  warnings: string[],
): LocatedNode[] {
  const gone = new Set(observed.goneInstances.map(instanceId));
  return locateNodes(nodes, config, warnings).filter(({ node, instance }) => {
    if (!gone.has(instanceId(instance))) return true;
    // A group naming a deleted VM cannot be written at all: one such Node would stop every Node's changes.
    warnings.push(
      `node ${node.name}: instance ${instanceId(instance)} does not exist in GCE; left out of instance groups and routes`,
    );
    return false;
  });
}

/**
 * What the Nodes (and the observation of GCE) give every Service and the cluster stack: the
 * backends, the instance groups, the routes and the warnings about Nodes. Recomputed whole on a
 * Node change; no Service is read.
 */
export interface NodePart {
  backends: Backends;
  groups: InstanceGroupSpec[];
  /**
   * The groups a backend service lists: every group of the backend zones that holds an instance,
   * and each zone's first group. The same for every Service, since each lists every backend zone.
   */
  backendGroupRefs: GroupRef[];
  routes: RouteSpec[];
  /** Sorted. */
  warnings: string[];
}

export function nodePart(nodes: readonly NodeInfo[], config: Config, observed: ObservedCloud): NodePart {
  const warnings: string[] = [];
  const located = presentNodes(nodes, config, observed, warnings);
  const instances = located
    .filter(({ node }) => isBackendNode(node))
    .map(({ instance }) => instance)
    .sort(compareInstances);
  const zones = [
    ...new Set([...instances.map((instance) => instance.zone), ...(config.instanceGroupZones ?? [])]),
  ].sort(compareText);
  const groups = instanceGroups(instances, config, observed);
  const zoneSet = new Set(zones);
  const backendGroupRefs = groups
    .filter((group) => zoneSet.has(group.zone) && (group.index === undefined || group.instances.length > 0))
    .map((group) => ({
      zone: group.zone,
      name: group.name,
      ...(group.index === undefined ? {} : { index: group.index }),
    }));
  const routeSpecs = routes(located, config, warnings);
  return {
    backends: { zones, instances },
    groups,
    backendGroupRefs,
    routes: routeSpecs,
    warnings: warnings.sort(compareText),
  };
}

/** One Service read on its own: not ours, rejected, or its desired state before uniqueness and backends. */
export type ServicePlan =
  { kind: "ignored" } | { kind: "rejected"; rejections: Rejection[] } | { kind: "planned"; desired: ServiceDesired };

export function planService(service: ServiceInfo, config: Config, denyRulesHeld: ReadonlySet<string>): ServicePlan {
  const malformed = malformedService(service, config);
  if (malformed !== undefined) return { kind: "rejected", rejections: [malformed] };
  if (!wantsLoadBalancer(service, config)) return { kind: "ignored" };
  const outcome = serviceShape(service, config, denyRulesHeld.has(serviceKey(service.namespace, service.name)));
  return outcome.ok
    ? { kind: "planned", desired: outcome.desired }
    : { kind: "rejected", rejections: outcome.rejections };
}

/** UIDs that agree in their first 31 hex digits give one GCE name: the first Service by key (`owner`) keeps it. */
export function lbNameTaken(service: ServiceDesired, owner: string): Rejection {
  return {
    service: service.key,
    field: "metadata.uid",
    message: `Service ${service.key}: metadata.uid: load balancer name ${service.lbName} is already used by Service ${owner}`,
  };
}

/**
 * A planned Service (the owner of its load balancer name) on the cluster's backends. A backend
 * service lists its groups (backendGroups) only when a zone has more than one; more than GCE allows
 * in one backend service rejects the Service.
 */
export function placeService(
  planned: ServiceDesired,
  nodes: NodePart,
): { ok: true; desired: ServiceDesired } | { ok: false; rejection: Rejection } {
  const service = withBackends(planned, nodes.backends);
  if (service.backend !== "backend-service") return { ok: true, desired: service };
  const refs = nodes.backendGroupRefs;
  if (refs.length > BACKEND_SERVICE_MAX_BACKENDS) {
    return {
      ok: false,
      rejection: {
        service: service.key,
        field: "backends",
        message:
          `Service ${service.key}: its nodes need ${refs.length} instance groups, ` +
          `more than the ${BACKEND_SERVICE_MAX_BACKENDS} backends GCE allows in one backend service`,
      },
    };
  }
  return {
    ok: true,
    desired:
      refs.length > service.backendZones.length
        ? { ...service, backendGroups: refs.map((ref) => ({ ...ref })) }
        : service,
  };
}

/** A Service that needs the legacy node health check (a target pool on the shared check). */
export function usesLegacyHealthCheck(service: ServiceDesired): boolean {
  return service.backend === "target-pool" && service.healthCheck.kind === "shared";
}

/** The cluster stack's slice; `legacyHealthCheckUsed`: some desired Service usesLegacyHealthCheck. */
export function clusterDesired(
  config: Config,
  nodes: NodePart,
  observed: ObservedCloud,
  legacyHealthCheckUsed: boolean,
): ClusterDesired {
  return {
    stack: CLUSTER_STACK,
    project: config.project,
    region: config.region,
    network: config.network,
    clusterId: config.clusterId,
    instanceGroups: nodes.groups,
    nodeHealthCheck: sharedNodeHealthCheck(config),
    nodeHealthCheckFirewall: {
      name: nodeHealthCheckFirewallName(config.clusterId),
      description: clusterDescription(config.clusterId),
      sourceRanges: healthCheckSourceRanges(config),
      targetTags: [...config.nodeTags],
      allows: [{ protocol: "tcp", ports: [String(nodeProbe(config).port)] }],
      // No destination: it serves every load balancer of the cluster. With the deny rules on, it
      // moves above them as the stock CCM's does (ensureHTTPHealthCheckFirewall, allowPriority):
      // the checkers' probes go to each load balancer's IP, which a deny rule at 1000 would win.
      // With them off, it stays above while a Service stack may still hold one (ObservedCloud).
      priority:
        (observed.denyRulesHeld ?? []).length > 0 || observed.denyRulesUnread === true
          ? FIREWALL_PRIORITY_ALLOW_ABOVE_DENY
          : allowPriority(config, "EXTERNAL"),
    },
    legacyNodeHealthCheck: observed.legacyHealthCheckReferenced || legacyHealthCheckUsed,
    routes: nodes.routes,
  };
}

/**
 * The reference: every piece computed from scratch. model/desiredCache.ts keeps the same pieces
 * and recomputes only those a change reaches; a property test holds the two equal.
 */
export function desiredState(
  snapshot: ClusterSnapshot,
  config: Config,
  observed: ObservedCloud = NOTHING_OBSERVED,
): DesiredState {
  const nodes = nodePart(snapshot.nodes, config, observed);
  const denyRulesHeld = new Set(observed.denyRulesHeld);
  const planned: ServiceDesired[] = [];
  const rejected: Rejection[] = [];
  for (const service of snapshot.services) {
    const plan = planService(service, config, denyRulesHeld);
    if (plan.kind === "planned") planned.push(plan.desired);
    else if (plan.kind === "rejected") rejected.push(...plan.rejections);
  }
  planned.sort((a, b) => compareText(a.key, b.key));
  const owners = new Map<string, string>();
  const services: ServiceDesired[] = [];
  for (const service of planned) {
    const owner = owners.get(service.lbName);
    if (owner !== undefined) {
      rejected.push(lbNameTaken(service, owner));
      continue;
    }
    owners.set(service.lbName, service.key);
    const placed = placeService(service, nodes);
    if (placed.ok) services.push(placed.desired);
    else rejected.push(placed.rejection);
  }
  rejected.sort(compareRejections);
  return {
    cluster: clusterDesired(config, nodes, observed, services.some(usesLegacyHealthCheck)),
    services,
    rejected,
    warnings: nodes.warnings,
  };
}

/**
 * desiredState(snapshot, config, observed): the whole GCP picture of a cluster. Pure and
 * deterministic: the same nodes and services in any order give byte-identical JSON.
 */
import { HEALTH_CHECK_SOURCE_RANGES } from "./healthcheck";
import { assignGroups } from "./groups";
import { BACKEND_SERVICE_MAX_BACKENDS, INSTANCE_GROUP_MAX_INSTANCES } from "./limits";
import { CLUSTER_STACK, clusterDescription, instanceGroupIndex, instanceGroupName, nodeHealthCheckFirewallName, isValidGceName, ROUTE_DESCRIPTION, routeName, serviceKey } from "./names";
import { cidrContains, parseCidr4, type Cidr4 } from "./net";
import { isBackendNode, nodeInstance, wantsLoadBalancer } from "./rules";
import { allowPriority, serviceDesired, sharedNodeHealthCheck, type Backends } from "./service";
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
} from "./types";

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareRejections(a: Rejection, b: Rejection): number {
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

function instanceGroups(backends: readonly InstanceRef[], config: Config, observed: ObservedCloud): InstanceGroupSpec[] {
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

/**
 * The groups a Service's backend service lists: every group of its backend zones that holds an
 * instance, and each zone's first group. Set on the Service only when a zone has more than one;
 * more than GCE allows in one backend service rejects the Service.
 */
function withBackendGroups(services: ServiceDesired[], groups: readonly InstanceGroupSpec[], rejected: Rejection[]): ServiceDesired[] {
  return services.flatMap((service): ServiceDesired[] => {
    if (service.backend !== "backend-service") return [service];
    const zones = new Set(service.backendZones);
    const refs: GroupRef[] = groups
      .filter((group) => zones.has(group.zone) && (group.index === undefined || group.instances.length > 0))
      .map((group) => ({ zone: group.zone, name: group.name, ...(group.index === undefined ? {} : { index: group.index }) }));
    if (refs.length > BACKEND_SERVICE_MAX_BACKENDS) {
      rejected.push({
        service: service.key,
        field: "backends",
        message: `Service ${service.key}: its nodes need ${refs.length} instance groups, ` + `more than the ${BACKEND_SERVICE_MAX_BACKENDS} backends GCE allows in one backend service`,
      });
      return [];
    }
    return refs.length > zones.size ? [{ ...service, backendGroups: refs }] : [service];
  });
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
      warnings.push(`node ${node.name}: spec.podCIDRs: ${parsed.canonical} is outside clusterCIDR ${config.clusterCIDR}`);
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
function presentNodes(snapshot: ClusterSnapshot, config: Config, observed: ObservedCloud, warnings: string[]): LocatedNode[] {
  const gone = new Set(observed.goneInstances.map(instanceId));
  return locateNodes(snapshot.nodes, config, warnings).filter(({ node, instance }) => {
    if (!gone.has(instanceId(instance))) return true;
    // A group naming a deleted VM cannot be written at all: one such Node would stop every Node's changes.
    warnings.push(`node ${node.name}: instance ${instanceId(instance)} does not exist in GCE; left out of instance groups and routes`);
    return false;
  });
}

/** Every Service that wants a load balancer, sorted by key, and those refused with why. */
function desiredServices(snapshot: ClusterSnapshot, config: Config, backends: Backends, denyRulesHeld: ReadonlySet<string>): { services: ServiceDesired[]; rejected: Rejection[] } {
  const services: ServiceDesired[] = [];
  const rejected: Rejection[] = [];
  for (const service of snapshot.services) {
    const malformed = malformedService(service, config);
    if (malformed !== undefined) {
      rejected.push(malformed);
      continue;
    }
    if (!wantsLoadBalancer(service, config)) continue;
    const outcome = serviceDesired(service, config, backends, denyRulesHeld.has(serviceKey(service.namespace, service.name)));
    if (outcome.ok) services.push(outcome.desired);
    else rejected.push(...outcome.rejections);
  }
  services.sort((a, b) => compareText(a.key, b.key));
  // UIDs that agree in their first 31 hex digits give one GCE name: the first Service by key keeps it.
  const owners = new Map<string, string>();
  const unique = services.filter((service) => {
    const owner = owners.get(service.lbName);
    if (owner === undefined) {
      owners.set(service.lbName, service.key);
      return true;
    }
    rejected.push({
      service: service.key,
      field: "metadata.uid",
      message: `Service ${service.key}: metadata.uid: load balancer name ${service.lbName} is already used by Service ${owner}`,
    });
    return false;
  });
  rejected.sort(compareRejections);
  return { services: unique, rejected };
}

export function desiredState(snapshot: ClusterSnapshot, config: Config, observed: ObservedCloud = NOTHING_OBSERVED): DesiredState {
  const warnings: string[] = [];
  const located = presentNodes(snapshot, config, observed, warnings);
  const backendInstances = located
    .filter(({ node }) => isBackendNode(node))
    .map(({ instance }) => instance)
    .sort(compareInstances);
  const backendZones = [...new Set([...backendInstances.map((instance) => instance.zone), ...(config.instanceGroupZones ?? [])])].sort(compareText);
  const denyRulesHeld = new Set(observed.denyRulesHeld);
  const planned = desiredServices(snapshot, config, { zones: backendZones, instances: backendInstances }, denyRulesHeld);
  const groups = instanceGroups(backendInstances, config, observed);
  const rejected = [...planned.rejected];
  const services = withBackendGroups(planned.services, groups, rejected);
  if (rejected.length > planned.rejected.length) rejected.sort(compareRejections);
  const cluster: ClusterDesired = {
    stack: CLUSTER_STACK,
    project: config.project,
    region: config.region,
    network: config.network,
    clusterId: config.clusterId,
    instanceGroups: groups,
    nodeHealthCheck: sharedNodeHealthCheck(config),
    nodeHealthCheckFirewall: {
      name: nodeHealthCheckFirewallName(config.clusterId),
      description: clusterDescription(config.clusterId),
      sourceRanges: [...HEALTH_CHECK_SOURCE_RANGES],
      targetTags: [...config.nodeTags],
      allows: [{ protocol: "tcp", ports: ["10256"] }],
      // No destination: it serves every load balancer of the cluster. With the deny rules on, it
      // moves above them as the stock CCM's does (ensureHTTPHealthCheckFirewall, allowPriority):
      // the checkers' probes go to each load balancer's IP, which a deny rule at 1000 would win.
      // With them off, it stays above while a Service stack may still hold one (ObservedCloud).
      priority: denyRulesHeld.size > 0 || observed.denyRulesUnread === true ? FIREWALL_PRIORITY_ALLOW_ABOVE_DENY : allowPriority(config, "EXTERNAL"),
    },
    legacyNodeHealthCheck: observed.legacyHealthCheckReferenced || services.some((service) => service.backend === "target-pool" && service.healthCheck.kind === "shared"),
    routes: routes(located, config, warnings),
  };
  return { cluster, services, rejected, warnings: warnings.sort(compareText) };
}

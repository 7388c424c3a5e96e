/**
 * desiredState(snapshot, config, observed): the whole GCP picture of a cluster. Pure and
 * deterministic: the same nodes and services in any order give byte-identical JSON.
 */
import { healthCheckSourceRanges, nodeProbe } from "./healthcheck";
import { assignGroups } from "./groups";
import { selectorMatches, type LabelRequirement } from "./labelSelector";
import { BACKEND_SERVICE_MAX_BACKENDS, INSTANCE_GROUP_MAX_INSTANCES } from "./limits";
import {
  CLUSTER_STACK,
  clusterDescription,
  instanceGroupName,
  isNegOf,
  negName,
  nodeHealthCheckFirewallName,
  isValidGceName,
  parseInstanceGroupName,
  ROUTE_DESCRIPTION,
  routeName,
  serviceKey,
  subnetGroupName,
  subnetworkHash,
} from "./names";
import { cidrContains, parseCidr4, type Cidr4 } from "./net";
import { isBackendNode, isUnmanagedNode, nodeInstance, wantsLoadBalancer } from "./rules";
import { allowPriority, serviceShape, sharedNodeHealthCheck, withBackends, type Backends } from "./service";
import { malformedNode, malformedService } from "./shape";
import { INTERNAL_BACKEND_VM_LIMIT, subsetPerZone, subsetSize } from "./subsets";
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
  type NegRef,
  type NegSpec,
  type NodeInfo,
  type ObservedCloud,
  type Rejection,
  type RouteSpec,
  type ServiceDesired,
  type ServiceInfo,
  type ServiceNotice,
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

/**
 * The Nodes whose GCE instance is known (valid, in our project, one Node per instance), sorted by
 * Node name. An unmanaged Node is left out without a warning: its owner said it is no VM of ours.
 */
export function locateNodes(nodes: readonly NodeInfo[], config: Config, warnings: string[] = []): LocatedNode[] {
  const located: LocatedNode[] = [];
  for (const node of nodes) {
    const malformed = malformedNode(node);
    if (malformed !== undefined) {
      warnings.push(malformed);
      continue;
    }
    if (isUnmanagedNode(node)) continue;
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

/**
 * The subnetwork whose groups and NEGs keep the plain names: config `subnetwork`; without it, the
 * one subnetwork Compute reports the nodes in (a cluster upgraded from before dccm read subnetworks
 * keeps its names whatever its subnetwork is called), else among several the network's namesake
 * (an auto-mode network's), else the first by name. Set `subnetwork` when nodes span several, so
 * the choice cannot move as they come and go.
 */
export function defaultSubnetwork(config: Pick<Config, "network" | "subnetwork">, observed?: ObservedCloud): string {
  if (config.subnetwork !== undefined || observed?.instanceSubnets === undefined)
    return config.subnetwork ?? config.network;
  const reported = reportedSubnetworks(observed.instanceSubnets);
  if (reported.length === 0 || reported.includes(config.network)) return config.network;
  return reported[0];
}

/**
 * The distinct subnetworks of one observation, sorted: computed once per observation (the record is
 * replaced, never edited, when a subnetwork changes), not once per Service placed.
 */
const subnetworksByObservation = new WeakMap<Readonly<Record<string, string>>, readonly string[]>();
function reportedSubnetworks(instanceSubnets: Readonly<Record<string, string>>): readonly string[] {
  let reported = subnetworksByObservation.get(instanceSubnets);
  if (reported === undefined) {
    reported = [...new Set(Object.values(instanceSubnets))].sort();
    subnetworksByObservation.set(instanceSubnets, reported);
  }
  return reported;
}

/**
 * A NEG names its subnetwork, and a guess would move: the network's own name is a subnetwork only on
 * an auto-mode network, and what Compute reports is unknown after a restart until it answers (NEGs
 * recreated or emptied on the way). So backend `neg` takes the default subnetwork from config alone.
 */
function subnetworkUnconfigured(service: ServiceDesired): Rejection {
  return {
    service: service.key,
    field: "backends",
    message:
      `Service ${service.key}: backend neg needs config subnetwork: the subnetwork of the nodes' ` +
      `network endpoint groups (dccm does not guess it)`,
  };
}

/** Where an instance's first NIC is (ObservedCloud.instanceSubnets), else the default subnetwork. */
function subnetworkOf(instance: InstanceRef, config: Config, observed: ObservedCloud): string {
  return observed.instanceSubnets?.[instanceId(instance)] ?? defaultSubnetwork(config, observed);
}

/** A zone's groups of one subnetwork: `hash` "" for the default subnetwork's, else its subnetworkHash. */
function familyKey(zone: string, hash: string): string {
  return `${zone}/${hash}`;
}

/** `<zone>/<name>` keys of the cluster's own groups → `familyKey` → group number → value. */
function byFamilyIndex<T>(entries: Iterable<[string, T]>, clusterId: string): Map<string, Map<number, T>> {
  const out = new Map<string, Map<number, T>>();
  for (const [key, value] of entries) {
    const slash = key.indexOf("/");
    const parsed = slash < 0 ? undefined : parseInstanceGroupName(clusterId, key.slice(slash + 1));
    if (parsed === undefined) continue;
    const family = familyKey(key.slice(0, slash), parsed.subnetHash);
    const indexMap = out.get(family) ?? new Map<number, T>();
    indexMap.set(parsed.index, value);
    out.set(family, indexMap);
  }
  return out;
}

/** A backend instance and the subnetwork its group must be of. */
interface PlacedInstance {
  instance: InstanceRef;
  subnetwork: string;
}

function instanceGroups(
  backends: readonly PlacedInstance[],
  config: Config,
  observed: ObservedCloud,
): InstanceGroupSpec[] {
  const home = defaultSubnetwork(config, observed);
  // A configured zone's first group stands like one an applied Service stack names: declared, empty or not.
  const standingZones = new Set([...observed.referencedZones, ...(config.instanceGroupZones ?? [])]);
  const byFamily = new Map<string, string[]>();
  for (const zone of standingZones) byFamily.set(familyKey(zone, ""), []);
  for (const { instance, subnetwork } of backends) {
    const family = familyKey(instance.zone, subnetwork === home ? "" : subnetworkHash(subnetwork));
    byFamily.set(family, [...(byFamily.get(family) ?? []), instance.name]);
  }
  const previous = byFamilyIndex(Object.entries(observed.groupMembers ?? {}), config.clusterId);
  const referenced = byFamilyIndex(
    (observed.referencedGroups ?? []).map((key): [string, true] => [key, true]),
    config.clusterId,
  );
  for (const family of referenced.keys()) if (!byFamily.has(family)) byFamily.set(family, []);
  const specs: InstanceGroupSpec[] = [];
  for (const family of [...byFamily.keys()].sort(compareText)) {
    const slash = family.indexOf("/");
    const zone = family.slice(0, slash);
    const hash = family.slice(slash + 1);
    const familyReferenced = new Set(referenced.get(family)?.keys());
    if (hash === "" && standingZones.has(zone)) familyReferenced.add(1);
    const { groups } = assignGroups({
      instances: byFamily.get(family) ?? [],
      previous: previous.get(family) ?? new Map(),
      limit: config.instanceGroupLimit ?? INSTANCE_GROUP_MAX_INSTANCES,
      referenced: familyReferenced,
    });
    for (const [index, instances] of groups) {
      specs.push({
        name: hash === "" ? instanceGroupName(config.clusterId, index) : subnetGroupName(config.clusterId, hash, index),
        zone,
        ...(index === 1 ? {} : { index }),
        ...(hash === "" ? {} : { subnetworkHash: hash }),
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

/** A node a `neg` Service's NEGs may hold: a backend node with its instance, subnetwork and internal IP. */
export interface NegNode {
  node: string;
  instance: InstanceRef;
  subnetwork: string;
  ipAddress: string;
  labels: Readonly<Record<string, string>>;
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
  /** The backend nodes with an internal IP, by node name: what `neg` Services pick their subsets from. */
  negNodes: NegNode[];
  /** Backend nodes without an internal IP, told (sorted) only while a `neg` Service is served. */
  noEndpointWarnings: string[];
}

export function nodePart(nodes: readonly NodeInfo[], config: Config, observed: ObservedCloud): NodePart {
  const warnings: string[] = [];
  const located = presentNodes(nodes, config, observed, warnings);
  const backendNodes = located.filter(({ node }) => isBackendNode(node));
  const instances = backendNodes.map(({ instance }) => instance).sort(compareInstances);
  const zones = [
    ...new Set([...instances.map((instance) => instance.zone), ...(config.instanceGroupZones ?? [])]),
  ].sort(compareText);
  const placed = backendNodes.map(({ instance }) => ({
    instance,
    subnetwork: subnetworkOf(instance, config, observed),
  }));
  const groups = instanceGroups(placed, config, observed);
  const zoneSet = new Set(zones);
  const backendGroupRefs = groups
    .filter(
      (group) =>
        zoneSet.has(group.zone) &&
        ((group.index === undefined && group.subnetworkHash === undefined) || group.instances.length > 0),
    )
    .map((group) => ({
      zone: group.zone,
      name: group.name,
      ...(group.index === undefined ? {} : { index: group.index }),
      ...(group.subnetworkHash === undefined ? {} : { subnetworkHash: group.subnetworkHash }),
    }));
  const routeSpecs = routes(located, config, warnings);
  const negNodes: NegNode[] = [];
  const noEndpointWarnings: string[] = [];
  for (const { node, instance } of backendNodes) {
    if (typeof node.internalIP === "string" && node.internalIP !== "")
      negNodes.push({
        node: node.name,
        instance,
        subnetwork: subnetworkOf(instance, config, observed),
        ipAddress: node.internalIP,
        labels: node.labels,
      });
    else
      noEndpointWarnings.push(
        `node ${node.name}: no InternalIP in status.addresses; left out of network endpoint groups`,
      );
  }
  return {
    backends: { zones, instances },
    groups,
    backendGroupRefs,
    routes: routeSpecs,
    warnings: warnings.sort(compareText),
    negNodes,
    noEndpointWarnings: noEndpointWarnings.sort(compareText),
  };
}

/** The warnings of a desired state: the Nodes', and those about NEG endpoints while a `neg` Service is served. */
export function stateWarnings(nodes: NodePart, negServed: boolean): string[] {
  return negServed && nodes.noEndpointWarnings.length > 0
    ? [...nodes.warnings, ...nodes.noEndpointWarnings].sort(compareText)
    : nodes.warnings;
}

/** One Service read on its own: not ours, rejected, or its desired state before uniqueness and backends. */
export type ServicePlan =
  | { kind: "ignored" }
  | { kind: "rejected"; rejections: Rejection[] }
  | { kind: "planned"; desired: ServiceDesired; nodeSelector?: LabelRequirement[] };

/** `addressNames`: ObservedCloud.addressNames, the addresses Services name (model/addressNames.ts). */
export function planService(
  service: ServiceInfo,
  config: Config,
  denyRulesHeld: ReadonlySet<string>,
  addressNames?: ObservedCloud["addressNames"],
): ServicePlan {
  const malformed = malformedService(service, config);
  if (malformed !== undefined) return { kind: "rejected", rejections: [malformed] };
  if (!wantsLoadBalancer(service, config)) return { kind: "ignored" };
  const outcome = serviceShape(
    service,
    config,
    denyRulesHeld.has(serviceKey(service.namespace, service.name)),
    addressNames,
  );
  if (!outcome.ok) return { kind: "rejected", rejections: outcome.rejections };
  return {
    kind: "planned",
    desired: outcome.desired,
    ...(outcome.nodeSelector !== undefined ? { nodeSelector: outcome.nodeSelector } : {}),
  };
}

/** UIDs that agree in their first 31 hex digits give one GCE name: the first Service by key (`owner`) keeps it. */
export function lbNameTaken(service: ServiceDesired, owner: string): Rejection {
  return {
    service: service.key,
    field: "metadata.uid",
    message: `Service ${service.key}: metadata.uid: load balancer name ${service.lbName} is already used by Service ${owner}`,
  };
}

function compareNotices(a: ServiceNotice, b: ServiceNotice): number {
  return compareText(a.reason, b.reason) || compareText(a.message, b.message);
}

/** The Service with `more` notices added to its own, sorted; unchanged when none. */
function withNotices(service: ServiceDesired, more: readonly ServiceNotice[]): ServiceDesired {
  if (more.length === 0) return service;
  return { ...service, notices: [...(service.notices ?? []), ...more].sort(compareNotices) };
}

/** A placed Service, and for backend `neg` its NEGs (the cluster stack's), sorted by zone then name. */
export type Placement = { ok: true; desired: ServiceDesired; negs: NegSpec[] } | { ok: false; rejection: Rejection };

function tooManyBackends(service: ServiceDesired, count: number, what: string): Rejection {
  return {
    service: service.key,
    field: "backends",
    message:
      `Service ${service.key}: its nodes need ${count} ${what}, ` +
      `more than the ${BACKEND_SERVICE_MAX_BACKENDS} backends GCE allows in one backend service`,
  };
}

/**
 * A planned Service (the owner of its load balancer name) on the cluster's backends. A backend
 * service lists its groups (backendGroups) only when a zone has more than one; more than GCE allows
 * in one backend service rejects the Service. An internal one whose groups hold more VMs than an
 * internal passthrough load balancer distributes to carries a BackendLimit notice. Backend `neg`:
 * placeNegService.
 */
export function placeService(planned: ServiceDesired, nodes: NodePart, neg: NegPlacementInput): Placement {
  const service = withBackends(planned, nodes.backends);
  if (service.backend === "neg") return placeNegService(service, nodes, neg);
  if (service.backend !== "backend-service") return { ok: true, desired: service, negs: [] };
  const refs = nodes.backendGroupRefs;
  if (refs.length > BACKEND_SERVICE_MAX_BACKENDS)
    return { ok: false, rejection: tooManyBackends(service, refs.length, "instance groups") };
  const grouped =
    refs.length > service.backendZones.length
      ? { ...service, backendGroups: refs.map((ref) => ({ ...ref })) }
      : service;
  return { ok: true, desired: withNotices(grouped, backendLimitNotices(grouped, nodes)), negs: [] };
}

/** Whether the cluster's instance groups hold more VMs than an internal load balancer distributes to. */
export function overInternalVmLimit(nodes: NodePart): boolean {
  return nodes.backends.instances.length > INTERNAL_BACKEND_VM_LIMIT;
}

function backendLimitNotices(service: ServiceDesired, nodes: NodePart): ServiceNotice[] {
  if (service.scheme !== "INTERNAL" || !overInternalVmLimit(nodes)) return [];
  return [
    {
      reason: "BackendLimit",
      message:
        `internal passthrough load balancers distribute to at most ${INTERNAL_BACKEND_VM_LIMIT} VMs with instance-group backends, ` +
        `and this Service's instance groups hold more: some nodes get no traffic; set backendMode: neg ` +
        `(config, or annotation dccm.io/backend: neg) to serve it from a subset of at most ${INTERNAL_BACKEND_VM_LIMIT} nodes`,
    },
  ];
}

/** What a `neg` placement reads besides the Service and the Nodes. */
export interface NegPlacementInput {
  config: Pick<Config, "network" | "subnetwork">;
  observed: ObservedCloud;
  /** `dccm.io/node-selector`'s requirements. */
  nodeSelector?: readonly LabelRequirement[];
  /** hashedName(node, uid) memoized for the Service (model/subsets.ts). */
  hash?: (node: string) => string;
}

/** The nodes a Service's NEGs hold now (ObservedCloud.negMembers), zone → node names, sorted. */
function currentSubset(lbName: string, candidates: readonly NegNode[], observed: ObservedCloud): Map<string, string[]> {
  const nodeOf = new Map(candidates.map((c) => [instanceId(c.instance), c.node]));
  const current = new Map<string, Set<string>>();
  for (const [key, members] of Object.entries(observed.negMembers ?? {})) {
    const slash = key.indexOf("/");
    if (slash < 0 || !isNegOf(lbName, key.slice(slash + 1))) continue;
    const zone = key.slice(0, slash);
    const set = current.get(zone) ?? new Set<string>();
    for (const instance of members) {
      const node = nodeOf.get(`${zone}/${instance}`);
      if (node !== undefined) set.add(node);
    }
    current.set(zone, set);
  }
  return new Map([...current].map(([zone, set]) => [zone, [...set].sort(compareText)]));
}

/**
 * A `neg` Service: its subset of the eligible nodes (model/subsets.ts, salted with its UID) in one
 * NEG per (zone, subnetwork) that has eligible nodes, the default subnetwork's in every such zone
 * even when empty (as ingress-gce keeps one per zone). Which NEGs the backend service lists moves
 * only when a zone or subnetwork gains its first eligible node or loses its last, so a node's entry
 * or exit runs no Service stack: it moves only the endpoints (DesiredState.networkEndpointGroups). ETP=Local with more eligible nodes than the subset:
 * SubsetTruncated (dccm reads no EndpointSlices, so a pod's node may be outside the subset).
 */
export function placeNegService(service: ServiceDesired, nodes: NodePart, input: NegPlacementInput): Placement {
  if (input.config.subnetwork === undefined) return { ok: false, rejection: subnetworkUnconfigured(service) };
  const selector = input.nodeSelector;
  const candidates =
    selector === undefined ? nodes.negNodes : nodes.negNodes.filter((c) => selectorMatches(selector, c.labels));
  const home = defaultSubnetwork(input.config, input.observed);
  const byZone = new Map<string, NegNode[]>();
  for (const candidate of candidates)
    byZone.set(candidate.instance.zone, [...(byZone.get(candidate.instance.zone) ?? []), candidate]);
  const local = service.healthCheck.kind === "dedicated";
  const size = subsetSize(service.scheme, local);
  const picked = subsetPerZone(
    new Map([...byZone].map(([zone, list]) => [zone, list.map((c) => c.node)])),
    size,
    service.uid,
    currentSubset(service.lbName, candidates, input.observed),
    input.hash,
  );
  const negs: NegSpec[] = [];
  for (const zone of [...byZone.keys()].sort(compareText)) {
    const inZone = byZone.get(zone) ?? [];
    const chosen = new Set(picked.get(zone));
    const subnetworks = new Set([home, ...inZone.map((c) => c.subnetwork)]);
    for (const subnetwork of [...subnetworks].sort(compareText)) {
      negs.push({
        name: negName(service.lbName, subnetwork, home),
        zone,
        subnetwork,
        service: service.key,
        description: service.description,
        endpoints: inZone
          .filter((c) => c.subnetwork === subnetwork && chosen.has(c.node))
          .map((c) => ({ instance: c.instance.name, ipAddress: c.ipAddress }))
          .sort((a, b) => compareText(a.instance, b.instance)),
      });
    }
  }
  if (negs.length > BACKEND_SERVICE_MAX_BACKENDS)
    return { ok: false, rejection: tooManyBackends(service, negs.length, "network endpoint groups") };
  const backendNegs: NegRef[] = negs.map(({ zone, name, subnetwork }) => ({ zone, name, subnetwork }));
  const members = input.observed.negMembers ?? {};
  const unfilled = negs.some((neg) => neg.endpoints.length > 0 && members[`${neg.zone}/${neg.name}`]?.length === 0);
  const notices: ServiceNotice[] =
    local && candidates.length > size
      ? [
          {
            reason: "SubsetTruncated",
            message:
              `externalTrafficPolicy Local: the load balancer reaches a subset of ${size} of the eligible nodes ` +
              `(GCE_VM_IP subsetting); pods on nodes outside it get no traffic from it (dccm does not read EndpointSlices)`,
          },
        ]
      : [];
  return {
    ok: true,
    desired: withNotices(
      unfilled ? onGroupsUntilFilled(service, nodes, backendNegs) : { ...service, backendNegs },
      notices,
    ),
    negs: negs.sort((a, b) => compareText(a.zone, b.zone) || compareText(a.name, b.name)),
  };
}

/**
 * A `neg` Service whose NEGs are not filled yet: its backend service lists the cluster's instance
 * groups, as a backend-service Service's would (none when they would be refused), while its stack
 * creates the NEGs and the NEG controller fills them; once filled, one update moves it onto them.
 */
function onGroupsUntilFilled(service: ServiceDesired, nodes: NodePart, backendNegs: NegRef[]): ServiceDesired {
  const groups = withBackends({ ...service, backend: "backend-service" }, nodes.backends);
  const refs = nodes.backendGroupRefs;
  return {
    ...service,
    backendZones: refs.length > BACKEND_SERVICE_MAX_BACKENDS ? [] : groups.backendZones,
    ...(refs.length > groups.backendZones.length && refs.length <= BACKEND_SERVICE_MAX_BACKENDS
      ? { backendGroups: refs.map((ref) => ({ ...ref })) }
      : {}),
    backendNegs,
    negsPending: true,
  };
}

/** NEGs in DesiredState.networkEndpointGroups' order: by Service, zone, name. */
export function sortNegs(negs: readonly NegSpec[]): NegSpec[] {
  return [...negs].sort(
    (a, b) => compareText(a.service, b.service) || compareText(a.zone, b.zone) || compareText(a.name, b.name),
  );
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
    ...(config.networkProject !== undefined ? { networkProject: config.networkProject } : {}),
    ...(config.firewallManagement !== undefined ? { firewallManagement: config.firewallManagement } : {}),
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
  const planned: Extract<ServicePlan, { kind: "planned" }>[] = [];
  const rejected: Rejection[] = [];
  for (const service of snapshot.services) {
    const plan = planService(service, config, denyRulesHeld, observed.addressNames);
    if (plan.kind === "planned") planned.push(plan);
    else if (plan.kind === "rejected") rejected.push(...plan.rejections);
  }
  planned.sort((a, b) => compareText(a.desired.key, b.desired.key));
  const owners = new Map<string, string>();
  const services: ServiceDesired[] = [];
  const negs: NegSpec[] = [];
  for (const plan of planned) {
    const service = plan.desired;
    const owner = owners.get(service.lbName);
    if (owner !== undefined) {
      rejected.push(lbNameTaken(service, owner));
      continue;
    }
    owners.set(service.lbName, service.key);
    const placed = placeService(service, nodes, negInput(config, observed, plan));
    if (placed.ok) {
      services.push(placed.desired);
      negs.push(...placed.negs);
    } else rejected.push(placed.rejection);
  }
  rejected.sort(compareRejections);
  return {
    cluster: clusterDesired(config, nodes, observed, services.some(usesLegacyHealthCheck)),
    services,
    rejected,
    warnings: stateWarnings(
      nodes,
      services.some((service) => service.backend === "neg"),
    ),
    ...(negs.length > 0 ? { networkEndpointGroups: sortNegs(negs) } : {}),
  };
}

/** A plan's input to placeNegService. */
export function negInput(
  config: Config,
  observed: ObservedCloud,
  plan: Extract<ServicePlan, { kind: "planned" }>,
  hash?: (node: string) => string,
): NegPlacementInput {
  return {
    config,
    observed,
    ...(plan.nodeSelector !== undefined ? { nodeSelector: plan.nodeSelector } : {}),
    ...(hash !== undefined ? { hash } : {}),
  };
}

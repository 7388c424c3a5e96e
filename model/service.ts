/** One LoadBalancer Service → its desired load balancer, or the reasons it is rejected. */
import {
  ANNOTATION_BACKEND,
  ANNOTATION_ILB_GLOBAL_ACCESS,
  ANNOTATION_ILB_SUBNET,
  ANNOTATION_IPV6_SUBNET,
  ANNOTATION_LB_IP_ADDRESSES,
  ANNOTATION_LB_SUBNET,
  ANNOTATION_LB_TYPE,
  ANNOTATION_LB_TYPE_LEGACY,
  ANNOTATION_NETWORK_TIER,
  ANNOTATION_NODE_SELECTOR,
  ANNOTATION_SOURCE_RANGES,
  ANNOTATION_WEIGHTED_LB,
  CLASS_GKE_L4_EXTERNAL,
  CLASS_GKE_L4_INTERNAL,
  WEIGHTED_LB_PODS_PER_NODE,
} from "./annotations";
import { parseLabelSelector, type LabelRequirement } from "./labelSelector";
import { readAddressNames, readExternalIpv6Subnet, readInternalSubnet, withRbs } from "./gkeAnnotations";
import { resolveAddressNames, type NamedAddress } from "./addressNames";
import {
  healthCheckSourceRanges,
  healthCheckSourceRangesIPv6,
  healthCheckSpec,
  nodeProbe,
  readHealthCheckTuning,
  tunedHealthCheck,
} from "./healthcheck";
import { readDualSourceRanges, readFamilies, readUserIPs, servedFamilies, type Families, type Served } from "./ipv6";
import {
  loadBalancerName,
  clusterDescription,
  ipv6Name,
  nodeHealthCheckName,
  protocolSuffixedName,
  serviceDescription,
  denyFirewallName,
  serviceHealthCheckFirewallName,
  serviceKey,
  serviceStackName,
  trafficFirewallName,
} from "./names";
import { formatIPv6, looksLikeIPv6, parseCidr4, parseIPv4, parseIPv6 } from "./net";
import { collapsePortRanges, MAX_FORWARDING_RULE_PORTS } from "./ports";
import { malformedServiceFields } from "./shape";
import {
  FIREWALL_PRIORITY_ALLOW_ABOVE_DENY,
  FIREWALL_PRIORITY_DEFAULT,
  type BackendMode,
  type Config,
  type DenyFirewallSpec,
  type FirewallDestination,
  type FirewallSpec,
  type FrontendSpec,
  type HealthCheckRef,
  type InstanceRef,
  type IpProtocol,
  type Ipv6Desired,
  type LbScheme,
  type NetworkTier,
  type Rejection,
  type ServiceDesired,
  type ServiceInfo,
  type ServiceNotice,
} from "./types";

export interface Backends {
  zones: string[];
  instances: InstanceRef[];
}

/**
 * `nodeSelector`: backend `neg` with `dccm.io/node-selector`, the requirements a node's labels must
 * meet to be in the Service's NEGs (placed by model/desired.ts).
 */
export type ServiceOutcome =
  { ok: true; desired: ServiceDesired; nodeSelector?: LabelRequirement[] } | { ok: false; rejections: Rejection[] };

class Problems {
  readonly list: Rejection[] = [];
  constructor(private readonly service: string) {}
  add(field: string, message: string): void {
    this.list.push({ service: this.service, field, message: `Service ${this.service}: ${field}: ${message}` });
  }
}

function annotation(service: ServiceInfo, key: string): string | undefined {
  const value: unknown = service.annotations[key];
  // malformedServiceFields rejects a non-string value before any annotation is read; never throw here.
  return typeof value === "string" ? value.trim() : undefined;
}

/** The scheme a GKE L4 class stands for (the class is handled only when listed in loadBalancerClasses). */
function gkeClassScheme(service: ServiceInfo): LbScheme | undefined {
  if (service.loadBalancerClass === CLASS_GKE_L4_INTERNAL) return "INTERNAL";
  if (service.loadBalancerClass === CLASS_GKE_L4_EXTERNAL) return "EXTERNAL";
  return undefined;
}

function readScheme(service: ServiceInfo, problems: Problems): LbScheme {
  const classScheme = gkeClassScheme(service);
  if (classScheme !== undefined) {
    const written = readAnnotatedScheme(service, problems);
    if (written !== undefined && written.scheme !== classScheme)
      problems.add(
        `metadata.annotations[${written.key}]`,
        `says ${written.scheme === "INTERNAL" ? "Internal" : "External"}, but spec.loadBalancerClass ${service.loadBalancerClass} is ${classScheme === "INTERNAL" ? "internal" : "external"}`,
      );
    return classScheme;
  }
  return readAnnotatedScheme(service, problems)?.scheme ?? "EXTERNAL";
}

function readAnnotatedScheme(service: ServiceInfo, problems: Problems): { key: string; scheme: LbScheme } | undefined {
  for (const key of [ANNOTATION_LB_TYPE, ANNOTATION_LB_TYPE_LEGACY]) {
    const value = annotation(service, key);
    if (value === undefined) continue;
    if (value.toLowerCase() === "internal") return { key, scheme: "INTERNAL" };
    if (value.toLowerCase() === "external" || value === "") return { key, scheme: "EXTERNAL" };
    // An unknown type must not silently become a public load balancer.
    problems.add(`metadata.annotations[${key}]`, `"${value}" is not Internal or External`);
    return undefined;
  }
  return undefined;
}

function readTier(service: ServiceInfo, problems: Problems): NetworkTier {
  const value = annotation(service, ANNOTATION_NETWORK_TIER);
  if (value === undefined || value.toLowerCase() === "premium") return "PREMIUM";
  if (value.toLowerCase() === "standard") return "STANDARD";
  problems.add(
    `metadata.annotations[${ANNOTATION_NETWORK_TIER}]`,
    `unknown network tier "${value}" (Premium or Standard)`,
  );
  return "PREMIUM";
}

function readBackendMode(
  service: ServiceInfo,
  config: Pick<Config, "backendMode">,
  scheme: LbScheme,
  problems: Problems,
): BackendMode {
  const value = annotation(service, ANNOTATION_BACKEND);
  const field = `metadata.annotations[${ANNOTATION_BACKEND}]`;
  if (gkeClassScheme(service) !== undefined) {
    // GKE's classes are served by NEGs, as GKE serves them.
    if (value !== undefined && value !== "neg")
      problems.add(
        field,
        `"${value}" does not go with spec.loadBalancerClass ${service.loadBalancerClass}, which is neg`,
      );
    return "neg";
  }
  // Internal load balancers have no target pools: the configured target-pool means instance groups for them.
  if (value === undefined)
    return scheme === "INTERNAL" && config.backendMode === "target-pool" ? "backend-service" : config.backendMode;
  if (value === "target-pool" || value === "backend-service" || value === "neg") return value;
  problems.add(field, `"${value}" is not backend-service, target-pool or neg`);
  return config.backendMode;
}

/** `dccm.io/node-selector`: parsed for backend `neg`, refused with any other. */
function readNodeSelector(
  service: ServiceInfo,
  backend: BackendMode,
  problems: Problems,
): LabelRequirement[] | undefined {
  const value = annotation(service, ANNOTATION_NODE_SELECTOR);
  if (value === undefined) return undefined;
  const field = `metadata.annotations[${ANNOTATION_NODE_SELECTOR}]`;
  if (backend !== "neg") {
    problems.add(
      field,
      `choosing nodes per Service needs backend neg (metadata.annotations[${ANNOTATION_BACKEND}]: neg or config backendMode: neg); this Service's backend is ${backend}`,
    );
    return undefined;
  }
  const parsed = parseLabelSelector(value);
  if (!parsed.ok) {
    problems.add(field, parsed.reason);
    return undefined;
  }
  return parsed.requirements;
}

/** `networking.gke.io/weighted-load-balancing`: whether `pods-per-node` is asked; any other value is refused. */
function readWeighted(service: ServiceInfo, problems: Problems): boolean {
  const value = annotation(service, ANNOTATION_WEIGHTED_LB);
  if (value === undefined) return false;
  if (value === WEIGHTED_LB_PODS_PER_NODE) return true;
  problems.add(`metadata.annotations[${ANNOTATION_WEIGHTED_LB}]`, `"${value}" is not ${WEIGHTED_LB_PODS_PER_NODE}`);
  return false;
}

/**
 * The traffic policies GKE reads (ingress-gce pkg/l4): zonal affinity for an internal `neg`
 * Service with spec.trafficDistribution PreferSameZone (or the deprecated PreferClose); weighted
 * load balancing for an external `neg` one with ETP=Local, else an UnsupportedConfiguration
 * notice and no weighting, as ingress-gce. Instance-group Services read neither, as before.
 */
function trafficPolicies(
  service: ServiceInfo,
  scheme: LbScheme,
  backend: BackendMode,
  weighted: boolean,
): Pick<ServiceDesired, "zonalAffinity" | "weightedLoadBalancing" | "notices"> {
  const distribution = service.trafficDistribution;
  const zonalAffinity =
    backend === "neg" && scheme === "INTERNAL" && (distribution === "PreferSameZone" || distribution === "PreferClose");
  const notices: ServiceNotice[] = [];
  let weightedLoadBalancing = false;
  if (weighted) {
    const field = `metadata.annotations[${ANNOTATION_WEIGHTED_LB}]`;
    if (scheme === "INTERNAL")
      notices.push({
        reason: "UnsupportedConfiguration",
        message: `${field}: weighted load balancing is for external load balancers only; not applied`,
      });
    else if (backend !== "neg")
      notices.push({
        reason: "UnsupportedConfiguration",
        message: `${field}: weighted load balancing needs backend neg; not applied`,
      });
    else if (service.externalTrafficPolicy !== "Local")
      notices.push({
        reason: "UnsupportedConfiguration",
        message: `${field}: weighted load balancing needs spec.externalTrafficPolicy Local; not applied`,
      });
    else weightedLoadBalancing = true;
  }
  return {
    ...(zonalAffinity ? { zonalAffinity: true as const } : {}),
    ...(weightedLoadBalancing ? { weightedLoadBalancing: true as const } : {}),
    ...(notices.length > 0 ? { notices } : {}),
  };
}

function readGlobalAccess(service: ServiceInfo, problems: Problems): boolean {
  const value = annotation(service, ANNOTATION_ILB_GLOBAL_ACCESS);
  if (value === undefined || value.toLowerCase() === "false") return false;
  if (value.toLowerCase() === "true") return true;
  problems.add(`metadata.annotations[${ANNOTATION_ILB_GLOBAL_ACCESS}]`, `"${value}" is not true or false`);
  return false;
}

/** The source ranges as written, and the field they were read from. */
function rawSourceRanges(service: ServiceInfo): { field: string; raw: string[] } {
  if (service.loadBalancerSourceRanges.length > 0)
    return { field: "spec.loadBalancerSourceRanges", raw: service.loadBalancerSourceRanges };
  const fromAnnotation = annotation(service, ANNOTATION_SOURCE_RANGES);
  if (fromAnnotation === undefined || fromAnnotation === "") return { field: "spec.loadBalancerSourceRanges", raw: [] };
  return { field: `metadata.annotations[${ANNOTATION_SOURCE_RANGES}]`, raw: fromAnnotation.split(",") };
}

function readSourceRanges(service: ServiceInfo, problems: Problems): string[] {
  const { field, raw } = rawSourceRanges(service);
  if (raw.length === 0) return ["0.0.0.0/0"];
  const ranges = new Set<string>();
  for (const text of raw) {
    const parsed = parseCidr4(text);
    if (parsed.ok) ranges.add(parsed.canonical);
    else problems.add(field, parsed.reason);
  }
  return [...ranges].sort();
}

function readUserIP(service: ServiceInfo, problems: Problems): string | undefined {
  const value = service.loadBalancerIP?.trim();
  if (value === undefined || value === "") return undefined;
  if (looksLikeIPv6(value)) {
    problems.add("spec.loadBalancerIP", `"${value}" is an IPv6 address; only IPv4 is supported`);
    return undefined;
  }
  if (parseIPv4(value) === undefined) {
    problems.add("spec.loadBalancerIP", `"${value}" is not an IPv4 address`);
    return undefined;
  }
  return value;
}

/**
 * The subnetwork the IPv6 half would use: an internal load balancer's own; for an external one
 * `dccm.io/ipv6-subnet`, else config `subnetwork` (an external IPv6 address comes from a subnet).
 */
function readIpv6Subnet(
  service: ServiceInfo,
  config: Config,
  scheme: LbScheme,
  subnetwork: string | undefined,
  problems: Problems,
): string | undefined {
  if (scheme === "INTERNAL") {
    if (annotation(service, ANNOTATION_IPV6_SUBNET) !== undefined)
      problems.add(
        `metadata.annotations[${ANNOTATION_IPV6_SUBNET}]`,
        `internal load balancers take their subnetwork from metadata.annotations[${ANNOTATION_LB_SUBNET}] or metadata.annotations[${ANNOTATION_ILB_SUBNET}]`,
      );
    return subnetwork;
  }
  return readExternalIpv6Subnet((key) => annotation(service, key), config, problems);
}

interface Addressing {
  served: Served;
  sourceRanges: string[];
  sourceRanges6: string[];
  userIP?: string;
  userIP6?: string;
  /** The IPv4 named by the annotation won over a spec.loadBalancerIP also set (MixedStaticIP). */
  mixedStaticIP?: true;
}

/** The IPs the user's addresses named in `networking.gke.io/load-balancer-ip-addresses` hold, by family. */
interface NamedIPs {
  ipv4?: string;
  ipv6?: string;
}

const ADDRESS_NAMES_FIELD = `metadata.annotations[${ANNOTATION_LB_IP_ADDRESSES}]`;

/**
 * The annotation's names resolved against what GCE answered (ObservedCloud.addressNames): each
 * address stays the user's, its IP taken as a user-owned IP (userIP, userIP6), as spec.loadBalancerIP.
 * A name not read yet is refused here; the daemon reads it first (controllers/service/plan.ts
 * waitForAddressNames), the stack program and `dccm render` do not read GCE and refuse the Service.
 */
function readNamedIPs(
  service: ServiceInfo,
  config: Pick<Config, "project" | "region">,
  scheme: LbScheme,
  observed: Readonly<Record<string, NamedAddress | null>> | undefined,
  problems: Problems,
): NamedIPs | undefined {
  const names = readAddressNames((key) => annotation(service, key), problems);
  if (names.length === 0) return undefined;
  const unread = names.filter((name) => observed?.[name] === undefined);
  if (unread.length > 0) {
    problems.add(
      ADDRESS_NAMES_FIELD,
      `address ${unread.join(", ")} not read from GCE yet: the daemon reads each named address before it applies the Service (the stack program, dccm render and dccm preview do not read GCE)`,
    );
    return undefined;
  }
  const found = new Map(names.map((name) => [name, observed?.[name] ?? undefined]));
  const resolution = resolveAddressNames(scheme, config, names, found);
  if (!resolution.ok) {
    problems.add(ADDRESS_NAMES_FIELD, resolution.problem);
    return undefined;
  }
  // GCE may write an IPv6 address with its range; the rule takes the address alone, in RFC 5952 form
  // (ingress-gce to_use.go IPv6ToUse, ipv6AddressWithoutRange).
  const groups = resolution.ipv6 !== undefined ? parseIPv6(resolution.ipv6.ip.split("/")[0] ?? "") : undefined;
  return {
    ...(resolution.ipv4 !== undefined ? { ipv4: resolution.ipv4.ip } : {}),
    ...(groups !== undefined ? { ipv6: formatIPv6(groups) } : {}),
  };
}

/**
 * Source ranges and the user's IPs: read as before for an IPv4 Service, by family once it asks for
 * IPv6. A named address wins over spec.loadBalancerIP, which is then not read (ingress-gce to_use.go
 * IPv4ToUse: the annotation first, `.Spec.LoadBalancerIP` only without an IPv4 from it); a named
 * family the Service does not serve is not used (ingress-gce asks IPv6ToUse only for dual-stack).
 */
function readAddressing(
  service: ServiceInfo,
  families: Families,
  served: Served,
  named: NamedIPs | undefined,
  problems: Problems,
): Addressing {
  const mixed = named?.ipv4 !== undefined && served.ipv4 && (service.loadBalancerIP?.trim() ?? "") !== "";
  if (!families.ipv6) {
    const userIP = named?.ipv4 ?? readUserIP(service, problems);
    return {
      served,
      sourceRanges: readSourceRanges(service, problems),
      sourceRanges6: [],
      ...(userIP !== undefined ? { userIP } : {}),
      ...(mixed ? { mixedStaticIP: true as const } : {}),
    };
  }
  const { field, raw } = rawSourceRanges(service);
  const ranges = readDualSourceRanges(field, raw, served, problems);
  const value = service.loadBalancerIP?.trim();
  const fromSpec =
    value === undefined || value === "" || (named?.ipv4 !== undefined && served.ipv4)
      ? {}
      : readUserIPs(value, served, problems);
  const ipv4 = served.ipv4 ? (named?.ipv4 ?? fromSpec.ipv4) : undefined;
  const ipv6 = served.ipv6 ? (named?.ipv6 ?? fromSpec.ipv6) : undefined;
  return {
    served,
    sourceRanges: ranges.ipv4,
    sourceRanges6: ranges.ipv6,
    ...(ipv4 !== undefined ? { userIP: ipv4 } : {}),
    ...(ipv6 !== undefined ? { userIP6: ipv6 } : {}),
    ...(mixed ? { mixedStaticIP: true as const } : {}),
  };
}

/** ingress-gce to_use.go IPv4ToUse's Normal Event when both are set, in its words. */
export const MIXED_STATIC_IP_MESSAGE = `Found both .Spec.LoadBalancerIP and "${ANNOTATION_LB_IP_ADDRESSES}" annotation. Consider using annotation only.`;

function isPort(value: number | undefined): value is number {
  return value !== undefined && Number.isInteger(value) && value >= 1 && value <= 65535;
}

function portSelection(ports: number[], scheme: LbScheme, backend: BackendMode): FrontendSpec["portSelection"] {
  const range = { kind: "range" as const, portRange: `${ports[0]}-${ports[ports.length - 1]}` };
  // Target-pool forwarding rules take only a range (the stock CCM writes "80-80" for one port).
  if (backend === "target-pool") return range;
  if (ports.length <= MAX_FORWARDING_RULE_PORTS) return { kind: "ports", ports: ports.map(String) };
  // Internal forwarding rules cannot take a range; external ones take min-max as the stock CCM does.
  if (scheme === "INTERNAL") return { kind: "all" };
  return range;
}

function readFrontends(
  service: ServiceInfo,
  lbName: string,
  scheme: LbScheme,
  backend: BackendMode,
  problems: Problems,
): FrontendSpec[] {
  if (service.ports.length === 0) {
    problems.add("spec.ports", "a LoadBalancer Service needs at least one port");
    return [];
  }
  const byProtocol = new Map<IpProtocol, number[]>();
  const seen = new Set<string>();
  service.ports.forEach((port, index) => {
    const field = `spec.ports[${index}]`;
    const protocol = (port.protocol === "" ? "TCP" : port.protocol).toUpperCase();
    if (protocol !== "TCP" && protocol !== "UDP") {
      problems.add(`${field}.protocol`, `${protocol} is not supported by GCE load balancers (TCP or UDP)`);
      return;
    }
    if (!isPort(port.port)) {
      problems.add(`${field}.port`, `${String(port.port)} is not a port number (1-65535)`);
      return;
    }
    const id = `${protocol}/${port.port}`;
    if (seen.has(id)) {
      problems.add(`${field}.port`, `${id} is listed twice`);
      return;
    }
    seen.add(id);
    const list = byProtocol.get(protocol) ?? [];
    list.push(port.port);
    byProtocol.set(protocol, list);
  });
  // The first port's protocol keeps the bare name, as the stock CCM names its only forwarding rule.
  const protocols = [...byProtocol.keys()];
  return protocols.map((protocol, index) => {
    const ports = [...(byProtocol.get(protocol) ?? [])].sort((a, b) => a - b);
    return {
      name: index === 0 ? lbName : protocolSuffixedName(lbName, protocol),
      protocol,
      ports,
      portSelection: portSelection(ports, scheme, backend),
    };
  });
}

function readHealthCheck(service: ServiceInfo, config: Config, lbName: string, problems: Problems): HealthCheckRef {
  const policy = service.externalTrafficPolicy ?? "Cluster";
  const tuning = readHealthCheckTuning((key) => annotation(service, key), policy === "Local", problems);
  if (policy === "Local") {
    if (!isPort(service.healthCheckNodePort)) {
      problems.add(
        "spec.healthCheckNodePort",
        `externalTrafficPolicy Local needs a healthCheckNodePort (got ${service.healthCheckNodePort ?? "none"})`,
      );
    }
    const description = serviceDescription(serviceKey(service.namespace, service.name));
    // kube-proxy's healthCheckNodePort server: `/healthz` whatever the node probe's path.
    return { kind: "dedicated", spec: tunedHealthCheck(lbName, service.healthCheckNodePort ?? 0, description, tuning) };
  }
  if (policy !== "Cluster") problems.add("spec.externalTrafficPolicy", `"${policy}" is not Cluster or Local`);
  return serviceNodeHealthCheck(service, config, lbName, tuning);
}

/**
 * An ETP=Cluster Service probes the node probe: through the cluster's shared check, or its own
 * check when its annotations ask something of it (timings, port or path), since the shared one
 * serves every Service of the cluster.
 */
function serviceNodeHealthCheck(
  service: ServiceInfo,
  config: Config,
  lbName: string,
  tuning: ReturnType<typeof readHealthCheckTuning>,
): HealthCheckRef {
  if (Object.keys(tuning.timings).length === 0 && tuning.port === undefined && tuning.path === undefined)
    return { kind: "shared", spec: sharedNodeHealthCheck(config) };
  const probe = nodeProbe(config);
  const description = serviceDescription(serviceKey(service.namespace, service.name));
  return {
    kind: "dedicated",
    spec: tunedHealthCheck(lbName, tuning.port ?? probe.port, description, {
      ...tuning,
      path: tuning.path ?? probe.path,
    }),
  };
}

export function sharedNodeHealthCheck(
  config: Pick<Config, "clusterId" | "nodeHealthCheckPort" | "nodeHealthCheckPath">,
): ReturnType<typeof healthCheckSpec> {
  const probe = nodeProbe(config);
  return healthCheckSpec(
    nodeHealthCheckName(config.clusterId),
    probe.port,
    clusterDescription(config.clusterId),
    probe.path,
  );
}

/** What a Service's spec and annotations say, each field read (and checked) once; problems are collected. */
function readServiceFields(
  service: ServiceInfo,
  config: Config,
  lbName: string,
  addressNames: Readonly<Record<string, NamedAddress | null>> | undefined,
  problems: Problems,
) {
  if (!/^[0-9a-f]{8}(-?[0-9a-f]{4}){3}-?[0-9a-f]{12}$/.test(service.uid)) {
    problems.add("metadata.uid", `"${service.uid}" is not a UID, so no load balancer name can be derived`);
  }
  const scheme = readScheme(service, problems);
  const networkTier = readTier(service, problems);
  const backend = withRbs(
    (key) => annotation(service, key),
    readBackendMode(service, config, scheme, problems),
    problems,
  );
  if (scheme === "INTERNAL" && backend === "target-pool") {
    problems.add(`metadata.annotations[${ANNOTATION_BACKEND}]`, "internal load balancers cannot use target pools");
  }
  const nodeSelector = readNodeSelector(service, backend, problems);
  const weighted = readWeighted(service, problems);
  const subnetwork =
    scheme === "INTERNAL" ? readInternalSubnet((key) => annotation(service, key), config, problems) : undefined;
  const allowGlobalAccess = scheme === "INTERNAL" ? readGlobalAccess(service, problems) : false;
  const families = readFamilies(service.ipFamilies, service.ipFamilyPolicy, problems);
  const ipv6Subnet = readIpv6Subnet(service, config, scheme, subnetwork, problems);
  const served = servedFamilies(families, { scheme, backend, networkTier, subnetwork: ipv6Subnet }, problems);
  const named = readNamedIPs(service, config, scheme, addressNames, problems);
  const addressing = readAddressing(service, families, served, named, problems);
  const frontends = readFrontends(service, lbName, scheme, backend, problems);
  for (const userIP of [addressing.userIP, addressing.userIP6]) checkSharedUserIP(scheme, userIP, frontends, problems);
  const affinity = service.sessionAffinity ?? "None";
  if (affinity !== "None" && affinity !== "ClientIP")
    problems.add("spec.sessionAffinity", `"${affinity}" is not None or ClientIP`);
  const healthCheck = readHealthCheck(service, config, lbName, problems);
  return {
    scheme,
    networkTier,
    backend,
    nodeSelector,
    weighted,
    subnetwork,
    ipv6Subnet,
    allowGlobalAccess,
    addressing,
    frontends,
    affinity,
    healthCheck,
  };
}

function checkSharedUserIP(
  scheme: LbScheme,
  userIP: string | undefined,
  frontends: FrontendSpec[],
  problems: Problems,
): void {
  if (scheme === "INTERNAL" && userIP !== undefined && frontends.length > 1) {
    // GCE lets several INTERNAL forwarding rules share an IP only through an address reserved with
    // purpose SHARED_LOADBALANCER_VIP (cloud.google.com/load-balancing/docs/internal#multiple-forwarding-rules);
    // dccm cannot prove a user IP is one, and reserves such an address itself when the field is unset.
    problems.add(
      "spec.loadBalancerIP",
      `an internal Service with both TCP and UDP ports needs one IP shared by two forwarding rules, which GCE allows only on an address reserved with purpose SHARED_LOADBALANCER_VIP; leave spec.loadBalancerIP unset so that dccm reserves one (got "${userIP}")`,
    );
  }
}

/**
 * `denyRuleHeld`: the Service's stack, as last applied, still holds a deny rule (ObservedCloud
 * denyRulesHeld): its allow rules stay at 999 until the deny rule is deleted.
 */
export function serviceDesired(
  service: ServiceInfo,
  config: Config,
  backends: Backends,
  denyRuleHeld = false,
): ServiceOutcome {
  const outcome = serviceShape(service, config, denyRuleHeld);
  return outcome.ok ? { ok: true, desired: withBackends(outcome.desired, backends) } : outcome;
}

/**
 * The Service's backends: the zones of a backend service, the instances of a target pool. Apart
 * from serviceShape because they are the cluster's, not the Service's: a Node change that moves
 * them re-places every Service of that backend kind without reading any Service again
 * (model/desiredCache.ts). The keys keep their place in the object, so its JSON (the stack's
 * hash) is what one pass would give.
 */
export function withBackends(desired: ServiceDesired, backends: Backends): ServiceDesired {
  return {
    ...desired,
    backendZones: desired.backend === "backend-service" ? [...backends.zones] : [],
    backendInstances: desired.backend === "target-pool" ? backends.instances.map((i) => ({ ...i })) : [],
  };
}

/** Everything serviceDesired says that is the Service's own: its backends empty (withBackends fills them). */
export function serviceShape(
  service: ServiceInfo,
  config: Config,
  denyRuleHeld: boolean,
  addressNames?: Readonly<Record<string, NamedAddress | null>>,
): ServiceOutcome {
  const malformed = malformedServiceFields(service);
  if (malformed !== undefined) return { ok: false, rejections: [malformed] };
  const key = serviceKey(service.namespace, service.name);
  const problems = new Problems(key);
  const lbName = loadBalancerName(service.uid);
  const {
    scheme,
    networkTier,
    backend,
    nodeSelector,
    weighted,
    subnetwork,
    ipv6Subnet,
    allowGlobalAccess,
    addressing,
    frontends,
    affinity,
    healthCheck,
  } = readServiceFields(service, config, lbName, addressNames, problems);
  if (problems.list.length > 0) return { ok: false, rejections: problems.list };
  const { served, userIP } = addressing;

  const description = serviceDescription(key);
  const desired: ServiceDesired = {
    key,
    stack: serviceStackName(service.namespace, service.name),
    namespace: service.namespace,
    name: service.name,
    uid: service.uid,
    lbName,
    description,
    scheme,
    backend,
    networkTier: scheme === "INTERNAL" ? "PREMIUM" : networkTier,
    ...(subnetwork !== undefined ? { subnetwork } : {}),
    allowGlobalAccess,
    ...(userIP !== undefined ? { userIP } : {}),
    ...(reservesAddress(config, userIP, served.ipv4, frontends) ? { reserveAddress: true as const } : {}),
    frontends,
    sessionAffinity: affinity === "ClientIP" ? "CLIENT_IP" : "NONE",
    healthCheck,
    ...ipv4Firewalls(
      firewallBasis(lbName, description, config, scheme, frontends, healthCheck, denyRuleHeld),
      addressing,
    ),
    backendZones: [],
    backendInstances: [],
    ...(backend === "neg" ? { backendNegs: [] } : {}),
    ...withMixedStaticIP(trafficPolicies(service, scheme, backend, weighted), addressing),
    ...(served.ipv6 && ipv6Subnet !== undefined
      ? {
          ipv6: ipv6Desired(
            firewallBasis(lbName, description, config, scheme, frontends, healthCheck, denyRuleHeld),
            ipv6Subnet,
            addressing,
          ),
        }
      : {}),
    ...(served.ipv6 && !served.ipv4 ? { ipv6Only: true } : {}),
    ...(served.fallback !== undefined ? { ipv6Fallback: served.fallback } : {}),
    ...(config.networkProject !== undefined ? { networkProject: config.networkProject } : {}),
    ...(config.firewallManagement !== undefined ? { firewallManagement: config.firewallManagement } : {}),
  };
  return { ok: true, desired, ...(nodeSelector !== undefined ? { nodeSelector } : {}) };
}

/** The traffic policies' notices, with MixedStaticIP (Normal) when the named IPv4 won over spec.loadBalancerIP. */
function withMixedStaticIP(
  policies: ReturnType<typeof trafficPolicies>,
  addressing: Addressing,
): ReturnType<typeof trafficPolicies> {
  if (addressing.mixedStaticIP !== true) return policies;
  const notice: ServiceNotice = { reason: "MixedStaticIP", message: MIXED_STATIC_IP_MESSAGE };
  const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  const notices = [...(policies.notices ?? []), notice].sort(
    (a, b) => byText(a.reason, b.reason) || byText(a.message, b.message),
  );
  return { ...policies, notices };
}

/**
 * Whether `<lb>` is reserved for the Service's life: with `addressReservation: always`, or when its
 * IPv4 forwarding rules (one per protocol) share one IP, which GCE allows only through a reserved
 * address (internal: purpose SHARED_LOADBALANCER_VIP, load-balancing/docs/internal/multiple-forwarding-rules-same-ip;
 * external: a rule naming an IP must name a reserved one, load-balancing/docs/forwarding-rule-concepts,
 * "IP address specifications"). Never for a user-owned IP, nor without IPv4.
 */
function reservesAddress(
  config: Pick<Config, "addressReservation">,
  userIP: string | undefined,
  ipv4: boolean,
  frontends: readonly FrontendSpec[],
): boolean {
  if (userIP !== undefined || !ipv4) return false;
  return config.addressReservation === "always" || frontends.length > 1;
}

/** What a Service's firewalls are derived from. */
interface FirewallBasis {
  lbName: string;
  description: string;
  targetTags: string[];
  allows: FirewallSpec["allows"];
  /** The dedicated check's port for the IPv4 health-check firewall; unset on the shared check (the cluster stack's firewall). */
  dedicatedPort?: number;
  healthCheckPort: number;
  /** The health checkers' ranges (config, else Google's). */
  checkerRanges: string[];
  checkerRanges6: string[];
  external: boolean;
  priority: number;
  deny: boolean;
}

function firewallBasis(
  lbName: string,
  description: string,
  config: Config,
  scheme: LbScheme,
  frontends: FrontendSpec[],
  healthCheck: HealthCheckRef,
  denyRuleHeld: boolean,
): FirewallBasis {
  return {
    lbName,
    description,
    targetTags: [...config.nodeTags],
    allows: frontends.map((frontend) => ({
      protocol: frontend.protocol.toLowerCase(),
      ports: collapsePortRanges(frontend.ports),
    })),
    ...(healthCheck.kind === "dedicated" ? { dedicatedPort: healthCheck.spec.port } : {}),
    healthCheckPort: healthCheck.spec.port,
    checkerRanges: healthCheckSourceRanges(config),
    checkerRanges6: healthCheckSourceRangesIPv6(config),
    external: scheme === "EXTERNAL",
    // A deny rule still held keeps the allow rules above it until a run has deleted it (the stock
    // CCM too deletes the deny rule before it moves the allow rules back: --enable-l4-deny-firewall-rollback-cleanup).
    priority: denyRuleHeld ? FIREWALL_PRIORITY_ALLOW_ABOVE_DENY : allowPriority(config, scheme),
    deny: denies(config, scheme),
  };
}

/**
 * The stock CCM's deny rules (`--enable-l4-deny-firewall`, gce_loadbalancer_external.go
 * ensureDenyNodeFirewall) are for its external load balancers only: its internal ones keep their
 * allow rules at the default priority and get no deny rule.
 */
function denies(config: Pick<Config, "enableL4DenyFirewall">, scheme: LbScheme): boolean {
  return config.enableL4DenyFirewall === true && scheme === "EXTERNAL";
}

/**
 * An allow rule's priority: GCE's default 1000, or 999 (the stock CCM's firewallPriorityAllow) above
 * the deny rule at 1000, which would otherwise win the tie (DENY rules take precedence over ALLOW
 * rules of equal priority: resource_compute_firewall.go, `priority`).
 */
export function allowPriority(config: Pick<Config, "enableL4DenyFirewall">, scheme: LbScheme): number {
  return denies(config, scheme) ? FIREWALL_PRIORITY_ALLOW_ABOVE_DENY : FIREWALL_PRIORITY_DEFAULT;
}

/** A user-owned IP of the family as it is; else the address dccm reserves for it. */
function destinationOf(userIP: string | undefined): FirewallDestination {
  return userIP !== undefined ? { kind: "ip", ip: userIP } : { kind: "address" };
}

/**
 * The IPv4 firewalls. Each opens only towards the load balancer's IP, as the stock CCM's do
 * (gce_loadbalancer_external.go firewallObject: `DestinationRanges = []string{destinationIP}`;
 * gce_loadbalancer_internal.go ensureInternalFirewalls, the traffic firewall): without it, the
 * Service's ports would be open from the source ranges on every IP of every tagged node (host-network
 * pods, node daemons). The health-check firewall as the stock CCM's: towards the IP for an external
 * load balancer (ensureHTTPHealthCheckFirewall passes the IP), every node IP for an internal one
 * (ensureInternalFirewalls passes none).
 */
function ipv4Firewalls(
  basis: FirewallBasis,
  addressing: Addressing,
): Pick<ServiceDesired, "firewall" | "healthCheckFirewall" | "denyFirewall"> {
  const { lbName, description, targetTags, allows, priority } = basis;
  const destination = destinationOf(addressing.userIP);
  return {
    firewall: {
      name: trafficFirewallName(lbName),
      description,
      sourceRanges: addressing.sourceRanges,
      targetTags,
      allows,
      destination,
      priority,
    },
    ...(basis.dedicatedPort !== undefined
      ? {
          healthCheckFirewall: {
            name: serviceHealthCheckFirewallName(lbName),
            description,
            sourceRanges: [...basis.checkerRanges],
            targetTags: [...targetTags],
            allows: [{ protocol: "tcp", ports: [String(basis.dedicatedPort)] }],
            ...(basis.external ? { destination } : {}),
            priority,
          },
        }
      : {}),
    ...(basis.deny && addressing.served.ipv4
      ? { denyFirewall: denyFirewall(basis, denyFirewallName(lbName), "0.0.0.0/0", destination) }
      : {}),
  };
}

/**
 * `k8s-fw-<lb>-deny` as the stock CCM's ensureDenyNodeFirewall: every protocol, from anywhere,
 * towards the load balancer's IP, at 1000 (firewallPriorityDeny), so that no broader allow rule of
 * the VPC opens the IP's other ports; the Service's allow rules sit above it at 999.
 */
function denyFirewall(
  basis: FirewallBasis,
  name: string,
  everywhere: string,
  destination: FirewallDestination,
): DenyFirewallSpec {
  return {
    name,
    description: basis.description,
    sourceRanges: [everywhere],
    targetTags: [...basis.targetTags],
    destination,
    priority: FIREWALL_PRIORITY_DEFAULT,
  };
}

/**
 * The IPv6 half: its own firewalls, since a GCE firewall holds ranges of one family, towards the
 * IPv6 address (an IPv6 rule's destination is of its family). The health checkers reach the health
 * check's port (the shared check's 10256 too) from Google's IPv6 ranges, which the cluster stack's
 * IPv4 firewall cannot hold: one per IPv6 Service, deleted with it; towards the IPv6 address for an
 * external load balancer, every node IP for an internal one, as the IPv4 one.
 */
function ipv6Desired(basis: FirewallBasis, subnetwork: string, addressing: Addressing): Ipv6Desired {
  const { lbName, description, targetTags, allows, priority } = basis;
  const destination = destinationOf(addressing.userIP6);
  return {
    subnetwork,
    ...(addressing.userIP6 !== undefined ? { userIP: addressing.userIP6 } : {}),
    firewall: {
      name: ipv6Name(trafficFirewallName(lbName)),
      description,
      sourceRanges: addressing.sourceRanges6,
      targetTags,
      allows,
      destination,
      priority,
    },
    healthCheckFirewall: {
      name: ipv6Name(serviceHealthCheckFirewallName(lbName)),
      description,
      sourceRanges: [...basis.checkerRanges6],
      targetTags: [...targetTags],
      allows: [{ protocol: "tcp", ports: [String(basis.healthCheckPort)] }],
      ...(basis.external ? { destination } : {}),
      priority,
    },
    ...(basis.deny
      ? { denyFirewall: denyFirewall(basis, ipv6Name(denyFirewallName(lbName)), "::/0", destination) }
      : {}),
  };
}

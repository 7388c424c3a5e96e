// The Compute resource kinds the GCE emulator models: their Pulumi type tokens, REST collections,
// scopes, input properties (@pulumi/gcp 9.37.0 names), which inputs force replacement, which
// inputs are references to other resources, and GCE defaults (validation.ts validates inputs).

import { containsUnknown, type Json, type JsonObject } from "./json";

export type GceKind =
  | "addresses"
  | "forwardingRules"
  | "backendServices"
  | "targetPools"
  | "healthChecks"
  | "globalHealthChecks"
  | "httpHealthChecks"
  | "instanceGroups"
  | "networkEndpointGroups"
  | "firewalls"
  | "routes"
  | "instances";

export type ScopeType = "region" | "zone" | "global";

/** A property that references another resource, and where a bare name of it lives. */
export interface RefTarget {
  readonly collection: string;
  readonly scope: ScopeType;
}

export interface KindSpec {
  /** The emulator's key of the kind: the REST collection's name, except where two kinds share one. */
  readonly kind: GceKind;
  /** The REST collection (`healthChecks` for both the regional and the global health checks). */
  readonly collection: string;
  /** Pulumi type token; undefined for instances (seeded by tests, not managed by Pulumi). */
  readonly token: string | undefined;
  /** Resource type name as the Terraform-bridged provider prints it ("ForwardingRule"). */
  readonly typeName: string;
  /** The word GCE uses in "The <word> resource '...' is already being used by '...'". */
  readonly resourceWord: string;
  readonly restKind: string;
  readonly scope: ScopeType;
  /** Input property names (Pulumi names), without project/region/zone/name. */
  readonly inputs: readonly string[];
  /** Inputs whose change forces a replacement (besides name/project/region/zone, always immutable). */
  readonly immutable: readonly string[];
  /**
   * Inputs that are Optional + Computed in the provider's schema: a program that omits one keeps
   * the value the resource has, and no diff (neither update nor replace) arises for it; a value
   * that differs is an update or a replacement as `immutable` says. project/region/zone are
   * Optional + Computed too, but filled by Check from the provider's config.
   */
  readonly optionalComputed: readonly string[];
  /** Top-level inputs that are references (a string, or a list of strings). */
  readonly refs: Readonly<Record<string, RefTarget>>;
  /** Inputs that are lists compared as sets. */
  readonly setFields: readonly string[];
  /** Whether the resource carries labels (and so a labelFingerprint). */
  readonly labels: boolean;
}

const NETWORK: RefTarget = { collection: "networks", scope: "global" };
const SUBNETWORK: RefTarget = { collection: "subnetworks", scope: "region" };
/** The inputs of a HealthCheck, regional or global (@pulumi/gcp RegionHealthCheck, HealthCheck). */
const HEALTH_CHECK_INPUTS = [
  "checkIntervalSec",
  "deletionPolicy",
  "description",
  "grpcHealthCheck",
  "grpcTlsHealthCheck",
  "healthyThreshold",
  "http2HealthCheck",
  "httpHealthCheck",
  "httpsHealthCheck",
  "logConfig",
  "sslHealthCheck",
  "tcpHealthCheck",
  "timeoutSec",
  "unhealthyThreshold",
];

const ALL_SPECS: readonly KindSpec[] = [
  {
    kind: "addresses",
    collection: "addresses",
    token: "gcp:compute/address:Address",
    typeName: "Address",
    resourceWord: "address",
    restKind: "compute#address",
    scope: "region",
    inputs: [
      "address",
      "addressType",
      "deletionPolicy",
      "description",
      "ipCollection",
      "ipVersion",
      "ipv6EndpointType",
      "labels",
      "network",
      "networkTier",
      "prefixLength",
      "purpose",
      "subnetwork",
    ],
    immutable: [
      "address",
      "addressType",
      "description",
      "ipCollection",
      "ipVersion",
      "ipv6EndpointType",
      "network",
      "networkTier",
      "prefixLength",
      "purpose",
      "subnetwork",
    ],
    // resource_compute_address.go schema: address, network_tier, prefix_length, purpose,
    // subnetwork and deletion_policy are Optional + Computed.
    optionalComputed: ["address", "deletionPolicy", "networkTier", "prefixLength", "purpose", "subnetwork"],
    refs: { network: NETWORK, subnetwork: SUBNETWORK },
    setFields: [],
    labels: true,
  },
  {
    kind: "forwardingRules",
    collection: "forwardingRules",
    token: "gcp:compute/forwardingRule:ForwardingRule",
    typeName: "ForwardingRule",
    resourceWord: "forwarding_rule",
    restKind: "compute#forwardingRule",
    scope: "region",
    inputs: [
      "allPorts",
      "allowGlobalAccess",
      "allowPscGlobalAccess",
      "backendService",
      "deletionPolicy",
      "description",
      "ipAddress",
      "ipCollection",
      "ipProtocol",
      "ipVersion",
      "isMirroringCollector",
      "labels",
      "loadBalancingScheme",
      "network",
      "networkTier",
      "noAutomateDnsZone",
      "portRange",
      "ports",
      "recreateClosedPsc",
      "serviceDirectoryRegistrations",
      "serviceLabel",
      "sourceIpRanges",
      "subnetwork",
      "target",
    ],
    // allowGlobalAccess is absent on purpose: the provider patches it in place
    // (resource_compute_forwarding_rule.go, resourceComputeForwardingRuleUpdate, "allow_global_access").
    immutable: [
      "allPorts",
      "allowPscGlobalAccess",
      "backendService",
      "description",
      "ipAddress",
      "ipCollection",
      "ipProtocol",
      "ipVersion",
      "isMirroringCollector",
      "loadBalancingScheme",
      "network",
      "networkTier",
      "noAutomateDnsZone",
      "portRange",
      "ports",
      "recreateClosedPsc",
      "serviceDirectoryRegistrations",
      "serviceLabel",
      "sourceIpRanges",
      "subnetwork",
    ],
    // resource_compute_forwarding_rule.go schema: ip_address, ip_protocol, ip_version, network,
    // network_tier, port_range, service_directory_registrations, subnetwork and deletion_policy are
    // Optional + Computed (so an internal rule that GCE reads back with networkTier PREMIUM keeps it).
    optionalComputed: [
      "deletionPolicy",
      "ipAddress",
      "ipProtocol",
      "ipVersion",
      "network",
      "networkTier",
      "portRange",
      "serviceDirectoryRegistrations",
      "subnetwork",
    ],
    refs: {
      backendService: { collection: "backendServices", scope: "region" },
      target: { collection: "targetPools", scope: "region" },
      network: NETWORK,
      subnetwork: SUBNETWORK,
    },
    setFields: ["ports", "sourceIpRanges"],
    labels: true,
  },
  {
    kind: "backendServices",
    collection: "backendServices",
    token: "gcp:compute/regionBackendService:RegionBackendService",
    typeName: "RegionBackendService",
    resourceWord: "backend_service",
    restKind: "compute#backendService",
    scope: "region",
    inputs: [
      "affinityCookieTtlSec",
      "backends",
      "cdnPolicy",
      "circuitBreakers",
      "connectionDrainingTimeoutSec",
      "connectionTrackingPolicy",
      "consistentHash",
      "customMetrics",
      "deletionPolicy",
      "description",
      "dynamicForwarding",
      "enableCdn",
      "failoverPolicy",
      "haPolicy",
      "healthChecks",
      "iap",
      "ipAddressSelectionPolicy",
      "loadBalancingScheme",
      "localityLbPolicy",
      "logConfig",
      "network",
      "networkPassThroughLbTrafficPolicy",
      "outlierDetection",
      "params",
      "portName",
      "protocol",
      "securityPolicy",
      "sessionAffinity",
      "strongSessionAffinityCookie",
      "subsetting",
      "timeoutSec",
      "tlsSettings",
    ],
    // resource_compute_region_backend_service.go: load_balancing_scheme and network are ForceNew;
    // protocol, session_affinity, backends, health_checks are updated in place.
    immutable: ["loadBalancingScheme", "network"],
    // resource_compute_region_backend_service.go schema: cdn_policy, iap, log_config, port_name,
    // protocol, session_affinity, timeout_sec and deletion_policy are Optional + Computed.
    optionalComputed: [
      "cdnPolicy",
      "deletionPolicy",
      "iap",
      "logConfig",
      "portName",
      "protocol",
      "sessionAffinity",
      "timeoutSec",
    ],
    refs: {
      healthChecks: { collection: "healthChecks", scope: "region" },
      network: NETWORK,
    },
    setFields: [],
    labels: false,
  },
  {
    kind: "targetPools",
    collection: "targetPools",
    token: "gcp:compute/targetPool:TargetPool",
    typeName: "TargetPool",
    resourceWord: "target_pool",
    restKind: "compute#targetPool",
    scope: "region",
    inputs: [
      "backupPool",
      "deletionPolicy",
      "description",
      "failoverRatio",
      "healthChecks",
      "instances",
      "securityPolicy",
      "sessionAffinity",
    ],
    // resource_compute_target_pool.go: description, failover_ratio, session_affinity are ForceNew;
    // backup_pool is set in place (setBackup), as are instances and health_checks.
    immutable: ["description", "failoverRatio", "securityPolicy", "sessionAffinity"],
    // resource_compute_target_pool.go schema: instances and deletion_policy
    // (tpgresource.DeletionPolicySchemaEntry) are Optional + Computed.
    optionalComputed: ["deletionPolicy", "instances"],
    refs: {
      backupPool: { collection: "targetPools", scope: "region" },
      healthChecks: { collection: "httpHealthChecks", scope: "global" },
      instances: { collection: "instances", scope: "zone" },
    },
    setFields: ["instances"],
    labels: false,
  },
  {
    kind: "healthChecks",
    collection: "healthChecks",
    token: "gcp:compute/regionHealthCheck:RegionHealthCheck",
    typeName: "RegionHealthCheck",
    resourceWord: "health_check",
    restKind: "compute#healthCheck",
    scope: "region",
    inputs: HEALTH_CHECK_INPUTS,
    // resource_compute_region_health_check.go: no ForceNew besides name/project/region; a change of
    // type (another *_health_check block) is an update (PUT with the new type).
    immutable: [],
    // resource_compute_region_health_check.go schema: log_config and deletion_policy are Optional + Computed.
    optionalComputed: ["deletionPolicy", "logConfig"],
    refs: {},
    setFields: [],
    labels: false,
  },
  {
    // The stock CCM's internal load balancers use global HealthChecks (gce_loadbalancer_internal.go,
    // ensureInternalHealthCheck → CreateHealthCheck). Kind key `globalHealthChecks`, REST collection
    // `global/healthChecks`. resource_compute_health_check.go: no ForceNew besides name/project.
    kind: "globalHealthChecks",
    collection: "healthChecks",
    token: "gcp:compute/healthCheck:HealthCheck",
    typeName: "HealthCheck",
    resourceWord: "health_check",
    restKind: "compute#healthCheck",
    scope: "global",
    // A global health check also takes sourceRegions (resource_compute_health_check.go).
    inputs: [...HEALTH_CHECK_INPUTS, "sourceRegions"].sort(),
    immutable: [],
    // resource_compute_health_check.go schema: log_config and deletion_policy are Optional + Computed.
    optionalComputed: ["deletionPolicy", "logConfig"],
    refs: {},
    setFields: [],
    labels: false,
  },
  {
    kind: "httpHealthChecks",
    collection: "httpHealthChecks",
    token: "gcp:compute/httpHealthCheck:HttpHealthCheck",
    typeName: "HttpHealthCheck",
    resourceWord: "http_health_check",
    restKind: "compute#httpHealthCheck",
    scope: "global",
    inputs: [
      "checkIntervalSec",
      "deletionPolicy",
      "description",
      "healthyThreshold",
      "host",
      "port",
      "requestPath",
      "timeoutSec",
      "unhealthyThreshold",
    ],
    immutable: [],
    // resource_compute_http_health_check.go schema: deletion_policy is Optional + Computed (the
    // others have a Default, so an omitted one is its default).
    optionalComputed: ["deletionPolicy"],
    refs: {},
    setFields: [],
    labels: false,
  },
  {
    kind: "instanceGroups",
    collection: "instanceGroups",
    token: "gcp:compute/instanceGroup:InstanceGroup",
    typeName: "InstanceGroup",
    resourceWord: "instance_group",
    restKind: "compute#instanceGroup",
    scope: "zone",
    inputs: ["deletionPolicy", "description", "instances", "namedPorts", "network"],
    // resource_compute_instance_group.go schema: description and network are ForceNew.
    immutable: ["description", "network"],
    // resource_compute_instance_group.go schema: instances, network and deletion_policy
    // (tpgresource.DeletionPolicySchemaEntry) are Optional + Computed.
    optionalComputed: ["deletionPolicy", "instances", "network"],
    refs: { instances: { collection: "instances", scope: "zone" }, network: NETWORK },
    setFields: ["instances"],
    labels: false,
  },
  {
    // Zonal network endpoint groups (networkEndpointGroups resource reference). Their endpoints are
    // not an input of the NEG: they are attached and detached by networkEndpointGroups.attach/
    // detachNetworkEndpoints (the REST face, and the provider face's NetworkEndpointList,
    // provider-api.ts), and kept apart from the NEG's properties (rules/networkEndpointGroups.ts).
    kind: "networkEndpointGroups",
    collection: "networkEndpointGroups",
    token: "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
    typeName: "NetworkEndpointGroup",
    resourceWord: "network_endpoint_group",
    restKind: "compute#networkEndpointGroup",
    scope: "zone",
    inputs: ["defaultPort", "deletionPolicy", "description", "network", "networkEndpointType", "subnetwork"],
    // resource_compute_network_endpoint_group.go schema: every field but deletion_policy is ForceNew
    // (the resource has no update; @pulumi/gcp compute/networkEndpointGroup.d.ts).
    immutable: ["defaultPort", "description", "network", "networkEndpointType", "subnetwork"],
    // resource_compute_network_endpoint_group.go schema: deletion_policy is Optional + Computed.
    optionalComputed: ["deletionPolicy"],
    refs: { network: NETWORK, subnetwork: SUBNETWORK },
    setFields: [],
    labels: false,
  },
  {
    kind: "firewalls",
    collection: "firewalls",
    token: "gcp:compute/firewall:Firewall",
    typeName: "Firewall",
    resourceWord: "firewall",
    restKind: "compute#firewall",
    scope: "global",
    inputs: [
      "allows",
      "deletionPolicy",
      "denies",
      "description",
      "destinationRanges",
      "direction",
      "disabled",
      "enableLogging",
      "logConfig",
      "network",
      "params",
      "priority",
      "sourceRanges",
      "sourceServiceAccounts",
      "sourceTags",
      "targetServiceAccounts",
      "targetTags",
    ],
    // resource_compute_firewall.go schema: direction is ForceNew; network is not (PATCH in place).
    immutable: ["direction"],
    // resource_compute_firewall.go schema: destination_ranges, direction, enable_logging and
    // deletion_policy are Optional + Computed.
    optionalComputed: ["deletionPolicy", "destinationRanges", "direction", "enableLogging"],
    refs: { network: NETWORK },
    setFields: [
      "destinationRanges",
      "sourceRanges",
      "sourceServiceAccounts",
      "sourceTags",
      "targetServiceAccounts",
      "targetTags",
    ],
    labels: false,
  },
  {
    kind: "routes",
    collection: "routes",
    token: "gcp:compute/route:Route",
    typeName: "Route",
    resourceWord: "route",
    restKind: "compute#route",
    scope: "global",
    inputs: [
      "deletionPolicy",
      "description",
      "destRange",
      "network",
      "nextHopGateway",
      "nextHopIlb",
      "nextHopInstance",
      "nextHopInstanceZone",
      "nextHopIp",
      "nextHopVpnTunnel",
      "params",
      "priority",
      "tags",
    ],
    immutable: [
      "description",
      "destRange",
      "network",
      "nextHopGateway",
      "nextHopIlb",
      "nextHopInstance",
      "nextHopInstanceZone",
      "nextHopIp",
      "nextHopVpnTunnel",
      "params",
      "priority",
      "tags",
    ],
    // resource_compute_route.go schema: next_hop_ip, next_hop_instance_zone and deletion_policy are
    // Optional + Computed.
    optionalComputed: ["deletionPolicy", "nextHopInstanceZone", "nextHopIp"],
    refs: {
      network: NETWORK,
      nextHopGateway: { collection: "gateways", scope: "global" },
      nextHopInstance: { collection: "instances", scope: "zone" },
    },
    setFields: ["tags"],
    labels: false,
  },
  {
    kind: "instances",
    collection: "instances",
    token: undefined,
    typeName: "Instance",
    resourceWord: "instance",
    restKind: "compute#instance",
    scope: "zone",
    inputs: [],
    immutable: [],
    optionalComputed: [],
    refs: {},
    setFields: [],
    labels: false,
  },
];

export const KIND_SPECS: ReadonlyMap<GceKind, KindSpec> = new Map(ALL_SPECS.map((s) => [s.kind, s]));
const BY_TOKEN: ReadonlyMap<string, KindSpec> = new Map(
  ALL_SPECS.filter((s) => s.token !== undefined).map((s) => [s.token ?? "", s]),
);

export const ALL_KINDS: readonly GceKind[] = ALL_SPECS.map((s) => s.kind);

export function isGceKind(s: string): s is GceKind {
  return ALL_KINDS.some((k) => k === s);
}

export function specOf(kind: GceKind): KindSpec {
  const spec = KIND_SPECS.get(kind);
  if (spec === undefined) {
    throw new Error(`unknown GCE kind ${kind}`);
  }
  return spec;
}

/** The spec for a Pulumi type token, or undefined when the emulator does not model it. */
export function specOfToken(token: string): KindSpec | undefined {
  return BY_TOKEN.get(token);
}

/** Accepts a GceKind or a Pulumi type token. */
export function kindOf(kindOrToken: string): GceKind {
  if (isGceKind(kindOrToken)) {
    return kindOrToken;
  }
  const spec = BY_TOKEN.get(kindOrToken);
  if (spec === undefined) {
    throw new Error(`unknown GCE kind or Pulumi type ${JSON.stringify(kindOrToken)}`);
  }
  return spec.kind;
}

/** The property naming the scope of a kind ("region", "zone"), or undefined for global kinds. */
export function scopeProperty(spec: KindSpec): "region" | "zone" | undefined {
  return spec.scope === "global" ? undefined : spec.scope;
}

/** `regions/R`, `zones/Z` or `global`. */
export function scopePath(scopeType: ScopeType, scope: string): string {
  switch (scopeType) {
    case "region":
      return `regions/${scope}`;
    case "zone":
      return `zones/${scope}`;
    case "global":
      return "global";
  }
}

/** A region's name from one of its zones' names (`us-central1-a` → `us-central1`). */
export function regionOfZone(zone: string): string {
  return zone.replace(/-[a-z]$/, "");
}

/** `projects/P/regions/R/forwardingRules/N`: the GCE relative path, also the Pulumi resource ID. */
export function resourcePath(kind: GceKind, project: string, scope: string, name: string): string {
  const spec = specOf(kind);
  return `projects/${project}/${scopePath(spec.scope, scope)}/${spec.collection}/${name}`;
}

export interface ParsedPath {
  readonly project: string;
  readonly scopeType: ScopeType;
  /** region or zone name, or "global" */
  readonly scope: string;
  readonly collection: string;
  readonly name: string;
}

const PATH_RE = /(?:^|\/)projects\/([^/]+)\/(?:(global)|regions\/([^/]+)|zones\/([^/]+))\/([^/]+)\/([^/?#]+)$/;

/** Parses a self link or a `projects/...` path. */
export function parseResourcePath(s: string): ParsedPath | undefined {
  const m = PATH_RE.exec(s);
  if (m === null) {
    return undefined;
  }
  const [, project, global, region, zone, collection, name] = m;
  if (project === undefined || collection === undefined || name === undefined) {
    return undefined;
  }
  if (global !== undefined) {
    return { project, scopeType: "global", scope: "global", collection, name };
  }
  if (region !== undefined) {
    return { project, scopeType: "region", scope: region, collection, name };
  }
  if (zone !== undefined) {
    return { project, scopeType: "zone", scope: zone, collection, name };
  }
  return undefined;
}

/** The modelled kind a parsed path designates (networks, global backend services, ... are not modelled). */
export function kindOfPath(p: ParsedPath): GceKind | undefined {
  return ALL_SPECS.find((s) => s.collection === p.collection && s.scope === p.scopeType)?.kind;
}

export interface RefContext {
  readonly endpoint: string;
  readonly project: string;
  readonly region: string;
  readonly zone: string | undefined;
}

const SELF_LINK_RE = /^https?:\/\/[^/]+\/compute\/(?:v1|beta|alpha)\/(projects\/.+)$/;

/**
 * Normalizes a reference given as a self link (any host), a partial path (`projects/P/...`,
 * `regions/R/...` or `/zones/Z/...`), `zone/name` (instances) or a bare name, to the emulator's self link.
 */
export function normalizeRef(raw: string, target: RefTarget, ctx: RefContext): string {
  if (raw === "" || containsUnknown(raw)) {
    return raw;
  }
  let rel: string;
  const link = SELF_LINK_RE.exec(raw);
  if (link?.[1] !== undefined) {
    rel = link[1];
  } else if (raw.startsWith("projects/")) {
    rel = raw;
  } else if (/^\/?(regions|zones)\/[^/]+\/|^\/?global\//.test(raw)) {
    // With or without a leading slash: the stock CCM's target pools name their instances
    // `/zones/<zone>/instances/<name>` (kubernetes/cloud-provider-gcp gce_instances.go
    // makeComparableHostPath, sent by gce_loadbalancer_external.go createTargetPoolAndHealthCheck),
    // which GCE accepts relative to the project.
    rel = `projects/${ctx.project}/${raw.replace(/^\//, "")}`;
  } else if (target.scope === "zone" && /^[a-z0-9-]+\/[^/]+$/.test(raw)) {
    const [zone, name] = raw.split("/");
    rel = `projects/${ctx.project}/zones/${zone}/${target.collection}/${name}`;
  } else {
    const scope =
      target.scope === "global"
        ? "global"
        : target.scope === "region"
          ? `regions/${ctx.region}`
          : `zones/${ctx.zone ?? "-"}`;
    rel = `projects/${ctx.project}/${scope}/${target.collection}/${raw}`;
  }
  return `${ctx.endpoint}/compute/v1/${rel}`;
}

export const NAME_RE = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function invalidNameMessage(name: string, field = "name"): string {
  return `Invalid value for field 'resource.${field}': '${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`;
}

const HEALTH_CHECK_BLOCKS: ReadonlyArray<readonly [string, string]> = [
  ["grpcHealthCheck", "GRPC"],
  ["grpcTlsHealthCheck", "GRPC_WITH_TLS"],
  ["httpHealthCheck", "HTTP"],
  ["httpsHealthCheck", "HTTPS"],
  ["http2HealthCheck", "HTTP2"],
  ["sslHealthCheck", "SSL"],
  ["tcpHealthCheck", "TCP"],
];

/** The `type` of a (region) health check: which of its *HealthCheck blocks is set. */
export function healthCheckType(props: JsonObject): string | undefined {
  const set = HEALTH_CHECK_BLOCKS.filter(([block]) => props[block] !== undefined && props[block] !== null);
  return set.length === 1 ? set[0]?.[1] : undefined;
}

export function healthCheckBlocks(): readonly string[] {
  return HEALTH_CHECK_BLOCKS.map(([block]) => block);
}

const HEALTH_CHECK_DEFAULTS: Readonly<Record<string, Json>> = {
  checkIntervalSec: 5,
  timeoutSec: 5,
  healthyThreshold: 2,
  unhealthyThreshold: 2,
};
const HTTP_HEALTH_CHECK_DEFAULTS: Readonly<Record<string, Json>> = {
  ...HEALTH_CHECK_DEFAULTS,
  port: 80,
  requestPath: "/",
};
const FIREWALL_DEFAULTS: Readonly<Record<string, Json>> = { direction: "INGRESS", priority: 1000, disabled: false };

function lookup(table: Readonly<Record<string, Json>>, field: string): Json | undefined {
  return Object.hasOwn(table, field) ? table[field] : undefined;
}

/**
 * GCE's default for an absent input, given the other inputs; undefined when there is no static
 * default (the field is either really absent, or allocated like an address).
 */
export function defaultFor(kind: GceKind, field: string): Json | undefined {
  switch (kind) {
    case "addresses":
      if (field === "addressType") {
        return "EXTERNAL";
      }
      // addresses reference, networkTier: "Internal IP addresses are always Premium Tier ... If this
      // field is not specified, it is assumed to be PREMIUM" (https://cloud.google.com/compute/docs/reference/rest/v1/addresses),
      // internal or external alike.
      if (field === "networkTier") {
        return "PREMIUM";
      }
      return undefined;
    case "forwardingRules": {
      if (field === "ipProtocol") {
        return "TCP";
      }
      if (field === "loadBalancingScheme") {
        return "EXTERNAL";
      }
      // forwardingRules reference, networkTier: "For regional ForwardingRule, the valid values are
      // PREMIUM and STANDARD ... If this field is not specified, it is assumed to be PREMIUM"
      // (https://cloud.google.com/compute/docs/reference/rest/v1/forwardingRules), whatever the
      // scheme: an INTERNAL rule inserted without one (the stock CCM's ensureInternalLoadBalancer
      // sends none) reads back PREMIUM.
      if (field === "networkTier") {
        return "PREMIUM";
      }
      return undefined;
    }
    case "backendServices": {
      if (field === "loadBalancingScheme") {
        return "INTERNAL";
      }
      if (field === "sessionAffinity") {
        return "NONE";
      }
      // backendServices resource reference, `protocol`: "The default is HTTP" whatever the
      // scheme, so a passthrough backend service that omits it is refused (see validateInputs).
      if (field === "protocol") {
        return "HTTP";
      }
      return undefined;
    }
    case "targetPools":
      return field === "sessionAffinity" ? "NONE" : undefined;
    case "healthChecks":
    case "globalHealthChecks":
      return lookup(HEALTH_CHECK_DEFAULTS, field);
    case "httpHealthChecks":
      return lookup(HTTP_HEALTH_CHECK_DEFAULTS, field);
    case "firewalls":
      return lookup(FIREWALL_DEFAULTS, field);
    case "routes":
      return field === "priority" ? 1000 : undefined;
    // networkEndpointGroups resource reference, networkEndpointType: "Type of network endpoints in
    // this network endpoint group. ... Default value is GCE_VM_IP_PORT" (the provider's default too).
    case "networkEndpointGroups":
      return field === "networkEndpointType" ? "GCE_VM_IP_PORT" : undefined;
    case "instanceGroups":
    case "instances":
      return undefined;
  }
}

/** Inputs that GCE allocates when absent (so absence in new inputs means "keep"). */
export function isAllocated(kind: GceKind, field: string): boolean {
  return (kind === "addresses" && field === "address") || (kind === "forwardingRules" && field === "ipAddress");
}

// The Compute resource kinds the GCE emulator models: their Pulumi type tokens, REST collections,
// scopes, input properties (@pulumi/gcp 9.37.0 names), which inputs force replacement, which
// inputs are references to other resources, GCE defaults and input validation.

import * as net from "node:net";

import { containsUnknown, isJsonObject, type Json, type JsonObject } from "./json";

export type GceKind =
  | "addresses"
  | "forwardingRules"
  | "backendServices"
  | "targetPools"
  | "healthChecks"
  | "globalHealthChecks"
  | "httpHealthChecks"
  | "instanceGroups"
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
export function defaultFor(kind: GceKind, field: string, props: JsonObject): Json | undefined {
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
    case "instanceGroups":
    case "instances":
      return undefined;
  }
}

/** Inputs that GCE allocates when absent (so absence in new inputs means "keep"). */
export function isAllocated(kind: GceKind, field: string): boolean {
  return (kind === "addresses" && field === "address") || (kind === "forwardingRules" && field === "ipAddress");
}

// ---- validation -----------------------------------------------------------------------------

export interface CheckFailure {
  readonly property: string;
  readonly reason: string;
}

const IP_PROTOCOLS = ["TCP", "UDP", "ESP", "AH", "SCTP", "ICMP", "L3_DEFAULT"];
const FR_SCHEMES = ["EXTERNAL", "EXTERNAL_MANAGED", "INTERNAL", "INTERNAL_MANAGED", "INTERNAL_SELF_MANAGED", ""];
const BS_SCHEMES = ["EXTERNAL", "EXTERNAL_MANAGED", "INTERNAL", "INTERNAL_MANAGED"];
const BS_PROTOCOLS = ["HTTP", "HTTPS", "HTTP2", "TCP", "SSL", "UDP", "GRPC", "UNSPECIFIED", "H2C"];
const BS_AFFINITIES = [
  "NONE",
  "CLIENT_IP",
  "CLIENT_IP_PROTO",
  "CLIENT_IP_PORT_PROTO",
  "CLIENT_IP_NO_DESTINATION",
  "GENERATED_COOKIE",
  "HEADER_FIELD",
  "HTTP_COOKIE",
  "STRONG_COOKIE_AFFINITY",
];
const TP_AFFINITIES = ["NONE", "CLIENT_IP", "CLIENT_IP_PROTO"];
const PASSTHROUGH_PROTOCOLS = ["TCP", "UDP", "UNSPECIFIED"];
const INTERNAL_AFFINITIES = [
  "NONE",
  "CLIENT_IP",
  "CLIENT_IP_PROTO",
  "CLIENT_IP_PORT_PROTO",
  "CLIENT_IP_NO_DESTINATION",
];
const EXTERNAL_PASSTHROUGH_AFFINITIES = ["NONE", "CLIENT_IP", "CLIENT_IP_PROTO", "CLIENT_IP_PORT_PROTO"];
const TIERS = ["PREMIUM", "STANDARD", "FIXED_STANDARD", "STANDARD_OVERRIDES_FIXED_STANDARD"];

/** `a.b.c.d`, `a.b.c.d/n`, or the IPv6 equivalents. */
export function isCidr(s: string): boolean {
  const slash = s.indexOf("/");
  const ip = slash < 0 ? s : s.slice(0, slash);
  const family = net.isIP(ip);
  if (family === 0) {
    return false;
  }
  if (slash < 0) {
    return true;
  }
  const bits = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) {
    return false;
  }
  return Number(bits) <= (family === 4 ? 32 : 128);
}

function isPortSpec(s: string): boolean {
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(s);
  if (m === null) {
    return false;
  }
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  return lo >= 1 && hi <= 65535 && lo <= hi;
}

/** The port ranges a forwarding rule listens on: ports, portRange, or all ports. */
export function forwardingRulePorts(props: JsonObject): Array<readonly [number, number]> {
  const parse = (spec: string): readonly [number, number] => {
    const [lo, hi] = spec.split("-");
    return [Number(lo), Number(hi ?? lo)];
  };
  if (props.allPorts !== true) {
    if (Array.isArray(props.ports) && props.ports.length > 0) {
      return props.ports.filter((p): p is string => typeof p === "string").map(parse);
    }
    if (typeof props.portRange === "string" && props.portRange !== "") {
      return [parse(props.portRange)];
    }
  }
  return [[1, 65535]];
}

/**
 * Validates inputs (Pulumi names) the way the provider and GCE would. Values containing unknowns
 * are not validated (they are only known at update time). Scope properties are not checked here.
 */
export function validateInputs(kind: GceKind, props: JsonObject): CheckFailure[] {
  const failures: CheckFailure[] = [];
  // The engine looks the failing value up by top-level key, so nested paths go in the reason only.
  const fail = (path: string, reason: string): void => {
    failures.push({ property: path.replace(/[.[].*$/, ""), reason });
  };
  const known = (k: string): Json | undefined => {
    const v = props[k];
    return v === null || containsUnknown(v) ? undefined : v;
  };
  const present = (k: string): boolean => props[k] !== undefined && props[k] !== null;
  const str = (k: string): string | undefined => {
    const v = known(k);
    if (v === undefined) {
      return undefined;
    }
    if (typeof v !== "string") {
      fail(k, `${k} must be a string, got ${JSON.stringify(v)}`);
      return undefined;
    }
    return v;
  };
  const oneOf = (k: string, allowed: readonly string[]): void => {
    const v = str(k);
    if (v !== undefined && !allowed.includes(v)) {
      fail(k, `expected ${k} to be one of [${allowed.join(" ")}], got ${v}`);
    }
  };
  const int = (k: string, lo: number, hi: number): void => {
    const v = known(k);
    if (v === undefined) {
      return;
    }
    if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) {
      fail(k, `expected ${k} to be an integer in the range (${lo} - ${hi}), got ${JSON.stringify(v)}`);
    }
  };
  const strList = (k: string): string[] | undefined => {
    const v = known(k);
    if (v === undefined) {
      return undefined;
    }
    if (!Array.isArray(v) || v.some((e) => typeof e !== "string")) {
      fail(k, `${k} must be a list of strings`);
      return undefined;
    }
    return v.filter((e): e is string => typeof e === "string");
  };
  const cidrs = (k: string): void => {
    strList(k)?.forEach((c, i) => {
      if (!isCidr(c)) {
        fail(`${k}[${i}]`, `invalid value for ${k}[${i}] (must be a valid CIDR range or IP address), got ${c}`);
      }
    });
  };

  const name = known("name");
  if (name !== undefined) {
    if (typeof name !== "string" || !NAME_RE.test(name)) {
      fail("name", invalidNameMessage(String(name)));
    }
  }
  str("description");

  switch (kind) {
    case "addresses": {
      oneOf("addressType", ["EXTERNAL", "INTERNAL"]);
      // addresses resource reference: purpose and subnetwork apply to INTERNAL addresses only
      // (an EXTERNAL regional address takes no subnetwork and no GCE_ENDPOINT/VIP purpose);
      // "Internal IP addresses are always Premium Tier" (networkTier).
      const internalAddress = (known("addressType") ?? "EXTERNAL") === "INTERNAL";
      const purpose = str("purpose");
      if (
        !internalAddress &&
        purpose !== undefined &&
        ["GCE_ENDPOINT", "SHARED_LOADBALANCER_VIP", "DNS_RESOLVER"].includes(purpose)
      ) {
        fail(
          "purpose",
          `Invalid value for field 'resource.purpose': '${purpose}'. Purpose ${purpose} is only valid for an INTERNAL address.`,
        );
      }
      // ...except an external IPv6 address, which is a /96 of its dual-stack subnetwork's external
      // IPv6 range, for a VM or a Network Load Balancer (addresses reference, ipv6EndpointType;
      // terraform-provider-google google_compute_address docs, ipv6_endpoint_type: "VM or NETLB").
      const ipv6 = known("ipVersion") === "IPV6";
      if (!internalAddress && !ipv6 && present("subnetwork")) {
        fail(
          "subnetwork",
          `Invalid value for field 'resource.subnetwork': '${String(known("subnetwork") ?? "")}'. A subnetwork can only be specified for an INTERNAL address.`,
        );
      }
      oneOf("ipv6EndpointType", ["VM", "NETLB"]);
      if (!internalAddress && ipv6 && !present("ipv6EndpointType")) {
        fail(
          "ipv6EndpointType",
          "Invalid value for field 'resource.ipv6EndpointType': ''. An EXTERNAL IPv6 address must specify its endpoint type, VM or NETLB.",
        );
      }
      if (internalAddress && present("ipv6EndpointType")) {
        fail(
          "ipv6EndpointType",
          `Invalid value for field 'resource.ipv6EndpointType': '${String(known("ipv6EndpointType") ?? "")}'. An endpoint type can only be specified for an EXTERNAL IPv6 address.`,
        );
      }
      const tier = str("networkTier");
      if (internalAddress && tier !== undefined && tier !== "PREMIUM") {
        fail(
          "networkTier",
          `Invalid value for field 'resource.networkTier': '${tier}'. An INTERNAL address is always PREMIUM tier.`,
        );
      }
      oneOf("networkTier", TIERS);
      oneOf("ipVersion", ["IPV4", "IPV6", "UNSPECIFIED_VERSION"]);
      const address = str("address");
      if (address !== undefined && net.isIP(address) === 0) {
        fail("address", `invalid value for address (must be an IP address), got ${address}`);
      }
      break;
    }
    case "forwardingRules": {
      oneOf("ipProtocol", IP_PROTOCOLS);
      oneOf("loadBalancingScheme", FR_SCHEMES);
      oneOf("networkTier", TIERS);
      const range = str("portRange");
      if (range !== undefined && !isPortSpec(range)) {
        fail("portRange", `invalid value for portRange (must be a port or a port range like 80-90), got ${range}`);
      }
      const ports = strList("ports");
      if (ports !== undefined) {
        if (ports.length > 5) {
          fail("ports", `ports accepts at most 5 entries, got ${ports.length}`);
        }
        ports.forEach((p, i) => {
          if (!isPortSpec(p)) {
            fail(`ports[${i}]`, `invalid value for ports[${i}] (must be a port or a port range), got ${p}`);
          }
        });
      }
      if (present("portRange") && present("ports")) {
        fail("ports", `"ports": conflicts with portRange`);
      }
      if (props.allPorts === true && (present("portRange") || present("ports"))) {
        fail("allPorts", `"allPorts": conflicts with ${present("ports") ? "ports" : "portRange"}`);
      }
      if (present("backendService") && present("target")) {
        fail("target", `"target": conflicts with backendService`);
      }
      // Which port fields each product accepts (forwarding-rule-concepts#port_specifications).
      const scheme = known("loadBalancingScheme");
      if (present("target") && present("ports")) {
        fail(
          "ports",
          "Invalid value for field 'resource.ports': ports can only be set on forwarding rules with a backend service (internal or backend service-based external passthrough); a target-pool rule takes portRange",
        );
      }
      if (present("target") && props.allPorts === true) {
        fail(
          "allPorts",
          "Invalid value for field 'resource.allPorts': allPorts cannot be set on a forwarding rule with a target pool",
        );
      }
      if (scheme === "INTERNAL" && present("portRange")) {
        fail(
          "portRange",
          "Invalid value for field 'resource.portRange': portRange cannot be set on an INTERNAL forwarding rule; use ports or allPorts",
        );
      }
      // forwardingRules resource reference, allowGlobalAccess: "used along with the backendService
      // field for internal load balancing".
      if (props.allowGlobalAccess === true && (scheme ?? "EXTERNAL") !== "INTERNAL") {
        fail(
          "allowGlobalAccess",
          `Invalid value for field 'resource.allowGlobalAccess': 'true'. Global access is only supported for INTERNAL forwarding rules.`,
        );
      }
      oneOf("ipVersion", ["IPV4", "IPV6"]);
      // Target pool-based external passthrough Network Load Balancers "support only IPv4 traffic"
      // (cloud.google.com/load-balancing/docs/network/networklb-target-pools); IPv6 needs a backend
      // service (.../network/networklb-backend-service). GCE's own message is not known: ours.
      if (known("ipVersion") === "IPV6" && present("target")) {
        fail(
          "target",
          "Invalid value for field 'resource.target': an IPv6 forwarding rule cannot point at a target pool: target pool-based load balancers support IPv4 only.",
        );
      }
      str("ipAddress");
      str("backendService");
      str("target");
      cidrs("sourceIpRanges");
      break;
    }
    case "backendServices": {
      oneOf("loadBalancingScheme", BS_SCHEMES);
      oneOf("protocol", BS_PROTOCOLS);
      oneOf("sessionAffinity", BS_AFFINITIES);
      str("healthChecks");
      const bsScheme = known("loadBalancingScheme") ?? "INTERNAL";
      if (bsScheme === "INTERNAL" || bsScheme === "EXTERNAL") {
        // Passthrough (internal, and backend service-based external) load balancers:
        // cloud.google.com/load-balancing/docs/internal and .../network/networklb-backend-service:
        // protocol TCP, UDP or UNSPECIFIED (GCE's default HTTP is refused), a health check
        // is required, backends balance by CONNECTION (another mode is refused), and only the
        // 5-tuple family of session affinities applies. A backend that names no balancingMode gets
        // CONNECTION here (state.ts materialize): the stock CCM's internal load balancers send
        // none (kubernetes/cloud-provider-gcp gce_loadbalancer_internal.go backendsFromGroupLinks,
        // `&compute.Backend{Group: igLink}`) and GCE serves them, and the terraform provider's
        // default for a regional backend's balancing_mode is CONNECTION
        // (resource_compute_region_backend_service.go).
        const protocol = known("protocol") ?? "HTTP";
        if (typeof protocol === "string" && !PASSTHROUGH_PROTOCOLS.includes(protocol)) {
          fail(
            "protocol",
            `Invalid value for field 'resource.protocol': '${protocol}'. A backend service with loadBalancingScheme ${bsScheme} must use protocol TCP, UDP or UNSPECIFIED.`,
          );
        }
        if (!present("healthChecks")) {
          fail(
            "healthChecks",
            `Invalid value for field 'resource.healthChecks': ''. A backend service with loadBalancingScheme ${bsScheme} requires a health check.`,
          );
        }
        const affinity = known("sessionAffinity");
        const allowed = bsScheme === "INTERNAL" ? INTERNAL_AFFINITIES : EXTERNAL_PASSTHROUGH_AFFINITIES;
        if (typeof affinity === "string" && BS_AFFINITIES.includes(affinity) && !allowed.includes(affinity)) {
          fail(
            "sessionAffinity",
            `Invalid value for field 'resource.sessionAffinity': '${affinity}'. Session affinity ${affinity} is not supported by a backend service with loadBalancingScheme ${bsScheme}.`,
          );
        }
        const list = known("backends");
        if (Array.isArray(list)) {
          list.forEach((b, i) => {
            const mode = isJsonObject(b) ? (b.balancingMode ?? "CONNECTION") : undefined;
            if (typeof mode === "string" && mode !== "CONNECTION") {
              fail(
                `backends[${i}].balancingMode`,
                `Invalid value for field 'resource.backends[${i}].balancingMode': '${mode}'. Balancing mode must be CONNECTION for a backend service with loadBalancingScheme ${bsScheme}.`,
              );
            }
          });
        }
      }
      int("timeoutSec", 1, 2_147_483_647);
      int("connectionDrainingTimeoutSec", 0, 3600);
      const backends = known("backends");
      if (backends !== undefined) {
        if (!Array.isArray(backends)) {
          fail("backends", "backends must be a list");
        } else {
          backends.forEach((b, i) => {
            if (!isJsonObject(b) || typeof b.group !== "string" || b.group === "") {
              fail(`backends[${i}].group`, `backends[${i}].group is required`);
            }
          });
        }
      }
      break;
    }
    case "targetPools":
      oneOf("sessionAffinity", TP_AFFINITIES);
      str("healthChecks");
      strList("instances");
      break;
    case "healthChecks":
    case "globalHealthChecks": {
      const blocks = healthCheckBlocks().filter(present);
      if (blocks.length !== 1) {
        fail(
          "httpHealthCheck",
          `exactly one of grpcHealthCheck, grpcTlsHealthCheck, httpHealthCheck, httpsHealthCheck, sslHealthCheck, tcpHealthCheck must be specified, got ${blocks.length === 0 ? "none" : blocks.join(", ")}`,
        );
      }
      for (const block of blocks) {
        const b = known(block);
        if (isJsonObject(b) && b.port !== undefined && b.port !== null && !containsUnknown(b.port)) {
          const port = b.port;
          if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
            fail(`${block}.port`, `expected ${block}.port to be in the range (1 - 65535), got ${JSON.stringify(port)}`);
          }
        }
      }
      int("checkIntervalSec", 1, 300);
      int("timeoutSec", 1, 300);
      int("healthyThreshold", 1, 10);
      int("unhealthyThreshold", 1, 10);
      const interval = known("checkIntervalSec");
      const timeout = known("timeoutSec");
      if (typeof timeout === "number" && timeout > (typeof interval === "number" ? interval : 5)) {
        fail("timeoutSec", `timeoutSec (${timeout}) must be less than or equal to checkIntervalSec`);
      }
      break;
    }
    case "httpHealthChecks": {
      int("port", 1, 65535);
      int("checkIntervalSec", 1, 300);
      int("timeoutSec", 1, 300);
      int("healthyThreshold", 1, 10);
      int("unhealthyThreshold", 1, 10);
      const path = str("requestPath");
      if (path !== undefined && !path.startsWith("/")) {
        fail("requestPath", `requestPath must start with "/", got ${path}`);
      }
      // httpHealthChecks resource reference, timeoutSec: "It is invalid for timeoutSec to have
      // greater value than checkIntervalSec" (both default to 5).
      const interval = known("checkIntervalSec");
      const timeout = known("timeoutSec");
      if (typeof timeout === "number" && timeout > (typeof interval === "number" ? interval : 5)) {
        fail("timeoutSec", `timeoutSec (${timeout}) must be less than or equal to checkIntervalSec`);
      }
      break;
    }
    case "instanceGroups": {
      strList("instances");
      const named = known("namedPorts");
      if (Array.isArray(named)) {
        named.forEach((p, i) => {
          if (!isJsonObject(p) || typeof p.name !== "string" || typeof p.port !== "number") {
            fail(`namedPorts[${i}]`, `namedPorts[${i}] needs a name and a port`);
          }
        });
      }
      break;
    }
    case "firewalls": {
      if (!present("network")) {
        fail("network", `Missing required argument: "network"`);
      }
      const allows = known("allows");
      const denies = known("denies");
      const nonEmpty = (v: Json | undefined): boolean => Array.isArray(v) && v.length > 0;
      if (
        nonEmpty(allows) === nonEmpty(denies) &&
        !containsUnknown(props.allows ?? null) &&
        !containsUnknown(props.denies ?? null)
      ) {
        fail("allows", `exactly one of "allows" or "denies" must be specified`);
      }
      for (const field of ["allows", "denies"]) {
        const rules = known(field);
        if (Array.isArray(rules)) {
          rules.forEach((r, i) => {
            if (!isJsonObject(r) || typeof r.protocol !== "string" || r.protocol === "") {
              fail(`${field}[${i}].protocol`, `${field}[${i}].protocol is required`);
              return;
            }
            const ports = r.ports;
            if (Array.isArray(ports)) {
              ports.forEach((p, j) => {
                if (typeof p !== "string" || !isPortSpec(p)) {
                  fail(`${field}[${i}].ports[${j}]`, `invalid port ${JSON.stringify(p)}`);
                }
              });
            }
          });
        }
      }
      oneOf("direction", ["INGRESS", "EGRESS"]);
      // resource_compute_firewall.go: "For INGRESS traffic, one of 'source_ranges', 'source_tags'
      // or 'source_service_accounts' is required" (GCE refuses the rule otherwise).
      if (
        (known("direction") ?? "INGRESS") === "INGRESS" &&
        !["sourceRanges", "sourceTags", "sourceServiceAccounts"].some(present)
      ) {
        fail(
          "sourceRanges",
          "Invalid value for field 'resource.sourceRanges': ''. An INGRESS firewall rule requires one of sourceRanges, sourceTags or sourceServiceAccounts.",
        );
      }
      int("priority", 0, 65535);
      cidrs("sourceRanges");
      cidrs("destinationRanges");
      // cloud.google.com/firewall/docs/using-firewalls: "A firewall rule can contain either IPv4 or
      // IPv6 ranges, but not both." (GCE's own message is not known: this text is ours.)
      for (const field of ["sourceRanges", "destinationRanges"]) {
        const families = new Set((strList(field) ?? []).filter(isCidr).map((c) => net.isIP(c.split("/")[0] ?? "")));
        if (families.size > 1) {
          fail(
            field,
            `Invalid value for field 'resource.${field}': a firewall rule can contain either IPv4 or IPv6 ranges, but not both.`,
          );
        }
      }
      strList("sourceTags");
      strList("targetTags");
      break;
    }
    case "routes": {
      if (!present("destRange")) {
        fail("destRange", `Missing required argument: "destRange"`);
      } else {
        const dest = str("destRange");
        if (dest !== undefined && !isCidr(dest)) {
          fail("destRange", `invalid value for destRange (must be a valid CIDR range), got ${dest}`);
        } else if (dest !== undefined && net.isIP(dest.split("/")[0] ?? "") === 6) {
          // routes resource reference, destRange: IPv6 static routes take only some next hops
          // (not the instance next hops dccm uses); the emulator refuses every IPv6 range.
          fail(
            "destRange",
            `Invalid value for field 'resource.destRange': '${dest}'. IPv6 destination ranges are not supported for this route.`,
          );
        }
      }
      if (!present("network")) {
        fail("network", `Missing required argument: "network"`);
      }
      const hops = ["nextHopGateway", "nextHopIlb", "nextHopInstance", "nextHopIp", "nextHopVpnTunnel"].filter(present);
      if (hops.length !== 1) {
        fail(
          "nextHopInstance",
          `exactly one of nextHopGateway, nextHopIlb, nextHopInstance, nextHopIp, nextHopVpnTunnel must be specified, got ${hops.length === 0 ? "none" : hops.join(", ")}`,
        );
      }
      int("priority", 0, 65535);
      strList("tags");
      break;
    }
    case "instances":
      break;
  }
  return failures;
}

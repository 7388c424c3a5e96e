// Input validation of the kinds the GCE emulator models, the way the provider and GCE refuse a bad
// input before anything is stored: allowed values, formats (names, CIDRs, ports) and combinations
// that a kind's documentation excludes. Each check cites its source beside it.

import * as net from "node:net";

import { containsUnknown, isJsonObject, type Json, type JsonObject } from "./json";
import { type GceKind, healthCheckBlocks, invalidNameMessage, NAME_RE } from "./kinds";

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
const NEG_TYPES = [
  "GCE_VM_IP",
  "GCE_VM_IP_PORT",
  "NON_GCP_PRIVATE_IP_PORT",
  "INTERNET_IP_PORT",
  "INTERNET_FQDN_PORT",
  "SERVERLESS",
  "PRIVATE_SERVICE_CONNECT",
  "GCE_VM_IP_DEDICATED_BACKEND",
];
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
    case "networkEndpointGroups": {
      // networkEndpointGroups resource reference, networkEndpointType: the values of @pulumi/gcp
      // compute/networkEndpointGroup.d.ts (resource_compute_network_endpoint_group.go validation).
      oneOf("networkEndpointType", NEG_TYPES);
      if (!present("network")) {
        fail("network", `Missing required argument: "network"`);
      }
      int("defaultPort", 1, 65535);
      // A GCE_VM_IP endpoint has no port ("port is required unless the Network Endpoint Group is
      // created with the type of GCE_VM_IP", @pulumi/gcp NetworkEndpointListNetworkEndpoint.port;
      // zonal-neg-concepts: GCE_VM_IP endpoints are "represented using the primary internal IPv4
      // address of a Compute Engine VM's network interface"), so neither has its group a default one.
      if ((known("networkEndpointType") ?? "GCE_VM_IP_PORT") === "GCE_VM_IP" && present("defaultPort")) {
        fail(
          "defaultPort",
          "Invalid value for field 'resource.defaultPort': a network endpoint group of type GCE_VM_IP has no port.",
        );
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

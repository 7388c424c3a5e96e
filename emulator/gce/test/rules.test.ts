// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/kinds.ts and state.ts; a change
// that loosens a rule fails its row here.
import * as assert from "node:assert/strict";

import { startGceEmulator, type GceEmulator } from "../index";
import { ProviderApi } from "../provider-api";
import type { Json, JsonObject } from "../json";
import { GceError } from "../errors";
import type { NetworkSpec } from "../networks";
import { GceState } from "../state";
import { GceLimits, restRateGroup } from "../limits";
import { matchesFilter, parseFilter } from "../filter";

const ENDPOINT = "http://gce.test";
const PROJECT = "dccm-test";
const REGION = "us-central1";
const V1 = `${ENDPOINT}/compute/v1/projects/${PROJECT}`;

const T = {
  address: "gcp:compute/address:Address",
  forwardingRule: "gcp:compute/forwardingRule:ForwardingRule",
  backendService: "gcp:compute/regionBackendService:RegionBackendService",
  targetPool: "gcp:compute/targetPool:TargetPool",
  healthCheck: "gcp:compute/regionHealthCheck:RegionHealthCheck",
  globalHealthCheck: "gcp:compute/healthCheck:HealthCheck",
  httpHealthCheck: "gcp:compute/httpHealthCheck:HttpHealthCheck",
  instanceGroup: "gcp:compute/instanceGroup:InstanceGroup",
  firewall: "gcp:compute/firewall:Firewall",
  route: "gcp:compute/route:Route",
} as const;

const NETWORKS: NetworkSpec[] = [
  { name: "default", autoCreateSubnetworks: true },
  {
    name: "k8s-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "k8s-subnet", ipCidrRange: "10.130.0.0/20" }],
  },
  {
    name: "other-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "other-subnet", ipCidrRange: "10.140.0.0/20" }],
  },
  {
    name: "dual-net",
    autoCreateSubnetworks: false,
    subnetworks: [
      {
        name: "v6-ext",
        ipCidrRange: "10.150.0.0/20",
        stackType: "IPV4_IPV6",
        ipv6AccessType: "EXTERNAL",
        ipv6CidrRange: "2600:1900:4000:7f3::/64",
      },
      {
        name: "v6-int",
        ipCidrRange: "10.160.0.0/20",
        stackType: "IPV4_IPV6",
        ipv6AccessType: "INTERNAL",
        ipv6CidrRange: "fd20:0:0:1::/64",
      },
    ],
  },
];

const regional = { project: PROJECT, region: REGION };
const HC = `regions/${REGION}/healthChecks/hc`;
const GLOBAL_HC = `projects/${PROJECT}/global/healthChecks/ghc`;
const passthrough = (over: JsonObject = {}): JsonObject => ({
  ...regional,
  name: "bs",
  protocol: "TCP",
  healthChecks: HC,
  loadBalancingScheme: "INTERNAL",
  ...over,
});
const internalRule = (over: JsonObject = {}): JsonObject => ({
  ...regional,
  name: "fr",
  loadBalancingScheme: "INTERNAL",
  ports: ["80"],
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  ...over,
});

/** A fresh emulator state with node-1 (k8s-net, zone a), node-2 (default, zone a), a regional and a legacy health check. */
function world(): GceState {
  const state = new GceState({
    endpoint: ENDPOINT,
    project: PROJECT,
    region: REGION,
    zones: [`${REGION}-a`, `${REGION}-b`],
    networks: NETWORKS,
  });
  state.putInstance(PROJECT, `${REGION}-a`, "node-1", { networkInterfaces: [{ network: "k8s-net" }] });
  state.putInstance(PROJECT, `${REGION}-a`, "node-2");
  state.putInstance(PROJECT, `${REGION}-b`, "node-3", { networkInterfaces: [{ network: "k8s-net" }] });
  state.create(T.healthCheck, { ...regional, name: "hc", httpHealthCheck: { port: 10256 } });
  state.create(T.httpHealthCheck, { project: PROJECT, name: "legacy" });
  state.create(T.globalHealthCheck, {
    project: PROJECT,
    name: "ghc",
    httpHealthCheck: { port: 10256, requestPath: "/healthz" },
  });
  return state;
}

interface CreateRow {
  readonly rule: string;
  /** Resources created first (type, inputs). */
  readonly setup?: ReadonlyArray<readonly [string, JsonObject]>;
  readonly type: string;
  readonly inputs: JsonObject;
  /** "accepted", or [HTTP status, GCE's message]. */
  readonly expect: "accepted" | readonly [number, string];
}

const CREATE_ROWS: CreateRow[] = [
  // ---- references the provider sends verbatim (issue 8 item 0) ----
  {
    rule: "InstanceGroup.network as a bare name is refused (sent verbatim by the provider)",
    type: T.instanceGroup,
    inputs: { project: PROJECT, zone: `${REGION}-a`, name: "ig", network: "k8s-net" },
    expect: [400, "Invalid value for field 'resource.network': 'k8s-net'. The URL is malformed."],
  },
  {
    rule: "InstanceGroup.network as a relative URL is accepted",
    type: T.instanceGroup,
    inputs: {
      project: PROJECT,
      zone: `${REGION}-a`,
      name: "ig",
      network: `projects/${PROJECT}/global/networks/k8s-net`,
      instances: ["us-central1-a/node-1"],
    },
    expect: "accepted",
  },
  {
    rule: "RegionBackendService.healthChecks as a bare name is refused",
    type: T.backendService,
    inputs: passthrough({ healthChecks: "hc" }),
    expect: [400, "Invalid value for field 'resource.healthChecks[0]': 'hc'. The URL is malformed."],
  },
  {
    rule: "RegionBackendService backends[].group as a bare name is refused",
    setup: [
      [
        T.instanceGroup,
        { project: PROJECT, zone: `${REGION}-a`, name: "ig", network: `projects/${PROJECT}/global/networks/k8s-net` },
      ],
    ],
    type: T.backendService,
    inputs: passthrough({ backends: [{ group: "ig", balancingMode: "CONNECTION" }] }),
    expect: [400, "Invalid value for field 'resource.backends[0].group': 'ig'. The URL is malformed."],
  },
  // ---- backend services ----
  {
    rule: "a passthrough backend service without protocol gets GCE's default HTTP, which is refused",
    type: T.backendService,
    inputs: { ...regional, name: "bs", healthChecks: HC, loadBalancingScheme: "INTERNAL" },
    expect: [
      400,
      "Invalid value for field 'resource.protocol': 'HTTP'. A backend service with loadBalancingScheme INTERNAL must use protocol TCP, UDP or UNSPECIFIED.",
    ],
  },
  {
    rule: "a passthrough backend service refuses a backend balancing by UTILIZATION",
    setup: [
      [
        T.instanceGroup,
        { project: PROJECT, zone: `${REGION}-a`, name: "ig", network: `projects/${PROJECT}/global/networks/k8s-net` },
      ],
    ],
    type: T.backendService,
    inputs: passthrough({ backends: [{ group: `zones/${REGION}-a/instanceGroups/ig`, balancingMode: "UTILIZATION" }] }),
    expect: [
      400,
      "Invalid value for field 'resource.backends[0].balancingMode': 'UTILIZATION'. Balancing mode must be CONNECTION for a backend service with loadBalancingScheme INTERNAL.",
    ],
  },
  {
    rule: "a passthrough backend service needs a health check",
    type: T.backendService,
    inputs: { ...regional, name: "bs", protocol: "TCP", loadBalancingScheme: "EXTERNAL" },
    expect: [
      400,
      "Invalid value for field 'resource.healthChecks': ''. A backend service with loadBalancingScheme EXTERNAL requires a health check.",
    ],
  },
  {
    rule: "an EXTERNAL regional backend service needs a regional health check",
    type: T.backendService,
    inputs: passthrough({
      loadBalancingScheme: "EXTERNAL",
      healthChecks: `projects/${PROJECT}/global/healthChecks/hc`,
    }),
    expect: [
      400,
      `Invalid value for field 'resource.healthChecks[0]': '${V1}/global/healthChecks/hc'. A regional backend service with loadBalancingScheme EXTERNAL requires a regional health check.`,
    ],
  },
  {
    rule: "an EXTERNAL regional backend service refuses an existing global health check",
    type: T.backendService,
    inputs: passthrough({ loadBalancingScheme: "EXTERNAL", healthChecks: GLOBAL_HC }),
    expect: [
      400,
      `Invalid value for field 'resource.healthChecks[0]': '${V1}/global/healthChecks/ghc'. A regional backend service with loadBalancingScheme EXTERNAL requires a regional health check.`,
    ],
  },
  {
    rule: "an INTERNAL regional backend service accepts a global health check",
    type: T.backendService,
    inputs: passthrough({ healthChecks: GLOBAL_HC }),
    expect: "accepted",
  },
  {
    rule: "an INTERNAL regional backend service's global health check must exist: 404",
    type: T.backendService,
    inputs: passthrough({ healthChecks: `projects/${PROJECT}/global/healthChecks/nothing` }),
    expect: [404, `The resource 'projects/${PROJECT}/global/healthChecks/nothing' was not found`],
  },
  {
    rule: "a global health check takes exactly one protocol block",
    type: T.globalHealthCheck,
    inputs: { project: PROJECT, name: "ghc-2" },
    expect: [
      400,
      "exactly one of grpcHealthCheck, grpcTlsHealthCheck, httpHealthCheck, httpsHealthCheck, sslHealthCheck, tcpHealthCheck must be specified, got none",
    ],
  },
  {
    rule: "a global health check's name is taken per project: 409 alreadyExists",
    type: T.globalHealthCheck,
    inputs: { project: PROJECT, name: "ghc", tcpHealthCheck: { port: 80 } },
    expect: [409, `The resource 'projects/${PROJECT}/global/healthChecks/ghc' already exists`],
  },
  {
    rule: "cookie session affinity is refused on an INTERNAL backend service",
    type: T.backendService,
    inputs: passthrough({ sessionAffinity: "GENERATED_COOKIE" }),
    expect: [
      400,
      "Invalid value for field 'resource.sessionAffinity': 'GENERATED_COOKIE'. Session affinity GENERATED_COOKIE is not supported by a backend service with loadBalancingScheme INTERNAL.",
    ],
  },
  {
    rule: "CLIENT_IP_NO_DESTINATION is refused on an EXTERNAL backend service",
    type: T.backendService,
    inputs: passthrough({ loadBalancingScheme: "EXTERNAL", sessionAffinity: "CLIENT_IP_NO_DESTINATION" }),
    expect: [
      400,
      "Invalid value for field 'resource.sessionAffinity': 'CLIENT_IP_NO_DESTINATION'. Session affinity CLIENT_IP_NO_DESTINATION is not supported by a backend service with loadBalancingScheme EXTERNAL.",
    ],
  },
  {
    rule: "CLIENT_IP_NO_DESTINATION is accepted on an INTERNAL backend service",
    type: T.backendService,
    inputs: passthrough({ sessionAffinity: "CLIENT_IP_NO_DESTINATION" }),
    expect: "accepted",
  },
  // ---- forwarding rules ----
  {
    rule: "a forwarding rule's scheme must be its backend service's",
    setup: [[T.backendService, passthrough()]],
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", backendService: `regions/${REGION}/backendServices/bs` },
    expect: [
      400,
      `Invalid value for field 'resource.loadBalancingScheme': 'EXTERNAL'. The forwarding rule's load balancing scheme must match the scheme of backend service 'projects/${PROJECT}/regions/${REGION}/backendServices/bs' (INTERNAL).`,
    ],
  },
  {
    rule: "allowGlobalAccess only on INTERNAL forwarding rules",
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", allowGlobalAccess: true },
    expect: [
      400,
      "Invalid value for field 'resource.allowGlobalAccess': 'true'. Global access is only supported for INTERNAL forwarding rules.",
    ],
  },
  {
    rule: "an external forwarding rule's tier must be its address's",
    setup: [[T.address, { ...regional, name: "std", networkTier: "STANDARD", address: "198.51.100.9" }]],
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", ipAddress: "198.51.100.9" },
    expect: [
      400,
      `Invalid value for field 'resource.networkTier': 'PREMIUM'. The network tier of the forwarding rule must be the same as the network tier of its IP address 'projects/${PROJECT}/regions/${REGION}/addresses/std' (STANDARD).`,
    ],
  },
  {
    rule: "an external forwarding rule on an IP the project has not reserved is refused (issue 19 item 4)",
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", ipAddress: "203.0.113.77" },
    expect: [400, "Invalid value for field 'resource.IPAddress': '203.0.113.77'. Invalid IP address specified."],
  },
  {
    rule: "an external forwarding rule on an IP reserved in the project and region is accepted",
    setup: [[T.address, { ...regional, name: "mine", address: "203.0.113.77" }]],
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", ipAddress: "203.0.113.77" },
    expect: "accepted",
  },
  {
    rule: "an external forwarding rule on an address reserved in another region is refused",
    setup: [[T.address, { project: PROJECT, region: "europe-west1", name: "far", address: "203.0.113.77" }]],
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", ipAddress: "203.0.113.77" },
    expect: [400, "Invalid value for field 'resource.IPAddress': '203.0.113.77'. Invalid IP address specified."],
  },
  {
    rule: "an external forwarding rule on an INTERNAL address is refused",
    setup: [
      [
        T.address,
        { ...regional, name: "int", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.9" },
      ],
    ],
    type: T.forwardingRule,
    inputs: { ...regional, name: "fr", portRange: "80", ipAddress: "10.130.0.9" },
    expect: [
      400,
      `Invalid value for field 'resource.IPAddress': '10.130.0.9'. Address 'projects/${PROJECT}/regions/${REGION}/addresses/int' is INTERNAL and cannot be used by a forwarding rule with loadBalancingScheme EXTERNAL.`,
    ],
  },
  {
    rule: "two INTERNAL forwarding rules on one IP need a SHARED_LOADBALANCER_VIP address (GCE_ENDPOINT refused)",
    setup: [
      [
        T.address,
        {
          ...regional,
          name: "vip",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
          purpose: "GCE_ENDPOINT",
          address: "10.130.0.9",
        },
      ],
      [T.forwardingRule, internalRule({ name: "fr-tcp", ipAddress: "10.130.0.9" })],
    ],
    type: T.forwardingRule,
    inputs: internalRule({ name: "fr-udp", ipAddress: "10.130.0.9", ipProtocol: "UDP" }),
    expect: [
      400,
      `Invalid value for field 'resource.IPAddress': '10.130.0.9'. IP address is already in use by forwarding rule 'projects/${PROJECT}/regions/${REGION}/forwardingRules/fr-tcp'; internal forwarding rules can share an IP address only if it is reserved with purpose SHARED_LOADBALANCER_VIP.`,
    ],
  },
  {
    rule: "two INTERNAL forwarding rules on an unreserved IP are refused",
    setup: [[T.forwardingRule, internalRule({ name: "fr-tcp", ipAddress: "10.130.0.9" })]],
    type: T.forwardingRule,
    inputs: internalRule({ name: "fr-udp", ipAddress: "10.130.0.9", ipProtocol: "UDP" }),
    expect: [
      400,
      `Invalid value for field 'resource.IPAddress': '10.130.0.9'. IP address is already in use by forwarding rule 'projects/${PROJECT}/regions/${REGION}/forwardingRules/fr-tcp'; internal forwarding rules can share an IP address only if it is reserved with purpose SHARED_LOADBALANCER_VIP.`,
    ],
  },
  {
    rule: "two INTERNAL forwarding rules on a SHARED_LOADBALANCER_VIP address are accepted",
    setup: [
      [
        T.address,
        {
          ...regional,
          name: "vip",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
          purpose: "SHARED_LOADBALANCER_VIP",
          address: "10.130.0.9",
        },
      ],
      [T.forwardingRule, internalRule({ name: "fr-tcp", ipAddress: "10.130.0.9" })],
    ],
    type: T.forwardingRule,
    inputs: internalRule({ name: "fr-udp", ipAddress: "10.130.0.9", ipProtocol: "UDP" }),
    expect: "accepted",
  },
  {
    rule: "a SHARED_LOADBALANCER_VIP address serves at most 10 forwarding rules",
    setup: [
      [
        T.address,
        {
          ...regional,
          name: "vip",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
          purpose: "SHARED_LOADBALANCER_VIP",
          address: "10.130.0.9",
        },
      ],
      ...Array.from({ length: 10 }, (_, i): readonly [string, JsonObject] => [
        T.forwardingRule,
        internalRule({ name: `fr-${i}`, ipAddress: "10.130.0.9", ports: [String(1000 + i)] }),
      ]),
    ],
    type: T.forwardingRule,
    inputs: internalRule({ name: "fr-10", ipAddress: "10.130.0.9", ports: ["2000"] }),
    expect: [
      400,
      "Invalid value for field 'resource.IPAddress': '10.130.0.9'. An address with purpose SHARED_LOADBALANCER_VIP can be used by at most 10 forwarding rules.",
    ],
  },
  {
    rule: "an INTERNAL forwarding rule may name an unreserved IP of its subnetwork",
    type: T.forwardingRule,
    inputs: internalRule({ ipAddress: "10.130.0.50" }),
    expect: "accepted",
  },
  {
    rule: "an INTERNAL forwarding rule's IP must be in its subnetwork's range",
    type: T.forwardingRule,
    inputs: internalRule({ ipAddress: "10.128.0.50" }),
    expect: [
      400,
      "Invalid value for field 'resource.IPAddress': '10.128.0.50'. The specified IP address is not within the subnetwork's range 10.130.0.0/20.",
    ],
  },
  {
    rule: "an INTERNAL forwarding rule on a custom-mode network must name a subnetwork",
    type: T.forwardingRule,
    inputs: internalRule({ subnetwork: null }),
    expect: [
      400,
      `Invalid value for field 'resource.subnetwork': ''. Network '${V1}/global/networks/k8s-net' is a custom mode network: an internal forwarding rule must specify a subnetwork.`,
    ],
  },
  {
    rule: "an INTERNAL forwarding rule on an auto-mode network gets the region's subnetwork",
    type: T.forwardingRule,
    inputs: internalRule({ network: "default", subnetwork: null }),
    expect: "accepted",
  },
  // ---- networks and subnetworks as state ----
  {
    rule: "a network that does not exist: 404",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw",
      network: "no-such-net",
      allows: [{ protocol: "tcp" }],
      sourceRanges: ["0.0.0.0/0"],
    },
    expect: [404, `The resource 'projects/${PROJECT}/global/networks/no-such-net' was not found`],
  },
  {
    rule: "a misspelt subnetwork: 404",
    type: T.forwardingRule,
    inputs: internalRule({ subnetwork: "k8s-subnett" }),
    expect: [404, `The resource 'projects/${PROJECT}/regions/${REGION}/subnetworks/k8s-subnett' was not found`],
  },
  {
    rule: "a subnetwork of another network is refused",
    type: T.forwardingRule,
    inputs: internalRule({ subnetwork: "other-subnet" }),
    expect: [
      400,
      `Invalid value for field 'resource.subnetwork': '${V1}/regions/${REGION}/subnetworks/other-subnet'. Subnetwork should belong to network '${V1}/global/networks/k8s-net', but it belongs to '${V1}/global/networks/other-net'.`,
    ],
  },
  {
    rule: "an instance group's instances must be on its network",
    type: T.instanceGroup,
    inputs: {
      project: PROJECT,
      zone: `${REGION}-a`,
      name: "ig",
      network: `projects/${PROJECT}/global/networks/k8s-net`,
      instances: ["us-central1-a/node-2"],
    },
    expect: [
      400,
      `Invalid value for field 'resource.instances[0]': '${V1}/zones/${REGION}-a/instances/node-2'. Instance is in network '${V1}/global/networks/default', not in the network of the instance group '${V1}/global/networks/k8s-net'.`,
    ],
  },
  {
    rule: "an instance group's instances must be in its zone",
    type: T.instanceGroup,
    inputs: {
      project: PROJECT,
      zone: `${REGION}-a`,
      name: "ig",
      network: `projects/${PROJECT}/global/networks/k8s-net`,
      instances: [`projects/${PROJECT}/zones/${REGION}-b/instances/node-3`],
    },
    expect: [
      400,
      `Invalid value for field 'resource.instances[0]': '${V1}/zones/${REGION}-b/instances/node-3'. Instance must be in zone '${REGION}-a' of the instance group.`,
    ],
  },
  // ---- target pools ----
  {
    rule: "a target pool's instances need not exist",
    type: T.targetPool,
    inputs: { ...regional, name: "tp", instances: ["us-central1-a/gone"], healthChecks: "legacy" },
    expect: "accepted",
  },
  {
    rule: "a target pool takes legacy HTTP health checks only",
    type: T.targetPool,
    inputs: { ...regional, name: "tp", healthChecks: HC },
    expect: [
      400,
      `Invalid value for field 'resource.healthChecks[0]': '${V1}/regions/${REGION}/healthChecks/hc'. A target pool accepts only legacy HTTP health checks (httpHealthChecks).`,
    ],
  },
  // ---- health checks, firewalls, addresses, routes ----
  {
    rule: "HttpHealthCheck timeoutSec must not exceed checkIntervalSec",
    type: T.httpHealthCheck,
    inputs: { project: PROJECT, name: "slow", checkIntervalSec: 5, timeoutSec: 6 },
    expect: [400, "timeoutSec (6) must be less than or equal to checkIntervalSec"],
  },
  {
    rule: "an INGRESS firewall needs a source",
    type: T.firewall,
    inputs: { project: PROJECT, name: "fw", network: "k8s-net", allows: [{ protocol: "tcp" }], targetTags: ["n"] },
    expect: [
      400,
      "Invalid value for field 'resource.sourceRanges': ''. An INGRESS firewall rule requires one of sourceRanges, sourceTags or sourceServiceAccounts.",
    ],
  },
  {
    // resource_compute_firewall.go schema: destination_ranges, "the firewall will apply only to
    // traffic that has destination IP address in these ranges"; an IP is a range of one address.
    rule: "an INGRESS allow rule towards one IP (destinationRanges)",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw",
      network: "k8s-net",
      allows: [{ protocol: "tcp", ports: ["80"] }],
      sourceRanges: ["0.0.0.0/0"],
      destinationRanges: ["203.0.113.7"],
      priority: 999,
    },
    expect: "accepted",
  },
  {
    // resource_compute_firewall.go schema: deny, "a protocol and port-range tuple that describes a denied connection"; ExactlyOneOf allow, deny.
    rule: "a deny rule of every protocol towards one IP",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw",
      network: "k8s-net",
      denies: [{ protocol: "all" }],
      sourceRanges: ["0.0.0.0/0"],
      destinationRanges: ["203.0.113.7"],
      priority: 1000,
    },
    expect: "accepted",
  },
  {
    rule: "a firewall takes allows or denies, not both",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw",
      network: "k8s-net",
      allows: [{ protocol: "tcp" }],
      denies: [{ protocol: "all" }],
      sourceRanges: ["0.0.0.0/0"],
    },
    expect: [400, 'exactly one of "allows" or "denies" must be specified'],
  },
  {
    // resource_compute_firewall.go schema: priority, validation.IntBetween(0, 65535).
    rule: "a firewall priority above 65535",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw",
      network: "k8s-net",
      allows: [{ protocol: "tcp" }],
      sourceRanges: ["0.0.0.0/0"],
      priority: 65536,
    },
    expect: [400, "expected priority to be an integer in the range (0 - 65535), got 65536"],
  },
  {
    rule: "an EGRESS firewall needs no source",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw",
      network: "k8s-net",
      direction: "EGRESS",
      allows: [{ protocol: "tcp" }],
      destinationRanges: ["10.0.0.0/8"],
    },
    expect: "accepted",
  },
  {
    rule: "purpose only on INTERNAL addresses",
    type: T.address,
    inputs: { ...regional, name: "a", purpose: "SHARED_LOADBALANCER_VIP" },
    expect: [
      400,
      "Invalid value for field 'resource.purpose': 'SHARED_LOADBALANCER_VIP'. Purpose SHARED_LOADBALANCER_VIP is only valid for an INTERNAL address.",
    ],
  },
  {
    rule: "subnetwork only on INTERNAL addresses",
    type: T.address,
    inputs: { ...regional, name: "a", subnetwork: "k8s-subnet" },
    expect: [
      400,
      "Invalid value for field 'resource.subnetwork': 'k8s-subnet'. A subnetwork can only be specified for an INTERNAL address.",
    ],
  },
  {
    rule: "an INTERNAL address is always PREMIUM",
    type: T.address,
    inputs: { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet", networkTier: "STANDARD" },
    expect: [
      400,
      "Invalid value for field 'resource.networkTier': 'STANDARD'. An INTERNAL address is always PREMIUM tier.",
    ],
  },
  {
    rule: "a route's IPv6 destRange is refused",
    type: T.route,
    inputs: {
      project: PROJECT,
      name: "r6",
      network: "k8s-net",
      destRange: "fd00:1::/64",
      nextHopInstance: "node-1",
      nextHopInstanceZone: `${REGION}-a`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.destRange': 'fd00:1::/64'. IPv6 destination ranges are not supported for this route.",
    ],
  },
  // ---- IPv6 (kinds.ts addresses / forwardingRules / firewalls; state.ts dualStackSubnet) ----
  {
    rule: "an EXTERNAL IPv6 address for a Network Load Balancer from a dual-stack subnet with external IPv6: accepted",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "v6-ext",
    },
    expect: "accepted",
  },
  {
    rule: "an INTERNAL IPv6 address from a dual-stack subnet with internal IPv6: accepted",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "INTERNAL",
      ipVersion: "IPV6",
      subnetwork: "v6-int",
      purpose: "SHARED_LOADBALANCER_VIP",
    },
    expect: "accepted",
  },
  {
    rule: "an EXTERNAL IPv6 address names its endpoint type (VM or NETLB)",
    type: T.address,
    inputs: { ...regional, name: "v6", addressType: "EXTERNAL", ipVersion: "IPV6", subnetwork: "v6-ext" },
    expect: [
      400,
      "Invalid value for field 'resource.ipv6EndpointType': ''. An EXTERNAL IPv6 address must specify its endpoint type, VM or NETLB.",
    ],
  },
  {
    rule: "an IPv6 address comes from a subnetwork",
    type: T.address,
    inputs: { ...regional, name: "v6", addressType: "EXTERNAL", ipVersion: "IPV6", ipv6EndpointType: "NETLB" },
    expect: [400, "Invalid value for field 'resource.subnetwork': ''. An IPv6 address must specify a subnetwork."],
  },
  {
    rule: "an IPv6 address from an IPv4-only subnet is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "k8s-subnet",
    },
    expect: [
      400,
      `Invalid value for field 'resource.subnetwork': '${V1}/regions/${REGION}/subnetworks/k8s-subnet'. Subnetwork 'k8s-subnet' has no IPv6 range (stackType IPV4_ONLY).`,
    ],
  },
  {
    rule: "an EXTERNAL IPv6 address from a subnet with internal IPv6 is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "v6-int",
    },
    expect: [
      400,
      `Invalid value for field 'resource.subnetwork': '${V1}/regions/${REGION}/subnetworks/v6-int'. An EXTERNAL IPv6 address needs a subnetwork with ipv6AccessType EXTERNAL; 'v6-int' has INTERNAL.`,
    ],
  },
  {
    rule: "an IPv6 address literal outside the subnet's IPv6 range is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "INTERNAL",
      ipVersion: "IPV6",
      subnetwork: "v6-int",
      address: "fd20:0:0:2::",
    },
    expect: [
      400,
      "Invalid value for field 'resource.address': 'fd20:0:0:2::'. The specified IP address is not within the subnetwork's IPv6 range fd20:0:0:1::/64.",
    ],
  },
  {
    rule: "an endpoint type on an INTERNAL address is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "INTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "v6-int",
    },
    expect: [
      400,
      "Invalid value for field 'resource.ipv6EndpointType': 'NETLB'. An endpoint type can only be specified for an EXTERNAL IPv6 address.",
    ],
  },
  {
    rule: "an external IPv6 forwarding rule on a backend service, ephemeral IP from its dual-stack subnet: accepted",
    setup: [[T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" })]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      loadBalancingScheme: "EXTERNAL",
      ipVersion: "IPV6",
      ports: ["80"],
      subnetwork: "v6-ext",
      backendService: `regions/${REGION}/backendServices/bs`,
    },
    expect: "accepted",
  },
  {
    rule: "an internal IPv6 forwarding rule on its reserved internal IPv6 address: accepted",
    setup: [
      [T.backendService, passthrough({ network: "dual-net" })],
      [
        T.address,
        {
          ...regional,
          name: "v6",
          addressType: "INTERNAL",
          ipVersion: "IPV6",
          subnetwork: "v6-int",
          purpose: "SHARED_LOADBALANCER_VIP",
        },
      ],
    ],
    type: T.forwardingRule,
    inputs: internalRule({
      name: "fr6",
      ipVersion: "IPV6",
      network: "dual-net",
      subnetwork: "v6-int",
      ipAddress: `regions/${REGION}/addresses/v6`,
      backendService: `regions/${REGION}/backendServices/bs`,
    }),
    expect: "accepted",
  },
  {
    rule: "an IPv6 forwarding rule cannot point at a target pool (target pools are IPv4-only)",
    setup: [[T.targetPool, { ...regional, name: "tp", healthChecks: "legacy" }]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      ipVersion: "IPV6",
      portRange: "80-80",
      subnetwork: "v6-ext",
      target: `regions/${REGION}/targetPools/tp`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.target': an IPv6 forwarding rule cannot point at a target pool: target pool-based load balancers support IPv4 only.",
    ],
  },
  {
    rule: "an IPv6 forwarding rule names its subnetwork (GCE's message, terraform-provider-google#18407)",
    setup: [[T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" })]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      loadBalancingScheme: "EXTERNAL",
      ipVersion: "IPV6",
      ports: ["80"],
      backendService: `regions/${REGION}/backendServices/bs`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.subnetwork': ''. Subnetwork or Ip Collection must be specified for IPv6 forwarding rules.",
    ],
  },
  {
    rule: "an IPv6 forwarding rule with an IPv4 address is refused",
    setup: [[T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" })]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      loadBalancingScheme: "EXTERNAL",
      ipVersion: "IPV6",
      ports: ["80"],
      subnetwork: "v6-ext",
      ipAddress: "10.150.0.9",
      backendService: `regions/${REGION}/backendServices/bs`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.IPAddress': '10.150.0.9'. An IPv6 forwarding rule needs an IPv6 address.",
    ],
  },
  {
    rule: "a firewall with IPv6 source ranges only: accepted",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw6",
      network: "k8s-net",
      sourceRanges: ["::/0"],
      allows: [{ protocol: "tcp", ports: ["80"] }],
    },
    expect: "accepted",
  },
  {
    rule: "a firewall cannot mix IPv4 and IPv6 source ranges",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw46",
      network: "k8s-net",
      sourceRanges: ["0.0.0.0/0", "::/0"],
      allows: [{ protocol: "tcp", ports: ["80"] }],
    },
    expect: [
      400,
      "Invalid value for field 'resource.sourceRanges': a firewall rule can contain either IPv4 or IPv6 ranges, but not both.",
    ],
  },
  {
    rule: "a firewall cannot mix IPv4 and IPv6 destination ranges",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw46",
      network: "k8s-net",
      sourceRanges: ["::/0"],
      destinationRanges: ["203.0.113.7", "2001:db8::7"],
      allows: [{ protocol: "tcp", ports: ["80"] }],
    },
    expect: [
      400,
      "Invalid value for field 'resource.destinationRanges': a firewall rule can contain either IPv4 or IPv6 ranges, but not both.",
    ],
  },
  // ---- IP literals of an address insert (state.ts, requireReservableIp) ----
  {
    rule: "an INTERNAL address literal another address holds: 409 IP_IN_USE_BY_ANOTHER_RESOURCE",
    setup: [
      [
        T.address,
        { ...regional, name: "first", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.9" },
      ],
    ],
    type: T.address,
    inputs: { ...regional, name: "second", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.9" },
    expect: [409, "IP '10.130.0.9' is already being used by another resource."],
  },
  {
    rule: "an INTERNAL address literal an instance uses: 409 IP_IN_USE_BY_ANOTHER_RESOURCE",
    type: T.address,
    inputs: { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.2" },
    expect: [409, "IP '10.130.0.2' is already being used by another resource."],
  },
  {
    rule: "an INTERNAL address may name an unused IP of its subnetwork",
    type: T.address,
    inputs: { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.77" },
    expect: "accepted",
  },
  {
    rule: "an EXTERNAL address literal another address holds (any region): 400",
    setup: [[T.address, { project: PROJECT, region: "europe-west1", name: "far", address: "203.0.113.77" }]],
    type: T.address,
    inputs: { ...regional, name: "a", address: "203.0.113.77" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.77'. IP '203.0.113.77' is already being used by another resource.",
    ],
  },
  {
    rule: "an EXTERNAL address literal a forwarding rule of another region holds is not the project's to reserve here",
    setup: [
      [T.address, { project: PROJECT, region: "europe-west1", name: "far", address: "203.0.113.77" }],
      [
        T.forwardingRule,
        { project: PROJECT, region: "europe-west1", name: "far", portRange: "80", ipAddress: "203.0.113.77" },
      ],
    ],
    type: T.address,
    inputs: { project: PROJECT, region: "europe-west1", name: "far-2", address: "203.0.113.77" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.77'. IP '203.0.113.77' is already being used by another resource.",
    ],
  },
  {
    rule: "an EXTERNAL ephemeral IP of another tier is not promoted: refused",
    setup: [[T.forwardingRule, { ...regional, name: "fr", portRange: "80", networkTier: "STANDARD" }]],
    type: T.address,
    inputs: { ...regional, name: "a", address: "203.0.113.1" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
    ],
  },
  {
    rule: "an EXTERNAL ephemeral IP of a forwarding rule of another region is not promoted: refused",
    setup: [[T.forwardingRule, { project: PROJECT, region: "europe-west1", name: "far", portRange: "80" }]],
    type: T.address,
    inputs: { ...regional, name: "a", address: "203.0.113.1" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
    ],
  },
];

interface DiffRow {
  readonly rule: string;
  readonly type: string;
  readonly setup?: ReadonlyArray<readonly [string, JsonObject]>;
  readonly inputs: JsonObject;
  readonly change: JsonObject;
  readonly expect: "replaced" | "updated in place";
}

const IG = {
  project: PROJECT,
  zone: `${REGION}-a`,
  name: "ig",
  network: `projects/${PROJECT}/global/networks/k8s-net`,
  description: "a",
};
const FW = {
  project: PROJECT,
  name: "fw",
  network: "k8s-net",
  allows: [{ protocol: "tcp" }],
  sourceRanges: ["0.0.0.0/0"],
};
const TP = { ...regional, name: "tp", healthChecks: "legacy", description: "a", sessionAffinity: "NONE" };

const DIFF_ROWS: DiffRow[] = [
  {
    rule: "InstanceGroup description (ForceNew)",
    type: T.instanceGroup,
    inputs: IG,
    change: { description: "b" },
    expect: "replaced",
  },
  {
    rule: "InstanceGroup network (ForceNew)",
    type: T.instanceGroup,
    inputs: IG,
    change: { network: `projects/${PROJECT}/global/networks/default` },
    expect: "replaced",
  },
  {
    rule: "InstanceGroup instances",
    type: T.instanceGroup,
    inputs: IG,
    change: { instances: [`${V1}/zones/${REGION}-a/instances/node-1`] },
    expect: "updated in place",
  },
  {
    rule: "RegionBackendService network (ForceNew)",
    type: T.backendService,
    inputs: passthrough({ network: "k8s-net" }),
    change: { network: "default" },
    expect: "replaced",
  },
  {
    rule: "RegionBackendService loadBalancingScheme (ForceNew)",
    type: T.backendService,
    inputs: passthrough(),
    change: { loadBalancingScheme: "EXTERNAL" },
    expect: "replaced",
  },
  {
    rule: "RegionBackendService protocol",
    type: T.backendService,
    inputs: passthrough(),
    change: { protocol: "UDP" },
    expect: "updated in place",
  },
  {
    rule: "Firewall direction (ForceNew)",
    type: T.firewall,
    inputs: FW,
    change: { direction: "EGRESS", destinationRanges: ["10.0.0.0/8"], sourceRanges: null },
    expect: "replaced",
  },
  {
    rule: "Firewall network",
    type: T.firewall,
    inputs: FW,
    change: { network: "default" },
    expect: "updated in place",
  },
  // resource_compute_firewall.go schema: destination_ranges (Optional, Computed) and priority (Optional, Default 1000) have no ForceNew.
  {
    rule: "Firewall destinationRanges",
    type: T.firewall,
    inputs: FW,
    change: { destinationRanges: ["203.0.113.7"] },
    expect: "updated in place",
  },
  { rule: "Firewall priority", type: T.firewall, inputs: FW, change: { priority: 999 }, expect: "updated in place" },
  {
    rule: "ForwardingRule allowGlobalAccess",
    type: T.forwardingRule,
    inputs: internalRule(),
    change: { allowGlobalAccess: true },
    expect: "updated in place",
  },
  {
    rule: "ForwardingRule ipProtocol (ForceNew)",
    type: T.forwardingRule,
    inputs: internalRule(),
    change: { ipProtocol: "UDP" },
    expect: "replaced",
  },
  {
    rule: "ForwardingRule target",
    type: T.forwardingRule,
    setup: [
      [T.targetPool, TP],
      [T.targetPool, { ...TP, name: "tp-2" }],
    ],
    inputs: { ...regional, name: "fr", portRange: "80", target: "tp" },
    change: { target: "tp-2" },
    expect: "updated in place",
  },
  {
    rule: "RegionHealthCheck type change",
    type: T.healthCheck,
    inputs: { ...regional, name: "hc-2", httpHealthCheck: { port: 1 } },
    change: { httpHealthCheck: null, tcpHealthCheck: { port: 1 } },
    expect: "updated in place",
  },
  {
    rule: "TargetPool backupPool",
    type: T.targetPool,
    setup: [[T.targetPool, { ...TP, name: "backup" }]],
    inputs: TP,
    change: { backupPool: `regions/${REGION}/targetPools/backup` },
    expect: "updated in place",
  },
  {
    rule: "TargetPool sessionAffinity (ForceNew)",
    type: T.targetPool,
    inputs: TP,
    change: { sessionAffinity: "CLIENT_IP" },
    expect: "replaced",
  },
  {
    rule: "TargetPool description (ForceNew)",
    type: T.targetPool,
    inputs: TP,
    change: { description: "b" },
    expect: "replaced",
  },
  {
    rule: "Address purpose (ForceNew)",
    type: T.address,
    inputs: { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet", purpose: "GCE_ENDPOINT" },
    change: { purpose: "SHARED_LOADBALANCER_VIP" },
    expect: "replaced",
  },
];

/**
 * An input that is Optional + Computed in the provider's schema (kinds.ts `optionalComputed`, each
 * cited there): the program omitting it keeps the resource's value with no diff at all; a
 * different value is an update or a replacement as the field's ForceNew says.
 */
interface OptionalComputedRow {
  readonly type: string;
  readonly field: string;
  readonly setup?: ReadonlyArray<readonly [string, JsonObject]>;
  /** The resource as created, the field set. */
  readonly inputs: JsonObject;
  /** Another value of the field. */
  readonly other: Json;
  readonly expect: "replaced" | "updated in place";
}

const NODE_1 = `zones/${REGION}-a/instances/node-1`;
const INTERNAL_ADDRESS = { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet" };
const ROUTE = { project: PROJECT, name: "r", destRange: "10.64.0.0/24", network: "k8s-net", nextHopInstance: NODE_1 };
const REGION_HC = { ...regional, name: "hc-2", httpHealthCheck: { port: 1 } };
const TP_SETUP: ReadonlyArray<readonly [string, JsonObject]> = [[T.targetPool, TP]];

const OPTIONAL_COMPUTED_ROWS: OptionalComputedRow[] = [
  {
    type: T.address,
    field: "address",
    inputs: { ...INTERNAL_ADDRESS, address: "10.130.0.50" },
    other: "10.130.0.51",
    expect: "replaced",
  },
  {
    type: T.address,
    field: "deletionPolicy",
    inputs: { ...regional, name: "a", deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.address,
    field: "networkTier",
    inputs: { ...regional, name: "a", networkTier: "STANDARD" },
    other: "PREMIUM",
    expect: "replaced",
  },
  {
    type: T.address,
    field: "prefixLength",
    inputs: { ...INTERNAL_ADDRESS, prefixLength: 32 },
    other: 30,
    expect: "replaced",
  },
  {
    type: T.address,
    field: "purpose",
    inputs: { ...INTERNAL_ADDRESS, purpose: "SHARED_LOADBALANCER_VIP" },
    other: "GCE_ENDPOINT",
    expect: "replaced",
  },
  { type: T.address, field: "subnetwork", inputs: INTERNAL_ADDRESS, other: "other-subnet", expect: "replaced" },
  {
    type: T.forwardingRule,
    field: "deletionPolicy",
    inputs: internalRule({ deletionPolicy: "PREVENT" }),
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.forwardingRule,
    field: "ipAddress",
    inputs: internalRule({ ipAddress: "10.130.0.60" }),
    other: "10.130.0.61",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "ipProtocol",
    inputs: internalRule({ ipProtocol: "UDP" }),
    other: "TCP",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "ipVersion",
    inputs: internalRule({ ipVersion: "IPV4" }),
    other: "IPV6",
    expect: "replaced",
  },
  { type: T.forwardingRule, field: "network", inputs: internalRule(), other: "default", expect: "replaced" },
  // What GCE reads back on the stock CCM's internal rules (which send no networkTier).
  {
    type: T.forwardingRule,
    field: "networkTier",
    inputs: internalRule({ networkTier: "PREMIUM" }),
    other: "STANDARD",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "portRange",
    setup: TP_SETUP,
    inputs: { ...regional, name: "fr", portRange: "80-90", target: "tp" },
    other: "80-91",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "serviceDirectoryRegistrations",
    inputs: internalRule({ serviceDirectoryRegistrations: [{ namespace: "ns", service: "svc" }] }),
    other: [{ namespace: "ns-2", service: "svc" }],
    expect: "replaced",
  },
  { type: T.forwardingRule, field: "subnetwork", inputs: internalRule(), other: "other-subnet", expect: "replaced" },
  {
    type: T.backendService,
    field: "cdnPolicy",
    inputs: passthrough({ cdnPolicy: { cacheMode: "CACHE_ALL_STATIC" } }),
    other: { cacheMode: "USE_ORIGIN_HEADERS" },
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "deletionPolicy",
    inputs: passthrough({ deletionPolicy: "PREVENT" }),
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "iap",
    inputs: passthrough({ iap: { enabled: false } }),
    other: { enabled: true },
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "logConfig",
    inputs: passthrough({ logConfig: { enable: true } }),
    other: { enable: false },
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "portName",
    inputs: passthrough({ portName: "http" }),
    other: "https",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "protocol",
    inputs: passthrough({ protocol: "UDP" }),
    other: "TCP",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "sessionAffinity",
    inputs: passthrough({ sessionAffinity: "CLIENT_IP" }),
    other: "NONE",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "timeoutSec",
    inputs: passthrough({ timeoutSec: 30 }),
    other: 40,
    expect: "updated in place",
  },
  {
    type: T.targetPool,
    field: "deletionPolicy",
    inputs: { ...TP, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.targetPool,
    field: "instances",
    inputs: { ...TP, instances: [NODE_1] },
    other: [`zones/${REGION}-a/instances/node-2`],
    expect: "updated in place",
  },
  {
    type: T.healthCheck,
    field: "deletionPolicy",
    inputs: { ...REGION_HC, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.healthCheck,
    field: "logConfig",
    inputs: { ...REGION_HC, logConfig: { enable: true } },
    other: { enable: false },
    expect: "updated in place",
  },
  {
    type: T.globalHealthCheck,
    field: "deletionPolicy",
    inputs: { project: PROJECT, name: "ghc-2", httpHealthCheck: { port: 1 }, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.globalHealthCheck,
    field: "logConfig",
    inputs: { project: PROJECT, name: "ghc-2", httpHealthCheck: { port: 1 }, logConfig: { enable: true } },
    other: { enable: false },
    expect: "updated in place",
  },
  {
    type: T.httpHealthCheck,
    field: "deletionPolicy",
    inputs: { project: PROJECT, name: "legacy-2", deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.instanceGroup,
    field: "deletionPolicy",
    inputs: { ...IG, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.instanceGroup,
    field: "instances",
    inputs: { ...IG, instances: [NODE_1] },
    other: [`zones/${REGION}-a/instances/node-1`, `zones/${REGION}-a/instances/node-2`],
    expect: "updated in place",
  },
  {
    type: T.instanceGroup,
    field: "network",
    inputs: IG,
    other: `projects/${PROJECT}/global/networks/default`,
    expect: "replaced",
  },
  {
    type: T.firewall,
    field: "deletionPolicy",
    inputs: { ...FW, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.firewall,
    field: "destinationRanges",
    inputs: { ...FW, destinationRanges: ["203.0.113.7"] },
    other: ["203.0.113.8"],
    expect: "updated in place",
  },
  {
    type: T.firewall,
    field: "direction",
    inputs: { ...FW, sourceRanges: null, direction: "EGRESS", destinationRanges: ["10.0.0.0/8"] },
    other: "INGRESS",
    expect: "replaced",
  },
  {
    type: T.firewall,
    field: "enableLogging",
    inputs: { ...FW, enableLogging: true },
    other: false,
    expect: "updated in place",
  },
  {
    type: T.route,
    field: "deletionPolicy",
    inputs: { ...ROUTE, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.route,
    field: "nextHopInstanceZone",
    inputs: { ...ROUTE, nextHopInstanceZone: `${REGION}-a` },
    other: `${REGION}-b`,
    expect: "replaced",
  },
  {
    type: T.route,
    field: "nextHopIp",
    inputs: { project: PROJECT, name: "r", destRange: "10.64.0.0/24", network: "k8s-net", nextHopIp: "10.130.0.9" },
    other: "10.130.0.10",
    expect: "replaced",
  },
];

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function gceError(fn: () => unknown): GceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GceError) return e;
    throw e;
  }
  assert.fail("expected a GceError");
}

describe("GCE emulator rules (one row per rule)", () => {
  describe("create: accepted or refused with GCE's message", () => {
    for (const row of CREATE_ROWS) {
      it(row.rule, () => {
        const state = world();
        for (const [type, inputs] of row.setup ?? []) state.create(type, inputs);
        if (row.expect === "accepted") {
          assert.equal(state.create(row.type, row.inputs).name, row.inputs.name);
        } else {
          const e = gceError(() => state.create(row.type, row.inputs));
          assert.deepEqual([e.status, e.message], row.expect);
        }
      });
    }
  });

  describe("IPv6 allocation: /96 ranges of the dual-stack subnet's /64, named by their first address", () => {
    it("reserved and ephemeral IPv6 IPs come one after the other from the subnet, never twice", () => {
      const state = world();
      state.create(T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" }));
      const reserved = state.create(T.address, {
        ...regional,
        name: "v6",
        addressType: "EXTERNAL",
        ipVersion: "IPV6",
        ipv6EndpointType: "NETLB",
        subnetwork: "v6-ext",
      });
      const onAddress = state.create(T.forwardingRule, {
        ...regional,
        name: "fr6",
        ipVersion: "IPV6",
        ports: ["80"],
        subnetwork: "v6-ext",
        ipAddress: `regions/${REGION}/addresses/v6`,
        backendService: `regions/${REGION}/backendServices/bs`,
      });
      const ephemeral = state.create(T.forwardingRule, {
        ...regional,
        name: "fr6b",
        ipVersion: "IPV6",
        ports: ["80"],
        subnetwork: "v6-ext",
        backendService: `regions/${REGION}/backendServices/bs`,
      });
      const internal = state.create(T.address, {
        ...regional,
        name: "v6i",
        addressType: "INTERNAL",
        ipVersion: "IPV6",
        subnetwork: "v6-int",
        address: "FD20:0:0:1:0:9:0:0",
      });
      assert.deepEqual(
        [
          reserved.properties.address,
          onAddress.properties.ipAddress,
          ephemeral.properties.ipAddress,
          internal.properties.address,
        ],
        ["2600:1900:4000:7f3:0:1::", "2600:1900:4000:7f3:0:1::", "2600:1900:4000:7f3:0:2::", "fd20::1:0:9:0:0"],
      );
    });
    it("a subnetwork seeded half dual-stack is a test error", () => {
      const state = world();
      assert.throws(
        () =>
          state.putNetwork({
            name: "bad",
            autoCreateSubnetworks: false,
            subnetworks: [{ name: "half", ipCidrRange: "10.170.0.0/20", stackType: "IPV4_IPV6" }],
          }),
        {
          message:
            "putNetwork: subnetwork half: a dual-stack subnet (stackType IPV4_IPV6) needs an ipv6AccessType and an IPv6 /64 ipv6CidrRange, and only it has them",
        },
      );
    });
  });

  describe("change: replaced or updated in place, as the provider's ForceNew says", () => {
    for (const row of DIFF_ROWS) {
      it(`${row.rule}: ${row.expect}`, () => {
        const state = world();
        const api = new ProviderApi(state);
        for (const [type, inputs] of row.setup ?? []) state.create(type, inputs);
        const created = api.create({ type: row.type, inputs: row.inputs });
        const news: JsonObject = { ...row.inputs, ...row.change };
        const diff = api.diff({ type: row.type, id: created.id, olds: created.outputs, oldInputs: row.inputs, news });
        assert.equal(diff.changes, true);
        assert.equal(
          diff.replaces.length > 0 ? "replaced" : "updated in place",
          row.expect,
          `replaces: ${JSON.stringify(diff.replaces)}`,
        );
        if (row.expect === "updated in place") {
          const updated = api.update({ type: row.type, id: created.id, olds: created.outputs, news });
          for (const [field, value] of Object.entries(row.change)) {
            if (value !== null && typeof value !== "string") assert.deepEqual(updated.outputs[field], value, field);
          }
        }
      });
    }
  });

  describe("Optional + Computed inputs: omitted keeps the resource's value, no diff (the provider's schema)", () => {
    for (const row of OPTIONAL_COMPUTED_ROWS) {
      it(`${row.type.split(":").pop() ?? row.type}.${row.field}: omitted → no diff, value kept; another value → ${row.expect}`, () => {
        const state = world();
        const api = new ProviderApi(state);
        for (const [type, inputs] of row.setup ?? []) state.create(type, inputs);
        const created = api.create({ type: row.type, inputs: row.inputs });
        assert.notEqual(created.outputs[row.field] ?? null, null, `${row.field} is set on the resource`);
        const { [row.field]: _omitted, ...news } = row.inputs;
        assert.deepEqual(
          api.diff({ type: row.type, id: created.id, olds: created.outputs, oldInputs: row.inputs, news }),
          { changes: false, diffs: [], replaces: [], deleteBeforeReplace: false },
        );
        const updated = api.update({ type: row.type, id: created.id, olds: created.outputs, news });
        assert.deepEqual(
          updated.outputs[row.field],
          created.outputs[row.field],
          `${row.field} kept by an update that omits it`,
        );
        const changed = api.diff({
          type: row.type,
          id: created.id,
          olds: created.outputs,
          oldInputs: row.inputs,
          news: { ...row.inputs, [row.field]: row.other },
        });
        assert.deepEqual(
          [changed.diffs, changed.replaces.length > 0 ? "replaced" : "updated in place"],
          [[row.field], row.expect],
        );
      });
    }
  });

  describe("inputs the provider accepts", () => {
    it("http2HealthCheck on a RegionHealthCheck and ipv6EndpointType on an Address pass check", () => {
      const api = new ProviderApi(world());
      assert.deepEqual(
        api.check({
          type: T.healthCheck,
          urn: "urn:x::hc",
          olds: {},
          news: { ...regional, name: "h2", http2HealthCheck: { port: 443 } },
        }).failures,
        [],
      );
      assert.deepEqual(
        api.check({
          type: T.address,
          urn: "urn:x::a",
          olds: {},
          news: { ...regional, name: "a6", ipv6EndpointType: "NETLB" },
        }).failures,
        [],
      );
    });

    it("internal addresses and ephemeral internal forwarding-rule IPs come from their subnetwork's range", () => {
      const state = world();
      // node-1 and node-3 (k8s-net, us-central1) hold 10.130.0.2 and 10.130.0.3.
      assert.equal(
        state.create(T.address, { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet" })
          .properties.address,
        "10.130.0.4",
      );
      assert.equal(state.create(T.forwardingRule, internalRule()).properties.ipAddress, "10.130.0.5");
    });
  });
});

/**
 * Whose an IP is: promotion of an ephemeral IP to a static address, a reserved IP that outlives
 * its rules, and ephemeral IPs that go back to Google's pool when their rule is deleted (sources
 * beside requireReservableIp, remove and `released` in state.ts).
 */
describe("GCE emulator rules: IP ownership (one row per rule)", () => {
  const tiny: NetworkSpec = {
    name: "tiny-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "tiny", ipCidrRange: "10.150.0.0/29" }],
  };
  const tinyRule = (name: string): JsonObject => internalRule({ name, network: "tiny-net", subnetwork: "tiny" });
  const ROWS: ReadonlyArray<{ rule: string; run: () => void }> = [
    {
      rule: "an EXTERNAL address naming the ephemeral IP of a rule of its project, region and tier promotes it: the rule keeps the IP, now static",
      run: () => {
        const state = world();
        const ip = state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" }).properties.ipAddress;
        assert.equal(ip, "203.0.113.1");
        const address = state.create(T.address, { ...regional, name: "kept", address: "203.0.113.1" });
        assert.deepEqual(
          [address.properties.address, address.properties.addressType, address.properties.networkTier],
          ["203.0.113.1", "EXTERNAL", "PREMIUM"],
        );
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          "203.0.113.1",
        );
      },
    },
    {
      rule: "deleting an address a forwarding rule uses releases the reservation: the rule keeps the IP as ephemeral, which can be promoted again",
      run: () => {
        const state = world();
        const ip = state.create(T.address, { ...regional, name: "lb" }).properties.address;
        state.create(T.forwardingRule, {
          ...regional,
          name: "fr",
          portRange: "80",
          ipAddress: `regions/${REGION}/addresses/lb`,
        });
        state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" });
        assert.equal(state.find({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" }), undefined);
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          ip,
        );
        // Ephemeral now: reserving it again by naming it is a promotion, the rule unchanged.
        assert.equal(state.create(T.address, { ...regional, name: "lb", address: String(ip) }).properties.address, ip);
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          ip,
        );
      },
    },
    {
      rule: "deleting an INTERNAL address a forwarding rule uses: the rule keeps the IP as ephemeral",
      run: () => {
        const state = world();
        const ip = state.create(T.address, {
          ...regional,
          name: "ilb",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
        }).properties.address;
        state.create(T.forwardingRule, internalRule({ ipAddress: `regions/${REGION}/addresses/ilb` }));
        state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "ilb" });
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          ip,
        );
      },
    },
    {
      rule: "an address released under its rule, then the rule deleted: the IP goes back to Google's pool and cannot be reserved by naming it",
      run: () => {
        const state = world();
        state.create(T.address, { ...regional, name: "lb" });
        state.create(T.forwardingRule, {
          ...regional,
          name: "fr",
          portRange: "80",
          ipAddress: `regions/${REGION}/addresses/lb`,
        });
        state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" });
        state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" });
        const e = gceError(() => state.create(T.address, { ...regional, name: "lb", address: "203.0.113.1" }));
        assert.deepEqual(
          [e.status, e.message],
          [
            400,
            "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
          ],
        );
      },
    },
    {
      rule: "an INTERNAL address naming the ephemeral IP of a rule in its subnetwork promotes it",
      run: () => {
        const state = world();
        const ip = state.create(T.forwardingRule, internalRule()).properties.ipAddress;
        assert.equal(ip, "10.130.0.4");
        const address = state.create(T.address, {
          ...regional,
          name: "kept",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
          address: "10.130.0.4",
        });
        assert.equal(address.properties.address, "10.130.0.4");
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          "10.130.0.4",
        );
      },
    },
    {
      rule: "a reserved address keeps its IP when its rule is deleted: the next rule on it has the same IP",
      run: () => {
        const state = world();
        const ip = state.create(T.address, { ...regional, name: "lb" }).properties.address;
        state.create(T.forwardingRule, {
          ...regional,
          name: "fr",
          portRange: "80",
          ipAddress: `regions/${REGION}/addresses/lb`,
        });
        state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" });
        assert.equal(
          state.get({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" }).properties.address,
          ip,
        );
        assert.equal(
          state.create(T.forwardingRule, {
            ...regional,
            name: "fr",
            portRange: "80",
            ipAddress: `regions/${REGION}/addresses/lb`,
          }).properties.ipAddress,
          ip,
        );
      },
    },
    {
      rule: "an ephemeral INTERNAL IP released by a deleted rule is never allocated again; the subnet runs out first",
      run: () => {
        const state = world();
        state.putNetwork(tiny);
        // 10.150.0.0/29: usable 10.150.0.2 to 10.150.0.5.
        assert.equal(state.create(T.forwardingRule, tinyRule("a")).properties.ipAddress, "10.150.0.2");
        state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "a" });
        assert.deepEqual(
          ["b", "c", "d"].map((n) => state.create(T.forwardingRule, tinyRule(n)).properties.ipAddress),
          ["10.150.0.3", "10.150.0.4", "10.150.0.5"],
        );
        const e = gceError(() => state.create(T.forwardingRule, tinyRule("e")));
        assert.deepEqual([e.status, e.message], [400, "IP space of the subnetwork tiny pool is exhausted"]);
        // Naming a free internal IP of the subnetwork is allowed (reserve-static-internal-ip-address).
        assert.equal(
          state.create(T.address, {
            ...regional,
            name: "named",
            addressType: "INTERNAL",
            subnetwork: "tiny",
            address: "10.150.0.2",
          }).properties.address,
          "10.150.0.2",
        );
      },
    },
    {
      rule: "an ephemeral EXTERNAL IP released by a deleted rule is never allocated again, nor reservable by naming it",
      run: () => {
        const state = world();
        assert.equal(
          state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" }).properties.ipAddress,
          "203.0.113.1",
        );
        state.deleteOutOfBand({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" });
        // The pool holds 4,856 IPs (the three RFC 5737 ranges, then 198.18.0.0/20 of RFC 2544's): 4,855 more allocations use every other one, then it is exhausted.
        const ips = Array.from(
          { length: 4855 },
          (_, i) => state.create(T.address, { ...regional, name: `a-${i}` }).properties.address,
        );
        assert.equal(ips.includes("203.0.113.1"), false);
        assert.deepEqual(
          [new Set(ips).size, ips[0], ips[761], ips[4854]],
          [4855, "203.0.113.2", "198.18.0.1", "198.18.15.254"],
        );
        const e = gceError(() => state.create(T.address, { ...regional, name: "one-more" }));
        assert.deepEqual([e.status, e.message], [400, "IP space of the EXTERNAL pool is exhausted"]);
        const named = gceError(() => state.create(T.address, { ...regional, name: "named", address: "203.0.113.1" }));
        assert.deepEqual(
          [named.status, named.message],
          [
            400,
            "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
          ],
        );
      },
    },
    {
      rule: "a global health check a backend service uses cannot be deleted: 400 resourceInUseByAnotherResource",
      run: () => {
        const state = world();
        state.create(T.backendService, passthrough({ healthChecks: GLOBAL_HC }));
        const e = gceError(() =>
          state.delete({ kind: "globalHealthChecks", project: PROJECT, scope: "global", name: "ghc" }),
        );
        assert.deepEqual(
          [e.status, e.reason, e.message],
          [
            400,
            "resourceInUseByAnotherResource",
            `The health_check resource 'projects/${PROJECT}/global/healthChecks/ghc' is already being used by 'projects/${PROJECT}/regions/${REGION}/backendServices/bs'`,
          ],
        );
        state.delete({ kind: "backendServices", project: PROJECT, scope: REGION, name: "bs" });
        state.delete({ kind: "globalHealthChecks", project: PROJECT, scope: "global", name: "ghc" });
      },
    },
  ];
  for (const row of ROWS) it(row.rule, row.run);
});

/**
 * Compute deletes over the HTTP face (the leak detector's `dccm gc` calls them). Sources: the
 * Compute API reference of each `{collection}.delete` (DELETE on the resource, answered with an
 * Operation; query parameter `requestId`: "the server will know to ignore the request if it has
 * already been completed", "a valid UUID with the exception that zero UUID is not supported"), the
 * Operation resource (status PENDING, RUNNING or DONE; targetLink), and GCE's 400
 * resourceInUseByAnotherResource for a resource another one uses (state.ts, GceState.delete).
 */
describe("GCE emulator rules: Compute DELETE over HTTP (one row per rule)", function () {
  let gce: GceEmulator;
  const P = `projects/${PROJECT}/regions/${REGION}`;
  const url = (rel: string, query = ""): string => `${gce.computeEndpoint}${rel}${query}`;
  const call = async (method: string, rel: string, query = ""): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(url(rel, query), { method });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };
  const REQUEST_ID = "6f1c2b3a-4d5e-4f60-8172-93a4b5c6d7e8";
  const post = async (rel: string, body: JsonObject, query = ""): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(url(rel, query), {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };
  const withoutTimes = (op: JsonObject): JsonObject => {
    const { id: _id, targetId: _targetId, insertTime: _i, startTime: _s, endTime: _e, ...rest } = op;
    return rest;
  };

  beforeEach(async () => {
    gce = await startGceEmulator({ networks: NETWORKS });
    gce.state.create(T.address, { ...regional, name: "lb" });
    gce.state.create(T.forwardingRule, { ...regional, name: "lb", ipAddress: `${P}/addresses/lb`, portRange: "80" });
  });
  afterEach(async () => gce?.stop());

  const ROWS: ReadonlyArray<{ rule: string; run: () => Promise<void> }> = [
    {
      rule: "DELETE answers an Operation (DONE in the emulator) naming its target",
      run: async () => {
        const { status, body } = await call("DELETE", `${P}/forwardingRules/lb`);
        assert.equal(status, 200);
        const { id: _id, targetId: _targetId, insertTime: _i, startTime: _s, endTime: _e, ...rest } = body;
        assert.deepEqual(rest, {
          kind: "compute#operation",
          name: "operation-1",
          operationType: "delete",
          targetLink: `${gce.endpoint}/compute/v1/${P}/forwardingRules/lb`,
          status: "DONE",
          progress: 100,
          selfLink: `${gce.endpoint}/compute/v1/${P}/operations/operation-1`,
          region: `${gce.endpoint}/compute/v1/${P}`,
        });
        assert.deepEqual(
          gce.listResources().filter((r) => r.kind === "forwardingRules"),
          [],
        );
      },
    },
    {
      rule: "DELETE of a resource another uses: 400 resourceInUseByAnotherResource naming the user; it stays",
      run: async () => {
        gce.state.create(T.httpHealthCheck, { project: PROJECT, name: "legacy" });
        gce.state.create(T.targetPool, { ...regional, name: "tp", healthChecks: "legacy" });
        const G = `projects/${PROJECT}/global`;
        const { status, body } = await call("DELETE", `${G}/httpHealthChecks/legacy`);
        assert.deepEqual(
          [status, body],
          [
            400,
            {
              error: {
                code: 400,
                message: `The http_health_check resource '${G}/httpHealthChecks/legacy' is already being used by '${P}/targetPools/tp'`,
                errors: [{ reason: "resourceInUseByAnotherResource" }],
              },
            },
          ],
        );
        assert.equal(gce.listResources().filter((r) => r.kind === "httpHealthChecks").length, 1);
      },
    },
    {
      rule: "DELETE of an address a forwarding rule uses: released (DONE), the rule keeps the IP as ephemeral",
      run: async () => {
        const ip = gce.listResources().find((r) => r.kind === "addresses")?.properties.address;
        assert.equal(ip, "203.0.113.1");
        assert.equal((await call("DELETE", `${P}/addresses/lb`)).status, 200);
        assert.deepEqual(
          gce
            .listResources()
            .map((r) => [r.kind, r.name, r.kind === "forwardingRules" ? r.properties.ipAddress : null]),
          [["forwardingRules", "lb", "203.0.113.1"]],
        );
      },
    },
    {
      rule: "DELETE of an address out of band (/emulator/resources): the same, the rule keeps the IP as ephemeral",
      run: async () => {
        const res = await fetch(`${gce.endpoint}/emulator/resources/addresses/${PROJECT}/${REGION}/lb`, {
          method: "DELETE",
        });
        assert.equal(res.status, 200);
        assert.deepEqual(
          gce
            .listResources()
            .map((r) => [r.kind, r.name, r.kind === "forwardingRules" ? r.properties.ipAddress : null]),
          [["forwardingRules", "lb", "203.0.113.1"]],
        );
      },
    },
    {
      rule: "DELETE of a resource that does not exist: 404 naming it",
      run: async () => {
        const { status, body } = await call("DELETE", `${P}/targetPools/nothing`);
        assert.deepEqual(
          [status, body],
          [
            404,
            {
              error: {
                code: 404,
                message: `The resource '${P}/targetPools/nothing' was not found`,
                errors: [{ reason: "notFound" }],
              },
            },
          ],
        );
      },
    },
    {
      rule: "a repeated requestId gets the first request's operation back, and nothing is done twice",
      run: async () => {
        const first = await call("DELETE", `${P}/forwardingRules/lb`, `?requestId=${REQUEST_ID}`);
        gce.state.create(T.forwardingRule, {
          ...regional,
          name: "lb",
          ipAddress: `${P}/addresses/lb`,
          portRange: "80",
        });
        const again = await call("DELETE", `${P}/forwardingRules/lb`, `?requestId=${REQUEST_ID}`);
        assert.deepEqual(again, first);
        assert.equal(gce.listResources().filter((r) => r.kind === "forwardingRules").length, 1);
      },
    },
    {
      rule: "a requestId that is not a UUID, or the zero UUID: 400",
      run: async () => {
        for (const id of ["retry-1", "00000000-0000-0000-0000-000000000000"]) {
          const { status, body } = await call("DELETE", `${P}/forwardingRules/lb`, `?requestId=${id}`);
          assert.deepEqual(
            [status, body],
            [
              400,
              {
                error: {
                  code: 400,
                  message: `Invalid value for field 'requestId': '${id}'. The request ID must be a valid UUID other than the zero UUID.`,
                  errors: [{ reason: "invalid" }],
                },
              },
            ],
          );
        }
      },
    },
    {
      rule: "regionOperations get and wait return the operation; one never returned is 404",
      run: async () => {
        const { body } = await call("DELETE", `${P}/forwardingRules/lb`);
        assert.deepEqual(await call("GET", `${P}/operations/operation-1`), { status: 200, body });
        assert.deepEqual(await call("POST", `${P}/operations/operation-1/wait`), { status: 200, body });
        assert.equal((await call("GET", `${P}/operations/operation-9`)).status, 404);
      },
    },
    {
      rule: "POST addresses (addresses.insert) answers a DONE insert Operation; the address gets an IP",
      run: async () => {
        const { status, body } = await post(`${P}/addresses`, { name: "new", description: "d" });
        assert.equal(status, 200);
        assert.deepEqual(withoutTimes(body), {
          kind: "compute#operation",
          name: "operation-1",
          operationType: "insert",
          targetLink: `${gce.endpoint}/compute/v1/${P}/addresses/new`,
          status: "DONE",
          progress: 100,
          selfLink: `${gce.endpoint}/compute/v1/${P}/operations/operation-1`,
          region: `${gce.endpoint}/compute/v1/${P}`,
        });
        const created = gce.listResources().find((r) => r.kind === "addresses" && r.name === "new");
        assert.deepEqual(
          [
            created?.properties.address,
            created?.properties.addressType,
            created?.properties.networkTier,
            created?.properties.description,
          ],
          ["203.0.113.2", "EXTERNAL", "PREMIUM", "d"],
        );
      },
    },
    {
      rule: "POST addresses naming the ephemeral IP of a rule of the project and region promotes it; the rule keeps it",
      run: async () => {
        const ip = gce.state.create(T.forwardingRule, { ...regional, name: "eph", portRange: "80" }).properties
          .ipAddress;
        assert.equal(ip, "203.0.113.2");
        assert.equal(
          (await post(`${P}/addresses`, { name: "eph", address: "203.0.113.2", networkTier: "PREMIUM" })).status,
          200,
        );
        assert.deepEqual(
          gce
            .listResources()
            .filter((r) => r.name === "eph")
            .map((r) => [r.kind, r.kind === "addresses" ? r.properties.address : r.properties.ipAddress]),
          [
            ["addresses", "203.0.113.2"],
            ["forwardingRules", "203.0.113.2"],
          ],
        );
      },
    },
    {
      rule: "POST addresses with a repeated requestId gets the first operation back and inserts once",
      run: async () => {
        const first = await post(`${P}/addresses`, { name: "once" }, `?requestId=${REQUEST_ID}`);
        gce.deleteOutOfBand("addresses", "once");
        const again = await post(`${P}/addresses`, { name: "once" }, `?requestId=${REQUEST_ID}`);
        assert.deepEqual(again, first);
        assert.equal(gce.listResources().filter((r) => r.name === "once").length, 0);
      },
    },
    {
      rule: "POST addresses with a taken name: 409 alreadyExists",
      run: async () => {
        assert.deepEqual(await post(`${P}/addresses`, { name: "lb" }), {
          status: 409,
          body: {
            error: {
              code: 409,
              message: `The resource '${P}/addresses/lb' already exists`,
              errors: [{ reason: "alreadyExists" }],
            },
          },
        });
      },
    },
    {
      rule: "POST addresses with an INTERNAL IP another address holds: the operation fails with IP_IN_USE_BY_ANOTHER_RESOURCE (HTTP 409)",
      run: async () => {
        const sub = `${P}/subnetworks/k8s-subnet`;
        assert.equal(
          (
            await post(`${P}/addresses`, {
              name: "int-1",
              addressType: "INTERNAL",
              subnetwork: sub,
              address: "10.130.0.9",
            })
          ).status,
          200,
        );
        const { status, body } = await post(`${P}/addresses`, {
          name: "int-2",
          addressType: "INTERNAL",
          subnetwork: sub,
          address: "10.130.0.9",
        });
        assert.equal(status, 200);
        assert.deepEqual(
          [body.status, body.operationType, body.error, body.httpErrorStatusCode, body.httpErrorMessage],
          [
            "DONE",
            "insert",
            {
              errors: [
                {
                  code: "IP_IN_USE_BY_ANOTHER_RESOURCE",
                  message: "IP '10.130.0.9' is already being used by another resource.",
                },
              ],
            },
            409,
            "CONFLICT",
          ],
        );
        assert.equal(gce.listResources().filter((r) => r.name === "int-2").length, 0);
      },
    },
    {
      rule: "POST addresses with a field an Address does not have: 400",
      run: async () => {
        assert.deepEqual(await post(`${P}/addresses`, { name: "x", IPAddress: "203.0.113.9" }), {
          status: 400,
          body: {
            error: {
              code: 400,
              message: `Invalid JSON payload received. Unknown name "IPAddress" at 'resource': Cannot find field.`,
              errors: [{ reason: "invalid" }],
            },
          },
        });
      },
    },
    {
      rule: "global health checks: get, list and delete at global/healthChecks; in use by a backend service: 400",
      run: async () => {
        const G = `projects/${PROJECT}/global/healthChecks`;
        gce.insertOutOfBand("globalHealthChecks", {
          name: "k8s-c1-node",
          httpHealthCheck: { port: 10256, requestPath: "/healthz" },
        });
        gce.insertOutOfBand(
          "backendServices",
          passthrough({ name: "bs", network: "k8s-net", healthChecks: `${gce.endpoint}/compute/v1/${G}/k8s-c1-node` }),
        );
        const got = await call("GET", `${G}/k8s-c1-node`);
        assert.deepEqual(
          [got.status, got.body.kind, got.body.type, got.body.selfLink, got.body.region],
          [200, "compute#healthCheck", "HTTP", `${gce.endpoint}/compute/v1/${G}/k8s-c1-node`, undefined],
        );
        const listed = await call("GET", G);
        assert.deepEqual(
          Array.isArray(listed.body.items) ? listed.body.items.map((i) => (isObject(i) ? i.name : null)) : null,
          ["k8s-c1-node"],
        );
        assert.deepEqual((await call("GET", `${P}/healthChecks`)).body.items, undefined);
        const inUse = await call("DELETE", `${G}/k8s-c1-node`);
        assert.deepEqual(
          [inUse.status, inUse.body.error],
          [
            400,
            {
              code: 400,
              message: `The health_check resource '${G}/k8s-c1-node' is already being used by '${P}/backendServices/bs'`,
              errors: [{ reason: "resourceInUseByAnotherResource" }],
            },
          ],
        );
        assert.equal((await call("DELETE", `${P}/backendServices/bs`)).status, 200);
        assert.equal((await call("DELETE", `${G}/k8s-c1-node`)).status, 200);
        assert.equal(gce.calls()["DELETE /compute/v1/projects/{project}/global/healthChecks/{name}"], 2);
      },
    },
    {
      rule: "a delete fault fails the DELETE with the injected status",
      run: async () => {
        gce.injectFault({
          kind: "forwardingRules",
          name: "lb",
          operation: "delete",
          status: 503,
          message: "backend error",
        });
        assert.deepEqual(await call("DELETE", `${P}/forwardingRules/lb`), {
          status: 503,
          body: { error: { code: 503, message: "backend error", errors: [{ reason: "backendError" }] } },
        });
        assert.equal((await call("DELETE", `${P}/forwardingRules/lb`)).status, 200);
      },
    },
  ];
  for (const row of ROWS) it(row.rule, row.run);
});

describe("GCE emulator rules: instances per instance group (rules/instanceGroups.ts INSTANCE_GROUP_MAX_INSTANCES)", () => {
  const ZONE_A = `${REGION}-a`;
  const NET = `projects/${PROJECT}/global/networks/k8s-net`;
  function seeded(count: number, max?: number): GceState {
    const state = new GceState({
      endpoint: ENDPOINT,
      project: PROJECT,
      region: REGION,
      zones: [ZONE_A],
      networks: NETWORKS,
      ...(max !== undefined ? { instanceGroupMaxInstances: max } : {}),
    });
    for (let i = 0; i < count; i++)
      state.putInstance(PROJECT, ZONE_A, `node-${i}`, { networkInterfaces: [{ network: "k8s-net" }] });
    return state;
  }
  const members = (count: number): string[] => Array.from({ length: count }, (_, i) => `${ZONE_A}/node-${i}`);
  const group = (count: number): JsonObject => ({
    project: PROJECT,
    zone: ZONE_A,
    name: "ig",
    network: NET,
    instances: members(count),
  });

  it("the documented limit: 1000 instances are accepted, 1001 refused", () => {
    const state = seeded(1001);
    assert.equal(state.create(T.instanceGroup, group(1000)).properties.size, 1000);
    const e = gceError(() => state.create(T.instanceGroup, { ...group(1001), name: "ig-2" }));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [400, "limitExceeded", "Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource 'ig-2'. Limit: 1000.0"],
    );
  });

  it("a test's lower limit (instanceGroupMaxInstances: 2) holds on create and on update", () => {
    const state = seeded(3, 2);
    const created = state.create(T.instanceGroup, group(2));
    const e = gceError(() => state.create(T.instanceGroup, { ...group(3), name: "ig-3" }));
    assert.deepEqual(
      [e.status, e.message],
      [400, "Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource 'ig-3'. Limit: 2.0"],
    );
    const key = { kind: created.kind, project: created.project, scope: created.scope, name: created.name };
    const u = gceError(() => state.update(key, group(3)));
    assert.deepEqual(
      [u.status, u.message],
      [400, "Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource 'ig'. Limit: 2.0"],
    );
    assert.deepEqual(state.get(key).properties.size, 2);
  });
});

describe("GCE emulator rules: timing and limits (limits.ts, one row per rule)", () => {
  const ZONE_A = `${REGION}-a`;
  /** A state whose creates pass the quotas of `limits`. */
  function limited(quotas: ConstructorParameters<typeof GceLimits>[0]): GceState {
    const state = world();
    const limits = new GceLimits(quotas);
    state.setCreateGuard((key, properties, existing) => limits.checkQuota(key, properties, existing));
    return state;
  }
  /** A clock the test moves. */
  function clock(): { now: () => number; set: (ms: number) => void } {
    let t = 1_000_000;
    return { now: () => t, set: (ms) => (t = ms) };
  }

  it("STATIC_ADDRESSES: static external addresses per region up to the limit; one more is 403 quotaExceeded; internal ones and other regions do not count", () => {
    const state = limited({ quotas: { STATIC_ADDRESSES: 1 } });
    state.create(T.address, { ...regional, name: "a1" });
    state.create(T.address, { ...regional, name: "i1", addressType: "INTERNAL", subnetwork: "k8s-subnet" });
    state.create(T.address, { project: PROJECT, region: "europe-west1", name: "eu" });
    const e = gceError(() => state.create(T.address, { ...regional, name: "a2" }));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1."],
    );
    assert.equal(state.find({ kind: "addresses", project: PROJECT, scope: REGION, name: "a2" }), undefined);
  });

  it("INTERNAL_ADDRESSES counts static internal addresses per region", () => {
    const state = limited({ quotas: { INTERNAL_ADDRESSES: 1 } });
    state.create(T.address, { ...regional, name: "i1", addressType: "INTERNAL", subnetwork: "k8s-subnet" });
    const e = gceError(() =>
      state.create(T.address, { ...regional, name: "i2", addressType: "INTERNAL", subnetwork: "k8s-subnet" }),
    );
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'INTERNAL_ADDRESSES' exceeded. Limit: 1.0 in region us-central1."],
    );
  });

  it("ROUTES is a project quota: 'globally'", () => {
    const state = limited({ quotas: { ROUTES: 1 } });
    const route = (name: string, dest: string): JsonObject => ({
      project: PROJECT,
      name,
      network: "k8s-net",
      destRange: dest,
      nextHopInstance: "node-1",
      nextHopInstanceZone: ZONE_A,
    });
    state.create(T.route, route("r1", "10.4.0.0/24"));
    const e = gceError(() => state.create(T.route, route("r2", "10.4.1.0/24")));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [403, "quotaExceeded", "Quota 'ROUTES' exceeded. Limit: 1.0 globally."],
    );
  });

  it("a quota is counted against creates out of band too (another tool's resources use the project's quota)", () => {
    const state = limited({ quotas: { STATIC_ADDRESSES: 1 } });
    state.insertOutOfBand("addresses", { name: "theirs" });
    const e = gceError(() => state.create(T.address, { ...regional, name: "ours" }));
    assert.equal(e.message, "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1.");
  });

  it("rate quotas: a group's requests per interval, then 403 rateLimitExceeded with the per-minute message; each group counted apart; refilled at the next interval", () => {
    const c = clock();
    c.set(120_000);
    const limits = new GceLimits({ ratePerInterval: { Queries: 2, "Read requests": 1 }, now: c.now });
    limits.admit(PROJECT, "Queries");
    limits.admit(PROJECT, "Queries");
    limits.admit(PROJECT, "Read requests");
    limits.admit(PROJECT, "List requests");
    const e = gceError(() => limits.admit(PROJECT, "Queries"));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [
        403,
        "rateLimitExceeded",
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.",
      ],
    );
    assert.equal(
      gceError(() => limits.admit(PROJECT, "Read requests")).message.includes("'Read requests per minute'"),
      true,
    );
    limits.admit("other-project", "Queries");
    c.set(179_999);
    assert.equal(gceError(() => limits.admit(PROJECT, "Queries")).reason, "rateLimitExceeded");
    c.set(180_000);
    limits.admit(PROJECT, "Queries");
    assert.deepEqual(limits.counts(), { rateLimited: { Queries: 2, "Read requests": 1 }, quotaExceeded: {} });
  });

  it("rate quota groups: a get is a read, a list and listInstances are lists, operations get and wait are operation reads, the rest mutations", () => {
    const base = "/compute/v1/projects/{project}";
    const rows: ReadonlyArray<readonly [string, string, string | undefined]> = [
      ["GET", `${base}/regions/{region}/forwardingRules/{name}`, "Read requests"],
      ["GET", `${base}/zones/{zone}`, "Read requests"],
      ["GET", `${base}/regions/{region}/forwardingRules`, "List requests"],
      ["GET", `${base}/aggregated/instances`, "List requests"],
      ["POST", `${base}/zones/{zone}/instanceGroups/{name}/listInstances`, "List requests"],
      ["GET", `${base}/regions/{region}/operations/{operation}`, "Operation read requests"],
      ["POST", `${base}/global/operations/{operation}/wait`, "Operation read requests"],
      ["DELETE", `${base}/regions/{region}/addresses/{name}`, "Queries"],
      ["POST", `${base}/regions/{region}/addresses`, "Queries"],
      ["GET", "/emulator/resources", undefined],
    ];
    assert.deepEqual(
      rows.map(([m, p]) => restRateGroup(m, p)),
      rows.map(([, , g]) => g),
    );
  });

  it("operations: PENDING (progress 0, no endTime) for the first tenth of the kind's latency, then RUNNING, then DONE with endTime", () => {
    const c = clock();
    const limits = new GceLimits({ operationLatencyMs: { forwardingRules: 1000 }, now: c.now });
    const start = c.now();
    const op: JsonObject = {
      name: "operation-1",
      selfLink: "http://x/op/1",
      status: "DONE",
      progress: 100,
      endTime: "t",
    };
    const view = (at: number): Json[] => {
      c.set(start + at);
      const v = limits.operationView(op);
      return [v.status ?? null, v.progress ?? null, v.endTime ?? null];
    };
    assert.deepEqual(limits.operationStarted(op, "forwardingRules").status, "PENDING");
    assert.deepEqual(view(99), ["PENDING", 0, null]);
    assert.deepEqual(view(500), ["RUNNING", 50, null]);
    assert.deepEqual(view(1000), ["DONE", 100, new Date(start + 1000).toISOString()]);
    assert.deepEqual(
      limits.operationStarted({ selfLink: "http://x/op/2", status: "DONE" }, "addresses").status,
      "DONE",
    );
  });

  it("operations.wait returns DONE even when a timer fires before the wall clock reaches the end (Node's setTimeout may wake a millisecond early by Date.now)", async () => {
    const c = clock();
    const slept: number[] = [];
    const limits = new GceLimits({
      operationLatencyMs: { forwardingRules: 40 },
      now: c.now,
      sleep: async (ms) => {
        slept.push(ms);
        c.set(c.now() + Math.max(ms - 1, 1));
      },
    });
    const op = limits.operationStarted({ selfLink: "http://x/op/early", status: "DONE" }, "forwardingRules");
    assert.equal(op.status, "PENDING");
    await limits.waitFor("http://x/op/early");
    assert.deepEqual(
      [limits.operationView({ selfLink: "http://x/op/early", status: "DONE" }).status, slept],
      ["DONE", [40, 1]],
    );
  });

  it("REST: a DELETE answers a PENDING operation; operations.wait returns it DONE; the provider face answers after the operation's latency", async () => {
    const slept: number[] = [];
    const gce = await startGceEmulator({
      networks: NETWORKS,
      limits: {
        operationLatencyMs: { forwardingRules: 40, addresses: 5000 },
        sleep: (ms) => {
          slept.push(ms);
          return new Promise((resolve) => setTimeout(resolve, Math.min(ms, 50)));
        },
      },
    });
    try {
      const P = `projects/${PROJECT}/regions/${REGION}`;
      gce.state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" });
      const del = (await (
        await fetch(`${gce.computeEndpoint}${P}/forwardingRules/fr`, { method: "DELETE" })
      ).json()) as JsonObject;
      assert.deepEqual([del.status, del.progress, "endTime" in del], ["PENDING", 0, false]);
      const waited = (await (await fetch(`${String(del.selfLink)}/wait`, { method: "POST" })).json()) as JsonObject;
      assert.equal(waited.status, "DONE");
      slept.length = 0;
      const created = await fetch(`${gce.endpoint}/emulator/provider/create`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: T.address, inputs: { ...regional, name: "slow" } }),
      });
      assert.equal(created.status, 200);
      assert.deepEqual(slept, [5000]);
    } finally {
      await gce.stop();
    }
  });

  it("a rate-limited REST call is 403 rateLimitExceeded with Google's error body", async () => {
    const gce = await startGceEmulator({ networks: NETWORKS, limits: { ratePerInterval: { "List requests": 1 } } });
    try {
      const list = `${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}/addresses`;
      assert.equal((await fetch(list)).status, 200);
      const res = await fetch(list);
      assert.deepEqual(
        [res.status, await res.json()],
        [
          403,
          {
            error: {
              code: 403,
              message:
                "Quota exceeded for quota metric 'List requests' and limit 'List requests per minute' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.",
              errors: [{ reason: "rateLimitExceeded" }],
            },
          },
        ],
      );
      assert.deepEqual(gce.limits.counts(), { rateLimited: { "List requests": 1 }, quotaExceeded: {} });
    } finally {
      await gce.stop();
    }
  });

  it("a deleted VM leaves its unmanaged instance groups (size follows)", () => {
    const state = world();
    const NET = `projects/${PROJECT}/global/networks/k8s-net`;
    state.putInstance(PROJECT, ZONE_A, "node-4", { networkInterfaces: [{ network: "k8s-net" }] });
    state.create(T.instanceGroup, {
      project: PROJECT,
      zone: ZONE_A,
      name: "ig",
      network: NET,
      instances: [`${ZONE_A}/node-1`, `${ZONE_A}/node-4`],
    });
    state.deleteOutOfBand({ kind: "instances", project: PROJECT, scope: ZONE_A, name: "node-1" });
    const group = state.get({ kind: "instanceGroups", project: PROJECT, scope: ZONE_A, name: "ig" });
    assert.deepEqual(
      [group.properties.instances, group.properties.size],
      [[`${ENDPOINT}/compute/v1/projects/${PROJECT}/zones/${ZONE_A}/instances/node-4`], 1],
    );
  });
});

describe("GCE emulator rules: alias IP ranges, secondary ranges, instance statuses (one row per rule)", () => {
  const ZONE = `${REGION}-a`;
  const vpc: NetworkSpec = {
    name: "vpc-native",
    autoCreateSubnetworks: false,
    subnetworks: [
      {
        name: "nodes",
        ipCidrRange: "10.10.0.0/20",
        secondaryIpRanges: [
          { rangeName: "pods", ipCidrRange: "10.4.0.0/14" },
          { rangeName: "services", ipCidrRange: "10.8.0.0/20" },
        ],
      },
    ],
  };
  function vpcWorld(): GceState {
    return new GceState({ endpoint: ENDPOINT, project: PROJECT, region: REGION, zones: [ZONE], networks: [vpc] });
  }
  const withAlias = (ipCidrRange: string, subnetworkRangeName?: string) => ({
    networkInterfaces: [
      {
        network: "vpc-native",
        aliasIpRanges: [subnetworkRangeName === undefined ? { ipCidrRange } : { ipCidrRange, subnetworkRangeName }],
      },
    ],
  });
  const invalid = (message: string) => (err: unknown) =>
    err instanceof GceError && err.status === 400 && err.message === message;

  it("an alias range from a secondary range is on the interface as given, with its range name", () => {
    const state = vpcWorld();
    const nics = state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods")).properties
      .networkInterfaces as JsonObject[];
    assert.deepEqual(nics[0]?.aliasIpRanges, [{ ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" }]);
  });
  it("an alias range from the primary range has no range name; one address is a /32", () => {
    const state = vpcWorld();
    const nics = state.putInstance(PROJECT, ZONE, "n1", withAlias("10.10.8.9")).properties
      .networkInterfaces as JsonObject[];
    assert.deepEqual(nics[0]?.aliasIpRanges, [{ ipCidrRange: "10.10.8.9/32" }]);
  });
  it("a range name the subnet does not have is refused", () =>
    assert.throws(
      () => vpcWorld().putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pod")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].subnetworkRangeName': 'pod'. Subnetwork 'nodes' has no secondary range of that name.",
      ),
    ));
  it("a range outside its secondary range is refused", () =>
    assert.throws(
      () => vpcWorld().putInstance(PROJECT, ZONE, "n1", withAlias("10.8.1.0/24", "pods")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.8.1.0/24'. It is not within secondary range 'pods' 10.4.0.0/14 of subnetwork 'nodes'.",
      ),
    ));
  it("a range wider than its secondary range is refused", () =>
    assert.throws(
      () => vpcWorld().putInstance(PROJECT, ZONE, "n1", withAlias("10.8.0.0/12", "services")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.8.0.0/12'. It is not within secondary range 'services' 10.8.0.0/20 of subnetwork 'nodes'.",
      ),
    ));
  it("a range overlapping another instance's alias range is refused; re-seeding the same instance is not a clash", () => {
    const state = vpcWorld();
    state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods"));
    state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods"));
    assert.throws(
      () => state.putInstance(PROJECT, ZONE, "n2", withAlias("10.4.1.128/25", "pods")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.4.1.128/25'. It overlaps alias range 10.4.1.0/24 of instance 'n1'.",
      ),
    );
  });
  it("a primary-range alias holding the interface's own address is refused", () =>
    assert.throws(
      () =>
        vpcWorld().putInstance(PROJECT, ZONE, "n1", {
          networkInterfaces: [
            { network: "vpc-native", networkIP: "10.10.0.5", aliasIpRanges: [{ ipCidrRange: "10.10.0.0/29" }] },
          ],
        }),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.10.0.0/29'. It overlaps the interface's address 10.10.0.5.",
      ),
    ));
  it("secondary ranges overlapping the primary range or each other, or sharing a name, are a test error", () => {
    const state = vpcWorld();
    const sub = (secondaryIpRanges: { rangeName: string; ipCidrRange: string }[]): NetworkSpec => ({
      name: "bad",
      autoCreateSubnetworks: false,
      subnetworks: [{ name: "s", ipCidrRange: "10.20.0.0/20", secondaryIpRanges }],
    });
    assert.throws(() => state.putNetwork(sub([{ rangeName: "a", ipCidrRange: "10.20.4.0/24" }])), {
      message: "putNetwork: subnetwork s: secondary range a (10.20.4.0/24) overlaps 10.20.0.0/20",
    });
    assert.throws(
      () =>
        state.putNetwork(
          sub([
            { rangeName: "a", ipCidrRange: "10.32.0.0/14" },
            { rangeName: "b", ipCidrRange: "10.33.0.0/16" },
          ]),
        ),
      { message: "putNetwork: subnetwork s: secondary range b (10.33.0.0/16) overlaps 10.32.0.0/14" },
    );
    assert.throws(
      () =>
        state.putNetwork(
          sub([
            { rangeName: "a", ipCidrRange: "10.32.0.0/14" },
            { rangeName: "a", ipCidrRange: "10.40.0.0/14" },
          ]),
        ),
      { message: 'putNetwork: subnetwork s: secondary range name "a" must be a unique RFC 1035 name' },
    );
  });
  it("an instance status outside Compute's enum is refused; a stop keeps the interfaces and changes the status only", () => {
    const state = vpcWorld();
    assert.throws(
      () => state.putInstance(PROJECT, ZONE, "n1", { status: "STOPPED_BY_USER" }),
      invalid(
        "Invalid value for field 'resource.status': 'STOPPED_BY_USER'. Expected one of PROVISIONING, STAGING, RUNNING, STOPPING, STOPPED, SUSPENDING, SUSPENDED, REPAIRING, TERMINATED, DEPROVISIONING.",
      ),
    );
    const before = state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods"));
    const after = state.setInstanceStatus(PROJECT, ZONE, "n1", "TERMINATED");
    assert.deepEqual(after.properties, { ...before.properties, status: "TERMINATED" });
    assert.throws(
      () => state.setInstanceStatus(PROJECT, ZONE, "gone", "RUNNING"),
      (err: unknown) => err instanceof GceError && err.status === 404,
    );
  });
});

describe("GCE emulator rules: list filter grammar (filter.ts, one row per rule)", () => {
  const R = (over: JsonObject): JsonObject => ({
    name: "k8s-e2e-1",
    network: "http://gce.test/compute/v1/projects/p/global/networks/k8s-net",
    description: "k8s-node-route",
    priority: 1000,
    tags: ["a", "b"],
    ...over,
  });
  const ROWS: ReadonlyArray<{ rule: string; filter: string; resource: JsonObject; expect: boolean | string }> = [
    {
      rule: "eq: the literal is a regular expression matching the entire field",
      filter: "name eq k8s-e2e-.*",
      resource: R({}),
      expect: true,
    },
    { rule: "eq: a partial match is no match", filter: "name eq k8s", resource: R({}), expect: false },
    { rule: "eq: double-quoted literal", filter: 'name eq ".*"', resource: R({}), expect: true },
    { rule: "eq: single-quoted literal", filter: "name eq 'k8s-e2e-1'", resource: R({}), expect: true },
    {
      rule: "ne: holds when the regular expression does not match",
      filter: "name ne k8s-.*",
      resource: R({}),
      expect: false,
    },
    {
      rule: "ne: an absent field matches nothing, so ne holds",
      filter: "nextHopIp ne 10\\..*",
      resource: R({}),
      expect: true,
    },
    {
      rule: "eq: an IP literal's dots match themselves too (addresses.list by address)",
      filter: "address eq 203.0.113.7",
      resource: { address: "203.0.113.7" },
      expect: true,
    },
    {
      rule: "several parenthesized regular expressions must all hold (the stock CCM's routes list)",
      filter:
        "(name eq e2e-.*) (network eq http://gce.test/compute/v1/projects/p/global/networks/k8s-net) (description eq k8s-node-route)",
      resource: R({ name: "e2e-1" }),
      expect: true,
    },
    {
      rule: "one of several parenthesized expressions failing fails the filter",
      filter: "(name eq e2e-.*) (description eq other)",
      resource: R({ name: "e2e-1" }),
      expect: false,
    },
    { rule: "= compares exactly", filter: 'name = "k8s-e2e-1"', resource: R({}), expect: true },
    { rule: "= is no regular expression", filter: "name = k8s-.*", resource: R({}), expect: false },
    { rule: "!= holds for another value", filter: "name != other", resource: R({}), expect: true },
    { rule: "numbers compare as numbers", filter: "priority < 1001", resource: R({}), expect: true },
    { rule: "a list field matches when one element does", filter: "tags = b", resource: R({}), expect: true },
    { rule: ": matches a substring of a string field", filter: "description : node", resource: R({}), expect: true },
    { rule: ":* tests that a field is defined", filter: "nextHopIp:*", resource: R({}), expect: false },
    {
      rule: "nested fields by dotted path",
      filter: "httpHealthCheck.port = 10256",
      resource: { httpHealthCheck: { port: 10256 } },
      expect: true,
    },
    {
      rule: "AND and implicit AND",
      filter: "(name = k8s-e2e-1) AND (priority = 1000) (tags = a)",
      resource: R({}),
      expect: true,
    },
    { rule: "OR holds when one side does", filter: "(name = x) OR (priority = 1000)", resource: R({}), expect: true },
    {
      rule: "eq/ne cannot be mixed with = in one filter: 400",
      filter: "(name eq x) (priority = 1000)",
      resource: R({}),
      expect:
        "Invalid value for field 'filter': '(name eq x) (priority = 1000)'. Invalid list filter expression: eq/ne (regular expressions) cannot be mixed with =, !=, >, <, >=, <= or :.",
    },
    {
      rule: "several expressions without parentheses: 400",
      filter: "name eq x description eq y",
      resource: R({}),
      expect:
        "Invalid value for field 'filter': 'name eq x description eq y'. Invalid list filter expression: several expressions must each be in parentheses.",
    },
    {
      rule: "a regular expression that does not compile: 400",
      filter: "name eq (",
      resource: R({}),
      expect:
        "Invalid value for field 'filter': 'name eq ('. Invalid list filter expression: '(' is not a regular expression (Invalid regular expression: /^(?:()$/s: Unterminated group).",
    },
  ];
  for (const row of ROWS) {
    it(row.rule, () => {
      if (typeof row.expect === "string") {
        assert.throws(() => parseFilter(row.filter), { message: row.expect });
      } else {
        assert.equal(matchesFilter(parseFilter(row.filter), row.resource), row.expect);
      }
    });
  }
});

describe("GCE emulator rules: the stock CCM's Compute mutations over HTTP (one row per rule)", function () {
  let gce: GceEmulator;
  const P = `projects/${PROJECT}/regions/${REGION}`;
  const G = `projects/${PROJECT}/global`;
  const Z = `projects/${PROJECT}/zones/${REGION}-a`;
  const call = async (
    method: string,
    rel: string,
    body?: JsonObject,
  ): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(`${gce.computeEndpoint}${rel}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };
  const stored = (kind: string, name: string): JsonObject | undefined =>
    gce.listResources().find((r) => r.kind === kind && r.name === name)?.properties;
  const link = (rel: string): string => `${gce.endpoint}/compute/v1/${rel}`;

  beforeEach(async () => {
    gce = await startGceEmulator({ networks: NETWORKS });
    gce.putInstance("node-1", { zone: `${REGION}-a`, networkInterfaces: [{ network: "k8s-net" }] });
    gce.putInstance("node-2", { zone: `${REGION}-a`, networkInterfaces: [{ network: "k8s-net" }] });
  });
  afterEach(async () => gce?.stop());

  const ROWS: ReadonlyArray<{ rule: string; run: () => Promise<void> }> = [
    {
      rule: "forwardingRules.insert takes REST names (IPAddress, IPProtocol); the provider face reads the same resource",
      run: async () => {
        const { status, body } = await call("POST", `${P}/forwardingRules`, {
          name: "fr",
          IPProtocol: "UDP",
          portRange: "53-53",
          networkTier: "PREMIUM",
        });
        assert.deepEqual(
          [status, body.operationType, body.status, body.targetLink],
          [200, "insert", "DONE", link(`${P}/forwardingRules/fr`)],
        );
        const rule = stored("forwardingRules", "fr");
        assert.deepEqual([rule?.ipAddress, rule?.ipProtocol, rule?.portRange], ["203.0.113.1", "UDP", "53-53"]);
        const got = await call("GET", `${P}/forwardingRules/fr`);
        assert.deepEqual(
          [got.body.IPAddress, got.body.IPProtocol, got.body.kind],
          ["203.0.113.1", "UDP", "compute#forwardingRule"],
        );
        const read = new ProviderApi(gce.state).dispatch("read", {
          type: "gcp:compute/forwardingRule:ForwardingRule",
          id: `${P}/forwardingRules/fr`,
        });
        assert.equal(isObject(read.outputs) ? read.outputs.ipProtocol : undefined, "UDP");
      },
    },
    {
      rule: "an insert with a field the kind does not have: 400",
      run: async () => {
        assert.deepEqual(
          await call("POST", `${G}/firewalls`, {
            name: "fw",
            network: link(`${G}/networks/k8s-net`),
            allowed: [{ IPProtocol: "tcp" }],
            sourceRanges: ["0.0.0.0/0"],
            bogus: 1,
          }),
          {
            status: 400,
            body: {
              error: {
                code: 400,
                message: `Invalid JSON payload received. Unknown name "bogus" at 'resource': Cannot find field.`,
                errors: [{ reason: "invalid" }],
              },
            },
          },
        );
      },
    },
    {
      rule: "firewalls.insert takes allowed[].IPProtocol; patch merges (a null removes), update replaces",
      run: async () => {
        const network = link(`${G}/networks/k8s-net`);
        assert.equal(
          (
            await call("POST", `${G}/firewalls`, {
              name: "fw",
              network,
              allowed: [{ IPProtocol: "tcp", ports: ["80"] }],
              sourceRanges: ["0.0.0.0/0"],
              targetTags: ["n"],
            })
          ).status,
          200,
        );
        assert.deepEqual(stored("firewalls", "fw")?.allows, [{ protocol: "tcp", ports: ["80"] }]);
        const patched = await call("PATCH", `${G}/firewalls/fw`, { sourceRanges: ["10.0.0.0/8"], targetTags: null });
        assert.deepEqual([patched.status, patched.body.operationType], [200, "patch"]);
        assert.deepEqual(
          [
            stored("firewalls", "fw")?.sourceRanges,
            stored("firewalls", "fw")?.targetTags,
            stored("firewalls", "fw")?.allows,
          ],
          [["10.0.0.0/8"], undefined, [{ protocol: "tcp", ports: ["80"] }]],
        );
        assert.equal(
          (
            await call("PUT", `${G}/firewalls/fw`, {
              name: "fw",
              network,
              allowed: [{ IPProtocol: "udp" }],
              sourceRanges: ["0.0.0.0/0"],
            })
          ).status,
          200,
        );
        assert.deepEqual(
          [stored("firewalls", "fw")?.allows, stored("firewalls", "fw")?.sourceRanges],
          [[{ protocol: "udp" }], ["0.0.0.0/0"]],
        );
      },
    },
    {
      rule: "an update with a fingerprint that is not the current one: 412 conditionNotMet, nothing changes",
      run: async () => {
        assert.equal(
          (await call("POST", `${G}/httpHealthChecks`, { name: "hc", port: 10256, requestPath: "/healthz" })).status,
          200,
        );
        const current = (await call("GET", `${G}/httpHealthChecks/hc`)).body;
        const stale = await call("PUT", `${G}/httpHealthChecks/hc`, { ...current, port: 1, fingerprint: "c3RhbGU=" });
        assert.deepEqual(
          [stale.status, stale.body.error],
          [
            412,
            {
              code: 412,
              message: `Invalid fingerprint 'c3RhbGU=' for '${G}/httpHealthChecks/hc': the resource changed since it was read (current fingerprint '${String(current.fingerprint)}').`,
              errors: [{ reason: "conditionNotMet" }],
            },
          ],
        );
        assert.equal(stored("httpHealthChecks", "hc")?.port, 10256);
        assert.equal((await call("PUT", `${G}/httpHealthChecks/hc`, { ...current, port: 10257 })).status, 200);
        assert.equal(stored("httpHealthChecks", "hc")?.port, 10257);
      },
    },
    {
      rule: "targetPools.insert takes instances as the stock CCM sends them (/zones/Z/instances/N); addInstance and removeInstance change them (a link twice is one member)",
      run: async () => {
        assert.equal(
          (await call("POST", `${P}/targetPools`, { name: "tp", instances: [`/zones/${REGION}-a/instances/node-1`] }))
            .status,
          200,
        );
        assert.deepEqual(stored("targetPools", "tp")?.instances, [link(`${Z}/instances/node-1`)]);
        const added = await call("POST", `${P}/targetPools/tp/addInstance`, {
          instances: [{ instance: link(`${Z}/instances/node-2`) }, { instance: link(`${Z}/instances/node-1`) }],
        });
        assert.deepEqual([added.status, added.body.operationType], [200, "addInstance"]);
        assert.deepEqual(stored("targetPools", "tp")?.instances, [
          link(`${Z}/instances/node-1`),
          link(`${Z}/instances/node-2`),
        ]);
        assert.equal(
          (
            await call("POST", `${P}/targetPools/tp/removeInstance`, {
              instances: [{ instance: link(`${Z}/instances/node-1`) }],
            })
          ).status,
          200,
        );
        assert.deepEqual(stored("targetPools", "tp")?.instances, [link(`${Z}/instances/node-2`)]);
      },
    },
    {
      rule: "instanceGroups.insert then addInstances / removeInstances; listInstances shows them",
      run: async () => {
        assert.equal((await call("POST", `${Z}/instanceGroups`, { name: "ig" })).status, 200);
        assert.equal(
          (
            await call("POST", `${Z}/instanceGroups/ig/addInstances`, {
              instances: [{ instance: link(`${Z}/instances/node-1`) }, { instance: link(`${Z}/instances/node-2`) }],
            })
          ).status,
          200,
        );
        assert.equal(
          (
            await call("POST", `${Z}/instanceGroups/ig/removeInstances`, {
              instances: [{ instance: link(`${Z}/instances/node-2`) }],
            })
          ).status,
          200,
        );
        const listed = await call("POST", `${Z}/instanceGroups/ig/listInstances`);
        assert.deepEqual(listed.body.items, [{ instance: link(`${Z}/instances/node-1`), status: "RUNNING" }]);
        assert.equal((await call("GET", `${Z}/instanceGroups/ig`)).body.size, 1);
      },
    },
    {
      rule: "an INTERNAL forwarding rule and an INTERNAL address inserted with no networkTier read back PREMIUM (the stock CCM sends none)",
      run: async () => {
        assert.equal(
          (
            await call("POST", `${G}/healthChecks`, {
              name: "hc",
              type: "HTTP",
              httpHealthCheck: { port: 10256, requestPath: "/healthz" },
            })
          ).status,
          200,
        );
        const bs = {
          name: "bs",
          protocol: "TCP",
          loadBalancingScheme: "INTERNAL",
          healthChecks: [link(`${G}/healthChecks/hc`)],
        };
        assert.equal((await call("POST", `${P}/backendServices`, bs)).status, 200);
        const address = await call("POST", `${P}/addresses`, {
          name: "ilb",
          addressType: "INTERNAL",
          subnetwork: link(`${P}/subnetworks/k8s-subnet`),
        });
        assert.equal(address.status, 200, JSON.stringify(address.body));
        const rule = await call("POST", `${P}/forwardingRules`, {
          name: "ilb",
          loadBalancingScheme: "INTERNAL",
          IPProtocol: "TCP",
          ports: ["80"],
          backendService: link(`${P}/backendServices/bs`),
          network: link(`${G}/networks/k8s-net`),
          subnetwork: link(`${P}/subnetworks/k8s-subnet`),
        });
        assert.equal(rule.status, 200, JSON.stringify(rule.body));
        assert.deepEqual(
          [
            (await call("GET", `${P}/forwardingRules/ilb`)).body.networkTier,
            (await call("GET", `${P}/addresses/ilb`)).body.networkTier,
          ],
          ["PREMIUM", "PREMIUM"],
        );
        assert.deepEqual(
          [stored("forwardingRules", "ilb")?.networkTier, stored("addresses", "ilb")?.networkTier],
          ["PREMIUM", "PREMIUM"],
        );
      },
    },
    {
      rule: "an INTERNAL backend service whose backends name no balancingMode gets CONNECTION (the stock CCM sends none)",
      run: async () => {
        assert.equal(
          (
            await call("POST", `${G}/healthChecks`, {
              name: "hc",
              type: "HTTP",
              httpHealthCheck: { port: 10256, requestPath: "/healthz" },
            })
          ).status,
          200,
        );
        assert.equal((await call("POST", `${Z}/instanceGroups`, { name: "ig" })).status, 200);
        const created = await call("POST", `${P}/backendServices`, {
          name: "bs",
          protocol: "TCP",
          loadBalancingScheme: "INTERNAL",
          sessionAffinity: "NONE",
          healthChecks: [link(`${G}/healthChecks/hc`)],
          backends: [{ group: link(`${Z}/instanceGroups/ig`) }],
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const got = await call("GET", `${P}/backendServices/bs`);
        assert.deepEqual(
          [got.body.healthChecks, got.body.backends],
          [[link(`${G}/healthChecks/hc`)], [{ group: link(`${Z}/instanceGroups/ig`), balancingMode: "CONNECTION" }]],
        );
        const two = await call("PUT", `${P}/backendServices/bs`, {
          ...got.body,
          healthChecks: [link(`${G}/healthChecks/hc`), link(`${G}/healthChecks/hc`)],
        });
        assert.deepEqual(
          [two.status, two.body.error],
          [
            400,
            {
              code: 400,
              message: `Invalid value for field 'resource.healthChecks': ${JSON.stringify([link(`${G}/healthChecks/hc`), link(`${G}/healthChecks/hc`)])}. Only one health check may be specified.`,
              errors: [{ reason: "invalid" }],
            },
          ],
        );
      },
    },
    {
      rule: "routes.insert with a zones/Z/instances/N next hop; list with the stock CCM's filter finds it",
      run: async () => {
        const network = link(`${G}/networks/k8s-net`);
        assert.equal(
          (
            await call("POST", `${G}/routes`, {
              name: "e2e-1",
              destRange: "10.64.1.0/24",
              nextHopInstance: `zones/${REGION}-a/instances/node-1`,
              network,
              priority: 1000,
              description: "k8s-node-route",
            })
          ).status,
          200,
        );
        const filter = encodeURIComponent(`(name eq e2e-.*) (network eq ${network}) (description eq k8s-node-route)`);
        const listed = await call("GET", `${G}/routes?filter=${filter}`);
        assert.deepEqual(
          Array.isArray(listed.body.items)
            ? listed.body.items.map((r) => (isObject(r) ? [r.name, r.nextHopInstance] : null))
            : null,
          [["e2e-1", link(`${Z}/instances/node-1`)]],
        );
        const none = await call(
          "GET",
          `${G}/routes?filter=${encodeURIComponent("(name eq other-.*) (description eq k8s-node-route)")}`,
        );
        assert.equal(none.body.items, undefined);
      },
    },
  ];
  for (const row of ROWS) it(row.rule, row.run);
});

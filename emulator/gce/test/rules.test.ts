// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: references, backend services, forwarding rules, networks, target pools, health checks, firewalls, addresses and routes at create; replace or update at change.
import * as assert from "node:assert/strict";

import { ProviderApi } from "../provider-api";
import type { JsonObject } from "../json";
import {
  PROJECT,
  REGION,
  V1,
  T,
  regional,
  HC,
  GLOBAL_HC,
  passthrough,
  internalRule,
  world,
  type CreateRow,
  IG,
  FW,
  TP,
  itCreates,
} from "./rulesFixtures";

const CREATE_ROWS: CreateRow[] = [
  // ---- references the provider sends verbatim (rules/urls.ts) ----
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
    rule: "an external forwarding rule on an IP the project has not reserved is refused",
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
];

interface DiffRow {
  readonly rule: string;
  readonly type: string;
  readonly setup?: ReadonlyArray<readonly [string, JsonObject]>;
  readonly inputs: JsonObject;
  readonly change: JsonObject;
  readonly expect: "replaced" | "updated in place";
}

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

describe("GCE emulator rules (one row per rule)", () => {
  describe("create: accepted or refused with GCE's message", () => itCreates(CREATE_ROWS));

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
});

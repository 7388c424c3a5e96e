// IP families of docs/guides/services.md#service-semantics ("IP families"): every family, policy and
// mode combination, and every rejection with its exact message, through desiredState.
import * as assert from "node:assert/strict";

import { desiredState } from "../../../model/desired";
import { formatIPv6, parseCidr, parseIPv6, type CidrAnyParse } from "../../../model/net";
import type { Config, DesiredState, Rejection, ServiceDesired, ServiceInfo } from "../../../model/types";
import {
  CONFIG,
  externalServiceDesired,
  gceNode,
  healthCheckFirewall,
  httpHealthCheck,
  ipv6Half,
  lbService,
  serviceFirewall,
  TO_ADDRESS,
} from "../../support/builders";

const A_LB_TYPE = "networking.gke.io/load-balancer-type";
const A_SUBNET = "networking.gke.io/internal-load-balancer-subnet";
const A_IPV6_SUBNET = "dccm.io/ipv6-subnet";
const A_TIER = "cloud.google.com/network-tier";
const A_BACKEND = "dccm.io/backend";
const A_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges";

const NODES = [
  gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", []),
  gceNode("n-b", "00000000-0000-4000-8000-000000000002", "us-central1-b", []),
];
const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const LB = "a0f1e2d3c4b5a49788695a4b3c2d1e0f";
const KEY = "default/svc";
const DESCRIPTION = '{"kubernetes.io/service-name":"default/svc"}';
const TCP80 = [{ protocol: "tcp", ports: ["80"] }];
const DUAL = { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "RequireDualStack" };
const PREFER = { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "PreferDualStack" };
const V6_ONLY = { ipFamilies: ["IPv6"], ipFamilyPolicy: "SingleStack" };

function svc(over: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", "svc", UID, {
    ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
    ...over,
  });
}

function expected(over: Partial<ServiceDesired> = {}): ServiceDesired {
  return externalServiceDesired("default", "svc", UID, LB, [80], over);
}

/** The IPv6 half of the base Service: subnetwork `subnet`, open to all, shared check's port. */
function half(
  subnet = "k8s-subnet",
  over: { ranges?: string[]; hcPort?: number; userIP?: string; scheme?: "EXTERNAL" | "INTERNAL" } = {},
): ServiceDesired["ipv6"] {
  return ipv6Half(KEY, LB, subnet, over.ranges ?? ["::/0"], TCP80, over.hcPort ?? 10256, over.userIP, over.scheme);
}

function run(service: ServiceInfo, config: Partial<Config> = {}): DesiredState {
  return desiredState({ nodes: NODES, services: [service] }, { ...CONFIG, ...config });
}

function accepted(service: ServiceInfo, want: ServiceDesired, config: Partial<Config> = {}): void {
  const state = run(service, config);
  assert.deepStrictEqual(state.rejected, []);
  assert.deepStrictEqual(state.services, [want]);
}

function rejected(service: ServiceInfo, want: [string, string][], config: Partial<Config> = {}): void {
  const state = run(service, config);
  assert.deepStrictEqual(state.services, []);
  assert.deepStrictEqual(
    state.rejected,
    want.map(([field, message]): Rejection => ({
      service: KEY,
      field,
      message: `Service ${KEY}: ${field}: ${message}`,
    })),
  );
}

const NO_SUBNET = { subnetwork: undefined };
/** The base Service in target-pool mode: a port range, the two backend instances. */
const TARGET_POOL: Partial<ServiceDesired> = {
  backend: "target-pool",
  frontends: [{ name: LB, protocol: "TCP", ports: [80], portSelection: { kind: "range", portRange: "80-80" } }],
  backendZones: [],
  backendInstances: [
    { zone: "us-central1-a", name: "n-a" },
    { zone: "us-central1-b", name: "n-b" },
  ],
};
const EXT_SUBNET_MSG =
  "IPv6 needs a dual-stack subnetwork (stackType IPV4_IPV6, ipv6AccessType EXTERNAL): set this annotation or config subnetwork";
const INT_SUBNET_MSG =
  "IPv6 needs a dual-stack subnetwork (stackType IPV4_IPV6, ipv6AccessType INTERNAL): set this annotation or config subnetwork";
const POOL_MSG =
  "IPv6 needs a backend-service load balancer: target pools are IPv4-only (set backend-service here or config backendMode)";
const TIER_MSG = "IPv6 load balancers are Premium tier only";

describe("model: IP families (docs/guides/services.md#service-semantics, IP families)", () => {
  describe("families and policies → frontends", () => {
    const internal = { annotations: { [A_LB_TYPE]: "Internal" } };
    const cases: [string, Partial<ServiceInfo>, Partial<Config>, ServiceDesired][] = [
      ["no fields: IPv4 SingleStack, as before", {}, {}, expected()],
      ["SingleStack IPv4 written out", { ipFamilies: ["IPv4"], ipFamilyPolicy: "SingleStack" }, {}, expected()],
      [
        "PreferDualStack on an IPv4-only cluster (ipFamilies [IPv4])",
        { ipFamilies: ["IPv4"], ipFamilyPolicy: "PreferDualStack" },
        {},
        expected(),
      ],
      ["RequireDualStack external: config subnetwork", DUAL, {}, expected({ ipv6: half() })],
      [
        "RequireDualStack, IPv6 primary: same frontends",
        { ...DUAL, ipFamilies: ["IPv6", "IPv4"] },
        {},
        expected({ ipv6: half() }),
      ],
      ["PreferDualStack external", PREFER, {}, expected({ ipv6: half() })],
      [
        "PreferDualStack without ipFamilies (hand-written snapshot): both",
        { ipFamilyPolicy: "PreferDualStack" },
        {},
        expected({ ipv6: half() }),
      ],
      ["SingleStack IPv6 external", V6_ONLY, {}, expected({ ipv6: half(), ipv6Only: true })],
      [
        "RequireDualStack, addressReservation always: the IPv4 address <lb> reserved for life",
        DUAL,
        { addressReservation: "always" },
        expected({ ipv6: half(), reserveAddress: true }),
      ],
      [
        "SingleStack IPv6, addressReservation always: no IPv4 address to reserve",
        V6_ONLY,
        { addressReservation: "always" },
        expected({ ipv6: half(), ipv6Only: true }),
      ],
      [
        "external: dccm.io/ipv6-subnet wins over config",
        { ...DUAL, annotations: { [A_IPV6_SUBNET]: " v6-subnet " } },
        {},
        expected({ ipv6: half("v6-subnet") }),
      ],
      [
        "external: dccm.io/ipv6-subnet without config subnetwork",
        { ...DUAL, annotations: { [A_IPV6_SUBNET]: "v6-subnet" } },
        NO_SUBNET,
        expected({ ipv6: half("v6-subnet") }),
      ],
      [
        "internal RequireDualStack: the internal subnetwork",
        { ...DUAL, ...internal },
        {},
        expected({ scheme: "INTERNAL", subnetwork: "k8s-subnet", ipv6: half("k8s-subnet", { scheme: "INTERNAL" }) }),
      ],
      [
        "internal: the ILB subnet annotation",
        { ...DUAL, annotations: { [A_LB_TYPE]: "Internal", [A_SUBNET]: "ilb-v6" } },
        {},
        expected({ scheme: "INTERNAL", subnetwork: "ilb-v6", ipv6: half("ilb-v6", { scheme: "INTERNAL" }) }),
      ],
      [
        "internal SingleStack IPv6",
        { ...V6_ONLY, ...internal },
        {},
        expected({
          scheme: "INTERNAL",
          subnetwork: "k8s-subnet",
          ipv6: half("k8s-subnet", { scheme: "INTERNAL" }),
          ipv6Only: true,
        }),
      ],
      [
        "ETP Local: the IPv6 health-check firewall opens healthCheckNodePort",
        { ...DUAL, externalTrafficPolicy: "Local", healthCheckNodePort: 31000 },
        {},
        expected({
          healthCheck: { kind: "dedicated", spec: httpHealthCheck(LB, 31000, DESCRIPTION) },
          healthCheckFirewall: healthCheckFirewall(`k8s-${LB}-http-hc`, 31000, DESCRIPTION, TO_ADDRESS),
          ipv6: half("k8s-subnet", { hcPort: 31000 }),
        }),
      ],
    ];
    for (const [title, over, config, want] of cases) it(title, () => accepted(svc(over), want, config));
  });

  describe("PreferDualStack without an IPv6-capable setup: IPv4 only, with the reason for the Warning", () => {
    const cases: [string, Partial<ServiceInfo>, Partial<Config>, string, Partial<ServiceDesired>][] = [
      [
        "external, no subnetwork anywhere",
        PREFER,
        NO_SUBNET,
        `metadata.annotations[${A_IPV6_SUBNET}]: ${EXT_SUBNET_MSG}`,
        {},
      ],
      [
        "target pool (annotation)",
        { ...PREFER, annotations: { [A_BACKEND]: "target-pool" } },
        {},
        `metadata.annotations[${A_BACKEND}]: ${POOL_MSG}`,
        TARGET_POOL,
      ],
      [
        "target pool (config backendMode)",
        PREFER,
        { backendMode: "target-pool" },
        `metadata.annotations[${A_BACKEND}]: ${POOL_MSG}`,
        TARGET_POOL,
      ],
      [
        "Standard tier",
        { ...PREFER, annotations: { [A_TIER]: "Standard" } },
        {},
        `metadata.annotations[${A_TIER}]: ${TIER_MSG}`,
        { networkTier: "STANDARD" },
      ],
      [
        "internal, no subnetwork",
        { ...PREFER, annotations: { [A_LB_TYPE]: "Internal" } },
        NO_SUBNET,
        `metadata.annotations[${A_SUBNET}]: ${INT_SUBNET_MSG}`,
        { scheme: "INTERNAL" },
      ],
    ];
    for (const [title, over, config, reason, want] of cases) {
      it(title, () =>
        accepted(
          svc(over),
          expected({
            ...want,
            ipv6Fallback: `spec.ipFamilyPolicy PreferDualStack: the load balancer serves IPv4 only: ${reason}`,
          }),
          config,
        ),
      );
    }
  });

  describe("rejections", () => {
    const cases: [string, Partial<ServiceInfo>, Partial<Config>, [string, string][]][] = [
      [
        "RequireDualStack, external, no subnetwork",
        DUAL,
        NO_SUBNET,
        [[`metadata.annotations[${A_IPV6_SUBNET}]`, EXT_SUBNET_MSG]],
      ],
      [
        "SingleStack IPv6, external, no subnetwork",
        V6_ONLY,
        NO_SUBNET,
        [[`metadata.annotations[${A_IPV6_SUBNET}]`, EXT_SUBNET_MSG]],
      ],
      [
        "RequireDualStack, internal, no subnetwork",
        { ...DUAL, annotations: { [A_LB_TYPE]: "Internal" } },
        NO_SUBNET,
        [[`metadata.annotations[${A_SUBNET}]`, INT_SUBNET_MSG]],
      ],
      [
        "RequireDualStack on a target pool",
        { ...DUAL, annotations: { [A_BACKEND]: "target-pool" } },
        {},
        [[`metadata.annotations[${A_BACKEND}]`, POOL_MSG]],
      ],
      [
        "SingleStack IPv6 on a target pool (config)",
        V6_ONLY,
        { backendMode: "target-pool" },
        [[`metadata.annotations[${A_BACKEND}]`, POOL_MSG]],
      ],
      [
        "RequireDualStack in Standard tier",
        { ...DUAL, annotations: { [A_TIER]: "standard" } },
        {},
        [[`metadata.annotations[${A_TIER}]`, TIER_MSG]],
      ],
      [
        "unknown policy",
        { ipFamilyPolicy: "DualStack" },
        {},
        [["spec.ipFamilyPolicy", '"DualStack" is not SingleStack, PreferDualStack or RequireDualStack']],
      ],
      ["unknown family", { ipFamilies: ["IPv5"] }, {}, [["spec.ipFamilies[0]", '"IPv5" is not IPv4 or IPv6']]],
      ["family twice", { ipFamilies: ["IPv6", "IPv6"] }, {}, [["spec.ipFamilies[1]", "IPv6 is listed twice"]]],
      [
        "SingleStack with two families",
        { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "SingleStack" },
        {},
        [["spec.ipFamilies", "SingleStack takes one IP family, got IPv4, IPv6"]],
      ],
      [
        "RequireDualStack with one family",
        { ipFamilies: ["IPv4"], ipFamilyPolicy: "RequireDualStack" },
        {},
        [["spec.ipFamilies", "RequireDualStack needs IPv4 and IPv6, got IPv4"]],
      ],
      [
        "ipv6-subnet on an internal Service",
        { ...DUAL, annotations: { [A_LB_TYPE]: "Internal", [A_IPV6_SUBNET]: "v6" } },
        {},
        [
          [
            `metadata.annotations[${A_IPV6_SUBNET}]`,
            `internal load balancers take their subnetwork from metadata.annotations[networking.gke.io/load-balancer-subnet] or metadata.annotations[${A_SUBNET}]`,
          ],
        ],
      ],
      [
        "ipv6-subnet not a GCE name",
        { ...DUAL, annotations: { [A_IPV6_SUBNET]: "V6_Subnet" } },
        {},
        [[`metadata.annotations[${A_IPV6_SUBNET}]`, '"V6_Subnet" is not a valid subnetwork name']],
      ],
      [
        "IPv4 loadBalancerIP on an IPv6-only Service",
        { ...V6_ONLY, loadBalancerIP: "203.0.113.50" },
        {},
        [["spec.loadBalancerIP", '"203.0.113.50" is an IPv4 address, but the load balancer does not serve IPv4']],
      ],
      [
        "IPv6 loadBalancerIP on a PreferDualStack Service that fell back",
        { ...PREFER, loadBalancerIP: "2001:db8::1" },
        NO_SUBNET,
        [
          [
            "spec.loadBalancerIP",
            `"2001:db8::1" is an IPv6 address, but the load balancer does not serve IPv6 (spec.ipFamilyPolicy PreferDualStack: the load balancer serves IPv4 only: metadata.annotations[${A_IPV6_SUBNET}]: ${EXT_SUBNET_MSG})`,
          ],
        ],
      ],
      [
        "loadBalancerIP not an IP",
        { ...DUAL, loadBalancerIP: "2001:db8::g" },
        {},
        [["spec.loadBalancerIP", '"2001:db8::g" is not an IP address']],
      ],
      [
        "bad IPv6 range",
        { ...DUAL, loadBalancerSourceRanges: ["2001:db8::/129"] },
        {},
        [
          [
            "spec.loadBalancerSourceRanges",
            '"2001:db8::/129" is not a CIDR (expected a.b.c.d/n or an IPv6 prefix x:x::/n)',
          ],
        ],
      ],
      [
        "dual-stack with IPv4 ranges only: IPv6 must not default to everyone",
        { ...DUAL, loadBalancerSourceRanges: ["192.0.2.0/24"] },
        {},
        [
          [
            "spec.loadBalancerSourceRanges",
            "no IPv6 range; each IP family the load balancer serves needs at least one when ranges are given",
          ],
        ],
      ],
      [
        "dual-stack with IPv6 ranges only (annotation)",
        { ...DUAL, annotations: { [A_RANGES]: "2001:db8::/32" } },
        {},
        [
          [
            `metadata.annotations[${A_RANGES}]`,
            "no IPv4 range; each IP family the load balancer serves needs at least one when ranges are given",
          ],
        ],
      ],
      [
        "internal TCP+UDP with an IPv6 loadBalancerIP",
        {
          ...DUAL,
          annotations: { [A_LB_TYPE]: "Internal" },
          loadBalancerIP: "fd20::5",
          ports: [
            { protocol: "TCP", port: 53 },
            { protocol: "UDP", port: 53 },
          ],
        },
        {},
        [
          [
            "spec.loadBalancerIP",
            'an internal Service with both TCP and UDP ports needs one IP shared by two forwarding rules, which GCE allows only on an address reserved with purpose SHARED_LOADBALANCER_VIP; leave spec.loadBalancerIP unset so that dccm reserves one (got "fd20::5")',
          ],
        ],
      ],
    ];
    for (const [title, over, config, want] of cases) it(title, () => rejected(svc(over), want, config));
  });

  describe("source ranges and loadBalancerIP by family", () => {
    const cases: [string, Partial<ServiceInfo>, ServiceDesired][] = [
      [
        "both families: each to its own firewall, canonical and sorted",
        { ...DUAL, loadBalancerSourceRanges: ["2001:DB8:0:0:1::/64", "192.0.2.7/24", "2001:db8::/32"] },
        expected({
          firewall: serviceFirewall(KEY, LB, ["192.0.2.0/24"], TCP80),
          ipv6: half("k8s-subnet", { ranges: ["2001:db8::/32", "2001:db8::/64"] }),
        }),
      ],
      [
        "IPv6-only Service: IPv6 ranges only",
        { ...V6_ONLY, loadBalancerSourceRanges: ["2001:db8::/32"] },
        expected({
          firewall: serviceFirewall(KEY, LB, [], TCP80),
          ipv6: half("k8s-subnet", { ranges: ["2001:db8::/32"] }),
          ipv6Only: true,
        }),
      ],
      [
        "IPv6 loadBalancerIP: RFC 5952 form, IPv4 address still reserved",
        { ...DUAL, loadBalancerIP: "2001:DB8:0:0:0:0:0:1" },
        expected({ ipv6: half("k8s-subnet", { userIP: "2001:db8::1" }) }),
      ],
      [
        "IPv4 loadBalancerIP on a dual-stack Service",
        { ...DUAL, loadBalancerIP: "203.0.113.50" },
        expected({
          userIP: "203.0.113.50",
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, { kind: "ip", ip: "203.0.113.50" }),
          ipv6: half(),
        }),
      ],
    ];
    for (const [title, over, want] of cases) it(title, () => accepted(svc(over), want));
  });

  describe("parseIPv6 / formatIPv6 / parseCidr", () => {
    const ips: [string, string | undefined][] = [
      ["::", "::"],
      ["::1", "::1"],
      ["2001:DB8::1", "2001:db8::1"],
      ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
      ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
      ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
      ["1:0:3:4:5:6:7:8", "1:0:3:4:5:6:7:8"],
      ["1::2::3", undefined],
      ["1:2:3:4:5:6:7", undefined],
      ["1:2:3:4:5:6:7:8:9", undefined],
      ["12345::", undefined],
      ["fe80::1%eth0", undefined],
      ["::ffff:1.2.3.4", undefined],
    ];
    for (const [text, want] of ips) {
      it(`${text} → ${want ?? "not an IPv6 address"}`, () => {
        const groups = parseIPv6(text);
        assert.equal(groups === undefined ? undefined : formatIPv6(groups), want);
      });
    }
    const cidrs: [string, CidrAnyParse][] = [
      ["10.1.2.3/8", { ok: true, family: "IPv4", canonical: "10.0.0.0/8" }],
      ["::/0", { ok: true, family: "IPv6", canonical: "::/0" }],
      ["2001:db8:abcd:12ff::/56", { ok: true, family: "IPv6", canonical: "2001:db8:abcd:1200::/56" }],
      ["2001:db8::1/128", { ok: true, family: "IPv6", canonical: "2001:db8::1/128" }],
      [
        "2001:db8::1",
        { ok: false, reason: '"2001:db8::1" is not a CIDR (expected a.b.c.d/n or an IPv6 prefix x:x::/n)' },
      ],
      [
        "2001:db8::/01",
        { ok: false, reason: '"2001:db8::/01" is not a CIDR (expected a.b.c.d/n or an IPv6 prefix x:x::/n)' },
      ],
      ["10.0.0.0/33", { ok: false, reason: '"10.0.0.0/33" is not a CIDR (expected a.b.c.d/n)' }],
    ];
    for (const [text, want] of cidrs) it(`parseCidr ${text}`, () => assert.deepStrictEqual(parseCidr(text), want));
  });
});

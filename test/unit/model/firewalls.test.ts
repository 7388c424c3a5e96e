// Where a Service's firewalls open, at which priority, and the deny rule of `enableL4DenyFirewall`
// (docs/guides/services.md#service-semantics, "Firewalls"): per family, external and internal, with and
// without spec.loadBalancerIP, through desiredState.
import * as assert from "node:assert/strict";

import { desiredState } from "../../../model/desired";
import {
  NOTHING_OBSERVED,
  type Config,
  type DenyFirewallSpec,
  type ObservedCloud,
  type FirewallDestination,
  type FirewallSpec,
  type ServiceDesired,
  type ServiceInfo,
} from "../../../model/types";
import {
  CONFIG,
  denyFirewall,
  gceNode,
  healthCheckFirewall,
  HC_RANGES_IPV6,
  describedBy,
  lbService,
  NODE_HC_FIREWALL,
  serviceFirewall,
  TO_ADDRESS,
} from "../../support/builders";

const NODES = [
  gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", []),
  gceNode("n-b", "00000000-0000-4000-8000-000000000002", "us-central1-b", []),
];
const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const LB = "a0f1e2d3c4b5a49788695a4b3c2d1e0f";
const KEY = "default/svc";
const TCP80 = [{ protocol: "tcp", ports: ["80"] }];
const INTERNAL = { "networking.gke.io/load-balancer-type": "Internal" };
const DUAL = { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "RequireDualStack" };
const V6_ONLY = { ipFamilies: ["IPv6"], ipFamilyPolicy: "SingleStack" };
const LOCAL = { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 };

function svc(over: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", "svc", UID, {
    ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
    ...over,
  });
}

function only(
  service: ServiceInfo,
  config: Partial<Config> = {},
  observed: ObservedCloud = NOTHING_OBSERVED,
): ServiceDesired {
  const state = desiredState({ nodes: NODES, services: [service] }, { ...CONFIG, ...config }, observed);
  assert.deepStrictEqual(state.rejected, []);
  const [desired] = state.services;
  assert.ok(desired !== undefined);
  return desired;
}

/** The firewall specs of a Service, by role; absent ones left out. */
function firewallsOf(desired: ServiceDesired): Record<string, FirewallSpec | DenyFirewallSpec> {
  const out: Record<string, FirewallSpec | DenyFirewallSpec> = {};
  if (desired.ipv6Only !== true) {
    out.firewall = desired.firewall;
    if (desired.healthCheckFirewall !== undefined) out.hcFirewall = desired.healthCheckFirewall;
    if (desired.denyFirewall !== undefined) out.deny = desired.denyFirewall;
  }
  if (desired.ipv6 !== undefined) {
    out.firewallIpv6 = desired.ipv6.firewall;
    out.hcFirewallIpv6 = desired.ipv6.healthCheckFirewall;
    if (desired.ipv6.denyFirewall !== undefined) out.denyIpv6 = desired.ipv6.denyFirewall;
  }
  return out;
}

const IP = (ip: string): FirewallDestination => ({ kind: "ip", ip });
function ipv6Traffic(destination: FirewallSpec["destination"], priority = 1000): FirewallSpec {
  return {
    name: `k8s-fw-${LB}-ipv6`,
    description: describedBy(KEY),
    sourceRanges: ["::/0"],
    targetTags: ["k8s-node"],
    allows: TCP80,
    ...(destination !== undefined ? { destination } : {}),
    priority,
  };
}
function ipv6Hc(port: number, destination: FirewallSpec["destination"], priority = 1000): FirewallSpec {
  return {
    name: `k8s-${LB}-http-hc-ipv6`,
    description: describedBy(KEY),
    sourceRanges: HC_RANGES_IPV6,
    targetTags: ["k8s-node"],
    allows: [{ protocol: "tcp", ports: [String(port)] }],
    ...(destination !== undefined ? { destination } : {}),
    priority,
  };
}
const HC = (destination?: FirewallSpec["destination"], priority = 1000): FirewallSpec =>
  healthCheckFirewall(`k8s-${LB}-http-hc`, 31000, describedBy(KEY), destination, priority);

describe("model: firewall destinations (the stock CCM's firewallObject), priorities and the deny rule", () => {
  describe("destinationRanges: the load balancer's IP of the rule's family; the health-check firewall as the stock CCM's", () => {
    const cases: [string, Partial<ServiceInfo>, Record<string, FirewallSpec>][] = [
      ["external IPv4, reserved address", {}, { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS) }],
      [
        "external IPv4, spec.loadBalancerIP",
        { loadBalancerIP: "203.0.113.50" },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, IP("203.0.113.50")) },
      ],
      [
        "external IPv4, ETP Local: the health-check firewall towards the IP too",
        { ...LOCAL },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80), hcFirewall: HC(TO_ADDRESS) },
      ],
      [
        "external IPv4, ETP Local, spec.loadBalancerIP",
        { ...LOCAL, loadBalancerIP: "203.0.113.50" },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, IP("203.0.113.50")),
          hcFirewall: HC(IP("203.0.113.50")),
        },
      ],
      [
        "internal IPv4, reserved address",
        { annotations: INTERNAL },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS) },
      ],
      [
        "internal IPv4, spec.loadBalancerIP",
        { annotations: INTERNAL, loadBalancerIP: "10.128.0.9" },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, IP("10.128.0.9")) },
      ],
      [
        "internal IPv4, ETP Local: the health-check firewall towards every node IP",
        { annotations: INTERNAL, ...LOCAL },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80), hcFirewall: HC() },
      ],
      [
        "external dual-stack: each family towards its own address",
        { ...DUAL },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80),
          firewallIpv6: ipv6Traffic(TO_ADDRESS),
          hcFirewallIpv6: ipv6Hc(10256, TO_ADDRESS),
        },
      ],
      [
        "external dual-stack, the IPv4 IP given: IPv6 towards its reserved address",
        { ...DUAL, loadBalancerIP: "203.0.113.50" },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, IP("203.0.113.50")),
          firewallIpv6: ipv6Traffic(TO_ADDRESS),
          hcFirewallIpv6: ipv6Hc(10256, TO_ADDRESS),
        },
      ],
      [
        "external dual-stack, the IPv6 IP given only: IPv4 towards its reserved address",
        { ...DUAL, loadBalancerIP: "2001:db8::5" },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS),
          firewallIpv6: ipv6Traffic(IP("2001:db8::5")),
          hcFirewallIpv6: ipv6Hc(10256, IP("2001:db8::5")),
        },
      ],
      [
        "external SingleStack IPv6",
        { ...V6_ONLY },
        { firewallIpv6: ipv6Traffic(TO_ADDRESS), hcFirewallIpv6: ipv6Hc(10256, TO_ADDRESS) },
      ],
      [
        "internal dual-stack, ETP Local: health-check firewalls towards every node IP",
        { ...DUAL, ...LOCAL, annotations: INTERNAL },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80),
          hcFirewall: HC(),
          firewallIpv6: ipv6Traffic(TO_ADDRESS),
          hcFirewallIpv6: ipv6Hc(31000, undefined),
        },
      ],
      [
        "internal SingleStack IPv6, its own IP",
        { ...V6_ONLY, annotations: INTERNAL, loadBalancerIP: "fd20::9" },
        { firewallIpv6: ipv6Traffic(IP("fd20::9")), hcFirewallIpv6: ipv6Hc(10256, undefined) },
      ],
    ];
    for (const [title, over, want] of cases)
      it(title, () => assert.deepStrictEqual(firewallsOf(only(svc(over))), want));
  });

  describe("enableL4DenyFirewall: k8s-fw-<lb>-deny at 1000 towards the IP, the allow rules at 999 (external only, as the stock CCM)", () => {
    const ON = { enableL4DenyFirewall: true };
    const cases: [string, Partial<ServiceInfo>, Record<string, FirewallSpec | DenyFirewallSpec>][] = [
      [
        "external IPv4",
        {},
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS, 999),
          deny: denyFirewall(KEY, LB, "ipv4"),
        },
      ],
      [
        "external IPv4, ETP Local, spec.loadBalancerIP",
        { ...LOCAL, loadBalancerIP: "203.0.113.50" },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, IP("203.0.113.50"), 999),
          hcFirewall: HC(IP("203.0.113.50"), 999),
          deny: denyFirewall(KEY, LB, "ipv4", IP("203.0.113.50")),
        },
      ],
      [
        "external dual-stack: a deny rule per family",
        { ...DUAL },
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS, 999),
          deny: denyFirewall(KEY, LB, "ipv4"),
          firewallIpv6: ipv6Traffic(TO_ADDRESS, 999),
          hcFirewallIpv6: ipv6Hc(10256, TO_ADDRESS, 999),
          denyIpv6: denyFirewall(KEY, LB, "ipv6"),
        },
      ],
      [
        "internal: no deny rule, the allow rules stay at 1000",
        { annotations: INTERNAL, ...LOCAL },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80), hcFirewall: HC() },
      ],
    ];
    for (const [title, over, want] of cases)
      it(title, () => assert.deepStrictEqual(firewallsOf(only(svc(over), ON)), want));

    it("off (the default): no deny rule, every allow rule at 1000", () => {
      assert.deepStrictEqual(firewallsOf(only(svc({ ...DUAL }))), {
        firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80),
        firewallIpv6: ipv6Traffic(TO_ADDRESS),
        hcFirewallIpv6: ipv6Hc(10256, TO_ADDRESS),
      });
    });
    it("the cluster's node health-check firewall moves to 999 with it (its probes go to the load balancers' IPs), and stays towards every node IP", () => {
      assert.deepStrictEqual(
        desiredState({ nodes: NODES, services: [] }, { ...CONFIG, ...ON }).cluster.nodeHealthCheckFirewall,
        { ...NODE_HC_FIREWALL, priority: 999 },
      );
      assert.deepStrictEqual(
        desiredState({ nodes: NODES, services: [] }, CONFIG).cluster.nodeHealthCheckFirewall,
        NODE_HC_FIREWALL,
      );
    });
  });

  describe("enableL4DenyFirewall turned off: the deny rule is deleted before the allow rules move back to 1000 (ObservedCloud.denyRulesHeld)", () => {
    const HELD: ObservedCloud = { ...NOTHING_OBSERVED, denyRulesHeld: [KEY] };
    const cases: [string, Partial<ServiceInfo>, ObservedCloud, Record<string, FirewallSpec | DenyFirewallSpec>][] = [
      [
        "the stack still holds a deny rule: the allow rules stay at 999, no deny rule (the run deletes it alone)",
        {},
        HELD,
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS, 999) },
      ],
      [
        "ETP Local, dual-stack, still held: every allow rule of both families at 999, no deny rule",
        { ...DUAL, ...LOCAL },
        HELD,
        {
          firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS, 999),
          hcFirewall: HC(TO_ADDRESS, 999),
          firewallIpv6: ipv6Traffic(TO_ADDRESS, 999),
          hcFirewallIpv6: ipv6Hc(31000, TO_ADDRESS, 999),
        },
      ],
      [
        "deleted (the stack holds none): the allow rules back at 1000",
        {},
        NOTHING_OBSERVED,
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80) },
      ],
      [
        "another Service's deny rule held: this one's allow rules at 1000",
        {},
        { ...NOTHING_OBSERVED, denyRulesHeld: ["default/other"] },
        { firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80) },
      ],
    ];
    for (const [title, over, observed, want] of cases)
      it(title, () => assert.deepStrictEqual(firewallsOf(only(svc(over), {}, observed)), want));

    it("on, and held: as on (the deny rule declared, the allow rules at 999)", () => {
      assert.deepStrictEqual(firewallsOf(only(svc(), { enableL4DenyFirewall: true }, HELD)), {
        firewall: serviceFirewall(KEY, LB, ["0.0.0.0/0"], TCP80, TO_ADDRESS, 999),
        deny: denyFirewall(KEY, LB, "ipv4"),
      });
    });
    it("a stack that never held one: the same desired state as without the fields (its hash unchanged)", () => {
      assert.deepStrictEqual(
        only(svc({ ...LOCAL }), {}, { ...NOTHING_OBSERVED, denyRulesHeld: ["default/other"] }),
        only(svc({ ...LOCAL })),
      );
    });
    const clusterCases: [string, ObservedCloud, number][] = [
      ["a Service stack still holds a deny rule: the node health-check firewall stays at 999", HELD, 999],
      [
        "Service stacks not read yet after a start, the firewall at 999 before: stays at 999",
        { ...NOTHING_OBSERVED, denyRulesUnread: true },
        999,
      ],
      ["none held, all read: back at 1000", NOTHING_OBSERVED, 1000],
    ];
    for (const [title, observed, priority] of clusterCases) {
      it(title, () =>
        assert.deepStrictEqual(
          desiredState({ nodes: NODES, services: [] }, CONFIG, observed).cluster.nodeHealthCheckFirewall,
          { ...NODE_HC_FIREWALL, priority },
        ),
      );
    }
  });
});

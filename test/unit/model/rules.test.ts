// Table tests of the pure building blocks of the model: names, predicates, ports, CIDRs.
import * as assert from "node:assert/strict";

import {
  CLUSTER_STACK,
  clusterDescription,
  GCE_NAME_PATTERN,
  instanceGroupName,
  negName,
  subnetInstanceGroupName,
  isValidGceName,
  loadBalancerName,
  nodeHealthCheckFirewallName,
  nodeHealthCheckName,
  protocolSuffixedName,
  ROUTE_DESCRIPTION,
  routeName,
  serviceDescription,
  serviceHealthCheckFirewallName,
  ipv6Name,
  serviceKey,
  serviceStackName,
  trafficFirewallName,
} from "../../../model/names";
import { cidrContains, formatIPv4, parseCidr4, parseIPv4, type CidrParse } from "../../../model/net";
import { collapsePortRanges, MAX_FORWARDING_RULE_PORTS } from "../../../model/ports";
import {
  isBackendNode,
  isUnmanagedNode,
  nodeInstance,
  wantsLoadBalancer,
  type InstanceLookup,
} from "../../../model/rules";
import type { NodeInfo, ServiceInfo } from "../../../model/types";
import { EXCLUDE, lbService, ZONE } from "../../support/builders";

const LEGACY_ZONE = "failure-domain.beta.kubernetes.io/zone";

function node(over: Partial<NodeInfo> = {}): NodeInfo {
  return {
    name: "n1",
    uid: "11111111-1111-4111-8111-111111111111",
    labels: {},
    taints: [],
    deleting: false,
    podCIDRs: [],
    ...over,
  };
}

function service(over: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", "web", "1b4e28ba-2fa1-41d2-883f-0016d3cca427", over);
}

describe("model/names", () => {
  describe('loadBalancerName: "a" + UID without dashes, cut to 32', () => {
    const cases: [string, string][] = [
      ["1b4e28ba-2fa1-41d2-883f-0016d3cca427", "a1b4e28ba2fa141d2883f0016d3cca42"],
      ["aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaaa00004000800000000000000"],
      ["aaaaaaaa-0000-4000-8000-000000000002", "aaaaaaaaa00004000800000000000000"],
      ["1b4e28ba2fa141d2883f0016d3cca427", "a1b4e28ba2fa141d2883f0016d3cca42"],
      ["abc-def", "aabcdef"],
      ["--", "a"],
      ["", "a"],
    ];
    for (const [uid, expected] of cases) {
      it(`${JSON.stringify(uid)} → ${expected}`, () => {
        assert.equal(loadBalancerName(uid), expected);
      });
    }
    it("is exactly 32 characters for a real UID", () => {
      assert.equal(loadBalancerName("1b4e28ba-2fa1-41d2-883f-0016d3cca427").length, 32);
    });
  });

  describe("every name of the docs/explanation/architecture.md#names table", () => {
    const lb = "a1b4e28ba2fa141d2883f0016d3cca42";
    const uid = "11111111-1111-4111-8111-111111111111";
    const cases: [string, string, string][] = [
      ["second protocol UDP", protocolSuffixedName(lb, "UDP"), "a1b4e28ba2fa141d2883f0016d3cca42-udp"],
      ["second protocol TCP", protocolSuffixedName(lb, "TCP"), "a1b4e28ba2fa141d2883f0016d3cca42-tcp"],
      ["traffic firewall", trafficFirewallName(lb), "k8s-fw-a1b4e28ba2fa141d2883f0016d3cca42"],
      [
        "per-service health check firewall",
        serviceHealthCheckFirewallName(lb),
        "k8s-a1b4e28ba2fa141d2883f0016d3cca42-http-hc",
      ],
      ["IPv6 address / first IPv6 forwarding rule", ipv6Name(lb), "a1b4e28ba2fa141d2883f0016d3cca42-ipv6"],
      [
        "IPv6 forwarding rule of a second protocol",
        ipv6Name(protocolSuffixedName(lb, "UDP")),
        "a1b4e28ba2fa141d2883f0016d3cca42-udp-ipv6",
      ],
      ["IPv6 traffic firewall", ipv6Name(trafficFirewallName(lb)), "k8s-fw-a1b4e28ba2fa141d2883f0016d3cca42-ipv6"],
      [
        "IPv6 health check firewall",
        ipv6Name(serviceHealthCheckFirewallName(lb)),
        "k8s-a1b4e28ba2fa141d2883f0016d3cca42-http-hc-ipv6",
      ],
      ["shared node health check", nodeHealthCheckName("c0ffee1234"), "k8s-c0ffee1234-node"],
      ["shared node health check firewall", nodeHealthCheckFirewallName("c0ffee1234"), "k8s-c0ffee1234-node-http-hc"],
      ["instance group", instanceGroupName("c0ffee1234"), "k8s-ig--c0ffee1234"],
      ["instance group, the zone's second", instanceGroupName("c0ffee1234", 2), "k8s-ig2--c0ffee1234"],
      [
        "instance group of another subnetwork",
        subnetInstanceGroupName("c0ffee1234", "other-subnet"),
        "k8s-ig--c0ffee1234-eb0aa583",
      ],
      [
        "instance group of another subnetwork, the zone's second",
        subnetInstanceGroupName("c0ffee1234", "other-subnet", 2),
        "k8s-ig2--c0ffee1234-eb0aa583",
      ],
      ["NEG in the default subnetwork", negName(lb, "k8s-subnet", "k8s-subnet"), lb],
      ["NEG in another subnetwork", negName(lb, "other-subnet", "k8s-subnet"), `${lb}-eb0aa583`],
      ["route", routeName("prod", uid), "prod-11111111-1111-4111-8111-111111111111"],
      [
        "route, cluster name cut to 26",
        routeName("a-very-long-cluster-name-that-goes-on", uid),
        "a-very-long-cluster-name-t-11111111-1111-4111-8111-111111111111",
      ],
      [
        "route, cluster name of exactly 26",
        routeName("abcdefghijklmnopqrstuvwxyz", uid),
        "abcdefghijklmnopqrstuvwxyz-11111111-1111-4111-8111-111111111111",
      ],
      ["service stack", serviceStackName("kube-system", "dns"), "service.kube-system.dns"],
      ["service key", serviceKey("kube-system", "dns"), "kube-system/dns"],
      [
        "service description",
        serviceDescription("kube-system/dns"),
        '{"kubernetes.io/service-name":"kube-system/dns"}',
      ],
      ["cluster description", clusterDescription("c0ffee1234"), '{"kubernetes.io/cluster-id":"c0ffee1234"}'],
      ["cluster stack", CLUSTER_STACK, "cluster"],
      ["route description", ROUTE_DESCRIPTION, "k8s-node-route"],
    ];
    for (const [what, actual, expected] of cases) {
      it(`${what}: ${expected}`, () => {
        assert.equal(actual, expected);
      });
    }
    it("the longest route name (26 + 1 + 36) is exactly 63 characters and a valid GCE name", () => {
      const name = routeName("abcdefghijklmnopqrstuvwxyz-and-more", uid);
      assert.equal(name.length, 63);
      assert.equal(isValidGceName(name), true);
    });
  });

  describe("isValidGceName", () => {
    const cases: [string, boolean][] = [
      ["a", true],
      ["k8s-fw-a1b4e28ba2fa141d2883f0016d3cca42", true],
      ["a".repeat(63), true],
      ["a".repeat(64), false],
      ["", false],
      ["1abc", false],
      ["-abc", false],
      ["abc-", false],
      ["Abc", false],
      ["ab_c", false],
      ["ab.c", false],
      ["ab c", false],
    ];
    for (const [name, valid] of cases) {
      it(`${JSON.stringify(name.length > 20 ? `${name.slice(0, 10)}…(${name.length})` : name)} → ${valid}`, () => {
        assert.equal(isValidGceName(name), valid);
        assert.equal(GCE_NAME_PATTERN.test(name), valid);
      });
    }
  });
});

describe("model/rules", () => {
  describe("wantsLoadBalancer", () => {
    const defaults = { loadBalancerClasses: ["dccm.io/gce"] };
    const cases: [string, Partial<ServiceInfo>, { loadBalancerClasses: string[] }, boolean][] = [
      ["LoadBalancer, no class", {}, defaults, true],
      ["ClusterIP", { type: "ClusterIP" }, defaults, false],
      ["NodePort", { type: "NodePort" }, defaults, false],
      ["ExternalName", { type: "ExternalName" }, defaults, false],
      ["type is case-sensitive", { type: "loadbalancer" }, defaults, false],
      ["our default class", { loadBalancerClass: "dccm.io/gce" }, defaults, true],
      ["a foreign class", { loadBalancerClass: "example.com/other" }, defaults, false],
      [
        "a class configured as ours",
        { loadBalancerClass: "example.com/other" },
        { loadBalancerClasses: ["dccm.io/gce", "example.com/other"] },
        true,
      ],
      [
        "the default class when the config replaced it",
        { loadBalancerClass: "dccm.io/gce" },
        { loadBalancerClasses: ["example.com/mine"] },
        false,
      ],
      ["no class with an empty class list", {}, { loadBalancerClasses: [] }, true],
      ["deleting", { deleting: true }, defaults, false],
      ["deleting, our class", { deleting: true, loadBalancerClass: "dccm.io/gce" }, defaults, false],
    ];
    for (const [what, over, config, expected] of cases) {
      it(`${what} → ${expected}`, () => {
        assert.equal(wantsLoadBalancer(service(over), config), expected);
      });
    }
  });

  describe("isUnmanagedNode: cloud.google.com/gke-unmanaged-node, the value true exactly (the stock CCM's comparison)", () => {
    const UNMANAGED = "cloud.google.com/gke-unmanaged-node";
    const cases: [string, Record<string, string>, boolean][] = [
      ["no label", {}, false],
      ['"true"', { [UNMANAGED]: "true" }, true],
      ['"True" (not the exact value)', { [UNMANAGED]: "True" }, false],
      ['"TRUE" (not the exact value)', { [UNMANAGED]: "TRUE" }, false],
      ['"1" (not the exact value)', { [UNMANAGED]: "1" }, false],
      ['"" (present but empty)', { [UNMANAGED]: "" }, false],
      ['"false"', { [UNMANAGED]: "false" }, false],
      ['" true" (not trimmed)', { [UNMANAGED]: " true" }, false],
      ["GKE's components.gke.io spelling is not read", { "components.gke.io/gke-unmanaged-node": "true" }, false],
    ];
    for (const [what, labels, expected] of cases) {
      it(`${what} → ${expected}`, () => {
        assert.equal(isUnmanagedNode(node({ labels })), expected);
      });
    }
  });

  describe("isBackendNode", () => {
    const cases: [string, Partial<NodeInfo>, boolean][] = [
      ["plain node", {}, true],
      [
        "not ready is not a criterion (no such field is even read)",
        { labels: { "kubernetes.io/hostname": "n1" } },
        true,
      ],
      ["deletionTimestamp set", { deleting: true }, false],
      ['exclude label "true"', { labels: { [EXCLUDE]: "true" } }, false],
      ['exclude label ""', { labels: { [EXCLUDE]: "" } }, false],
      ['exclude label "yes"', { labels: { [EXCLUDE]: "yes" } }, false],
      ['exclude label "1"', { labels: { [EXCLUDE]: "1" } }, false],
      ['exclude label "false"', { labels: { [EXCLUDE]: "false" } }, true],
      ['exclude label "False"', { labels: { [EXCLUDE]: "False" } }, true],
      ['exclude label "FALSE"', { labels: { [EXCLUDE]: "FALSE" } }, true],
      ['exclude label "f"', { labels: { [EXCLUDE]: "f" } }, true],
      ['exclude label "F"', { labels: { [EXCLUDE]: "F" } }, true],
      ['exclude label "0"', { labels: { [EXCLUDE]: "0" } }, true],
      ['exclude label "no" (not a strconv false)', { labels: { [EXCLUDE]: "no" } }, false],
      // k8s.io/cloud-provider controllers/service/controller.go nodeIncludedPredicate (v0.34.0 on):
      // strconv.ParseBool true → excluded, false → included, a parse error → excluded.
      ['exclude label "t" (a strconv true)', { labels: { [EXCLUDE]: "t" } }, false],
      ['exclude label "T" (a strconv true)', { labels: { [EXCLUDE]: "T" } }, false],
      ['exclude label "TRUE" (a strconv true)', { labels: { [EXCLUDE]: "TRUE" } }, false],
      ['exclude label "True" (a strconv true)', { labels: { [EXCLUDE]: "True" } }, false],
      ['exclude label "FaLsE" (not a strconv spelling)', { labels: { [EXCLUDE]: "FaLsE" } }, false],
      ['exclude label " false" (not a strconv spelling)', { labels: { [EXCLUDE]: " false" } }, false],
      [
        "autoscaler taint NoSchedule",
        { taints: [{ key: "ToBeDeletedByClusterAutoscaler", value: "1700000000", effect: "NoSchedule" }] },
        false,
      ],
      [
        "autoscaler taint without value",
        { taints: [{ key: "ToBeDeletedByClusterAutoscaler", effect: "NoExecute" }] },
        false,
      ],
      ["another taint", { taints: [{ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" }] }, true],
      ["the autoscaler key as a label does not exclude", { labels: { ToBeDeletedByClusterAutoscaler: "x" } }, true],
      ["deleting with a false exclude label", { deleting: true, labels: { [EXCLUDE]: "false" } }, false],
    ];
    for (const [what, over, expected] of cases) {
      it(`${what} → ${expected}`, () => {
        assert.equal(isBackendNode(node(over)), expected);
      });
    }
  });

  describe("nodeInstance", () => {
    const cases: [string, Partial<NodeInfo>, InstanceLookup][] = [
      [
        "gce://project/zone/name",
        { providerID: "gce://dccm-test/us-central1-a/vm-1" },
        { ok: true, instance: { zone: "us-central1-a", name: "vm-1" } },
      ],
      [
        "providerID wins over the labels and the node name",
        { providerID: "gce://dccm-test/us-central1-b/vm-2", labels: { [ZONE]: "us-central1-a" } },
        { ok: true, instance: { zone: "us-central1-b", name: "vm-2" } },
      ],
      [
        "domain-scoped project in a plain-project config",
        { providerID: "gce://example.com:dccm-test/us-central1-a/vm-1" },
        { ok: false, reason: "node n1: instance is in project example.com:dccm-test, not dccm-test" },
      ],
      [
        "wrong project",
        { providerID: "gce://other-project/us-central1-a/vm-1" },
        { ok: false, reason: "node n1: instance is in project other-project, not dccm-test" },
      ],
      [
        "another cloud",
        { providerID: "aws:///us-east-1a/i-0123" },
        {
          ok: false,
          reason: 'node n1: spec.providerID "aws:///us-east-1a/i-0123" is not gce://<project>/<zone>/<name>',
        },
      ],
      [
        "missing name",
        { providerID: "gce://dccm-test/us-central1-a" },
        {
          ok: false,
          reason: 'node n1: spec.providerID "gce://dccm-test/us-central1-a" is not gce://<project>/<zone>/<name>',
        },
      ],
      [
        "extra segment",
        { providerID: "gce://dccm-test/us-central1-a/vm/x" },
        {
          ok: false,
          reason: 'node n1: spec.providerID "gce://dccm-test/us-central1-a/vm/x" is not gce://<project>/<zone>/<name>',
        },
      ],
      [
        "empty segment",
        { providerID: "gce://dccm-test//vm" },
        { ok: false, reason: 'node n1: spec.providerID "gce://dccm-test//vm" is not gce://<project>/<zone>/<name>' },
      ],
      [
        "no providerID: zone label and node name",
        { labels: { [ZONE]: "us-central1-c" } },
        { ok: true, instance: { zone: "us-central1-c", name: "n1" } },
      ],
      [
        "empty providerID falls back to the labels",
        { providerID: "", labels: { [ZONE]: "us-central1-c" } },
        { ok: true, instance: { zone: "us-central1-c", name: "n1" } },
      ],
      [
        "legacy zone label",
        { labels: { [LEGACY_ZONE]: "us-central1-f" } },
        { ok: true, instance: { zone: "us-central1-f", name: "n1" } },
      ],
      [
        "current label wins over the legacy one",
        { labels: { [ZONE]: "us-central1-a", [LEGACY_ZONE]: "us-central1-f" } },
        { ok: true, instance: { zone: "us-central1-a", name: "n1" } },
      ],
      [
        "no providerID, no zone",
        { labels: { "kubernetes.io/hostname": "n1" } },
        { ok: false, reason: "node n1: no spec.providerID and no topology.kubernetes.io/zone label" },
      ],
      [
        "no providerID, empty zone label",
        { labels: { [ZONE]: "" } },
        { ok: false, reason: "node n1: no spec.providerID and no topology.kubernetes.io/zone label" },
      ],
    ];
    for (const [what, over, expected] of cases) {
      it(what, () => {
        assert.deepStrictEqual(nodeInstance(node(over), "dccm-test"), expected);
      });
    }
    it("domain-scoped project that matches", () => {
      assert.deepStrictEqual(
        nodeInstance(node({ providerID: "gce://example.com:dccm-test/us-central1-a/vm-1" }), "example.com:dccm-test"),
        {
          ok: true,
          instance: { zone: "us-central1-a", name: "vm-1" },
        },
      );
    });
  });
});

describe("model/ports collapsePortRanges", () => {
  const cases: [number[], string[]][] = [
    [[], []],
    [[80], ["80"]],
    [
      [80, 81, 82, 443],
      ["80-82", "443"],
    ],
    [
      [443, 82, 80, 81],
      ["80-82", "443"],
    ],
    [[80, 80, 81, 81], ["80-81"]],
    [
      [1, 3, 5],
      ["1", "3", "5"],
    ],
    [
      [1, 2, 4, 5, 7],
      ["1-2", "4-5", "7"],
    ],
    [[65534, 65535], ["65534-65535"]],
    [
      [9, 10, 100],
      ["9-10", "100"],
    ],
    [[53, 53], ["53"]],
  ];
  for (const [ports, expected] of cases) {
    it(`${JSON.stringify(ports)} → ${JSON.stringify(expected)}`, () => {
      assert.deepStrictEqual(collapsePortRanges(ports), expected);
    });
  }
  it("does not mutate its input", () => {
    const ports = [443, 80, 81];
    collapsePortRanges(ports);
    assert.deepStrictEqual(ports, [443, 80, 81]);
  });
  it("GCE takes at most five individual ports", () => {
    assert.equal(MAX_FORWARDING_RULE_PORTS, 5);
  });
});

describe("model/net", () => {
  describe("parseCidr4", () => {
    const notCidr = (text: string): CidrParse => ({
      ok: false,
      reason: `"${text}" is not a CIDR (expected a.b.c.d/n)`,
    });
    const cases: [string, CidrParse][] = [
      ["10.0.0.0/8", { ok: true, cidr: { base: 167772160, prefix: 8 }, canonical: "10.0.0.0/8" }],
      ["10.1.2.3/8", { ok: true, cidr: { base: 167772160, prefix: 8 }, canonical: "10.0.0.0/8" }],
      ["192.168.1.77/26", { ok: true, cidr: { base: 3232235840, prefix: 26 }, canonical: "192.168.1.64/26" }],
      ["192.0.2.7/32", { ok: true, cidr: { base: 3221225991, prefix: 32 }, canonical: "192.0.2.7/32" }],
      ["255.255.255.255/31", { ok: true, cidr: { base: 4294967294, prefix: 31 }, canonical: "255.255.255.254/31" }],
      ["1.2.3.4/0", { ok: true, cidr: { base: 0, prefix: 0 }, canonical: "0.0.0.0/0" }],
      ["0.0.0.0/0", { ok: true, cidr: { base: 0, prefix: 0 }, canonical: "0.0.0.0/0" }],
      ["  172.16.5.4/12 ", { ok: true, cidr: { base: 2886729728, prefix: 12 }, canonical: "172.16.0.0/12" }],
      ["10.0.0.0/33", notCidr("10.0.0.0/33")],
      ["10.0.0.0/99", notCidr("10.0.0.0/99")],
      ["10.0.0.0/08", notCidr("10.0.0.0/08")],
      ["10.0.0.0/-1", notCidr("10.0.0.0/-1")],
      ["10.0.0.0/", notCidr("10.0.0.0/")],
      ["10.0.0.0/8/9", notCidr("10.0.0.0/8/9")],
      ["256.0.0.0/8", notCidr("256.0.0.0/8")],
      ["010.0.0.0/8", notCidr("010.0.0.0/8")],
      ["10.0.0/8", notCidr("10.0.0/8")],
      ["10.0.0.0.0/8", notCidr("10.0.0.0.0/8")],
      ["garbage/8", notCidr("garbage/8")],
      ["/8", notCidr("/8")],
      ["10.0.0.0", { ok: false, reason: '"10.0.0.0" is not a CIDR (expected a.b.c.d/n)' }],
      ["garbage", { ok: false, reason: '"garbage" is not a CIDR (expected a.b.c.d/n)' }],
      ["", { ok: false, reason: '"" is not a CIDR (expected a.b.c.d/n)' }],
      ["2001:db8::/32", { ok: false, reason: '"2001:db8::/32" is an IPv6 range; only IPv4 ranges are supported' }],
      ["::/0", { ok: false, reason: '"::/0" is an IPv6 range; only IPv4 ranges are supported' }],
      [
        " ::ffff:10.0.0.0/104 ",
        { ok: false, reason: '"::ffff:10.0.0.0/104" is an IPv6 range; only IPv4 ranges are supported' },
      ],
    ];
    for (const [text, expected] of cases) {
      it(JSON.stringify(text), () => {
        assert.deepStrictEqual(parseCidr4(text), expected);
      });
    }
  });

  describe("parseIPv4 / formatIPv4", () => {
    const cases: [string, number | undefined][] = [
      ["0.0.0.0", 0],
      ["10.0.0.1", 167772161],
      ["255.255.255.255", 4294967295],
      ["256.0.0.1", undefined],
      ["1.2.3", undefined],
      ["1.2.3.4.5", undefined],
      ["01.2.3.4", undefined],
      ["1.2.3.-4", undefined],
      ["1.2.3.4 ", undefined],
      ["a.b.c.d", undefined],
      ["", undefined],
    ];
    for (const [text, expected] of cases) {
      it(`${JSON.stringify(text)} → ${String(expected)}`, () => {
        assert.equal(parseIPv4(text), expected);
        if (expected !== undefined) assert.equal(formatIPv4(expected), text);
      });
    }
  });

  describe("cidrContains", () => {
    const parse = (text: string) => {
      const parsed = parseCidr4(text);
      if (!parsed.ok) throw new Error(parsed.reason);
      return parsed.cidr;
    };
    const cases: [string, string, boolean][] = [
      ["10.64.0.0/14", "10.64.1.0/24", true],
      ["10.64.0.0/14", "10.67.255.0/24", true],
      ["10.64.0.0/14", "10.68.0.0/24", false],
      ["10.64.0.0/14", "10.63.255.0/24", false],
      ["10.64.0.0/14", "10.64.0.0/14", true],
      ["10.64.0.0/14", "10.64.0.0/13", false],
      ["0.0.0.0/0", "203.0.113.0/24", true],
    ];
    for (const [outer, inner, expected] of cases) {
      it(`${outer} ⊇ ${inner} → ${expected}`, () => {
        assert.equal(cidrContains(parse(outer), parse(inner)), expected);
      });
    }
  });
});

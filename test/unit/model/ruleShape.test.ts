/**
 * Tier 1: model/ruleShape.ts — which changes of a Service may replace its forwarding rules (and so
 * pin its ephemeral IP first: controllers/service/addressPins.ts), and which GCE makes in place.
 */
import * as assert from "node:assert/strict";

import { forwardingRuleShape, type ServiceDesired } from "../../../model";
import {
  externalServiceDesired,
  healthCheckFirewall,
  httpHealthCheck,
  ipv6Half,
  serviceFirewall,
} from "../../support/builders";

const LB = "a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3";
const KEY = "default/web";
const DESCRIPTION = '{"kubernetes.io/service-name":"default/web"}';
const TCP80 = [{ protocol: "tcp", ports: ["80"] }];

const BASE: ServiceDesired = externalServiceDesired("default", "web", "0b1f2f6e-4c1a-4d59-9e0e-7c1f9d1c2a3b", LB, [80]);
const INTERNAL: ServiceDesired = { ...BASE, scheme: "INTERNAL", subnetwork: "ilb-subnet" };
const TARGET_POOL: ServiceDesired = {
  ...BASE,
  backend: "target-pool",
  frontends: [{ name: LB, protocol: "TCP", ports: [80], portSelection: { kind: "range", portRange: "80-80" } }],
  backendZones: [],
  backendInstances: [{ zone: "us-central1-a", name: "node-a1" }],
};
const DEDICATED = httpHealthCheck(LB, 32000, DESCRIPTION);

describe("model: forwardingRuleShape (model/ruleShape.ts)", () => {
  it("the shape of the base Service, exactly", () => {
    assert.equal(
      forwardingRuleShape(BASE),
      JSON.stringify({
        scheme: "EXTERNAL",
        networkTier: "PREMIUM",
        subnetwork: null,
        backend: "backend-service",
        frontends: [[LB, "TCP", { kind: "ports", ports: ["80"] }]],
        targetPool: null,
        ipv6: null,
      }),
    );
  });

  const changes: [string, ServiceDesired, ServiceDesired][] = [
    ["the protocol (TCP → UDP)", BASE, { ...BASE, frontends: [{ ...BASE.frontends[0], protocol: "UDP" }] }],
    [
      "the ports",
      BASE,
      {
        ...BASE,
        frontends: [{ ...BASE.frontends[0], ports: [443], portSelection: { kind: "ports", ports: ["443"] } }],
      },
    ],
    [
      "the ports becoming a range (more than 5)",
      BASE,
      {
        ...BASE,
        frontends: [
          {
            ...BASE.frontends[0],
            ports: [80, 81, 82, 83, 84, 90],
            portSelection: { kind: "range", portRange: "80-90" },
          },
        ],
      },
    ],
    [
      "a second protocol (a second rule)",
      BASE,
      {
        ...BASE,
        frontends: [
          ...BASE.frontends,
          { name: `${LB}-udp`, protocol: "UDP", ports: [80], portSelection: { kind: "ports", ports: ["80"] } },
        ],
      },
    ],
    ["the network tier", BASE, { ...BASE, networkTier: "STANDARD" }],
    ["the scheme (external → internal)", BASE, INTERNAL],
    ["the internal subnetwork", INTERNAL, { ...INTERNAL, subnetwork: "other-subnet" }],
    ["the backend mode (backend service → target pool)", BASE, TARGET_POOL],
    [
      "target pool: the session affinity (the pool is replaced, the rule with it)",
      TARGET_POOL,
      { ...TARGET_POOL, sessionAffinity: "CLIENT_IP" },
    ],
    [
      "target pool: the health check, shared → dedicated (ETP Cluster → Local)",
      TARGET_POOL,
      { ...TARGET_POOL, healthCheck: { kind: "dedicated", spec: DEDICATED } },
    ],
    [
      "dual-stack: the IPv6 subnetwork",
      { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-subnet", ["::/0"], TCP80, 10256) },
      { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-other", ["::/0"], TCP80, 10256) },
    ],
    ["IPv4 → dual-stack", BASE, { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-subnet", ["::/0"], TCP80, 10256) }],
    [
      "dual-stack → IPv6 only",
      { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-subnet", ["::/0"], TCP80, 10256) },
      { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-subnet", ["::/0"], TCP80, 10256), ipv6Only: true },
    ],
  ];
  for (const [what, before, after] of changes)
    it(`changes the shape: ${what}`, () => assert.notEqual(forwardingRuleShape(after), forwardingRuleShape(before)));

  const same: [string, ServiceDesired, ServiceDesired][] = [
    [
      "the source ranges (the firewall only)",
      BASE,
      { ...BASE, firewall: serviceFirewall(KEY, LB, ["10.0.0.0/8"], TCP80) },
    ],
    ["the backends' zones", BASE, { ...BASE, backendZones: ["us-central1-c"] }],
    [
      "target pool: the instances",
      TARGET_POOL,
      { ...TARGET_POOL, backendInstances: [{ zone: "us-central1-b", name: "node-b1" }] },
    ],
    ["internal: global access (updated in place)", INTERNAL, { ...INTERNAL, allowGlobalAccess: true }],
    ["backend service: the session affinity (updated in place)", BASE, { ...BASE, sessionAffinity: "CLIENT_IP" }],
    [
      "backend service: the health check, shared → dedicated, and its firewall (the backend service is updated)",
      BASE,
      {
        ...BASE,
        healthCheck: { kind: "dedicated", spec: DEDICATED },
        healthCheckFirewall: healthCheckFirewall(`k8s-${LB}-http-hc`, 32000, DESCRIPTION),
      },
    ],
    [
      "backend service: the dedicated health check's timings",
      { ...BASE, healthCheck: { kind: "dedicated", spec: DEDICATED } },
      { ...BASE, healthCheck: { kind: "dedicated", spec: { ...DEDICATED, checkIntervalSec: 30, timeoutSec: 5 } } },
    ],
    [
      "target pool: the dedicated health check's port (the legacy check is updated in place)",
      { ...TARGET_POOL, healthCheck: { kind: "dedicated", spec: DEDICATED } },
      { ...TARGET_POOL, healthCheck: { kind: "dedicated", spec: { ...DEDICATED, port: 32001 } } },
    ],
    ["a user-owned loadBalancerIP (never pinned: the user's)", BASE, { ...BASE, userIP: "203.0.113.50" }],
    ["the life-long reservation", BASE, { ...BASE, reserveAddress: true }],
    [
      "the IPv6 source ranges",
      { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-subnet", ["::/0"], TCP80, 10256) },
      { ...BASE, ipv6: ipv6Half(KEY, LB, "v6-subnet", ["2001:db8::/32"], TCP80, 10256) },
    ],
  ];
  for (const [what, before, after] of same)
    it(`keeps the shape: ${what}`, () => assert.equal(forwardingRuleShape(after), forwardingRuleShape(before)));
});

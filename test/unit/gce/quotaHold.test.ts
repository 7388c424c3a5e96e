import * as assert from "node:assert/strict";
import fc from "fast-check";

import {
  heldInOrder,
  quotaHeadroom,
  quotaHeldMessage,
  quotaNeeds,
  quotaShortfalls,
  type QuotaNeed,
} from "../../../gce/quotaHold";
import type { ProjectQuotas } from "../../../gce/quotas";
import type { ServiceDesired } from "../../../model";
import {
  denyFirewall,
  externalServiceDesired,
  healthCheckFirewall,
  httpHealthCheck,
  ipv6Half,
  describedBy,
} from "../../support/builders";

const KEY = "default/web";
const LB = "a1234567890";
const base = externalServiceDesired("default", "web", "uid-1", LB, [80]);
const udp = {
  name: `${LB}-udp`,
  protocol: "UDP" as const,
  ports: [53],
  portSelection: { kind: "ports" as const, ports: ["53"] },
};
const dedicated = { kind: "dedicated" as const, spec: httpHealthCheck(`k8s-${LB}-hc`, 31000, describedBy(KEY)) };
const hcFirewall = healthCheckFirewall(`k8s-${LB}-http-hc`, 31000, describedBy(KEY));
const v6 = ipv6Half(KEY, LB, "dual", ["::/0"], [{ protocol: "tcp", ports: ["80"] }], 10256);

function quotas(regional: Record<string, [number, number]>, global: Record<string, [number, number]>): ProjectQuotas {
  const list = (rows: Record<string, [number, number]>): { metric: string; usage: number; limit: number }[] =>
    Object.entries(rows).map(([metric, [usage, limit]]) => ({ metric, usage, limit }));
  return { region: "us-central1", regional: list(regional), global: list(global) };
}

describe("gce/quotaHold", () => {
  describe("quotaNeeds: what a first up creates, per quota", () => {
    const rows: [string, ServiceDesired, QuotaNeed[]][] = [
      [
        "one TCP frontend, shared check, no address held (ephemeral IP)",
        base,
        [
          { metric: "FORWARDING_RULES", amount: 1 },
          { metric: "BACKEND_SERVICES", amount: 1 },
          { metric: "FIREWALLS", amount: 1 },
        ],
      ],
      [
        "the address held for the Service's life: one STATIC_ADDRESSES",
        { ...base, reserveAddress: true },
        [
          { metric: "STATIC_ADDRESSES", amount: 1 },
          { metric: "FORWARDING_RULES", amount: 1 },
          { metric: "BACKEND_SERVICES", amount: 1 },
          { metric: "FIREWALLS", amount: 1 },
        ],
      ],
      [
        "internal with the address held: INTERNAL_ADDRESSES",
        { ...base, scheme: "INTERNAL", subnetwork: "k8s-subnet", reserveAddress: true },
        [
          { metric: "INTERNAL_ADDRESSES", amount: 1 },
          { metric: "FORWARDING_RULES", amount: 1 },
          { metric: "BACKEND_SERVICES", amount: 1 },
          { metric: "FIREWALLS", amount: 1 },
        ],
      ],
      [
        "TCP and UDP, ETP=Local (dedicated check and its firewall), deny rule",
        {
          ...base,
          frontends: [...base.frontends, udp],
          healthCheck: dedicated,
          healthCheckFirewall: hcFirewall,
          denyFirewall: denyFirewall(KEY, LB, "ipv4"),
        },
        [
          { metric: "FORWARDING_RULES", amount: 2 },
          { metric: "BACKEND_SERVICES", amount: 2 },
          { metric: "HEALTH_CHECKS", amount: 1 },
          { metric: "FIREWALLS", amount: 3 },
        ],
      ],
      [
        "neg mode: a backend service per frontend as with instance groups (its NEGs are the cluster stack's, not counted here)",
        {
          ...base,
          backend: "neg",
          backendZones: [],
          backendNegs: [{ zone: "us-central1-a", name: LB, subnetwork: "k8s-subnet" }],
        },
        [
          { metric: "FORWARDING_RULES", amount: 1 },
          { metric: "BACKEND_SERVICES", amount: 1 },
          { metric: "FIREWALLS", amount: 1 },
        ],
      ],
      [
        "target-pool mode: one pool, no backend service",
        { ...base, backend: "target-pool", healthCheck: dedicated },
        [
          { metric: "FORWARDING_RULES", amount: 1 },
          { metric: "TARGET_POOLS", amount: 1 },
          { metric: "HEALTH_CHECKS", amount: 1 },
          { metric: "FIREWALLS", amount: 1 },
        ],
      ],
      [
        "dual-stack: an IPv6 rule per frontend, the <lb>-ipv6 address, the IPv6 firewall and health-check firewall",
        { ...base, ipv6: v6 },
        [
          { metric: "STATIC_ADDRESSES", amount: 1 },
          { metric: "FORWARDING_RULES", amount: 2 },
          { metric: "BACKEND_SERVICES", amount: 1 },
          { metric: "FIREWALLS", amount: 3 },
        ],
      ],
      [
        "single-stack IPv6 with the user's IPv6 address and a deny rule: nothing of IPv4, no address",
        {
          ...base,
          ipv6Only: true,
          ipv6: {
            ...ipv6Half(KEY, LB, "dual", ["::/0"], [], 10256, "2600:1900::1"),
            denyFirewall: denyFirewall(KEY, LB, "ipv6"),
          },
        },
        [
          { metric: "FORWARDING_RULES", amount: 1 },
          { metric: "BACKEND_SERVICES", amount: 1 },
          { metric: "FIREWALLS", amount: 3 },
        ],
      ],
    ];
    for (const [name, service, expected] of rows) {
      it(name, () => assert.deepEqual(quotaNeeds(service), expected));
    }
  });

  describe("quotaShortfalls and the Warning", () => {
    const needs: QuotaNeed[] = [
      { metric: "STATIC_ADDRESSES", amount: 1 },
      { metric: "FORWARDING_RULES", amount: 2 },
    ];

    it("fits exactly: nothing short", () => {
      assert.deepEqual(
        quotaShortfalls(needs, quotas({ STATIC_ADDRESSES: [7, 8] }, { FORWARDING_RULES: [13, 15] }), []),
        [],
      );
    });

    it("a quota GCE did not report is not checked", () => {
      assert.deepEqual(quotaShortfalls(needs, quotas({}, {}), []), []);
    });

    it("each quota short, with usage, limit, what others claimed and the need; the exact message", () => {
      const shortfalls = quotaShortfalls(needs, quotas({ STATIC_ADDRESSES: [8, 8] }, { FORWARDING_RULES: [12, 15] }), [
        { metric: "FORWARDING_RULES", amount: 2 },
      ]);
      assert.deepEqual(shortfalls, [
        { metric: "STATIC_ADDRESSES", where: "region us-central1", usage: 8, limit: 8, claimed: 0, need: 1 },
        { metric: "FORWARDING_RULES", where: "global", usage: 12, limit: 15, claimed: 2, need: 2 },
      ]);
      assert.equal(
        quotaHeldMessage(shortfalls, 300_000),
        "Load balancer not created: GCE quota STATIC_ADDRESSES (region us-central1) has 8 of 8 in use or being created, and this load balancer needs 1; GCE quota FORWARDING_RULES (global) has 14 of 15 in use or being created, and this load balancer needs 2. Held until a load balancer is deleted or 5 minutes pass; release unused resources or raise the quota",
      );
    });
  });

  it("quotaHeadroom: limit − usage of each reported quota a load balancer consumes, in order; others left out", () => {
    const read = quotas(
      { STATIC_ADDRESSES: [3, 8], IN_USE_ADDRESSES: [1, 8], INTERNAL_ADDRESSES: [0, 200] },
      { FIREWALLS: [40, 100], FORWARDING_RULES: [2, 15], SNAPSHOTS: [0, 1000] },
    );
    assert.deepEqual(quotaHeadroom(read), [
      { quota: "STATIC_ADDRESSES", scope: "region", region: "us-central1", limit: 8, usage: 3, headroom: 5 },
      { quota: "INTERNAL_ADDRESSES", scope: "region", region: "us-central1", limit: 200, usage: 0, headroom: 200 },
      { quota: "FORWARDING_RULES", scope: "global", limit: 15, usage: 2, headroom: 13 },
      { quota: "FIREWALLS", scope: "global", limit: 100, usage: 40, headroom: 60 },
    ]);
  });

  it("heldInOrder: each up let through claims its needs before the next is weighed", () => {
    const one: QuotaNeed[] = [{ metric: "FORWARDING_RULES", amount: 1 }];
    const held = heldInOrder(
      [
        { key: "default/a", needs: one },
        { key: "default/b", needs: [{ metric: "FORWARDING_RULES", amount: 2 }] },
        { key: "default/c", needs: one },
      ],
      quotas({}, { FORWARDING_RULES: [13, 15] }),
    );
    assert.deepEqual(held, [
      {
        key: "default/b",
        shortfalls: [{ metric: "FORWARDING_RULES", where: "global", usage: 13, limit: 15, claimed: 1, need: 2 }],
      },
    ]);
  });

  it("property: the ups heldInOrder lets through never need more than the headroom, and a held one would not have fit", () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 20 }),
        fc.nat({ max: 20 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 12 }),
        (usage, room, amounts) => {
          const read = quotas({}, { FIREWALLS: [usage, usage + room] });
          const ups = amounts.map((amount, i) => ({
            key: `ns/s${i}`,
            needs: [{ metric: "FIREWALLS" as const, amount }],
          }));
          const held = new Set(heldInOrder(ups, read).map((h) => h.key));
          let used = 0;
          for (const [i, amount] of amounts.entries()) {
            if (held.has(`ns/s${i}`)) assert.ok(used + amount > room);
            else used += amount;
          }
          assert.ok(used <= room);
        },
      ),
    );
  });
});

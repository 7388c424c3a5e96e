// The rules dccm publishes instead of writing them (firewallManagement manual / auto): the gcloud
// commands of the Event LoadBalancerManualChange, the Terraform snippet of `dccm firewalls`, and
// which changes a network team must make (docs/guides/shared-vpc.md#firewallmanagement).
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import {
  firewallChanges,
  firewallsPublished,
  gcloudCommand,
  manualChangeMessage,
  shellQuote,
  terraformSnippet,
  type PublishedFirewall,
} from "../../../model/firewallCommands";
import type { DenyFirewallSpec, FirewallSpec } from "../../../model/types";
import { parseGcloudFirewallCommand, shellWords } from "../../support/gcloudArgs";

const DESCRIPTION = '{"kubernetes.io/service-name":"default/web", "kubernetes.io/service-ip":"34.1.2.3"}';

const ALLOW: FirewallSpec = {
  name: "k8s-fw-a1b2c3",
  description: DESCRIPTION,
  sourceRanges: ["10.0.0.0/8", "0.0.0.0/0"],
  targetTags: ["node-b", "node-a"],
  allows: [
    { protocol: "udp", ports: ["53"] },
    { protocol: "tcp", ports: ["8000-8080", "443"] },
  ],
  priority: 1000,
};
const ALLOW_RULE: PublishedFirewall = { action: "allow", spec: ALLOW, destinationRanges: ["34.1.2.3"] };

const IPV6_RULE: PublishedFirewall = {
  action: "allow",
  spec: { ...ALLOW, name: "k8s-fw-a1b2c3-ipv6", sourceRanges: ["::/0"], allows: [{ protocol: "tcp", ports: ["80"] }] },
  destinationRanges: ["2600:1900:4000::1"],
};

const NODE_HC: PublishedFirewall = {
  action: "allow",
  spec: {
    name: "k8s-8f3e-node-http-hc",
    description: "",
    sourceRanges: ["35.191.0.0/16", "130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22"],
    targetTags: ["node-a"],
    allows: [{ protocol: "tcp", ports: ["10256"] }],
    priority: 1000,
  },
  destinationRanges: [],
};

const DENY: DenyFirewallSpec = {
  name: "k8s-fw-a1b2c3-deny",
  description: DESCRIPTION,
  sourceRanges: ["0.0.0.0/0"],
  targetTags: ["node-a"],
  destination: { kind: "address" },
  priority: 1000,
};
const DENY_RULE: PublishedFirewall = { action: "deny", spec: DENY, destinationRanges: ["34.1.2.3"] };

const QUOTED_DESCRIPTION = `'{"kubernetes.io/service-name":"default/web", "kubernetes.io/service-ip":"34.1.2.3"}'`;

describe("model: firewall commands (firewallManagement manual / auto)", () => {
  describe("gcloudCommand", () => {
    const cases: [string, Parameters<typeof gcloudCommand>[0], string][] = [
      [
        "create, an allow rule with ports and a range, sorted as the stock CCM sorts",
        { kind: "create", rule: ALLOW_RULE },
        "gcloud compute firewall-rules create k8s-fw-a1b2c3 --network shared-net --direction ingress " +
          `--description ${QUOTED_DESCRIPTION} --allow tcp:443,tcp:8000-8080,udp:53 ` +
          "--source-ranges 0.0.0.0/0,10.0.0.0/8 --target-tags node-a,node-b --destination-ranges 34.1.2.3 " +
          "--priority 1000 --project host-vpc-1",
      ],
      [
        "update names no network (it cannot change)",
        { kind: "update", rule: ALLOW_RULE },
        "gcloud compute firewall-rules update k8s-fw-a1b2c3 " +
          `--description ${QUOTED_DESCRIPTION} --allow tcp:443,tcp:8000-8080,udp:53 ` +
          "--source-ranges 0.0.0.0/0,10.0.0.0/8 --target-tags node-a,node-b --destination-ranges 34.1.2.3 " +
          "--priority 1000 --project host-vpc-1",
      ],
      [
        "IPv6",
        { kind: "create", rule: IPV6_RULE },
        "gcloud compute firewall-rules create k8s-fw-a1b2c3-ipv6 --network shared-net --direction ingress " +
          `--description ${QUOTED_DESCRIPTION} --allow tcp:80 --source-ranges ::/0 --target-tags node-a,node-b ` +
          "--destination-ranges 2600:1900:4000::1 --priority 1000 --project host-vpc-1",
      ],
      [
        "the node health-check rule: no destination, an empty description",
        { kind: "create", rule: NODE_HC },
        "gcloud compute firewall-rules create k8s-8f3e-node-http-hc --network shared-net --direction ingress " +
          "--description '' --allow tcp:10256 " +
          "--source-ranges 130.211.0.0/22,209.85.152.0/22,209.85.204.0/22,35.191.0.0/16 --target-tags node-a " +
          "--priority 1000 --project host-vpc-1",
      ],
      [
        "a deny rule of enableL4DenyFirewall",
        { kind: "create", rule: DENY_RULE },
        "gcloud compute firewall-rules create k8s-fw-a1b2c3-deny --network shared-net --direction ingress --action deny " +
          `--description ${QUOTED_DESCRIPTION} --rules all --source-ranges 0.0.0.0/0 --target-tags node-a ` +
          "--destination-ranges 34.1.2.3 --priority 1000 --project host-vpc-1",
      ],
      [
        "an allow above the deny, priority 999",
        {
          kind: "update",
          rule: { ...ALLOW_RULE, spec: { ...ALLOW, priority: 999, allows: [{ protocol: "icmp", ports: [] }] } },
        },
        "gcloud compute firewall-rules update k8s-fw-a1b2c3 " +
          `--description ${QUOTED_DESCRIPTION} --allow icmp ` +
          "--source-ranges 0.0.0.0/0,10.0.0.0/8 --target-tags node-a,node-b --destination-ranges 34.1.2.3 " +
          "--priority 999 --project host-vpc-1",
      ],
      [
        "delete, as FirewallToGCloudDeleteCmd",
        { kind: "delete", name: "k8s-fw-a1b2c3" },
        "gcloud compute firewall-rules delete k8s-fw-a1b2c3 --project host-vpc-1",
      ],
    ];
    for (const [title, change, expected] of cases)
      it(title, () => assert.equal(gcloudCommand(change, "host-vpc-1", "shared-net"), expected));

    it("the Event message is the stock CCM's", () =>
      assert.equal(
        manualChangeMessage("gcloud compute firewall-rules delete k8s-fw-a --project p"),
        "Firewall change required by security admin: `gcloud compute firewall-rules delete k8s-fw-a --project p`",
      ));

    it("reads back as the same rule: every flag, each list sorted (property)", () =>
      fc.assert(
        fc.property(
          fc.string(),
          fc.array(fc.constantFrom("10.0.0.0/8", "0.0.0.0/0", "::/0", "192.168.0.0/16"), { minLength: 1 }),
          fc.array(fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/), { minLength: 1 }),
          (description, sourceRanges, targetTags) => {
            const rule: PublishedFirewall = {
              ...ALLOW_RULE,
              spec: { ...ALLOW, description, sourceRanges, targetTags },
            };
            const parsed = parseGcloudFirewallCommand(gcloudCommand({ kind: "create", rule }, "host-vpc-1", "net"));
            assert.equal(parsed.name, ALLOW.name);
            assert.equal(parsed.flags.get("description"), description);
            assert.equal(parsed.flags.get("source-ranges"), [...sourceRanges].sort().join(","));
            assert.equal(parsed.flags.get("target-tags"), [...targetTags].sort().join(","));
            assert.equal(parsed.flags.get("project"), "host-vpc-1");
          },
        ),
      ));
  });

  describe("shellQuote", () => {
    for (const [value, expected] of [
      ["host-vpc-1", "host-vpc-1"],
      ["", "''"],
      ["a b", "'a b'"],
      ["it's $HOME `x`", `'it'\\''s $HOME \`x\`'`],
    ] as const)
      it(`${JSON.stringify(value)} → ${expected}`, () => assert.equal(shellQuote(value), expected));

    it("a shell reads back the value it quoted (property)", () =>
      fc.assert(
        fc.property(fc.string(), (value) =>
          assert.deepEqual(shellWords(`x ${shellQuote(value)} y`), ["x", value, "y"]),
        ),
      ));
  });

  describe("terraformSnippet", () => {
    it("an allow rule", () =>
      assert.equal(
        terraformSnippet(ALLOW_RULE, "host-vpc-1", "shared-net"),
        [
          'resource "google_compute_firewall" "k8s_fw_a1b2c3" {',
          '  project       = "host-vpc-1"',
          '  name          = "k8s-fw-a1b2c3"',
          '  network       = "shared-net"',
          `  description   = ${JSON.stringify(DESCRIPTION)}`,
          '  direction     = "INGRESS"',
          "  priority      = 1000",
          '  source_ranges = ["0.0.0.0/0", "10.0.0.0/8"]',
          '  target_tags   = ["node-a", "node-b"]',
          '  destination_ranges = ["34.1.2.3"]',
          "  allow {",
          '    protocol = "tcp"',
          '    ports    = ["443", "8000-8080"]',
          "  }",
          "  allow {",
          '    protocol = "udp"',
          '    ports    = ["53"]',
          "  }",
          "}",
        ].join("\n"),
      ));
    it("a deny rule; ${ in a description is escaped", () =>
      assert.equal(
        terraformSnippet({ ...DENY_RULE, spec: { ...DENY, description: "x ${y}" } }, "host-vpc-1", "shared-net"),
        [
          'resource "google_compute_firewall" "k8s_fw_a1b2c3_deny" {',
          '  project       = "host-vpc-1"',
          '  name          = "k8s-fw-a1b2c3-deny"',
          '  network       = "shared-net"',
          '  description   = "x $${y}"',
          '  direction     = "INGRESS"',
          "  priority      = 1000",
          '  source_ranges = ["0.0.0.0/0"]',
          '  target_tags   = ["node-a"]',
          '  destination_ranges = ["34.1.2.3"]',
          "  deny {",
          '    protocol = "all"',
          "  }",
          "}",
        ].join("\n"),
      ));
  });

  describe("firewallsPublished: the manual / auto decision", () => {
    for (const [management, refused, expected] of [
      [undefined, false, false],
      [undefined, true, false],
      ["managed", true, false],
      ["manual", false, true],
      ["manual", true, true],
      ["auto", false, false],
      ["auto", true, true],
    ] as const)
      it(`${management ?? "absent"}, refused ${refused} → ${expected}`, () =>
        assert.equal(firewallsPublished(management, refused), expected));
  });

  describe("firewallChanges", () => {
    it("nothing live read: every rule is created, a rule dccm made and no longer wants is deleted", () =>
      assert.deepEqual(firewallChanges([IPV6_RULE, ALLOW_RULE], undefined, ["k8s-fw-old"]), [
        { kind: "create", rule: ALLOW_RULE },
        { kind: "create", rule: IPV6_RULE },
        { kind: "delete", name: "k8s-fw-old" },
      ]));
    it("live and equal: no change; live and different: update; owned and unwanted: delete; unowned: kept", () =>
      assert.deepEqual(
        firewallChanges(
          [ALLOW_RULE, IPV6_RULE],
          new Map<string, PublishedFirewall>([
            [ALLOW.name, { ...ALLOW_RULE, spec: { ...ALLOW, targetTags: ["node-a", "node-b"] } }],
            [IPV6_RULE.spec.name, { ...IPV6_RULE, destinationRanges: ["2600:1900:4000::2"] }],
            ["k8s-fw-old", { ...ALLOW_RULE, spec: { ...ALLOW, name: "k8s-fw-old" } }],
            ["team-rule", { ...ALLOW_RULE, spec: { ...ALLOW, name: "team-rule" } }],
          ]),
          ["k8s-fw-old"],
        ),
        [
          { kind: "update", rule: IPV6_RULE },
          { kind: "delete", name: "k8s-fw-old" },
        ],
      ));
  });
});

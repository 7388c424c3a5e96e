// Tier 1: firewallManagement manual's decisions (controllers/service/manualFirewalls.ts), and its
// adapter against a fake Compute: the Events a Service gets after its stack's up.
import * as assert from "node:assert/strict";
import * as fc from "fast-check";
import pino from "pino";

import {
  liveRule,
  ManualFirewalls,
  manualChangeMessages,
  publishedOf,
  wantedRules,
} from "../../../../controllers/service/manualFirewalls";
import type { FirewallSpec, PublishedFirewall } from "../../../../model";
import type { EventTarget } from "../../../../runtime/events";
import { externalServiceDesired } from "../../../support/builders";

const HOST = "host-vpc-1";
const NETWORK = "k8s-net";
const DESCRIPTION = '{"kubernetes.io/service-name":"default/web"}';

const WEB: PublishedFirewall = {
  action: "allow",
  spec: {
    name: "k8s-fw-a1",
    description: DESCRIPTION,
    sourceRanges: ["0.0.0.0/0"],
    targetTags: ["k8s-node"],
    allows: [{ protocol: "tcp", ports: ["80", "443"] }],
    priority: 1000,
  },
  destinationRanges: ["34.1.2.3"],
};

const DENY: PublishedFirewall = {
  action: "deny",
  spec: {
    name: "k8s-fw-a1-deny",
    description: DESCRIPTION,
    sourceRanges: ["0.0.0.0/0"],
    targetTags: ["k8s-node"],
    destination: { kind: "address" },
    priority: 1000,
  },
  destinationRanges: ["34.1.2.3"],
};

const NODE_HC: FirewallSpec = {
  name: "k8s-c0ffee-node-http-hc",
  description: '{"kubernetes.io/cluster-id":"c0ffee"}',
  sourceRanges: ["130.211.0.0/22", "35.191.0.0/16"],
  targetTags: ["k8s-node"],
  allows: [{ protocol: "tcp", ports: ["10256"] }],
  priority: 1000,
};

const CREATE_WEB =
  "Firewall change required by security admin: `gcloud compute firewall-rules create k8s-fw-a1 --network k8s-net --direction ingress " +
  `--description '${DESCRIPTION}' --allow tcp:443,tcp:80 --source-ranges 0.0.0.0/0 --target-tags k8s-node ` +
  "--destination-ranges 34.1.2.3 --priority 1000 --project host-vpc-1`";
const CREATE_DENY =
  "Firewall change required by security admin: `gcloud compute firewall-rules create k8s-fw-a1-deny --network k8s-net --direction ingress --action deny " +
  `--description '${DESCRIPTION}' --rules all --source-ranges 0.0.0.0/0 --target-tags k8s-node ` +
  "--destination-ranges 34.1.2.3 --priority 1000 --project host-vpc-1`";
const UPDATE_WEB_IP =
  "Firewall change required by security admin: `gcloud compute firewall-rules update k8s-fw-a1 " +
  `--description '${DESCRIPTION}' --allow tcp:443,tcp:80 --source-ranges 0.0.0.0/0 --target-tags k8s-node ` +
  "--destination-ranges 34.1.2.3 --priority 1000 --project host-vpc-1`";

/** A rule as GCE stores and returns it once the network team ran its create (compute#firewall). */
function gceBody(rule: PublishedFirewall): Record<string, unknown> {
  const { spec } = rule;
  return {
    kind: "compute#firewall",
    name: spec.name,
    description: spec.description,
    network: `https://www.googleapis.com/compute/v1/projects/${HOST}/global/networks/${NETWORK}`,
    direction: "INGRESS",
    priority: spec.priority,
    sourceRanges: spec.sourceRanges,
    targetTags: spec.targetTags,
    ...(rule.destinationRanges.length > 0 ? { destinationRanges: rule.destinationRanges } : {}),
    ...(rule.action === "deny"
      ? { denied: [{ IPProtocol: "all" }] }
      : {
          allowed: rule.spec.allows.map((allow) => ({
            IPProtocol: allow.protocol,
            ...(allow.ports.length > 0 ? { ports: allow.ports } : {}),
          })),
        }),
  };
}

function liveOf(...rules: PublishedFirewall[]): Map<string, PublishedFirewall> {
  return new Map(rules.map((rule) => [rule.spec.name, liveRule(gceBody(rule)) as PublishedFirewall]));
}

describe("controllers/service/manualFirewalls", () => {
  describe("manualChangeMessages: one Event per rule that is missing or differs", () => {
    const changedIp: PublishedFirewall = { ...WEB, destinationRanges: ["34.9.9.9"] };
    const cases: [string, PublishedFirewall[], Map<string, PublishedFirewall> | undefined, string[]][] = [
      ["nothing read (no Compute access): every rule a create", [DENY, WEB], undefined, [CREATE_WEB, CREATE_DENY]],
      ["nothing live: every rule a create", [WEB, DENY], liveOf(), [CREATE_WEB, CREATE_DENY]],
      ["live and equal: no Event", [WEB, DENY], liveOf(WEB, DENY), []],
      ["one live and equal, one missing: the missing one", [WEB, DENY], liveOf(WEB), [CREATE_DENY]],
      ["live with another destination: an update", [WEB], liveOf(changedIp), [UPDATE_WEB_IP]],
      ["a live rule no longer wanted: never told for deletion", [], liveOf(WEB), []],
    ];
    for (const [what, wanted, live, want] of cases)
      it(what, () => assert.deepStrictEqual(manualChangeMessages(wanted, live, HOST, NETWORK), want));

    it("property: every rule, once GCE holds it as its create made it, is told no more", () => {
      const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
      const rule = fc.record({
        name: word.map((name) => `k8s-fw-${name}`),
        sourceRanges: fc.uniqueArray(fc.constantFrom("0.0.0.0/0", "10.0.0.0/8", "192.168.0.0/16"), { minLength: 1 }),
        targetTags: fc.uniqueArray(word, { minLength: 1, maxLength: 3 }),
        ports: fc.uniqueArray(fc.integer({ min: 1, max: 65535 }).map(String), { maxLength: 4 }),
        protocol: fc.constantFrom("tcp", "udp"),
        destination: fc.option(fc.constantFrom("34.1.2.3", "10.128.0.9"), { nil: undefined }),
        priority: fc.constantFrom(999, 1000),
        deny: fc.boolean(),
      });
      fc.assert(
        fc.property(fc.uniqueArray(rule, { selector: (r) => r.name, maxLength: 4 }), (rules) => {
          const wanted = rules.map((r): PublishedFirewall => {
            const common = {
              name: r.name,
              description: DESCRIPTION,
              sourceRanges: r.sourceRanges,
              targetTags: r.targetTags,
              priority: r.priority,
            };
            const destinationRanges = r.destination === undefined ? [] : [r.destination];
            return r.deny
              ? { action: "deny", spec: { ...common, destination: { kind: "address" } }, destinationRanges }
              : {
                  action: "allow",
                  spec: { ...common, allows: [{ protocol: r.protocol, ports: r.ports }] },
                  destinationRanges,
                };
          });
          assert.deepStrictEqual(manualChangeMessages(wanted, liveOf(...wanted), HOST, NETWORK), []);
        }),
      );
    });
  });

  describe("wantedRules", () => {
    const shared = externalServiceDesired("default", "web", "uid-web", "a1", [80]);
    const dedicated = {
      healthCheck: { kind: "dedicated" as const, spec: shared.healthCheck.spec },
    };
    const nodeRule: PublishedFirewall = { action: "allow", spec: NODE_HC, destinationRanges: [] };
    const cluster = [nodeRule];
    it("a Service the shared node health check probes: its rules and the node health-check rule, by name", () =>
      assert.deepStrictEqual(wantedRules(shared, [WEB, DENY], cluster), [nodeRule, WEB, DENY]));
    it("a Service with its own health check: its rules only", () =>
      assert.deepStrictEqual(wantedRules(dedicated, [WEB], cluster), [WEB]));
  });

  describe("publishedOf", () => {
    const outputs = (published: unknown): Record<string, unknown> => ({
      loadBalancers: { "default/web": { ingress: ["34.1.2.3"], publishedFirewalls: published } },
    });
    const cases: [string, Record<string, unknown>, PublishedFirewall[]][] = [
      ["the recorded rules, as recorded", outputs([DENY, WEB]), [DENY, WEB]],
      ["a managed stack's outputs: none", { loadBalancers: { "default/web": { ingress: [] } } }, []],
      ["another Service's outputs: none", { loadBalancers: { "default/db": { publishedFirewalls: [WEB] } } }, []],
      [
        "an entry of another shape is left out",
        outputs([{ action: "allow", spec: { name: "x" } }, WEB, "k8s-fw-a1"]),
        [WEB],
      ],
      ["no outputs", {}, []],
    ];
    for (const [what, given, want] of cases)
      it(what, () => assert.deepStrictEqual(publishedOf(given, "default/web"), want));
    it("the cluster stack's: its node health-check rule", () =>
      assert.deepStrictEqual(
        publishedOf({ publishedFirewalls: [{ action: "allow", spec: NODE_HC, destinationRanges: [] }] }),
        [{ action: "allow", spec: NODE_HC, destinationRanges: [] }],
      ));
    it("a managed cluster stack's: none", () => assert.deepStrictEqual(publishedOf({ routes: {} }), []));
  });

  describe("liveRule", () => {
    it("reads a GCE allow rule, ports and all", () => assert.deepStrictEqual(liveRule(gceBody(WEB)), WEB));
    it("reads a GCE deny rule with its IP as destination", () =>
      assert.deepStrictEqual(liveRule(gceBody(DENY)), {
        ...DENY,
        spec: { ...DENY.spec, destination: { kind: "ip", ip: "34.1.2.3" } },
      }));
    it("a rule without priority reads as GCE's default 1000; without ports as the bare protocol", () =>
      assert.deepStrictEqual(liveRule({ name: "r", allowed: [{ IPProtocol: "icmp" }] }), {
        action: "allow",
        spec: {
          name: "r",
          description: "",
          sourceRanges: [],
          targetTags: [],
          priority: 1000,
          allows: [{ protocol: "icmp", ports: [] }],
        },
        destinationRanges: [],
      }));
    it("not a rule: undefined", () => assert.equal(liveRule(undefined), undefined));
  });

  describe("ManualFirewalls (adapter)", () => {
    const target: EventTarget = { kind: "Service", namespace: "default", name: "web", uid: "uid-web" };
    const service = {
      ...externalServiceDesired("default", "web", "uid-web", "a1", [80]),
      healthCheck: {
        kind: "dedicated" as const,
        spec: externalServiceDesired("default", "web", "uid-web", "a1", [80]).healthCheck.spec,
      },
    };
    const outputs = { loadBalancers: { "default/web": { publishedFirewalls: [WEB, DENY] } } };

    async function told(getResource?: (call: string, path: string) => Promise<unknown>): Promise<[string[], string[]]> {
      const events: string[] = [];
      const paths: string[] = [];
      const manual = new ManualFirewalls({
        ...(getResource !== undefined
          ? {
              compute: {
                getResource: (call, path) => {
                  paths.push(`${call} ${path}`);
                  return getResource(call, path);
                },
              },
            }
          : {}),
        networkProject: HOST,
        network: NETWORK,
        clusterOutputs: () => ({ publishedFirewalls: [{ action: "allow", spec: NODE_HC, destinationRanges: [] }] }),
        events: {
          record: (t, type, reason, message) => {
            assert.deepStrictEqual(t, target);
            events.push(`${type} ${reason} ${message}`);
            return Promise.resolve();
          },
        },
        logger: pino({ level: "silent" }),
        signal: new AbortController().signal,
      });
      await manual.tell(target, service, outputs);
      return [events, paths];
    }

    it("reads each rule with firewalls.get in the network project; tells the missing one", async () => {
      const [events, paths] = await told((_call, path) =>
        Promise.resolve(path.endsWith("/k8s-fw-a1") ? gceBody(WEB) : undefined),
      );
      assert.deepStrictEqual(paths, [
        "firewalls.get projects/host-vpc-1/global/firewalls/k8s-fw-a1",
        "firewalls.get projects/host-vpc-1/global/firewalls/k8s-fw-a1-deny",
      ]);
      assert.deepStrictEqual(events, [`Normal LoadBalancerManualChange ${CREATE_DENY}`]);
    });
    it("both live and equal: no Event", async () => {
      const [events] = await told((_call, path) => Promise.resolve(gceBody(path.endsWith("-deny") ? DENY : WEB)));
      assert.deepStrictEqual(events, []);
    });
    it("a failed read: every rule told as a create", async () => {
      const [events] = await told(() => Promise.reject(new Error("403 forbidden")));
      assert.deepStrictEqual(events, [
        `Normal LoadBalancerManualChange ${CREATE_WEB}`,
        `Normal LoadBalancerManualChange ${CREATE_DENY}`,
      ]);
    });
    it("no Compute access: every rule told as a create", async () => {
      const [events, paths] = await told();
      assert.deepStrictEqual(paths, []);
      assert.deepStrictEqual(events, [
        `Normal LoadBalancerManualChange ${CREATE_WEB}`,
        `Normal LoadBalancerManualChange ${CREATE_DENY}`,
      ]);
    });
  });
});

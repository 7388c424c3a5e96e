// Tier 2: the Pulumi components under pulumi.runtime.setMocks, every registered resource recorded.
import * as assert from "node:assert/strict";

import * as pulumi from "@pulumi/pulumi";

import { capture as captureUnderMocks, type Captured, type Registered } from "../../support/fakes/pulumiMocks";

import { ClusterNetwork } from "../../../components/clusterNetwork";
import { ServiceLoadBalancer, type AddressPin, type ClusterRefs } from "../../../components/serviceLoadBalancer";

import type { ClusterDesired, FirewallSpec, HttpHealthCheckSpec, ServiceDesired } from "../../../model/types";
import {
  backendServiceInputs,
  CLUSTER_DESCRIPTION,
  externalAddressInputs,
  externalServiceDesired,
  firewallInputs,
  fixtureCluster,
  forwardingRuleInputs,
  healthCheckFirewall,
  httpHealthCheck,
  IG_A,
  ipv6Half,
  IG_B,
  instanceGroupInputs,
  instanceUrl,
  legacyHealthCheckInputs,
  NETWORK,
  NODE_HC,
  NODE_HC_FIREWALL,
  denyFirewall,
  denyFirewallInputs,
  TO_ADDRESS,
  PROJECT,
  REGION,
  regionHealthCheckInputs,
  route,
  routeInputs,
  serviceFirewall,
} from "../../support/builders";
import { forwardingRuleShape, parseScope } from "../../../model";

// ---- Mock harness (test/support/fakes/pulumiMocks.ts) -------------------------------------------------

const MOCK_LINK = "https://mock.test";
const EXTERNAL_IP = "198.51.100.5";
const INTERNAL_IP = "10.10.0.5";
const EXTERNAL_IPV6 = "2600:1900:4000:7f3::";
const INTERNAL_IPV6 = "fd20:0:0:1::";

/** The ephemeral IPs GCE gives a forwarding rule declared without one. */
const EPHEMERAL_EXTERNAL_IP = "198.51.100.77";
const EPHEMERAL_INTERNAL_IP = "10.10.0.77";

/**
 * Deterministic provider: ids and self links from the type and GCE name; reserved addresses get a
 * fixed IP unless they name one (as GCE: a pin's literal), a forwarding rule without an IP an ephemeral one.
 */
function mockState(type: string, inputs: Record<string, unknown>): { id: string; state: Record<string, unknown> } {
  const name = typeof inputs.name === "string" ? inputs.name : "";
  const state: Record<string, unknown> = { ...inputs, selfLink: `${MOCK_LINK}/${type}/${name}` };
  if (type === "gcp:compute/address:Address" && inputs.ipVersion === "IPV6")
    state.address = inputs.addressType === "INTERNAL" ? INTERNAL_IPV6 : EXTERNAL_IPV6;
  else if (type === "gcp:compute/address:Address")
    state.address = inputs.address ?? (inputs.addressType === "INTERNAL" ? INTERNAL_IP : EXTERNAL_IP);
  else if (type === "gcp:compute/forwardingRule:ForwardingRule" && inputs.ipAddress === undefined)
    state.ipAddress = inputs.loadBalancingScheme === "INTERNAL" ? EPHEMERAL_INTERNAL_IP : EPHEMERAL_EXTERNAL_IP;
  return { id: `${type}/${name}`, state };
}

function selfLink(type: string, name: string): string {
  return `${MOCK_LINK}/${type}/${name}`;
}

function capture<T extends pulumi.Resource>(build: (opts: pulumi.ComponentResourceOptions) => T): Promise<Captured<T>> {
  return captureUnderMocks(mockState, build);
}

function value<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

function byName(registered: Registered[]): Map<string, Registered> {
  return new Map(registered.map((resource) => [resource.name, resource]));
}

function typesAndNames(registered: Registered[]): [string, string, boolean][] {
  return registered
    .map((r): [string, string, boolean] => [r.type, r.name, r.custom])
    .sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

/** Every child is constructed with the component as parent and deleteBeforeReplace; the component has no parent. */
function assertParented<T extends pulumi.Resource>(captured: Captured<T>, componentType: string): void {
  for (const construction of captured.constructions) {
    if (construction.type === componentType) {
      assert.equal(construction.parent, undefined, "the component has no parent");
      continue;
    }
    assert.equal(construction.parent, captured.component, `${construction.name} is parented to the component`);
    assert.equal(construction.deleteBeforeReplace, true, `${construction.name} has deleteBeforeReplace`);
  }
  assert.deepStrictEqual(
    captured.constructions.map((c) => c.name).sort(),
    captured.registered.map((r) => r.name).sort(),
    "every registered resource went through the component's transformations",
  );
}

function urn(stackTypeChain: string, name: string): string {
  return `urn:pulumi:unit::dccm::${stackTypeChain}::${name}`;
}

// ---- Shared expectations ----------------------------------------------------------------------------

// PROJECT, REGION, NETWORK, the cluster's names, specs and Pulumi inputs: test/support/builders.ts.

const T = {
  address: "gcp:compute/address:Address",
  forwardingRule: "gcp:compute/forwardingRule:ForwardingRule",
  backendService: "gcp:compute/regionBackendService:RegionBackendService",
  targetPool: "gcp:compute/targetPool:TargetPool",
  regionHealthCheck: "gcp:compute/regionHealthCheck:RegionHealthCheck",
  httpHealthCheck: "gcp:compute/httpHealthCheck:HttpHealthCheck",
  instanceGroup: "gcp:compute/instanceGroup:InstanceGroup",
  firewall: "gcp:compute/firewall:Firewall",
  route: "gcp:compute/route:Route",
} as const;

describe("components (Pulumi mocks)", () => {
  describe("ClusterNetwork", () => {
    const cluster: ClusterDesired = fixtureCluster([
      route("node-a1", "11111111-1111-4111-8111-111111111111", "10.64.1.0/24", "us-central1-a"),
      route("node-b2", "44444444-4444-4444-8444-444444444444", "10.64.4.0/24", "us-central1-b", "vm-b2"),
    ]);

    let captured: Captured<ClusterNetwork>;
    before(async () => {
      captured = await capture((opts) => new ClusterNetwork("cluster", { cluster }, opts));
    });

    it("declares exactly: the component, one instance group per zone, the health check, its firewall, one route per node", () => {
      assert.deepStrictEqual(typesAndNames(captured.registered), [
        ["dccm:gcp:ClusterNetwork", "cluster", false],
        [T.instanceGroup, "cluster:ig-us-central1-a", true],
        [T.instanceGroup, "cluster:ig-us-central1-b", true],
        [T.regionHealthCheck, "cluster:node-hc", true],
        [T.firewall, "cluster:node-hc-fw", true],
        [T.route, "cluster:route-node-a1", true],
        [T.route, "cluster:route-node-b2", true],
      ]);
    });

    it("firewallsPublished (firewallManagement manual): the node health-check firewall is published, not registered", async () => {
      const published = await capture(
        (opts) => new ClusterNetwork("cluster", { cluster, firewallsPublished: true }, opts),
      );
      assert.deepStrictEqual(typesAndNames(published.registered), [
        ["dccm:gcp:ClusterNetwork", "cluster", false],
        [T.instanceGroup, "cluster:ig-us-central1-a", true],
        [T.instanceGroup, "cluster:ig-us-central1-b", true],
        [T.regionHealthCheck, "cluster:node-hc", true],
        [T.route, "cluster:route-node-a1", true],
        [T.route, "cluster:route-node-b2", true],
      ]);
      assert.deepStrictEqual(published.component.publishedFirewalls, [
        { action: "allow", spec: NODE_HC_FIREWALL, destinationRanges: [] },
      ]);
      assert.deepStrictEqual(captured.component.publishedFirewalls, []);
    });

    it("every child is parented to the dccm:gcp:ClusterNetwork component (URNs and options)", () => {
      assertParented(captured, "dccm:gcp:ClusterNetwork");
      const chain = (type: string) => `dccm:gcp:ClusterNetwork$${type}`;
      assert.deepStrictEqual(
        captured.urns,
        [
          urn("dccm:gcp:ClusterNetwork", "cluster"),
          urn(chain(T.firewall), "cluster:node-hc-fw"),
          urn(chain(T.instanceGroup), "cluster:ig-us-central1-a"),
          urn(chain(T.instanceGroup), "cluster:ig-us-central1-b"),
          urn(chain(T.regionHealthCheck), "cluster:node-hc"),
          urn(chain(T.route), "cluster:route-node-a1"),
          urn(chain(T.route), "cluster:route-node-b2"),
        ].sort(),
      );
    });

    it("exact inputs of every resource", () => {
      const resources = byName(captured.registered);
      assert.deepStrictEqual(resources.get("cluster")?.inputs, {});
      assert.deepStrictEqual(
        resources.get("cluster:ig-us-central1-a")?.inputs,
        instanceGroupInputs("us-central1-a", ["node-a1", "node-a2"]),
      );
      assert.deepStrictEqual(
        resources.get("cluster:ig-us-central1-b")?.inputs,
        instanceGroupInputs("us-central1-b", ["node-b1"]),
      );
      assert.deepStrictEqual(
        resources.get("cluster:node-hc")?.inputs,
        regionHealthCheckInputs("k8s-c0ffee1234-node", 10256, CLUSTER_DESCRIPTION),
      );
      assert.deepStrictEqual(resources.get("cluster:node-hc-fw")?.inputs, firewallInputs(NODE_HC_FIREWALL));
      assert.deepStrictEqual(
        resources.get("cluster:route-node-a1")?.inputs,
        routeInputs("node-a1", "11111111-1111-4111-8111-111111111111", "10.64.1.0/24", "us-central1-a"),
      );
      assert.deepStrictEqual(
        resources.get("cluster:route-node-b2")?.inputs,
        routeInputs("node-b2", "44444444-4444-4444-8444-444444444444", "10.64.4.0/24", "us-central1-b", "vm-b2"),
      );
    });

    it("options: every resource but routes ignores its description (the owner marker is written at creation only), groups their network too (ForceNew, absent on the stock CCM's), routes their zone", () => {
      assert.deepStrictEqual(
        captured.constructions.filter((c) => c.name !== "cluster").map((c) => [c.name, c.ignoreChanges]),
        [
          ["cluster:ig-us-central1-a", ["description", "network"]],
          ["cluster:ig-us-central1-b", ["description", "network"]],
          [
            "cluster:node-hc",
            ["description", "checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold"],
          ],
          ["cluster:node-hc-fw", ["description"]],
          ["cluster:route-node-a1", ["nextHopInstanceZone"]],
          ["cluster:route-node-b2", ["nextHopInstanceZone"]],
        ],
      );
    });

    it("outputs: instance group and health check self links, route names", async () => {
      const network = captured.component;
      assert.deepStrictEqual(Object.keys(network.instanceGroups).sort(), ["us-central1-a", "us-central1-b"]);
      assert.equal(
        await value(network.instanceGroups["us-central1-a"]),
        selfLink(T.instanceGroup, "k8s-ig--c0ffee1234"),
      );
      assert.equal(await value(network.nodeHealthCheck), selfLink(T.regionHealthCheck, "k8s-c0ffee1234-node"));
      assert.equal(network.legacyNodeHealthCheck, undefined);
      assert.deepStrictEqual(Object.keys(network.routes).sort(), ["node-a1", "node-b2"]);
      assert.equal(await value(network.routes["node-b2"]), "prod-44444444-4444-4444-8444-444444444444");
    });

    describe("with a target-pool Service on the shared check (legacyNodeHealthCheck)", () => {
      let legacy: Captured<ClusterNetwork>;
      before(async () => {
        legacy = await capture(
          (opts) =>
            new ClusterNetwork(
              "cluster",
              { cluster: { ...cluster, routes: [], instanceGroups: [], legacyNodeHealthCheck: true } },
              opts,
            ),
        );
      });
      it("also declares the global legacy HTTP health check of the same name", async () => {
        assert.deepStrictEqual(typesAndNames(legacy.registered), [
          ["dccm:gcp:ClusterNetwork", "cluster", false],
          [T.regionHealthCheck, "cluster:node-hc", true],
          [T.firewall, "cluster:node-hc-fw", true],
          [T.httpHealthCheck, "cluster:node-legacy-hc", true],
        ]);
        assertParented(legacy, "dccm:gcp:ClusterNetwork");
        assert.deepStrictEqual(
          byName(legacy.registered).get("cluster:node-legacy-hc")?.inputs,
          legacyHealthCheckInputs("k8s-c0ffee1234-node", 10256, CLUSTER_DESCRIPTION),
        );
        assert.ok(legacy.component.legacyNodeHealthCheck !== undefined);
        assert.equal(
          await value(legacy.component.legacyNodeHealthCheck),
          selfLink(T.httpHealthCheck, "k8s-c0ffee1234-node"),
        );
      });
    });
  });

  describe("ClusterNetwork with a zone beyond the group limit", () => {
    const V1 = `https://www.googleapis.com/compute/v1/projects/${PROJECT}`;
    const group = (zone: string, name: string, instances: string[], index?: number) => ({
      name,
      zone,
      ...(index === undefined ? {} : { index }),
      description: CLUSTER_DESCRIPTION,
      instances,
    });
    const cluster: ClusterDesired = {
      ...fixtureCluster([]),
      instanceGroups: [
        group("us-central1-a", "k8s-ig--c0ffee1234", ["node-a1", "node-a2"]),
        group("us-central1-a", "k8s-ig2--c0ffee1234", ["node-a3", "node-a4"], 2),
        group("us-central1-a", "k8s-ig3--c0ffee1234", ["node-a5"], 3),
        group("us-central1-b", "k8s-ig--c0ffee1234", ["node-b1"]),
      ],
    };
    let captured: Captured<ClusterNetwork>;
    before(async () => {
      captured = await capture((opts) => new ClusterNetwork("cluster", { cluster }, opts));
    });

    it("declares every group: the first under its old Pulumi name, the others numbered, with exact inputs", () => {
      const groups = captured.registered.filter((r) => r.type === T.instanceGroup);
      assert.deepStrictEqual(groups.map((r) => [r.name, r.inputs]).sort(), [
        ["cluster:ig-us-central1-a", instanceGroupInputs("us-central1-a", ["node-a1", "node-a2"])],
        [
          "cluster:ig-us-central1-a-2",
          { ...instanceGroupInputs("us-central1-a", ["node-a3", "node-a4"]), name: "k8s-ig2--c0ffee1234" },
        ],
        [
          "cluster:ig-us-central1-a-3",
          { ...instanceGroupInputs("us-central1-a", ["node-a5"]), name: "k8s-ig3--c0ffee1234" },
        ],
        ["cluster:ig-us-central1-b", instanceGroupInputs("us-central1-b", ["node-b1"])],
      ]);
      assertParented(captured, "dccm:gcp:ClusterNetwork");
    });

    it("a zone's groups of another subnetwork: Pulumi names with the subnetwork's hash, apart from the default's", async () => {
      const subnetCluster: ClusterDesired = {
        ...fixtureCluster([]),
        instanceGroups: [
          group("us-central1-a", "k8s-ig--c0ffee1234", ["node-a1"]),
          { ...group("us-central1-a", "k8s-ig--c0ffee1234-1a2b3c4d", ["node-a2"]), subnetworkHash: "1a2b3c4d" },
          {
            ...group("us-central1-a", "k8s-ig2--c0ffee1234-1a2b3c4d", ["node-a3"], 2),
            subnetworkHash: "1a2b3c4d",
          },
        ],
      };
      const subnetCaptured = await capture((opts) => new ClusterNetwork("cluster", { cluster: subnetCluster }, opts));
      const groups = subnetCaptured.registered.filter((r) => r.type === T.instanceGroup);
      assert.deepStrictEqual(groups.map((r) => [r.name, r.inputs.name]).sort(), [
        ["cluster:ig-us-central1-a", "k8s-ig--c0ffee1234"],
        ["cluster:ig-us-central1-a-1a2b3c4d", "k8s-ig--c0ffee1234-1a2b3c4d"],
        ["cluster:ig-us-central1-a-1a2b3c4d-2", "k8s-ig2--c0ffee1234-1a2b3c4d"],
      ]);
      assert.deepStrictEqual(Object.keys(subnetCaptured.component.instanceGroups).sort(), [
        "us-central1-a",
        "us-central1-a/k8s-ig--c0ffee1234-1a2b3c4d",
        "us-central1-a/k8s-ig2--c0ffee1234-1a2b3c4d",
      ]);
    });

    it("outputs: links keyed by zone (first group) and <zone>/<name>, and every group's members", async () => {
      const network = captured.component;
      assert.deepStrictEqual(Object.keys(network.instanceGroups).sort(), [
        "us-central1-a",
        "us-central1-a/k8s-ig2--c0ffee1234",
        "us-central1-a/k8s-ig3--c0ffee1234",
        "us-central1-b",
      ]);
      assert.equal(
        await value(network.instanceGroups["us-central1-a/k8s-ig3--c0ffee1234"]),
        selfLink(T.instanceGroup, "k8s-ig3--c0ffee1234"),
      );
      assert.deepStrictEqual(network.instanceGroupMembers, {
        "us-central1-a/k8s-ig--c0ffee1234": ["node-a1", "node-a2"],
        "us-central1-a/k8s-ig2--c0ffee1234": ["node-a3", "node-a4"],
        "us-central1-a/k8s-ig3--c0ffee1234": ["node-a5"],
        "us-central1-b/k8s-ig--c0ffee1234": ["node-b1"],
      });
    });

    it("a Service's backend service lists every group of every backend zone, by zone then number", async () => {
      const uid = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
      const lb = "a1b4e28ba2fa141d2883f0016d3cca42";
      const refs: ClusterRefs = {
        nodeHealthCheck: NODE_HC,
        legacyNodeHealthCheck: `${V1}/global/httpHealthChecks/k8s-c0ffee1234-node`,
        instanceGroups: {
          "us-central1-a": IG_A,
          "us-central1-a/k8s-ig2--c0ffee1234": `${V1}/zones/us-central1-a/instanceGroups/k8s-ig2--c0ffee1234`,
          "us-central1-a/k8s-ig3--c0ffee1234": `${V1}/zones/us-central1-a/instanceGroups/k8s-ig3--c0ffee1234`,
          "us-central1-b": IG_B,
        },
      };
      const desired = externalServiceDesired("default", "web", uid, lb, [80], {
        backendGroups: [
          { zone: "us-central1-a", name: "k8s-ig--c0ffee1234" },
          { zone: "us-central1-a", name: "k8s-ig2--c0ffee1234", index: 2 },
          { zone: "us-central1-a", name: "k8s-ig3--c0ffee1234", index: 3 },
          { zone: "us-central1-b", name: "k8s-ig--c0ffee1234" },
        ],
      });
      const lbCaptured = await capture(
        (opts) =>
          new ServiceLoadBalancer(
            "default/web",
            { service: desired, project: PROJECT, region: REGION, network: NETWORK, cluster: refs },
            opts,
          ),
      );
      const backend = lbCaptured.registered.find((r) => r.type === T.backendService);
      assert.deepStrictEqual(backend?.inputs.backends, [
        { group: IG_A, balancingMode: "CONNECTION" },
        { group: `${V1}/zones/us-central1-a/instanceGroups/k8s-ig2--c0ffee1234`, balancingMode: "CONNECTION" },
        { group: `${V1}/zones/us-central1-a/instanceGroups/k8s-ig3--c0ffee1234`, balancingMode: "CONNECTION" },
        { group: IG_B, balancingMode: "CONNECTION" },
      ]);
      await pulumi.runtime.disconnect();
    });
  });

  describe("ServiceLoadBalancer (<lb> reserved for life unless a test says transient)", () => {
    const UID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
    const LB = "a1b4e28ba2fa141d2883f0016d3cca42";
    const KEY = "default/web";
    const DESCRIPTION = '{"kubernetes.io/service-name":"default/web"}';
    const REFS: ClusterRefs = {
      nodeHealthCheck: NODE_HC,
      legacyNodeHealthCheck:
        "https://www.googleapis.com/compute/v1/projects/dccm-test/global/httpHealthChecks/k8s-c0ffee1234-node",
      instanceGroups: { "us-central1-a": IG_A, "us-central1-b": IG_B },
    };
    const FIREWALL: FirewallSpec = serviceFirewall(KEY, LB, ["0.0.0.0/0"], [{ protocol: "tcp", ports: ["80", "443"] }]);
    const DEDICATED_HC: HttpHealthCheckSpec = httpHealthCheck(LB, 32000, DESCRIPTION);
    const HC_FIREWALL: FirewallSpec = healthCheckFirewall(`k8s-${LB}-http-hc`, 32000, DESCRIPTION, TO_ADDRESS);

    /** The Service with `<lb>` reserved for life (addressReservation always, or an IP shared by TCP and UDP). */
    function service(over: Partial<ServiceDesired> = {}): ServiceDesired {
      return externalServiceDesired("default", "web", UID, LB, [80, 443], { reserveAddress: true, ...over });
    }

    /** The Service as the default `transient` mode makes it (no userIP, one protocol): no `<lb>` at rest. */
    function transient(over: Partial<ServiceDesired> = {}): ServiceDesired {
      return externalServiceDesired("default", "web", UID, LB, [80, 443], over);
    }

    function build(desired: ServiceDesired, pin?: AddressPin): Promise<Captured<ServiceLoadBalancer>> {
      return capture(
        (opts) =>
          new ServiceLoadBalancer(
            KEY,
            {
              service: desired,
              project: PROJECT,
              region: REGION,
              network: NETWORK,
              cluster: REFS,
              ...(pin !== undefined ? { pin } : {}),
            },
            opts,
          ),
      );
    }

    const externalAddress = (over: Record<string, unknown> = {}) => externalAddressInputs(LB, DESCRIPTION, over);
    const backendService = (over: Record<string, unknown> = {}) => backendServiceInputs(LB, DESCRIPTION, NODE_HC, over);
    const forwardingRule = (over: Record<string, unknown> = {}) =>
      forwardingRuleInputs(LB, DESCRIPTION, EXTERNAL_IP, ["80", "443"], selfLink(T.backendService, LB), over);
    const dedicatedHealthCheckInputs = regionHealthCheckInputs(LB, 32000, DESCRIPTION);
    const COMPONENT: [string, string, boolean] = ["dccm:gcp:ServiceLoadBalancer", KEY, false];

    /** All resources, with inputs, exactly; parenting checked. */
    function assertResources(
      captured: Captured<ServiceLoadBalancer>,
      want: Record<string, [string, Record<string, unknown>]>,
    ): void {
      assert.deepStrictEqual(
        typesAndNames(captured.registered),
        [
          COMPONENT,
          ...Object.entries(want).map(([name, [type]]): [string, string, boolean] => [type, name, true]),
        ].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)),
      );
      const resources = byName(captured.registered);
      assert.deepStrictEqual(resources.get(KEY)?.inputs, {});
      for (const [name, [, inputs]] of Object.entries(want))
        assert.deepStrictEqual(resources.get(name)?.inputs, inputs, name);
      assertParented(captured, "dccm:gcp:ServiceLoadBalancer");
      assert.deepStrictEqual(
        captured.urns,
        [
          urn("dccm:gcp:ServiceLoadBalancer", KEY),
          ...Object.entries(want).map(([name, [type]]) => urn(`dccm:gcp:ServiceLoadBalancer$${type}`, name)),
        ].sort(),
      );
    }

    it("external, backend service, shared health check: address, backend service, forwarding rule, firewall", async () => {
      const captured = await build(service());
      assertResources(captured, {
        "default/web:address": [T.address, externalAddress()],
        "default/web:backend-tcp": [T.backendService, backendService()],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule()],
        "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EXTERNAL_IP)],
      });
      assert.deepStrictEqual(await value(captured.component.ingressIPs), [EXTERNAL_IP]);
      assert.deepStrictEqual(captured.component.resources, {
        address: LB,
        forwardingRules: [LB],
        backendServices: [LB],
        healthCheck: "k8s-c0ffee1234-node",
        firewalls: [`k8s-fw-${LB}`],
      });
    });

    it("firewallsPublished (firewallManagement manual): the same Service, no Firewall registered; the rule published towards its IP", async () => {
      const captured = await capture(
        (opts) =>
          new ServiceLoadBalancer(
            KEY,
            {
              service: service(),
              project: PROJECT,
              region: REGION,
              network: NETWORK,
              cluster: REFS,
              firewallsPublished: true,
            },
            opts,
          ),
      );
      assertResources(captured, {
        "default/web:address": [T.address, externalAddress()],
        "default/web:backend-tcp": [T.backendService, backendService()],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule()],
      });
      assert.deepStrictEqual(await value(captured.component.ingressIPs), [EXTERNAL_IP]);
      assert.deepStrictEqual(captured.component.resources.firewalls, []);
      assert.deepStrictEqual(await value(captured.component.publishedFirewalls), [
        { action: "allow", spec: { ...FIREWALL, description: DESCRIPTION }, destinationRanges: [EXTERNAL_IP] },
      ]);
    });

    it("without firewallsPublished nothing is published", async () => {
      const captured = await build(service());
      assert.deepStrictEqual(await value(captured.component.publishedFirewalls), []);
    });

    it("external, Standard tier, ClientIP, more than 5 ports: tier on address and rule, portRange, CLIENT_IP", async () => {
      const captured = await build(
        service({
          networkTier: "STANDARD",
          sessionAffinity: "CLIENT_IP",
          frontends: [
            {
              name: LB,
              protocol: "TCP",
              ports: [80, 81, 82, 83, 84, 9000],
              portSelection: { kind: "range", portRange: "80-9000" },
            },
          ],
        }),
      );
      const { ports: _ports, ...rule } = forwardingRule({ networkTier: "STANDARD", portRange: "80-9000" });
      assertResources(captured, {
        "default/web:address": [T.address, externalAddress({ networkTier: "STANDARD" })],
        "default/web:backend-tcp": [T.backendService, backendService({ sessionAffinity: "CLIENT_IP" })],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, rule],
        "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EXTERNAL_IP)],
      });
    });

    it("ETP Local: dedicated regional health check <lb> used by the backend service, and its k8s-<lb>-http-hc firewall", async () => {
      const captured = await build(
        service({ healthCheck: { kind: "dedicated", spec: DEDICATED_HC }, healthCheckFirewall: HC_FIREWALL }),
      );
      assertResources(captured, {
        "default/web:address": [T.address, externalAddress()],
        "default/web:hc": [T.regionHealthCheck, dedicatedHealthCheckInputs],
        "default/web:backend-tcp": [
          T.backendService,
          backendService({ healthChecks: selfLink(T.regionHealthCheck, LB) }),
        ],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule()],
        "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EXTERNAL_IP)],
        "default/web:hc-firewall": [T.firewall, firewallInputs(HC_FIREWALL, EXTERNAL_IP)],
      });
      assert.deepStrictEqual(captured.component.resources, {
        address: LB,
        forwardingRules: [LB],
        backendServices: [LB],
        healthCheck: LB,
        firewalls: [`k8s-fw-${LB}`, `k8s-${LB}-http-hc`],
      });
    });

    it("internal with subnet and global access: internal address in the subnet, network on backend and rule, no tier", async () => {
      const captured = await build(service({ scheme: "INTERNAL", subnetwork: "ilb-subnet", allowGlobalAccess: true }));
      const { networkTier: _tier, ...internalRule } = forwardingRule({
        ipAddress: INTERNAL_IP,
        loadBalancingScheme: "INTERNAL",
        network: NETWORK,
        subnetwork: "ilb-subnet",
        allowGlobalAccess: true,
      });
      assertResources(captured, {
        "default/web:address": [
          T.address,
          {
            project: PROJECT,
            region: REGION,
            name: LB,
            description: DESCRIPTION,
            addressType: "INTERNAL",
            subnetwork: "ilb-subnet",
            purpose: "SHARED_LOADBALANCER_VIP",
          },
        ],
        "default/web:backend-tcp": [
          T.backendService,
          backendService({ loadBalancingScheme: "INTERNAL", network: NETWORK }),
        ],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, internalRule],
        "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, INTERNAL_IP)],
      });
      assert.deepStrictEqual(await value(captured.component.ingressIPs), [INTERNAL_IP]);
    });

    it("internal with more than 5 ports: allPorts", async () => {
      const captured = await build(
        service({
          scheme: "INTERNAL",
          subnetwork: "ilb-subnet",
          frontends: [{ name: LB, protocol: "TCP", ports: [1, 2, 3, 4, 5, 6], portSelection: { kind: "all" } }],
        }),
      );
      const rule = byName(captured.registered).get("default/web:forwarding-rule-tcp")?.inputs ?? {};
      assert.equal(rule.allPorts, true);
      assert.equal("ports" in rule || "portRange" in rule, false);
    });

    it("internal mixed TCP/UDP: the shared address has purpose SHARED_LOADBALANCER_VIP", async () => {
      const captured = await build(
        service({
          scheme: "INTERNAL",
          subnetwork: "ilb-subnet",
          frontends: [
            { name: LB, protocol: "TCP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
            { name: `${LB}-udp`, protocol: "UDP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
          ],
        }),
      );
      assert.deepStrictEqual(byName(captured.registered).get("default/web:address")?.inputs, {
        project: PROJECT,
        region: REGION,
        name: LB,
        description: DESCRIPTION,
        addressType: "INTERNAL",
        subnetwork: "ilb-subnet",
        purpose: "SHARED_LOADBALANCER_VIP",
      });
    });

    it("mixed TCP/UDP: one address, a backend service and a forwarding rule per protocol, one firewall", async () => {
      const fw: FirewallSpec = {
        ...FIREWALL,
        allows: [
          { protocol: "tcp", ports: ["53"] },
          { protocol: "udp", ports: ["53"] },
        ],
      };
      const captured = await build(
        service({
          frontends: [
            { name: LB, protocol: "TCP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
            { name: `${LB}-udp`, protocol: "UDP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
          ],
          firewall: fw,
        }),
      );
      assertResources(captured, {
        "default/web:address": [T.address, externalAddress()],
        "default/web:backend-tcp": [T.backendService, backendService()],
        "default/web:backend-udp": [T.backendService, backendService({ name: `${LB}-udp`, protocol: "UDP" })],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule({ ports: ["53"] })],
        "default/web:forwarding-rule-udp": [
          T.forwardingRule,
          forwardingRule({
            name: `${LB}-udp`,
            ipProtocol: "UDP",
            ports: ["53"],
            backendService: selfLink(T.backendService, `${LB}-udp`),
          }),
        ],
        "default/web:firewall": [T.firewall, firewallInputs(fw, EXTERNAL_IP)],
      });
      assert.deepStrictEqual(await value(captured.component.ingressIPs), [EXTERNAL_IP]);
      assert.deepStrictEqual(captured.component.resources, {
        address: LB,
        forwardingRules: [LB, `${LB}-udp`],
        backendServices: [LB, `${LB}-udp`],
        healthCheck: "k8s-c0ffee1234-node",
        firewalls: [`k8s-fw-${LB}`],
      });
    });

    it("user-owned loadBalancerIP: no Address declared, the forwarding rule uses that IP", async () => {
      const userFirewall: FirewallSpec = { ...FIREWALL, destination: { kind: "ip", ip: "203.0.113.50" } };
      const captured = await build(service({ userIP: "203.0.113.50", firewall: userFirewall }));
      assertResources(captured, {
        "default/web:backend-tcp": [T.backendService, backendService()],
        "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule({ ipAddress: "203.0.113.50" })],
        "default/web:firewall": [T.firewall, firewallInputs(userFirewall, "203.0.113.50")],
      });
      assert.deepStrictEqual(await value(captured.component.ingressIPs), ["203.0.113.50"]);
      assert.deepStrictEqual(captured.component.resources, {
        forwardingRules: [LB],
        backendServices: [LB],
        healthCheck: "k8s-c0ffee1234-node",
        firewalls: [`k8s-fw-${LB}`],
      });
    });

    describe("target-pool mode", () => {
      const targetPoolService = (over: Partial<ServiceDesired> = {}) =>
        service({
          backend: "target-pool",
          frontends: [
            { name: LB, protocol: "TCP", ports: [80, 443], portSelection: { kind: "range", portRange: "80-443" } },
          ],
          backendZones: [],
          backendInstances: [
            { zone: "us-central1-a", name: "node-a1" },
            { zone: "us-central1-b", name: "node-b1" },
          ],
          ...over,
        });
      const targetPool = (healthChecks: string) => ({
        project: PROJECT,
        region: REGION,
        name: LB,
        description: DESCRIPTION,
        sessionAffinity: "NONE",
        healthChecks,
        instances: [instanceUrl("us-central1-a", "node-a1"), instanceUrl("us-central1-b", "node-b1")],
      });
      const { ports: _ports, backendService: _bs, ...ruleBase } = forwardingRule();
      const targetPoolRule = { ...ruleBase, portRange: "80-443", target: selfLink(T.targetPool, LB) };

      it("shared legacy health check: target pool on the cluster's legacy check, no backend service, rule targets the pool", async () => {
        const captured = await build(targetPoolService());
        assertResources(captured, {
          "default/web:address": [T.address, externalAddress()],
          "default/web:target-pool": [T.targetPool, targetPool(REFS.legacyNodeHealthCheck as string)],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, targetPoolRule],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EXTERNAL_IP)],
        });
        assert.deepStrictEqual(captured.component.resources, {
          address: LB,
          forwardingRules: [LB],
          backendServices: [],
          targetPool: LB,
          healthCheck: "k8s-c0ffee1234-node",
          firewalls: [`k8s-fw-${LB}`],
        });
      });

      it("dedicated (ETP Local): a global legacy HTTP health check <lb> on healthCheckNodePort", async () => {
        const captured = await build(
          targetPoolService({
            healthCheck: { kind: "dedicated", spec: DEDICATED_HC },
            healthCheckFirewall: HC_FIREWALL,
          }),
        );
        assertResources(captured, {
          "default/web:address": [T.address, externalAddress()],
          "default/web:hc": [T.httpHealthCheck, legacyHealthCheckInputs(LB, 32000, DESCRIPTION)],
          "default/web:target-pool": [T.targetPool, targetPool(selfLink(T.httpHealthCheck, LB))],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, targetPoolRule],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EXTERNAL_IP)],
          "default/web:hc-firewall": [T.firewall, firewallInputs(HC_FIREWALL, EXTERNAL_IP)],
        });
      });

      it("mixed TCP/UDP: two forwarding rules on the same pool and address", async () => {
        const captured = await build(
          targetPoolService({
            frontends: [
              { name: LB, protocol: "TCP", ports: [53], portSelection: { kind: "range", portRange: "53-53" } },
              { name: `${LB}-udp`, protocol: "UDP", ports: [53], portSelection: { kind: "range", portRange: "53-53" } },
            ],
          }),
        );
        const resources = byName(captured.registered);
        assert.deepStrictEqual(resources.get("default/web:forwarding-rule-udp")?.inputs, {
          ...ruleBase,
          name: `${LB}-udp`,
          ipProtocol: "UDP",
          portRange: "53-53",
          target: selfLink(T.targetPool, LB),
        });
        assert.equal(resources.get("default/web:forwarding-rule-tcp")?.inputs.target, selfLink(T.targetPool, LB));
        assert.equal(captured.registered.filter((r) => r.type === T.targetPool).length, 1);
        assert.equal(captured.registered.filter((r) => r.type === T.address).length, 1);
      });
    });

    describe("options that keep replacements convergent", () => {
      /** [name, ignoreChanges, replaceOnChanges, aliases, replaceWith] of every custom resource. */
      function options(
        captured: Captured<ServiceLoadBalancer>,
      ): [string, string[] | undefined, string[] | undefined, string[], string[]][] {
        return captured.constructions
          .filter((c) => c.type !== "dccm:gcp:ServiceLoadBalancer")
          .map((c): [string, string[] | undefined, string[] | undefined, string[], string[]] => [
            c.name,
            c.ignoreChanges,
            c.replaceOnChanges,
            c.aliases,
            c.replaceWith,
          ])
          .sort((a, b) => a[0].localeCompare(b[0]));
      }

      it("backend service: the forwarding rule is replaced with it, a protocol change replaces it, and a single UDP frontend inherits the TCP names", async () => {
        const captured = await build(
          service({
            frontends: [{ name: LB, protocol: "UDP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } }],
          }),
        );
        assert.deepStrictEqual(options(captured), [
          ["default/web:address", ["description", "purpose"], undefined, [], []],
          ["default/web:backend-udp", ["description", "network"], ["protocol"], ["default/web:backend-tcp"], []],
          ["default/web:firewall", ["description"], undefined, [], []],
          [
            "default/web:forwarding-rule-udp",
            ["description"],
            undefined,
            ["default/web:forwarding-rule-tcp"],
            ["default/web:backend-udp"],
          ],
        ]);
      });

      it("mixed TCP/UDP: no aliases (both protocols' names are declared)", async () => {
        const captured = await build(
          service({
            frontends: [
              { name: LB, protocol: "TCP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
              { name: `${LB}-udp`, protocol: "UDP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
            ],
          }),
        );
        assert.deepStrictEqual(
          options(captured).filter(([name]) => name.includes("backend") || name.includes("forwarding")),
          [
            ["default/web:backend-tcp", ["description", "network"], ["protocol"], [], []],
            ["default/web:backend-udp", ["description", "network"], ["protocol"], [], []],
            ["default/web:forwarding-rule-tcp", ["description"], undefined, [], ["default/web:backend-tcp"]],
            ["default/web:forwarding-rule-udp", ["description"], undefined, [], ["default/web:backend-udp"]],
          ],
        );
      });

      it("target pool: the forwarding rule is replaced with the pool (sessionAffinity/description force the pool's replacement)", async () => {
        const captured = await build(
          service({
            backend: "target-pool",
            frontends: [
              { name: LB, protocol: "TCP", ports: [80], portSelection: { kind: "range", portRange: "80-80" } },
            ],
            backendZones: [],
            backendInstances: [{ zone: "us-central1-a", name: "node-a1" }],
          }),
        );
        assert.deepStrictEqual(options(captured), [
          ["default/web:address", ["description", "purpose"], undefined, [], []],
          ["default/web:firewall", ["description"], undefined, [], []],
          [
            "default/web:forwarding-rule-tcp",
            ["description"],
            undefined,
            ["default/web:forwarding-rule-udp"],
            ["default/web:target-pool"],
          ],
          ["default/web:target-pool", ["description"], undefined, [], []],
        ]);
      });
    });

    describe("enableL4DenyFirewall: the deny rules, created after the allow rules they sit under", () => {
      it("external dual-stack, ETP Local: k8s-fw-<lb>-deny and -deny-ipv6 towards each family's IP at 1000, every allow rule at 999", async () => {
        const fw999: FirewallSpec = { ...FIREWALL, priority: 999 };
        const hc999: FirewallSpec = { ...HC_FIREWALL, priority: 999 };
        const half = ipv6Half(KEY, LB, "v6-subnet", ["::/0"], [{ protocol: "tcp", ports: ["80", "443"] }], 32000);
        const ipv6 = {
          ...half,
          firewall: { ...half.firewall, priority: 999 },
          healthCheckFirewall: { ...half.healthCheckFirewall, priority: 999 },
          denyFirewall: denyFirewall(KEY, LB, "ipv6"),
        };
        const captured = await build(
          service({
            healthCheck: { kind: "dedicated", spec: DEDICATED_HC },
            firewall: fw999,
            healthCheckFirewall: hc999,
            denyFirewall: denyFirewall(KEY, LB, "ipv4"),
            ipv6,
          }),
        );
        const registered = byName(captured.registered);
        assert.deepStrictEqual(registered.get("default/web:firewall")?.inputs, firewallInputs(fw999, EXTERNAL_IP));
        assert.deepStrictEqual(registered.get("default/web:hc-firewall")?.inputs, firewallInputs(hc999, EXTERNAL_IP));
        assert.deepStrictEqual(registered.get("default/web:deny-firewall")?.inputs, {
          project: PROJECT,
          name: `k8s-fw-${LB}-deny`,
          network: NETWORK,
          description: DESCRIPTION,
          direction: "INGRESS",
          sourceRanges: ["0.0.0.0/0"],
          destinationRanges: [EXTERNAL_IP],
          targetTags: ["k8s-node"],
          denies: [{ protocol: "all" }],
          priority: 1000,
        });
        assert.deepStrictEqual(
          registered.get("default/web:firewall-ipv6")?.inputs,
          firewallInputs(ipv6.firewall, EXTERNAL_IPV6),
        );
        assert.deepStrictEqual(
          registered.get("default/web:hc-firewall-ipv6")?.inputs,
          firewallInputs(ipv6.healthCheckFirewall, EXTERNAL_IPV6),
        );
        assert.deepStrictEqual(
          registered.get("default/web:deny-firewall-ipv6")?.inputs,
          denyFirewallInputs(denyFirewall(KEY, LB, "ipv6"), EXTERNAL_IPV6),
        );
        const dependsOn = Object.fromEntries(
          captured.constructions.filter((c) => c.type === T.firewall).map((c) => [c.name, c.dependsOn]),
        );
        assert.deepStrictEqual(dependsOn, {
          "default/web:firewall": [],
          "default/web:hc-firewall": [],
          "default/web:deny-firewall": ["default/web:firewall", "default/web:hc-firewall"],
          "default/web:firewall-ipv6": [],
          "default/web:hc-firewall-ipv6": [],
          "default/web:deny-firewall-ipv6": ["default/web:firewall-ipv6", "default/web:hc-firewall-ipv6"],
        });
        assert.deepStrictEqual(captured.component.resources.firewalls, [
          `k8s-fw-${LB}`,
          `k8s-${LB}-http-hc`,
          `k8s-fw-${LB}-deny`,
          `k8s-fw-${LB}-ipv6`,
          `k8s-${LB}-http-hc-ipv6`,
          `k8s-fw-${LB}-deny-ipv6`,
        ]);
      });

      it("a user-owned loadBalancerIP: the deny rule towards it", async () => {
        const ip = { kind: "ip" as const, ip: "203.0.113.50" };
        const captured = await build(
          service({
            userIP: "203.0.113.50",
            firewall: { ...FIREWALL, destination: ip, priority: 999 },
            denyFirewall: denyFirewall(KEY, LB, "ipv4", ip),
          }),
        );
        assert.deepStrictEqual(
          byName(captured.registered).get("default/web:deny-firewall")?.inputs,
          denyFirewallInputs(denyFirewall(KEY, LB, "ipv4", ip), "203.0.113.50"),
        );
      });
    });

    describe("IPv6 (docs/guides/services.md#service-semantics, IP families)", () => {
      const ALLOWS = [{ protocol: "tcp", ports: ["80", "443"] }];
      const V6_FIREWALL = `k8s-fw-${LB}-ipv6`;
      const V6_HC_FIREWALL = `k8s-${LB}-http-hc-ipv6`;

      it("external dual-stack: the IPv4 set, plus an IPv6 address, an IPv6 rule on the same backend service and the two IPv6 firewalls", async () => {
        const ipv6 = ipv6Half(KEY, LB, "v6-subnet", ["::/0"], ALLOWS, 10256);
        const captured = await build(service({ ipv6 }));
        assertResources(captured, {
          "default/web:address": [T.address, externalAddress()],
          "default/web:backend-tcp": [T.backendService, backendService()],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule()],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EXTERNAL_IP)],
          "default/web:address-ipv6": [
            T.address,
            {
              project: PROJECT,
              region: REGION,
              name: `${LB}-ipv6`,
              description: DESCRIPTION,
              addressType: "EXTERNAL",
              ipVersion: "IPV6",
              subnetwork: "v6-subnet",
              ipv6EndpointType: "NETLB",
              networkTier: "PREMIUM",
            },
          ],
          "default/web:forwarding-rule-tcp-ipv6": [
            T.forwardingRule,
            forwardingRule({
              name: `${LB}-ipv6`,
              ipAddress: EXTERNAL_IPV6,
              ipVersion: "IPV6",
              subnetwork: "v6-subnet",
            }),
          ],
          "default/web:firewall-ipv6": [T.firewall, firewallInputs(ipv6.firewall, EXTERNAL_IPV6)],
          "default/web:hc-firewall-ipv6": [T.firewall, firewallInputs(ipv6.healthCheckFirewall, EXTERNAL_IPV6)],
        });
        assert.deepStrictEqual(firewallInputs(ipv6.healthCheckFirewall, EXTERNAL_IPV6), {
          project: PROJECT,
          name: V6_HC_FIREWALL,
          network: NETWORK,
          description: DESCRIPTION,
          direction: "INGRESS",
          sourceRanges: ["2600:1901:8001::/48", "2600:2d00:1:b029::/64"],
          destinationRanges: [EXTERNAL_IPV6],
          targetTags: ["k8s-node"],
          allows: [{ protocol: "tcp", ports: ["10256"] }],
          priority: 1000,
        });
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [EXTERNAL_IP, EXTERNAL_IPV6]);
        assert.deepStrictEqual(captured.component.resources, {
          address: LB,
          forwardingRules: [LB, `${LB}-ipv6`],
          backendServices: [LB],
          healthCheck: "k8s-c0ffee1234-node",
          firewalls: [`k8s-fw-${LB}`, V6_FIREWALL, V6_HC_FIREWALL],
          ipv6Address: `${LB}-ipv6`,
        });
      });

      it("internal IPv6-only, TCP and UDP, ETP Local: no IPv4 address, rule or firewall; a shared internal IPv6 address, two IPv6 rules", async () => {
        const ipv6 = ipv6Half(
          KEY,
          LB,
          "ilb-subnet",
          ["::/0"],
          [
            { protocol: "tcp", ports: ["53"] },
            { protocol: "udp", ports: ["53"] },
          ],
          32000,
          undefined,
          "INTERNAL",
        );
        const captured = await build(
          service({
            scheme: "INTERNAL",
            subnetwork: "ilb-subnet",
            frontends: [
              { name: LB, protocol: "TCP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
              { name: `${LB}-udp`, protocol: "UDP", ports: [53], portSelection: { kind: "ports", ports: ["53"] } },
            ],
            healthCheck: { kind: "dedicated", spec: DEDICATED_HC },
            healthCheckFirewall: HC_FIREWALL,
            ipv6,
            ipv6Only: true,
          }),
        );
        const internalRule = (protocol: string, name: string): Record<string, unknown> => {
          const { networkTier: _tier, ...rule } = forwardingRule({
            name: `${name}-ipv6`,
            ipAddress: INTERNAL_IPV6,
            ipProtocol: protocol,
            ipVersion: "IPV6",
            loadBalancingScheme: "INTERNAL",
            subnetwork: "ilb-subnet",
            ports: ["53"],
            network: NETWORK,
            allowGlobalAccess: false,
            backendService: selfLink(T.backendService, name),
          });
          return rule;
        };
        const dedicated = `https://mock.test/${T.regionHealthCheck}/${LB}`;
        assertResources(captured, {
          "default/web:hc": [T.regionHealthCheck, dedicatedHealthCheckInputs],
          "default/web:backend-tcp": [
            T.backendService,
            backendServiceInputs(LB, DESCRIPTION, dedicated, { loadBalancingScheme: "INTERNAL", network: NETWORK }),
          ],
          "default/web:backend-udp": [
            T.backendService,
            backendServiceInputs(`${LB}-udp`, DESCRIPTION, dedicated, {
              protocol: "UDP",
              loadBalancingScheme: "INTERNAL",
              network: NETWORK,
            }),
          ],
          "default/web:address-ipv6": [
            T.address,
            {
              project: PROJECT,
              region: REGION,
              name: `${LB}-ipv6`,
              description: DESCRIPTION,
              addressType: "INTERNAL",
              ipVersion: "IPV6",
              subnetwork: "ilb-subnet",
              purpose: "SHARED_LOADBALANCER_VIP",
            },
          ],
          "default/web:forwarding-rule-tcp-ipv6": [T.forwardingRule, internalRule("TCP", LB)],
          "default/web:forwarding-rule-udp-ipv6": [T.forwardingRule, internalRule("UDP", `${LB}-udp`)],
          "default/web:firewall-ipv6": [T.firewall, firewallInputs(ipv6.firewall, INTERNAL_IPV6)],
          "default/web:hc-firewall-ipv6": [T.firewall, firewallInputs(ipv6.healthCheckFirewall)],
        });
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [INTERNAL_IPV6]);
        assert.deepStrictEqual(captured.component.resources, {
          forwardingRules: [`${LB}-ipv6`, `${LB}-udp-ipv6`],
          backendServices: [LB, `${LB}-udp`],
          healthCheck: LB,
          firewalls: [V6_FIREWALL, V6_HC_FIREWALL],
          ipv6Address: `${LB}-ipv6`,
        });
      });

      it("a user-owned IPv6 loadBalancerIP: no IPv6 address; the rule uses it", async () => {
        const ipv6 = ipv6Half(KEY, LB, "v6-subnet", ["::/0"], ALLOWS, 10256, "2001:db8::5");
        const captured = await build(service({ ipv6 }));
        const registered = byName(captured.registered);
        assert.equal(registered.has("default/web:address-ipv6"), false);
        assert.deepStrictEqual(
          registered.get("default/web:forwarding-rule-tcp-ipv6")?.inputs,
          forwardingRule({ name: `${LB}-ipv6`, ipAddress: "2001:db8::5", ipVersion: "IPV6", subnetwork: "v6-subnet" }),
        );
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [EXTERNAL_IP, "2001:db8::5"]);
        assert.deepStrictEqual(
          registered.get("default/web:firewall-ipv6")?.inputs,
          firewallInputs(ipv6.firewall, "2001:db8::5"),
        );
        assert.deepStrictEqual(
          registered.get("default/web:hc-firewall-ipv6")?.inputs,
          firewallInputs(ipv6.healthCheckFirewall, "2001:db8::5"),
        );
      });
    });

    describe("addressReservation transient (the default): no <lb> at rest; a run's pin holds the IP", () => {
      const PINNED_IP = "198.51.100.40";
      /** A rule declared without an IP: GCE gives it an ephemeral one, or it keeps the one it has. */
      const ephemeral = (rule: Record<string, unknown>): Record<string, unknown> => {
        const { ipAddress: _ip, ...rest } = rule;
        return rest;
      };
      const RESOURCES = {
        forwardingRules: [LB],
        backendServices: [LB],
        healthCheck: "k8s-c0ffee1234-node",
        firewalls: [`k8s-fw-${LB}`],
      };

      it("external, no pin: no address, the rule without ipAddress, the firewall towards the rule's ephemeral IP; the rule shape recorded", async () => {
        const desired = transient();
        const captured = await build(desired);
        assertResources(captured, {
          "default/web:backend-tcp": [T.backendService, backendService()],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, ephemeral(forwardingRule())],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EPHEMERAL_EXTERNAL_IP)],
        });
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [EPHEMERAL_EXTERNAL_IP]);
        assert.deepStrictEqual(captured.component.resources, RESOURCES);
        assert.equal(captured.component.forwardingRuleShape, forwardingRuleShape(desired));
      });

      it("ETP Local, no pin: the health-check firewall opens towards the rule's ephemeral IP too", async () => {
        const captured = await build(
          transient({ healthCheck: { kind: "dedicated", spec: DEDICATED_HC }, healthCheckFirewall: HC_FIREWALL }),
        );
        assertResources(captured, {
          "default/web:hc": [T.regionHealthCheck, dedicatedHealthCheckInputs],
          "default/web:backend-tcp": [
            T.backendService,
            backendService({ healthChecks: selfLink(T.regionHealthCheck, LB) }),
          ],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, ephemeral(forwardingRule())],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EPHEMERAL_EXTERNAL_IP)],
          "default/web:hc-firewall": [T.firewall, firewallInputs(HC_FIREWALL, EPHEMERAL_EXTERNAL_IP)],
        });
      });

      it("internal, no pin: no address, the rule in the subnet without ipAddress, the firewall towards its internal IP", async () => {
        const captured = await build(transient({ scheme: "INTERNAL", subnetwork: "ilb-subnet" }));
        const { networkTier: _tier, ...internalRule } = ephemeral(
          forwardingRule({
            loadBalancingScheme: "INTERNAL",
            network: NETWORK,
            subnetwork: "ilb-subnet",
            allowGlobalAccess: false,
          }),
        );
        assertResources(captured, {
          "default/web:backend-tcp": [
            T.backendService,
            backendService({ loadBalancingScheme: "INTERNAL", network: NETWORK }),
          ],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, internalRule],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, EPHEMERAL_INTERNAL_IP)],
        });
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [EPHEMERAL_INTERNAL_IP]);
      });

      it("target pool, no pin: the rule targets the pool without ipAddress", async () => {
        const captured = await build(
          transient({
            backend: "target-pool",
            frontends: [
              { name: LB, protocol: "TCP", ports: [80, 443], portSelection: { kind: "range", portRange: "80-443" } },
            ],
            backendZones: [],
            backendInstances: [{ zone: "us-central1-a", name: "node-a1" }],
          }),
        );
        const { ports: _ports, backendService: _bs, ...rule } = ephemeral(forwardingRule());
        assert.deepStrictEqual(byName(captured.registered).get("default/web:forwarding-rule-tcp")?.inputs, {
          ...rule,
          portRange: "80-443",
          target: selfLink(T.targetPool, LB),
        });
        assert.equal(byName(captured.registered).has("default/web:address"), false);
        assert.deepStrictEqual(
          byName(captured.registered).get("default/web:firewall")?.inputs,
          firewallInputs(FIREWALL, EPHEMERAL_EXTERNAL_IP),
        );
      });

      it("pinned with reserve: <lb> declared holding the pinned IP, the rule on the address, the firewall towards it", async () => {
        const captured = await build(transient(), { ip: PINNED_IP, reserve: true });
        assertResources(captured, {
          "default/web:address": [T.address, externalAddress({ address: PINNED_IP })],
          "default/web:backend-tcp": [T.backendService, backendService()],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule({ ipAddress: PINNED_IP })],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, PINNED_IP)],
        });
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [PINNED_IP]);
        assert.deepStrictEqual(captured.component.resources, { address: LB, ...RESOURCES });
      });

      it("pinned with reserve, internal: <lb> a SHARED_LOADBALANCER_VIP in the subnet holding the pinned IP", async () => {
        const captured = await build(transient({ scheme: "INTERNAL", subnetwork: "ilb-subnet" }), {
          ip: "10.10.0.40",
          reserve: true,
        });
        const registered = byName(captured.registered);
        assert.deepStrictEqual(registered.get("default/web:address")?.inputs, {
          project: PROJECT,
          region: REGION,
          name: LB,
          description: DESCRIPTION,
          address: "10.10.0.40",
          addressType: "INTERNAL",
          subnetwork: "ilb-subnet",
          purpose: "SHARED_LOADBALANCER_VIP",
        });
        assert.equal(registered.get("default/web:forwarding-rule-tcp")?.inputs.ipAddress, "10.10.0.40");
        assert.deepStrictEqual(registered.get("default/web:firewall")?.inputs.destinationRanges, ["10.10.0.40"]);
      });

      it("pinned without reserve (the release): no address, the rule on the literal IP, the firewall towards it", async () => {
        const captured = await build(transient(), { ip: PINNED_IP, reserve: false });
        assertResources(captured, {
          "default/web:backend-tcp": [T.backendService, backendService()],
          "default/web:forwarding-rule-tcp": [T.forwardingRule, forwardingRule({ ipAddress: PINNED_IP })],
          "default/web:firewall": [T.firewall, firewallInputs(FIREWALL, PINNED_IP)],
        });
        assert.deepStrictEqual(await value(captured.component.ingressIPs), [PINNED_IP]);
        assert.deepStrictEqual(captured.component.resources, RESOURCES);
      });

      it("a Service that reserves <lb> for life ignores a pin's IP: the address is its own, as without a pin", async () => {
        const captured = await build(service(), { ip: PINNED_IP, reserve: false });
        assert.deepStrictEqual(byName(captured.registered).get("default/web:address")?.inputs, externalAddress());
        assert.equal(byName(captured.registered).get("default/web:forwarding-rule-tcp")?.inputs.ipAddress, EXTERNAL_IP);
      });

      it("a user-owned loadBalancerIP wins over a pin: no address, the rule on the user's IP", async () => {
        const userFirewall: FirewallSpec = { ...FIREWALL, destination: { kind: "ip", ip: "203.0.113.50" } };
        const captured = await build(transient({ userIP: "203.0.113.50", firewall: userFirewall }), {
          ip: PINNED_IP,
          reserve: true,
        });
        assert.equal(byName(captured.registered).has("default/web:address"), false);
        assert.equal(
          byName(captured.registered).get("default/web:forwarding-rule-tcp")?.inputs.ipAddress,
          "203.0.113.50",
        );
      });
    });

    it("a backend zone missing from the cluster references is an error, not a silent gap", async () => {
      await assert.rejects(
        capture(
          (opts) =>
            new ServiceLoadBalancer(
              KEY,
              {
                service: service({ backendZones: ["us-central1-z"] }),
                project: PROJECT,
                region: REGION,
                network: NETWORK,
                cluster: REFS,
              },
              opts,
            ),
        ),
        { message: "no instance group us-central1-z in the cluster references" },
      );
      await pulumi.runtime.disconnect();
    });
  });

  describe("the owner marker (leaks/classify.ts's proof): in every description dccm creates, ignored once created", () => {
    const OWNER = { clusterId: "c0ffee1234", clusterUid: "c1a55e00-0000-4000-8000-000000000001" };
    const LB = "a1b4e28ba2fa141d2883f0016d3cca42";
    const KEY = "default/web";
    const DESCRIPTION = '{"kubernetes.io/service-name":"default/web"}';
    const OWNED =
      '{"kubernetes.io/service-name":"default/web","dccm.io/cluster-id":"c0ffee1234","dccm.io/cluster-uid":"c1a55e00-0000-4000-8000-000000000001"}';
    const OWNED_CLUSTER =
      '{"kubernetes.io/cluster-id":"c0ffee1234","dccm.io/cluster-id":"c0ffee1234","dccm.io/cluster-uid":"c1a55e00-0000-4000-8000-000000000001"}';
    const REFS: ClusterRefs = {
      nodeHealthCheck: NODE_HC,
      legacyNodeHealthCheck:
        "https://www.googleapis.com/compute/v1/projects/dccm-test/global/httpHealthChecks/k8s-c0ffee1234-node",
      instanceGroups: { "us-central1-a": IG_A, "us-central1-b": IG_B },
    };
    // Every resource a Service can have: its address reserved, dedicated health check, its firewall, both families.
    const desired = externalServiceDesired("default", "web", "b4e28ba2-fa14-41d2-883f-0016d3cca427", LB, [80, 443], {
      reserveAddress: true,
      healthCheck: { kind: "dedicated", spec: httpHealthCheck(LB, 32000, DESCRIPTION) },
      healthCheckFirewall: healthCheckFirewall(`k8s-${LB}-http-hc`, 32000, DESCRIPTION),
      ipv6: ipv6Half(KEY, LB, "v6-subnet", ["::/0"], [{ protocol: "tcp", ports: ["80", "443"] }], 32000),
    });
    const build = (owner?: typeof OWNER): Promise<Captured<ServiceLoadBalancer>> =>
      capture(
        (opts) =>
          new ServiceLoadBalancer(
            KEY,
            {
              service: desired,
              project: PROJECT,
              region: REGION,
              network: NETWORK,
              cluster: REFS,
              ...(owner !== undefined ? { owner } : {}),
            },
            opts,
          ),
      );
    const customs = (captured: Captured<pulumi.Resource>): Registered[] =>
      captured.registered.filter((resource) => resource.custom).sort((a, b) => a.name.localeCompare(b.name));

    it("a Service: every resource's description is exactly the Service's with both owner keys; nothing else differs from a declaration without owner", async () => {
      const owned = await build(OWNER);
      const plain = await build();
      assert.deepStrictEqual(
        customs(owned).map((resource) => [resource.name, resource.inputs.description]),
        customs(plain).map((resource) => [resource.name, OWNED]),
      );
      assert.equal(customs(owned).length, 10);
      assert.deepStrictEqual(
        customs(plain).map((resource) => [resource.name, resource.inputs.description]),
        customs(plain).map((resource) => [resource.name, DESCRIPTION]),
      );
      assert.deepStrictEqual(
        customs(owned).map((resource) => ({ ...resource, inputs: { ...resource.inputs, description: undefined } })),
        customs(plain).map((resource) => ({ ...resource, inputs: { ...resource.inputs, description: undefined } })),
      );
    });

    it("a Service: every resource ignores changes of its description (an existing one keeps what it has: never updated or replaced for the marker)", async () => {
      const owned = await build(OWNER);
      const customNames = new Set(customs(owned).map((resource) => resource.name));
      const constructions = owned.constructions.filter((construction) => customNames.has(construction.name));
      assert.equal(constructions.length, 10);
      for (const construction of constructions)
        assert.ok(
          construction.ignoreChanges?.includes("description"),
          `${construction.name}: ${String(construction.ignoreChanges)}`,
        );
    });

    it("the cluster: groups, health checks and their firewall carry the marker; routes keep the stock CCM's description", async () => {
      const cluster = {
        ...fixtureCluster([route("node-a1", "11111111-1111-4111-8111-111111111111", "10.64.1.0/24", "us-central1-a")]),
        legacyNodeHealthCheck: true,
      };
      const captured = await capture((opts) => new ClusterNetwork("cluster", { cluster, owner: OWNER }, opts));
      assert.deepStrictEqual(
        customs(captured).map((resource) => [resource.name, resource.inputs.description]),
        [
          ["cluster:ig-us-central1-a", OWNED_CLUSTER],
          ["cluster:ig-us-central1-b", OWNED_CLUSTER],
          ["cluster:node-hc", OWNED_CLUSTER],
          ["cluster:node-hc-fw", OWNED_CLUSTER],
          ["cluster:node-legacy-hc", OWNED_CLUSTER],
          ["cluster:route-node-a1", "k8s-node-route"],
        ],
      );
      assert.deepStrictEqual(
        captured.constructions
          .filter((construction) => construction.name !== "cluster")
          .map((construction) => [construction.name, construction.ignoreChanges]),
        [
          ["cluster:ig-us-central1-a", ["description", "network"]],
          ["cluster:ig-us-central1-b", ["description", "network"]],
          [
            "cluster:node-hc",
            ["description", "checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold"],
          ],
          [
            "cluster:node-legacy-hc",
            ["description", "checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold"],
          ],
          ["cluster:node-hc-fw", ["description"]],
          ["cluster:route-node-a1", ["nextHopInstanceZone"]],
        ],
      );
    });
  });

  describe("parseScope", () => {
    const cases: [string | undefined, ReturnType<typeof parseScope>][] = [
      [undefined, { kind: "all" }],
      ["", { kind: "all" }],
      [" all ", { kind: "all" }],
      ["cluster", { kind: "cluster" }],
      ["service:default/web", { kind: "service", namespace: "default", name: "web" }],
      ["service:kube-system/kube-dns", { kind: "service", namespace: "kube-system", name: "kube-dns" }],
    ];
    for (const [text, scope] of cases) {
      it(`${JSON.stringify(text)} → ${JSON.stringify(scope)}`, () => {
        assert.deepStrictEqual(parseScope(text), scope);
      });
    }
    for (const bad of [
      "service:web",
      "service:Default/web",
      "services:default/web",
      "service:default/web/x",
      "everything",
    ]) {
      it(`${JSON.stringify(bad)} is refused`, () => {
        assert.throws(() => parseScope(bad), {
          message: `dccm:scope: "${bad}" is not all, cluster or service:<namespace>/<name>`,
        });
      });
    }
  });
});

// Tier 2: config `firewallManagement: manual` under pulumi.runtime.setMocks. Each stack declares
// exactly what `managed` declares but its Firewalls, and its outputs carry the rules it would have
// written: the same names, projects and properties as the Firewalls `managed` registers.
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";

import { declareStack, type StackOutputs } from "../../../components/stack";
import { desiredState, type Config, type DesiredState, type PublishedFirewall, type Scope } from "../../../model";
import { capture, type Registered } from "../../support/fakes/pulumiMocks";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const HOST = "host-vpc-1";
const FIREWALL = "gcp:compute/firewall:Firewall";

const SNAPSHOT = {
  nodes: [
    gceNode("node-a1", "aaaaaaaa-0000-4000-8000-000000000001", "us-central1-a", ["10.64.1.0/24"]),
    gceNode("node-b1", "bbbbbbbb-0000-4000-8000-000000000002", "us-central1-b", ["10.64.2.0/24"]),
  ],
  services: [
    lbService("default", "web", "11111111-aaaa-4aaa-8aaa-111111111111", {
      ports: [
        { protocol: "TCP", port: 80 },
        { protocol: "UDP", port: 53 },
      ],
    }),
    lbService("default", "local", "22222222-bbbb-4bbb-8bbb-222222222222", {
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 30100,
    }),
    lbService("default", "ilb", "33333333-cccc-4ccc-8ccc-333333333333", {
      annotations: { "networking.gke.io/load-balancer-type": "Internal" },
    }),
  ],
};

function desired(config: Partial<Config>): DesiredState {
  return desiredState(SNAPSHOT, { ...CONFIG, networkProject: HOST, ...config });
}

const MANAGED = desired({});
const MANUAL = desired({ firewallManagement: "manual" });

function unwrap(value: unknown): Promise<unknown> {
  if (pulumi.Output.isInstance(value)) return new Promise((resolve) => value.apply(resolve)).then(unwrap);
  if (Array.isArray(value)) return Promise.all(value.map(unwrap));
  if (value !== null && typeof value === "object")
    return Promise.all(Object.entries(value).map(async ([k, v]) => [k, await unwrap(v)] as const)).then(
      Object.fromEntries,
    );
  return Promise.resolve(value);
}

async function run(
  state: DesiredState,
  scope: Scope,
): Promise<{ registered: Omit<Registered, "importId">[]; outputs: Record<string, unknown> }> {
  const mockState = (
    type: string,
    inputs: Record<string, unknown>,
  ): { id: string; state: Record<string, unknown> } => ({
    id: `${type}/${String(inputs.name)}`,
    state: {
      ...inputs,
      address: "198.51.100.5",
      // A forwarding rule without an address gets an ephemeral IP.
      ipAddress: inputs.ipAddress ?? "198.51.100.6",
      selfLink: `https://mock.test/${type}/${String(inputs.name)}`,
    },
  });
  let outputs: StackOutputs | undefined;
  const captured = await capture(mockState, (opts) => {
    outputs = declareStack(state, scope).outputs;
    return new pulumi.ComponentResource("test:index:Root", "root", {}, opts);
  });
  const registered = captured.registered
    .map(({ type, name, custom, inputs }) => ({ type, name, custom, inputs }))
    .sort((a, b) => a.name.localeCompare(b.name));
  if (outputs === undefined) throw new Error("declareStack did not run");
  // Only what this test reads: the outputs of a mock run may hold values that never resolve.
  const { loadBalancers, publishedFirewalls } = outputs;
  return {
    registered,
    outputs: (await unwrap({
      loadBalancers,
      ...(publishedFirewalls !== undefined ? { publishedFirewalls } : {}),
    })) as Record<string, unknown>,
  };
}

/** A Firewall's inputs as the rule they write: what `manual` must publish for it. */
function asPublished(inputs: Record<string, unknown>): { project: unknown; rule: PublishedFirewall } {
  const common = {
    name: inputs.name,
    description: inputs.description,
    sourceRanges: inputs.sourceRanges,
    targetTags: inputs.targetTags,
    priority: inputs.priority,
  };
  const destinationRanges = (inputs.destinationRanges as string[] | undefined) ?? [];
  const rule = (
    inputs.denies !== undefined
      ? { action: "deny", spec: common, destinationRanges }
      : { action: "allow", spec: { ...common, allows: inputs.allows }, destinationRanges }
  ) as PublishedFirewall;
  return { project: inputs.project, rule };
}

function publishedOf(outputs: Record<string, unknown>, key: string | undefined): PublishedFirewall[] {
  if (key === undefined) return (outputs.publishedFirewalls as PublishedFirewall[] | undefined) ?? [];
  const lbs = outputs.loadBalancers as Record<string, { publishedFirewalls?: PublishedFirewall[] }>;
  return lbs[key].publishedFirewalls ?? [];
}

/** The spec fields a Firewall input carries, in the same order, so deepStrictEqual compares values only. */
function normalized(rule: PublishedFirewall): unknown {
  const { spec } = rule;
  return {
    action: rule.action,
    name: spec.name,
    description: spec.description,
    sourceRanges: [...spec.sourceRanges].sort(),
    targetTags: [...spec.targetTags].sort(),
    priority: spec.priority,
    allows: "allows" in spec ? spec.allows.map((a) => ({ protocol: a.protocol, ports: [...a.ports] })) : undefined,
    destinationRanges: [...rule.destinationRanges].sort(),
  };
}

describe("components: firewallManagement manual under Pulumi mocks", () => {
  afterEach(() => pulumi.runtime.disconnect());

  const scopes: [string, Scope, string | undefined, string[]][] = [
    ["the cluster stack", { kind: "cluster" }, undefined, ["k8s-c0ffee1234-node-http-hc"]],
    [
      "an external Service",
      { kind: "service", namespace: "default", name: "web" },
      "default/web",
      ["k8s-fw-a11111111aaaa4aaa8aaa11111111111"],
    ],
    [
      "an ETP=Local Service",
      { kind: "service", namespace: "default", name: "local" },
      "default/local",
      ["k8s-a22222222bbbb4bbb8bbb22222222222-http-hc", "k8s-fw-a22222222bbbb4bbb8bbb22222222222"],
    ],
    [
      "an internal Service",
      { kind: "service", namespace: "default", name: "ilb" },
      "default/ilb",
      ["k8s-fw-a33333333cccc4ccc8ccc33333333333"],
    ],
  ];
  for (const [what, scope, key, names] of scopes) {
    it(`${what}: the managed set without its Firewalls; its outputs carry those Firewalls' rules`, async () => {
      const managed = await run(MANAGED, scope);
      const manual = await run(MANUAL, scope);
      const firewalls = managed.registered
        .filter((r) => r.type === FIREWALL)
        .sort((a, b) => String(a.inputs.name).localeCompare(String(b.inputs.name)));
      assert.deepStrictEqual(
        firewalls.map((r) => r.inputs.name),
        names,
      );
      assert.deepStrictEqual(
        manual.registered.map(({ type, name }) => [type, name]),
        managed.registered.filter((r) => r.type !== FIREWALL).map(({ type, name }) => [type, name]),
      );
      const published = publishedOf(manual.outputs, key);
      assert.deepStrictEqual(
        published.map(normalized),
        firewalls.map((r) => normalized(asPublished(r.inputs).rule)),
      );
      assert.deepStrictEqual(
        firewalls.map((r) => asPublished(r.inputs).project),
        firewalls.map(() => HOST),
      );
      assert.equal(publishedOf(managed.outputs, key).length, 0);
    });
  }

  it("managed: the outputs hold no publishedFirewalls key (outputs as before)", async () => {
    const cluster = await run(MANAGED, { kind: "cluster" });
    assert.equal("publishedFirewalls" in cluster.outputs, false);
    const web = await run(MANAGED, { kind: "service", namespace: "default", name: "web" });
    const lb = (web.outputs.loadBalancers as Record<string, Record<string, unknown>>)["default/web"];
    assert.deepStrictEqual(Object.keys(lb).sort(), ["forwardingRuleShape", "ingress", "resources"]);
  });
});

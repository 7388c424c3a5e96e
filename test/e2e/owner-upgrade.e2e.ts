/**
 * The owner marker on upgrade (real engine, GCE emulator): stacks applied by a dccm that wrote no
 * marker (a runner without the cluster UID declares the descriptions as an older dccm did) plan no
 * change and change nothing under a runner that writes it. An address's, forwarding rule's and
 * target pool's description forces a replacement in GCE, which could change a load balancer's IP:
 * `description` is ignored once a resource exists. What is created afterwards carries the marker.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import { StackRunner } from "../../stacks/runner";
import {
  CLUSTER_STACK,
  desiredState,
  loadBalancerName,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
  type ServiceInfo,
} from "../../model";
import { E2E_CONFIG, E2E_NODE } from "../support/e2e/cluster";
import { startTestEnv, type TestEnv } from "../support/e2e/env";

const CLUSTER_UID = "c1a55e00-0000-4000-8000-000000000001";
// addressReservation `always`: the older dccm reserved <lb> for every Service, and an address's
// description, like a rule's, must not force its replacement on upgrade.
const config = parseConfig({ ...E2E_CONFIG, subnetwork: "k8s-subnet", addressReservation: "always" });

function service(name: string, uid: string, annotations: Record<string, string> = {}): ServiceInfo {
  return {
    namespace: "default",
    name,
    uid,
    type: "LoadBalancer",
    annotations,
    ports: [{ protocol: "TCP", port: 80 }],
    loadBalancerSourceRanges: [],
    deleting: false,
  };
}

/** External on backend services, external on a target pool (the legacy check in the cluster stack), internal. */
const SERVICES = [
  service("web", "1b0e2e00-1111-4222-8333-444455556666"),
  service("pool", "2b0e2e00-1111-4222-8333-444455556666", { "dccm.io/backend": "target-pool" }),
  service("ilb", "3b0e2e00-1111-4222-8333-444455556666", { "networking.gke.io/load-balancer-type": "Internal" }),
];

describe("the owner marker on upgrade: existing stacks plan no change", function () {
  this.timeout(600_000);
  let env: TestEnv;
  const snapshot: ClusterSnapshot = { nodes: [E2E_NODE], services: SERVICES };
  const desired = desiredState(snapshot, config);
  const stacks = [
    { stack: CLUSTER_STACK, scope: { kind: "cluster" as const } },
    ...SERVICES.map((s) => ({
      stack: serviceStackName("default", s.name),
      scope: { kind: "service" as const, namespace: "default", name: s.name },
    })),
  ];
  const runner = (clusterUid: string | undefined, workDir: string): StackRunner =>
    new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, workDir),
      pulumiCommand: env.pulumiCommand,
      projectName: "dccm-e2e0cafe",
      ...(clusterUid !== undefined ? { clusterUid } : {}),
    });
  const gceState = (): string =>
    JSON.stringify(
      env.gce
        .listResources()
        .filter((r) => r.kind !== "instances")
        .map((r) => [r.kind, r.scope, r.name, r.properties]),
    );

  before(async () => {
    env = await startTestEnv({ withKube: false });
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
  });

  after(async () => {
    await env?.stop();
  });

  it("applied without the marker (as an older dccm did), every resource's description is the unmarked one", async () => {
    const older = runner(undefined, "workspaces-older");
    for (const { stack, scope } of stacks) await older.up(stack, scope, desired, { refresh: false });
    const described = env.gce
      .listResources()
      .filter((r) => r.kind !== "instances" && r.kind !== "routes")
      .map((r) => String(r.properties.description));
    // The cluster stack: group, regional and legacy node checks, their firewall; per Service: address, backend service or target pool, rule, firewall.
    assert.equal(described.length, 16);
    for (const description of described) assert.doesNotMatch(description, /dccm\.io\/cluster-uid/);
  });

  it("a runner that writes the marker: the preview plans no change of any GCE resource, and the up changes nothing (no IP moves)", async () => {
    const marking = runner(CLUSTER_UID, "workspaces-marking");
    const before = gceState();
    for (const { stack, scope } of stacks) {
      const steps: StepEventMetadata[] = [];
      await marking.preview(stack, scope, desired, { onStep: (step) => steps.push(step) });
      const gceSteps = steps.filter((step) => step.type.startsWith("gcp:"));
      assert.ok(gceSteps.length > 0, stack);
      assert.deepEqual(
        gceSteps.filter((step) => step.op !== "same").map((step) => `${step.op} ${step.urn}`),
        [],
        stack,
      );
      const outcome = await marking.up(stack, scope, desired, { refresh: false });
      assert.deepEqual(outcome.changed, [], stack);
    }
    assert.equal(gceState(), before, "GCE unchanged: descriptions, IPs, everything");
  });

  it("what the marking runner creates afterwards carries the marker", async () => {
    const fresh = service("fresh", "4b0e2e00-1111-4222-8333-444455556666");
    const withFresh = desiredState({ nodes: [E2E_NODE], services: [...SERVICES, fresh] }, config);
    const lb = loadBalancerName(fresh.uid);
    await runner(CLUSTER_UID, "workspaces-marking").up(
      serviceStackName("default", "fresh"),
      { kind: "service", namespace: "default", name: "fresh" },
      withFresh,
      { refresh: false },
    );
    const marked = `{"kubernetes.io/service-name":"default/fresh","dccm.io/cluster-id":"e2e0cafe","dccm.io/cluster-uid":"${CLUSTER_UID}"}`;
    assert.deepEqual(
      env.gce
        .listResources()
        .filter((r) => r.name.includes(lb))
        .map((r) => [`${r.kind}/${r.name}`, r.properties.description])
        .sort(),
      [
        [`addresses/${lb}`, marked],
        [`backendServices/${lb}`, marked],
        [`firewalls/k8s-fw-${lb}`, marked],
        [`forwardingRules/${lb}`, marked],
      ],
    );
  });
});

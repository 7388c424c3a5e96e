/**
 * The real Pulumi engine runs the real stack program (through the Automation API, file://
 * backend) against the GCE emulator: up, drift put back by refresh, destroy.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { CLUSTER_STACK, desiredState, parseConfig, serviceStackName, type ClusterSnapshot } from "../../model";
import { StackRunner } from "../../daemon/stacks";
import { startTestEnv, type TestEnv } from "../support/env";

const config = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "e2e",
  clusterId: "e2e0cafe",
});

const SERVICE_UID = "0b0e2e00-1111-4222-8333-444455556666";
const LB = "a0b0e2e0011114222833344445555666";

const snapshot: ClusterSnapshot = {
  nodes: [
    { name: "node-1", uid: "n0000000-0000-4000-8000-000000000001", providerID: "gce://dccm-test/us-central1-a/node-1", labels: {}, taints: [], deleting: false, podCIDRs: [] },
  ],
  services: [
    {
      namespace: "default",
      name: "web",
      uid: SERVICE_UID,
      type: "LoadBalancer",
      annotations: {},
      ports: [{ protocol: "TCP", port: 80 }],
      loadBalancerSourceRanges: [],
      deleting: false,
    },
  ],
};

describe("stack program on the real engine and the GCE emulator", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let runner: StackRunner;
  const desired = desiredState(snapshot, config);
  const serviceStack = serviceStackName("default", "web");

  before(async () => {
    env = await startTestEnv({ withKube: false });
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces"),
      pulumiCommand: env.pulumiCommand,
    });
  });

  after(async () => {
    await env?.stop();
  });

  function gceResources(): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.kind !== "instances")
      .map((resource) => `${resource.kind} ${resource.scope} ${resource.name}`);
  }

  it("up of the cluster stack and one Service stack creates exactly their resources", async () => {
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    const outcome = await runner.up(serviceStack, { kind: "service", namespace: "default", name: "web" }, desired, { refresh: false });
    assert.deepEqual(gceResources(), [
      `addresses us-central1 ${LB}`,
      `backendServices us-central1 ${LB}`,
      "firewalls global k8s-e2e0cafe-node-http-hc",
      `firewalls global k8s-fw-${LB}`,
      `forwardingRules us-central1 ${LB}`,
      "healthChecks us-central1 k8s-e2e0cafe-node",
      "instanceGroups us-central1-a k8s-ig--e2e0cafe",
    ]);
    const address = env.gce.listResources().find((resource) => resource.kind === "addresses");
    const ip = address?.properties.address;
    assert.equal(typeof ip, "string");
    assert.deepEqual(outcome.outputs.loadBalancers, {
      "default/web": {
        ingress: [ip],
        resources: { address: LB, forwardingRules: [LB], backendServices: [LB], healthCheck: "k8s-e2e0cafe-node", firewalls: [`k8s-fw-${LB}`] },
      },
    });
    const rule = env.gce.listResources().find((resource) => resource.kind === "forwardingRules");
    assert.equal(rule?.properties.ipAddress, ip);
  });

  it("a forwarding rule deleted out of band is put back by up with refresh", async () => {
    env.gce.deleteOutOfBand("forwardingRules", LB);
    assert.equal(gceResources().includes(`forwardingRules us-central1 ${LB}`), false);
    const outcome = await runner.up(serviceStack, { kind: "service", namespace: "default", name: "web" }, desired, { refresh: true });
    assert.deepEqual(
      outcome.changed.map((change) => `${change.type} ${change.name} ${change.op}`),
      ["gcp:compute/forwardingRule:ForwardingRule default/web:forwarding-rule-tcp create"],
    );
    assert.equal(gceResources().includes(`forwardingRules us-central1 ${LB}`), true);
  });

  it("destroy of both stacks leaves the emulator empty and removes the stacks", async () => {
    await runner.destroyAndRemove(serviceStack);
    await runner.destroyAndRemove(CLUSTER_STACK);
    assert.deepEqual(gceResources(), []);
    assert.deepEqual(await runner.listStacks(), []);
  });
});

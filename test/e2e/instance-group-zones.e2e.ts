/**
 * instanceGroupZones: the first and the last Node of a configured zone change the
 * cluster stack only. Without the key each backend-service Service's stack runs for them (its
 * backend list gains or loses the zone's group); with it, the group stands empty and every load
 * balancer lists it, so node churn is one cluster-stack run and no Service-stack run.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { parseNodeConfig } from "../../controllers/node";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

const ZONES = ["us-central1-a", "us-central1-b", "us-central1-c"];
const SERVICES = ["web", "api"];

describe("dccm daemon: instanceGroupZones, a zone's first and last Node", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  const lbNames: string[] = [];

  const groupMembers = (): Record<string, string[]> =>
    Object.fromEntries(
      env.gce
        .listResources()
        .filter((r) => r.kind === "instanceGroups")
        .map((r) => [
          r.scope,
          ((r.properties.instances ?? []) as string[]).map((link) => link.split("/").pop() ?? "").sort(),
        ]),
    );
  const backendZones = (lbName: string): string[] => {
    const backendService = env.gce.listResources().find((r) => r.kind === "backendServices" && r.name === lbName);
    const backends = (backendService?.properties.backends ?? []) as Array<{ group: string }>;
    return backends.map((backend) => backend.group.split("/zones/")[1]?.split("/")[0] ?? "").sort();
  };
  const ups = async (stack: string): Promise<number> =>
    counter(daemon.metrics.registry, "dccm_stack_runs_total", { stack, operation: "up" });
  const serviceUps = async (): Promise<number[]> => Promise.all(SERVICES.map((name) => ups(`service.default.${name}`)));

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    env.gce.putInstance("node-b1", { zone: "us-central1-b" });
    await createNode(core, "node-a1", "us-central1-a");
    daemon = new Daemon(
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, instanceGroupZones: ZONES }), {
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "1h" }, []),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    for (const name of SERVICES) {
      const created = await core.createNamespacedService({ namespace: "default", body: lbService(name) });
      lbNames.push(loadBalancerName(created.metadata?.uid ?? ""));
    }
    for (const name of SERVICES) {
      await eventually(
        `${name}'s ingress`,
        async () =>
          (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip,
      );
    }
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("every configured zone has its group from the start, empty where no Node runs, and every load balancer lists all three", () => {
    assert.deepEqual(groupMembers(), { "us-central1-a": ["node-a1"], "us-central1-b": [], "us-central1-c": [] });
    for (const lbName of lbNames) assert.deepEqual(backendZones(lbName), ZONES);
  });

  it("the first Node of zone b: one cluster-stack run, no Service-stack run", async () => {
    const [clusterBefore, servicesBefore] = [await ups("cluster"), await serviceUps()];
    await createNode(core, "node-b1", "us-central1-b");
    await eventually("node-b1 in the zone-b group", () =>
      groupMembers()["us-central1-b"]?.includes("node-b1") ? true : undefined,
    );
    await daemon.idle();
    assert.equal((await ups("cluster")) - clusterBefore, 1);
    assert.deepEqual(await serviceUps(), servicesBefore);
    for (const lbName of lbNames) assert.deepEqual(backendZones(lbName), ZONES);
  });

  it("the last Node of zone b leaves: one cluster-stack run, no Service-stack run, the group stays listed and empty", async () => {
    const [clusterBefore, servicesBefore] = [await ups("cluster"), await serviceUps()];
    await core.deleteNode({ name: "node-b1" });
    await eventually("the zone-b group emptied", () =>
      groupMembers()["us-central1-b"]?.length === 0 ? true : undefined,
    );
    await daemon.idle();
    assert.equal((await ups("cluster")) - clusterBefore, 1);
    assert.deepEqual(await serviceUps(), servicesBefore);
    assert.deepEqual(groupMembers(), { "us-central1-a": ["node-a1"], "us-central1-b": [], "us-central1-c": [] });
    for (const lbName of lbNames) assert.deepEqual(backendZones(lbName), ZONES);
  });
});

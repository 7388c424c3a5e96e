/**
 * Nodes coming and going under a running load balancer, on a real
 * kube-apiserver, the real engine and the GCE emulator (which refuses, as GCE does, to delete an
 * instance group a backend service uses, or to write a group naming a deleted VM).
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { EVENT_NAMESPACE } from "../../runtime/events";
import { loadBalancerName, parseConfig } from "../../model";
import { parseNodeConfig } from "../../controllers/node";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

describe("dccm daemon: Nodes and zones coming and going", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let webLb = "";

  const groupZones = (): string[] =>
    env.gce
      .listResources()
      .filter((r) => r.kind === "instanceGroups")
      .map((r) => r.scope);
  const groupMembers = (zone: string): string[] => {
    const group = env.gce.listResources().find((r) => r.kind === "instanceGroups" && r.scope === zone);
    return ((group?.properties.instances ?? []) as string[]).map((link) => link.split("/").pop() ?? "").sort();
  };
  const backendZones = (): string[] => {
    const backendService = env.gce.listResources().find((r) => r.kind === "backendServices" && r.name === webLb);
    const backends = (backendService?.properties.backends ?? []) as Array<{ group: string }>;
    return backends.map((backend) => backend.group.split("/zones/")[1]?.split("/")[0] ?? "").sort();
  };
  const clusterRetries = (): Promise<number> =>
    counter(daemon.metrics.registry, "dccm_reconciles_total", { kind: "cluster", result: "retry" });

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (const [name, zone] of [
      ["node-a1", "us-central1-a"],
      ["node-a2", "us-central1-a"],
      ["node-a3", "us-central1-a"],
      ["node-b1", "us-central1-b"],
    ] as const) {
      env.gce.putInstance(name, { zone });
    }
    await createNode(core, "node-a1", "us-central1-a");
    await createNode(core, "node-a2", "us-central1-a");
    await createNode(core, "node-b1", "us-central1-b");
    daemon = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), {
        // The lifecycle poll would delete a Node whose VM is gone; these tests look at the Node meanwhile.
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "1h" }, []),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    webLb = loadBalancerName(created.metadata?.uid ?? "");
    await eventually(
      "web's ingress",
      async () =>
        (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    await daemon.idle();
    assert.deepEqual(backendZones(), ["us-central1-a", "us-central1-b"]);
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("a zone scaled to zero: the load balancer drops the zone before its group is deleted, and no cluster run fails", async () => {
    const retries = await clusterRetries();
    // The load balancer's update fails at first, so the cluster stack surely runs before it: it
    // must not delete the group the backend service still names.
    env.gce.injectFault({
      kind: "backendServices",
      name: webLb,
      operation: "update",
      status: 503,
      message: "backend service update held back by the test",
      count: 2,
    });
    await core.deleteNode({ name: "node-b1" });
    await eventually("the zone-b group gone", () => (groupZones().includes("us-central1-b") ? undefined : true));
    await daemon.idle();
    assert.deepEqual(groupZones(), ["us-central1-a"]);
    assert.deepEqual(backendZones(), ["us-central1-a"]);
    assert.equal(await clusterRetries(), retries);
    assert.equal(
      await counter(daemon.metrics.registry, "dccm_reconciles_total", { kind: "service", result: "retry" }),
      2,
    );
  });

  it("a Node whose VM is gone leaves its group with a Warning on the Node, and other Nodes' changes go on", async () => {
    const retries = await clusterRetries();
    assert.deepEqual(groupMembers("us-central1-a"), ["node-a1", "node-a2"]);
    env.gce.deleteOutOfBand("instances", "node-a2", { scope: "us-central1-a" });
    await createNode(core, "node-a3", "us-central1-a");
    await eventually("node-a3 in the zone-a group", () =>
      groupMembers("us-central1-a").includes("node-a3") ? true : undefined,
    );
    await daemon.idle();
    assert.deepEqual(groupMembers("us-central1-a"), ["node-a1", "node-a3"]);
    const events = await core.listNamespacedEvent({
      namespace: EVENT_NAMESPACE,
      fieldSelector: "involvedObject.kind=Node,involvedObject.name=node-a2",
    });
    assert.deepEqual(
      events.items
        .filter((event) => event.reportingComponent === "dccm")
        .map((event) => [event.type, event.reason, event.message]),
      [
        [
          "Warning",
          "InstanceNotFound",
          "GCE instance dccm-test/us-central1-a/node-a2 does not exist (instances.get: 404): " +
            "the Node is left out of instance group k8s-ig--e2e0cafe and of pod routes until it does",
        ],
      ],
    );
    assert.equal(await counter(daemon.metrics.registry, "dccm_nodes_without_instance", {}), 1);
    assert.equal(await clusterRetries(), retries);
    // The Node itself is the node lifecycle's to delete (it is not NotReady here): it stays.
    assert.equal((await core.readNode({ name: "node-a2" })).metadata?.name, "node-a2");
  });

  it("after a restart, a cluster stack that keeps failing (429 on instance groups) holds back no Service", async () => {
    await daemon.stop();
    // While dccm is down a Node joins, so the cluster stack must run after the restart; GCE rate-limits that write.
    env.gce.putInstance("node-a4", { zone: "us-central1-a" });
    await createNode(core, "node-a4", "us-central1-a");
    env.gce.injectFault({
      kind: "instanceGroups",
      operation: "update",
      status: 429,
      message: "Rate Limit Exceeded",
      count: 1000,
    });
    daemon = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), {
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "1h" }, []),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    const late = await core.createNamespacedService({ namespace: "default", body: lbService("late") });
    const ip = await eventually(
      "late's ingress",
      async () =>
        (await core.readNamespacedServiceStatus({ name: "late", namespace: "default" })).status?.loadBalancer
          ?.ingress?.[0]?.ip,
    );
    const lateLb = loadBalancerName(late.metadata?.uid ?? "");
    assert.equal(
      env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lateLb)?.properties.ipAddress,
      ip,
    );
    assert.equal((await clusterRetries()) >= 1, true);
    assert.deepEqual(groupMembers("us-central1-a"), ["node-a1", "node-a3"]);
  });
});

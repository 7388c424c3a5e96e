/**
 * The daemon end to end: a real kube-apiserver, the real Pulumi engine, the GCE emulator.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";

import { StackRunner } from "../../stacks/runner";
import { lateRunErrorListener } from "../../stacks/processGuard";
import { loadBalancerName, parseConfig, LB_FINALIZER } from "../../model";
import { parseNodeConfig } from "../../controllers/node";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import {
  createNode,
  createTaintedNode,
  E2E_CONFIG,
  eventReasons,
  initializedWithRoute,
  lbService,
} from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

describe("dccm daemon", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let lbIP = "";
  let webLb = "";
  let errorListeners = 0;
  let lateListenerBefore = false;

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    env.gce.putInstance("node-b1", { zone: "us-central1-b" });
    env.gce.putInstance("node-a2", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    await createNode(core, "node-b1", "us-central1-b");
    errorListeners = process.listenerCount("uncaughtException") + process.listenerCount("unhandledRejection");
    // One for the process, installed by its first StackRunner: an earlier test file's, or the daemon's.
    lateListenerBefore = process.listeners("unhandledRejection").includes(lateRunErrorListener);
    // addressReservation `always`: the address <lb> reserved for the Service's life is what lets a
    // forwarding rule deleted out of band come back on the same IP, and what the STATIC_ADDRESSES
    // fault below refuses. Under `transient` (the default) that repair is held with IPChangeHeld
    // instead (test/e2e/address-reservation.e2e.ts).
    daemon = new Daemon(
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, addressReservation: "always" }), {
        driftMs: 6000,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "2s" }, []),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("serves /healthz, /readyz and /metrics and holds the Lease", async () => {
    const base = `http://127.0.0.1:${daemon.address?.port}`;
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^# HELP dccm_reconciles_total /m);
    const lease = await env.kube.kubeConfig
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: "dccm", namespace: "kube-system" });
    assert.equal(lease.spec?.holderIdentity, "dccm-e2e");
    assert.equal(lease.spec?.leaseDurationSeconds, 15);
  });

  it("a LoadBalancer Service gets its resources, its ingress IP and Ensuring/Ensured events", async () => {
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    webLb = loadBalancerName(created.metadata?.uid ?? "");
    const ingress = await eventually("web's status.loadBalancer.ingress", async () => {
      const service = await core.readNamespacedService({ name: "web", namespace: "default" });
      return service.status?.loadBalancer?.ingress?.[0]?.ip;
    });
    const address = env.gce
      .listResources()
      .find((resource) => resource.kind === "addresses" && resource.name === webLb);
    assert.equal(address?.properties.address, ingress);
    lbIP = ingress;
    const service = await core.readNamespacedService({ name: "web", namespace: "default" });
    assert.deepEqual(service.metadata?.finalizers, [LB_FINALIZER]);
    assert.deepEqual(
      env.gce
        .listResources()
        .filter((resource) => resource.name.includes(webLb))
        .map((resource) => `${resource.kind} ${resource.name}`),
      [`addresses ${webLb}`, `backendServices ${webLb}`, `firewalls k8s-fw-${webLb}`, `forwardingRules ${webLb}`],
    );
    const reasons = (await eventReasons(core, "web")).map((event) => event.reason);
    assert.deepEqual(reasons, ["EnsuringLoadBalancer", "EnsuredLoadBalancer"]);
  });

  it("a forwarding rule deleted out of band is restored by the next drift pass, with DriftCorrected", async () => {
    env.gce.deleteOutOfBand("forwardingRules", webLb);
    await eventually("the forwarding rule back", () =>
      env.gce.listResources().some((resource) => resource.kind === "forwardingRules" && resource.name === webLb)
        ? true
        : undefined,
    );
    const drift = await eventually("a DriftCorrected event", async () =>
      (await eventReasons(core, "web")).find((event) => event.reason === "DriftCorrected"),
    );
    assert.equal(drift.message, "Put back: ForwardingRule default/web:forwarding-rule-tcp (create)");
    const rule = env.gce
      .listResources()
      .find((resource) => resource.kind === "forwardingRules" && resource.name === webLb);
    assert.equal(rule?.properties.ipAddress, lbIP);
    assert.equal(
      (await counter(daemon.metrics.registry, "dccm_drift_corrections_total", { kind: "service" })) >= 1,
      true,
    );
  });

  it("a load balancer status cleared by someone else is written back without an up", async () => {
    await daemon.idle();
    const ups = await counter(daemon.metrics.registry, "dccm_stack_runs_total", {
      stack: "service.default.web",
      operation: "up",
    });
    await core.patchNamespacedServiceStatus(
      { name: "web", namespace: "default", body: { status: { loadBalancer: { ingress: null } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    const ip = await eventually(
      "web's ingress written back",
      async () =>
        (await core.readNamespacedServiceStatus({ name: "web", namespace: "default" })).status?.loadBalancer
          ?.ingress?.[0]?.ip,
    );
    assert.equal(ip, lbIP);
    assert.equal(
      await counter(daemon.metrics.registry, "dccm_stack_runs_total", {
        stack: "service.default.web",
        operation: "up",
      }),
      ups,
    );
  });

  it("a new node runs only the cluster stack and joins its zone's instance group", async () => {
    await daemon.idle();
    const registry = daemon.metrics.registry;
    const serviceUps = await counter(registry, "dccm_stack_runs_total", {
      stack: "service.default.web",
      operation: "up",
    });
    const clusterUps = await counter(registry, "dccm_stack_runs_total", { stack: "cluster", operation: "up" });
    await createNode(core, "node-a2", "us-central1-a");
    const group = await eventually("node-a2 in the zone-a instance group", () => {
      const found = env.gce
        .listResources()
        .find((resource) => resource.kind === "instanceGroups" && resource.scope === "us-central1-a");
      const instances = (found?.properties.instances ?? []) as string[];
      return instances.some((instance) => instance.endsWith("/node-a2")) ? instances : undefined;
    });
    assert.deepEqual(
      group.map((instance) => instance.split("/").slice(-3).join("/")),
      ["us-central1-a/instances/node-a1", "us-central1-a/instances/node-a2"],
    );
    await daemon.idle();
    assert.equal(
      await counter(registry, "dccm_stack_runs_total", { stack: "cluster", operation: "up" }),
      clusterUps + 1,
    );
    assert.equal(
      await counter(registry, "dccm_stack_runs_total", { stack: "service.default.web", operation: "up" }),
      serviceUps,
    );
  });

  it("50 updates to one Service in a burst cause at most 2 up runs of its stack", async () => {
    await daemon.idle();
    const registry = daemon.metrics.registry;
    const before = await counter(registry, "dccm_stack_runs_total", { stack: "service.default.web", operation: "up" });
    for (let i = 0; i < 50; i++) {
      await core.patchNamespacedService(
        { name: "web", namespace: "default", body: { spec: { loadBalancerSourceRanges: [`10.0.${i}.0/24`] } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
    }
    await eventually("the firewall opened to the last range", () => {
      const firewall = env.gce
        .listResources()
        .find((resource) => resource.kind === "firewalls" && resource.name === `k8s-fw-${webLb}`);
      return JSON.stringify(firewall?.properties.sourceRanges) === JSON.stringify(["10.0.49.0/24"]) ? true : undefined;
    });
    await daemon.idle();
    const runs =
      (await counter(registry, "dccm_stack_runs_total", { stack: "service.default.web", operation: "up" })) - before;
    assert.equal(runs >= 1 && runs <= 2, true, `up runs for the burst: ${runs}`);
  });

  it("one Service whose up fails gets SyncLoadBalancerFailed while one created with it succeeds", async () => {
    const bad = await core.createNamespacedService({ namespace: "default", body: lbService("bad") });
    const badLb = loadBalancerName(bad.metadata?.uid ?? "");
    env.gce.injectFault({
      kind: "addresses",
      name: badLb,
      operation: "create",
      status: 403,
      message: "Quota 'STATIC_ADDRESSES' exceeded",
      count: 1,
    });
    await core.createNamespacedService({ namespace: "default", body: lbService("good") });
    const failed = await eventually("bad's SyncLoadBalancerFailed", async () =>
      (await eventReasons(core, "bad")).find((event) => event.reason === "SyncLoadBalancerFailed"),
    );
    assert.match(failed.message, /^Error syncing load balancer: .*Quota 'STATIC_ADDRESSES' exceeded/);
    const goodIP = await eventually(
      "good's ingress",
      async () =>
        (await core.readNamespacedService({ name: "good", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    assert.match(goodIP, /^\d+\.\d+\.\d+\.\d+$/);
    // The fault was for one attempt: the retry with backoff succeeds.
    await eventually(
      "bad's ingress after the retry",
      async () =>
        (await core.readNamespacedService({ name: "bad", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
  });

  it("a deleted Service loses every resource, then its finalizer, and its stack is removed", async () => {
    await core.deleteNamespacedService({ name: "web", namespace: "default" });
    await eventually("web gone from the API", async () => {
      try {
        await core.readNamespacedService({ name: "web", namespace: "default" });
        return undefined;
      } catch (error) {
        return error instanceof k8s.ApiException && error.code === 404 ? true : undefined;
      }
    });
    assert.deepEqual(
      env.gce.listResources().filter((resource) => resource.name.includes(webLb)),
      [],
    );
    const backend = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "inspect"),
      pulumiCommand: env.pulumiCommand,
      projectName: "dccm-e2e0cafe",
    });
    // The stack goes last, after the finalizer: the Service may be gone from the API a moment before.
    const expected = ["cluster", "service.default.bad", "service.default.good"];
    let stacks: string[] = [];
    await eventually(
      () => `the stack removed; stacks: ${stacks.join(", ")}`,
      async () => {
        stacks = await backend.listStacks();
        return JSON.stringify(stacks) === JSON.stringify(expected) ? true : undefined;
      },
      30_000,
      50,
    );
    const reasons = (await eventReasons(core, "web")).map((event) => event.reason);
    assert.deepEqual(reasons.slice(-2), ["DeletingLoadBalancer", "DeletedLoadBalancer"]);
  });

  it("the node controller initializes a tainted Node and reports its route once the cluster stack made it", async () => {
    env.gce.putInstance("node-a3", { zone: "us-central1-a", machineType: "e2-standard-4" });
    await createTaintedNode(core, "node-a3", "10.64.3.0/24");
    const node = await initializedWithRoute(core, "node-a3");
    assert.equal(node.spec?.providerID, "gce://dccm-test/us-central1-a/node-a3");
    // The apiserver's TaintNodesByCondition admission adds not-ready; ours is gone.
    assert.deepEqual(
      (node.spec?.taints ?? []).map((taint) => taint.key),
      ["node.kubernetes.io/not-ready"],
    );
    assert.equal(node.metadata?.labels?.["topology.kubernetes.io/zone"], "us-central1-a");
    assert.equal(node.metadata?.labels?.["node.kubernetes.io/instance-type"], "e2-standard-4");
    const condition = node.status?.conditions?.find((entry) => entry.type === "NetworkUnavailable");
    assert.equal(condition?.status, "False");
    const route = env.gce.listResources().find((resource) => resource.kind === "routes");
    assert.equal(route?.properties.destRange, "10.64.3.0/24");
    assert.equal(String(route?.properties.nextHopInstance).endsWith("/zones/us-central1-a/instances/node-a3"), true);
  });

  it("a target-pool Service gets a pool of the backend nodes and the legacy health check; a new node joins its pool", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService("pool", {}, { "dccm.io/backend": "target-pool" }),
    });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    await eventually(
      "pool's ingress",
      async () =>
        (await core.readNamespacedService({ name: "pool", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    const poolMembers = (): string[] => {
      const pool = env.gce.listResources().find((resource) => resource.kind === "targetPools" && resource.name === lb);
      return ((pool?.properties.instances ?? []) as string[])
        .map((instance) => instance.split("/").slice(-3).join("/"))
        .sort();
    };
    assert.deepEqual(poolMembers(), [
      "us-central1-a/instances/node-a1",
      "us-central1-a/instances/node-a2",
      "us-central1-a/instances/node-a3",
      "us-central1-b/instances/node-b1",
    ]);
    const legacy = env.gce.listResources().find((resource) => resource.kind === "httpHealthChecks");
    assert.deepEqual(
      [legacy?.name, legacy?.properties.port, legacy?.properties.requestPath],
      ["k8s-e2e0cafe-node", 10256, "/healthz"],
    );
    const rule = env.gce
      .listResources()
      .find((resource) => resource.kind === "forwardingRules" && resource.name === lb);
    assert.equal(rule?.properties.portRange, "80-80");
    env.gce.putInstance("node-b2", { zone: "us-central1-b" });
    await createNode(core, "node-b2", "us-central1-b");
    await eventually("node-b2 in the target pool", () =>
      poolMembers().includes("us-central1-b/instances/node-b2") ? true : undefined,
    );
  });

  it("a Service that stops being a LoadBalancer loses its resources, its ingress and the finalizer, and stays", async () => {
    const good = await core.readNamespacedService({ name: "good", namespace: "default" });
    const lb = loadBalancerName(good.metadata?.uid ?? "");
    assert.equal(
      env.gce.listResources().some((resource) => resource.name.includes(lb)),
      true,
    );
    await core.patchNamespacedService(
      { name: "good", namespace: "default", body: { spec: { type: "ClusterIP" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    const after = await eventually("good without finalizer", async () => {
      const read = await core.readNamespacedService({ name: "good", namespace: "default" });
      return (read.metadata?.finalizers ?? []).length === 0 ? read : undefined;
    });
    assert.deepEqual(after.status?.loadBalancer?.ingress ?? [], []);
    assert.deepEqual(
      env.gce.listResources().filter((resource) => resource.name.includes(lb)),
      [],
    );
    assert.deepEqual((await eventReasons(core, "good")).map((event) => event.reason).slice(-2), [
      "DeletingLoadBalancer",
      "DeletedLoadBalancer",
    ]);
  });

  it("leaves no process error listener of its pulumi runs behind: only its own one for their late errors", async () => {
    await daemon.idle();
    assert.ok(
      (await counter(daemon.metrics.registry, "dccm_stack_runs_total", { stack: "cluster", operation: "up" })) > 0,
    );
    assert.equal(
      process.listenerCount("uncaughtException") + process.listenerCount("unhandledRejection"),
      errorListeners + (lateListenerBefore ? 0 : 1),
    );
    assert.equal(process.listeners("unhandledRejection").includes(lateRunErrorListener), true);
  });
});

/**
 * Deletes that race the daemon: a Service deleted during its first `up`, deleted while
 * the daemon is down, and a daemon killed while it destroys one. Each time the Service must end
 * gone (not stuck Terminating), its stack gone from the backend, and GCE must hold nothing that
 * names it.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { createNode, lbService } from "../support/e2e/cluster";
import { backendStackNames } from "../support/e2e/backendListing";
import { backendLocks, DaemonProcesses, type RunningDaemon, processCluster } from "../support/e2e/daemon-process";
import type { TestEnv } from "../support/e2e/env";
import { serviceLeftovers } from "../support/e2e/invariants";
import { eventually } from "../support/wait";

describe("dccm daemon under delete churn", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let daemon: RunningDaemon;

  before(async () => {
    ({ env, core, daemons } = await processCluster({ backend: "gs" }));
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
  });

  after(async () => {
    daemons?.killAll();
    await env?.stop();
  });

  async function serviceGone(name: string): Promise<void> {
    let last: k8s.V1Service | undefined;
    await eventually(
      () =>
        `${name} deleted; still there with finalizers ${JSON.stringify(last?.metadata?.finalizers)}, deleting since ${String(last?.metadata?.deletionTimestamp)}`,
      async () => {
        try {
          last = await core.readNamespacedService({ name, namespace: "default" });
          return undefined;
        } catch (error) {
          if ((error as { code?: number }).code === 404) return true;
          throw error;
        }
      },
      120_000,
    );
  }

  async function assertNothingLeft(name: string, uid: string): Promise<void> {
    await serviceGone(name);
    let stacks: string[] = [];
    await eventually(
      () => `the stack of ${name} removed from the backend: ${stacks.join(", ")}`,
      async () => ((stacks = await backendStackNames(env)).includes(`service.default.${name}`) ? undefined : true),
      60_000,
    );
    assert.deepEqual(serviceLeftovers(env.gce.listResources(), "default", name, uid), []);
  }

  async function createAndWaitIngress(name: string): Promise<string> {
    const created = await core.createNamespacedService({ namespace: "default", body: lbService(name) });
    await eventually(
      `${name}'s ingress`,
      async () =>
        (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip,
      120_000,
    );
    return created.metadata?.uid ?? "";
  }

  async function providerCalls(op: "create" | "delete"): Promise<number> {
    return env.gce.calls()[`POST /emulator/provider/${op}`] ?? 0;
  }

  it("a Service deleted during its first up ends gone with nothing left", async () => {
    const baseline = await providerCalls("create");
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("early") });
    await eventually(
      "the first create call of early's up",
      async () => ((await providerCalls("create")) > baseline ? true : undefined),
      120_000,
      20,
    );
    await core.deleteNamespacedService({ name: "early", namespace: "default" });
    await assertNothingLeft("early", created.metadata?.uid ?? "");
  });

  it("a Service deleted while the daemon is down ends gone after the restart", async () => {
    const uid = await createAndWaitIngress("offline");
    assert.equal(await daemons.stop(daemon), 0);
    await core.deleteNamespacedService({ name: "offline", namespace: "default" });
    const terminating = await core.readNamespacedService({ name: "offline", namespace: "default" });
    assert.deepEqual(terminating.metadata?.finalizers, ["service.kubernetes.io/load-balancer-cleanup"]);
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await assertNothingLeft("offline", uid);
  });

  it("a daemon killed while it destroys a Service's stack: the restart finishes the delete", async () => {
    const uid = await createAndWaitIngress("destroyed");
    const baseline = await providerCalls("delete");
    await core.deleteNamespacedService({ name: "destroyed", namespace: "default" });
    await eventually(
      "the first delete call of destroyed's destroy",
      async () => ((await providerCalls("delete")) > baseline ? true : undefined),
      120_000,
      20,
    );
    await daemons.kill(daemon);
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await assertNothingLeft("destroyed", uid);
    assert.equal(await daemons.stop(daemon), 0);
    assert.deepEqual(await backendLocks(env), []);
  });

  it("a daemon killed during a first up, the Service deleted while it is down: the restart destroys what the killed up created", async () => {
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
    const baseline = await providerCalls("create");
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("interrupted") });
    await eventually(
      "the first create call of interrupted's up",
      async () => ((await providerCalls("create")) > baseline ? true : undefined),
      120_000,
      20,
    );
    await daemons.kill(daemon);
    await core.deleteNamespacedService({ name: "interrupted", namespace: "default" });
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await assertNothingLeft("interrupted", created.metadata?.uid ?? "");
  });

  it("Compute failing for 40 s: the cluster stack backs off 5 s, 10 s, 20 s (±10 %) instead of re-running", async () => {
    const clusterUps = (): Promise<number> =>
      daemons.metric(daemon, 'dccm_stack_runs_total{stack="cluster",operation="up"}');
    const before = await clusterUps();
    // A new zone: the cluster stack must create an instance group, and the Service (whose backend
    // spans that zone) waits for it, nudging the cluster stack every second.
    env.gce.putInstance("node-b1", { zone: "us-central1-b" });
    for (const operation of ["create", "update", "delete", "read"] as const)
      env.gce.injectFault({
        kind: "instanceGroups",
        operation,
        status: 503,
        message: "Compute is down",
        count: 1_000_000,
      });
    await createNode(core, "node-b1", "us-central1-b");
    await core.createNamespacedService({ namespace: "default", body: lbService("waiting") });
    await eventually(
      "the first failing cluster run",
      async () => ((await clusterUps()) > before ? true : undefined),
      60_000,
      20,
    );
    const windowStart = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 40_000));
    const runs = (await clusterUps()) - before;
    const windowMs = Date.now() - windowStart;
    env.gce.state.clearFaults();
    // Runs start at 0 and then no sooner than 4.5, 13.5, 31.5, 67.5 s (5 s doubling, -10 % jitter):
    // at most 4 in a 40 s window, whatever nudges the stack; at least 2 (the first retry is due by 5.5 s).
    assert.ok(runs >= 2 && runs <= 4, `${runs} cluster runs in ${windowMs} ms`);
    assert.ok((await daemons.metric(daemon, 'dccm_reconcile_retries_total{kind="cluster"}')) >= runs - 1);
  });
});

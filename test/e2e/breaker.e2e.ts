/**
 * The orphan-destroy circuit breaker, end to end: Services gone while the daemon was
 * down (as after an etcd restore or a wiped namespace) are not destroyed at start-up beyond the
 * limit until an operator confirms, with an Event, a metric and nothing deleted meanwhile. And a
 * Service deleted while the daemon was down, whose stack is gone too, does not stay Terminating.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

describe("safety: the orphan-destroy circuit breaker", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  const lbNames: string[] = [];
  const config = parseConfig(E2E_CONFIG);

  const forwardingRules = (): string[] =>
    env.gce
      .listResources()
      .filter((resource) => resource.kind === "forwardingRules")
      .map((resource) => resource.name)
      .sort();

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("two Services gone while the daemon was down, limit 1: nothing destroyed, a Warning and dccm_destroys_held 2", async () => {
    daemon = new Daemon(daemonOptions(env, config, {}));
    await daemon.start(() => assert.fail("leadership lost"));
    for (const name of ["one", "two"]) {
      const created = await core.createNamespacedService({ namespace: "default", body: lbService(name) });
      lbNames.push(loadBalancerName(created.metadata?.uid ?? ""));
    }
    for (const name of ["one", "two"]) {
      await eventually(
        `${name}'s ingress`,
        async () =>
          (await core.readNamespacedServiceStatus({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]
            ?.ip,
      );
    }
    await daemon.stop();
    // Gone without a trace: no finalizer left to say they were being deleted.
    for (const name of ["one", "two"]) {
      await core.patchNamespacedService(
        { name, namespace: "default", body: { metadata: { finalizers: null } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      await core.deleteNamespacedService({ name, namespace: "default" });
    }

    daemon = new Daemon(daemonOptions(env, config, { maxOrphanDestroys: 1 }));
    await daemon.start(() => assert.fail("leadership lost"));
    await daemon.idle();
    assert.deepEqual(forwardingRules(), [...lbNames].sort());
    assert.equal(await counter(daemon.metrics.registry, "dccm_destroys_held", {}), 2);
    assert.equal(await counter(daemon.metrics.registry, "dccm_stack_runs_total", { operation: "destroy" }), 0);
    const events = await core.listEventForAllNamespaces({
      fieldSelector: "involvedObject.kind=Namespace,involvedObject.name=kube-system,reason=OrphanDestroysHeld",
    });
    assert.deepEqual(
      events.items.map((event) => [event.type, event.message]),
      [
        [
          "Warning",
          "2 of 2 Service stacks have no Service in this cluster; destroying none of them until an operator confirms with " +
            "--confirm-orphan-destroys 2 (an empty or wrong cluster looks the same as every Service deleted)",
        ],
      ],
    );
  });

  it("the operator confirms 2: both load balancers are destroyed and the hold is lifted", async () => {
    await daemon?.stop();
    daemon = new Daemon(daemonOptions(env, config, { maxOrphanDestroys: 1, confirmOrphanDestroys: 2 }));
    await daemon.start(() => assert.fail("leadership lost"));
    await daemon.idle();
    assert.deepEqual(forwardingRules(), []);
    assert.equal(await counter(daemon.metrics.registry, "dccm_destroys_held", {}), 0);
    // Two destroys ran; the stacks are gone, and their per-stack series of dccm_stack_runs_total with them.
    const durations = (await daemon.metrics.registry.getSingleMetric("dccm_up_duration_seconds")?.get())?.values ?? [];
    assert.equal(
      durations.find(
        (value) =>
          (value as { metricName?: string }).metricName === "dccm_up_duration_seconds_count" &&
          value.labels.operation === "destroy",
      )?.value,
      2,
    );
    const runs = (await daemon.metrics.registry.getSingleMetric("dccm_stack_runs_total")?.get())?.values ?? [];
    assert.deepEqual(
      runs.filter((value) => String(value.labels.stack).startsWith("service.")),
      [],
    );
  });

  it("a Service deleted while the daemon was down, its stack removed out of band: its finalizer goes, GCE is left alone", async () => {
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("three") });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    await eventually(
      "three's ingress",
      async () =>
        (await core.readNamespacedServiceStatus({ name: "three", namespace: "default" })).status?.loadBalancer
          ?.ingress?.[0]?.ip,
    );
    await daemon?.stop();
    const workspace = await LocalWorkspace.create({
      workDir: fs.mkdtempSync(path.join(os.tmpdir(), "dccm-breaker-oob-")),
      projectSettings: { name: `dccm-${config.clusterId}`, runtime: "nodejs", backend: { url: env.backendUrl } },
      envVars: env.pulumiEnv,
      pulumiCommand: env.pulumiCommand,
    });
    await workspace.removeStack("service.default.three", { force: true });
    await core.deleteNamespacedService({ name: "three", namespace: "default" });
    assert.notEqual(
      (await core.readNamespacedService({ name: "three", namespace: "default" })).metadata?.deletionTimestamp,
      undefined,
    );

    daemon = new Daemon(daemonOptions(env, config, {}));
    await daemon.start(() => assert.fail("leadership lost"));
    await eventually("three gone", async () =>
      (await core.listNamespacedService({ namespace: "default" })).items.some((svc) => svc.metadata?.name === "three")
        ? undefined
        : true,
    );
    // Without its stack nothing proves the resources are ours: they stay, for the leak check to report.
    assert.deepEqual(forwardingRules(), [lb]);
    assert.equal(await counter(daemon.metrics.registry, "dccm_stack_runs_total", { operation: "destroy" }), 0);
  });
});

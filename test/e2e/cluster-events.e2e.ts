/**
 * The cluster stack's drift and failures as `kubectl` shows them, on a real
 * kube-apiserver, the real engine and the GCE emulator: a route put back is told on its Node, an
 * instance group put back and a failed run on Lease kube-system/dccm, and /metrics counts them.
 * Events are listed with the field selectors `kubectl describe` uses (kind, name, namespace, uid).
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { instanceGroupName, parseConfig, routeName } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { E2E_CONFIG } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

interface Told {
  type: string;
  reason: string;
  message: string;
  count: number;
}

describe("dccm daemon: the cluster stack's drift and failures as Events", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let route = "";
  let leaseUid = "";
  const config = parseConfig(E2E_CONFIG);
  const group = instanceGroupName(config.clusterId);

  /** dccm's events about one object, oldest first. */
  const told = async (namespace: string, selector: string): Promise<Told[]> => {
    const events = await core.listNamespacedEvent({ namespace, fieldSelector: selector });
    return events.items
      .filter((event) => event.reportingComponent === "dccm")
      .sort((a, b) => (a.firstTimestamp?.getTime() ?? 0) - (b.firstTimestamp?.getTime() ?? 0))
      .map((event) => ({
        type: event.type ?? "",
        reason: event.reason ?? "",
        message: event.message ?? "",
        count: event.count ?? 0,
      }));
  };
  // `kubectl describe node` matches involvedObject.uid on the Node's name, as kubelet's events carry it.
  const nodeEvents = (): Promise<Told[]> =>
    told("default", "involvedObject.kind=Node,involvedObject.name=node-a1,involvedObject.uid=node-a1");
  const leaseEvents = (): Promise<Told[]> =>
    told(
      "kube-system",
      `involvedObject.kind=Lease,involvedObject.name=dccm,involvedObject.namespace=kube-system,involvedObject.uid=${leaseUid}`,
    );
  const exists = (kind: string, name: string): true | undefined =>
    env.gce.listResources().some((resource) => resource.kind === kind && resource.name === name) ? true : undefined;
  const refreshes = (): Promise<number> =>
    counter(daemon.metrics.registry, "dccm_stack_runs_total", { stack: "cluster", operation: "refresh" });
  /** Waits until a drift pass of the cluster stack that starts after now has ended. */
  const nextDriftPass = async (): Promise<void> => {
    const before = await refreshes();
    await eventually("the next drift pass of the cluster stack", async () =>
      (await refreshes()) > before ? true : undefined,
    );
    await daemon.idle();
  };

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    const node = await core.createNode({
      body: {
        metadata: { name: "node-a1", labels: { "topology.kubernetes.io/zone": "us-central1-a" } },
        spec: {
          providerID: "gce://dccm-test/us-central1-a/node-a1",
          podCIDR: "10.64.1.0/24",
          podCIDRs: ["10.64.1.0/24"],
        },
      },
    });
    route = routeName(config.clusterName, node.metadata?.uid ?? "");
    daemon = new Daemon(daemonOptions(env, config, { driftMs: 4000 }));
    await daemon.start(() => assert.fail("leadership lost"));
    const lease = await env.kube.kubeConfig
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: "dccm", namespace: "kube-system" });
    leaseUid = lease.metadata?.uid ?? "";
    await eventually("the cluster stack applied", () =>
      exists("routes", route) === true && exists("instanceGroups", group) === true ? true : undefined,
    );
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("a route deleted out of band is put back by the next drift pass, with one RouteRestored on its Node", async () => {
    assert.deepEqual(await nodeEvents(), []);
    env.gce.deleteOutOfBand("routes", route);
    await eventually("the route back", () => exists("routes", route));
    const restored: Told = {
      type: "Normal",
      reason: "RouteRestored",
      message: `Put back: Route ${route} (create)`,
      count: 1,
    };
    await eventually("RouteRestored on node-a1", async () => ((await nodeEvents()).length > 0 ? true : undefined));
    assert.deepEqual(await nodeEvents(), [restored]);
    // A drift pass that puts nothing back tells nothing.
    await nextDriftPass();
    assert.deepEqual(await nodeEvents(), [restored]);
    assert.deepEqual(await leaseEvents(), []);
  });

  it("an instance group deleted out of band is put back, with ClusterDriftCorrected on Lease kube-system/dccm", async () => {
    env.gce.deleteOutOfBand("instanceGroups", group);
    await eventually("the instance group back", () => exists("instanceGroups", group));
    await eventually("an event on the Lease", async () => ((await leaseEvents()).length > 0 ? true : undefined));
    assert.deepEqual(await leaseEvents(), [
      {
        type: "Normal",
        reason: "ClusterDriftCorrected",
        message: "Put back: InstanceGroup cluster:ig-us-central1-a (create)",
        count: 1,
      },
    ]);
    assert.equal((await nodeEvents()).length, 1);
  });

  it("/metrics counts the passes and what each put back", async () => {
    await daemon.idle();
    const metrics = await (await fetch(`http://127.0.0.1:${daemon.address?.port}/metrics`)).text();
    const lines = metrics
      .split("\n")
      .filter((line) => /^dccm_(cluster_put_back_total|drift_corrections_total)\{/.test(line));
    assert.deepEqual(lines, [
      'dccm_drift_corrections_total{kind="cluster"} 2',
      'dccm_cluster_put_back_total{resource="route"} 1',
      'dccm_cluster_put_back_total{resource="instanceGroup"} 1',
    ]);
  });

  it("a failed drift pass: one SyncClusterFailed on the Lease; its retry puts the route back", async () => {
    env.gce.injectFault({
      kind: "routes",
      name: route,
      operation: "create",
      status: 403,
      message: "Quota 'ROUTES' exceeded",
      count: 1,
    });
    env.gce.deleteOutOfBand("routes", route);
    const failed = await eventually("SyncClusterFailed on the Lease", async () =>
      (await leaseEvents()).find((event) => event.reason === "SyncClusterFailed"),
    );
    assert.match(failed.message, /^Error syncing cluster stack: .*Quota 'ROUTES' exceeded/);
    assert.deepEqual([failed.type, failed.count], ["Warning", 1]);
    // The retry is a drift pass too: the same message on the same Node bumps the Event's count.
    await eventually("the route back after the retry", () => exists("routes", route));
    await eventually("RouteRestored counted twice", async () =>
      (await nodeEvents())[0]?.count === 2 ? true : undefined,
    );
    assert.deepEqual(await nodeEvents(), [
      { type: "Normal", reason: "RouteRestored", message: `Put back: Route ${route} (create)`, count: 2 },
    ]);
    assert.deepEqual(
      (await leaseEvents()).map((event) => event.reason),
      ["ClusterDriftCorrected", "SyncClusterFailed"],
    );
    assert.equal(await counter(daemon.metrics.registry, "dccm_cluster_put_back_total", { resource: "route" }), 2);
  });
});

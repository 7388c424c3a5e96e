// NodeController against the in-memory Node API and Compute fakes (test/support/fakes/nodes.ts): the whole
// reconcile path (Node cache → queue → lookup → writes → events/metrics) without processes.

import * as assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";

import type { V1Node } from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";

import { NodeController, type RouteStatusSource } from "../../../../controllers/node/controller";
import type { RouteStatus } from "../../../../controllers/node/decide";
import { MemoryCompute, MemoryNodeApi, type MemoryNodeSource } from "../../../support/fakes/nodes";

const TAINT = { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" };

function tainted(name: string, extra: { providerID?: string; ready?: string } = {}): V1Node {
  return {
    metadata: { name },
    spec: { taints: [TAINT], ...(extra.providerID === undefined ? {} : { providerID: extra.providerID }) },
    status: {
      addresses: [{ type: "Hostname", address: name }],
      conditions: extra.ready === undefined ? [] : [{ type: "Ready", status: extra.ready }],
    },
  };
}

function plain(name: string, providerID: string | undefined, ready: string): V1Node {
  return {
    metadata: { name },
    spec: providerID === undefined ? {} : { providerID },
    status: { conditions: [{ type: "Ready", status: ready }] },
  };
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await delay(5);
  }
}

async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return (
    m?.values
      .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
      .reduce((a, v) => a + v.value, 0) ?? 0
  );
}

class Routes implements RouteStatusSource {
  readonly status = new Map<string, RouteStatus>();
  routeStatus(nodeName: string): RouteStatus {
    return this.status.get(nodeName) ?? "pending";
  }
}

describe("controllers/node/controller NodeController", () => {
  let api: MemoryNodeApi;
  let compute: MemoryCompute;
  let registry: Registry;
  let routes: Routes;
  let clock: number;
  let ctrl: NodeController | undefined;
  let source: MemoryNodeSource | undefined;

  beforeEach(() => {
    api = new MemoryNodeApi();
    compute = new MemoryCompute();
    compute.listDelayMs = 1;
    registry = new Registry();
    routes = new Routes();
    clock = Date.now();
  });

  afterEach(async () => {
    await ctrl?.stop();
    ctrl = undefined;
    source?.close();
    source = undefined;
  });

  async function start(extra: Partial<ConstructorParameters<typeof NodeController>[0]> = {}): Promise<NodeController> {
    ctrl = new NodeController({
      project: "p",
      region: "us-central1",
      compute,
      api,
      nodeSource: (source = api.source()),
      routes,
      logger: pino({ level: process.env["NODES_TEST_LOG"] ?? "silent" }),
      registry,
      baseBackoffMs: 20,
      lookupCacheMs: 0,
      identity: "test-replica",
      now: () => clock,
      ...extra,
    });
    await ctrl.start();
    return ctrl;
  }

  it("initializes a tainted Node found by name: providerID, labels, addresses, taint, event, metric", async () => {
    const inst = compute.add("p", "us-central1-b", "n1", "10.1.2.3");
    Object.assign(inst, { machineType: "n2-standard-4" });
    api.put(tainted("n1", { ready: "True" }));
    await start();
    await waitFor("taint removed", () => api.peek("n1")?.spec?.taints === undefined);
    const n = api.peek("n1");
    assert.equal(n?.spec?.providerID, "gce://p/us-central1-b/n1");
    assert.deepEqual(n?.metadata?.labels, {
      "topology.kubernetes.io/zone": "us-central1-b",
      "failure-domain.beta.kubernetes.io/zone": "us-central1-b",
      "topology.kubernetes.io/region": "us-central1",
      "failure-domain.beta.kubernetes.io/region": "us-central1",
      "node.kubernetes.io/instance-type": "n2-standard-4",
      "beta.kubernetes.io/instance-type": "n2-standard-4",
    });
    assert.deepEqual(n?.status?.addresses, [
      { type: "InternalIP", address: "10.1.2.3" },
      { type: "Hostname", address: "n1" },
    ]);
    await waitFor("Synced event", () => api.events.some((e) => e.reason === "Synced"));
    const ev = api.events.find((e) => e.reason === "Synced");
    assert.equal(ev?.involvedObject.kind, "Node");
    assert.equal(ev?.involvedObject.name, "n1");
    assert.equal(ev?.involvedObject.uid, "n1", "kubelet's convention: the Node's name");
    assert.equal(ev?.involvedObject.namespace, undefined);
    assert.equal(ev?.reportingComponent, "dccm");
    assert.equal(ev?.reportingInstance, "test-replica");
    assert.equal(ev?.source?.component, "dccm-node-controller");
    assert.equal(ev?.metadata.namespace, "default");
    assert.equal(await metricValue(registry, "dccm_node_initializations_total", { result: "ok" }), 1);
    assert.equal(compute.count("get"), 0, "found through the aggregated list");
  });

  it("uses the providerID the kubelet set", async () => {
    compute.add("p", "us-central1-c", "n1", "10.9.9.9");
    compute.add("p", "us-central1-a", "n1", "10.0.0.1");
    api.put(tainted("n1", { providerID: "gce://p/us-central1-c/n1" }));
    await start();
    await waitFor("initialized", () => api.peek("n1")?.spec?.taints === undefined);
    assert.equal(api.peek("n1")?.metadata?.labels?.["topology.kubernetes.io/zone"], "us-central1-c");
    assert.equal(api.peek("n1")?.status?.addresses?.[0]?.address, "10.9.9.9");
  });

  it("retries the update on conflict", async () => {
    compute.add("p", "us-central1-a", "n1");
    api.put(tainted("n1"));
    api.conflictsToInject = 2;
    await start();
    await waitFor("initialized", () => api.peek("n1")?.spec?.taints === undefined);
    assert.equal(api.calls.get("patchNode"), 3);
    assert.equal(api.calls.get("getNode"), 2, "fresh read after each conflict");
  });

  it("keeps the taint and retries while the instance cannot be found", async () => {
    api.put(tainted("n1"));
    await start();
    await waitFor("failed attempt", () => compute.count("aggregatedList") >= 2);
    assert.deepEqual(api.peek("n1")?.spec?.taints, [TAINT]);
    compute.add("p", "us-central1-a", "n1");
    await waitFor("initialized after retry", () => api.peek("n1")?.spec?.taints === undefined);
    assert.ok((await metricValue(registry, "dccm_node_initializations_total", { result: "error" })) >= 1);
  });

  it("an ambiguous name is never guessed", async () => {
    compute.add("p", "us-central1-a", "n1");
    compute.add("p", "us-central1-b", "n1");
    api.put(tainted("n1"));
    await start();
    await waitFor("attempt", () => compute.count("aggregatedList") >= 2);
    assert.deepEqual(api.peek("n1")?.spec?.taints, [TAINT]);
    assert.equal(api.peek("n1")?.spec?.providerID, undefined);
  });

  it("deletes a NotReady Node whose instance is gone (404 in its zone) with a DeletingNode event", async () => {
    api.put(plain("n1", "gce://p/us-central1-a/n1", "False"));
    await start();
    await waitFor("deleted", () => api.peek("n1") === undefined);
    assert.ok(api.events.some((e) => e.reason === "DeletingNode" && e.involvedObject.name === "n1"));
    assert.equal(await metricValue(registry, "dccm_node_deletions_total"), 1);
  });

  it("cloud.google.com/gke-unmanaged-node=true: neither initialized nor deleted, no Compute lookup, no write, no event", async () => {
    const unmanaged = { "cloud.google.com/gke-unmanaged-node": "true" };
    const onprem = tainted("onprem", { ready: "True" });
    const gone = plain("gone", "gce://p/us-central1-a/gone", "False");
    api.put({ ...onprem, metadata: { ...onprem.metadata, labels: unmanaged } });
    api.put({ ...gone, metadata: { ...gone.metadata, labels: unmanaged } });
    await start();
    await ctrl?.idle();
    assert.deepEqual(
      api
        .list()
        .map((n) => [n.metadata?.name, n.spec?.taints?.map((t) => t.key)])
        .sort(),
      [
        ["gone", undefined],
        ["onprem", [TAINT.key]],
      ],
    );
    assert.deepEqual([...api.calls.keys()].sort(), []);
    assert.deepEqual(compute.calls, []);
    assert.deepEqual(api.events, []);
  });

  it("keeps a NotReady Node whose instance lives in a zone outside the region's list", async () => {
    compute.add("p", "us-east1-b", "n1");
    api.put(plain("n1", "gce://p/us-east1-b/n1", "False"));
    await start();
    await waitFor("checked", () => compute.count("get") >= 1);
    await ctrl?.idle();
    assert.ok(api.peek("n1") !== undefined);
    assert.equal(await metricValue(registry, "dccm_node_deletions_total"), 0);
  });

  it("keeps NotReady Nodes on permission errors, on timeouts, and without a providerID", async () => {
    const denied = Object.assign(new Error("compute instances.get: HTTP 403"), { status: 403 });
    const timeout = new Error("compute instances.get: no response: timed out");
    compute.failures.set("get", [denied, timeout]);
    api.put(plain("n1", "gce://p/us-central1-a/n1", "False"));
    api.put(plain("n2", "gce://p/us-central1-a/n2", "Unknown"));
    api.put(plain("n3", undefined, "False"));
    await start();
    await waitFor("both checked", () => compute.count("get") >= 2);
    await ctrl?.idle();
    assert.deepEqual(
      api
        .list()
        .map((n) => n.metadata?.name)
        .sort(),
      ["n1", "n2", "n3"],
    );
  });

  it("keeps a Ready Node even if its instance is gone", async () => {
    api.put(plain("n1", "gce://p/us-central1-a/n1", "True"));
    await start();
    await delay(30);
    await ctrl?.idle();
    assert.ok(api.peek("n1") !== undefined);
    assert.equal(compute.count("get"), 1, "address refresh looked it up once");
  });

  it("does not delete a Node that changed since the decision (precondition)", async () => {
    api.put(plain("n1", "gce://p/us-central1-a/n1", "False"));
    const realDelete = api.deleteNode.bind(api);
    let first = true;
    api.deleteNode = async (name, pre) => {
      if (first) {
        first = false;
        // The kubelet comes back between our decision and our delete.
        api.put(plain("n1", "gce://p/us-central1-a/n1", "True"));
      }
      return realDelete(name, pre);
    };
    await start({ lifecycleCheckMs: 20 });
    await waitFor("delete attempted", () => !first);
    await delay(50);
    await ctrl?.idle();
    assert.ok(api.peek("n1") !== undefined);
  });

  it("sets NetworkUnavailable from the route state and warns on failure", async () => {
    compute.add("p", "us-central1-a", "n1");
    compute.add("p", "us-central1-a", "n2");
    api.put(plain("n1", "gce://p/us-central1-a/n1", "True"));
    api.put(plain("n2", "gce://p/us-central1-a/n2", "True"));
    await start();
    await delay(20);
    await ctrl?.idle();
    assert.equal(api.calls.get("setNodeCondition"), undefined, "pending routes write nothing");
    routes.status.set("n1", "created");
    routes.status.set("n2", { failed: "QUOTA_EXCEEDED: routes" });
    ctrl?.onRoutesChanged();
    const cond = (n: string): { status?: string; reason?: string } | undefined =>
      api.peek(n)?.status?.conditions?.find((c) => c.type === "NetworkUnavailable");
    await waitFor("conditions", () => cond("n1") !== undefined && cond("n2") !== undefined);
    assert.equal(cond("n1")?.status, "False");
    assert.equal(cond("n1")?.reason, "RouteCreated");
    assert.equal(cond("n2")?.status, "True");
    assert.equal(cond("n2")?.reason, "NoRouteCreated");
    await waitFor("warning", () => api.events.some((e) => e.reason === "FailedToCreateRoute"));
    const warning = api.events.find((e) => e.reason === "FailedToCreateRoute");
    assert.equal(warning?.type, "Warning");
    assert.equal(warning?.involvedObject.name, "n2");
    assert.match(warning?.message ?? "", /QUOTA_EXCEEDED/);
    // Unchanged route state: no more writes.
    const writes = api.calls.get("setNodeCondition");
    ctrl?.onRoutesChanged();
    await delay(20);
    await ctrl?.idle();
    assert.equal(api.calls.get("setNodeCondition"), writes);
  });

  it("refreshes addresses once the period has passed, from one shared list", async () => {
    compute.add("p", "us-central1-a", "n1", "10.0.0.1");
    compute.add("p", "us-central1-a", "n2", "10.0.0.2");
    // Ready: a Node that is not (no Ready condition included) also gets its lifecycle check, an instances.get.
    api.put(tainted("n1", { ready: "True" }));
    api.put(tainted("n2", { ready: "True" }));
    await start({ addressRefreshMs: 60_000, lookupCacheMs: 1000 });
    await waitFor("initialized", () => api.list().every((n) => n.spec?.taints === undefined));
    for (const inst of compute.instances) {
      Object.assign(inst, {
        networkInterfaces: [
          { networkIP: inst.name === "n1" ? "10.0.0.11" : "10.0.0.22", accessConfigs: [], ipv6AccessConfigs: [] },
        ],
      });
    }
    ctrl?.onRoutesChanged();
    await delay(20);
    await ctrl?.idle();
    assert.equal(api.peek("n1")?.status?.addresses?.[0]?.address, "10.0.0.1", "not due yet");
    const lists = compute.count("aggregatedList");
    clock += 61_000;
    ctrl?.onRoutesChanged();
    await waitFor(
      "refreshed",
      () =>
        api.peek("n1")?.status?.addresses?.[0]?.address === "10.0.0.11" &&
        api.peek("n2")?.status?.addresses?.[0]?.address === "10.0.0.22",
    );
    assert.equal(compute.count("aggregatedList"), lists + 1, "one list for the wave");
    assert.equal(compute.count("get"), 0);
  });

  it("can be stopped and started again (leadership regained)", async () => {
    const c = await start();
    await c.stop();
    compute.add("p", "us-central1-a", "n1");
    api.put(tainted("n1"));
    await c.start();
    await waitFor("initialized", () => api.peek("n1")?.spec?.taints === undefined);
  });

  it("stop() only unsubscribes from the shared Node source: its other readers keep hearing, the stopped controller does not", async () => {
    const c = await start();
    const heard: string[] = [];
    source?.subscribeNodes((event) => heard.push(`${event.kind} ${event.node.name}`));
    await c.stop();
    compute.add("p", "us-central1-a", "n1");
    api.put(tainted("n1"));
    await waitFor("the other reader heard n1", () => heard.length === 1);
    assert.deepEqual(heard, ["added n1"]);
    await delay(20);
    assert.deepEqual(api.peek("n1")?.spec?.taints, [TAINT], "nobody initialized it");
    assert.equal(compute.calls.length, 0);
  });

  it("shutdown taint: a stopped VM's NotReady Node is tainted and kept, the taint goes when the VM runs", async () => {
    const inst = compute.add("p", "us-central1-a", "n1");
    compute.instances[0] = { ...inst, status: "TERMINATED" };
    api.put(plain("n1", "gce://p/us-central1-a/n1", "Unknown"));
    await start({ lifecycleCheckMs: 40, now: () => Date.now() });
    const shutdown = (): boolean =>
      (api.peek("n1")?.spec?.taints ?? []).some(
        (t) => t.key === "node.cloudprovider.kubernetes.io/shutdown" && t.effect === "NoSchedule",
      );
    await waitFor("tainted", shutdown);
    assert.deepEqual(
      api.events.filter((e) => e.reason === "ShutdownTaintAdded").map((e) => e.message),
      ["Added taint node.cloudprovider.kubernetes.io/shutdown:NoSchedule: instance is TERMINATED"],
    );
    await waitFor("several more lifecycle checks", () => compute.count("aggregatedList") + compute.count("get") > 5);
    assert.ok(api.peek("n1") !== undefined, "never deleted: its VM exists");
    assert.equal(await metricValue(registry, "dccm_node_deletions_total"), 0);
    compute.instances[0] = { ...inst, status: "RUNNING" };
    await waitFor("untainted", () => !shutdown());
    assert.deepEqual(
      [
        await metricValue(registry, "dccm_node_shutdown_taints_total", { action: "added" }),
        await metricValue(registry, "dccm_node_shutdown_taints_total", { action: "removed" }),
      ],
      [1, 1],
    );
  });

  it("podCIDRStack IPv4: a Node without pod CIDR gets its VM's alias range and NetworkUnavailable=False; without a range, a Warning", async () => {
    const withRange = compute.add("p", "us-central1-a", "n1");
    compute.instances[0] = {
      ...withRange,
      networkInterfaces: [
        {
          name: "nic0",
          networkIP: "10.0.0.1",
          accessConfigs: [],
          ipv6AccessConfigs: [],
          aliasIpRanges: [{ ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" }],
        },
      ],
    };
    compute.add("p", "us-central1-a", "n2", "10.0.0.2");
    api.put(plain("n1", "gce://p/us-central1-a/n1", "True"));
    api.put(plain("n2", "gce://p/us-central1-a/n2", "True"));
    await start({ podCIDRStack: "IPv4" });
    await waitFor("pod CIDR", () => api.peek("n1")?.spec?.podCIDR !== undefined);
    assert.deepEqual([api.peek("n1")?.spec?.podCIDR, api.peek("n1")?.spec?.podCIDRs], ["10.4.1.0/24", ["10.4.1.0/24"]]);
    await waitFor(
      "conditions",
      () =>
        api.peek("n2")?.status?.conditions?.some((c) => c.type === "NetworkUnavailable") === true &&
        api.peek("n1")?.status?.conditions?.some((c) => c.type === "NetworkUnavailable") === true,
    );
    const cond = (name: string) => api.peek(name)?.status?.conditions?.find((c) => c.type === "NetworkUnavailable");
    assert.deepEqual([cond("n1")?.status, cond("n1")?.reason], ["False", "RouteCreated"]);
    assert.deepEqual([cond("n2")?.status, cond("n2")?.reason], ["True", "NoPodCIDR"]);
    assert.deepEqual(
      api.events.filter((e) => e.reason === "CIDRNotAvailable").map((e) => [e.type, e.involvedObject.name, e.message]),
      [
        [
          "Warning",
          "n2",
          "Node n2 has no pod CIDR and none can be read: instance p/us-central1-a/n2 has no alias IP range on nic0 (podCIDRStack IPv4)",
        ],
      ],
    );
    assert.equal(await metricValue(registry, "dccm_node_pod_cidr_assignments_total", { result: "assigned" }), 1);
  });

  it("aggregates repeated events into one with a count", async () => {
    api.put(plain("n1", "gce://p/us-central1-a/n1", "True"));
    compute.add("p", "us-central1-a", "n1");
    routes.status.set("n1", { failed: "boom" });
    await start();
    await waitFor("warning", () => api.events.some((e) => e.reason === "FailedToCreateRoute"));
    // Flip created → failed again with the same message: the Warning repeats.
    routes.status.set("n1", "created");
    ctrl?.onRoutesChanged();
    await waitFor(
      "created",
      () => api.peek("n1")?.status?.conditions?.some((c) => c.reason === "RouteCreated") === true,
    );
    routes.status.set("n1", { failed: "boom" });
    ctrl?.onRoutesChanged();
    await waitFor("count 2", () => api.events.find((e) => e.reason === "FailedToCreateRoute")?.count === 2);
    assert.equal(api.events.filter((e) => e.reason === "FailedToCreateRoute").length, 1);
  });
});

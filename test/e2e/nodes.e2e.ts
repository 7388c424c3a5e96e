// Node controller end to end: a real etcd + kube-apiserver (test/support/e2e/kube.ts) and the GCE
// emulator's Compute REST face (emulator/gce). No kubelet runs, so the tests create Node
// objects themselves (taint, NotReady condition through the status subresource). The controller
// runs as a user bound to exactly the ClusterRole documented in controllers/node/README.md.

import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { setTimeout as delay } from "node:timers/promises";

import {
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1ClusterRole,
  type V1Node,
} from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";
import * as YAML from "yaml";

import { ComputeClient } from "../../gce";
import { NodeController, type NodeControllerOptions, type RouteStatusSource } from "../../controllers/node/controller";
import type { RouteStatus } from "../../controllers/node/decide";
import { type GceEmulator, startGceEmulator } from "../../emulator/gce";
import { type KubeEnv, makeUserKubeconfig, startKube } from "../support/e2e/kube";
import { repoRoot } from "../support/tooling/testenv-paths";

const TAINT_KEY = "node.cloudprovider.kubernetes.io/uninitialized";
const MERGE = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const WAIT_MS = 30_000;
const CONTROLLER_USER = "dccm-node-controller";

/** Without the uninitialized taint (the apiserver's TaintNodesByCondition adds its own taints). */
function initialized(node: V1Node | undefined): boolean {
  return node !== undefined && !(node.spec?.taints ?? []).some((t) => t.key === TAINT_KEY);
}

/** Generated model classes → plain objects, for deepEqual. */
function plain<T>(v: T): unknown {
  return JSON.parse(JSON.stringify(v)) as unknown;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) {
        return v;
      }
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: last });
    }
    await delay(100);
  }
}

class Routes implements RouteStatusSource {
  readonly status = new Map<string, RouteStatus>();
  routeStatus(nodeName: string): RouteStatus {
    return this.status.get(nodeName) ?? "pending";
  }
}

/** The ClusterRole YAML of controllers/node/README.md: the e2e tests prove the documented RBAC suffices. */
function documentedClusterRole(): V1ClusterRole {
  const readme = fs.readFileSync(path.join(repoRoot(), "controllers", "node", "README.md"), "utf8");
  const block = /```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block !== undefined, "controllers/node/README.md has a yaml block");
  const docs = YAML.parseAllDocuments(block).map((d) => d.toJS() as { kind?: string });
  const role = docs.find((d) => d.kind === "ClusterRole");
  assert.ok(role !== undefined, "the yaml block has a ClusterRole");
  return role;
}

describe("node controller (kube-apiserver + GCE emulator)", function () {
  let env: KubeEnv | undefined;
  let gce: GceEmulator | undefined;
  let controllerKube: KubeConfig | undefined;
  let core: CoreV1Api;
  let ctrl: NodeController | undefined;
  let registry: Registry;
  let routes: Routes;

  before(async function () {
    this.timeout(180_000);
    [env, gce] = await Promise.all([startKube(), startGceEmulator()]);
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    const rbac = env.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    const role = documentedClusterRole();
    await rbac.createClusterRole({ body: role });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: "e2e-node-controller" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata?.name ?? "" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: CONTROLLER_USER }],
      },
    });
    controllerKube = (await makeUserKubeconfig(env, CONTROLLER_USER)).kubeConfig;
  });

  after(async function () {
    this.timeout(60_000);
    await ctrl?.stop();
    await Promise.all([env?.stop(), gce?.stop()]);
  });

  beforeEach(() => {
    registry = new Registry();
    routes = new Routes();
    gce?.state.clearFaults();
  });

  afterEach(async function () {
    this.timeout(30_000);
    await ctrl?.stop();
    ctrl = undefined;
    const nodes = await core.listNode();
    await Promise.all(nodes.items.map((n) => core.deleteNode({ name: n.metadata?.name ?? "" })));
  });

  function emulator(): GceEmulator {
    if (gce === undefined) {
      throw new Error("startGceEmulator() did not complete in before()");
    }
    return gce;
  }

  function controllerKubeConfig(): KubeConfig {
    if (controllerKube === undefined) {
      throw new Error("makeUserKubeconfig() did not complete in before()");
    }
    return controllerKube;
  }

  async function startController(extra: Partial<NodeControllerOptions> = {}): Promise<NodeController> {
    const g = emulator();
    ctrl = new NodeController({
      project: g.project,
      region: g.region,
      compute: new ComputeClient({ endpoint: g.computeEndpoint, registry, retry: { attempts: 2, baseDelayMs: 50 } }),
      kubeConfig: controllerKubeConfig(),
      routes,
      logger: pino({ level: process.env["NODES_E2E_LOG"] ?? "silent" }),
      registry,
      lifecycleCheckMs: 300,
      lookupCacheMs: 200,
      baseBackoffMs: 100,
      maxBackoffMs: 1000,
      identity: "e2e",
      ...extra,
    });
    await ctrl.start();
    return ctrl;
  }

  /** Creates a Node as a kubelet with --cloud-provider=external would. */
  async function createNode(
    name: string,
    opts: { providerID?: string; ready?: "True" | "False" | "Unknown"; tainted?: boolean } = {},
  ): Promise<void> {
    await core.createNode({
      body: {
        metadata: { name, labels: { "kubernetes.io/hostname": name } },
        spec: {
          ...(opts.providerID === undefined ? {} : { providerID: opts.providerID }),
          ...(opts.tainted === false ? {} : { taints: [{ key: TAINT_KEY, value: "true", effect: "NoSchedule" }] }),
        },
      },
    });
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    await core.patchNodeStatus(
      {
        name,
        body: {
          status: {
            addresses: [{ type: "Hostname", address: name }],
            conditions: [
              {
                type: "Ready",
                status: opts.ready ?? "False",
                reason: "KubeletNotReady",
                message: "no kubelet in e2e",
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              },
            ],
          },
        },
      },
      MERGE,
    );
  }

  async function readNode(name: string): Promise<V1Node | undefined> {
    try {
      return await core.readNode({ name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) {
        return undefined;
      }
      throw err;
    }
  }

  async function eventsFor(name: string): Promise<CoreV1Event[]> {
    const list = await core.listNamespacedEvent({ namespace: "default", fieldSelector: `involvedObject.name=${name}` });
    return list.items;
  }

  async function computeCalls(call: string): Promise<number> {
    const m = await registry.getSingleMetric("dccm_compute_calls_total")?.get();
    return m?.values.filter((v) => v.labels["call"] === call).reduce((a, v) => a + v.value, 0) ?? 0;
  }

  it("initializes a tainted Node: providerID, labels, addresses, taint removed, Synced event", async function () {
    this.timeout(60_000);
    const g = emulator();
    g.putInstance("e2e-init-1", {
      zone: "us-central1-b",
      machineType: "n2-standard-4",
      networkInterfaces: [
        { networkIP: "10.128.0.21", ipv6Address: "fd20:1:2:3::21", accessConfigs: [{ natIP: "34.68.10.21" }] },
      ],
    });
    g.putInstance("e2e-init-2", { zone: "us-central1-c" });
    await createNode("e2e-init-1");
    await createNode("e2e-init-2", { providerID: "gce://dccm-test/us-central1-c/e2e-init-2" });
    await startController();

    const n = await waitFor("e2e-init-1 initialized", async () => {
      const node = await readNode("e2e-init-1");
      return initialized(node) && node?.spec?.providerID !== undefined ? node : undefined;
    });
    assert.equal(n.spec?.providerID, "gce://dccm-test/us-central1-b/e2e-init-1");
    const labels = n.metadata?.labels ?? {};
    assert.equal(labels["topology.kubernetes.io/zone"], "us-central1-b");
    assert.equal(labels["failure-domain.beta.kubernetes.io/zone"], "us-central1-b");
    assert.equal(labels["topology.kubernetes.io/region"], "us-central1");
    assert.equal(labels["failure-domain.beta.kubernetes.io/region"], "us-central1");
    assert.equal(labels["node.kubernetes.io/instance-type"], "n2-standard-4");
    assert.equal(labels["beta.kubernetes.io/instance-type"], "n2-standard-4");
    assert.equal(labels["kubernetes.io/hostname"], "e2e-init-1", "kubelet labels kept");
    assert.deepEqual(plain(n.status?.addresses), [
      { type: "InternalIP", address: "10.128.0.21" },
      { type: "ExternalIP", address: "34.68.10.21" },
      { type: "InternalIP", address: "fd20:1:2:3::21" },
      { type: "Hostname", address: "e2e-init-1" },
    ]);
    assert.equal(
      n.status?.conditions?.find((c) => c.type === "Ready")?.status,
      "False",
      "kubelet conditions untouched",
    );

    const n2 = await waitFor("e2e-init-2 initialized", async () => {
      const node = await readNode("e2e-init-2");
      return initialized(node) ? node : undefined;
    });
    assert.equal(n2.metadata?.labels?.["topology.kubernetes.io/zone"], "us-central1-c");
    assert.equal(n2.status?.addresses?.[0]?.type, "InternalIP");

    const synced = await waitFor("Synced event", async () =>
      (await eventsFor("e2e-init-1")).find((e) => e.reason === "Synced"),
    );
    assert.equal(synced.involvedObject.kind, "Node");
    assert.equal(synced.source?.component, "dccm-node-controller");
    assert.equal(synced.reportingComponent, "dccm");
  });

  it("deletes a NotReady Node whose instance was deleted in the emulator", async function () {
    this.timeout(60_000);
    const g = emulator();
    g.putInstance("e2e-gone", { zone: "us-central1-a" });
    await createNode("e2e-gone", { ready: "Unknown" });
    await startController();
    await waitFor("initialized", async () => (initialized(await readNode("e2e-gone")) ? true : undefined));
    assert.ok(await readNode("e2e-gone"), "kept while its instance exists");

    g.deleteOutOfBand("instances", "e2e-gone");
    await waitFor("node deleted", async () => ((await readNode("e2e-gone")) === undefined ? true : undefined));
    const ev = await waitFor("DeletingNode event", async () =>
      (await eventsFor("e2e-gone")).find((e) => e.reason === "DeletingNode"),
    );
    assert.match(ev.message ?? "", /gce:\/\/dccm-test\/us-central1-a\/e2e-gone no longer exists/);
    const deletions = await registry.getSingleMetric("dccm_node_deletions_total")?.get();
    assert.equal(deletions?.values[0]?.value, 1);
  });

  it("keeps a NotReady Node whose instance lives in another zone, and one found nowhere by name", async function () {
    this.timeout(60_000);
    const g = emulator();
    // Zones the region listing does not name: the stock CCM would delete these Nodes.
    g.putInstance("e2e-elsewhere", { zone: "us-central1-f" });
    g.putInstance("e2e-east", { zone: "us-east1-b" });
    await createNode("e2e-elsewhere", { providerID: "gce://dccm-test/us-central1-f/e2e-elsewhere", tainted: false });
    await createNode("e2e-east", { providerID: "gce://dccm-test/us-east1-b/e2e-east" });
    // No providerID, and no instance of that name in the region: nothing proves it is gone.
    await createNode("e2e-byname", { tainted: false });
    await startController();
    // Several lifecycle periods, each asking instances.get in the providerID's own zone.
    await waitFor("lifecycle checks", async () => ((await computeCalls("instances.get")) >= 6 ? true : undefined));
    for (const name of ["e2e-elsewhere", "e2e-east", "e2e-byname"]) {
      assert.ok(await readNode(name), `${name} kept`);
    }
    const east = await waitFor("e2e-east initialized", async () => {
      const node = await readNode("e2e-east");
      return initialized(node) ? node : undefined;
    });
    assert.equal(east.metadata?.labels?.["topology.kubernetes.io/region"], "us-east1");
    assert.equal(
      await registry
        .getSingleMetric("dccm_node_deletions_total")
        ?.get()
        .then((m) => m.values[0]?.value ?? 0),
      0,
    );
  });

  it("never deletes on a permission error; deletes once Compute answers 404", async function () {
    this.timeout(60_000);
    const g = emulator();
    await createNode("e2e-denied", { providerID: "gce://dccm-test/us-central1-a/e2e-denied", tainted: false });
    g.state.injectFault({
      kind: "instances",
      name: "e2e-denied",
      operation: "get",
      status: 403,
      count: 1000,
      message:
        "Required 'compute.instances.get' permission for 'projects/dccm-test/zones/us-central1-a/instances/e2e-denied'",
    });
    await startController();
    await waitFor("denied lookups", async () => {
      const m = await registry.getSingleMetric("dccm_compute_calls_total")?.get();
      const denied =
        m?.values.find((v) => v.labels["call"] === "instances.get" && v.labels["code"] === "403")?.value ?? 0;
      return denied >= 3 ? true : undefined;
    });
    assert.ok(await readNode("e2e-denied"), "kept while Compute says 403");
    g.state.clearFaults();
    await waitFor("deleted after a real 404", async () =>
      (await readNode("e2e-denied")) === undefined ? true : undefined,
    );
  });

  it("sets NetworkUnavailable from route state and warns FailedToCreateRoute", async function () {
    this.timeout(60_000);
    const g = emulator();
    g.putInstance("e2e-route-ok", { zone: "us-central1-a" });
    g.putInstance("e2e-route-bad", { zone: "us-central1-a" });
    await createNode("e2e-route-ok", { ready: "True" });
    await createNode("e2e-route-bad", { ready: "True" });
    const c = await startController();
    routes.status.set("e2e-route-ok", "created");
    routes.status.set("e2e-route-bad", { failed: "googleapi: Error 403: QUOTA_EXCEEDED routes" });
    c.onRoutesChanged();
    const cond = async (name: string): Promise<{ status: string; reason?: string } | undefined> =>
      (await readNode(name))?.status?.conditions?.find((x) => x.type === "NetworkUnavailable");
    const ok = await waitFor("RouteCreated", () => cond("e2e-route-ok"));
    assert.equal(ok.status, "False");
    assert.equal(ok.reason, "RouteCreated");
    const bad = await waitFor("NoRouteCreated", () => cond("e2e-route-bad"));
    assert.equal(bad.status, "True");
    assert.equal(bad.reason, "NoRouteCreated");
    const ready = (await readNode("e2e-route-ok"))?.status?.conditions?.find((x) => x.type === "Ready");
    assert.equal(ready?.status, "True", "strategic merge kept the kubelet's conditions");
    const warning = await waitFor("FailedToCreateRoute", async () =>
      (await eventsFor("e2e-route-bad")).find((e) => e.reason === "FailedToCreateRoute"),
    );
    assert.equal(warning.type, "Warning");
    assert.match(warning.message ?? "", /QUOTA_EXCEEDED/);
  });

  it("refreshes addresses on its period", async function () {
    this.timeout(60_000);
    const g = emulator();
    g.putInstance("e2e-refresh", { zone: "us-central1-a", networkInterfaces: [{ networkIP: "10.128.0.50" }] });
    await createNode("e2e-refresh", { ready: "True" });
    await startController({ addressRefreshMs: 1000 });
    await waitFor("initialized", async () =>
      (await readNode("e2e-refresh"))?.status?.addresses?.[0]?.address === "10.128.0.50" ? true : undefined,
    );
    g.putInstance("e2e-refresh", {
      zone: "us-central1-a",
      networkInterfaces: [{ networkIP: "10.128.0.51", accessConfigs: [{ natIP: "34.1.1.51" }] }],
    });
    const n = await waitFor("refreshed", async () => {
      const node = await readNode("e2e-refresh");
      return node?.status?.addresses?.[0]?.address === "10.128.0.51" ? node : undefined;
    });
    assert.deepEqual(plain(n.status?.addresses), [
      { type: "InternalIP", address: "10.128.0.51" },
      { type: "ExternalIP", address: "34.1.1.51" },
      { type: "Hostname", address: "e2e-refresh" },
    ]);
  });
});

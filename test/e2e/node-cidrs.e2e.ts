// Node controller end to end, VPC-native and stopped VMs: a real etcd + kube-apiserver and the GCE
// emulator (a subnetwork with secondary ranges, instances with alias IP ranges). No kubelet runs:
// the tests create Node objects as a kubelet with --cloud-provider=external would.
//
//   podCIDRSource cloud   new Nodes get spec.podCIDRs from their VM's alias range (IPv4, dual-stack),
//                         NetworkUnavailable=False; a VM without range → Warning, Node stays unavailable
//   route-based (default) spec.podCIDRs never written by dccm
//   shutdown taint        VM stopped → taint; started → taint gone; the Node is never deleted

import * as assert from "node:assert/strict";

import { CoreV1Api, type CoreV1Event, PatchStrategy, setHeaderOptions, type V1Node } from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";

import { ComputeClient } from "../../gce";
import { NodeController, type NodeControllerOptions } from "../../controllers/node/controller";
import { type GceEmulator, startGceEmulator } from "../../emulator/gce";
import { type KubeEnv, startKube } from "../support/e2e/kube";
import { eventually } from "../support/wait";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown";
const WAIT_MS = 30_000;
const ZONE = "us-central1-a";

describe("node controller: pod CIDRs from alias IP ranges, the shutdown taint (kube-apiserver + GCE emulator)", function () {
  let env: KubeEnv | undefined;
  let gce: GceEmulator | undefined;
  let core: CoreV1Api;
  let ctrl: NodeController | undefined;
  let registry: Registry;

  before(async function () {
    this.timeout(180_000);
    [env, gce] = await Promise.all([
      startKube(),
      startGceEmulator({
        zones: [ZONE],
        networks: [
          {
            name: "vpc-native",
            autoCreateSubnetworks: false,
            subnetworks: [
              {
                name: "nodes",
                ipCidrRange: "10.10.0.0/20",
                stackType: "IPV4_IPV6",
                ipv6AccessType: "INTERNAL",
                ipv6CidrRange: "fd20:0:0:1::/64",
                secondaryIpRanges: [{ rangeName: "pods", ipCidrRange: "10.4.0.0/14" }],
              },
            ],
          },
        ],
        instanceNetwork: "vpc-native",
      }),
    ]);
    core = env.kubeConfig.makeApiClient(CoreV1Api);
  });

  after(async function () {
    this.timeout(60_000);
    await ctrl?.stop();
    await Promise.all([env?.stop(), gce?.stop()]);
  });

  beforeEach(() => {
    registry = new Registry();
  });

  afterEach(async function () {
    this.timeout(30_000);
    await ctrl?.stop();
    ctrl = undefined;
    const nodes = await core.listNode();
    await Promise.all(nodes.items.map((n) => core.deleteNode({ name: n.metadata?.name ?? "" })));
  });

  function emulator(): GceEmulator {
    if (gce === undefined || env === undefined) throw new Error("before() did not complete");
    return gce;
  }

  async function startController(extra: Partial<NodeControllerOptions> = {}): Promise<NodeController> {
    const g = emulator();
    ctrl = new NodeController({
      project: g.project,
      region: g.region,
      zones: [ZONE],
      compute: new ComputeClient({ endpoint: g.computeEndpoint, registry, retry: { attempts: 2, baseDelayMs: 50 } }),
      kubeConfig: (env as KubeEnv).kubeConfig,
      logger: pino({ level: process.env["NODES_E2E_LOG"] ?? "silent" }),
      registry,
      lifecycleCheckMs: 1000,
      lookupCacheMs: 200,
      baseBackoffMs: 100,
      maxBackoffMs: 1000,
      identity: "e2e",
      ...extra,
    });
    await ctrl.start();
    return ctrl;
  }

  async function createNode(name: string, ready: "True" | "False" | "Unknown"): Promise<void> {
    await core.createNode({
      body: {
        metadata: { name, labels: { "kubernetes.io/hostname": name } },
        spec: {
          providerID: `gce://dccm-test/${ZONE}/${name}`,
          taints: [{ key: UNINITIALIZED, value: "true", effect: "NoSchedule" }],
        },
      },
    });
    await setReady(name, ready);
  }

  async function setReady(name: string, status: "True" | "False" | "Unknown"): Promise<void> {
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const ready = {
      type: "Ready",
      status,
      reason: "KubeletStatus",
      message: "no kubelet in e2e",
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    };
    await core.patchNodeStatus(
      { name, body: { status: { addresses: [{ type: "Hostname", address: name }], conditions: [ready] } } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
  }

  async function readNode(name: string): Promise<V1Node | undefined> {
    try {
      return await core.readNode({ name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  async function eventsFor(name: string): Promise<CoreV1Event[]> {
    return (await core.listNamespacedEvent({ namespace: "default", fieldSelector: `involvedObject.name=${name}` }))
      .items;
  }

  async function counter(name: string, label: string, value: string): Promise<number> {
    const m = await registry.getSingleMetric(name)?.get();
    return m?.values.find((v) => v.labels[label] === value)?.value ?? 0;
  }

  const networkUnavailable = (n: V1Node | undefined) =>
    n?.status?.conditions?.find((c) => c.type === "NetworkUnavailable");
  const taintKeys = (n: V1Node | undefined) => (n?.spec?.taints ?? []).map((t) => t.key);

  it("podCIDRSource cloud, IPv4: new Nodes get their VM's alias range once; a VM without one gets a Warning and stays NetworkUnavailable", async function () {
    this.timeout(90_000);
    const g = emulator();
    g.putInstance("cidr-a", {
      zone: ZONE,
      networkInterfaces: [{ aliasIpRanges: [{ ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" }] }],
    });
    g.putInstance("cidr-b", {
      zone: ZONE,
      networkInterfaces: [{ aliasIpRanges: [{ ipCidrRange: "10.4.2.0/24", subnetworkRangeName: "pods" }] }],
    });
    g.putInstance("cidr-none", { zone: ZONE });
    await Promise.all([createNode("cidr-a", "True"), createNode("cidr-b", "True"), createNode("cidr-none", "True")]);
    // A short refresh period: an assigned Node is re-checked against its VM every half period.
    await startController({ podCIDRStack: "IPv4", addressRefreshMs: 1000 });

    for (const [name, cidr] of [
      ["cidr-a", "10.4.1.0/24"],
      ["cidr-b", "10.4.2.0/24"],
    ] as const) {
      const n = await eventually(
        `${name} pod CIDR and NetworkUnavailable=False`,
        async () => {
          const node = await readNode(name);
          return node?.spec?.podCIDR !== undefined && networkUnavailable(node)?.status === "False" ? node : undefined;
        },
        WAIT_MS,
      );
      assert.equal(n.spec?.podCIDR, cidr);
      assert.deepEqual(n.spec?.podCIDRs, [cidr]);
      const cond = networkUnavailable(n);
      assert.deepEqual([cond?.reason, cond?.message], ["RouteCreated", "NodeController create implicit route"]);
      assert.equal(
        n.status?.conditions?.find((c) => c.type === "Ready")?.status,
        "True",
        "the kubelet's conditions are kept",
      );
    }

    const warning = await eventually(
      "CIDRNotAvailable",
      async () => (await eventsFor("cidr-none")).find((e) => e.reason === "CIDRNotAvailable"),
      WAIT_MS,
    );
    assert.equal(warning.type, "Warning");
    assert.equal(
      warning.message,
      "Node cidr-none has no pod CIDR and none can be read: instance dccm-test/us-central1-a/cidr-none has no alias IP range on nic0 (podCIDRStack IPv4)",
    );
    const none = await eventually(
      "cidr-none NetworkUnavailable=True",
      async () => {
        const node = await readNode("cidr-none");
        return networkUnavailable(node)?.status === "True" ? node : undefined;
      },
      WAIT_MS,
    );
    assert.equal(networkUnavailable(none)?.reason, "NoPodCIDR");
    assert.equal(none.spec?.podCIDR, undefined);

    // The VM's range changes under an assigned Node: one Warning, never a patch (spec.podCIDRs is immutable).
    g.putInstance("cidr-a", {
      zone: ZONE,
      networkInterfaces: [{ aliasIpRanges: [{ ipCidrRange: "10.4.9.0/24", subnetworkRangeName: "pods" }] }],
    });
    const mismatch = await eventually(
      "PodCIDRMismatch",
      async () => (await eventsFor("cidr-a")).find((e) => e.reason === "PodCIDRMismatch"),
      WAIT_MS,
    );
    assert.equal(mismatch.type, "Warning");
    assert.match(
      mismatch.message ?? "",
      /^Node cidr-a has pod CIDRs 10\.4\.1\.0\/24 but its VM's range is 10\.4\.9\.0\/24/,
    );
    assert.deepEqual((await readNode("cidr-a"))?.spec?.podCIDRs, ["10.4.1.0/24"]);
    assert.equal(await counter("dccm_node_pod_cidr_assignments_total", "result", "error"), 0, "no patch was tried");
  });

  it("podCIDRSource cloud, IPv6_IPv4: the /112 of the interface's IPv6 address first, then the alias range", async function () {
    this.timeout(60_000);
    const g = emulator();
    g.putInstance("cidr-dual", {
      zone: ZONE,
      networkInterfaces: [
        {
          ipv6Address: "fd20:0:0:1:0:7::",
          aliasIpRanges: [{ ipCidrRange: "10.4.7.0/24", subnetworkRangeName: "pods" }],
        },
      ],
    });
    await createNode("cidr-dual", "True");
    await startController({ podCIDRStack: "IPv6_IPv4" });
    const n = await eventually(
      "dual-stack pod CIDRs",
      async () => {
        const node = await readNode("cidr-dual");
        return (node?.spec?.podCIDRs?.length ?? 0) > 0 ? node : undefined;
      },
      WAIT_MS,
    );
    assert.deepEqual(n.spec?.podCIDRs, ["fd20:0:0:1:0:7::/112", "10.4.7.0/24"]);
    assert.equal(n.spec?.podCIDR, "fd20:0:0:1:0:7::/112");
    assert.equal(await counter("dccm_node_pod_cidr_assignments_total", "result", "assigned"), 1);
  });

  it("route-based (the default): spec.podCIDRs is never written and NetworkUnavailable left to the routes", async function () {
    this.timeout(60_000);
    const g = emulator();
    g.putInstance("routed", {
      zone: ZONE,
      networkInterfaces: [{ aliasIpRanges: [{ ipCidrRange: "10.4.3.0/24", subnetworkRangeName: "pods" }] }],
    });
    await createNode("routed", "True");
    const c = await startController();
    await eventually(
      "initialized",
      async () => (taintKeys(await readNode("routed")).includes(UNINITIALIZED) ? undefined : true),
      WAIT_MS,
    );
    await c.idle();
    const n = await readNode("routed");
    assert.equal(n?.spec?.podCIDR, undefined);
    assert.equal(networkUnavailable(n), undefined);
    assert.equal(await counter("dccm_node_pod_cidr_assignments_total", "result", "assigned"), 0);
  });

  it("shutdown taint: VM stopped → tainted and kept; started → taint gone", async function () {
    this.timeout(90_000);
    const g = emulator();
    g.putInstance("stoppable", { zone: ZONE });
    await createNode("stoppable", "True");
    await startController();
    await eventually(
      "initialized",
      async () => (taintKeys(await readNode("stoppable")).includes(UNINITIALIZED) ? undefined : true),
      WAIT_MS,
    );

    g.setInstanceStatus("stoppable", "TERMINATED");
    await setReady("stoppable", "Unknown");
    const tainted = await eventually(
      "shutdown taint",
      async () => {
        const node = await readNode("stoppable");
        return taintKeys(node).includes(SHUTDOWN) ? node : undefined;
      },
      WAIT_MS,
    );
    assert.deepEqual(
      tainted.spec?.taints?.filter((t) => t.key === SHUTDOWN).map((t) => ({ key: t.key, effect: t.effect })),
      [{ key: SHUTDOWN, effect: "NoSchedule" }],
    );
    const added = await eventually(
      "ShutdownTaintAdded",
      async () => (await eventsFor("stoppable")).find((e) => e.reason === "ShutdownTaintAdded"),
      WAIT_MS,
    );
    assert.equal(added.message, `Added taint ${SHUTDOWN}:NoSchedule: instance is TERMINATED`);
    // Several lifecycle periods (1 s) later the NotReady Node with a stopped VM still exists.
    const checks = await counter("dccm_compute_calls_total", "call", "instances.get");
    await eventually(
      "more lifecycle checks",
      async () =>
        (await counter("dccm_compute_calls_total", "call", "instances.get")) +
          (await counter("dccm_compute_calls_total", "call", "instances.aggregatedList")) >
        checks + 3
          ? true
          : undefined,
      WAIT_MS,
    );
    assert.ok(await readNode("stoppable"), "a Node whose VM is stopped is never deleted");

    g.setInstanceStatus("stoppable", "RUNNING");
    await eventually(
      "shutdown taint removed",
      async () => (taintKeys(await readNode("stoppable")).includes(SHUTDOWN) ? undefined : true),
      WAIT_MS,
    );
    const removed = await eventually(
      "ShutdownTaintRemoved",
      async () => (await eventsFor("stoppable")).find((e) => e.reason === "ShutdownTaintRemoved"),
      WAIT_MS,
    );
    assert.equal(removed.message, `Removed taint ${SHUTDOWN}: instance is RUNNING`);
    assert.deepEqual(
      [
        await counter("dccm_node_shutdown_taints_total", "action", "added"),
        await counter("dccm_node_shutdown_taints_total", "action", "removed"),
      ],
      [1, 1],
    );

    // Suspended, then Ready again (the kubelet came back): the Ready rule removes it without a lookup.
    g.setInstanceStatus("stoppable", "SUSPENDED");
    await eventually(
      "tainted again",
      async () => (taintKeys(await readNode("stoppable")).includes(SHUTDOWN) ? true : undefined),
      WAIT_MS,
    );
    await setReady("stoppable", "True");
    await eventually(
      "taint gone once Ready",
      async () => (taintKeys(await readNode("stoppable")).includes(SHUTDOWN) ? undefined : true),
      WAIT_MS,
    );
  });
});

/**
 * The watcher against a real apiserver behind a TCP proxy that the test cuts: a failed watch is
 * restarted with backoff, and the relist brings in what changed during the outage.
 */
import * as assert from "node:assert/strict";
import * as net from "node:net";
import * as k8s from "@kubernetes/client-node";
import { ClusterWatcher } from "../../watcher/informers";
import { startKube, type KubeEnv } from "../support/e2e/kube";
import { eventually } from "../support/wait";

class CuttableProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: number) {}

  async open(port = 0): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target, "127.0.0.1");
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  /** Refuses new connections and resets the open ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe("watcher: watch failures", function () {
  this.timeout(300_000);
  let kube: KubeEnv;
  let proxy: CuttableProxy;
  let watcher: ClusterWatcher;
  const restarts: string[] = [];

  before(async () => {
    kube = await startKube();
    proxy = new CuttableProxy(Number(new URL(kube.server).port));
    await proxy.open();
    const viaProxy = new k8s.KubeConfig();
    viaProxy.loadFromFile(kube.kubeconfigPath);
    const cluster = viaProxy.getCurrentCluster();
    if (cluster === null) throw new Error("kubeconfig without a cluster");
    viaProxy.clusters = viaProxy.clusters.map((entry) =>
      entry.name === cluster.name ? { ...entry, server: `https://127.0.0.1:${proxy.port}` } : entry,
    );
    await kube.kubeConfig.makeApiClient(k8s.CoreV1Api).createNode({ body: { metadata: { name: "before" } } });
    watcher = new ClusterWatcher(viaProxy, {
      resyncMs: 3_600_000,
      restartBackoffBaseMs: 200,
      restartBackoffMaxMs: 1000,
      onWatchRestart: (resource) => restarts.push(resource),
    });
  });

  after(async () => {
    await watcher?.stop();
    await proxy?.cut();
    await kube?.stop();
  });

  it("waits for the initial lists", async () => {
    await watcher.start();
    assert.deepEqual(
      watcher.snapshot().nodes.map((node) => node.name),
      ["before"],
    );
  });

  it("restarts failed watches with backoff and relists what changed meanwhile", async () => {
    const port = proxy.port;
    await proxy.cut();
    await eventually(
      "both watches to fail",
      () => (restarts.includes("nodes") && restarts.includes("services") ? true : undefined),
      60_000,
      50,
    );
    // Made while the watcher cannot see the apiserver: only a relist can bring it in.
    await kube.kubeConfig.makeApiClient(k8s.CoreV1Api).createNode({ body: { metadata: { name: "during-outage" } } });
    await proxy.open(port);
    const names = await eventually(
      "the relist after the outage",
      () => {
        const nodes = watcher
          .snapshot()
          .nodes.map((node) => node.name)
          .sort();
        return nodes.includes("during-outage") ? nodes : undefined;
      },
      60_000,
      100,
    );
    assert.deepEqual(names, ["before", "during-outage"]);
    assert.equal(restarts.filter((resource) => resource === "nodes").length >= 1, true);
  });

  it("a resync restarts no watch, and changes keep arriving after several resync periods", async () => {
    const resyncRestarts: string[] = [];
    const resyncing = new ClusterWatcher(kube.kubeConfig, {
      resyncMs: 400,
      restartBackoffBaseMs: 50,
      restartBackoffMaxMs: 200,
      onWatchRestart: (resource) => resyncRestarts.push(resource),
    });
    let resyncs = 0;
    resyncing.on("resync", () => resyncs++);
    try {
      await resyncing.start();
      await eventually("five resync periods", () => (resyncs >= 5 ? true : undefined), 30_000, 50);
      await kube.kubeConfig.makeApiClient(k8s.CoreV1Api).createNode({ body: { metadata: { name: "after-resyncs" } } });
      await eventually(
        "after-resyncs through the watch",
        () => (resyncing.snapshot().nodes.some((node) => node.name === "after-resyncs") ? true : undefined),
        30_000,
        50,
      );
      await eventually("two more resync periods", () => (resyncs >= 7 ? true : undefined), 30_000, 50);
      assert.deepEqual(resyncRestarts, []);
      assert.deepEqual(
        resyncing
          .snapshot()
          .nodes.map((node) => node.name)
          .sort(),
        ["after-resyncs", "before", "during-outage"],
      );
    } finally {
      await resyncing.stop();
    }
  });
});

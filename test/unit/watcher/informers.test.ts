// The node controller's Node source is the daemon's ClusterWatcher (watcher/informers.ts): against a
// scripted apiserver (one Node list, then a watch stream the test writes to), the subscription
// sees every add, update and delete after the cache holds it, trimmed to a WatchedNode, while the
// model's `change` fires only when its NodeInfo changed.

import * as assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";

import * as k8s from "@kubernetes/client-node";

import { ClusterWatcher, type NodeEvent } from "../../../watcher/informers";

function node(
  name: string,
  resourceVersion: string,
  extra: { ready?: string; ip?: string; label?: string } = {},
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion,
      labels: { "kubernetes.io/hostname": name, ...(extra.label === undefined ? {} : { team: extra.label }) },
    },
    spec: { providerID: `gce://p/us-central1-a/${name}` },
    status: {
      addresses: extra.ip === undefined ? [] : [{ type: "InternalIP", address: extra.ip }],
      conditions: [{ type: "Ready", status: extra.ready ?? "True", lastHeartbeatTime: "2025-01-01T00:00:00Z" }],
    },
  };
}

/** Serves one Node list and keeps the watch stream open for the test to write to. */
class ScriptedApiserver {
  readonly paths: string[] = [];
  /** Each request's query parameters, but the watch's random timeout. */
  readonly queries: [string, string][][] = [];
  private readonly server: http.Server;
  private watch: http.ServerResponse | undefined;
  private watchWaiters: (() => void)[] = [];
  url = "";

  constructor(private readonly items: Record<string, unknown>[]) {
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      this.paths.push(`${req.method} ${url.pathname}${url.searchParams.get("watch") === "true" ? " watch" : ""}`);
      this.queries.push([...url.searchParams.entries()].filter(([key]) => key !== "timeoutSeconds"));
      if (url.searchParams.get("watch") === "true") {
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        this.watch = res;
        for (const resolve of this.watchWaiters.splice(0)) resolve();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ apiVersion: "v1", kind: "NodeList", metadata: { resourceVersion: "10" }, items: this.items }),
      );
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  watching(): Promise<void> {
    return this.watch !== undefined ? Promise.resolve() : new Promise((resolve) => this.watchWaiters.push(resolve));
  }

  send(type: "ADDED" | "MODIFIED" | "DELETED", object: Record<string, unknown>): void {
    this.watch?.write(`${JSON.stringify({ type, object })}\n`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function kubeConfigFor(server: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "c", cluster: "c", user: "u" }],
    currentContext: "c",
  });
  return kc;
}

describe("watcher/informers ClusterWatcher: the Node subscription", function () {
  this.timeout(10_000);
  let api: ScriptedApiserver;
  let watcher: ClusterWatcher | undefined;

  beforeEach(async () => {
    api = new ScriptedApiserver([node("n1", "5", { ready: "False", ip: "10.0.0.1" })]);
    await api.start();
  });

  afterEach(async () => {
    await watcher?.stop();
    watcher = undefined;
    await api.stop();
  });

  it("a nodes-only watch: every event after the cache holds it, trimmed; change only for the model", async () => {
    watcher = new ClusterWatcher(kubeConfigFor(api.url), {
      resources: ["nodes"],
      restartBackoffBaseMs: 1000,
      restartBackoffMaxMs: 1000,
    });
    const w = watcher;
    const seen: string[] = [];
    let changes = 0;
    w.on("change", () => changes++);
    const next: ((e: NodeEvent) => void)[] = [];
    w.subscribeNodes((event) => {
      assert.equal(
        w.watchedNode(event.node.name),
        event.kind === "deleted" ? undefined : event.node,
        "the cache holds it when the listener hears of it",
      );
      seen.push(`${event.kind} ${event.node.name}@${event.node.resourceVersion}`);
      next.shift()?.(event);
    });
    const arrival = (): Promise<NodeEvent> => new Promise((resolve) => next.push(resolve));

    await w.start();
    assert.deepEqual(seen, ["added n1@5"]);
    assert.equal(changes, 1);
    assert.deepStrictEqual(w.watchedNode("n1"), {
      name: "n1",
      uid: "uid-n1",
      resourceVersion: "5",
      deleting: false,
      providerID: "gce://p/us-central1-a/n1",
      labels: { "kubernetes.io/hostname": "n1" },
      taints: [],
      addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
      ready: "False",
    });
    assert.equal(w.watchedNode("n1")?.labels, w.snapshot().nodes[0]?.labels, "labels stored once");
    await api.watching();

    // A status-only update: nothing the model reads, but the controller must see the new version.
    let arrived = arrival();
    api.send("MODIFIED", node("n1", "6", { ready: "True", ip: "10.0.0.1" }));
    assert.equal((await arrived).node.ready, "True");
    assert.equal(changes, 1, "no change for the model");

    arrived = arrival();
    api.send("MODIFIED", node("n1", "7", { ready: "True", ip: "10.0.0.1", label: "a" }));
    assert.deepEqual((await arrived).node.labels, { "kubernetes.io/hostname": "n1", team: "a" });
    assert.equal(changes, 2);

    arrived = arrival();
    api.send("ADDED", node("n2", "8"));
    await arrived;
    arrived = arrival();
    api.send("DELETED", node("n1", "9"));
    await arrived;

    assert.deepEqual(seen, ["added n1@5", "updated n1@6", "updated n1@7", "added n2@8", "deleted n1@7"]);
    assert.deepEqual(
      w.watchedNodes().map((n) => n.name),
      ["n2"],
    );
    assert.deepEqual(
      w.snapshot().nodes.map((n) => n.name),
      ["n2"],
    );
    assert.equal(changes, 4);
    assert.deepEqual(api.paths, ["GET /api/v1/nodes", "GET /api/v1/nodes watch"], "Nodes only: no Service list");
    assert.deepEqual(api.queries, [
      [["limit", "100"]],
      [
        ["watch", "true"],
        ["resourceVersion", "10"],
        ["allowWatchBookmarks", "true"],
      ],
    ]);
  });

  it("a reader who comes after start() gets the views of every Node listed and watched so far", async () => {
    watcher = new ClusterWatcher(kubeConfigFor(api.url), {
      resources: ["nodes"],
      restartBackoffBaseMs: 1000,
      restartBackoffMaxMs: 1000,
    });
    const w = watcher;
    await w.start();
    await api.watching();
    const changed = new Promise<void>((resolve) => w.once("change", () => resolve()));
    api.send("ADDED", node("n2", "11", { ready: "Unknown" }));
    await changed;
    assert.deepEqual(
      w.watchedNodes().map((n) => `${n.name}@${n.resourceVersion} ${n.ready ?? ""}`),
      ["n1@5 False", "n2@11 Unknown"],
    );
    assert.equal(
      w.watchedNode("n2")?.labels,
      w.snapshot().nodes.find((n) => n.name === "n2")?.labels,
      "labels stored once",
    );
    const events: string[] = [];
    const arrived = new Promise<void>((resolve) =>
      w.subscribeNodes((event) => {
        events.push(`${event.kind} ${event.node.name}@${event.node.resourceVersion}`);
        resolve();
      }),
    );
    api.send("MODIFIED", node("n2", "12", { ready: "True" }));
    await arrived;
    assert.deepEqual(events, ["updated n2@12"]);
    assert.equal(w.watchedNode("n2")?.ready, "True");
  });

  it("an unsubscribed listener hears nothing more", async () => {
    watcher = new ClusterWatcher(kubeConfigFor(api.url), {
      resources: ["nodes"],
      restartBackoffBaseMs: 1000,
      restartBackoffMaxMs: 1000,
    });
    const w = watcher;
    const heard: string[] = [];
    const unsubscribe = w.subscribeNodes((event) => heard.push(event.node.name));
    const kept: string[] = [];
    let arrived: (() => void) | undefined;
    w.subscribeNodes((event) => {
      kept.push(event.node.name);
      arrived?.();
    });
    await w.start();
    await api.watching();
    unsubscribe();
    const done = new Promise<void>((resolve) => (arrived = resolve));
    api.send("ADDED", node("n3", "11"));
    await done;
    assert.deepEqual(heard, ["n1"]);
    assert.deepEqual(kept, ["n1", "n3"]);
  });
});

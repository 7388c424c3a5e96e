/**
 * watcher/listWatch.ts against a real kube-apiserver: paged lists, a watch resumed after a stop
 * without a relist, 410 Gone → relist, an expired continue token → the list starts over, and
 * bookmarks. Nodes are served without the watch cache (`--watch-cache-sizes=nodes#0`) and the
 * apiserver compacts etcd every 2 s, so an old resourceVersion of a Node really expires: the same
 * 410 a client gets after an outage longer than the server's history.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { LeanListWatch, type ListPage, type ListWatchHandlers } from "../../watcher/listWatch";
import { startKube, type KubeEnv } from "../support/e2e/kube";
import { eventually } from "../support/wait";

type Obj = k8s.KubernetesObject;

/** What a list-watch told its caller, in order. */
class Recorder implements ListWatchHandlers<Obj> {
  readonly events: string[] = [];
  readonly failures: unknown[] = [];
  put(object: Obj, kind: "added" | "updated"): void {
    this.events.push(
      `${kind} ${object.metadata?.namespace === undefined ? "" : `${object.metadata.namespace}/`}${object.metadata?.name ?? ""}`,
    );
  }
  remove(key: string): void {
    this.events.push(`removed ${key}`);
  }
  failed(error: unknown): void {
    this.failures.push(error);
  }
}

/** Resolves once a watch of Nodes from `resourceVersion` is answered 410: etcd compacted it away. */
async function compactedPast(kubeConfig: k8s.KubeConfig, resourceVersion: string): Promise<void> {
  const watch = new k8s.Watch(kubeConfig);
  await eventually(
    `etcd compacted past resourceVersion ${resourceVersion}`,
    () =>
      new Promise<true | undefined>((resolve) => {
        let gone = false;
        void watch
          .watch(
            "/api/v1/nodes",
            { resourceVersion, timeoutSeconds: 1 },
            (type, object: { code?: number }) => {
              if (type === "ERROR" && object.code === 410) gone = true;
            },
            (error: unknown) =>
              resolve(gone || (error as { statusCode?: number } | null)?.statusCode === 410 ? true : undefined),
          )
          .catch(() => resolve(undefined));
      }),
    60_000,
    500,
  );
}

describe("watcher/listWatch: the lean list-watch on a real apiserver", function () {
  this.timeout(300_000);
  let kube: KubeEnv;
  let core: k8s.CoreV1Api;
  const running: LeanListWatch<Obj>[] = [];

  before(async () => {
    kube = await startKube({ extraApiServerArgs: ["--watch-cache-sizes=nodes#0", "--etcd-compaction-interval=2s"] });
    core = kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "lw" } } });
    for (const name of ["a", "b", "c", "d", "e"]) {
      await core.createNamespacedService({
        namespace: "lw",
        body: { metadata: { name }, spec: { ports: [{ port: 80 }] } },
      });
    }
  });

  afterEach(() => {
    for (const listWatch of running.splice(0)) listWatch.stop();
  });

  after(async () => {
    await kube?.stop();
  });

  function services(
    recorder: Recorder,
    pages: string[],
    extra: { watch?: Pick<k8s.Watch, "watch">; watchTimeoutSeconds?: () => number } = {},
  ): LeanListWatch<Obj> {
    const listWatch = new LeanListWatch<Obj>({
      path: "/api/v1/namespaces/lw/services",
      list: async (page) => {
        pages.push(page._continue === undefined ? "first" : "continue");
        return core.listNamespacedService({ namespace: "lw", ...page });
      },
      watch: extra.watch ?? new k8s.Watch(kube.kubeConfig),
      handlers: recorder,
      pageSize: 2,
      ...(extra.watchTimeoutSeconds === undefined ? {} : { watchTimeoutSeconds: extra.watchTimeoutSeconds }),
    });
    running.push(listWatch);
    return listWatch;
  }

  it("lists in pages of pageSize, then watches from the list's resourceVersion", async () => {
    const recorder = new Recorder();
    const pages: string[] = [];
    const listWatch = services(recorder, pages);
    await listWatch.start();
    assert.deepEqual(pages, ["first", "continue", "continue"]);
    assert.deepEqual(recorder.events, ["added lw/a", "added lw/b", "added lw/c", "added lw/d", "added lw/e"]);
    assert.equal(listWatch.lists(), 1);
    await core.createNamespacedService({
      namespace: "lw",
      body: { metadata: { name: "f" }, spec: { ports: [{ port: 80 }] } },
    });
    await eventually(
      "f through the watch",
      () => (recorder.events.includes("added lw/f") ? true : undefined),
      60_000,
      50,
    );
    await core.deleteNamespacedService({ namespace: "lw", name: "f" });
    await eventually(
      "f's deletion through the watch",
      () => (recorder.events.includes("removed lw/f") ? true : undefined),
      60_000,
      50,
    );
    assert.deepEqual(recorder.events.slice(5), ["added lw/f", "removed lw/f"]);
    assert.deepEqual([...listWatch.keys()].sort(), ["lw/a", "lw/b", "lw/c", "lw/d", "lw/e"]);
    assert.deepEqual(recorder.failures, []);
  });

  it("a watch restarted after stop() resumes from its resourceVersion: what changed meanwhile arrives without a relist", async () => {
    const recorder = new Recorder();
    const pages: string[] = [];
    const listWatch = services(recorder, pages);
    await listWatch.start();
    listWatch.stop();
    await core.patchNamespacedService(
      { namespace: "lw", name: "a", body: { metadata: { labels: { touched: "yes" } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await core.createNamespacedService({
      namespace: "lw",
      body: { metadata: { name: "g" }, spec: { ports: [{ port: 80 }] } },
    });
    await listWatch.start();
    await eventually(
      "g through the resumed watch",
      () => (recorder.events.includes("added lw/g") ? true : undefined),
      60_000,
      50,
    );
    assert.deepEqual(recorder.events.slice(5), ["updated lw/a", "added lw/g"]);
    assert.deepEqual(pages, ["first", "continue", "continue"], "no relist");
    assert.equal(listWatch.lists(), 1);
    await core.deleteNamespacedService({ namespace: "lw", name: "g" });
  });

  it("a bookmark moves the resourceVersion to resume from past changes the watch does not see; the watch the server ends resumes from there", async () => {
    const recorder = new Recorder();
    const bookmarks: string[] = [];
    const resumedFrom: string[] = [];
    const realWatch = new k8s.Watch(kube.kubeConfig);
    // The real watch, tapped: where each watch started and which bookmarks the apiserver sent.
    const tapped: Pick<k8s.Watch, "watch"> = {
      watch: (path, query: { resourceVersion: string }, callback, done) => {
        resumedFrom.push(query.resourceVersion);
        return realWatch.watch(
          path,
          query,
          (type: string, object: Obj, raw: unknown) => {
            if (type === "BOOKMARK") bookmarks.push(object.metadata?.resourceVersion ?? "");
            callback(type, object, raw);
          },
          done,
        );
      },
    };
    // The apiserver sends a bookmark 2 s before a watch's timeout.
    const listWatch = services(recorder, [], { watch: tapped, watchTimeoutSeconds: () => 4 });
    await listWatch.start();
    const listed = listWatch.resourceVersion();
    // A Service outside the namespace watched: it moves the collection's resourceVersion, and only a bookmark tells this watch.
    const other = await core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "elsewhere" }, spec: { ports: [{ port: 80 }] } },
    });
    const otherVersion = other.metadata?.resourceVersion ?? "";
    await eventually(
      "a bookmark at the other Service's resourceVersion",
      () => (bookmarks.includes(otherVersion) ? true : undefined),
      60_000,
      50,
    );
    await eventually(
      "the watch resumed from it",
      () => (resumedFrom.includes(otherVersion) ? true : undefined),
      60_000,
      50,
    );
    assert.notEqual(otherVersion, listed);
    assert.equal(resumedFrom[0], listed);
    assert.deepEqual(recorder.events, ["added lw/a", "added lw/b", "added lw/c", "added lw/d", "added lw/e"]);
    assert.equal(listWatch.lists(), 1);
    assert.deepEqual(recorder.failures, []);
    await core.deleteNamespacedService({ namespace: "default", name: "elsewhere" });
  });

  it("410 Gone on resuming (etcd compacted the resourceVersion): lists again and reports what changed", async () => {
    await core.createNode({ body: { metadata: { name: "n1" } } });
    const recorder = new Recorder();
    const listWatch = new LeanListWatch<Obj>({
      path: "/api/v1/nodes",
      list: (page) => core.listNode(page),
      watch: new k8s.Watch(kube.kubeConfig),
      handlers: recorder,
    });
    running.push(listWatch);
    await listWatch.start();
    listWatch.stop();
    const stale = listWatch.resourceVersion();
    await core.createNode({ body: { metadata: { name: "n2" } } });
    await core.deleteNode({ name: "n1" });
    await compactedPast(kube.kubeConfig, stale);
    await listWatch.start();
    await eventually("the relist", () => (listWatch.lists() === 2 ? true : undefined), 60_000, 50);
    assert.deepEqual(recorder.events, ["added n1", "added n2", "removed n1"]);
    assert.deepEqual([...listWatch.keys()], ["n2"]);
    assert.deepEqual(recorder.failures, []);
    await core.deleteNode({ name: "n2" });
  });

  it("an expired continue token starts the list over from its first page", async () => {
    for (const name of ["p1", "p2", "p3"]) await core.createNode({ body: { metadata: { name } } });
    const recorder = new Recorder();
    const pages: string[] = [];
    let firstPageVersion: string | undefined;
    const listWatch = new LeanListWatch<Obj>({
      path: "/api/v1/nodes",
      list: async (page): Promise<ListPage<Obj>> => {
        if (page._continue !== undefined && firstPageVersion !== undefined) {
          // Only the first continued page waits: until etcd compacted the list's snapshot away.
          const version = firstPageVersion;
          firstPageVersion = undefined;
          await core.createNode({ body: { metadata: { name: "p4" } } });
          await compactedPast(kube.kubeConfig, version);
        }
        try {
          const result = await core.listNode(page);
          pages.push(
            `${page._continue === undefined ? "first" : "continue"} ${result.items.map((node) => node.metadata?.name).join(",")}`,
          );
          if (page._continue === undefined && pages.length === 1) firstPageVersion = result.metadata?.resourceVersion;
          return result;
        } catch (error) {
          pages.push(
            `${page._continue === undefined ? "first" : "continue"} HTTP ${String((error as { code?: number }).code)}`,
          );
          throw error;
        }
      },
      watch: new k8s.Watch(kube.kubeConfig),
      handlers: recorder,
      pageSize: 2,
    });
    running.push(listWatch);
    await listWatch.start();
    assert.deepEqual(pages, ["first p1,p2", "continue HTTP 410", "first p1,p2", "continue p3,p4"]);
    assert.deepEqual(recorder.events, ["added p1", "added p2", "added p3", "added p4"]);
    assert.equal(listWatch.lists(), 1);
    assert.deepEqual(recorder.failures, []);
  });
});

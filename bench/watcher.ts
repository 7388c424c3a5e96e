/**
 * The watcher on a real apiserver with many Nodes: time to the initial lists, heap per Node held by
 * the informer caches and the trimmed copies, and time from a Node change to the recomputed desired state.
 */
import * as k8s from "@kubernetes/client-node";
import { parseConfig } from "../model";
import { startKube } from "../test/support/e2e/kube";
import { eventually } from "../test/support/wait";
import { DesiredCache } from "../model/desiredCache";
import { ClusterWatcher } from "../watcher/informers";
import { elapsedMs, round } from "./stats";

export interface WatcherFigures {
  watchedNodes: number;
  watcherSyncMs: number;
  watcherHeapBytesPerNode: number;
  nodeChangeToDesiredMs: number;
}

const NODES = 2000;
const CREATE_CONCURRENCY = 25;

function heapUsed(): number {
  global.gc?.();
  return process.memoryUsage().heapUsed;
}

export async function benchWatcher(): Promise<WatcherFigures> {
  const kube = await startKube();
  const core = kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const zones = ["us-central1-a", "us-central1-b", "us-central1-c"];
  let watcher: ClusterWatcher | undefined;
  try {
    let next = 0;
    const create = async (): Promise<void> => {
      while (next < NODES) {
        const i = next++;
        const zone = zones[i % zones.length];
        const name = `node-${i}`;
        await core.createNode({
          body: {
            metadata: {
              name,
              labels: {
                "topology.kubernetes.io/zone": zone,
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": "e2-standard-4",
              },
            },
            spec: {
              providerID: `gce://bench-project/${zone}/${name}`,
              podCIDR: `10.${64 + Math.floor(i / 256)}.${i % 256}.0/24`,
            },
          },
        });
      }
    };
    await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, () => create()));

    const before = heapUsed();
    watcher = new ClusterWatcher(kube.kubeConfig, {
      resyncMs: 3_600_000,
      restartBackoffBaseMs: 1000,
      restartBackoffMaxMs: 10_000,
    });
    const start = process.hrtime.bigint();
    await watcher.start();
    const syncMs = elapsedMs(start);
    const heapPerNode = (heapUsed() - before) / NODES;

    const cache = new DesiredCache(
      parseConfig({
        project: "bench-project",
        region: "us-central1",
        network: "n",
        nodeTags: ["t"],
        clusterName: "bench",
        clusterId: "b3nch",
      }),
    );
    cache.update(watcher.snapshot());
    const changed = process.hrtime.bigint();
    await core.patchNode(
      {
        name: "node-7",
        body: { metadata: { labels: { "node.kubernetes.io/exclude-from-external-load-balancers": "true" } } },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    const active = watcher;
    await eventually(
      "the label in the desired state",
      () => (cache.update(active.snapshot()).length > 0 ? true : undefined),
      60_000,
      5,
    );
    return {
      watchedNodes: NODES,
      watcherSyncMs: round(syncMs, 0),
      watcherHeapBytesPerNode: Math.round(heapPerNode),
      nodeChangeToDesiredMs: round(elapsedMs(changed), 0),
    };
  } finally {
    await watcher?.stop();
    await kube.stop();
  }
}

/**
 * The watcher of bench/watcherScale.ts in a process of its own: starts a ClusterWatcher on the
 * kubeconfig given, waits for the initial lists, and prints its figures as one JSON line (heap
 * and RSS with every object cached, after a GC), then one recompute of the desired state.
 * Usage: node --expose-gc watcherScaleChild.js <kubeconfig> <watcher/informers.js of the build to measure>
 */
import { parseConfig } from "../model";
import { DesiredCache } from "../model/desiredCache";
import type { ClusterWatcher, WatcherOptions } from "../watcher/informers";
import { loadKubeConfig } from "../watcher/list";
import { elapsedMs } from "./stats";

export interface ChildFigures {
  syncMs: number;
  /** Heap used with everything cached, less the heap used before the watcher started. */
  heapBytes: number;
  rssBytes: number;
  recomputeMs: number;
}

function memory(): NodeJS.MemoryUsage {
  global.gc?.();
  return process.memoryUsage();
}

async function main(kubeconfigPath: string, informersModule: string): Promise<ChildFigures> {
  // The module of the build under measurement: this build's, or a baseline's.
  const { ClusterWatcher: Watcher } = (await import(informersModule)) as {
    ClusterWatcher: new (kubeConfig: ReturnType<typeof loadKubeConfig>, options: WatcherOptions) => ClusterWatcher;
  };
  const kubeConfig = loadKubeConfig(kubeconfigPath);
  const before = memory();
  // DCCM_BENCH_WATCH_PAGE_SIZE: the list page size to measure (default: the watcher's own).
  const pageSize = Number(process.env.DCCM_BENCH_WATCH_PAGE_SIZE ?? "0");
  const watcher = new Watcher(kubeConfig, {
    resyncMs: 3_600_000,
    restartBackoffBaseMs: 1000,
    restartBackoffMaxMs: 10_000,
    ...(pageSize > 0 ? { pageSize } : {}),
  });
  try {
    const start = process.hrtime.bigint();
    await watcher.start();
    const syncMs = elapsedMs(start);
    const cached = memory();
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
    const recompute = process.hrtime.bigint();
    cache.update(watcher.snapshot());
    return {
      syncMs,
      heapBytes: cached.heapUsed - before.heapUsed,
      rssBytes: cached.rss,
      recomputeMs: elapsedMs(recompute),
    };
  } finally {
    await watcher.stop();
  }
}

const [kubeconfigPath, informersModule] = process.argv.slice(2);
if (kubeconfigPath === undefined || informersModule === undefined) {
  process.stderr.write("usage: watcherScaleChild.js <kubeconfig> <watcher/informers.js>\n");
  process.exitCode = 2;
} else {
  main(kubeconfigPath, informersModule).then(
    (figures) => process.stdout.write(`${JSON.stringify(figures)}\n`),
    (error: unknown) => {
      process.stderr.write(
        `watcher bench child failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}

/**
 * What an engine run keeps, measured with the daemon's StackRunner alone (no apiserver, no
 * controllers): DCCM_RUN_HEAP_RUNS (default 500) `up`s of one Service's stack, each changing its
 * `loadBalancerSourceRanges`, against the GCE emulator in a process of its own
 * (bench/emulatorChild.ts). Every 50 runs, after a forced GC, this process's heap used, V8's code
 * space and RSS on stderr; at the runs DCCM_RUN_HEAP_SNAPSHOTS names (e.g. `100,300`) a heap
 * snapshot into DCCM_RUN_HEAP_DIR, for bench/heapDiff.ts. Prints the slopes per 1,000 runs over
 * 100 → 300 and 300 → N as JSON: a retainer per run grows both alike, a cache or code that
 * plateaus does not.
 * Usage: node --expose-gc dist/bench/runHeap.js
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as v8 from "node:v8";
import { heapGrowthPer1000Runs, type HeapSample } from "../daemon/metrics";
import {
  CLUSTER_STACK,
  desiredState,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
  type DesiredState,
} from "../model";
import { StackRunner } from "../stacks/runner";
import { startTestEnv } from "../test/support/e2e/env";
import { BENCH_NODE, putBenchNode, startEmulatorProcess, stopEmulatorProcess } from "./scale";
import { round, runAlone } from "./stats";

const MB = 1024 * 1024;
const SAMPLE_EVERY = 50;

const CONFIG = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "heap",
  clusterId: "4ea9",
});

function snapshot(range: string): ClusterSnapshot {
  return {
    nodes: [BENCH_NODE],
    services: [
      {
        namespace: "default",
        name: "s0",
        uid: "00000000-5e7f-4000-8000-000000000000",
        type: "LoadBalancer",
        annotations: {},
        ports: [{ protocol: "TCP", port: 80 }],
        loadBalancerSourceRanges: [range],
        deleting: false,
      },
    ],
  };
}

interface Sample {
  heapUsed: number;
  codeSpace: number;
  rss: number;
}

function measure(): Sample {
  global.gc?.();
  global.gc?.();
  const memory = process.memoryUsage();
  const code = v8.getHeapSpaceStatistics().find((space) => space.space_name === "code_space");
  return { heapUsed: memory.heapUsed, codeSpace: code?.space_used_size ?? 0, rss: memory.rss };
}

/** Pure: each series' least-squares growth per 1,000 runs over the samples from run `from` to run `to`, in MB. */
export function slopes(
  samples: readonly (Sample & { runs: number })[],
  from: number,
  to: number,
): Record<keyof Sample, number> {
  const window = samples.filter((sample) => sample.runs >= from && sample.runs <= to);
  const slope = (key: keyof Sample): number => {
    const series: HeapSample[] = window.map((sample) => ({ runs: sample.runs, heapBytes: sample[key] }));
    return round((heapGrowthPer1000Runs(series, 0) ?? 0) / MB, 2);
  };
  return { heapUsed: slope("heapUsed"), codeSpace: slope("codeSpace"), rss: slope("rss") };
}

export async function benchRunHeap(
  runs: number = Number(process.env.DCCM_RUN_HEAP_RUNS ?? "500"),
  snapshotsAt: readonly number[] = (process.env.DCCM_RUN_HEAP_SNAPSHOTS ?? "")
    .split(",")
    .filter((entry) => entry !== "")
    .map(Number),
  snapshotDir: string = process.env.DCCM_RUN_HEAP_DIR ?? process.cwd(),
): Promise<Record<string, number>> {
  const gce = await startEmulatorProcess();
  const env = await startTestEnv({ withKube: false }).catch(async (error: unknown) => {
    await stopEmulatorProcess(gce);
    throw error;
  });
  try {
    await putBenchNode(gce, CONFIG.project);
    const runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: { ...env.pulumiEnv, DCCM_GCE_EMULATOR_URL: gce.emulatorUrl },
      workDir: path.join(env.dir, "workspaces"),
      projectName: "dccm-h3ap",
      pulumiCommand: env.pulumiCommand,
    });
    const desiredAt = (n: number): DesiredState =>
      desiredState(snapshot(`10.${(n >> 8) & 255}.${n & 255}.0/24`), CONFIG);
    await runner.listStacks();
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desiredAt(0), { refresh: false });
    const stack = serviceStackName("default", "s0");
    const samples: (Sample & { runs: number })[] = [];
    for (let n = 1; n <= runs; n++) {
      const outcome = await runner.up(stack, { kind: "service", namespace: "default", name: "s0" }, desiredAt(n), {
        refresh: false,
      });
      if (outcome.changed.length === 0) throw new Error(`bench: run ${n} changed nothing`);
      if (n % SAMPLE_EVERY === 0) {
        const sample = measure();
        samples.push({ runs: n, ...sample });
        process.stderr.write(
          `run heap: run ${n}: heap ${round(sample.heapUsed / MB, 2)} MB, code ${round(sample.codeSpace / MB, 2)} MB, rss ${round(sample.rss / MB, 1)} MB\n`,
        );
      }
      if (snapshotsAt.includes(n)) {
        global.gc?.();
        const file = v8.writeHeapSnapshot(path.join(snapshotDir, `run-${n}.heapsnapshot`));
        process.stderr.write(`run heap: snapshot ${file}\n`);
      }
    }
    const early = slopes(samples, 100, 300);
    const late = slopes(samples, 300, runs);
    const whole = slopes(samples, 100, runs);
    const figures: Record<string, number> = { runs };
    for (const [prefix, values] of [
      ["runs100to300", early],
      ["runs300toN", late],
      ["runs100toN", whole],
    ] as const)
      for (const [key, value] of Object.entries(values)) figures[`${prefix}_${key}MbPer1000Runs`] = value;
    fs.writeFileSync(path.join(snapshotDir, "run-heap.json"), `${JSON.stringify({ figures, samples })}\n`);
    return figures;
  } finally {
    await env.stop();
    await stopEmulatorProcess(gce);
  }
}

if (require.main === module) runAlone(() => benchRunHeap());

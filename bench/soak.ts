/**
 * `npm run bench:soak`: an operator's months compressed, on the offline environment of
 * bench/scale.ts (real kube-apiserver, real engine, the GCE emulator in a process of its own). One
 * daemon and 50 LoadBalancer Services; then DCCM_SOAK_RUNS (default 500) changes of one Service's
 * `spec.loadBalancerSourceRanges`, each waited for in the emulator (every change an `up`), and
 * DCCM_SOAK_ROTATION_RUNS (as many) rotating over the 50 Services (either 0: that phase is not
 * run). Every 50 runs, after a
 * forced GC, this process's heap, RSS and what RSS is made of (MEMORY_SERIES). Reported per phase:
 * their least-squares growth per 1,000 runs from run 100 on (what a run
 * keeps for good; the first runs warm up code and caches), and the change latency's median over the
 * first and the last 25 changes. Run with --expose-gc (the npm script does).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as v8 from "node:v8";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../daemon/daemon";
import { heapGrowthPer1000Runs, type HeapSample } from "../daemon/metrics";
import { loadBalancerName, parseConfig, type Config } from "../model";
import { createNode } from "../test/support/e2e/cluster";
import { daemonOptions, startTestEnv, type TestEnv } from "../test/support/e2e/env";
import { eventually } from "../test/support/wait";
import {
  putBenchNode,
  QUIET_PERIOD_MS,
  startEmulatorProcess,
  stopEmulatorProcess,
  type EmulatorProcess,
} from "./scale";
import { elapsedMs, median, round, runAlone } from "./stats";

const CONFIG: Config = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "soak",
  clusterId: "50a4",
});
const SERVICES = 50;
const SAMPLE_EVERY = 50;
/** Runs before the slope counts: code tiers up and caches fill over the first ones. */
const WARM_UP_RUNS = 100;
const LATENCY_WINDOW = 25;
const MB = 1024 * 1024;
/**
 * Heap snapshots after these runs (counted over both phases; DCCM_SOAK_SNAPSHOTS, e.g. `150,400`)
 * into DCCM_SOAK_SNAPSHOT_DIR, for bench/heapDiff.ts. Only for a diagnosis: writing one takes
 * seconds and leaves RSS some 250 MB higher, so that run's RSS figures say nothing.
 */
const SNAPSHOTS_AT = (process.env.DCCM_SOAK_SNAPSHOTS ?? "")
  .split(",")
  .filter((entry) => entry !== "")
  .map(Number);
const SNAPSHOT_DIR = process.env.DCCM_SOAK_SNAPSHOT_DIR ?? process.cwd();

export interface SoakPhase {
  runs: number;
  heapMbPer1000Runs: number;
  rssMbPer1000Runs: number;
  heapMbAtStart: number;
  heapMbAtEnd: number;
  rssMbAtStart: number;
  rssMbAtEnd: number;
  changeLatencyStartMs: number;
  changeLatencyEndMs: number;
  /** changeLatencyEndMs / changeLatencyStartMs. */
  changeLatencyRatio: number;
  /** Each memory series' growth per 1,000 runs (MEMORY_SERIES), in MB: what the RSS's growth is made of. */
  mbPer1000Runs: Record<MemorySeries, number>;
}

/**
 * Where the process's memory is, to tell what RSS grows with: V8's heap (used, and the pages it
 * holds), memory outside it (Buffers, native handles), the code space, and the kernel's count of
 * anonymous pages (malloc's arenas among them) against file-backed ones (/proc/self/smaps_rollup).
 * The code space both as the pages V8 holds (`codeSpace`, in 256 KB steps) and as what its code
 * uses (`codeSpaceUsed`): functions optimised as they get hot grow the second by a few KB.
 */
export const MEMORY_SERIES = [
  "heapUsed",
  "heapTotal",
  "external",
  "arrayBuffers",
  "codeSpace",
  "codeSpaceUsed",
  "rss",
  "anonymous",
  "fileBacked",
] as const;
export type MemorySeries = (typeof MEMORY_SERIES)[number];

/** Pure: a field of /proc/self/smaps_rollup, in bytes (the kernel writes kB); undefined when absent. */
export function smapsField(rollup: string, field: string): number | undefined {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(rollup);
  return match === null ? undefined : Number(match[1]) * 1024;
}

function measure(): Record<MemorySeries, number> {
  global.gc?.();
  global.gc?.();
  const memory = process.memoryUsage();
  const rollup = fs.existsSync("/proc/self/smaps_rollup") ? fs.readFileSync("/proc/self/smaps_rollup", "utf8") : "";
  const anonymous = smapsField(rollup, "Anonymous") ?? 0;
  const code = v8.getHeapSpaceStatistics().find((space) => space.space_name === "code_space");
  return {
    heapUsed: memory.heapUsed,
    heapTotal: memory.heapTotal,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
    codeSpace: code?.space_size ?? 0,
    codeSpaceUsed: code?.space_used_size ?? 0,
    rss: memory.rss,
    anonymous,
    fileBacked: (smapsField(rollup, "Rss") ?? 0) - anonymous,
  };
}

async function sourceRanges(gce: EmulatorProcess, firewall: string): Promise<string> {
  const response = await fetch(`${gce.computeEndpoint}projects/${CONFIG.project}/global/firewalls/${firewall}`);
  if (!response.ok) return "";
  return JSON.stringify(((await response.json()) as { sourceRanges?: unknown }).sourceRanges);
}

/** `runs` changes, the i-th to Service `pick(i)`, each waited for in the emulator. */
async function phase(
  gce: EmulatorProcess,
  core: k8s.CoreV1Api,
  daemon: Daemon,
  firewalls: readonly string[],
  runs: number,
  pick: (i: number) => number,
  offset: number,
): Promise<SoakPhase> {
  const samples = new Map<MemorySeries, HeapSample[]>(MEMORY_SERIES.map((series) => [series, []]));
  const latencies: number[] = [];
  for (let i = 1; i <= runs; i++) {
    const service = pick(i);
    const n = offset + i;
    const range = `10.${(n >> 8) & 255}.${n & 255}.0/24`;
    const start = process.hrtime.bigint();
    await core.patchNamespacedService(
      { name: `svc-${service}`, namespace: "default", body: { spec: { loadBalancerSourceRanges: [range] } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      `svc-${service}'s change ${i} applied`,
      async () => ((await sourceRanges(gce, firewalls[service])) === JSON.stringify([range]) ? true : undefined),
      300_000,
      10,
    );
    latencies.push(elapsedMs(start));
    await daemon.idle();
    if (i % SAMPLE_EVERY === 0) {
      const sample = measure();
      process.stderr.write(
        `soak: run ${i}: ${MEMORY_SERIES.map((series) => `${series} ${round(sample[series] / MB, 2)}`).join(", ")} MB, change ${Math.round(latencies[latencies.length - 1])} ms\n`,
      );
      if (i >= WARM_UP_RUNS)
        for (const series of MEMORY_SERIES) samples.get(series)?.push({ runs: i, heapBytes: sample[series] });
    }
    if (SNAPSHOTS_AT.includes(offset + i)) {
      const file = v8.writeHeapSnapshot(path.join(SNAPSHOT_DIR, `soak-${offset + i}.heapsnapshot`));
      process.stderr.write(`soak: heap snapshot ${file}\n`);
    }
  }
  const start = median(latencies.slice(0, LATENCY_WINDOW));
  const end = median(latencies.slice(-LATENCY_WINDOW));
  const slope = (series: MemorySeries): number =>
    round((heapGrowthPer1000Runs(samples.get(series) ?? [], 0) ?? 0) / MB, 2);
  const first = (series: MemorySeries): number => round((samples.get(series)?.[0]?.heapBytes ?? 0) / MB, 1);
  const last = (series: MemorySeries): number => round((samples.get(series)?.at(-1)?.heapBytes ?? 0) / MB, 1);
  return {
    runs,
    heapMbPer1000Runs: slope("heapUsed"),
    rssMbPer1000Runs: slope("rss"),
    heapMbAtStart: first("heapUsed"),
    heapMbAtEnd: last("heapUsed"),
    rssMbAtStart: first("rss"),
    rssMbAtEnd: last("rss"),
    changeLatencyStartMs: round(start, 0),
    changeLatencyEndMs: round(end, 0),
    changeLatencyRatio: round(end / start, 2),
    mbPer1000Runs: Object.fromEntries(MEMORY_SERIES.map((series) => [series, slope(series)])) as Record<
      MemorySeries,
      number
    >,
  };
}

async function createServices(core: k8s.CoreV1Api): Promise<string[]> {
  const firewalls: string[] = [];
  for (let i = 0; i < SERVICES; i++) {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: `svc-${i}` }, spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] } },
    });
    firewalls.push(`k8s-fw-${loadBalancerName(created.metadata?.uid ?? "")}`);
  }
  return firewalls;
}

async function everyIngress(core: k8s.CoreV1Api): Promise<true | undefined> {
  const listed = await core.listNamespacedService({ namespace: "default" });
  return listed.items.every(
    (item) => item.spec?.type !== "LoadBalancer" || (item.status?.loadBalancer?.ingress ?? []).length > 0,
  )
    ? true
    : undefined;
}

export async function benchSoak(
  runs: number = Number(process.env.DCCM_SOAK_RUNS ?? "500"),
  rotationRuns: number = Number(process.env.DCCM_SOAK_ROTATION_RUNS ?? String(runs)),
): Promise<Record<string, number>> {
  const gce = await startEmulatorProcess();
  const env: TestEnv = await startTestEnv({}).catch(async (error: unknown) => {
    await stopEmulatorProcess(gce);
    throw error;
  });
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const daemon = new Daemon(
    daemonOptions(env, CONFIG, {
      pulumiEnv: { ...env.pulumiEnv, DCCM_GCE_EMULATOR_URL: gce.emulatorUrl },
      logLevel: "error",
      leaderElection: false,
      identity: "soak",
      resyncMs: QUIET_PERIOD_MS,
      driftMs: QUIET_PERIOD_MS,
    }),
  );
  try {
    await putBenchNode(gce, CONFIG.project);
    await createNode(core, "node-1", "us-central1-a");
    const firewalls = await createServices(core);
    await daemon.start(() => undefined);
    await eventually("every Service's ingress", () => everyIngress(core), 1_800_000, 500);
    await daemon.idle();
    const phases: [string, SoakPhase][] = [];
    // DCCM_SOAK_RUNS=0 or DCCM_SOAK_ROTATION_RUNS=0: one phase only (an A/B of a process setting needs one).
    if (runs > 0) {
      const one = await phase(gce, core, daemon, firewalls, runs, () => 0, 0);
      process.stderr.write(`soak: one Service: ${JSON.stringify(one)}\n`);
      phases.push(["soakOne", one]);
    }
    if (rotationRuns > 0) {
      const rotation = await phase(gce, core, daemon, firewalls, rotationRuns, (i) => i % SERVICES, runs);
      process.stderr.write(`soak: ${SERVICES} Services: ${JSON.stringify(rotation)}\n`);
      phases.push([`soak${SERVICES}`, rotation]);
    }
    const figures: Record<string, number> = {};
    for (const [prefix, result] of phases) {
      const { mbPer1000Runs, ...plain } = result;
      for (const [key, value] of Object.entries(plain)) figures[`${prefix}_${key}`] = value;
      for (const series of MEMORY_SERIES) figures[`${prefix}_${series}MbPer1000Runs`] = mbPer1000Runs[series];
    }
    return figures;
  } finally {
    await daemon.stop();
    await env.stop();
    await stopEmulatorProcess(gce);
  }
}

if (require.main === module) runAlone(() => benchSoak());

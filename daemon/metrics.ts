/**
 * Prometheus metrics of the daemon: its own (the Lease, the watches) and every subsystem's, each
 * class built by its owner's folder, all on one registry (the one /metrics serves). The node
 * controller registers its own on the same registry when it is built (controllers/node/metrics.ts).
 */
import { constants as perfConstants, PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";
import * as v8 from "node:v8";
import * as prom from "prom-client";

import { ControllerMetrics } from "../controllers/metrics";
import { DriftMetrics } from "../drift/metrics";
import { LeakMetrics } from "../leaks/metrics";
import { StackMetrics } from "../stacks/metrics";

export class DaemonMetrics {
  readonly registry: prom.Registry;
  readonly leader: prom.Gauge;
  readonly watchRestarts: prom.Counter<"resource">;
  readonly controllers: ControllerMetrics;
  readonly stacks: StackMetrics;
  readonly drift: DriftMetrics;
  readonly leaks: LeakMetrics;
  readonly heap: HeapMetrics;

  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.controllers = new ControllerMetrics(registry);
    this.stacks = new StackMetrics(registry);
    this.watchRestarts = new prom.Counter({
      name: "dccm_watch_restarts_total",
      help: "Watch restarts after an error, by resource.",
      labelNames: ["resource"],
      registers: [registry],
    });
    this.leader = new prom.Gauge({
      name: "dccm_leader",
      help: "1 while this replica holds the Lease.",
      registers: [registry],
    });
    this.leaks = new LeakMetrics(registry);
    this.drift = new DriftMetrics(registry);
    this.heap = new HeapMetrics(registry, () => engineRuns(this.stacks));
  }

  /**
   * The daemon process's metrics: dccm's, plus prom-client's defaults (`process_*`: CPU, memory, open
   * files, start time; `nodejs_*`: heap, event loop lag, GC, active handles). Only for the process
   * itself (`dccm daemon`): the defaults describe the whole process, and their collectors (an event
   * loop monitor, a GC observer) are started once per registry, so in-process tests' daemons leave them out.
   */
  static forProcess(): DaemonMetrics {
    const registry = new prom.Registry();
    prom.collectDefaultMetrics({ register: registry });
    const metrics = new DaemonMetrics(registry);
    metrics.heap.observeMajorGcs();
    return metrics;
  }
}

/** Engine runs so far, every stack and operation (`dccm_stack_runs_total`). */
async function engineRuns(stacks: StackMetrics): Promise<number> {
  return (await stacks.stackRuns.get()).values.reduce((sum, value) => sum + value.value, 0);
}

/** The live heap after one major GC, and the engine runs counted by then. */
export interface HeapSample {
  runs: number;
  heapBytes: number;
}

/** How many samples the growth is fitted over: at a major GC every ~15 runs, the last few thousand runs. */
export const HEAP_SAMPLES = 200;

/**
 * Pure: the least-squares slope of the heap over the engine runs, in bytes per 1,000 runs;
 * undefined until the samples span at least `minRuns` runs (a slope over a handful of runs is noise).
 */
export function heapGrowthPer1000Runs(samples: readonly HeapSample[], minRuns = 100): number | undefined {
  if (samples.length < 2) return undefined;
  const runs = samples.map((sample) => sample.runs);
  if (Math.max(...runs) - Math.min(...runs) < minRuns) return undefined;
  const meanRuns = runs.reduce((sum, value) => sum + value, 0) / samples.length;
  const meanHeap = samples.reduce((sum, sample) => sum + sample.heapBytes, 0) / samples.length;
  let covariance = 0;
  let variance = 0;
  for (const sample of samples) {
    covariance += (sample.runs - meanRuns) * (sample.heapBytes - meanHeap);
    variance += (sample.runs - meanRuns) ** 2;
  }
  return (covariance / variance) * 1000;
}

/**
 * What the runbook's DccmHeapGrowing reads: the live heap after the last major (mark-compact) GC,
 * which only grows if something is kept for good, its growth per 1,000 engine runs, and the most
 * the heap can reach. A daemon whose heap kept something per run would grow with every change and
 * every daily full refresh until its pod's memory limit kills it.
 */
export class HeapMetrics {
  readonly afterGc: prom.Gauge;
  readonly growthPer1000Runs: prom.Gauge;
  readonly limit: prom.Gauge;
  private samples: HeapSample[] = [];
  private observer: PerformanceObserver | undefined;
  /** The heap after the last major GC not yet sampled (with its run count, read at the next scrape). */
  private pending: number | undefined;

  constructor(
    registry: prom.Registry,
    private readonly runs: () => Promise<number>,
  ) {
    this.afterGc = new prom.Gauge({
      name: "dccm_heap_after_gc_bytes",
      help: "The JavaScript heap in use right after the last major (mark-compact) GC: what the daemon keeps.",
      registers: [registry],
    });
    this.growthPer1000Runs = new prom.Gauge({
      name: "dccm_heap_growth_bytes_per_1000_runs",
      help: `Least-squares growth of dccm_heap_after_gc_bytes per 1,000 engine runs (dccm_stack_runs_total), over the last ${HEAP_SAMPLES} major GCs; 0 until they span 100 runs.`,
      registers: [registry],
      collect: async () => {
        await this.sample();
      },
    });
    this.limit = new prom.Gauge({
      name: "dccm_heap_limit_bytes",
      help: "The most the process's heap can reach: V8's heap limit, or the container's memory limit when lower (0 in an in-process daemon).",
      registers: [registry],
    });
  }

  /** Records a sample: the heap after a major GC and the engine runs by then (kept: the last HEAP_SAMPLES). */
  record(sample: HeapSample): void {
    this.samples.push(sample);
    if (this.samples.length > HEAP_SAMPLES) this.samples.splice(0, this.samples.length - HEAP_SAMPLES);
    this.afterGc.set(sample.heapBytes);
    const growth = heapGrowthPer1000Runs(this.samples);
    this.growthPer1000Runs.set(growth ?? 0);
  }

  /** Samples the last major GC's heap, if one came since the last scrape, with the runs counted now. */
  private async sample(): Promise<void> {
    const heapBytes = this.pending;
    if (heapBytes === undefined) return;
    this.pending = undefined;
    this.record({ runs: await this.runs(), heapBytes });
  }

  /** Watches this process's major GCs (once per process: the observer sees every GC of it). */
  observeMajorGcs(): void {
    const constrained = process.constrainedMemory();
    const heapLimit = v8.getHeapStatistics().heap_size_limit;
    this.limit.set(constrained > 0 ? Math.min(heapLimit, constrained) : heapLimit);
    this.observer = new PerformanceObserver((list) => {
      if (list.getEntries().some(isMajorGc)) this.pending = v8.getHeapStatistics().used_heap_size;
    });
    this.observer.observe({ entryTypes: ["gc"] });
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = undefined;
  }
}

function isMajorGc(entry: PerformanceEntry): boolean {
  const { detail } = entry as { detail?: { kind?: number } };
  return detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR;
}

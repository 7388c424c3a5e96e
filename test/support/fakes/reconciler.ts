/**
 * A Reconciler over in-memory fakes, as cloud-provider's `newController()` builds a controller over
 * a fake cloud: every ReconcilerDeps field has a default, a test names only what it is about.
 */
import pino from "pino";
import { Reconciler, type ReconcilerDeps } from "../../../controllers/reconciler";
import type { Config } from "../../../model";
import type { NodeInfo, ServiceInfo } from "../../../model/types";
import { EventRecorder, type EventRecorderOptions } from "../../../runtime/events";
import { ControllerMetrics } from "../../../controllers/metrics";
import { StackMetrics } from "../../../stacks/metrics";
import { DesiredCache } from "../../../model/desiredCache";
import type { ServiceMeta } from "../../../watcher/informers";
import { CONFIG, gceNode } from "../builders";
import { MemoryEventSink } from "./events";
import { memoryStackRunner, type MemoryStackRunnerOptions } from "./stack-runner";

/** The cluster identity of the harness's reconciler (the kube-system Namespace's UID). */
export const CLUSTER_UID = "c1a55e00-0000-4000-8000-000000000001";

export interface ReconcilerHarnessOptions {
  config?: Config;
  /** The cache's Nodes: default one Node n1 in us-central1-a. */
  nodes?: NodeInfo[];
  services?: ServiceInfo[];
  /** The watcher's Service metadata. */
  metas?: ServiceMeta[];
  /** The in-memory runner's behaviour; it records into the harness's `calls`. */
  runner?: Omit<MemoryStackRunnerOptions, "calls">;
  /** Default one whose patches find the Event gone: each record creates an Event. */
  sink?: MemoryEventSink;
  recorder?: EventRecorderOptions;
  /** Any other field, given the cache, the call record and the recorder; applied last. */
  deps?: (harness: { cache: DesiredCache; calls: string[]; recorder: EventRecorder }) => Partial<ReconcilerDeps>;
}

export interface ReconcilerHarness {
  reconciler: Reconciler;
  /** Every runner and writer call, in order (and whatever `deps` adds). */
  calls: string[];
  sink: MemoryEventSink;
  /** The recorder the reconciler writes Events through (over `sink`). */
  recorder: EventRecorder;
  metrics: ControllerMetrics;
  metas: Map<string, ServiceMeta>;
  cache: DesiredCache;
  /** Every enqueue the reconciler asked for, as `stack` or `stack changed`. */
  enqueued: string[];
  abort: AbortController;
}

export function newReconciler(options: ReconcilerHarnessOptions = {}): ReconcilerHarness {
  const calls: string[] = [];
  const enqueued: string[] = [];
  const cache = new DesiredCache(options.config ?? CONFIG);
  cache.update({
    nodes: options.nodes ?? [gceNode("n1", "u1", "us-central1-a", [])],
    services: options.services ?? [],
  });
  const metas = new Map((options.metas ?? []).map((m) => [`${m.namespace}/${m.name}`, m]));
  const sink = options.sink ?? new MemoryEventSink({ expire: true });
  const logger = pino({ level: "silent" });
  const recorder = new EventRecorder(sink, logger, "dccm-service-controller", options.recorder);
  const metrics = new ControllerMetrics();
  const abort = new AbortController();
  const reconciler = new Reconciler({
    cache,
    watcher: { meta: (namespace, name) => metas.get(`${namespace}/${name}`) },
    runner: memoryStackRunner({ ...options.runner, calls }),
    writer: {
      async setFinalizer(namespace, name, present) {
        calls.push(`setFinalizer ${namespace}/${name} ${present}`);
        return true;
      },
      async setIngress(namespace, name, ips) {
        calls.push(`setIngress ${namespace}/${name} [${ips.join(",")}]`);
        return true;
      },
      async setAnnotation(namespace, name, key, value) {
        calls.push(`setAnnotation ${namespace}/${name} ${key}=${value}`);
        return true;
      },
    },
    events: recorder,
    metrics,
    stackMetrics: new StackMetrics(metrics.registry),
    logger,
    enqueue: (stack, flags) => enqueued.push(flags?.changed === true ? `${stack} changed` : stack),
    signal: abort.signal,
    fullRefreshMs: 3_600_000,
    parallelism: 4,
    driftJitter: 0,
    knownStacks: [],
    loadBalancerClasses: ["dccm.io/gce"],
    clusterUid: CLUSTER_UID,
    operationTimeoutMs: 600_000,
    ...options.deps?.({ cache, calls, recorder }),
  });
  return { reconciler, calls, sink, recorder, metrics, metas, cache, enqueued, abort };
}

/**
 * A Reconciler over in-memory fakes, as cloud-provider's `newController()` builds a controller over
 * a fake cloud: the cluster and Service controllers, their stack records and runs built as the
 * daemon's wiring builds them (daemon/wiring.ts newReconciler), every dependency with a default; a
 * test names only what it is about.
 */
import pino, { type Logger } from "pino";
import { Reconciler } from "../../../controllers/reconciler";
import { ClusterController, type ClusterEventDeps } from "../../../controllers/cluster/controller";
import type { ClusterObserver } from "../../../controllers/cluster/observer";
import {
  ServiceController,
  type AddressPinning,
  type ServiceControllerDeps,
} from "../../../controllers/service/controller";
import { addressId } from "../../../controllers/service/addressPins";
import { RepairGuard } from "../../../controllers/service/repairs";
import { FullRefreshTimers } from "../../../controllers/fullRefresh";
import { StackRecords } from "../../../controllers/stackRecords";
import { StackRuns } from "../../../controllers/stackRuns";
import type { Config } from "../../../model";
import type { NodeInfo, ServiceInfo } from "../../../model/types";
import { EventRecorder, type EventRecorderOptions } from "../../../runtime/events";
import type { EnqueueFlags } from "../../../runtime/queue";
import { ControllerMetrics } from "../../../controllers/metrics";
import { StackMetrics } from "../../../stacks/metrics";
import { DesiredCache } from "../../../model/desiredCache";
import type { ServiceMeta } from "../../../watcher/informers";
import { CONFIG, gceNode, PROJECT, REGION } from "../builders";
import { MemoryEventSink } from "./events";
import { memoryStackRunner, type MemoryStackRunnerOptions } from "./stack-runner";

/** The cluster identity of the harness's reconciler (the kube-system Namespace's UID). */
export const CLUSTER_UID = "c1a55e00-0000-4000-8000-000000000001";

/** What a test may set of the controllers' dependencies: each has a default. */
export interface FakeControllerDeps {
  /** Stacks found in the backend at start-up. */
  knownStacks: string[];
  loadBalancerClasses: readonly string[];
  clusterUid: string;
  fullRefreshMs: number;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  logger: Logger;
  watcher: ServiceControllerDeps["watcher"];
  writer: ServiceControllerDeps["writer"];
  ledger?: ServiceControllerDeps["ledger"];
  verifyRequestedIp?: ServiceControllerDeps["verifyRequestedIp"];
  firstUpGuard?: ServiceControllerDeps["firstUpGuard"];
  /** The reservation of a Service's IP before a run that may replace its forwarding rule; none unless set (such a run then fails). */
  addressPins?: ServiceControllerDeps["addressPins"];
  quotaGate?: ServiceControllerDeps["quotaGate"];
  negsListed?: ServiceControllerDeps["negsListed"];
  waitForNegs?: ServiceControllerDeps["waitForNegs"];
  manualFirewalls?: ServiceControllerDeps["manualFirewalls"];
  clusterEvents?: ClusterEventDeps;
  adoptionHeld?: ReadonlyMap<string, string>;
  /** The cluster callbacks a test listens to; the others do nothing, and instances are never asked about unless set. */
  observer?: Partial<ClusterObserver>;
}

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
  deps?: (harness: { cache: DesiredCache; calls: string[]; recorder: EventRecorder }) => Partial<FakeControllerDeps>;
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
  const deps: FakeControllerDeps = {
    knownStacks: [],
    loadBalancerClasses: ["dccm.io/gce"],
    clusterUid: CLUSTER_UID,
    fullRefreshMs: 3_600_000,
    enqueue: (stack, flags) => enqueued.push(flags?.changed === true ? `${stack} changed` : stack),
    logger,
    watcher: { meta: (namespace, name) => metas.get(`${namespace}/${name}`) },
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
    ...options.deps?.({ cache, calls, recorder }),
  };
  const reconciler = fakeReconciler(deps, {
    cache,
    runner: memoryStackRunner({ ...options.runner, calls }),
    recorder,
    metrics,
    signal: abort.signal,
  });
  return { reconciler, calls, sink, recorder, metrics, metas, cache, enqueued, abort };
}

/**
 * The reservation of a Service's IP before a run that may replace its forwarding rule, in memory:
 * each pin recorded in `calls` as `pin <key> <ip>` (then `fail`, when given, is thrown), `<lb>`'s
 * ID as daemon/wiring.ts derives it, and `held` as what every stack already holds.
 */
export function memoryAddressPins(
  calls: string[],
  options: { held?: ReadonlySet<string>; fail?: Error } = {},
): AddressPinning {
  return {
    async pin(service, ip) {
      calls.push(`pin ${service.key} ${ip}`);
      if (options.fail !== undefined) throw options.fail;
    },
    addressId: (service) => addressId(PROJECT, REGION, service),
    async held() {
      return options.held ?? new Set();
    },
  };
}

const IGNORED: ClusterObserver = {
  applied: () => undefined,
  failed: () => undefined,
  groupMembers: () => undefined,
  recordedFirewall: () => undefined,
  referencesChanged: () => undefined,
};

/** The controllers over the fakes, wired as daemon/wiring.ts wires them. */
function fakeReconciler(
  deps: FakeControllerDeps,
  fakes: {
    cache: DesiredCache;
    runner: ReturnType<typeof memoryStackRunner>;
    recorder: EventRecorder;
    metrics: ControllerMetrics;
    signal: AbortSignal;
  },
): Reconciler {
  const { cache, runner, recorder, metrics, signal } = fakes;
  const { logger, enqueue } = deps;
  const observer: ClusterObserver = { ...IGNORED, ...deps.observer };
  const records = new StackRecords(deps.knownStacks);
  const runs = new StackRuns({
    cache,
    runner,
    stackMetrics: new StackMetrics(metrics.registry),
    logger,
    signal,
    operationTimeoutMs: 600_000,
    clusterUid: deps.clusterUid,
  });
  const drift = new FullRefreshTimers({
    periodMs: deps.fullRefreshMs,
    jitter: 0,
    signal,
    enqueue,
    maxInFlight: 2,
    inFlightMs: 600_000,
  });
  const cluster = new ClusterController({
    cache,
    records,
    runs,
    drift,
    metrics,
    logger,
    enqueue,
    observer,
    ...(deps.clusterEvents !== undefined ? { clusterEvents: deps.clusterEvents } : {}),
    signal,
  });
  const services = new ServiceController({
    cache,
    watcher: deps.watcher,
    runner,
    writer: deps.writer,
    ...(deps.ledger !== undefined ? { ledger: deps.ledger } : {}),
    events: recorder,
    metrics,
    logger,
    signal,
    records,
    runs,
    drift,
    cluster,
    loadBalancerClasses: deps.loadBalancerClasses,
    observer,
    // Runs are planned first only with a runner that can preview (controllers/service/repairs.ts).
    ...(runs.plans ? { repairs: new RepairGuard({ runs, cache, events: recorder, metrics, logger }) } : {}),
    ...(deps.verifyRequestedIp !== undefined ? { verifyRequestedIp: deps.verifyRequestedIp } : {}),
    ...(deps.firstUpGuard !== undefined ? { firstUpGuard: deps.firstUpGuard } : {}),
    ...(deps.addressPins !== undefined ? { addressPins: deps.addressPins } : {}),
    ...(deps.quotaGate !== undefined ? { quotaGate: deps.quotaGate } : {}),
    ...(deps.negsListed !== undefined ? { negsListed: deps.negsListed } : {}),
    ...(deps.waitForNegs !== undefined ? { waitForNegs: deps.waitForNegs } : {}),
    ...(deps.manualFirewalls !== undefined ? { manualFirewalls: deps.manualFirewalls } : {}),
  });
  return new Reconciler({
    cluster,
    services,
    drift,
    metrics,
    logger,
    ...(deps.adoptionHeld !== undefined ? { adoptionHeld: deps.adoptionHeld } : {}),
  });
}

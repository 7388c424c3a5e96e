// The node controller: initializes Nodes that kubelets registered with
// `--cloud-provider=external` (taint node.cloudprovider.kubernetes.io/uninitialized), keeps their
// addresses current, deletes NotReady Nodes whose instance is definitively gone, and mirrors the
// cluster stack's route state into the NetworkUnavailable condition.
//
// Shape (cloud-provider's; docs/explanation/architecture.md#queue-and-backoff): Node watch events only enqueue the Node's name; one worker per name
// runs the three syncs (lifecycle, initialize, route condition) from the watch cache, never from
// the event payload. Each sync is a pure plan (plan.ts, decide.ts) and a thin executor (syncs.ts);
// this file owns the queue, the timers and the subscription to the Nodes.

import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Registry } from "prom-client";

import { EventRecorder } from "../../runtime/events";
import { KeyedQueue, OK, type QueueOptions, type ReconcileResult } from "../../runtime/queue";
import { resultObserver } from "../../runtime/results";
import {
  ClusterWatcher,
  type NodeSource,
  WATCH_RESTART_BACKOFF_BASE_MS,
  WATCH_RESTART_BACKOFF_MAX_MS,
} from "../../watcher/informers";
import type { ComputeApi } from "../../gce";
import type { PodCIDRStack } from "../../model";
import { NODE_CONFIG_DEFAULTS } from "./config";
import { type RouteStatus, unmanagedReason } from "./decide";
import { KubeNodeApi, type NodeApi } from "./kube";
import { InstanceLocator } from "./locate";
import { type NodeMetrics, nodeMetrics } from "./metrics";
import { type NodeSyncState, planInitialize, worst } from "./plan";
import {
  type SyncContext,
  syncAddresses,
  syncInitialize,
  syncLifecycle,
  syncPodCIDRs,
  syncRouteCondition,
} from "./syncs";

/** Route state per Node, implemented by the daemon from the cluster stack's outputs. */
export interface RouteStatusSource {
  routeStatus(nodeName: string): RouteStatus;
}

/**
 * Where the controller's Nodes come from and where its writes go: a kubeConfig provides both
 * defaults; without one, both are injected.
 */
export type NodeClusterAccess =
  | {
      /** Source of the default NodeApi and of the standalone Node watch. */
      readonly kubeConfig: KubeConfig;
      readonly api?: NodeApi;
      /**
       * The daemon's Node cache (its ClusterWatcher), already started by its owner: the
       * controller only subscribes. Without it the controller watches Nodes itself with a
       * nodes-only ClusterWatcher, made afresh on every start() (a fresh cache after a
       * leadership change).
       */
      readonly nodeSource?: NodeSource;
    }
  | { readonly kubeConfig?: undefined; readonly api: NodeApi; readonly nodeSource: NodeSource };

export type NodeControllerOptions = NodeClusterAccess & NodeControllerSettings;

export interface NodeControllerSettings {
  /** GCP project of the cluster's instances (name lookups and the aggregated list). */
  readonly project: string;
  /** Region whose zones are searched when a Node has no providerID. */
  readonly region: string;
  /** Zones to search by name; default: the region's zones from regions.get. */
  readonly zones?: readonly string[];
  readonly compute: ComputeApi;
  readonly routes?: RouteStatusSource;
  /** podCIDRSource cloud: Nodes get spec.podCIDRs from their VMs' alias IP ranges, for this stack. */
  readonly podCIDRStack?: PodCIDRStack;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Address refresh period. Default 5 min. */
  readonly addressRefreshMs?: number;
  /** How often NotReady Nodes are checked against Compute. Default 30 s. */
  readonly lifecycleCheckMs?: number;
  /** Concurrent reconciles. Default 10 (the work is I/O-bound). */
  readonly workers?: number;
  /** How long one aggregated instance list answers lookups. Default 10 s. */
  readonly lookupCacheMs?: number;
  /** Retry backoff per Node (doubles per failure). Defaults 1 s → 5 min. */
  readonly baseBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /**
   * Deadline of the standalone watch's Node list (default the watcher's 60 s). Without one, a list
   * on a blackholed connection never returns and start() never resolves. The watch itself has none.
   */
  readonly listTimeoutMs?: number;
  /** Event reportingInstance. Default: hostname. */
  readonly identity?: string;
  readonly now?: () => number;
}

/** source.component of our Node events. */
export const EVENT_COMPONENT = "dccm-node-controller";

/** What one start() set up; stop() takes it down. */
interface Running {
  readonly abort: AbortController;
  readonly ctx: SyncContext;
  readonly source: NodeSource;
  /** The nodes-only watch of standalone mode, owned by this run. */
  readonly ownWatch: ClusterWatcher | undefined;
  readonly unsubscribe: () => void;
  readonly tickers: NodeJS.Timeout[];
}

export class NodeController {
  private readonly opts: NodeControllerOptions;
  private readonly api: NodeApi;
  private readonly log: Logger;
  private readonly metrics: NodeMetrics;
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly addressRefreshMs: number;
  private readonly lifecycleCheckMs: number;
  private readonly queue: KeyedQueue;
  private readonly states = new Map<string, NodeSyncState>();
  private running: Running | undefined;

  constructor(opts: NodeControllerOptions) {
    this.opts = opts;
    this.api = opts.kubeConfig === undefined ? opts.api : (opts.api ?? new KubeNodeApi(opts.kubeConfig));
    this.log = opts.logger.child({ controller: "nodes" });
    this.metrics = nodeMetrics(opts.registry);
    this.now = opts.now ?? Date.now;
    this.events = new EventRecorder(this.api, this.log, EVENT_COMPONENT, {
      now: this.now,
      ...(opts.identity === undefined ? {} : { reportingInstance: opts.identity }),
    });
    this.addressRefreshMs = opts.addressRefreshMs ?? NODE_CONFIG_DEFAULTS.addressRefreshMs;
    this.lifecycleCheckMs = opts.lifecycleCheckMs ?? NODE_CONFIG_DEFAULTS.lifecycleCheckMs;
    const queueOpts: QueueOptions = {
      parallelism: opts.workers ?? NODE_CONFIG_DEFAULTS.workers,
      // Nothing runs before start(); the queue is started again after each stop().
      paused: true,
      onResult: resultObserver({ logger: this.log, keyField: "node", kindOf: () => "node", giveUpLevel: "error" }),
      ...(opts.baseBackoffMs === undefined ? {} : { backoffBaseMs: opts.baseBackoffMs }),
      ...(opts.maxBackoffMs === undefined ? {} : { backoffMaxMs: opts.maxBackoffMs }),
    };
    this.queue = new KeyedQueue((item) => this.reconcileSafely(item.key), queueOpts);
  }

  /** Starts reconciling. Resolves once the Node cache is filled (at once with a shared, started source). */
  async start(): Promise<void> {
    if (this.running !== undefined) {
      return;
    }
    const abort = new AbortController();
    const { source, ownWatch } = this.nodeSource(this.opts);
    const unsubscribe = source.subscribeNodes((event) => this.queue.enqueue(event.node.name));
    const tickers = [
      setInterval(() => this.enqueueAll(() => true), this.addressRefreshMs),
      // NotReady Nodes produce no events once the kubelet is gone, so they are polled.
      setInterval(() => this.enqueueAll((ready) => ready !== "True"), this.lifecycleCheckMs),
    ];
    for (const t of tickers) {
      t.unref();
    }
    this.running = { abort, ctx: this.syncContext(abort.signal), source, ownWatch, unsubscribe, tickers };
    this.queue.start();
    if (ownWatch !== undefined) {
      // Its initial list arrives as add events.
      await ownWatch.start();
    } else {
      this.enqueueAll(() => true);
    }
    this.log.info({ project: this.opts.project, region: this.opts.region }, "node controller started");
  }

  /** Stops reconciling, aborts Compute calls in flight and waits for running reconciles. */
  async stop(): Promise<void> {
    const running = this.running;
    if (running === undefined) {
      return;
    }
    this.running = undefined;
    for (const t of running.tickers) {
      clearInterval(t);
    }
    running.unsubscribe();
    running.abort.abort(new Error("node controller stopping"));
    await Promise.all([running.ownWatch?.stop(), this.queue.drain()]);
    this.api.close?.();
    this.states.clear();
    this.log.info("node controller stopped");
  }

  /** The cluster stack's routes changed: re-check every Node's NetworkUnavailable condition. */
  onRoutesChanged(): void {
    this.enqueueAll(() => true);
  }

  /** Resolves when no reconcile is queued or running (tests and the benchmark use it). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** The shared Node cache; else a nodes-only ClusterWatcher: the daemon's watch code and restart policy. */
  private nodeSource(access: NodeClusterAccess): { source: NodeSource; ownWatch: ClusterWatcher | undefined } {
    if (access.kubeConfig === undefined) {
      return { source: access.nodeSource, ownWatch: undefined };
    }
    if (access.nodeSource !== undefined) {
      return { source: access.nodeSource, ownWatch: undefined };
    }
    const ownWatch = new ClusterWatcher(access.kubeConfig, {
      resources: ["nodes"],
      restartBackoffBaseMs: WATCH_RESTART_BACKOFF_BASE_MS,
      restartBackoffMaxMs: WATCH_RESTART_BACKOFF_MAX_MS,
      ...(this.opts.listTimeoutMs === undefined ? {} : { listTimeoutMs: this.opts.listTimeoutMs }),
      onWatchRestart: (_resource, err, delayMs) =>
        this.log.warn({ err }, `node watch failed; restarting in ${delayMs} ms`),
    });
    return { source: ownWatch, ownWatch };
  }

  private syncContext(signal: AbortSignal): SyncContext {
    const locator = new InstanceLocator(this.opts.compute, {
      project: this.opts.project,
      region: this.opts.region,
      now: this.now,
      signal,
      ...(this.opts.zones === undefined ? {} : { zones: this.opts.zones }),
      ...(this.opts.lookupCacheMs === undefined ? {} : { ttlMs: this.opts.lookupCacheMs }),
    });
    return {
      api: this.api,
      locator,
      events: this.events,
      metrics: this.metrics,
      log: this.log,
      routes: this.opts.routes,
      podCIDRStack: this.opts.podCIDRStack,
      clock: () => ({
        now: this.now(),
        addressRefreshMs: this.addressRefreshMs,
        lifecycleCheckMs: this.lifecycleCheckMs,
      }),
    };
  }

  private enqueueAll(pred: (ready: string | undefined) => boolean): void {
    for (const node of this.running?.source.watchedNodes() ?? []) {
      if (pred(node.ready)) {
        this.queue.enqueue(node.name);
      }
    }
  }

  private async reconcileSafely(name: string): Promise<ReconcileResult> {
    const running = this.running;
    if (running === undefined) {
      return OK;
    }
    try {
      return await this.reconcile(running, name);
    } catch (err) {
      // Shutdown interrupted us; the next leader redoes the work. Any other failure: the queue
      // makes a throw a retry.
      if (running.abort.signal.aborted) return OK;
      throw err;
    }
  }

  /** The three syncs in order: a deleted Node needs nothing else, a tainted one only its initialization. */
  private async reconcile({ source, ctx }: Running, name: string): Promise<ReconcileResult> {
    const node = source.watchedNode(name);
    if (node === undefined) {
      this.states.delete(name);
      this.queue.forget(name);
      return OK;
    }
    if (node.deleting) {
      return OK;
    }
    const unmanaged = unmanagedReason(node);
    if (unmanaged !== undefined) {
      this.states.delete(name);
      this.log.debug({ node: name }, `leaving node alone: ${unmanaged}`);
      return OK;
    }
    const state = this.stateOf(name);
    const deleted = await syncLifecycle(ctx, node, state);
    if (deleted !== undefined) {
      return deleted;
    }
    const init = planInitialize(node, state, ctx.clock());
    if (init.kind !== "initialized") {
      return syncInitialize(ctx, node, state, init);
    }
    delete state.justInitialized;
    return worst(
      await syncAddresses(ctx, node, state),
      await syncRouteCondition(ctx, node),
      await syncPodCIDRs(ctx, node, state),
    );
  }

  private stateOf(name: string): NodeSyncState {
    let state = this.states.get(name);
    if (state === undefined) {
      state = {};
      this.states.set(name, state);
    }
    return state;
  }
}

/**
 * The main job: watch the cluster, `up` each stack on change and on a drift cadence, write Service
 * status, under one Lease so only one replica acts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { PulumiCommand } from "@pulumi/pulumi/automation";
import type { Logger } from "pino";
import { CLUSTER_STACK, serviceStackName, type Config } from "../model";
import { DesiredCache, parseServiceStack } from "../watcher/desiredCache";
import { ClusterWatcher } from "../watcher/informers";
import { EventRecorder } from "../controller/events";
import { KeepAliveAgents } from "../controller/kube";
import { KeyedQueue } from "../controller/queue";
import { DEFAULT_LEASE, LeaderElector } from "./leader";
import { DaemonMetrics } from "./metrics";
import { computeClientFromConfig, NodeController, type NodeConfig } from "../nodes";
import { Reconciler, describeError } from "./reconciler";
import { ClusterRouteStatus } from "./routes";
import { startProbeServer, type ProbeServer } from "./server";
import { ServiceWriter } from "./services";
import { clusterProjectName, localBackendUrl, StackRunner } from "./stacks";
import { clearStaleLocks, removeTruncatedAttrs } from "./locks";

export interface DaemonOptions {
  kubeConfig: k8s.KubeConfig;
  config: Config;
  logger: Logger;
  /** Where workspaces and (by default) the file:// backend live. */
  stateDir: string;
  backendUrl?: string;
  secretsProvider?: string;
  /** Extra environment for the pulumi CLI (the offline environment's, for instance). */
  pulumiEnv: Record<string, string>;
  listenHost: string;
  listenPort: number;
  parallelism: number;
  driftMs: number;
  driftJitter: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  resyncMs: number;
  /** Debounce of watch events before the desired state is recomputed. */
  debounceMs: number;
  leaderElection: boolean;
  identity: string;
  metrics?: DaemonMetrics;
  pulumiCommand?: PulumiCommand;
  onRunStart?: (stack: string, operation: "up" | "refresh" | "destroy") => void;
  /** Node initialization and lifecycle (issue 5); off when undefined. */
  nodes?: NodeConfig;
}

export class Daemon {
  readonly metrics: DaemonMetrics;
  private readonly abort = new AbortController();
  private watcher: ClusterWatcher | undefined;
  private queue: KeyedQueue | undefined;
  private reconciler: Reconciler | undefined;
  private cache: DesiredCache | undefined;
  private leader: LeaderElector | undefined;
  private server: ProbeServer | undefined;
  private synced = false;
  private debounce: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private nodeController: NodeController | undefined;

  constructor(private readonly options: DaemonOptions) {
    this.metrics = options.metrics ?? new DaemonMetrics();
  }

  get address(): ProbeServer["address"] | undefined {
    return this.server?.address;
  }

  /** Starts serving probes, waits for the Lease, then runs until stop(). `onLost` is told if leadership is lost. */
  async start(onLost: () => void): Promise<void> {
    const { options, metrics } = this;
    const logger = options.logger;
    this.server = await startProbeServer(options.listenHost, options.listenPort, metrics.registry, () => this.synced);
    logger.info({ address: this.server.address }, "serving /healthz, /readyz, /metrics");

    if (options.leaderElection) {
      this.leader = new LeaderElector(options.kubeConfig, { ...DEFAULT_LEASE, identity: options.identity }, logger);
      metrics.leader.set(0);
      await this.leader.acquire(() => {
        metrics.leader.set(0);
        onLost();
      });
    }
    metrics.leader.set(1);
    if (this.abort.signal.aborted) return;

    const backendUrl = options.backendUrl ?? localBackendUrl(path.join(options.stateDir, "backend"));
    if (backendUrl.startsWith("file://")) {
      const backendDir = backendUrl.slice("file://".length);
      fs.mkdirSync(backendDir, { recursive: true });
      // As the only leader, a lock left by a killed run of ours is stale.
      for (const removed of clearStaleLocks(backendDir)) logger.warn({ lock: removed }, "removed a stale stack lock");
      for (const removed of removeTruncatedAttrs(backendDir)) logger.warn({ file: removed }, "removed a truncated backend metadata file");
    }
    const runner = new StackRunner({
      backendUrl,
      ...(options.secretsProvider !== undefined ? { secretsProvider: options.secretsProvider } : {}),
      env: options.pulumiEnv,
      workDir: path.join(options.stateDir, "workspaces"),
      ...(options.pulumiCommand !== undefined ? { pulumiCommand: options.pulumiCommand } : {}),
      projectName: clusterProjectName(options.config.clusterId),
      onAdopted: (stack, urns) => logger.warn({ stack, urns }, "adopted resources a killed run created but did not record"),
      onCliUnguarded: (reason) => logger.warn({ reason }, "the pulumi CLI runs without a parent-death signal"),
    });
    const core = new KeepAliveAgents(options.kubeConfig).makeApiClient(k8s.CoreV1Api);
    const watcher = new ClusterWatcher(options.kubeConfig, {
      resyncMs: options.resyncMs,
      restartBackoffBaseMs: 1000,
      restartBackoffMaxMs: 60_000,
      onWatchRestart: (resource, error) => {
        metrics.watchRestarts.inc({ resource });
        logger.warn({ resource, err: describeError(error) }, "watch failed; restarting");
      },
    });
    this.watcher = watcher;
    const cache = new DesiredCache(options.config);
    this.cache = cache;
    const knownStacks = await runner.listStacks();
    const routeStatus = new ClusterRouteStatus(() => new Set(cache.desired().cluster.routes.map((route) => route.node)));
    if (options.nodes !== undefined) {
      this.nodeController = new NodeController({
        project: options.config.project,
        region: options.config.region,
        ...(options.nodes.zones !== undefined ? { zones: options.nodes.zones } : {}),
        compute: computeClientFromConfig({ ...(options.nodes.computeEndpoint !== undefined ? { computeEndpoint: options.nodes.computeEndpoint } : {}), registry: metrics.registry }),
        kubeConfig: options.kubeConfig,
        routes: routeStatus,
        logger,
        registry: metrics.registry,
        addressRefreshMs: options.nodes.addressRefreshMs,
        lifecycleCheckMs: options.nodes.lifecycleCheckMs,
        workers: options.nodes.workers,
        identity: options.identity,
      });
    }
    const reconciler = new Reconciler({
      cache,
      watcher,
      runner,
      writer: new ServiceWriter(core),
      events: new EventRecorder(core, logger, "dccm-service-controller"),
      metrics,
      logger,
      enqueue: (stack, flags) => this.queue?.enqueue(stack, flags),
      signal: this.abort.signal,
      driftMs: options.driftMs,
      driftJitter: options.driftJitter,
      knownStacks,
      onClusterApplied: (outputs) => {
        routeStatus.applied(outputs);
        this.nodeController?.onRoutesChanged();
      },
      ...(options.onRunStart !== undefined ? { onRunStart: options.onRunStart } : {}),
      onClusterFailed: (error) => {
        routeStatus.failed(describeError(error));
        this.nodeController?.onRoutesChanged();
      },
    });
    this.reconciler = reconciler;
    this.queue = new KeyedQueue((item) => reconciler.reconcile(item), {
      parallelism: options.parallelism,
      backoffBaseMs: options.backoffBaseMs,
      backoffMaxMs: options.backoffMaxMs,
      onDepth: (depth) => metrics.queueDepth.set(depth),
      onBackoff: (stacks) => metrics.backoffKeys.set(stacks),
      onResult: (item, result, failures) => {
        if (result.kind === "retry") metrics.retries.inc({ kind: item.key === CLUSTER_STACK ? "cluster" : "service" });
        if (result.kind === "retry") logger.warn({ stack: item.key, failures, err: describeError(result.error) }, "reconcile failed; will retry");
        else if (result.kind === "giveUp") logger.info({ stack: item.key, reason: result.reason }, "reconcile ended without retry");
        else if (result.kind === "retryAfter") logger.debug({ stack: item.key, ms: result.ms, reason: result.reason }, "reconcile deferred");
      },
    });

    await watcher.start();
    if (this.abort.signal.aborted) return;
    const changes = cache.update(watcher.snapshot());
    for (const change of changes) this.queue.enqueue(change.stack, { changed: true });
    // Stacks whose Service vanished while we were down: the reconciler destroys them.
    const wanted = new Set(cache.stacks());
    for (const stack of knownStacks) if (parseServiceStack(stack) !== undefined && !wanted.has(stack)) this.queue.enqueue(stack);
    await this.nodeController?.start();
    this.synced = true;
    logger.info({ nodes: watcher.nodeCount(), stacks: cache.stacks().length, known: knownStacks.length }, "initial lists synced");

    watcher.on("change", () => this.scheduleRecompute());
    watcher.on("serviceMeta", (key: string) => {
      const [namespace, name] = key.split("/");
      this.queue?.enqueue(serviceStackName(namespace, name));
    });
    watcher.on("resync", () => {
      // Everything is looked at again; stacks with unchanged desired state cost nothing.
      for (const stack of cache.stacks()) this.queue?.enqueue(stack);
    });
  }

  private scheduleRecompute(): void {
    if (this.debounce !== undefined) return;
    // Bursts of watch events cost one recompute; workers then read the cache, not the events.
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      if (this.watcher === undefined || this.queue === undefined || this.cache === undefined) return;
      for (const change of this.cache.update(this.watcher.snapshot())) this.queue.enqueue(change.stack, { changed: true });
    }, this.options.debounceMs);
  }

  /** For tests and benchmarks: resolves when no stack is queued or running. */
  async idle(): Promise<void> {
    await this.queue?.idle();
  }

  /** Stops taking work, aborts running `up`s (the CLI cancels cleanly and unlocks), releases the Lease. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort();
      if (this.debounce !== undefined) clearTimeout(this.debounce);
      this.reconciler?.stop();
      await Promise.all([this.queue?.drain(), this.nodeController?.stop()]);
      await this.watcher?.stop();
      await this.leader?.release();
      await this.server?.close();
    })();
    return this.stopping;
  }
}

export function defaultIdentity(): string {
  return `${os.hostname()}_${process.pid}`;
}


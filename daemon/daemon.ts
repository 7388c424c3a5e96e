/**
 * The main job: watch the cluster, `up` each stack on change and on a drift cadence, write Service
 * status, under one Lease so only one replica acts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as k8s from "@kubernetes/client-node";
import { DesiredCache } from "../model/desiredCache";
import type { ClusterWatcher } from "../watcher/informers";
import { EventRecorder } from "../runtime/events";
import { KeepAliveAgents } from "../runtime/kube";
import { DEFAULT_LEASE, LeaderElector } from "./leader";
import { DaemonMetrics } from "./metrics";
import { ClusterRouteStatus } from "../controllers/cluster/routes";
import { startProbeServer, type ProbeServer } from "./server";
import { StatusBook, type StatusDocument } from "../controllers/status";
import { ServiceWriter } from "../controllers/service/services";
import { DesiredDriver } from "../controllers/desiredDriver";
import { enqueueUnwanted } from "../controllers/unwanted";
import { adoptAtStart } from "../controllers/startAdoption";
import { clearStaleLocks, removeTruncatedAttrs } from "../stacks/locks";
import { GcsBackend } from "../stacks/gcs";
import { ConfigMapLedger, listServiceClasses } from "../leaks/ledger";
import { PhaseTimer } from "./phases";
import { readClusterUid } from "../watcher/identity";
import { AppliedBook } from "../drift/applied";
import type { DriftPass } from "../drift/scanner";
import { DaemonOptions } from "./options";
import { DAEMON_DEFAULTS } from "./settings";
import {
  ComputeClients,
  newDriftScanner,
  newLeakMonitor,
  enqueueEveryNegService,
  newNegCheck,
  newNegController,
  newNodeController,
  newQueue,
  newReconciler,
  newWatcher,
  startRunner,
  type Running,
  type StartParts,
  type Wiring,
} from "./wiring";

export class Daemon {
  readonly metrics: DaemonMetrics;
  /** What every stack last applied, for the drift pass by listing. */
  readonly applied = new AppliedBook();
  /** Aborted on stop and on a lost Lease: every run, check and timer of ours ends. */
  private readonly abort = new AbortController();
  /** The options, metrics, abort signal and Compute clients every builder reads (daemon/wiring.ts). */
  private readonly wiring: Wiring;
  /** What start-up has built so far; stop() ends whatever is there. */
  private readonly running: Running = {};
  /** Watch events and observations → desired state → the queue; knows the Service stack names. */
  private readonly desired: DesiredDriver;
  /** The rows of /status. */
  private readonly status: StatusBook;
  private leader: LeaderElector | undefined;
  private server: ProbeServer | undefined;
  private synced = false;
  private stopping: Promise<void> | undefined;
  private leadershipLost = false;
  /** Holds the Lease (or runs without leader election). */
  private leading = false;

  constructor(private readonly options: DaemonOptions) {
    this.metrics = options.metrics ?? new DaemonMetrics();
    this.wiring = {
      options,
      metrics: this.metrics,
      signal: this.abort.signal,
      compute: new ComputeClients(this.metrics),
    };
    this.desired = new DesiredDriver({
      cache: new DesiredCache(options.config),
      debounceMs: options.debounceMs,
      enqueue: (stack, flags) => this.running.queue?.enqueue(stack, flags),
      enqueueNegs: (serviceKey) => this.running.negController?.enqueue(serviceKey),
    });
    this.status = new StatusBook(undefined, (stack) => this.desired.stackKeys.serviceOf(stack));
  }

  /** The daemon's watch (test/e2e/leader.e2e.ts reads its cache during start-up). */
  private get watcher(): ClusterWatcher | undefined {
    return this.running.watcher;
  }

  get address(): ProbeServer["address"] | undefined {
    return this.server?.address;
  }

  /** Starts serving probes, waits for the Lease, then runs until stop(). `onLost` is told if leadership is lost. */
  async start(onLost: () => void): Promise<void> {
    const { options, running, desired } = this;
    // Since the process started: loading the modules and reading the configuration.
    const phases = new PhaseTimer();
    phases.mark("load");
    await this.serveAndLead(onLost);
    phases.mark("lease");
    if (this.abort.signal.aborted) return;

    const parts = await this.startParts(phases);
    const routeStatus = new ClusterRouteStatus(
      () => new Set(desired.cache.desired().cluster.routes.map((route) => route.node)),
    );
    running.nodeController = newNodeController(this.wiring, parts, routeStatus);
    // Stacks whose plan waits for their NEGs' first listing: the listing wakes them (waitForNegs).
    const negWaits = new Set<string>();
    running.negController = newNegController(this.wiring, desired, negWaits, (stack, flags) =>
      running.queue?.enqueue(stack, flags),
    );
    const reconciler = newReconciler(this.wiring, {
      parts,
      running,
      desired,
      status: this.status,
      routeStatus,
      fullRefreshMs: this.fullRefreshMs(),
      negWaits,
    });
    running.reconciler = reconciler;
    // Before anything runs: a cluster stack recording another cluster's identity stops the start.
    await reconciler.verifyClusterStack();
    await this.clearStaleLocks(parts.backendUrl);
    phases.mark("identityCheck");
    const queue = newQueue(this.wiring, reconciler, this.status);
    running.queue = queue;
    desired.attach(parts.watcher);

    await parts.watcher.start();
    phases.mark("lists");
    if (this.abort.signal.aborted) return;
    if (options.adopt !== undefined) await this.adopt(parts, options.adopt);
    desired.fill();
    await this.enqueueUnwanted(parts);
    if (this.abort.signal.aborted) return;
    await running.nodeController?.start();
    this.synced = true;
    phases.mark("enqueue");
    options.logger.info(
      {
        nodes: parts.watcher.nodeCount(),
        stacks: desired.cache.stacks().length,
        known: parts.knownStacks.length,
        phases: phases.phases,
      },
      "initial lists synced",
    );
    this.startPeriodic(parts);
  }

  /** The backend, the cluster's identity and clusterId claim, the runner and the stacks the backend holds (phases clusterUid, listStacks). */
  private async startParts(phases: PhaseTimer): Promise<StartParts> {
    const { options, running } = this;
    const backendUrl = this.prepareBackend();
    running.agents = new KeepAliveAgents(options.kubeConfig);
    const core = running.agents.makeApiClient(k8s.CoreV1Api);
    const clusterUid = await readClusterUid(options.kubeConfig);
    phases.mark("clusterUid");
    const ledger = new ConfigMapLedger(core, options.config.clusterId);
    // Before any stack or ledger entry: Services managed under another clusterId stop the start
    // (a mistyped clusterId would create a second set of resources for the same Nodes and Services).
    await ledger.claimClusterId(options.config.loadBalancerClasses, clusterUid, listServiceClasses(core));
    const runner = await startRunner(this.wiring, running, clusterUid, backendUrl, this.applied);
    const watcher = newWatcher(this.wiring);
    running.watcher = watcher;
    const events = new EventRecorder(core, options.logger, "dccm-service-controller");
    const knownStacks = await runner.listStacks();
    // A run killed between its workspace's creation and its stack's left the workspace alone.
    const stray = runner.removeStrayWorkspaces(knownStacks);
    if (stray.length > 0)
      options.logger.info({ workspaces: stray }, "removed the workspaces of stacks the backend does not have");
    phases.mark("listStacks");
    return { core, clusterUid, backendUrl, runner, watcher, events, ledger, knownStacks, adoptionHeld: new Map() };
  }

  /** The leak monitor and the drift pass by listing, when on; each waits for an idle queue before its first check. */
  private startPeriodic(parts: StartParts): void {
    const { options, running } = this;
    const settled = (): Promise<void> => this.idle();
    if (running.negController !== undefined) {
      running.negCheck = newNegCheck(this.wiring, this.desired, running.negController, settled);
      running.negCheck.start();
    }
    if (options.leakCheck !== undefined) {
      running.leakMonitor = newLeakMonitor(this.wiring, parts, {
        computeEndpoint: options.leakCheck.computeEndpoint,
        settled,
      });
      running.leakMonitor.start();
    }
    if (options.driftListing !== undefined) {
      running.driftScanner = newDriftScanner(
        this.wiring,
        this.applied,
        (stack) => running.queue?.enqueue(stack, { refresh: true }),
        {
          computeEndpoint: options.driftListing.computeEndpoint,
          settled,
        },
      );
      running.driftScanner.start();
    }
  }

  /** Without a drift pass by listing, every drift interval is a full refresh, as it was before there was one. */
  private fullRefreshMs(): number {
    const { options } = this;
    return options.driftListing === undefined
      ? options.driftMs
      : (options.fullRefreshMs ?? DAEMON_DEFAULTS.fullRefreshMs);
  }

  /**
   * Probes first, then the Lease. Ready: the leader once its lists are synced, or a standby whose
   * last Lease read succeeded (a new pod of a rolling update is usually one).
   */
  private async serveAndLead(onLost: () => void): Promise<void> {
    const { options, metrics } = this;
    this.server = await startProbeServer(
      options.listenHost,
      options.listenPort,
      metrics.registry,
      () => this.synced || (this.leader?.isStandingBy() ?? false),
      () => this.statusDocument(),
    );
    options.logger.info({ address: this.server.address }, "serving /healthz, /readyz, /metrics");
    if (options.leaderElection) {
      this.leader = new LeaderElector(
        options.kubeConfig,
        { ...DEFAULT_LEASE, identity: options.identity },
        options.logger,
      );
      metrics.leader.set(0);
      await this.leader.acquire(() => {
        // Nothing of ours may act past this point: stop first, tell the caller after.
        this.loseLeadership();
        onLost();
      });
    }
    metrics.leader.set(1);
    this.leading = !this.leadershipLost;
  }

  statusDocument(): StatusDocument {
    const quotas = this.status.quotas();
    return {
      leader: this.leading,
      synced: this.synced,
      stacks: this.status.list(),
      ...(quotas !== undefined ? { quotas } : {}),
    };
  }

  /** The backend's URL; a file:// backend is created, and metadata files a kill truncated are removed. */
  private prepareBackend(): string {
    const { options } = this;
    const backendUrl = options.backendUrl;
    if (backendUrl.startsWith("file://")) {
      const backendDir = backendUrl.slice("file://".length);
      fs.mkdirSync(backendDir, { recursive: true, mode: 0o700 });
      for (const removed of removeTruncatedAttrs(backendDir))
        options.logger.warn({ file: removed }, "removed a truncated backend metadata file");
    }
    return backendUrl;
  }

  /**
   * As the only leader of the cluster the stacks belong to, a lock left by a killed run of ours is
   * stale (called after the identity check: another cluster's daemon must not break our locks).
   */
  private async clearStaleLocks(backendUrl: string): Promise<void> {
    const { logger, pulumiEnv } = this.options;
    if (backendUrl.startsWith("file://")) {
      for (const removed of clearStaleLocks(backendUrl.slice("file://".length)))
        logger.warn({ lock: removed }, "removed a stale stack lock");
      return;
    }
    // The bucket's objects, as the CLI sees them (its environment: STORAGE_EMULATOR_HOST, credentials).
    const bucket = GcsBackend.fromUrl(backendUrl, { ...process.env, ...pulumiEnv });
    if (bucket === undefined) return;
    let removed: string[];
    try {
      removed = await bucket.clearStaleLocks();
    } catch (error) {
      // Not fatal: a stack still locked fails its runs with the CLI's "currently locked" error, which names the lock.
      logger.warn({ err: error, backend: backendUrl }, "could not remove stale stack locks from the bucket");
      return;
    }
    for (const lock of removed) logger.warn({ lock }, "removed a stale stack lock");
  }

  /** `--adopt` (controllers/startAdoption.ts), before anything else runs; refused stacks go into adoptionHeld. */
  private async adopt(parts: StartParts, adopt: { allowReplace: boolean; computeEndpoint?: string }): Promise<void> {
    await adoptAtStart({
      compute: this.wiring.compute.for(adopt.computeEndpoint),
      runner: parts.runner,
      services: new ServiceWriter(parts.core),
      config: this.options.config,
      logger: this.options.logger,
      source: parts.watcher,
      events: parts.events,
      signal: this.abort.signal,
      allowReplace: adopt.allowReplace,
      held: parts.adoptionHeld,
    });
  }

  /** Backend stacks the model does not want, and finalized Services with no stack (controllers/unwanted.ts). */
  private async enqueueUnwanted(parts: StartParts): Promise<void> {
    const { options, metrics, desired } = this;
    await enqueueUnwanted({
      knownStacks: parts.knownStacks,
      wanted: desired.cache.stacks(),
      serviceMetas: parts.watcher.serviceMetas(),
      stackKeys: desired.stackKeys,
      recordedService: (stack) => parts.runner.recordedService(stack),
      events: parts.events,
      clusterUid: parts.clusterUid,
      logger: options.logger,
      metrics: metrics.controllers,
      maxOrphanDestroys: options.maxOrphanDestroys,
      confirmOrphanDestroys: options.confirmOrphanDestroys,
      enqueue: (stack) => this.running.queue?.enqueue(stack),
    });
  }

  /**
   * The Lease is gone (a standby may already act): abort running `up`s, stop the queue taking
   * work and report leader 0, synchronously, before anyone else is told. stop() then waits for
   * the aborted runs.
   */
  private loseLeadership(): void {
    if (this.leadershipLost) return;
    this.leadershipLost = true;
    this.leading = false;
    this.abort.abort();
    this.desired.stop();
    const { running } = this;
    running.reconciler?.stop();
    running.queue
      ?.drain()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, "draining the queue after losing leadership failed"),
      );
    running.negController?.queue
      .drain()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, "draining the NEG queue after losing leadership failed"),
      );
    // Node initialization writes to Nodes: also only the leader's job.
    running.nodeController
      ?.stop()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, "stopping the node controller after losing leadership failed"),
      );
    this.metrics.leader.set(0);
  }

  /** For tests and benchmarks: the NEG controller's pass of the drift interval, now (await idle() for it). */
  checkNegs(): void {
    if (this.running.negController !== undefined) enqueueEveryNegService(this.desired, this.running.negController);
  }

  /** For tests and benchmarks: one drift pass by listing now (undefined without one, or when it failed). */
  async driftPass(): Promise<DriftPass | undefined> {
    return this.running.driftScanner?.pass();
  }

  /** For tests and benchmarks: the stacks waiting out a backoff or a retryAfter, which idle() does not wait for. */
  waitingStacks(): string[] {
    return this.running.queue?.waiting() ?? [];
  }

  /**
   * For tests and benchmarks: resolves when no stack and no NEG sync is queued or running (a
   * stack's apply enqueues its NEGs' sync; a sync's tell may change a stack).
   */
  async idle(): Promise<void> {
    await this.running.queue?.idle();
    await this.running.negController?.queue.idle();
    await this.running.queue?.idle();
  }

  /**
   * Stops taking work, aborts running `up`s (the CLI cancels cleanly and unlocks), releases the
   * Lease, and closes everything that could keep the process alive: watches, API connections,
   * timers and the probe server's connections.
   */
  stop(): Promise<void> {
    const { running } = this;
    this.stopping ??= (async () => {
      this.abort.abort();
      this.desired.stop();
      running.reconciler?.stop();
      await Promise.all([
        running.queue?.drain(),
        running.negController?.queue.drain(),
        running.negCheck?.stop(),
        running.nodeController?.stop(),
        running.watcher?.stop(),
        running.leakMonitor?.stop(),
        running.driftScanner?.stop(),
      ]);
      await this.leader?.release();
      this.leading = false;
      running.agents?.destroy();
      await this.server?.close();
      // No run is left to use it.
      await running.sharedProvider?.stop();
      // Last: no run is left, so the reaper only checks that nothing of ours outlives the daemon.
      running.reaper?.stop();
    })();
    return this.stopping;
  }
}

export function defaultIdentity(): string {
  return `${os.hostname()}_${process.pid}`;
}

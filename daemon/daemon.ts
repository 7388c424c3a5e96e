/**
 * The main job: watch the cluster, `up` each stack on change and on a drift cadence, write Service
 * status, under one Lease so only one replica acts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { ANNOTATION_BACKEND, instanceGroupName, isServiceStack, serviceStackName, type ObservedCloud, stackKind, LB_FINALIZER } from "../model";
import { DesiredCache } from "../watcher/desiredCache";
import { ServiceStackKeys } from "../stacks/stackKeys";
import { ClusterWatcher } from "../watcher/informers";
import { EventRecorder } from "../runtime/events";
import { KeepAliveAgents, kubeError, kubeStatusCode } from "../runtime/kube";
import { KeyedQueue } from "../runtime/queue";
import { DEFAULT_LEASE, LeaderElector } from "./leader";
import { DaemonMetrics } from "../runtime/metrics";
import { computeClientFromConfig, NodeController, type ComputeClient } from "../controllers/node";
import { describeError } from "../runtime/errors";
import { resultObserver } from "../runtime/results";
import { Reconciler, type ReconcilerDeps } from "../controllers/reconciler";
import { leaseTarget } from "../controllers/cluster/events";
import type { ClusterEventDeps } from "../controllers/cluster/controller";
import { withReferences, type ClusterReferences } from "../controllers/stackRuns";
import { ClusterRouteStatus } from "../controllers/cluster/routes";
import { startProbeServer, type ProbeServer } from "./server";
import { StatusBook, type StatusDocument } from "../controllers/status";
import { ServiceWriter } from "../controllers/service/services";
import { localBackendUrl, StackRunner } from "../stacks/runner";
import { clusterProjectName } from "../stacks/project";
import { clearStaleLocks, removeTruncatedAttrs } from "../stacks/locks";
import { holdOrphanDestroys } from "../model/removal";
import { ConfigMapLedger, listServiceClasses } from "../leaks/ledger";
import { adoptStock } from "../adopt/adopter";
import { existingResources } from "../controllers/service/existingLoadBalancer";
import { daemonLeakMonitor, type LeakMonitor } from "../leaks/monitor";
import { InstancePresence, sameInstances } from "../controllers/cluster/instances";
import { computeAddressReader, requestedIpVerifier } from "../controllers/service/requestedIp";
import { InstanceLocator } from "../controllers/node/locate";
import { PhaseTimer } from "./phases";
import { readClusterUid } from "../watcher/identity";
import { AppliedBook, appliedOf } from "../drift/applied";
import { DriftScanner, type DriftPass } from "../drift/scanner";
import { newProcessMarker, PROCESS_OWNER_VARIABLE, Reaper } from "../stacks/reaper";
import { SHARED_PROVIDER_BACKOFF_BASE_MS, SHARED_PROVIDER_BACKOFF_MAX_MS, SHARED_PROVIDER_HEALTHY_AFTER_MS, WATCH_RESTART_BACKOFF_BASE_MS, WATCH_RESTART_BACKOFF_MAX_MS } from "./config";
import { SharedProvider } from "../stacks/sharedProvider";
import { DaemonOptions } from "./options";

/** The full refresh of every stack once a day, when drift passes by listing run every drift interval. */
export const DEFAULT_FULL_REFRESH_MS = 24 * 3_600_000;

/** What start-up builds once and its steps share. */
interface StartParts {
  core: k8s.CoreV1Api;
  clusterUid: string;
  backendUrl: string;
  runner: StackRunner;
  watcher: ClusterWatcher;
  cache: DesiredCache;
  events: EventRecorder;
  ledger: ConfigMapLedger;
  knownStacks: string[];
}

/** The reconciler's checks through Compute; none without Compute access. */
type ComputeChecks = Pick<ReconcilerDeps, "observeInstances" | "verifyRequestedIp">;

export class Daemon {
  readonly metrics: DaemonMetrics;
  private readonly abort = new AbortController();
  private watcher: ClusterWatcher | undefined;
  private queue: KeyedQueue | undefined;
  private reconciler: Reconciler | undefined;
  /** What every stack last applied, for the drift pass by listing. */
  readonly applied = new AppliedBook();
  private driftScanner: DriftScanner | undefined;
  private cache: DesiredCache | undefined;
  private leader: LeaderElector | undefined;
  private server: ProbeServer | undefined;
  private synced = false;
  private debounce: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private nodeController: NodeController | undefined;
  /** Set once the first snapshot went into the DesiredCache; watch events before it are covered by it. */
  private cacheFilled = false;
  /** What the applied Service stacks point at, as last told (onReferencesChanged). */
  private references: ClusterReferences = { zones: [], legacyHealthCheck: false };
  /** The cluster stack recorded its node health-check firewall above deny rules (told before its first run since the start). */
  private clusterFirewallAboveDeny = false;
  private agents: KeepAliveAgents | undefined;
  private leadershipLost = false;
  private leakMonitor: LeakMonitor | undefined;
  /** Kills this daemon's pulumi processes if it dies (daemon/reaper.ts). */
  private reaper: Reaper | undefined;
  /** The one provider plugin every engine run attaches to (`--shared-provider`). */
  private sharedProvider: SharedProvider | undefined;
  private readonly computeClients = new Map<string, ComputeClient>();
  /** Service stacks back to their Service, for names shortened to fit Pulumi's limit. */
  private readonly stackKeys = new ServiceStackKeys();
  /** The rows of /status. */
  private readonly status = new StatusBook(undefined, (stack) => this.stackKeys.serviceOf(stack));
  /** Stacks `--adopt` refused at this start → why (the reconciler leaves them alone). */
  private readonly adoptionHeld = new Map<string, string>();
  /** Holds the Lease (or runs without leader election). */
  private leading = false;

  constructor(private readonly options: DaemonOptions) {
    this.metrics = options.metrics ?? new DaemonMetrics();
  }

  get address(): ProbeServer["address"] | undefined {
    return this.server?.address;
  }

  /** Starts serving probes, waits for the Lease, then runs until stop(). `onLost` is told if leadership is lost. */
  async start(onLost: () => void): Promise<void> {
    const { options } = this;
    // Since the process started: loading the modules and reading the configuration.
    const phases = new PhaseTimer();
    phases.mark("load");
    await this.serveAndLead(onLost);
    phases.mark("lease");
    if (this.abort.signal.aborted) return;

    const backendUrl = this.prepareBackend();
    this.agents = new KeepAliveAgents(options.kubeConfig);
    const core = this.agents.makeApiClient(k8s.CoreV1Api);
    const clusterUid = await readClusterUid(options.kubeConfig);
    phases.mark("clusterUid");
    const ledger = new ConfigMapLedger(core, options.config.clusterId);
    // Before any stack or ledger entry: Services managed under another clusterId stop the start
    // (a mistyped clusterId would create a second set of resources for the same Nodes and Services).
    await ledger.claimClusterId(options.config.loadBalancerClasses, clusterUid, listServiceClasses(core));
    const runner = await this.startRunner(clusterUid, backendUrl);
    const watcher = this.newWatcher();
    const cache = new DesiredCache(options.config);
    this.cache = cache;
    const events = new EventRecorder(core, options.logger, "dccm-service-controller");
    const knownStacks = await runner.listStacks();
    // A run killed between its workspace's creation and its stack's left the workspace alone.
    const stray = runner.removeStrayWorkspaces(knownStacks);
    if (stray.length > 0) options.logger.info({ workspaces: stray }, "removed the workspaces of stacks the backend does not have");
    phases.mark("listStacks");
    const parts: StartParts = { core, clusterUid, backendUrl, runner, watcher, cache, events, ledger, knownStacks };
    const routeStatus = new ClusterRouteStatus(() => new Set(cache.desired().cluster.routes.map((route) => route.node)));
    this.nodeController = this.newNodeController(parts, routeStatus);
    const reconciler = this.newReconciler(parts, routeStatus, this.computeChecks(parts));
    this.reconciler = reconciler;
    // Before anything runs: a cluster stack recording another cluster's identity stops the start.
    await reconciler.verifyClusterStack();
    this.clearStaleLocks(backendUrl);
    phases.mark("identityCheck");
    this.queue = this.newQueue(reconciler);
    this.listen(watcher, cache);

    await watcher.start();
    phases.mark("lists");
    if (this.abort.signal.aborted) return;
    if (options.adopt !== undefined) await this.adopt(parts, options.adopt);
    const changes = this.updateCache(cache, watcher);
    this.cacheFilled = true;
    for (const change of changes) this.queue.enqueue(change.stack, { changed: true });
    await this.enqueueUnwanted(knownStacks, watcher, events, clusterUid, runner);
    if (this.abort.signal.aborted) return;
    await this.nodeController?.start();
    this.synced = true;
    phases.mark("enqueue");
    options.logger.info({ nodes: watcher.nodeCount(), stacks: cache.stacks().length, known: knownStacks.length, phases: phases.phases }, "initial lists synced");
    if (options.leakCheck !== undefined) this.startLeakMonitor(parts, options.leakCheck.computeEndpoint);
    if (options.driftListing !== undefined) this.startDriftScanner(options.driftListing.computeEndpoint);
  }

  /** Without a drift pass by listing, every drift interval is a full refresh, as it was before there was one. */
  private fullRefreshMs(): number {
    const { options } = this;
    return options.driftListing === undefined ? options.driftMs : (options.fullRefreshMs ?? DEFAULT_FULL_REFRESH_MS);
  }

  private startDriftScanner(computeEndpoint: string | undefined): void {
    const { options, metrics } = this;
    this.driftScanner = new DriftScanner({
      compute: this.computeFor(computeEndpoint),
      project: options.config.project,
      region: options.config.region,
      book: this.applied,
      refresh: (stack) => this.queue?.enqueue(stack, { refresh: true }),
      metrics,
      logger: options.logger,
      periodMs: options.driftMs,
      jitter: options.driftJitter,
      signal: this.abort.signal,
      settled: () => this.idle(),
    });
    this.driftScanner.start();
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
      this.leader = new LeaderElector(options.kubeConfig, { ...DEFAULT_LEASE, identity: options.identity }, options.logger);
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
    return { leader: this.leading, synced: this.synced, stacks: this.status.list() };
  }

  /** The backend's URL; a file:// backend is created, and metadata files a kill truncated are removed. */
  private prepareBackend(): string {
    const { options } = this;
    const backendUrl = options.backendUrl ?? localBackendUrl(path.join(options.stateDir, "backend"));
    if (backendUrl.startsWith("file://")) {
      const backendDir = backendUrl.slice("file://".length);
      fs.mkdirSync(backendDir, { recursive: true, mode: 0o700 });
      for (const removed of removeTruncatedAttrs(backendDir)) options.logger.warn({ file: removed }, "removed a truncated backend metadata file");
    }
    return backendUrl;
  }

  /**
   * As the only leader of the cluster the stacks belong to, a lock left by a killed run of ours is
   * stale (called after the identity check: another cluster's daemon must not break our locks).
   */
  private clearStaleLocks(backendUrl: string): void {
    if (!backendUrl.startsWith("file://")) return;
    for (const removed of clearStaleLocks(backendUrl.slice("file://".length))) this.options.logger.warn({ lock: removed }, "removed a stale stack lock");
  }

  /**
   * The reaper first, then the shared provider if asked for, then the runner: every pulumi process
   * (the shared provider's too) carries the reaper's marker.
   */
  private async startRunner(clusterUid: string, backendUrl: string): Promise<StackRunner> {
    const { options } = this;
    const logger = options.logger;
    const marker = newProcessMarker();
    this.reaper = new Reaper({
      marker,
      onExit: (code, signal) => logger.warn({ code, signal }, "the reaper of pulumi processes exited; starting it again"),
    });
    this.reaper.start();
    // Every pulumi process (the CLI, and the plugins it hands its environment on to) carries
    // the marker the reaper kills by if the daemon dies.
    const env = { ...options.pulumiEnv, [PROCESS_OWNER_VARIABLE]: marker };
    const attach = options.sharedProvider === true ? await this.startSharedProvider(env) : {};
    return new StackRunner({
      clusterUid,
      backendUrl,
      ...(options.secretsProvider !== undefined ? { secretsProvider: options.secretsProvider } : {}),
      env: { ...env, ...attach },
      workDir: path.join(options.stateDir, "workspaces"),
      ...(options.pulumiCommand !== undefined ? { pulumiCommand: options.pulumiCommand } : {}),
      projectName: clusterProjectName(options.config.clusterId),
      onRecovered: (stack, urns) => logger.warn({ stack, urns }, "recovered resources a killed run created but did not record"),
      onCheckpointUnsure: (stack, reason) => logger.info({ stack, reason }, "reading the stack through the pulumi CLI"),
      onOutputsMissing: (stack) => logger.warn({ stack }, "a successful up recorded no stack outputs; running it once more"),
      onTerminate: (stack, operation, afterMs) => logger.warn({ stack, operation, afterMs }, "a cancelled pulumi run did not end; terminating it"),
      onApplied: (stack, states) => this.applied.set(stack, states === undefined ? undefined : appliedOf(states)),
      onLateRunError: (error) => logger.warn({ err: describeError(error) }, "a pulumi run that had ended failed to reach its engine; ignored"),
    });
  }

  /** Starts the shared provider; resolves with the environment attaching the engines to it. */
  private async startSharedProvider(env: Record<string, string>): Promise<Record<string, string>> {
    const logger = this.options.logger;
    this.sharedProvider = new SharedProvider({
      env,
      backoffBaseMs: SHARED_PROVIDER_BACKOFF_BASE_MS,
      backoffMaxMs: SHARED_PROVIDER_BACKOFF_MAX_MS,
      healthyAfterMs: SHARED_PROVIDER_HEALTHY_AFTER_MS,
      onStart: (pid, port) => logger.info({ pid, port }, "shared provider started"),
      onExit: (reason, delayMs) => {
        this.metrics.sharedProviderRestarts.inc();
        logger.warn({ reason, delayMs }, "the shared provider exited; starting it again");
      },
    });
    return this.sharedProvider.start();
  }

  private newWatcher(): ClusterWatcher {
    const { options, metrics } = this;
    this.watcher = new ClusterWatcher(options.kubeConfig, {
      resyncMs: options.resyncMs,
      restartBackoffBaseMs: WATCH_RESTART_BACKOFF_BASE_MS,
      restartBackoffMaxMs: WATCH_RESTART_BACKOFF_MAX_MS,
      onWatchRestart: (resource, error) => {
        metrics.watchRestarts.inc({ resource });
        options.logger.warn({ resource, err: describeError(error) }, "watch failed; restarting");
      },
    });
    return this.watcher;
  }

  /**
   * `--adopt`: what `dccm adopt` does, on the daemon's own stacks, before anything else runs; the
   * runs after it find the adopted stacks applied. A stack that is not adopted (a replace not
   * allowed, a failure) is logged, told on its Service and held until the next start (adoptionHeld).
   */
  private async adopt(parts: StartParts, adopt: { allowReplace: boolean; computeEndpoint?: string }): Promise<void> {
    const { options } = this;
    const report = await adoptStock(
      {
        compute: this.computeFor(adopt.computeEndpoint),
        runner: parts.runner,
        services: new ServiceWriter(parts.core),
        config: options.config,
        log: (line) => options.logger.info(line),
        finalizersOf: (namespace, name) => parts.watcher.meta(namespace, name)?.finalizers,
      },
      parts.watcher.snapshot(),
      { dryRun: false, allowReplace: adopt.allowReplace, signal: this.abort.signal },
    );
    const services = parts.watcher.snapshot().services;
    for (const stack of report.stacks) {
      const fields = { stack: stack.stack, imported: stack.imported.length, changes: stack.changes.map((change) => `${change.op} ${change.name}`) };
      if (stack.refused === undefined) {
        options.logger.info(fields, "stack adopted");
        continue;
      }
      options.logger.error({ ...fields, reason: stack.refused }, "stack not adopted");
      this.adoptionHeld.set(stack.stack, stack.refused);
      const info = services.find((service) => serviceStackName(service.namespace, service.name) === stack.stack);
      if (info !== undefined) await parts.events.record({ kind: "Service", namespace: info.namespace, name: info.name, uid: info.uid }, "Warning", "AdoptionRefused", `Not adopted: ${stack.refused}`);
    }
    await this.watchedPins(parts.watcher, report.pinned);
  }

  /**
   * The desired state after adoption must see the `dccm.io/backend: target-pool` pins it wrote:
   * from a cache without them the first runs would move those Services to backend services (a new
   * forwarding rule each). Waits for the watch to deliver them (at most 60 s; past it the start fails).
   */
  private async watchedPins(watcher: ClusterWatcher, pinned: readonly string[]): Promise<void> {
    const missing = (): string[] => {
      const annotated = new Set(
        watcher
          .snapshot()
          .services.filter((service) => service.annotations[ANNOTATION_BACKEND] === "target-pool")
          .map((service) => `${service.namespace}/${service.name}`),
      );
      return pinned.filter((key) => !annotated.has(key));
    };
    if (missing().length === 0) return;
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (missing().length > 0) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`the watch did not show the target-pool pins of ${missing().join(", ")} within 60 s`));
      }, 60_000);
      const done = (): void => {
        clearTimeout(timer);
        watcher.off("change", check);
      };
      watcher.on("change", check);
    });
  }

  /** One Compute client per endpoint: the node controller, the daemon's own checks and the leak check share its connections and its dccm_compute_calls_total. */
  private computeFor(endpoint: string | undefined): ComputeClient {
    const key = endpoint ?? "";
    let client = this.computeClients.get(key);
    if (client === undefined) {
      client = computeClientFromConfig({ ...(endpoint !== undefined ? { computeEndpoint: endpoint } : {}), registry: this.metrics.registry });
      this.computeClients.set(key, client);
    }
    return client;
  }

  /** With Compute access (the node controller on): what the reconciler asks GCE before runs. */
  private computeChecks(parts: StartParts): ComputeChecks {
    const { options, metrics } = this;
    if (options.nodes === undefined) return {};
    const logger = options.logger;
    const compute = this.computeFor(options.nodes.computeEndpoint);
    const verifyRequestedIp = requestedIpVerifier(
      computeAddressReader(compute),
      { project: options.config.project, region: options.config.region },
      (service, error) => logger.warn({ service, err: describeError(error) }, "could not check spec.loadBalancerIP against Compute; the run goes on"),
      this.abort.signal,
    );
    const presence = new InstancePresence({
      project: options.config.project,
      locator: new InstanceLocator(compute, {
        project: options.config.project,
        region: options.config.region,
        signal: this.abort.signal,
        ...(options.nodes.zones !== undefined ? { zones: options.nodes.zones } : {}),
      }),
      events: parts.events,
      logger,
      instanceGroupName: instanceGroupName(options.config.clusterId),
    });
    const cache = parts.cache;
    return {
      verifyRequestedIp,
      observeInstances: async () => {
        const previous = cache.lastObserved().goneInstances;
        const gone = await presence.check(cache.locatedNodes(), previous);
        metrics.nodesWithoutInstance.set(gone.length);
        if (!sameInstances(gone, previous)) this.observe({ ...cache.lastObserved(), goneInstances: gone });
      },
    };
  }

  /** The guard before a Service stack's first up: GETs of its load balancer's names, and a read of its stack when one exists. */
  private firstUpGuard(parts: StartParts): Pick<ReconcilerDeps, "firstUpGuard"> {
    const { options } = this;
    if (options.firstUpGuard === undefined) return {};
    const compute = this.computeFor(options.firstUpGuard.computeEndpoint);
    return {
      firstUpGuard: {
        existing: existingResources(compute, options.config.project, options.config.region),
        held: (stack, scope) => parts.runner.heldResourceIds(stack, scope),
      },
    };
  }

  /** Node initialization, lifecycle and route conditions, on the daemon's Node watch; undefined when off. */
  private newNodeController(parts: StartParts, routeStatus: ClusterRouteStatus): NodeController | undefined {
    const { options, metrics } = this;
    if (options.nodes === undefined) return undefined;
    return new NodeController({
      project: options.config.project,
      region: options.config.region,
      ...(options.nodes.zones !== undefined ? { zones: options.nodes.zones } : {}),
      compute: this.computeFor(options.nodes.computeEndpoint),
      kubeConfig: options.kubeConfig,
      // The daemon's one Node watch, started before the controller.
      nodeSource: parts.watcher,
      routes: routeStatus,
      logger: options.logger,
      registry: metrics.registry,
      addressRefreshMs: options.nodes.addressRefreshMs,
      lifecycleCheckMs: options.nodes.lifecycleCheckMs,
      workers: options.nodes.workers,
      identity: options.identity,
    });
  }

  private newReconciler(parts: StartParts, routeStatus: ClusterRouteStatus, checks: ComputeChecks): Reconciler {
    const { options, metrics } = this;
    const { cache } = parts;
    // As the Service controller's records start: the stacks known now are unread until each is read.
    this.references = { zones: [], legacyHealthCheck: false, ...(parts.knownStacks.some(isServiceStack) ? { unread: true as const } : {}) };
    return new Reconciler({
      cache,
      watcher: parts.watcher,
      runner: parts.runner,
      writer: new ServiceWriter(parts.core),
      ledger: parts.ledger,
      events: parts.events,
      metrics,
      logger: options.logger,
      enqueue: (stack, flags) => this.queue?.enqueue(stack, flags),
      signal: this.abort.signal,
      fullRefreshMs: this.fullRefreshMs(),
      driftJitter: options.driftJitter,
      parallelism: options.parallelism,
      knownStacks: parts.knownStacks,
      loadBalancerClasses: options.config.loadBalancerClasses,
      clusterUid: parts.clusterUid,
      operationTimeoutMs: options.operationTimeoutMs,
      status: this.status,
      adoptionHeld: this.adoptionHeld,
      serviceOf: (stack) => this.stackKeys.serviceOf(stack),
      ...checks,
      ...this.firstUpGuard(parts),
      onReferencesChanged: (references) => {
        this.references = references;
        this.observe(withReferences(cache.lastObserved(), references, this.clusterFirewallAboveDeny));
      },
      onGroupMembers: (members) => this.observe({ ...cache.lastObserved(), groupMembers: members }),
      onRecordedFirewall: (aboveDeny) => {
        this.clusterFirewallAboveDeny = aboveDeny;
        this.observe(withReferences(cache.lastObserved(), this.references, aboveDeny));
      },
      onClusterApplied: (outputs) => {
        routeStatus.applied(outputs);
        this.nodeController?.onRoutesChanged();
      },
      ...(options.onRunStart !== undefined ? { onRunStart: options.onRunStart } : {}),
      clusterEvents: this.clusterEvents(parts),
      onClusterFailed: (error) => {
        routeStatus.failed(describeError(error));
        this.nodeController?.onRoutesChanged();
      },
    });
  }

  /** The cluster stack's Events: routes on their Node, the rest on the Lease (daemon/clusterEvents.ts). */
  private clusterEvents(parts: StartParts): ClusterEventDeps {
    const { options } = this;
    const leases = this.agents?.makeApiClient(k8s.CoordinationV1Api);
    const where = { namespace: DEFAULT_LEASE.namespace, name: DEFAULT_LEASE.name };
    return {
      recorder: parts.events,
      clusterName: options.config.clusterName,
      nodes: () => parts.watcher.snapshot().nodes,
      lease: leaseTarget(
        where,
        async () => {
          try {
            return (await leases?.readNamespacedLease(where))?.metadata?.uid;
          } catch (error) {
            // Without leader election there may be no Lease: the events still list in kube-system.
            if (kubeStatusCode(error) === 404) return undefined;
            throw kubeError(`read Lease ${where.namespace}/${where.name}`, error);
          }
        },
        (error) => options.logger.warn({ err: describeError(error) }, "could not read the Lease the cluster stack's events are about"),
      ),
    };
  }

  private newQueue(reconciler: Reconciler): KeyedQueue {
    const { options, metrics } = this;
    return new KeyedQueue((item) => reconciler.reconcile(item), {
      parallelism: options.parallelism,
      backoffBaseMs: options.backoffBaseMs,
      backoffMaxMs: options.backoffMaxMs,
      onDepth: (depth) => metrics.queueDepth.set(depth),
      onBackoff: (stacks) => metrics.backoffKeys.set(stacks),
      onResult: resultObserver({
        logger: options.logger,
        keyField: "stack",
        kindOf: stackKind,
        // An invalid Service waits for its owner: routine, told on the Service already.
        giveUpLevel: "info",
        reconciles: metrics.reconciles,
        retries: metrics.retries,
        record: (stack, result) => this.status.reconciled(stack, result),
      }),
    });
  }

  /**
   * Listen before the first list: a change that lands anywhere between the lists and the end of
   * start-up must reach the DesiredCache. Until the cache is first filled the handlers do nothing,
   * because the first fill reads the watcher's cache as it is then.
   */
  private listen(watcher: ClusterWatcher, cache: DesiredCache): void {
    watcher.on("change", () => this.scheduleRecompute());
    watcher.on("serviceMeta", (key: string) => {
      if (!this.cacheFilled) return;
      const [namespace, name] = key.split("/");
      this.queue?.enqueue(this.stackKeys.stackOf(namespace, name));
    });
    watcher.on("resync", () => {
      if (!this.cacheFilled) return;
      // Recompute, so a change whose event went missing is acted on; then look at every stack
      // again (stacks with unchanged desired state cost nothing).
      this.recompute();
      for (const stack of cache.stacks()) this.queue?.enqueue(stack);
    });
  }

  private startLeakMonitor(parts: StartParts, computeEndpoint: string | undefined): void {
    const { options, metrics } = this;
    this.leakMonitor = daemonLeakMonitor({
      config: options.config,
      compute: this.computeFor(computeEndpoint),
      runner: parts.runner,
      ledger: parts.ledger,
      snapshot: () => parts.watcher.snapshot(),
      events: parts.events,
      metrics,
      logger: options.logger,
      clusterUid: parts.clusterUid,
      periodMs: options.driftMs,
      jitter: options.driftJitter,
      signal: this.abort.signal,
      settled: () => this.idle(),
    });
    this.leakMonitor.start();
  }

  /**
   * Stacks in the backend whose Service the model no longer wants (changed or deleted while we were
   * down): the reconciler decides what goes, except that destroys for absent Services are held when
   * there are too many at once (holdOrphanDestroys).
   */
  private async enqueueUnwanted(knownStacks: string[], watcher: ClusterWatcher, events: EventRecorder, clusterUid: string, runner: StackRunner): Promise<void> {
    const { options, metrics } = this;
    const wanted = new Set(this.cache?.stacks() ?? []);
    const present = new Set(watcher.serviceMetas().map((meta) => this.stackKeys.stackOf(meta.namespace, meta.name)));
    const unwanted: string[] = [];
    for (const stack of knownStacks.filter((name) => isServiceStack(name) && !wanted.has(name))) {
      if (present.has(stack) || this.stackKeys.serviceOf(stack) !== undefined) {
        unwanted.push(stack);
        continue;
      }
      // A shortened name whose Service is gone: the stack says which it was, and is destroyed as that Service's.
      const ref = await runner.recordedService(stack).catch((error: unknown) => {
        options.logger.warn({ stack, err: describeError(error) }, "reading which Service a stack was made for failed; left until the next start");
        return null;
      });
      if (ref === undefined) options.logger.warn({ stack }, "a Service stack records no Service (and so holds no resource); left as it is");
      if (ref === undefined || ref === null) continue;
      this.stackKeys.stackOf(ref.namespace, ref.name);
      unwanted.push(stack);
    }
    const absent = unwanted.filter((stack) => !present.has(stack));
    const serviceStacks = knownStacks.filter(isServiceStack).length;
    const held = holdOrphanDestroys(absent.length, serviceStacks, options.maxOrphanDestroys, options.confirmOrphanDestroys);
    metrics.destroysHeld.set(held ? absent.length : 0);
    if (held) {
      const message =
        `${absent.length} of ${serviceStacks} Service stacks have no Service in this cluster; destroying none of them until an operator confirms ` +
        `with --confirm-orphan-destroys ${absent.length} (an empty or wrong cluster looks the same as every Service deleted)`;
      options.logger.error({ stacks: absent }, message);
      await events.record({ kind: "Namespace", namespace: "kube-system", name: "kube-system", uid: clusterUid }, "Warning", "OrphanDestroysHeld", message);
    }
    const heldSet = new Set(held ? absent : []);
    for (const stack of unwanted) if (!heldSet.has(stack)) this.queue?.enqueue(stack);
    // A Service with our finalizer but no stack and no desired state (deleted while we were down,
    // its stack gone): nothing else would ever look at it, and it would stay Terminating.
    const known = new Set(knownStacks);
    for (const meta of watcher.serviceMetas()) {
      const stack = this.stackKeys.stackOf(meta.namespace, meta.name);
      if (meta.finalizers.includes(LB_FINALIZER) && !wanted.has(stack) && !known.has(stack)) this.queue?.enqueue(stack);
    }
  }

  /** The desired state of the watcher's snapshot; every Service's stack name remembered (stackKeys). */
  private updateCache(cache: DesiredCache, watcher: ClusterWatcher): ReturnType<DesiredCache["update"]> {
    const snapshot = watcher.snapshot();
    for (const service of snapshot.services) this.stackKeys.stackOf(service.namespace, service.name);
    return cache.update(snapshot);
  }

  private scheduleRecompute(): void {
    if (this.debounce !== undefined) return;
    // Bursts of watch events cost one recompute; workers then read the cache, not the events.
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.recompute();
    }, this.options.debounceMs);
  }

  private recompute(): void {
    if (!this.cacheFilled || this.watcher === undefined || this.queue === undefined || this.cache === undefined) return;
    for (const change of this.updateCache(this.cache, this.watcher)) this.queue.enqueue(change.stack, { changed: true });
  }

  /** A new observation of GCE or of the applied stacks: the stacks whose desired state it changes run. */
  private observe(observed: ObservedCloud): void {
    if (this.cache === undefined) return;
    for (const change of this.cache.observe(observed)) this.queue?.enqueue(change.stack, { changed: true });
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
    if (this.debounce !== undefined) clearTimeout(this.debounce);
    this.debounce = undefined;
    this.reconciler?.stop();
    this.queue?.drain().catch((error: unknown) => this.options.logger.error({ err: error }, "draining the queue after losing leadership failed"));
    // Node initialization writes to Nodes: also only the leader's job.
    this.nodeController?.stop().catch((error: unknown) => this.options.logger.error({ err: error }, "stopping the node controller after losing leadership failed"));
    this.metrics.leader.set(0);
  }

  /** For tests and benchmarks: one drift pass by listing now (undefined without one, or when it failed). */
  async driftPass(): Promise<DriftPass | undefined> {
    return this.driftScanner?.pass();
  }

  /** For tests and benchmarks: resolves when no stack is queued or running. */
  async idle(): Promise<void> {
    await this.queue?.idle();
  }

  /**
   * Stops taking work, aborts running `up`s (the CLI cancels cleanly and unlocks), releases the
   * Lease, and closes everything that could keep the process alive: watches, API connections,
   * timers and the probe server's connections.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort();
      if (this.debounce !== undefined) clearTimeout(this.debounce);
      this.debounce = undefined;
      this.reconciler?.stop();
      await Promise.all([this.queue?.drain(), this.nodeController?.stop(), this.watcher?.stop(), this.leakMonitor?.stop(), this.driftScanner?.stop()]);
      await this.leader?.release();
      this.leading = false;
      this.agents?.destroy();
      await this.server?.close();
      // No run is left to use it.
      await this.sharedProvider?.stop();
      // Last: no run is left, so the reaper only checks that nothing of ours outlives the daemon.
      this.reaper?.stop();
    })();
    return this.stopping;
  }
}

export function defaultIdentity(): string {
  return `${os.hostname()}_${process.pid}`;
}

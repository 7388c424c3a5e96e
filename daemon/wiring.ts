/**
 * The daemon's wiring: each subsystem built from the daemon's options and the parts start-up
 * already has. Construction only; the order they are built and started in is daemon/daemon.ts's.
 */
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import {
  CLUSTER_STACK,
  instanceGroupName,
  networkProjectOf,
  parseServiceKey,
  stackKind,
  type ServiceDesired,
} from "../model";
import { ClusterWatcher } from "../watcher/informers";
import type { EventRecorder } from "../runtime/events";
import { kubeError, kubeStatusCode, type KeepAliveAgents } from "../runtime/kube";
import { KeyedQueue, type EnqueueFlags } from "../runtime/queue";
import type { DaemonMetrics } from "./metrics";
import { describeError } from "../runtime/errors";
import { resultObserver } from "../runtime/results";
import { computeClientFromConfig, NodeController, type ComputeClient } from "../controllers/node";
import { Reconciler } from "../controllers/reconciler";
import { leaseTarget } from "../controllers/cluster/events";
import { ClusterController, type ClusterEventDeps } from "../controllers/cluster/controller";
import {
  DesiredClusterObserver,
  type ClusterObserver,
  type DesiredClusterObserverDeps,
} from "../controllers/cluster/observer";
import { ServiceController, type ServiceControllerDeps } from "../controllers/service/controller";
import { RepairGuard } from "../controllers/service/repairs";
import { FullRefreshTimers } from "../controllers/fullRefresh";
import { StackRecords } from "../controllers/stackRecords";
import { StackRuns } from "../controllers/stackRuns";
import type { ClusterRouteStatus } from "../controllers/cluster/routes";
import type { StatusBook } from "../controllers/status";
import { ServiceWriter } from "../controllers/service/services";
import { existingResources } from "../controllers/service/existingLoadBalancer";
import { QuotaGate } from "../controllers/service/quotaGate";
import { ManualFirewalls } from "../controllers/service/manualFirewalls";
import { readProjectQuotas } from "../gce/quotas";
import { InstancePresence } from "../controllers/cluster/instances";
import { computeAddressReader, requestedIpVerifier } from "../controllers/service/requestedIp";
import { AddressPinner, addressId } from "../controllers/service/addressPins";
import { AddressNameReader } from "../controllers/service/addressNames";
import { InstanceLocator } from "../controllers/node/locate";
import type { DesiredDriver } from "../controllers/desiredDriver";
import { NegController } from "../controllers/neg/controller";
import { negKey } from "../components/links";
import { Periodic } from "../runtime/periodic";
import { StackRunner } from "../stacks/runner";
import { clusterProjectName } from "../stacks/project";
import { newProcessMarker, PROCESS_OWNER_VARIABLE, Reaper } from "../stacks/reaper";
import { SharedProvider } from "../stacks/sharedProvider";
import type { ConfigMapLedger } from "../leaks/ledger";
import { daemonLeakMonitor, type LeakMonitor } from "../leaks/monitor";
import { appliedOf, type AppliedBook } from "../drift/applied";
import { DriftScanner } from "../drift/scanner";
import { DEFAULT_LEASE } from "./leader";
import {
  SHARED_PROVIDER_BACKOFF_BASE_MS,
  SHARED_PROVIDER_BACKOFF_MAX_MS,
  SHARED_PROVIDER_HEALTHY_AFTER_MS,
  WATCH_RESTART_BACKOFF_BASE_MS,
  WATCH_RESTART_BACKOFF_MAX_MS,
} from "./config";
import type { DaemonOptions } from "./options";

/** What every builder reads. */
export interface Wiring {
  options: DaemonOptions;
  metrics: DaemonMetrics;
  /** Aborted on stop and when the Lease is lost. */
  signal: AbortSignal;
  compute: ComputeClients;
}

/** What start-up builds once and its steps share. */
export interface StartParts {
  core: k8s.CoreV1Api;
  clusterUid: string;
  backendUrl: string;
  runner: StackRunner;
  watcher: ClusterWatcher;
  events: EventRecorder;
  ledger: ConfigMapLedger;
  knownStacks: string[];
  /** Stacks `--adopt` refused at this start → why (the reconciler leaves them alone). */
  adoptionHeld: Map<string, string>;
}

/** What start-up has built so far: stop() (and a lost Lease) ends whatever is there. */
export interface Running {
  agents?: KeepAliveAgents;
  /** Kills this daemon's pulumi processes if it dies (stacks/reaper.ts). */
  reaper?: Reaper;
  /** The one provider plugin every engine run attaches to (`--shared-provider`). */
  sharedProvider?: SharedProvider;
  watcher?: ClusterWatcher;
  queue?: KeyedQueue;
  reconciler?: Reconciler;
  nodeController?: NodeController;
  negController?: NegController;
  /** Every `neg` Service's NEGs looked at again each drift interval (their endpoints are in no stack to refresh). */
  negCheck?: Periodic;
  leakMonitor?: LeakMonitor;
  driftScanner?: DriftScanner;
}

/** One Compute client per endpoint: the node controller, the daemon's own checks and the leak check share its connections and its dccm_compute_calls_total. */
export class ComputeClients {
  private readonly clients = new Map<string, ComputeClient>();

  constructor(private readonly metrics: DaemonMetrics) {}

  for(endpoint: string | undefined): ComputeClient {
    const key = endpoint ?? "";
    let client = this.clients.get(key);
    if (client === undefined) {
      client = computeClientFromConfig({
        ...(endpoint !== undefined ? { computeEndpoint: endpoint } : {}),
        registry: this.metrics.registry,
      });
      this.clients.set(key, client);
    }
    return client;
  }
}

/**
 * The reaper first, then the shared provider if asked for, then the runner: every pulumi process
 * (the shared provider's too) carries the reaper's marker. Each is in `running` as soon as it exists.
 */
export async function startRunner(
  w: Wiring,
  running: Running,
  clusterUid: string,
  backendUrl: string,
  applied: AppliedBook,
): Promise<StackRunner> {
  const { options } = w;
  const logger = options.logger;
  const marker = newProcessMarker();
  running.reaper = new Reaper({
    marker,
    onExit: (code, signal) => logger.warn({ code, signal }, "the reaper of pulumi processes exited; starting it again"),
  });
  running.reaper.start();
  // Every pulumi process (the CLI, and the plugins it hands its environment on to) carries
  // the marker the reaper kills by if the daemon dies.
  const env = { ...options.pulumiEnv, [PROCESS_OWNER_VARIABLE]: marker };
  const attach = options.sharedProvider === true ? await startSharedProvider(w, running, env) : {};
  return new StackRunner({
    clusterUid,
    backendUrl,
    ...(options.secretsProvider !== undefined ? { secretsProvider: options.secretsProvider } : {}),
    env: { ...env, ...attach },
    workDir: path.join(options.stateDir, "workspaces"),
    ...(options.pulumiCommand !== undefined ? { pulumiCommand: options.pulumiCommand } : {}),
    projectName: clusterProjectName(options.config.clusterId),
    onRecovered: (stack, urns) =>
      logger.warn({ stack, urns }, "recovered resources a killed run created but did not record"),
    onCheckpointUnsure: (stack, reason) => logger.info({ stack, reason }, "reading the stack through the pulumi CLI"),
    onOutputsMissing: (stack) =>
      logger.warn({ stack }, "a successful up recorded no stack outputs; running it once more"),
    onTerminate: (stack, operation, afterMs) =>
      logger.warn({ stack, operation, afterMs }, "a cancelled pulumi run did not end; terminating it"),
    onApplied: (stack, states) => applied.set(stack, states === undefined ? undefined : appliedOf(states)),
    onLateRunError: (error) =>
      logger.warn({ err: describeError(error) }, "a pulumi run that had ended failed to reach its engine; ignored"),
  });
}

/** Starts the shared provider; resolves with the environment attaching the engines to it. */
async function startSharedProvider(
  w: Wiring,
  running: Running,
  env: Record<string, string>,
): Promise<Record<string, string>> {
  const logger = w.options.logger;
  running.sharedProvider = new SharedProvider({
    env,
    backoffBaseMs: SHARED_PROVIDER_BACKOFF_BASE_MS,
    backoffMaxMs: SHARED_PROVIDER_BACKOFF_MAX_MS,
    healthyAfterMs: SHARED_PROVIDER_HEALTHY_AFTER_MS,
    onStart: (pid, port) => logger.info({ pid, port }, "shared provider started"),
    onExit: (reason, delayMs) => {
      w.metrics.stacks.sharedProviderRestarts.inc();
      logger.warn({ reason, delayMs }, "the shared provider exited; starting it again");
    },
  });
  return running.sharedProvider.start();
}

export function newWatcher(w: Wiring): ClusterWatcher {
  const { options, metrics } = w;
  return new ClusterWatcher(options.kubeConfig, {
    resyncMs: options.resyncMs,
    restartBackoffBaseMs: WATCH_RESTART_BACKOFF_BASE_MS,
    restartBackoffMaxMs: WATCH_RESTART_BACKOFF_MAX_MS,
    onWatchRestart: (resource, error) => {
      metrics.watchRestarts.inc({ resource });
      options.logger.warn({ resource, err: describeError(error) }, "watch failed; restarting");
    },
  });
}

/** With Compute access (the node controller on): a changed spec.loadBalancerIP checked against GCE before its up. */
function requestedIpCheck(w: Wiring): Pick<ServiceControllerDeps, "verifyRequestedIp"> {
  const { options } = w;
  if (options.nodes === undefined) return {};
  const logger = options.logger;
  return {
    verifyRequestedIp: requestedIpVerifier(
      computeAddressReader(w.compute.for(options.nodes.computeEndpoint)),
      { project: options.config.project, region: options.config.region },
      (service, error) =>
        logger.warn(
          { service, err: describeError(error) },
          "could not check spec.loadBalancerIP against Compute; the run goes on",
        ),
      w.signal,
    ),
  };
}

/** With Compute access: the addresses Services name in networking.gke.io/load-balancer-ip-addresses, read into the observation. */
function addressNameReads(w: Wiring, r: ReconcilerWiring): Pick<ServiceControllerDeps, "addressNames"> {
  const { options } = w;
  const endpoint = options.firstUpGuard?.computeEndpoint ?? options.nodes?.computeEndpoint;
  if (endpoint === undefined) return {};
  const { project, region } = options.config;
  return {
    addressNames: new AddressNameReader({
      compute: w.compute.for(endpoint),
      where: { project, region },
      annotations: (namespace, name) => r.parts.watcher.service(namespace, name)?.annotations,
      observed: () => r.desired.cache.lastObserved().addressNames,
      amend: (addressNames) => r.desired.amend({ addressNames }),
    }),
  };
}

/** With Compute access (the node controller on): which Nodes' instances are gone, asked before a cluster run. */
function instanceChecks(w: Wiring, parts: StartParts): Pick<DesiredClusterObserverDeps, "instances"> {
  const { options, metrics } = w;
  if (options.nodes === undefined) return {};
  const compute = w.compute.for(options.nodes.computeEndpoint);
  const presence = new InstancePresence({
    project: options.config.project,
    locator: new InstanceLocator(compute, {
      project: options.config.project,
      region: options.config.region,
      signal: w.signal,
      ...(options.nodes.zones !== undefined ? { zones: options.nodes.zones } : {}),
    }),
    events: parts.events,
    logger: options.logger,
    instanceGroupName: instanceGroupName(options.config.clusterId),
  });
  return { instances: { presence, gone: metrics.controllers.nodesWithoutInstance } };
}

/** The guard before a Service stack's first up: GETs of its load balancer's names, and a read of its stack when one exists. */
function firstUpGuard(w: Wiring, parts: StartParts): Pick<ServiceControllerDeps, "firstUpGuard"> {
  const { options } = w;
  if (options.firstUpGuard === undefined) return {};
  const compute = w.compute.for(options.firstUpGuard.computeEndpoint);
  return {
    firstUpGuard: {
      existing: existingResources(compute, options.config, options.config.region),
      held: (stack, scope) => parts.runner.heldResourceIds(stack, scope),
    },
  };
}

/** Reserving a Service's ephemeral IP before a run that may replace its forwarding rule, through the same Compute access as the first-up guard. */
function addressPins(w: Wiring, parts: StartParts): Pick<ServiceControllerDeps, "addressPins"> {
  const { options } = w;
  if (options.firstUpGuard === undefined) return {};
  const where = { project: options.config.project, region: options.config.region };
  const pinner = new AddressPinner(w.compute.for(options.firstUpGuard.computeEndpoint), where, w.signal);
  return {
    addressPins: {
      pin: (service, ip) => pinner.pin(service, ip),
      addressId: (service) => addressId(where.project, where.region, service),
      held: (stack, scope) => parts.runner.heldResourceIds(stack, scope),
    },
  };
}

/** Node initialization, lifecycle and route conditions, on the daemon's Node watch; undefined when off. */
export function newNodeController(
  w: Wiring,
  parts: StartParts,
  routeStatus: ClusterRouteStatus,
): NodeController | undefined {
  const { options, metrics } = w;
  if (options.nodes === undefined) return undefined;
  return new NodeController({
    project: options.config.project,
    region: options.config.region,
    ...(options.nodes.zones !== undefined ? { zones: options.nodes.zones } : {}),
    compute: w.compute.for(options.nodes.computeEndpoint),
    kubeConfig: options.kubeConfig,
    // The daemon's one Node watch, started before the controller.
    nodeSource: parts.watcher,
    // podCIDRSource cloud: no routes; NetworkUnavailable follows the pod CIDR from the VM instead.
    ...(options.config.podCIDRSource === "cloud"
      ? { podCIDRStack: options.config.podCIDRStack ?? "IPv4" }
      : { routes: routeStatus }),
    logger: options.logger,
    registry: metrics.registry,
    addressRefreshMs: options.nodes.addressRefreshMs,
    lifecycleCheckMs: options.nodes.lifecycleCheckMs,
    workers: options.nodes.workers,
    identity: options.identity,
  });
}

/** What the reconciler and its controllers are built from besides the options and the start-up parts. */
export interface ReconcilerWiring {
  parts: StartParts;
  running: Running;
  desired: DesiredDriver;
  status: StatusBook;
  routeStatus: ClusterRouteStatus;
  fullRefreshMs: number;
  /** Stacks waiting for their NEGs' first listing (newNegController wakes them). */
  negWaits: Set<string>;
}

/** What both stack controllers share: one record per stack, the pulumi runs, the full refresh timers. */
interface SharedStacks {
  records: StackRecords;
  runs: StackRuns;
  drift: FullRefreshTimers;
  observer: ClusterObserver;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
}

/** The cluster and Service controllers, each from what it uses, and the reconciler that dispatches to them. */
export function newReconciler(w: Wiring, r: ReconcilerWiring): Reconciler {
  const { options, metrics } = w;
  const { parts, desired } = r;
  // As the Service controller's records start: the stacks known now are unread until each is read.
  desired.startReferences(parts.knownStacks);
  const enqueue = (stack: string, flags?: EnqueueFlags): void => r.running.queue?.enqueue(stack, flags);
  const shared: SharedStacks = {
    records: new StackRecords(parts.knownStacks, r.status),
    runs: newStackRuns(w, r),
    drift: new FullRefreshTimers({
      periodMs: r.fullRefreshMs,
      jitter: options.driftJitter,
      signal: w.signal,
      enqueue,
      // At most half the workers run full refreshes at once: changes keep the rest.
      maxInFlight: Math.max(1, Math.floor(options.parallelism / 2)),
      inFlightMs: options.operationTimeoutMs,
    }),
    observer: new DesiredClusterObserver({
      desired,
      routeStatus: r.routeStatus,
      routesChanged: () => r.running.nodeController?.onRoutesChanged(),
      ...instanceChecks(w, parts),
    }),
    enqueue,
  };
  const cluster = newClusterController(w, r, shared);
  return new Reconciler({
    cluster,
    services: newServiceController(w, r, shared, cluster),
    drift: shared.drift,
    metrics: metrics.controllers,
    logger: options.logger,
    adoptionHeld: parts.adoptionHeld,
    serviceOf: (stack) => desired.stackKeys.serviceOf(stack),
  });
}

/** The pulumi runs of both controllers, under the operation deadline. */
function newStackRuns(w: Wiring, r: ReconcilerWiring): StackRuns {
  const { options, metrics } = w;
  return new StackRuns({
    cache: r.desired.cache,
    runner: r.parts.runner,
    stackMetrics: metrics.stacks,
    logger: options.logger,
    signal: w.signal,
    operationTimeoutMs: options.operationTimeoutMs,
    clusterUid: r.parts.clusterUid,
    ...(options.onRunStart !== undefined ? { onRunStart: options.onRunStart } : {}),
    status: r.status,
  });
}

function newClusterController(w: Wiring, r: ReconcilerWiring, shared: SharedStacks): ClusterController {
  const { options, metrics } = w;
  return new ClusterController({
    cache: r.desired.cache,
    records: shared.records,
    runs: shared.runs,
    drift: shared.drift,
    metrics: metrics.controllers,
    logger: options.logger,
    enqueue: shared.enqueue,
    observer: shared.observer,
    clusterEvents: clusterEvents(w, r.running.agents, r.parts),
    signal: w.signal,
    status: r.status,
  });
}

function newServiceController(
  w: Wiring,
  r: ReconcilerWiring,
  shared: SharedStacks,
  cluster: ClusterController,
): ServiceController {
  const { options, metrics } = w;
  const { parts } = r;
  const repairs = new RepairGuard({
    runs: shared.runs,
    cache: r.desired.cache,
    events: parts.events,
    metrics: metrics.controllers,
    logger: options.logger,
  });
  return new ServiceController({
    cache: r.desired.cache,
    watcher: parts.watcher,
    runner: parts.runner,
    writer: new ServiceWriter(parts.core),
    ledger: parts.ledger,
    events: parts.events,
    metrics: metrics.controllers,
    logger: options.logger,
    signal: w.signal,
    records: shared.records,
    runs: shared.runs,
    drift: shared.drift,
    cluster,
    loadBalancerClasses: options.config.loadBalancerClasses,
    observer: shared.observer,
    status: r.status,
    repairs,
    ...requestedIpCheck(w),
    ...addressNameReads(w, r),
    ...firstUpGuard(w, parts),
    ...addressPins(w, parts),
    ...quotaGate(w, r, shared),
    ...manualFirewalls(w, r, shared),
    negsApplied: (serviceKey) => r.running.negController?.enqueue(serviceKey),
    ...(w.options.negEndpoints !== undefined
      ? {
          negsListed: (service: ServiceDesired) => {
            const members = r.desired.cache.lastObserved().negMembers ?? {};
            return (service.backendNegs ?? []).every((neg) => members[negKey(neg)] !== undefined);
          },
          waitForNegs: (stack: string) => r.negWaits.add(stack),
        }
      : {}),
  });
}

/** config `firewallManagement: manual`: the rules Service stacks do not write, told as Events; read against the live ones with Compute access. */
function manualFirewalls(
  w: Wiring,
  r: ReconcilerWiring,
  shared: SharedStacks,
): Pick<ServiceControllerDeps, "manualFirewalls"> {
  const { options } = w;
  if (options.config.firewallManagement !== "manual") return {};
  const endpoint = options.firstUpGuard?.computeEndpoint;
  return {
    manualFirewalls: new ManualFirewalls({
      ...(options.firstUpGuard !== undefined ? { compute: w.compute.for(endpoint) } : {}),
      networkProject: networkProjectOf(options.config),
      network: options.config.network,
      clusterOutputs: () => shared.records.get(CLUSTER_STACK).recorded ?? {},
      events: r.parts.events,
      logger: options.logger,
      signal: w.signal,
    }),
  };
}

/** With Compute access: quota headroom before a Service stack's first up, read at most every 30 s for all Services. */
function quotaGate(w: Wiring, r: ReconcilerWiring, shared: SharedStacks): Pick<ServiceControllerDeps, "quotaGate"> {
  const { options, metrics } = w;
  if (options.firstUpGuard === undefined) return {};
  const compute = w.compute.for(options.firstUpGuard.computeEndpoint);
  const { project, region } = options.config;
  const gate = new QuotaGate({
    read: (signal) => readProjectQuotas(compute, project, region, { signal }),
    enqueue: shared.enqueue,
    events: r.parts.events,
    metrics: metrics.controllers,
    logger: options.logger,
    signal: w.signal,
  });
  r.status.quotasFrom(() => gate.status());
  return { quotaGate: gate };
}

/** The cluster stack's Events: routes on their Node, the rest on the Lease (controllers/cluster/events.ts). */
function clusterEvents(w: Wiring, agents: KeepAliveAgents | undefined, parts: StartParts): ClusterEventDeps {
  const { options } = w;
  const leases = agents?.makeApiClient(k8s.CoordinationV1Api);
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
      (error) =>
        options.logger.warn(
          { err: describeError(error) },
          "could not read the Lease the cluster stack's events are about",
        ),
    ),
  };
}

export function newQueue(w: Wiring, reconciler: Reconciler, status: StatusBook): KeyedQueue {
  const { options, metrics } = w;
  return new KeyedQueue((item) => reconciler.reconcile(item), {
    parallelism: options.parallelism,
    backoffBaseMs: options.backoffBaseMs,
    backoffMaxMs: options.backoffMaxMs,
    onDepth: (depth) => metrics.controllers.queueDepth.set(depth),
    onBackoff: (stacks) => metrics.controllers.backoffKeys.set(stacks),
    onResult: resultObserver({
      logger: options.logger,
      keyField: "stack",
      kindOf: stackKind,
      // An invalid Service waits for its owner: routine, told on the Service already.
      giveUpLevel: "info",
      reconciles: metrics.controllers.reconciles,
      retries: metrics.controllers.retries,
      record: (stack, result) => status.reconciled(stack, result),
    }),
  });
}

/** Services whose NEG endpoints are synced at once. */
export const NEG_SYNC_PARALLELISM = 16;

/** The NEG controller, when on: its own queue, the desired state's NEGs, what they hold told back to it. */
export function newNegController(
  w: Wiring,
  desired: DesiredDriver,
  waits: Set<string>,
  enqueueStack: (stack: string, flags: EnqueueFlags) => void,
): NegController | undefined {
  const { options, metrics } = w;
  if (options.negEndpoints === undefined) return undefined;
  return new NegController({
    project: options.config.project,
    compute: w.compute.for(options.negEndpoints.computeEndpoint),
    negsOf: (serviceKey) => desired.cache.negsOf(serviceKey),
    tellMembers: (members) => desired.negMembers(members),
    onListed: (serviceKey) => {
      const ref = parseServiceKey(serviceKey);
      if (ref === undefined) return;
      const stack = desired.stackKeys.stackOf(ref.namespace, ref.name);
      // A stack waiting for this listing (waitForNegs) runs now, news or not, as ClusterController
      // wakes the stacks waiting for the cluster; any other is only enqueued (a backoff stands).
      enqueueStack(stack, waits.delete(stack) ? { changed: true } : {});
    },
    signal: w.signal,
    logger: options.logger,
    // A sync is a few Compute calls and no engine run: waiting on GCE, not on the cores. GCE's
    // rate quotas bound them (a 429 or 403 rateLimitExceeded is retried with backoff, gce/transport.ts).
    parallelism: NEG_SYNC_PARALLELISM,
    backoffBaseMs: options.backoffBaseMs,
    backoffMaxMs: options.backoffMaxMs,
    onResult: resultObserver({
      logger: options.logger,
      keyField: "service",
      kindOf: () => "neg",
      giveUpLevel: "error",
      reconciles: metrics.controllers.reconciles,
      retries: metrics.controllers.retries,
    }),
  });
}

/** Each `neg` Service's NEGs to be listed and put back to their endpoints. */
export function enqueueEveryNegService(desired: DesiredDriver, negs: NegController): void {
  const services = new Set((desired.cache.desired().networkEndpointGroups ?? []).map((neg) => neg.service));
  for (const service of services) negs.enqueue(service, true);
}

/** Every drift interval, each `neg` Service's NEGs listed and put back to their endpoints. */
export function newNegCheck(
  w: Wiring,
  desired: DesiredDriver,
  negs: NegController,
  settled: () => Promise<void>,
): Periodic {
  const { options } = w;
  return new Periodic(
    {
      name: "NEG endpoint check",
      periodMs: options.driftMs,
      jitter: options.driftJitter,
      signal: w.signal,
      settled,
      logger: options.logger,
      // The start-up's syncs listed every NEG.
      skipFirst: true,
    },
    () => {
      enqueueEveryNegService(desired, negs);
      return Promise.resolve();
    },
  );
}

/** What the periodic checks share: their cadence, and a wait until the queue is idle before their first. */
export interface PeriodicWiring {
  computeEndpoint: string | undefined;
  settled: () => Promise<void>;
}

export function newLeakMonitor(w: Wiring, parts: StartParts, p: PeriodicWiring): LeakMonitor {
  const { options, metrics } = w;
  return daemonLeakMonitor({
    config: options.config,
    compute: w.compute.for(p.computeEndpoint),
    runner: parts.runner,
    ledger: parts.ledger,
    snapshot: () => parts.watcher.snapshot(),
    events: parts.events,
    metrics: metrics.leaks,
    logger: options.logger,
    clusterUid: parts.clusterUid,
    periodMs: options.driftMs,
    jitter: options.driftJitter,
    signal: w.signal,
    settled: p.settled,
  });
}

export function newDriftScanner(
  w: Wiring,
  applied: AppliedBook,
  refresh: (stack: string) => void,
  p: PeriodicWiring,
): DriftScanner {
  const { options, metrics } = w;
  return new DriftScanner({
    compute: w.compute.for(p.computeEndpoint),
    project: options.config.project,
    networkProject: options.config.networkProject,
    region: options.config.region,
    book: applied,
    refresh,
    metrics: metrics.drift,
    logger: options.logger,
    periodMs: options.driftMs,
    jitter: options.driftJitter,
    signal: w.signal,
    settled: p.settled,
  });
}

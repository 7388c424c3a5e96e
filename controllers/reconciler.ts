/**
 * The daemon's one worker: every queue key is a stack, parsed once into the cluster stack or a
 * Service's stack and handed to its controller (controllers/cluster/controller.ts,
 * controllers/service/controller.ts). Both reconcile from the caches, never from an event payload, and
 * share one record per stack (controllers/stackRuns.ts).
 */
import type { Logger } from "pino";
import { CLUSTER_STACK, parseServiceStack, type ServiceDesired } from "../model";
import type { DesiredCache } from "../model/desiredCache";
import type { ClusterWatcher } from "../watcher/informers";
import type { EventRecorder } from "../runtime/events";
import type { EnqueueFlags, ReconcileResult, WorkItem } from "../runtime/queue";
import type { LedgerWriter } from "../leaks/ledger";
import { ClusterController, type ClusterEventDeps } from "./cluster/controller";
import type { ClusterOutputs } from "./cluster/plan";
import type { ControllerMetrics } from "./metrics";
import type { StackMetrics } from "../stacks/metrics";
import { RepairGuard } from "./service/repairs";
import { ServiceController, type FirstUpGuard } from "./service/controller";
import { FullRefreshTimers, StackRecords, StackRuns, type ClusterReferences } from "./stackRuns";
import type { ServiceWriter } from "./service/services";
import type { StackRunner } from "../stacks/runner";
import type { StatusBook } from "./status";
import { ForeignStackError } from "../stacks/errors";

export interface ReconcilerDeps {
  cache: DesiredCache;
  watcher: Pick<ClusterWatcher, "meta">;
  runner: Pick<StackRunner, "up" | "destroy" | "removeStack" | "inspect" | "ensureStack"> &
    Partial<Pick<StackRunner, "preview">>;
  writer: Pick<ServiceWriter, "setFinalizer" | "setIngress" | "setAnnotation">;
  /** The load balancer ledger (leaks/ledger.ts): which leaked load balancer names are this cluster's. */
  ledger?: LedgerWriter;
  events: EventRecorder;
  metrics: ControllerMetrics;
  /** The pulumi runs' metrics, which StackRuns (controllers/stackRuns.ts) counts. */
  stackMetrics: StackMetrics;
  logger: Logger;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  signal: AbortSignal;
  /** The full refresh of every stack: its period, and the jitter (fraction of the period) of its passes and the drift passes. */
  fullRefreshMs: number;
  driftJitter: number;
  /** The queue's workers: at most half of them run full refreshes at once. */
  parallelism: number;
  /** Stacks found in the backend at start-up. */
  knownStacks: Iterable<string>;
  /** The loadBalancerClass values handled besides "no class": Services of other classes are never touched. */
  loadBalancerClasses: readonly string[];
  /** This cluster's identity (UID of its kube-system Namespace); stacks recording another one are refused. */
  clusterUid: string;
  /** Deadline of one pulumi operation; past it the run is cancelled and retried. */
  operationTimeoutMs: number;
  /**
   * Asks GCE which Nodes' instances are gone before a cluster run (the desired state may change);
   * absent when the daemon has no Compute access (node controller off).
   */
  observeInstances?: () => Promise<void>;
  /**
   * Checks a changed Service's spec.loadBalancerIP against GCE (controllers/service/requestedIp.ts): a message
   * when it must be refused, undefined when fine or when Compute could not say.
   */
  verifyRequestedIp?: (service: ServiceDesired) => Promise<string | undefined>;
  /** What the applied Service stacks point at in the cluster stack changed (see ObservedCloud). */
  onReferencesChanged?: (references: ClusterReferences) => void;
  onClusterApplied?: (outputs: ClusterOutputs) => void;
  /** The instance groups' membership the cluster stack recorded (see ClusterController). */
  onGroupMembers?: (members: Record<string, string[]>) => void;
  /** Whether the cluster stack's recorded node health-check firewall sits above deny rules (see ClusterController). */
  onRecordedFirewall?: (aboveDeny: boolean) => void;
  onClusterFailed?: (error: unknown) => void;
  /** Events about the cluster stack (controllers/cluster/events.ts); none when absent. */
  clusterEvents?: ClusterEventDeps;
  /** Observability hook: a pulumi operation starts (benchmarks measure event-to-up latency with it). */
  onRunStart?: (stack: string, operation: "up" | "refresh" | "preview" | "destroy") => void;
  /** The rows of /status: fed with each stack's record, runs, ingress and drift corrections. */
  status?: StatusBook;
  /**
   * Stacks `--adopt` could not adopt (a replace not allowed, a failure) → why: never run until the
   * next start, since their first up would create what exists under their names (GCE: 409) or
   * replace what the operator did not allow.
   */
  adoptionHeld?: ReadonlyMap<string, string>;
  /** A Service stack's Service, shortened names included (stacks/stackKeys.ts); absent: what the name says (parseServiceStack). */
  serviceOf?: (stack: string) => { namespace: string; name: string } | undefined;
  /** Before a Service stack's first up: GCE's resources under its load balancer's names (controllers/service/existingLoadBalancer.ts); absent without Compute access. */
  firstUpGuard?: FirstUpGuard;
}

/** A queue key, parsed once. */
export type StackKey = { kind: "cluster" } | { kind: "service"; namespace: string; name: string };

export function parseStackKey(
  key: string,
  serviceOf: (stack: string) => { namespace: string; name: string } | undefined = parseServiceStack,
): StackKey | undefined {
  if (key === CLUSTER_STACK) return { kind: "cluster" };
  const ref = serviceOf(key);
  return ref === undefined ? undefined : { kind: "service", ...ref };
}

export class Reconciler {
  private readonly drift: FullRefreshTimers;
  private readonly cluster: ClusterController;
  private readonly services: ServiceController;

  constructor(private readonly deps: ReconcilerDeps) {
    const records = new StackRecords(deps.knownStacks, deps.status);
    const runs = new StackRuns(deps);
    this.drift = new FullRefreshTimers({
      periodMs: deps.fullRefreshMs,
      jitter: deps.driftJitter,
      signal: deps.signal,
      enqueue: deps.enqueue,
      maxInFlight: Math.max(1, Math.floor(deps.parallelism / 2)),
      inFlightMs: deps.operationTimeoutMs,
    });
    const shared = { records, runs, drift: this.drift };
    this.cluster = new ClusterController({ ...deps, ...shared });
    const repairs = runs.plans
      ? new RepairGuard({ runs, cache: deps.cache, events: deps.events, metrics: deps.metrics, logger: deps.logger })
      : undefined;
    this.services = new ServiceController({
      ...deps,
      ...shared,
      cluster: this.cluster,
      ...(repairs !== undefined ? { repairs } : {}),
    });
  }

  async reconcile(item: WorkItem): Promise<ReconcileResult> {
    const key = parseStackKey(item.key, this.deps.serviceOf);
    if (key === undefined) return { kind: "giveUp", reason: `${item.key} is not a stack dccm manages` };
    const held = this.deps.adoptionHeld?.get(item.key);
    if (held !== undefined)
      return { kind: "giveUp", reason: `not adopted (${held}); held until dccm daemon --adopt starts again` };
    try {
      return key.kind === "cluster"
        ? await this.cluster.sync(item)
        : await this.services.sync(item, key.namespace, key.name);
    } catch (error) {
      if (!(error instanceof ForeignStackError)) throw error;
      // Never retried: nothing changes by trying again, and the stack must not be touched.
      this.deps.metrics.foreignStacks.inc({ kind: key.kind });
      this.deps.logger.error({ stack: item.key, err: error.message }, "refusing a stack of another cluster");
      return { kind: "giveUp", reason: error.message };
    }
  }

  /** Reads the cluster stack before anything runs; throws ForeignStackError when it is another cluster's. */
  async verifyClusterStack(): Promise<void> {
    await this.cluster.verify();
  }

  stop(): void {
    this.drift.stop();
  }
}

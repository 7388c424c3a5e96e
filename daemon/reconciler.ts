/**
 * One reconcile of one stack, from the caches (never from an event payload): the cluster stack,
 * or a Service's stack with its finalizer, status and events.
 */
import type { Logger } from "pino";
import type { Scope } from "../components/stack";
import { CLUSTER_STACK, type ServiceDesired } from "../model";
import type { DesiredCache } from "../watcher/desiredCache";
import { parseServiceStack } from "../watcher/desiredCache";
import type { ClusterWatcher, ServiceMeta } from "../watcher/informers";
import type { EventRecorder, EventTarget } from "../controller/events";
import { kubeErrorText } from "../controller/kube";
import type { EnqueueFlags, ReconcileResult, WorkItem } from "../controller/queue";
import type { DaemonMetrics } from "./metrics";
import { planRemoval } from "./ownership";
import { LB_FINALIZER, type ServiceWriter } from "./services";
import { StackBusyError, type PutBack, type StackRunner } from "./stacks";
import type { LedgerWriter } from "../leaks/ledger";

export interface ClusterOutputs {
  instanceGroups: Record<string, string>;
  routes: Record<string, string>;
  legacyNodeHealthCheck?: string;
}

export interface ReconcilerDeps {
  cache: DesiredCache;
  watcher: Pick<ClusterWatcher, "meta">;
  runner: Pick<StackRunner, "up" | "destroy" | "removeStack" | "inspect" | "ensureStack">;
  writer: Pick<ServiceWriter, "setFinalizer" | "setIngress">;
  /** The load balancer ledger (leaks/ledger.ts): the proof `dccm gc` needs that a leaked load balancer was ours. */
  ledger?: LedgerWriter;
  events: EventRecorder;
  metrics: DaemonMetrics;
  logger: Logger;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  signal: AbortSignal;
  /** Drift pass period and its jitter (fraction of the period). */
  driftMs: number;
  driftJitter: number;
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
   * Checks a changed Service's spec.loadBalancerIP against GCE (daemon/requestedIp.ts): a message
   * when it must be refused, undefined when fine or when Compute could not say.
   */
  verifyRequestedIp?: (service: ServiceDesired) => Promise<string | undefined>;
  /** What the applied Service stacks point at in the cluster stack changed (see ObservedCloud). */
  onReferencesChanged?: (references: ClusterReferences) => void;
  onClusterApplied?: (outputs: ClusterOutputs) => void;
  onClusterFailed?: (error: unknown) => void;
  /** Observability hook: a pulumi operation starts (benchmarks measure event-to-up latency with it). */
  onRunStart?: (stack: string, operation: "up" | "refresh" | "destroy") => void;
}

/** The message chain of an error, short enough for an Event. */
export function describeError(error: unknown, limit = 1024): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    const apiText = kubeErrorText(current);
    if (apiText !== undefined) {
      // An apiserver error's message is its raw response: keep the status and the API's own message.
      parts.push(apiText);
      break;
    }
    if (current instanceof Error) {
      const lines = current.message.split("\n").map((line) => line.trim());
      // Pulumi CLI errors carry the whole output: keep the lines that say what failed.
      const useful = lines.filter((line) => /error|failed|denied|not found|invalid/i.test(line));
      parts.push((useful.length > 0 ? useful.slice(0, 6) : lines.slice(0, 2)).join(" "));
      current = current.cause;
    } else {
      parts.push(String(current));
      break;
    }
  }
  const text = [...new Set(parts.filter((part) => part !== ""))].join(": ");
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

function describePutBack(changed: PutBack[]): string {
  return changed.map((change) => `${change.type.split(":").pop()} ${change.name} (${change.op})`).join(", ");
}

interface LoadBalancerOutputValue {
  ingress?: unknown;
}

function ingressOf(outputs: Record<string, unknown>, namespace: string, name: string): string[] {
  const lbs = (outputs.loadBalancers ?? {}) as Record<string, LoadBalancerOutputValue>;
  const raw = lbs[`${namespace}/${name}`]?.ingress;
  return Array.isArray(raw) ? raw.filter((ip): ip is string => typeof ip === "string") : [];
}

function clusterOutputs(outputs: Record<string, unknown>): ClusterOutputs {
  return {
    instanceGroups: (outputs.instanceGroups ?? {}) as Record<string, string>,
    routes: (outputs.routes ?? {}) as Record<string, string>,
    ...(typeof outputs.legacyNodeHealthCheck === "string" ? { legacyNodeHealthCheck: outputs.legacyNodeHealthCheck } : {}),
  };
}

function clusterStateOf(outputs: ClusterOutputs): { zones: Set<string>; legacyHealthCheck: boolean } {
  return { zones: new Set(Object.keys(outputs.instanceGroups)), legacyHealthCheck: outputs.legacyNodeHealthCheck !== undefined };
}

/** What Service stacks, as last applied, point at in the cluster stack. */
export interface ClusterReferences {
  zones: string[];
  legacyHealthCheck: boolean;
}

function referencesOf(service: ServiceDesired): ClusterReferences {
  return { zones: [...service.backendZones], legacyHealthCheck: service.backend === "target-pool" && service.healthCheck.kind === "shared" };
}

/** The union over stacks, zones sorted: the cluster stack keeps all of it until no stack names it. */
export function unionReferences(references: Iterable<ClusterReferences>): ClusterReferences {
  const zones = new Set<string>();
  let legacyHealthCheck = false;
  for (const reference of references) {
    for (const zone of reference.zones) zones.add(zone);
    legacyHealthCheck ||= reference.legacyHealthCheck;
  }
  return { zones: [...zones].sort(), legacyHealthCheck };
}

/** A stack recording another cluster's identity: this daemon is pointed at the wrong cluster. */
export class ForeignStackError extends Error {
  constructor(stack: string, recorded: string, ours: string) {
    super(
      `stack ${stack} belongs to the cluster whose kube-system Namespace has UID ${recorded}, and this cluster's is ${ours}: ` +
        "refusing to touch it (check --kubeconfig, clusterId and the backend)",
    );
    this.name = "ForeignStackError";
  }
}

/** A run cancelled by its deadline (the operation timeout), told apart from a shutdown. */
export class OperationTimeoutError extends Error {
  constructor(stack: string, operation: string, ms: number, options: { cause: unknown }) {
    super(`${operation} of stack ${stack} did not finish within ${Math.round(ms / 1000)} s and was cancelled`, options);
    this.name = "OperationTimeoutError";
  }
}

export class Reconciler {
  private readonly applied = new Map<string, string>();
  /** The ingress IPs last written for each Service stack. */
  private readonly published = new Map<string, string[]>();
  /** Stacks read once since start, with the outputs they recorded (their last applied hash is in `applied`). */
  private readonly inspected = new Map<string, Record<string, unknown>>();
  private readonly reportedRejection = new Map<string, string>();
  private readonly knownStacks: Set<string>;
  private readonly driftTimers = new Map<string, NodeJS.Timeout>();
  /** Service stacks deferred until the cluster stack applies: they run as soon as it has. */
  private readonly waitingForCluster = new Set<string>();
  /** What the cluster stack last applied that Service stacks point at. */
  private clusterState: { zones: Set<string>; legacyHealthCheck: boolean } | undefined;
  /** What each Service stack, as last applied, points at; failed runs keep the previous entry. */
  private readonly references = new Map<string, ClusterReferences>();
  private toldReferences: ClusterReferences = { zones: [], legacyHealthCheck: false };

  constructor(private readonly deps: ReconcilerDeps) {
    this.knownStacks = new Set(deps.knownStacks);
  }

  async reconcile(item: WorkItem): Promise<ReconcileResult> {
    const kind = item.key === CLUSTER_STACK ? "cluster" : "service";
    let result: ReconcileResult;
    try {
      result = kind === "cluster" ? await this.reconcileCluster(item) : await this.reconcileService(item);
    } catch (error) {
      if (!(error instanceof ForeignStackError)) throw error;
      // Never retried: nothing changes by trying again, and the stack must not be touched.
      this.deps.metrics.foreignStacks.inc({ kind });
      this.deps.logger.error({ stack: item.key, err: error.message }, "refusing a stack of another cluster");
      result = { kind: "giveUp", reason: error.message };
    }
    this.deps.metrics.reconciles.inc({ kind, result: result.kind });
    return result;
  }

  private armDrift(stack: string): void {
    if (this.driftTimers.has(stack) || this.deps.signal.aborted) return;
    const jitter = 1 + (Math.random() * 2 - 1) * this.deps.driftJitter;
    const timer = setTimeout(() => {
      this.driftTimers.delete(stack);
      this.deps.enqueue(stack, { refresh: true });
    }, Math.max(1, Math.round(this.deps.driftMs * jitter)));
    timer.unref();
    this.driftTimers.set(stack, timer);
  }

  private disarmDrift(stack: string): void {
    const timer = this.driftTimers.get(stack);
    if (timer !== undefined) clearTimeout(timer);
    this.driftTimers.delete(stack);
  }

  stop(): void {
    for (const stack of [...this.driftTimers.keys()]) this.disarmDrift(stack);
  }

  /**
   * A signal for one pulumi run that follows the daemon's: the Automation API never removes the
   * listener it adds, so giving it the long-lived signal would leak one listener per run.
   */
  private async withRunSignal<T>(stack: string, operation: string, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const forward = (): void => controller.abort();
    this.deps.signal.addEventListener("abort", forward, { once: true });
    if (this.deps.signal.aborted) controller.abort();
    let timedOut = false;
    // A hung engine run would hold its stack forever: past the deadline it is cancelled like a shutdown.
    const deadline = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.deps.operationTimeoutMs);
    try {
      return await run(controller.signal);
    } catch (error) {
      if (!timedOut) throw error;
      this.deps.metrics.operationTimeouts.inc({ kind: stack === CLUSTER_STACK ? "cluster" : "service", operation });
      throw new OperationTimeoutError(stack, operation, this.deps.operationTimeoutMs, { cause: error });
    } finally {
      clearTimeout(deadline);
      this.deps.signal.removeEventListener("abort", forward);
    }
  }

  /**
   * The first time a stack is seen after a start, its state is read instead of running `up`: the
   * hash it records says whether it already declares the current desired state (after a restart,
   * 1,000 unchanged Services cost 1,000 reads, not 1,000 `up`s). Returns the recorded outputs.
   */
  private async inspectOnce(stack: string, scope: Scope): Promise<Record<string, unknown>> {
    const known = this.inspected.get(stack);
    if (known !== undefined) return known;
    // A stack the backend did not have at start has nothing recorded: no read needed.
    if (!this.knownStacks.has(stack)) {
      this.inspected.set(stack, {});
      return {};
    }
    const inspection = await this.deps.runner.inspect(stack, scope);
    // A stack without a recorded identity was never applied, or by a dccm older than the check.
    if (inspection.clusterUid !== undefined && inspection.clusterUid !== this.deps.clusterUid) throw new ForeignStackError(stack, inspection.clusterUid, this.deps.clusterUid);
    this.inspected.set(stack, inspection.outputs);
    if (inspection.hash !== undefined) this.applied.set(stack, inspection.hash);
    return inspection.outputs;
  }

  /** Reads the cluster stack before anything runs; throws ForeignStackError when it is another cluster's. */
  async verifyClusterStack(): Promise<void> {
    if (this.knownStacks.has(CLUSTER_STACK)) await this.inspectOnce(CLUSTER_STACK, { kind: "cluster" });
  }

  private async runUp(stack: string, scope: Scope, refresh: boolean, hash: string): Promise<{ outputs: Record<string, unknown>; changed: PutBack[] }> {
    const kind = stack === CLUSTER_STACK ? "cluster" : "service";
    // Drift passes are counted apart, so change-driven runs can be read on their own.
    const operation = refresh ? "refresh" : "up";
    this.deps.onRunStart?.(stack, operation);
    const end = this.deps.metrics.upDuration.startTimer({ kind, operation });
    this.deps.metrics.stackRuns.inc({ stack, operation });
    try {
      const outcome = await this.withRunSignal(stack, operation, (signal) => this.deps.runner.up(stack, scope, this.deps.cache.desired(), { refresh, hash, signal }));
      this.knownStacks.add(stack);
      const seconds = Math.round(end() * 10) / 10;
      // One line per run that changed something; unchanged drift passes stay at debug.
      const log = outcome.changed.length > 0 ? this.deps.logger.info.bind(this.deps.logger) : this.deps.logger.debug.bind(this.deps.logger);
      log({ stack, operation, seconds, changed: describePutBack(outcome.changed) }, outcome.changed.length > 0 ? "stack updated" : "stack unchanged");
      return outcome;
    } catch (error) {
      end();
      throw error;
    }
  }

  private async reconcileCluster(item: WorkItem): Promise<ReconcileResult> {
    const before = this.deps.cache.view(CLUSTER_STACK).hash;
    if (before === undefined) return { kind: "ok" };
    // Known applied but not yet published to the Service stacks (read at start): go on and publish it.
    if (this.applied.get(CLUSTER_STACK) === before && !item.refresh && this.clusterState !== undefined) return { kind: "ok" };
    // A Node whose VM is gone would make every write of its group fail: ask before running.
    await this.deps.observeInstances?.();
    const hash = this.deps.cache.view(CLUSTER_STACK).hash;
    if (hash === undefined) return { kind: "ok" };
    try {
      const recorded = await this.inspectOnce(CLUSTER_STACK, { kind: "cluster" });
      if (this.applied.get(CLUSTER_STACK) === hash && !item.refresh) {
        this.clusterApplied(clusterOutputs(recorded));
        return { kind: "ok" };
      }
      // After a restart, what the cluster stack recorded still exists in GCE: Service stacks may
      // point at it even while this run fails (one bad Node or a rate-limited API must not stop
      // every load balancer).
      if (this.clusterState === undefined && recorded.instanceGroups !== undefined) this.clusterState = clusterStateOf(clusterOutputs(recorded));
      const outcome = await this.runUp(CLUSTER_STACK, { kind: "cluster" }, item.refresh, hash);
      const outputs = clusterOutputs(outcome.outputs);
      const drifted = item.refresh && this.applied.get(CLUSTER_STACK) === hash && outcome.changed.length > 0;
      if (drifted) {
        this.deps.metrics.driftCorrections.inc({ kind: "cluster" });
        this.deps.logger.info({ stack: CLUSTER_STACK, putBack: describePutBack(outcome.changed) }, "drift corrected");
      }
      this.applied.set(CLUSTER_STACK, hash);
      this.clusterApplied(outputs);
      return { kind: "ok" };
    } catch (error) {
      if (error instanceof ForeignStackError) throw error;
      this.deps.logger.error({ stack: CLUSTER_STACK, err: describeError(error) }, "cluster stack update failed");
      this.deps.onClusterFailed?.(error);
      return { kind: "retry", error };
    }
  }

  private clusterApplied(outputs: ClusterOutputs): void {
    this.clusterState = clusterStateOf(outputs);
    this.deps.onClusterApplied?.(outputs);
    this.armDrift(CLUSTER_STACK);
    // Flagged as a change: a deferred Service must not sit out its retryAfter once it can run.
    for (const stack of this.waitingForCluster) this.deps.enqueue(stack, { changed: true });
    this.waitingForCluster.clear();
  }

  private async reconcileService(item: WorkItem): Promise<ReconcileResult> {
    const ref = parseServiceStack(item.key);
    if (ref === undefined) return { kind: "giveUp", reason: `${item.key} is not a stack dccm manages` };
    const view = this.deps.cache.view(item.key);
    const meta = this.deps.watcher.meta(ref.namespace, ref.name);
    const target: EventTarget = { kind: "Service", namespace: ref.namespace, name: ref.name, uid: meta?.uid ?? "" };

    if (view.service !== undefined && view.hash !== undefined) {
      if (meta === undefined) return { kind: "ok" };
      return this.ensure(item, view.service, view.hash, meta, target);
    }
    if (view.rejections.length > 0 && view.hash !== undefined) {
      // The load balancer (if any) is left as it is: nothing is deleted because of bad input.
      if (this.reportedRejection.get(item.key) !== view.hash && meta !== undefined) {
        this.reportedRejection.set(item.key, view.hash);
        await this.deps.events.record(target, "Warning", "SyncLoadBalancerFailed", view.rejections.map((r) => r.message).join("; "));
      }
      return { kind: "giveUp", reason: `the Service is invalid: ${view.rejections.map((r) => r.message).join("; ")}` };
    }
    return this.remove(item, meta, target);
  }

  /** Does the cluster stack hold what this Service's load balancer points at (instance groups, legacy health check)? */
  private clusterReadyFor(service: ServiceDesired): boolean {
    const applied = this.clusterState;
    if (applied === undefined) return false;
    if (service.backendZones.some((zone) => !applied.zones.has(zone))) return false;
    return !(service.backend === "target-pool" && service.healthCheck.kind === "shared" && !applied.legacyHealthCheck);
  }

  private async ensure(item: WorkItem, service: ServiceDesired, hash: string, meta: ServiceMeta, target: EventTarget): Promise<ReconcileResult> {
    const { namespace, name } = meta;
    if (!this.clusterReadyFor(service)) {
      // A nudge, not a change: a failing cluster stack keeps its backoff.
      this.deps.enqueue(CLUSTER_STACK);
      this.waitingForCluster.add(item.key);
      return { kind: "retryAfter", ms: 1000, reason: "waiting for the cluster stack" };
    }
    const scope: Scope = { kind: "service", namespace, name };
    try {
      if (this.applied.get(item.key) === hash && !item.refresh) {
        // Nothing to apply; a status someone changed is written back from what we published.
        const published = this.published.get(item.key);
        if (published !== undefined) await this.publish(item.key, meta, published);
        return { kind: "ok" };
      }
      const recorded = await this.inspectOnce(item.key, scope);
      const changed = this.applied.get(item.key) !== hash;
      if (!changed && !item.refresh) {
        // Unchanged since the last run before a restart: only the status may need writing.
        this.referenced(item.key, referencesOf(service));
        await this.publish(item.key, meta, ingressOf(recorded, namespace, name));
        this.armDrift(item.key);
        return { kind: "ok" };
      }
      if (changed && service.userIP !== undefined) {
        const refusal = await this.deps.verifyRequestedIp?.(service);
        // Retried with backoff: reserving the address is what the user is told to do next.
        if (refusal !== undefined) return this.failed(new Error(refusal), target, "Error syncing load balancer");
      }
      if (!meta.finalizers.includes(LB_FINALIZER)) {
        // The stack exists before the finalizer does: whoever finds our finalizer later also finds
        // the proof that the Service was ours (the stack is the last thing a removal deletes).
        await this.deps.runner.ensureStack(item.key, scope);
        this.knownStacks.add(item.key);
        if (!(await this.deps.writer.setFinalizer(namespace, name, true))) return { kind: "ok" };
      }
      if (changed) await this.deps.events.record(target, "Normal", "EnsuringLoadBalancer", "Ensuring load balancer");
      // Ledger before anything is created under the name: without an entry a leak is never provably ours.
      await this.deps.ledger?.record(service.lbName, { key: `${namespace}/${name}`, uid: meta.uid });
      const outcome = await this.runUp(item.key, scope, item.refresh, hash);
      if (item.refresh && !changed && outcome.changed.length > 0) {
        this.deps.metrics.driftCorrections.inc({ kind: "service" });
        await this.deps.events.record(target, "Normal", "DriftCorrected", `Put back: ${describePutBack(outcome.changed)}`);
      }
      this.referenced(item.key, referencesOf(service));
      await this.publish(item.key, meta, ingressOf(outcome.outputs, namespace, name));
      this.applied.set(item.key, hash);
      this.reportedRejection.delete(item.key);
      if (changed) await this.deps.events.record(target, "Normal", "EnsuredLoadBalancer", "Ensured load balancer");
      this.armDrift(item.key);
      return { kind: "ok" };
    } catch (error) {
      if (error instanceof ForeignStackError) throw error;
      return this.failed(error, target, "Error syncing load balancer");
    }
  }

  /** Records the IPs we publish and writes them when the live status (read now) differs. */
  private async publish(stack: string, meta: ServiceMeta, ingress: string[]): Promise<void> {
    this.published.set(stack, ingress);
    const live = this.deps.watcher.meta(meta.namespace, meta.name)?.ingress ?? meta.ingress;
    if (!sameList(live, ingress)) await this.deps.writer.setIngress(meta.namespace, meta.name, ingress, meta.uid);
  }

  /** The result of a failed run; the Service (when it still exists) is told why. */
  private async failed(error: unknown, target: EventTarget | undefined, prefix: string): Promise<ReconcileResult> {
    if (this.deps.signal.aborted) return { kind: "giveUp", reason: "shutting down" };
    if (error instanceof StackBusyError) return { kind: "retryAfter", ms: 5000, reason: "stack locked" };
    if (target !== undefined) await this.deps.events.record(target, "Warning", "SyncLoadBalancerFailed", `${prefix}: ${describeError(error)}`);
    return { kind: "retry", error };
  }

  private async remove(item: WorkItem, meta: ServiceMeta | undefined, target: EventTarget): Promise<ReconcileResult> {
    const plan = planRemoval(meta, this.knownStacks.has(item.key), LB_FINALIZER, this.deps.loadBalancerClasses);
    if (!plan.destroy && !plan.removeFinalizer) {
      this.forget(item.key);
      return { kind: "ok" };
    }
    this.disarmDrift(item.key);
    const announce = plan.announce && meta !== undefined;
    try {
      if (plan.destroy) {
        // Proof before deletion: a stack recording another cluster's identity is refused here.
        const ref = parseServiceStack(item.key);
        if (ref !== undefined) await this.inspectOnce(item.key, { kind: "service", ...ref });
        if (announce) await this.deps.events.record(target, "Normal", "DeletingLoadBalancer", "Deleting load balancer");
        const end = this.deps.metrics.upDuration.startTimer({ kind: "service", operation: "destroy" });
        this.deps.metrics.stackRuns.inc({ stack: item.key, operation: "destroy" });
        this.deps.onRunStart?.(item.key, "destroy");
        let seconds: number;
        let destroyed: "destroyed" | "absent";
        try {
          destroyed = await this.withRunSignal(item.key, "destroy", (signal) => this.deps.runner.destroy(item.key, { signal }));
        } finally {
          seconds = Math.round(end() * 10) / 10;
        }
        this.deps.logger.info({ stack: item.key, operation: "destroy", seconds }, "load balancer deleted");
        // Only after our stack was destroyed (not found absent): until then a leak under these names stays provably ours.
        if (ref !== undefined && destroyed === "destroyed") await this.deps.ledger?.forget(`${ref.namespace}/${ref.name}`);
      }
      if (meta !== undefined) {
        // A Service that stopped being a LoadBalancer but still exists loses the IP we published.
        if (plan.clearIngress) await this.deps.writer.setIngress(meta.namespace, meta.name, [], meta.uid);
        if (announce) await this.deps.events.record(target, "Normal", "DeletedLoadBalancer", "Deleted load balancer");
        if (plan.removeFinalizer) await this.deps.writer.setFinalizer(meta.namespace, meta.name, false);
      }
      // Last: until here, the stack is what proves a retry (or the next start) may finish the job.
      if (plan.destroy) await this.deps.runner.removeStack(item.key);
      this.forget(item.key);
      return { kind: "ok" };
    } catch (error) {
      if (error instanceof ForeignStackError) throw error;
      return this.failed(error, announce ? target : undefined, "Error deleting load balancer");
    }
  }

  /** Records what a Service stack now points at; the cluster stack is told when the union changes. */
  private referenced(stack: string, references: ClusterReferences | undefined): void {
    if (references === undefined) this.references.delete(stack);
    else this.references.set(stack, references);
    const union = unionReferences(this.references.values());
    if (union.legacyHealthCheck === this.toldReferences.legacyHealthCheck && sameList(union.zones, this.toldReferences.zones)) return;
    this.toldReferences = union;
    this.deps.onReferencesChanged?.(union);
  }

  /** Drops everything known of a stack that no longer exists. */
  private forget(stack: string): void {
    if (this.references.has(stack)) this.referenced(stack, undefined);
    this.knownStacks.delete(stack);
    this.applied.delete(stack);
    this.inspected.delete(stack);
    this.published.delete(stack);
    this.reportedRejection.delete(stack);
  }
}

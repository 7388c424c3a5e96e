/**
 * What the cluster and Service controllers share about their stacks: one record per stack (what
 * the backend holds, what was applied and published), the pulumi runs with their deadline,
 * metrics and log line, and the drift timers.
 */
import type { Logger } from "pino";

import { isServiceStack, observedReferences, type ObservedCloud, type Scope, stackKind } from "../model";
import type { DesiredCache } from "../model/desiredCache";
import type { EnqueueFlags } from "../runtime/queue";
import { jitteredDelay } from "../runtime/periodic";
import type { StackMetrics } from "../stacks/metrics";
import type { StatusBook } from "./status";
import type { StackRunner } from "../stacks/runner";
import type { PutBack } from "../stacks/events";
import type { StepEventMetadata } from "../stacks/events";
import type { Adoption } from "../components/adoption";
import { OperationTimeoutError } from "../stacks/errors";
import { checkStackIdentity } from "../stacks/identity";

/** What Service stacks, as last applied, point at in the cluster stack. */
export interface ClusterReferences {
  /**
   * The instance groups, as instanceGroupKey: a zone for its first group, `<zone>/<name>` for a
   * numbered one (daemon/daemon.ts splits them into referencedZones and referencedGroups).
   */
  zones: string[];
  legacyHealthCheck: boolean;
  /**
   * The Services (`namespace/name`) whose stack holds a deny rule (`enableL4DenyFirewall`); on one
   * stack's references, its own Service when it does. Unset when none.
   */
  denyRules?: string[];
  /**
   * In the union only: some Service stack known at the start was not read yet (it may hold a deny
   * rule). Unset when none.
   */
  unread?: true;
}

/**
 * Pure: the observation with what the Service stacks point at. `clusterFirewallAboveDeny`: the
 * cluster stack recorded its node health-check firewall at 999; with Service stacks still unread
 * it stays there (denyRulesUnread). The deny fields only when they say something: the desired
 * state of a cluster that never had a deny rule is unchanged.
 */
export function withReferences(
  observed: ObservedCloud,
  references: ClusterReferences,
  clusterFirewallAboveDeny: boolean,
): ObservedCloud {
  const next: ObservedCloud = {
    ...observed,
    ...observedReferences(references.zones),
    legacyHealthCheckReferenced: references.legacyHealthCheck,
  };
  delete next.denyRulesHeld;
  delete next.denyRulesUnread;
  if (references.denyRules !== undefined && references.denyRules.length > 0) next.denyRulesHeld = references.denyRules;
  if (references.unread === true && clusterFirewallAboveDeny) next.denyRulesUnread = true;
  return next;
}

/** Everything the daemon knows of one stack; dropped when the stack is gone. */
export interface StackRecord {
  /** The backend holds this stack (found at start, or created since). */
  known: boolean;
  /** Outputs the stack records: read once after a start, then those of each successful run. */
  recorded?: Record<string, unknown>;
  /** Hash of the desired state the stack last applied. */
  applied?: string;
  /** The ingress IPs last written for a Service stack. */
  published?: string[];
  /** `<uid> <hash>` of the invalid Service last told why (one Warning per object and spec). */
  toldRejection?: string;
  /** What the Service stack, as last applied, points at; failed runs keep the previous one. */
  references?: ClusterReferences;
}

/**
 * The union of what Service stacks point at, kept as counts: a stack's change costs its own zones,
 * not a pass over every stack (after a restart every stack reports once: O(stacks), not O(stacks²)).
 */
export class ReferenceUnion {
  private readonly zones = new Map<string, number>();
  private readonly denyRules = new Map<string, number>();
  private legacyHealthCheck = 0;

  replace(before: ClusterReferences | undefined, after: ClusterReferences | undefined): void {
    if (before !== undefined) this.count(before, -1);
    if (after !== undefined) this.count(after, 1);
  }

  /** Zones and deny rules sorted. */
  union(): ClusterReferences {
    const denyRules = [...this.denyRules.keys()].sort();
    return {
      zones: [...this.zones.keys()].sort(),
      legacyHealthCheck: this.legacyHealthCheck > 0,
      ...(denyRules.length > 0 ? { denyRules } : {}),
    };
  }

  private count(references: ClusterReferences, delta: 1 | -1): void {
    countEach(this.zones, references.zones, delta);
    countEach(this.denyRules, references.denyRules ?? [], delta);
    if (references.legacyHealthCheck) this.legacyHealthCheck += delta;
  }
}

function countEach(counts: Map<string, number>, keys: readonly string[], delta: 1 | -1): void {
  for (const key of new Set(keys)) {
    const next = (counts.get(key) ?? 0) + delta;
    if (next > 0) counts.set(key, next);
    else counts.delete(key);
  }
}

export class StackRecords {
  private readonly records = new Map<string, StackRecord>();
  /** The union of every record's references. */
  private readonly referenced = new ReferenceUnion();
  /** The Service stacks known at the start whose references are not known yet (ClusterReferences.unread). */
  private readonly unread = new Set<StackRecord>();

  /** `status`: its rows are the stacks that have a record here. */
  constructor(
    knownStacks: Iterable<string>,
    private readonly status?: Pick<StatusBook, "track" | "drop">,
  ) {
    for (const stack of knownStacks) {
      const record: StackRecord = { known: true };
      this.records.set(stack, record);
      if (isServiceStack(stack)) this.unread.add(record);
      status?.track(stack);
    }
  }

  get(stack: string): StackRecord {
    let record = this.records.get(stack);
    if (record === undefined) {
      record = { known: false };
      this.records.set(stack, record);
      this.status?.track(stack);
    }
    return record;
  }

  /** Drops the stack's record; returns whether the union may have changed (it pointed at anything, or was the last unread). */
  forget(stack: string): boolean {
    const record = this.records.get(stack);
    const references = record?.references;
    const wasUnread = record !== undefined && this.unread.delete(record);
    this.records.delete(stack);
    this.status?.drop(stack);
    this.referenced.replace(references, undefined);
    return references !== undefined || (wasUnread && this.unread.size === 0);
  }

  /** Records what the stack's load balancer now points at in the cluster stack. */
  setReferences(record: StackRecord, references: ClusterReferences): void {
    this.referenced.replace(record.references, references);
    record.references = references;
    this.unread.delete(record);
  }

  /** What the applied Service stacks point at, together (the cluster stack keeps all of it). */
  references(): ClusterReferences {
    return { ...this.referenced.union(), ...(this.unread.size > 0 ? { unread: true as const } : {}) };
  }
}

export function describePutBack(changed: PutBack[]): string {
  return changed.map((change) => `${change.type.split(":").pop()} ${change.name} (${change.op})`).join(", ");
}

export interface StackRunsDeps {
  cache: Pick<DesiredCache, "desired">;
  /** `preview`: without it (test stand-ins) runs are not planned first (controllers/service/repairs.ts). */
  runner: Pick<StackRunner, "up" | "destroy" | "inspect"> & Partial<Pick<StackRunner, "preview">>;
  stackMetrics: StackMetrics;
  logger: Logger;
  signal: AbortSignal;
  operationTimeoutMs: number;
  /** This cluster's identity (UID of its kube-system Namespace); stacks recording another one are refused. */
  clusterUid: string;
  onRunStart?: (stack: string, operation: "up" | "refresh" | "preview" | "destroy") => void;
  status?: Pick<StatusBook, "ran">;
}

export interface UpResult {
  outputs: Record<string, unknown>;
  changed: PutBack[];
}

/** The pulumi operations of the controllers, each under the operation deadline, timed and logged once. */
export class StackRuns {
  constructor(private readonly deps: StackRunsDeps) {}

  /**
   * The first time a stack is seen after a start, its state is read instead of running `up`: the
   * hash it records says whether it already declares the current desired state (after a restart,
   * 1,000 unchanged Services cost 1,000 reads, not 1,000 `up`s). A stack the backend did not have
   * at start has nothing recorded: no read.
   */
  async inspectOnce(stack: string, scope: Scope, record: StackRecord): Promise<Record<string, unknown>> {
    if (record.recorded !== undefined) return record.recorded;
    if (!record.known) {
      record.recorded = {};
      return record.recorded;
    }
    const inspection = await this.deps.runner.inspect(stack, scope);
    // A stack without a recorded identity was never applied, or by a dccm older than the check.
    checkStackIdentity(stack, inspection.clusterUid, this.deps.clusterUid);
    record.recorded = inspection.outputs;
    if (inspection.hash !== undefined) record.applied = inspection.hash;
    return inspection.outputs;
  }

  /** Whether runs can be planned first (`preview`). */
  get plans(): boolean {
    return this.deps.runner.preview !== undefined;
  }

  /**
   * `pulumi preview --refresh` of the stack with the desired state (read-only), under the operation
   * deadline: every step the engine plans, in order. What a repair is judged by (controllers/service/repairs.ts).
   */
  async preview(
    stack: string,
    scope: Scope,
    hash: string,
    adoption: Adoption | undefined,
  ): Promise<StepEventMetadata[]> {
    const preview = this.deps.runner.preview?.bind(this.deps.runner);
    if (preview === undefined) throw new Error(`stack ${stack}: this runner cannot preview`);
    const kind = stackKind(stack);
    this.deps.onRunStart?.(stack, "preview");
    const end = this.deps.stackMetrics.upDuration.startTimer({ kind, operation: "preview" });
    this.deps.stackMetrics.stackRuns.inc({ stack, operation: "preview" });
    const steps: StepEventMetadata[] = [];
    try {
      await this.withDeadline(stack, "preview", (signal) =>
        preview(stack, scope, this.deps.cache.desired(), {
          hash,
          ...(adoption !== undefined ? { adoption } : {}),
          refresh: true,
          signal,
          onStep: (step) => steps.push(step),
        }),
      );
    } finally {
      const seconds = Math.round(end() * 10) / 10;
      this.deps.logger.debug({ stack, operation: "preview", seconds }, "stack previewed");
    }
    return steps;
  }

  async up(
    stack: string,
    scope: Scope,
    record: StackRecord,
    refresh: boolean,
    hash: string,
    adoption?: Adoption,
  ): Promise<UpResult> {
    const kind = stackKind(stack);
    // Drift passes are counted apart, so change-driven runs can be read on their own.
    const operation = refresh ? "refresh" : "up";
    this.deps.onRunStart?.(stack, operation);
    const end = this.deps.stackMetrics.upDuration.startTimer({ kind, operation });
    this.deps.stackMetrics.stackRuns.inc({ stack, operation });
    const startedAt = new Date();
    try {
      const outcome = await this.withDeadline(stack, operation, (signal) =>
        this.deps.runner.up(stack, scope, this.deps.cache.desired(), {
          refresh,
          hash,
          signal,
          ...(adoption !== undefined ? { adoption } : {}),
        }),
      );
      record.known = true;
      record.recorded = outcome.outputs;
      const elapsed = end();
      this.deps.status?.ran(stack, operation, startedAt, elapsed * 1000);
      const seconds = Math.round(elapsed * 10) / 10;
      // One line per run that changed something; unchanged drift passes stay at debug.
      const log =
        outcome.changed.length > 0
          ? this.deps.logger.info.bind(this.deps.logger)
          : this.deps.logger.debug.bind(this.deps.logger);
      log(
        { stack, operation, seconds, changed: describePutBack(outcome.changed) },
        outcome.changed.length > 0 ? "stack updated" : "stack unchanged",
      );
      return outcome;
    } catch (error) {
      this.deps.status?.ran(stack, operation, startedAt, end() * 1000);
      throw error;
    }
  }

  /** The stack is gone: its per-stack series go with it. */
  forget(stack: string): void {
    this.deps.stackMetrics.forgetStack(stack);
  }

  async destroy(stack: string): Promise<"destroyed" | "absent"> {
    const end = this.deps.stackMetrics.upDuration.startTimer({ kind: "service", operation: "destroy" });
    this.deps.stackMetrics.stackRuns.inc({ stack, operation: "destroy" });
    this.deps.onRunStart?.(stack, "destroy");
    let seconds: number;
    let destroyed: "destroyed" | "absent";
    const startedAt = new Date();
    try {
      destroyed = await this.withDeadline(stack, "destroy", (signal) => this.deps.runner.destroy(stack, { signal }));
    } finally {
      const elapsed = end();
      this.deps.status?.ran(stack, "destroy", startedAt, elapsed * 1000);
      seconds = Math.round(elapsed * 10) / 10;
    }
    this.deps.logger.info({ stack, operation: "destroy", seconds }, "load balancer deleted");
    return destroyed;
  }

  /**
   * A signal for one pulumi run that follows the daemon's: the Automation API never removes the
   * listener it adds, so giving it the long-lived signal would leak one listener per run.
   */
  private async withDeadline<T>(
    stack: string,
    operation: string,
    run: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
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
      this.deps.stackMetrics.operationTimeouts.inc({ kind: stackKind(stack), operation });
      throw new OperationTimeoutError(stack, operation, this.deps.operationTimeoutMs, { cause: error });
    } finally {
      clearTimeout(deadline);
      this.deps.signal.removeEventListener("abort", forward);
    }
  }
}

/** Pure: the first full refresh of a stack after a start, at a uniform phase of the period (`random` in [0, 1)), so the stacks of a restart spread evenly over it. */
export function firstRefreshDelay(periodMs: number, random: number): number {
  return Math.max(1, Math.round(periodMs * random));
}

/** Pure: how long a full refresh waits when the most that may run at once already do. */
export function refreshWaitMs(periodMs: number): number {
  return Math.min(60_000, Math.max(1000, Math.round(periodMs / 100)));
}

export interface FullRefreshOptions {
  periodMs: number;
  /** Fraction of the period. */
  jitter: number;
  signal: AbortSignal;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  /** The most full refreshes enqueued and not yet done at once (half the workers: changes keep the rest). */
  maxInFlight: number;
  /** A refresh enqueued longer ago than this no longer counts as in flight (its run ended at its deadline, or it waits out a backoff). */
  inFlightMs: number;
}

/**
 * The full refresh of every stack (`up --refresh`, which reads every field the provider reads):
 * each stack once a period, the first at a uniform phase of it, then every period ± jitter, never
 * more than maxInFlight at once. A stack is armed after each successful run of it; a run that was
 * a full refresh ends its turn in flight then.
 */
export class FullRefreshTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly seen = new Set<string>();
  /** Stack → when its refresh was enqueued. */
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly options: FullRefreshOptions) {}

  arm(stack: string): void {
    this.inFlight.delete(stack);
    if (this.timers.has(stack) || this.options.signal.aborted) return;
    const { periodMs, jitter } = this.options;
    const delay = this.seen.has(stack)
      ? jitteredDelay(periodMs, jitter, Math.random())
      : firstRefreshDelay(periodMs, Math.random());
    this.seen.add(stack);
    this.schedule(stack, delay);
  }

  private schedule(stack: string, delayMs: number): void {
    const timer = setTimeout(() => this.fire(stack), delayMs);
    timer.unref();
    this.timers.set(stack, timer);
  }

  private fire(stack: string): void {
    this.timers.delete(stack);
    if (this.options.signal.aborted) return;
    const now = Date.now();
    for (const [other, since] of this.inFlight) if (now - since > this.options.inFlightMs) this.inFlight.delete(other);
    if (this.inFlight.size >= this.options.maxInFlight) {
      this.schedule(stack, refreshWaitMs(this.options.periodMs));
      return;
    }
    this.inFlight.set(stack, now);
    this.options.enqueue(stack, { refresh: true });
  }

  disarm(stack: string): void {
    const timer = this.timers.get(stack);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(stack);
    this.inFlight.delete(stack);
    this.seen.delete(stack);
  }

  stop(): void {
    for (const stack of [...this.timers.keys()]) this.disarm(stack);
  }
}

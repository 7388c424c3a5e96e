/**
 * The pulumi runs of the cluster and Service controllers: each under the operation deadline, timed,
 * counted and logged once.
 */
import type { Logger } from "pino";

import { type Scope, stackKind } from "../model";
import type { DesiredCache } from "../model/desiredCache";
import type { StackMetrics } from "../stacks/metrics";
import type { StatusBook } from "./status";
import type { StackRunner } from "../stacks/runner";
import type { PutBack } from "../stacks/events";
import type { StepEventMetadata } from "../stacks/events";
import type { Adoption } from "../components/adoption";
import { OperationTimeoutError } from "../stacks/errors";
import { checkStackIdentity } from "../stacks/identity";
import type { StackRecord } from "./stackRecords";

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

/**
 * Prometheus metrics of the pulumi engine runs: their duration, count and timeouts, and the shared
 * provider plugin's restarts. Written by the controllers' one gate to the engine (controllers/stackRuns.ts)
 * and the daemon's SharedProvider callback; kept here because they describe the engine, whoever drives it.
 */
import * as prom from "prom-client";

/** The operations `dccm_stack_runs_total` counts, each a series per stack. */
export const STACK_RUN_OPERATIONS = ["up", "refresh", "preview", "destroy"] as const;

export class StackMetrics {
  readonly registry: prom.Registry;
  readonly upDuration: prom.Histogram<"kind" | "operation">;
  readonly stackRuns: prom.Counter<"stack" | "operation">;
  readonly operationTimeouts: prom.Counter<"kind" | "operation">;
  readonly sharedProviderRestarts: prom.Counter;

  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.upDuration = new prom.Histogram({
      name: "dccm_up_duration_seconds",
      help: "Duration of pulumi operations by stack kind and operation (up, refresh = up with refresh, destroy).",
      labelNames: ["kind", "operation"],
      buckets: [0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320],
      registers: [registry],
    });
    this.stackRuns = new prom.Counter({
      name: "dccm_stack_runs_total",
      help: "pulumi operations run, per stack and operation (up, refresh = drift pass, destroy).",
      labelNames: ["stack", "operation"],
      registers: [registry],
    });
    this.operationTimeouts = new prom.Counter({
      name: "dccm_operation_timeouts_total",
      help: "pulumi operations cancelled by the operation timeout, by stack kind and operation.",
      labelNames: ["kind", "operation"],
      registers: [registry],
    });
    this.sharedProviderRestarts = new prom.Counter({
      name: "dccm_shared_provider_restarts_total",
      help: "Exits (or failed starts) of the shared provider plugin (--shared-provider), each followed by a start after a backoff.",
      registers: [registry],
    });
  }

  /**
   * Drops a stack's series of `dccm_stack_runs_total` once the stack is gone (its Service deleted):
   * one series per Service ever seen would grow without bound on a cluster whose Services come and go.
   */
  forgetStack(stack: string): void {
    for (const operation of STACK_RUN_OPERATIONS) this.stackRuns.remove({ stack, operation });
  }
}

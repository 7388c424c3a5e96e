/**
 * Prometheus metrics of the daemon: its own (the Lease, the watches) and every subsystem's, each
 * class built by its owner's folder, all on one registry (the one /metrics serves). The node
 * controller registers its own on the same registry when it is built (controllers/node/metrics.ts).
 */
import * as prom from "prom-client";

import { ControllerMetrics } from "../controllers/metrics";
import { DriftMetrics } from "../drift/metrics";
import { LeakMetrics } from "../leaks/metrics";
import { StackMetrics } from "../stacks/metrics";

export class DaemonMetrics {
  readonly registry: prom.Registry;
  readonly leader: prom.Gauge;
  readonly watchRestarts: prom.Counter<"resource">;
  readonly controllers: ControllerMetrics;
  readonly stacks: StackMetrics;
  readonly drift: DriftMetrics;
  readonly leaks: LeakMetrics;

  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.controllers = new ControllerMetrics(registry);
    this.stacks = new StackMetrics(registry);
    this.watchRestarts = new prom.Counter({
      name: "dccm_watch_restarts_total",
      help: "Watch restarts after an error, by resource.",
      labelNames: ["resource"],
      registers: [registry],
    });
    this.leader = new prom.Gauge({ name: "dccm_leader", help: "1 while this replica holds the Lease.", registers: [registry] });
    this.leaks = new LeakMetrics(registry);
    this.drift = new DriftMetrics(registry);
  }
}

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
    this.leader = new prom.Gauge({
      name: "dccm_leader",
      help: "1 while this replica holds the Lease.",
      registers: [registry],
    });
    this.leaks = new LeakMetrics(registry);
    this.drift = new DriftMetrics(registry);
  }

  /**
   * The daemon process's metrics: dccm's, plus prom-client's defaults (`process_*`: CPU, memory, open
   * files, start time; `nodejs_*`: heap, event loop lag, GC, active handles). Only for the process
   * itself (`dccm daemon`): the defaults describe the whole process, and their collectors (an event
   * loop monitor, a GC observer) are started once per registry, so in-process tests' daemons leave them out.
   */
  static forProcess(): DaemonMetrics {
    const registry = new prom.Registry();
    prom.collectDefaultMetrics({ register: registry });
    return new DaemonMetrics(registry);
  }
}

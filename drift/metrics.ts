/**
 * Prometheus metrics of the drift passes by listing (drift/scanner.ts). What a pass puts back is
 * counted by the controllers whose runs put it back (dccm_drift_corrections_total,
 * dccm_cluster_put_back_total in controllers/metrics.ts).
 */
import * as prom from "prom-client";

export class DriftMetrics {
  readonly registry: prom.Registry;
  readonly driftPasses: prom.Counter<"result">;
  readonly driftPassSeconds: prom.Gauge;
  readonly driftedStacks: prom.Counter<"kind">;

  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.driftPasses = new prom.Counter({
      name: "dccm_drift_passes_total",
      help: "Drift passes by listing (start-up and every drift interval), by result (ok, failed).",
      labelNames: ["result"],
      registers: [registry],
    });
    this.driftPassSeconds = new prom.Gauge({
      name: "dccm_drift_pass_seconds",
      help: "Duration of the last drift pass by listing (its Compute API calls and the comparison).",
      registers: [registry],
    });
    this.driftedStacks = new prom.Counter({
      name: "dccm_drifted_stacks_total",
      help: "Stacks a drift pass found drifted and sent to up --refresh, by stack kind.",
      labelNames: ["kind"],
      registers: [registry],
    });
  }
}

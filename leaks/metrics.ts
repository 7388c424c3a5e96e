/** Prometheus metrics of the daemon's leak checks (leaks/monitor.ts). */
import * as prom from "prom-client";

export class LeakMetrics {
  readonly registry: prom.Registry;
  readonly leakedResources: prom.Gauge<"kind" | "proof">;
  readonly leakChecks: prom.Counter<"result">;

  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.leakedResources = new prom.Gauge({
      name: "dccm_leaked_resources",
      help: "GCE resources of this cluster no stack owns, at the last leak check, by collection and proof (proven: dccm gc may delete them; unproven: never deleted).",
      labelNames: ["kind", "proof"],
      registers: [registry],
    });
    this.leakChecks = new prom.Counter({
      name: "dccm_leak_checks_total",
      help: "Leak checks (start-up and every drift interval), by result (ok, failed).",
      labelNames: ["result"],
      registers: [registry],
    });
  }
}

/** Prometheus metrics of the daemon. */
import * as prom from "prom-client";

export class DaemonMetrics {
  readonly registry: prom.Registry;
  readonly reconciles: prom.Counter<"kind" | "result">;
  readonly upDuration: prom.Histogram<"kind" | "operation">;
  readonly driftCorrections: prom.Counter<"kind">;
  readonly clusterPutBack: prom.Counter<"resource">;
  readonly queueDepth: prom.Gauge;
  readonly watchRestarts: prom.Counter<"resource">;
  readonly stackRuns: prom.Counter<"stack" | "operation">;
  readonly leader: prom.Gauge;
  readonly foreignStacks: prom.Counter<"kind">;
  readonly operationTimeouts: prom.Counter<"kind" | "operation">;
  readonly destroysHeld: prom.Gauge;
  readonly ipChangesHeld: prom.Counter;
  readonly servicesHeldForAdoption: prom.Gauge;
  readonly retries: prom.Counter<"kind">;
  readonly backoffKeys: prom.Gauge;
  readonly leakedResources: prom.Gauge<"kind" | "proof">;
  readonly leakChecks: prom.Counter<"result">;
  readonly nodesWithoutInstance: prom.Gauge;
  readonly driftPasses: prom.Counter<"result">;
  readonly driftPassSeconds: prom.Gauge;
  readonly driftedStacks: prom.Counter<"kind">;
  readonly sharedProviderRestarts: prom.Counter;

  // eslint-disable-next-line max-lines-per-function -- one declaration per metric: a list, which split would only scatter
  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.reconciles = new prom.Counter({
      name: "dccm_reconciles_total",
      help: "Reconciles by stack kind (cluster, service) and result (ok, retry, retryAfter, giveUp).",
      labelNames: ["kind", "result"],
      registers: [registry],
    });
    this.upDuration = new prom.Histogram({
      name: "dccm_up_duration_seconds",
      help: "Duration of pulumi operations by stack kind and operation (up, refresh = up with refresh, destroy).",
      labelNames: ["kind", "operation"],
      buckets: [0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320],
      registers: [registry],
    });
    this.driftCorrections = new prom.Counter({
      name: "dccm_drift_corrections_total",
      help: "Drift passes that put something back, by stack kind.",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.clusterPutBack = new prom.Counter({
      name: "dccm_cluster_put_back_total",
      help:
        "Resources of the cluster stack a drift pass put back, by resource (route, instanceGroup, healthCheck, legacyHealthCheck, firewall, other); " +
        'dccm_drift_corrections_total{kind="cluster"} counts the passes.',
      labelNames: ["resource"],
      registers: [registry],
    });
    this.queueDepth = new prom.Gauge({ name: "dccm_queue_depth", help: "Stacks waiting for a worker.", registers: [registry] });
    this.sharedProviderRestarts = new prom.Counter({
      name: "dccm_shared_provider_restarts_total",
      help: "Exits (or failed starts) of the shared provider plugin (--shared-provider), each followed by a start after a backoff.",
      registers: [registry],
    });
    this.watchRestarts = new prom.Counter({
      name: "dccm_watch_restarts_total",
      help: "Watch restarts after an error, by resource.",
      labelNames: ["resource"],
      registers: [registry],
    });
    this.stackRuns = new prom.Counter({
      name: "dccm_stack_runs_total",
      help: "pulumi operations run, per stack and operation (up, refresh = drift pass, destroy).",
      labelNames: ["stack", "operation"],
      registers: [registry],
    });
    this.retries = new prom.Counter({
      name: "dccm_reconcile_retries_total",
      help: "Failed reconciles scheduled for a retry after an exponential backoff, by stack kind (cluster, service).",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.backoffKeys = new prom.Gauge({
      name: "dccm_queue_backoff_stacks",
      help: "Stacks waiting out a failure backoff (only a change to their desired state runs them sooner).",
      registers: [registry],
    });
    this.nodesWithoutInstance = new prom.Gauge({
      name: "dccm_nodes_without_instance",
      help: "Nodes whose GCE instance Compute reports gone (404), left out of instance groups and routes.",
      registers: [registry],
    });
    this.leader = new prom.Gauge({ name: "dccm_leader", help: "1 while this replica holds the Lease.", registers: [registry] });
    this.foreignStacks = new prom.Counter({
      name: "dccm_foreign_stacks_total",
      help: "Reconciles refused because the stack records another cluster's identity (kube-system Namespace UID), by stack kind.",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.operationTimeouts = new prom.Counter({
      name: "dccm_operation_timeouts_total",
      help: "pulumi operations cancelled by the operation timeout, by stack kind and operation.",
      labelNames: ["kind", "operation"],
      registers: [registry],
    });
    this.destroysHeld = new prom.Gauge({
      name: "dccm_destroys_held",
      help: "Stacks whose Service is absent, held from destruction until an operator confirms (--confirm-orphan-destroys).",
      registers: [registry],
    });
    this.ipChangesHeld = new prom.Counter({
      name: "dccm_ip_changes_held_total",
      help: "Service runs that were not a change of the Service (drift pass, full refresh) and were held because their plan would not keep the load balancer's IP (Warning IPChangeHeld).",
      registers: [registry],
    });
    this.servicesHeldForAdoption = new prom.Gauge({
      name: "dccm_services_held_for_adoption",
      help: "Services whose first up is held because GCE already has resources under their load balancer's names that no stack holds (Warning LoadBalancerExists): dccm adopt, or dccm daemon --adopt.",
      registers: [registry],
    });
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
    this.driftPasses = new prom.Counter({
      name: "dccm_drift_passes_total",
      help: "Drift passes by listing (start-up and every drift interval), by result (ok, failed).",
      labelNames: ["result"],
      registers: [registry],
    });
    this.driftPassSeconds = new prom.Gauge({ name: "dccm_drift_pass_seconds", help: "Duration of the last drift pass by listing (its Compute API calls and the comparison).", registers: [registry] });
    this.driftedStacks = new prom.Counter({
      name: "dccm_drifted_stacks_total",
      help: "Stacks a drift pass found drifted and sent to up --refresh, by stack kind.",
      labelNames: ["kind"],
      registers: [registry],
    });
  }
}

/**
 * Prometheus metrics of the stack controllers: their work queue and its results, and what the
 * reconciler, the cluster and Service controllers and the checks the daemon runs for them (orphan
 * destroys, instances gone) count. The runtime's queue and result observer take callbacks and
 * counters, not metrics of their own: these are the controllers' queue's.
 */
import * as prom from "prom-client";

export class ControllerMetrics {
  readonly registry: prom.Registry;
  readonly reconciles: prom.Counter<"kind" | "result">;
  readonly retries: prom.Counter<"kind">;
  readonly queueDepth: prom.Gauge;
  readonly backoffKeys: prom.Gauge;
  readonly foreignStacks: prom.Counter<"kind">;
  readonly driftCorrections: prom.Counter<"kind">;
  readonly refreshRequests: prom.Counter<"result">;
  readonly clusterPutBack: prom.Counter<"resource">;
  readonly destroysHeld: prom.Gauge;
  readonly ipChangesHeld: prom.Counter;
  readonly servicesHeldForAdoption: prom.Gauge;
  readonly nodesWithoutInstance: prom.Gauge;
  readonly quotaExceeded: prom.Counter<"kind" | "quota">;
  readonly quotaHeadroom: prom.Gauge<"quota" | "scope">;
  readonly servicesHeldForQuota: prom.Gauge;

  constructor(registry: prom.Registry = new prom.Registry()) {
    this.registry = registry;
    this.reconciles = new prom.Counter({
      name: "dccm_reconciles_total",
      help: "Reconciles by kind (cluster, service: a stack; neg: a Service's NEG endpoints) and result (ok, retry, retryAfter, giveUp).",
      labelNames: ["kind", "result"],
      registers: [registry],
    });
    this.retries = new prom.Counter({
      name: "dccm_reconcile_retries_total",
      help: "Failed reconciles scheduled for a retry after an exponential backoff, by kind (cluster, service, neg).",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.queueDepth = new prom.Gauge({
      name: "dccm_queue_depth",
      help: "Stacks waiting for a worker.",
      registers: [registry],
    });
    this.backoffKeys = new prom.Gauge({
      name: "dccm_queue_backoff_stacks",
      help: "Stacks waiting out a failure backoff (only a change to their desired state runs them sooner).",
      registers: [registry],
    });
    this.foreignStacks = new prom.Counter({
      name: "dccm_foreign_stacks_total",
      help: "Reconciles refused because the stack records another cluster's identity (kube-system Namespace UID), by stack kind.",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.driftCorrections = new prom.Counter({
      name: "dccm_drift_corrections_total",
      help: "Drift passes that put something back, by stack kind.",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.refreshRequests = new prom.Counter({
      name: "dccm_refresh_requests_total",
      help: "Refresh requests (annotation dccm.io/refresh-requested, dccm refresh) answered, by result (clean, repaired, applied, held, failed, invalid).",
      labelNames: ["result"],
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
    this.quotaExceeded = new prom.Counter({
      name: "dccm_gce_quota_exceeded_total",
      help: "Stack runs GCE refused over a project quota (403 quotaExceeded), by stack kind and quota (STATIC_ADDRESSES, ROUTES, …); each waits 5 minutes before its next try (Warning QuotaExceeded).",
      labelNames: ["kind", "quota"],
      registers: [registry],
    });
    ({ headroom: this.quotaHeadroom, held: this.servicesHeldForQuota } = quotaGauges(registry));
    this.nodesWithoutInstance = new prom.Gauge({
      name: "dccm_nodes_without_instance",
      help: "Nodes whose GCE instance Compute reports gone (404), left out of instance groups and routes.",
      registers: [registry],
    });
  }
}

/** The quota gate's gauges (controllers/service/quotaGate.ts). */
function quotaGauges(registry: prom.Registry): { headroom: prom.Gauge<"quota" | "scope">; held: prom.Gauge } {
  return {
    headroom: new prom.Gauge({
      name: "dccm_gce_quota_headroom",
      help: "A GCE quota's limit less its usage as last read (regions.get, projects.get; at most every 30 s, before Service stacks' first ups), by quota (STATIC_ADDRESSES, FORWARDING_RULES, …) and scope (region, global).",
      labelNames: ["quota", "scope"],
      registers: [registry],
    }),
    held: new prom.Gauge({
      name: "dccm_services_held_for_quota",
      help: "Services whose first up is held because a GCE quota has no room for what it creates (Warning QuotaExceeded): tried again when a load balancer is deleted, or after 5 minutes.",
      registers: [registry],
    }),
  };
}

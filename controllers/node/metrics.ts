// Prometheus counters of the node controller. Get-or-create, because the daemon may build the
// controller again after losing and regaining leadership on the same registry, and prom-client
// throws on duplicate registration.

import { Counter, type Registry } from "prom-client";

import { computeCallsCounter } from "../../gce";

export interface NodeMetrics {
  readonly initializations: Counter<"result">;
  readonly deletions: Counter;
  readonly podCIDRs: Counter<"result">;
  readonly shutdownTaints: Counter<"action">;
  readonly computeCalls: Counter<"call" | "code">;
}

export function nodeMetrics(registry: Registry): NodeMetrics {
  return {
    initializations: counter(
      registry,
      "dccm_node_initializations_total",
      "Node initializations attempted, by result (ok, error).",
      ["result"],
    ),
    deletions: counter(
      registry,
      "dccm_node_deletions_total",
      "Nodes deleted because their GCE instance no longer exists.",
      [],
    ),
    podCIDRs: counter(
      registry,
      "dccm_node_pod_cidr_assignments_total",
      "Pod CIDR checks of podCIDRSource cloud, by result (assigned, unavailable: the VM has no range, mismatch: the Node's CIDR is not its VM's, error: the write failed).",
      ["result"],
    ),
    shutdownTaints: counter(
      registry,
      "dccm_node_shutdown_taints_total",
      "Shutdown taints written, by action (added: the VM is stopped or suspended, removed: it runs again or the Node is Ready).",
      ["action"],
    ),
    computeCalls: computeCallsCounter(registry),
  };
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) {
    return existing;
  }
  return new Counter<L>({ name, help, labelNames, registers: [registry] });
}

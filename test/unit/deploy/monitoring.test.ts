// deploy/monitoring: every metric and label the alerts and the dashboard use exists in /metrics.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { Registry } from "prom-client";
import * as YAML from "yaml";
import { DaemonMetrics } from "../../../daemon/metrics";
import { nodeMetrics } from "../../../controllers/node/metrics";
import { computeCallsCounter } from "../../../gce/transport";
import { repoRoot } from "../../support/tooling/testenv-paths";

const dir = path.join(repoRoot(), "deploy", "monitoring");

/** Metric name → its label names, as the daemon's registry (daemon, node controller, Compute client) exposes them. */
function exposed(): Map<string, Set<string>> {
  const registry = new Registry();
  new DaemonMetrics(registry);
  nodeMetrics(registry);
  computeCallsCounter(registry);
  const metrics = new Map<string, Set<string>>();
  // getMetricsAsArray's objects are the metrics themselves, which keep their label names.
  for (const metric of registry.getMetricsAsArray() as unknown as {
    name: string;
    type: unknown;
    labelNames: string[];
  }[]) {
    const labels = new Set<string>(metric.labelNames);
    // A histogram's series: _bucket (with le), _sum, _count.
    if (String(metric.type) === "histogram") {
      metrics.set(`${metric.name}_bucket`, new Set([...labels, "le"]));
      metrics.set(`${metric.name}_sum`, labels);
      metrics.set(`${metric.name}_count`, labels);
    } else metrics.set(metric.name, labels);
  }
  return metrics;
}

/** Every `dccm_…` selector of a PromQL expression with the label names it matches on. */
function selectors(expr: string): { metric: string; labels: string[] }[] {
  return [...expr.matchAll(/(dccm_[a-z0-9_]+)(?:\{([^}]*)\})?/g)].map((match) => ({
    metric: match[1],
    labels: (match[2] ?? "")
      .split(",")
      .map((matcher) => /^\s*([a-zA-Z_]+)\s*(?:=~|!~|!=|=)/.exec(matcher)?.[1])
      .filter((label): label is string => label !== undefined),
  }));
}

function expressions(): { where: string; expr: string }[] {
  const found: { where: string; expr: string }[] = [];
  const docs = YAML.parseAllDocuments(fs.readFileSync(path.join(dir, "monitoring.yaml"), "utf8")).map(
    (doc) => doc.toJS() as { kind: string; spec: { groups?: { rules: { alert: string; expr: string }[] }[] } },
  );
  for (const rule of docs.find((doc) => doc.kind === "PrometheusRule")?.spec.groups?.flatMap((group) => group.rules) ??
    [])
    found.push({ where: `alert ${rule.alert}`, expr: rule.expr });
  const dashboard = JSON.parse(fs.readFileSync(path.join(dir, "dashboard.json"), "utf8")) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  for (const panel of dashboard.panels)
    for (const target of panel.targets) found.push({ where: `panel "${panel.title}"`, expr: target.expr });
  return found;
}

describe("deploy/monitoring: alerts and dashboard", () => {
  it("selectors: the metric and the label names of each matcher", () => {
    assert.deepEqual(
      selectors('sum(rate(dccm_reconciles_total{kind="service",result=~"retry|giveUp"}[10m])) / dccm_leader'),
      [
        { metric: "dccm_reconciles_total", labels: ["kind", "result"] },
        { metric: "dccm_leader", labels: [] },
      ],
    );
  });

  it("the alerts the issue asks for are there", () => {
    const alerts = expressions()
      .filter((found) => found.where.startsWith("alert "))
      .map((found) => found.where.slice("alert ".length));
    assert.deepEqual(alerts, [
      "DccmNoLeader",
      "DccmLoadBalancerSyncFailing",
      "DccmClusterStackFailing",
      "DccmNegEndpointsFailing",
      "DccmDriftCorrected",
      "DccmIPChangeHeld",
      "DccmQueueStuck",
      "DccmComputeErrors",
      "DccmOperationTimeouts",
      "DccmServicesHeldForAdoption",
      "DccmHeapGrowing",
      "DccmServicesHeldForQuota",
    ]);
  });

  it("DccmComputeErrors counts neither successes nor 404s (a deleted VM's lookup is an answer, not an error)", () => {
    assert.deepEqual(
      expressions()
        .filter((found) => found.where === "alert DccmComputeErrors")
        .map((found) => found.expr),
      ['sum(rate(dccm_compute_calls_total{code!~"2..|404"}[5m])) / sum(rate(dccm_compute_calls_total[5m])) > 0.05'],
    );
  });

  it("every metric and label they use exists in /metrics", () => {
    const metrics = exposed();
    const missing: string[] = [];
    for (const { where, expr } of expressions()) {
      const used = selectors(expr);
      if (used.length === 0) missing.push(`${where}: no dccm metric in ${expr}`);
      for (const { metric, labels } of used) {
        const known = metrics.get(metric);
        if (known === undefined) missing.push(`${where}: ${metric}`);
        else for (const label of labels) if (!known.has(label)) missing.push(`${where}: ${metric}{${label}}`);
      }
    }
    assert.deepEqual(missing, []);
    assert.equal(expressions().length, 25);
  });
});

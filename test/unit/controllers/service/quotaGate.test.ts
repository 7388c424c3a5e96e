import * as assert from "node:assert/strict";
import pino from "pino";

import { QuotaGate } from "../../../../controllers/service/quotaGate";
import { ControllerMetrics } from "../../../../controllers/metrics";
import type { ProjectQuotas } from "../../../../gce/quotas";
import type { EventTarget } from "../../../../runtime/events";
import { LB_FINALIZER } from "../../../../model";
import type { ReconcileResult } from "../../../../runtime/queue";
import type { ServiceMeta } from "../../../../watcher/informers";
import { externalServiceDesired, gceNode, lbService } from "../../../support/builders";
import { MemoryEventSink } from "../../../support/fakes/events";
import { newReconciler } from "../../../support/fakes/reconciler";

const service = (name: string): ReturnType<typeof externalServiceDesired> =>
  externalServiceDesired("default", name, `uid-${name}`, `a${name}`, [80]);
const target = (name: string): EventTarget => ({ kind: "Service", namespace: "default", name, uid: `uid-${name}` });

function project(forwardingRules: number, limit: number): ProjectQuotas {
  return {
    region: "us-central1",
    regional: [{ metric: "STATIC_ADDRESSES", limit: 8, usage: 0 }],
    global: [
      { metric: "FORWARDING_RULES", limit, usage: forwardingRules },
      { metric: "BACKEND_SERVICES", limit: 50, usage: forwardingRules },
      { metric: "FIREWALLS", limit: 100, usage: 10 },
    ],
  };
}

describe("controllers/service/quotaGate", () => {
  function gate(read: () => Promise<ProjectQuotas>): {
    gate: QuotaGate;
    events: string[];
    enqueued: string[];
    logs: string[];
    metrics: ControllerMetrics;
    clock: { ms: number };
    reads: { count: number };
  } {
    const events: string[] = [];
    const enqueued: string[] = [];
    const logs: string[] = [];
    const metrics = new ControllerMetrics();
    const clock = { ms: 1_000_000 };
    const reads = { count: 0 };
    const g = new QuotaGate({
      read: () => {
        reads.count++;
        return read();
      },
      enqueue: (stack, flags) => enqueued.push(`${stack}${flags?.changed === true ? " changed" : ""}`),
      events: {
        record: async (t, type, reason, message) => {
          events.push(`${t.namespace}/${t.name} ${type} ${reason}: ${message}`);
        },
      },
      metrics,
      logger: pino({ level: "warn" }, { write: (line: string) => logs.push(line) }),
      signal: new AbortController().signal,
      now: () => clock.ms,
    });
    return { gate: g, events, enqueued, logs, metrics, clock, reads };
  }

  it("one read for concurrent first ups; each let through claims its needs; the one with no room is held with the exact Warning and the quota wait", async () => {
    const t = gate(async () => project(1, 3));
    const results = await Promise.all(
      ["a", "b", "c"].map((name) => t.gate.check(`service.default.${name}`, target(name), service(name))),
    );
    assert.equal(t.reads.count, 1);
    assert.deepEqual(results, [
      undefined,
      undefined,
      { kind: "retryAfter", ms: 300_000, reason: "held for GCE quota FORWARDING_RULES" },
    ]);
    assert.deepEqual(t.events, [
      "default/c Warning QuotaExceeded: Load balancer not created: GCE quota FORWARDING_RULES (global) has 3 of 3 in use or being created, and this load balancer needs 1. Held until a load balancer is deleted or 5 minutes pass; release unused resources or raise the quota",
    ]);
    assert.deepEqual(t.gate.status(), {
      readAt: new Date(1_000_000).toISOString(),
      quotas: [
        { quota: "STATIC_ADDRESSES", scope: "region", region: "us-central1", limit: 8, usage: 0, headroom: 8 },
        { quota: "FORWARDING_RULES", scope: "global", limit: 3, usage: 1, headroom: 2 },
        { quota: "BACKEND_SERVICES", scope: "global", limit: 50, usage: 1, headroom: 49 },
        { quota: "FIREWALLS", scope: "global", limit: 100, usage: 10, headroom: 90 },
      ],
      held: ["service.default.c"],
    });
    const headroom = await t.metrics.registry.getSingleMetricAsString("dccm_gce_quota_headroom");
    assert.match(headroom, /dccm_gce_quota_headroom\{quota="FORWARDING_RULES",scope="global"\} 2$/m);
    assert.match(headroom, /dccm_gce_quota_headroom\{quota="STATIC_ADDRESSES",scope="region"\} 8$/m);
    assert.match(
      await t.metrics.registry.getSingleMetricAsString("dccm_services_held_for_quota"),
      /dccm_services_held_for_quota 1$/,
    );
  });

  it("the read serves every check for 30 s; then the quotas are read again and the claims start over", async () => {
    let usage = 2;
    const t = gate(async () => project(usage, 3));
    assert.equal(await t.gate.check("service.default.a", target("a"), service("a")), undefined);
    t.clock.ms += 29_999;
    assert.equal((await t.gate.check("service.default.b", target("b"), service("b")))?.kind, "retryAfter");
    assert.equal(t.reads.count, 1);
    usage = 1;
    t.clock.ms += 1;
    assert.equal(await t.gate.check("service.default.b", target("b"), service("b")), undefined);
    assert.equal(t.reads.count, 2);
    assert.deepEqual(t.gate.status().held, []);
  });

  it("a Service stack destroyed: the held Services are enqueued as changes at once and the next check reads the quotas again", async () => {
    let usage = 3;
    const t = gate(async () => project(usage, 3));
    await t.gate.check("service.default.b", target("b"), service("b"));
    await t.gate.check("service.default.c", target("c"), service("c"));
    t.gate.released("service.default.a", false);
    assert.deepEqual(t.enqueued, [], "a stack removed with nothing destroyed frees nothing");
    usage = 2;
    t.gate.released("service.default.a", true);
    assert.deepEqual(t.enqueued, ["service.default.b changed", "service.default.c changed"]);
    assert.equal(await t.gate.check("service.default.b", target("b"), service("b")), undefined);
    assert.equal((await t.gate.check("service.default.c", target("c"), service("c")))?.kind, "retryAfter");
    assert.equal(t.reads.count, 2);
  });

  it("a held Service deleted: no longer held, and the others are tried again", async () => {
    const t = gate(async () => project(3, 3));
    await t.gate.check("service.default.b", target("b"), service("b"));
    await t.gate.check("service.default.c", target("c"), service("c"));
    t.gate.released("service.default.b", false);
    assert.deepEqual(t.enqueued, ["service.default.c changed"]);
    assert.deepEqual(t.gate.status().held, ["service.default.c"]);
  });

  it("quotas that cannot be read hold nothing: the first up goes ahead, and the failure is logged", async () => {
    const t = gate(async () => {
      throw new Error("compute regions.get projects/p/regions/r: HTTP 403: forbidden");
    });
    assert.equal(await t.gate.check("service.default.a", target("a"), service("a")), undefined);
    assert.deepEqual(t.events, []);
    assert.deepEqual(
      t.logs.map((line) => {
        const { msg, stack, err } = JSON.parse(line) as { msg: string; stack: string; err: string };
        return { msg, stack, err };
      }),
      [
        {
          msg: "could not read GCE quotas; the first up goes ahead unchecked",
          stack: "service.default.a",
          err: "compute regions.get projects/p/regions/r: HTTP 403: forbidden",
        },
      ],
    );
    assert.deepEqual(t.gate.status(), { readAt: null, quotas: [], held: [] });
  });
});

describe("controllers/service/controller: the quota gate's hooks", () => {
  const UID = "11111111-2222-4333-8444-555555555555";
  const STACK = "service.default.web";
  const ITEM = { key: STACK, refresh: false };
  const HELD: ReconcileResult = { kind: "retryAfter", ms: 300_000, reason: "held for GCE quota FORWARDING_RULES" };

  function meta(over: Partial<ServiceMeta> = {}): ServiceMeta {
    return {
      namespace: "default",
      name: "web",
      uid: UID,
      type: "LoadBalancer",
      finalizers: [],
      ingress: [],
      deleting: false,
      ...over,
    };
  }

  function harness(options: { held?: boolean; applied?: string; meta?: ServiceMeta } = {}): ReturnType<
    typeof newReconciler
  > & {
    gate: { held: boolean };
  } {
    const gate = { held: options.held ?? false };
    const h = newReconciler({
      services: [lbService("default", "web", UID)],
      metas: [options.meta ?? meta()],
      sink: new MemoryEventSink(),
      runner: {
        inspect: (stack) => ({ hash: stack === STACK ? options.applied : undefined }),
        up: (stack, desired) => ({
          outputs:
            stack === "cluster"
              ? {
                  instanceGroups: Object.fromEntries(
                    desired.cluster.instanceGroups.map((g) => [g.zone, `ig-${g.zone}`]),
                  ),
                  routes: {},
                }
              : { loadBalancers: { "default/web": { ingress: ["10.255.0.1"] } } },
          changed: [],
        }),
      },
      deps: ({ calls }) => ({
        knownStacks: options.applied !== undefined ? ["cluster", STACK] : [],
        quotaGate: {
          async check(stack) {
            calls.push(`quota check ${stack}`);
            return gate.held ? HELD : undefined;
          },
          released(stack, destroyed) {
            calls.push(`quota released ${stack} ${destroyed}`);
          },
        },
      }),
    });
    return { ...h, gate };
  }

  async function clusterApplied(h: ReturnType<typeof harness>): Promise<void> {
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    h.calls.length = 0;
  }

  it("a first up the gate holds: its result, nothing written (no stack, finalizer, ledger entry, up)", async () => {
    const h = harness({ held: true });
    await clusterApplied(h);
    assert.deepEqual(await h.reconciler.reconcile(ITEM), HELD);
    assert.deepEqual(h.calls, [`quota check ${STACK}`]);
  });

  it("a first up with room runs as before; a later change is not checked", async () => {
    const h = harness();
    await clusterApplied(h);
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `quota check ${STACK}`,
      `ensureStack ${STACK}`,
      "setFinalizer default/web true",
      `up ${STACK}`,
      "setIngress default/web [10.255.0.1]",
    ]);
    const later = harness({ applied: "an older hash", meta: meta({ finalizers: [LB_FINALIZER] }) });
    await clusterApplied(later);
    assert.deepEqual(await later.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.ok(!later.calls.some((call) => call.startsWith("quota ")), later.calls.join("; "));
  });

  it("a Service stack destroyed tells the gate (destroyed); a held Service deleted before anything was written tells it too", async () => {
    const h = harness();
    await clusterApplied(h);
    await h.reconciler.reconcile(ITEM);
    h.metas.set("default/web", meta({ finalizers: [LB_FINALIZER], deleting: true }));
    h.cache.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: [] });
    h.calls.length = 0;
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls.slice(-2), [`removeStack ${STACK}`, `quota released ${STACK} true`]);

    const held = harness({ held: true });
    await clusterApplied(held);
    await held.reconciler.reconcile(ITEM);
    held.metas.delete("default/web");
    held.cache.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: [] });
    held.calls.length = 0;
    assert.deepEqual(await held.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(held.calls, [`quota released ${STACK} false`]);
  });
});

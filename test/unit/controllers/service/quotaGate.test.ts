import * as assert from "node:assert/strict";
import pino from "pino";

import { QuotaGate } from "../../../../controllers/service/quotaGate";
import { ControllerMetrics } from "../../../../controllers/metrics";
import type { ProjectQuotas } from "../../../../gce/quotas";
import type { EventTarget } from "../../../../runtime/events";
import { externalServiceDesired } from "../../../support/builders";

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

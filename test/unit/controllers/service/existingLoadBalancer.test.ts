/**
 * The guard before a Service stack's first up (issue 26, item 2): the pure decision, table-tested,
 * and the Service controller over in-memory stand-ins (reconciler.test.ts's style): when GCE
 * already has resources under the load balancer's names and the stack holds none, nothing is
 * written (no stack, finalizer, ledger entry or up), the Service gets a Warning naming them, the
 * reconcile is retried with the queue's backoff and the held Services are counted.
 */
import * as assert from "node:assert/strict";

import type { ReconcileResult } from "../../../../runtime/queue";
import {
  decideFirstUp,
  loadBalancerExistsMessage,
  loadBalancerResources,
  type FirstUpDecision,
  type NamedResource,
} from "../../../../controllers/service/existingLoadBalancer";
import type { ControllerMetrics } from "../../../../controllers/metrics";
import { Reconciler } from "../../../../controllers/reconciler";

import { LB_FINALIZER } from "../../../../model";
import type { ServiceMeta } from "../../../../watcher/informers";
import { DesiredCache } from "../../../../model/desiredCache";
import { gceNode, lbService } from "../../../support/builders";
import { MemoryEventSink } from "../../../support/fakes/events";
import { newReconciler } from "../../../support/fakes/reconciler";

const UID = "11111111-2222-4333-8444-555555555555";
const LB = "a1111111122224333844455555555555";
const STACK = "service.default.web";
const P = "projects/dccm-test";

function named(kind: NamedResource["kind"], scope: string, name: string): NamedResource {
  return { kind, scope, name, id: `${P}/${scope === "global" ? "global" : `regions/${scope}`}/${kind}/${name}` };
}

const RULE = named("forwardingRules", "us-central1", LB);
const BACKEND = named("backendServices", "us-central1", LB);
const FIREWALL = named("firewalls", "global", `k8s-fw-${LB}`);
const ADDRESS = named("addresses", "us-central1", LB);

describe("controllers/service/existingLoadBalancer: the names looked up", () => {
  it("are the load balancer's whole family, each located in the region or globally, as Compute API paths", () => {
    const resources = loadBalancerResources({ project: "dccm-test" }, "us-central1", LB);
    assert.deepEqual(
      resources.map((resource) => resource.id),
      [
        `${P}/regions/us-central1/addresses/${LB}`,
        `${P}/regions/us-central1/addresses/${LB}-ipv6`,
        `${P}/regions/us-central1/forwardingRules/${LB}`,
        `${P}/regions/us-central1/forwardingRules/${LB}-tcp`,
        `${P}/regions/us-central1/forwardingRules/${LB}-udp`,
        `${P}/regions/us-central1/forwardingRules/${LB}-ipv6`,
        `${P}/regions/us-central1/forwardingRules/${LB}-tcp-ipv6`,
        `${P}/regions/us-central1/forwardingRules/${LB}-udp-ipv6`,
        `${P}/regions/us-central1/backendServices/${LB}`,
        `${P}/regions/us-central1/backendServices/${LB}-tcp`,
        `${P}/regions/us-central1/backendServices/${LB}-udp`,
        `${P}/regions/us-central1/targetPools/${LB}`,
        `${P}/regions/us-central1/healthChecks/${LB}`,
        `${P}/global/httpHealthChecks/${LB}`,
        `${P}/global/firewalls/k8s-fw-${LB}`,
        `${P}/global/firewalls/k8s-fw-${LB}-ipv6`,
        `${P}/global/firewalls/k8s-${LB}-http-hc`,
        `${P}/global/firewalls/k8s-${LB}-http-hc-ipv6`,
        `${P}/global/firewalls/k8s-fw-${LB}-deny`,
        `${P}/global/firewalls/k8s-fw-${LB}-deny-ipv6`,
      ],
    );
    assert.deepEqual(resources[2], RULE);
  });
});

describe("controllers/service/existingLoadBalancer: decideFirstUp", () => {
  const table: [string, NamedResource[], string[], FirstUpDecision][] = [
    ["nothing under the names, the stack holds nothing: proceed", [], [], { kind: "proceed" }],
    [
      "the stock CCM's rule, backend service and firewall, the stack holds nothing: hold, naming each, sorted",
      [RULE, FIREWALL, BACKEND],
      [],
      {
        kind: "hold",
        resources: [
          `backendServices/us-central1/${LB}`,
          `firewalls/global/k8s-fw-${LB}`,
          `forwardingRules/us-central1/${LB}`,
        ],
      },
    ],
    [
      "one resource, the stack holds nothing: hold",
      [ADDRESS],
      [],
      { kind: "hold", resources: [`addresses/us-central1/${LB}`] },
    ],
    [
      "everything under the names is the stack's (adopted): proceed",
      [RULE, FIREWALL],
      [RULE.id, FIREWALL.id],
      { kind: "proceed" },
    ],
    [
      "the stack holds its address only (past its first up): the guard is off",
      [RULE, ADDRESS],
      [ADDRESS.id],
      { kind: "proceed" },
    ],
    ["nothing under the names, the stack holds something: proceed", [], [ADDRESS.id], { kind: "proceed" }],
  ];
  for (const [title, occupied, held, expected] of table)
    it(title, () => assert.deepEqual(decideFirstUp(occupied, new Set(held)), expected));

  it("the Warning names each resource and the command to run", () => {
    assert.equal(
      loadBalancerExistsMessage([`firewalls/global/k8s-fw-${LB}`, `forwardingRules/us-central1/${LB}`]),
      `Not created: GCE already has firewalls/global/k8s-fw-${LB}, forwardingRules/us-central1/${LB} under this load balancer's names, held by no dccm stack ` +
        "(the stock CCM's?); adopt them with their IP: run dccm adopt, or restart dccm daemon with --adopt",
    );
  });
});

// ---- The Service controller with in-memory stand-ins -----------------------------------------------------

interface Harness {
  reconciler: Reconciler;
  /** Every runner, writer, ledger and guard call, in order. */
  calls: string[];
  events: MemoryEventSink;
  metrics: ControllerMetrics;
  /** What GCE has under the load balancer's names, and what the Service's stack holds: changed by the tests. */
  gce: { occupied: NamedResource[]; held: Set<string>; failing?: Error };
  metas: Map<string, ServiceMeta>;
  cache: DesiredCache;
}

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

function harness(
  options: {
    guard?: boolean;
    knownStacks?: string[];
    hashes?: (cache: DesiredCache) => Record<string, string>;
    meta?: ServiceMeta;
  } = {},
): Harness {
  const gce: Harness["gce"] = { occupied: [], held: new Set() };
  const h = newReconciler({
    services: [lbService("default", "web", UID)],
    metas: [options.meta ?? meta()],
    sink: new MemoryEventSink(),
    runner: {
      inspect: (stack) => ({ hash: options.hashes?.(h.cache)[stack] }),
      up: (stack, desired) => {
        const groups = Object.fromEntries(
          desired.cluster.instanceGroups.map((group) => [group.zone, `ig-${group.zone}`]),
        );
        const outputs =
          stack === "cluster"
            ? { instanceGroups: groups, routes: {} }
            : { loadBalancers: { "default/web": { ingress: ["10.255.0.1"] } } };
        return { outputs, changed: [] };
      },
    },
    deps: ({ calls }) => ({
      ledger: {
        async record(lbName) {
          calls.push(`ledger ${lbName}`);
        },
        async forget(key) {
          calls.push(`ledger forget ${key}`);
        },
      },
      knownStacks: options.knownStacks ?? [],
      ...(options.guard === false
        ? {}
        : {
            firstUpGuard: {
              existing: {
                async occupied(lbName: string) {
                  calls.push(`lookup ${lbName}`);
                  if (gce.failing !== undefined) throw gce.failing;
                  return gce.occupied;
                },
              },
              async held(stack: string) {
                calls.push(`held ${stack}`);
                return gce.held;
              },
            },
          }),
    }),
  });
  return {
    reconciler: h.reconciler,
    calls: h.calls,
    events: h.sink,
    metrics: h.metrics,
    gce,
    metas: h.metas,
    cache: h.cache,
  };
}

const ITEM = { key: STACK, refresh: false };
const eventsOf = (h: Harness): string[][] =>
  h.events.created.map((event) => [event.type ?? "", event.reason ?? "", event.message ?? ""]);
const heldGauge = async (h: Harness): Promise<number | undefined> =>
  (await h.metrics.servicesHeldForAdoption.get()).values[0]?.value;

/** The cluster stack applied first (Service stacks wait for its instance groups); the calls start after it. */
async function clusterApplied(h: Harness): Promise<void> {
  assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
  h.calls.length = 0;
}

const HELD_MESSAGE = loadBalancerExistsMessage([`firewalls/global/k8s-fw-${LB}`, `forwardingRules/us-central1/${LB}`]);

function assertHeld(result: ReconcileResult): void {
  assert.equal(result.kind, "retry");
  assert.ok(result.kind === "retry" && result.error instanceof Error);
  assert.equal(
    result.error.message,
    `GCE already has resources under the load balancer's names that no stack holds (firewalls/global/k8s-fw-${LB}, forwardingRules/us-central1/${LB}): ` +
      "run dccm adopt, or restart dccm daemon with --adopt",
  );
}

describe("controllers/service/controller: the guard before a Service stack's first up", () => {
  it("GCE has the stock CCM's resources and no stack holds them: nothing written (no stack, finalizer, ledger entry, up), a Warning, retry, counted", async () => {
    const h = harness();
    await clusterApplied(h);
    h.gce.occupied = [RULE, FIREWALL];
    assertHeld(await h.reconciler.reconcile(ITEM));
    assert.deepEqual(h.calls, [`lookup ${LB}`, `held ${STACK}`]);
    assert.deepEqual(eventsOf(h), [["Warning", "LoadBalancerExists", HELD_MESSAGE]]);
    assert.equal(await heldGauge(h), 1);
    // The retry (the queue's backoff) asks again: still held, the Warning counted by the recorder, not repeated.
    assertHeld(await h.reconciler.reconcile(ITEM));
    assert.equal(h.events.created.length, 1);
    assert.deepEqual(
      h.events.patched.map(({ patch }) => [patch.count, patch.message]),
      [[2, HELD_MESSAGE]],
    );
    assert.equal(await heldGauge(h), 1);
    assert.ok(!h.calls.some((call) => /^(ensureStack|setFinalizer|ledger|up) /.test(call)), h.calls.join("; "));
  });

  it("once adopted (dccm adopt, or --adopt: the stack holds them), the guard passes and the Service is applied; no longer counted", async () => {
    const h = harness();
    await clusterApplied(h);
    h.gce.occupied = [RULE, FIREWALL];
    assertHeld(await h.reconciler.reconcile(ITEM));
    h.calls.length = 0;
    h.gce.held = new Set([RULE.id, FIREWALL.id, BACKEND.id]);
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `lookup ${LB}`,
      `held ${STACK}`,
      `ensureStack ${STACK}`,
      "setFinalizer default/web true",
      `ledger ${LB}`,
      `up ${STACK}`,
      "setIngress default/web [10.255.0.1]",
    ]);
    assert.equal(await heldGauge(h), 0);
  });

  it("a stack --adopt refused at an earlier start (the backend has it, empty) is held the same way after a start without --adopt", async () => {
    const h = harness({ knownStacks: [STACK] });
    await clusterApplied(h);
    h.gce.occupied = [FIREWALL, RULE];
    assertHeld(await h.reconciler.reconcile(ITEM));
    assert.deepEqual(h.calls, [`inspect ${STACK}`, `lookup ${LB}`, `held ${STACK}`]);
    assert.deepEqual(eventsOf(h), [["Warning", "LoadBalancerExists", HELD_MESSAGE]]);
  });

  it("nothing under the names: one lookup, the stack is not read, the Service is created as before", async () => {
    const h = harness();
    await clusterApplied(h);
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `lookup ${LB}`,
      `ensureStack ${STACK}`,
      "setFinalizer default/web true",
      `ledger ${LB}`,
      `up ${STACK}`,
      "setIngress default/web [10.255.0.1]",
    ]);
    assert.equal(await heldGauge(h), 0);
  });

  it("a stack that recorded an applied hash is past its first up: no lookup", async () => {
    const h = harness({
      knownStacks: ["cluster", STACK],
      hashes: () => ({ [STACK]: "an older hash" }),
      meta: meta({ finalizers: [LB_FINALIZER] }),
    });
    await clusterApplied(h);
    h.gce.occupied = [RULE, FIREWALL];
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `inspect ${STACK}`,
      `ledger ${LB}`,
      `up ${STACK}`,
      "setIngress default/web [10.255.0.1]",
    ]);
  });

  it("Compute failing: SyncLoadBalancerFailed, retry, nothing written (the guard fails closed)", async () => {
    const h = harness();
    await clusterApplied(h);
    h.gce.failing = new Error("Compute regionBackendServices.get: HTTP 503");
    const result = await h.reconciler.reconcile(ITEM);
    assert.equal(result.kind, "retry");
    assert.deepEqual(h.calls, [`lookup ${LB}`]);
    assert.deepEqual(eventsOf(h), [
      [
        "Warning",
        "SyncLoadBalancerFailed",
        "Error syncing load balancer: looking up GCE resources under the load balancer's names: Compute regionBackendServices.get: HTTP 503",
      ],
    ]);
  });

  it("a held Service deleted: nothing of ours to destroy, no longer counted", async () => {
    const h = harness({ meta: meta({ finalizers: [LB_FINALIZER] }) });
    await clusterApplied(h);
    h.gce.occupied = [RULE];
    assert.equal((await h.reconciler.reconcile(ITEM)).kind, "retry");
    assert.equal(await heldGauge(h), 1);
    h.metas.set("default/web", meta({ finalizers: [LB_FINALIZER], deleting: true }));
    // The watcher's view of the Service being deleted: the model drops it.
    h.calls.length = 0;
    h.cache.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: [] });
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls, ["setFinalizer default/web false"]);
    assert.equal(await heldGauge(h), 0);
  });

  it("without Compute access there is no guard: the first up runs unchecked", async () => {
    const h = harness({ guard: false });
    await clusterApplied(h);
    assert.deepEqual(await h.reconciler.reconcile(ITEM), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `ensureStack ${STACK}`,
      "setFinalizer default/web true",
      `ledger ${LB}`,
      `up ${STACK}`,
      "setIngress default/web [10.255.0.1]",
    ]);
  });
});

/**
 * The Service/stack reconciler's ownership and removal rules (issues 16 and 17), with in-memory
 * stand-ins for the pulumi runner and the apiserver writes: which calls are made, in which order.
 */
import * as assert from "node:assert/strict";
import { ApiException, type CoreV1Event } from "@kubernetes/client-node";
import pino from "pino";
import { EventRecorder, type EventPatch, type EventSink } from "../../controller/events";
import { DaemonMetrics } from "../../daemon/metrics";
import { classOwnership, holdOrphanDestroys, planRemoval, type ObservedService } from "../../daemon/ownership";
import { describeError, Reconciler, type ReconcilerDeps } from "../../daemon/reconciler";
import { LB_FINALIZER } from "../../daemon/services";
import type { Inspection, UpOutcome } from "../../daemon/stacks";
import type { Scope } from "../../components/stack";
import type { DesiredState } from "../../model";
import type { ServiceInfo } from "../../model/types";
import type { ServiceMeta } from "../../watcher/informers";
import { DesiredCache } from "../../watcher/desiredCache";
import { CONFIG, gceNode, lbService } from "../support/builders";

const CLASSES = ["dccm.io/gce"];
const OUR_UID = "c1a55e00-0000-4000-8000-000000000001";

function observed(over: Partial<ObservedService> = {}): ObservedService {
  return { type: "LoadBalancer", finalizers: [LB_FINALIZER], ingress: ["34.1.2.3"], deleting: false, ...over };
}

describe("daemon/ownership: classOwnership", () => {
  const table: [string, Pick<ObservedService, "type" | "loadBalancerClass">, ReturnType<typeof classOwnership>][] = [
    ["no class, LoadBalancer", { type: "LoadBalancer" }, "ours"],
    ["our class", { type: "LoadBalancer", loadBalancerClass: "dccm.io/gce" }, "ours"],
    ["another class", { type: "LoadBalancer", loadBalancerClass: "metallb.io/metallb" }, "foreign"],
    ["no class, ClusterIP (type changed)", { type: "ClusterIP" }, "unknown"],
  ];
  for (const [title, service, expected] of table) it(title, () => assert.equal(classOwnership(service, CLASSES), expected));
});

describe("daemon/ownership: planRemoval", () => {
  const nothing = { destroy: false, clearIngress: false, removeFinalizer: false, announce: false };
  const table: [string, ObservedService | undefined, boolean, ReturnType<typeof planRemoval>][] = [
    ["Service absent, our stack: destroy only", undefined, true, { ...nothing, destroy: true }],
    ["Service absent, no stack: nothing", undefined, false, nothing],
    ["another class with the standard finalizer, no stack: never touched", observed({ loadBalancerClass: "other.io/lb", deleting: true }), false, nothing],
    ["another class, our stale stack under the name: the stack goes, the Service is not touched", observed({ loadBalancerClass: "other.io/lb" }), true, { ...nothing, destroy: true }],
    ["ours, deleting, stack: destroy, announce, remove finalizer", observed({ deleting: true }), true, { destroy: true, clearIngress: false, removeFinalizer: true, announce: true }],
    ["ours, deleting, no stack (deleted before its first up): finalizer removed", observed({ deleting: true }), false, { destroy: false, clearIngress: false, removeFinalizer: true, announce: true }],
    ["ours, deleting, no finalizer, no stack: nothing", observed({ deleting: true, finalizers: [] }), false, nothing],
    ["ours by class and not deleting (the model wants it): nothing here", observed(), true, nothing],
    ["type changed, our stack: destroy, clear ingress, remove finalizer", observed({ type: "ClusterIP" }), true, { destroy: true, clearIngress: true, removeFinalizer: true, announce: true }],
    ["type changed, no ingress: nothing to clear", observed({ type: "ClusterIP", ingress: [] }), true, { destroy: true, clearIngress: false, removeFinalizer: true, announce: true }],
    ["type changed, no stack of ours: not provably ours, nothing", observed({ type: "ClusterIP" }), false, nothing],
    ["type changed and deleting, stack: no status write", observed({ type: "ClusterIP", deleting: true }), true, { destroy: true, clearIngress: false, removeFinalizer: true, announce: true }],
  ];
  for (const [title, service, stackExists, expected] of table) it(title, () => assert.deepEqual(planRemoval(service, stackExists, LB_FINALIZER, CLASSES), expected));
});

describe("daemon/ownership: holdOrphanDestroys", () => {
  const table: [number, number, number, number, boolean][] = [
    // orphans, service stacks, limit, confirmed, held
    [0, 0, 5, 0, false],
    [1, 1, 5, 0, false],
    [1, 10, 5, 0, false],
    [2, 4, 5, 0, false],
    [3, 4, 5, 0, true],
    [2, 2, 5, 0, true],
    [5, 100, 5, 0, false],
    [6, 100, 5, 0, true],
    [16, 16, 5, 0, true],
    [16, 16, 5, 16, false],
    [16, 16, 5, 15, true],
  ];
  for (const [orphans, stacks, limit, confirmed, held] of table) {
    it(`${orphans} of ${stacks} stacks, limit ${limit}, ${confirmed} confirmed → ${held ? "held" : "proceed"}`, () => assert.equal(holdOrphanDestroys(orphans, stacks, limit, confirmed), held));
  }
});

describe("daemon: describeError", () => {
  it("gives an apiserver error's status and message, never its raw body", () => {
    const body = JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message: 'Service "web" is invalid: status.loadBalancer: Forbidden: may only be used when `spec.type` is \'LoadBalancer\'', code: 422 });
    const error = new Error("writing status.loadBalancer of Service default/web", { cause: new ApiException(422, `HTTP-Code: 422\nMessage: Unknown API Status Code!\nBody: ${body}\nHeaders: {}`, body, {}) });
    assert.equal(
      describeError(error),
      "writing status.loadBalancer of Service default/web: HTTP 422: Service \"web\" is invalid: status.loadBalancer: Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
    );
  });
});

// ---- The reconciler with in-memory stand-ins ----------------------------------------------------------

class MemoryEvents implements EventSink {
  readonly created: CoreV1Event[] = [];
  async createEvent(_namespace: string, event: CoreV1Event): Promise<void> {
    this.created.push(event);
  }
  async patchEvent(_namespace: string, _name: string, _patch: EventPatch): Promise<"ok" | "gone"> {
    return "gone";
  }
}

interface Harness {
  reconciler: Reconciler;
  /** Every runner and writer call, in order. */
  calls: string[];
  events: MemoryEvents;
  metrics: DaemonMetrics;
  metas: Map<string, ServiceMeta>;
  cache: DesiredCache;
  /** Every enqueue the reconciler asked for, as `stack` or `stack changed`. */
  enqueued: string[];
}

function meta(name: string, over: Partial<ServiceMeta> = {}): ServiceMeta {
  return { namespace: "default", name, uid: `uid-${name}`, type: "LoadBalancer", finalizers: [LB_FINALIZER], ingress: ["34.1.2.3"], deleting: false, ...over };
}

function harness(
  options: { services?: ServiceInfo[]; metas?: ServiceMeta[]; knownStacks?: string[]; recorded?: Record<string, string>; outputs?: Record<string, Record<string, unknown>>; failUp?: Set<string>; hashes?: (cache: DesiredCache) => Record<string, string> } = {},
): Harness {
  const calls: string[] = [];
  const enqueued: string[] = [];
  const cache = new DesiredCache(CONFIG);
  cache.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: options.services ?? [] });
  const metas = new Map((options.metas ?? []).map((m) => [`${m.namespace}/${m.name}`, m]));
  const events = new MemoryEvents();
  const metrics = new DaemonMetrics();
  const runner: ReconcilerDeps["runner"] = {
    async inspect(stack: string, _scope: Scope): Promise<Inspection> {
      calls.push(`inspect ${stack}`);
      const uid = options.recorded?.[stack];
      return { hash: options.hashes?.(cache)[stack], outputs: options.outputs?.[stack] ?? {}, adopted: [], clusterUid: uid };
    },
    async ensureStack(stack: string): Promise<void> {
      calls.push(`ensureStack ${stack}`);
    },
    async up(stack: string, _scope: Scope, _desired: DesiredState): Promise<UpOutcome> {
      calls.push(`up ${stack}`);
      if (options.failUp?.has(stack) === true) throw new Error("googleapi: Error 429: Rate Limit Exceeded");
      return { outputs: stack === "cluster" ? { instanceGroups: { "us-central1-a": "ig-a" }, routes: {} } : {}, changed: [] };
    },
    async destroy(stack: string): Promise<"destroyed" | "absent"> {
      calls.push(`destroy ${stack}`);
      return "destroyed";
    },
    async removeStack(stack: string): Promise<void> {
      calls.push(`removeStack ${stack}`);
    },
  };
  const reconciler = new Reconciler({
    cache,
    watcher: { meta: (namespace, name) => metas.get(`${namespace}/${name}`) },
    runner,
    writer: {
      async setFinalizer(namespace, name, present) {
        calls.push(`setFinalizer ${namespace}/${name} ${present}`);
        return true;
      },
      async setIngress(namespace, name, ips) {
        calls.push(`setIngress ${namespace}/${name} [${ips.join(",")}]`);
        return true;
      },
    },
    events: new EventRecorder(events, pino({ level: "silent" }), "dccm-service-controller"),
    metrics,
    logger: pino({ level: "silent" }),
    enqueue: (stack, flags) => enqueued.push(flags?.changed === true ? `${stack} changed` : stack),
    signal: new AbortController().signal,
    driftMs: 3_600_000,
    driftJitter: 0,
    knownStacks: options.knownStacks ?? [],
    loadBalancerClasses: CLASSES,
    clusterUid: OUR_UID,
    operationTimeoutMs: 600_000,
  });
  return { reconciler, calls, events, metrics, metas, cache, enqueued };
}

const reasons = (h: Harness): string[] => h.events.created.map((event) => `${event.involvedObject.name} ${event.reason}`);

describe("daemon/reconciler: removal and ownership", () => {
  it("never touches a Service of another class that carries the standard finalizer, even being deleted", async () => {
    const h = harness({ metas: [meta("theirs", { loadBalancerClass: "metallb.io/metallb", deleting: true })] });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.theirs", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, []);
    assert.deepEqual(reasons(h), []);
  });

  it("a Service of ours deleted before its stack existed loses the finalizer without an engine run", async () => {
    const h = harness({ metas: [meta("web", { deleting: true })] });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, ["setFinalizer default/web false"]);
    assert.deepEqual(reasons(h), ["web DeletedLoadBalancer"]);
  });

  it("a deleted Service of ours with a stack: inspect, destroy, events, finalizer, and the stack removed last", async () => {
    const h = harness({ metas: [meta("web", { deleting: true })], knownStacks: ["service.default.web"], recorded: { "service.default.web": OUR_UID } });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, ["inspect service.default.web", "destroy service.default.web", "setFinalizer default/web false", "removeStack service.default.web"]);
    assert.deepEqual(reasons(h), ["web DeletingLoadBalancer", "web DeletedLoadBalancer"]);
  });

  it("a Service turned ClusterIP without a stack of ours is not ours: no status write, no finalizer change", async () => {
    const h = harness({ metas: [meta("was-lb", { type: "ClusterIP" })] });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.was-lb", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, []);
  });

  it("a Service turned ClusterIP with our stack: destroyed, its ingress cleared, its finalizer removed", async () => {
    const h = harness({ metas: [meta("was-lb", { type: "ClusterIP" })], knownStacks: ["service.default.was-lb"] });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.was-lb", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      "inspect service.default.was-lb",
      "destroy service.default.was-lb",
      "setIngress default/was-lb []",
      "setFinalizer default/was-lb false",
      "removeStack service.default.was-lb",
    ]);
  });

  it("refuses, without retry, a stack that records another cluster's identity", async () => {
    const h = harness({ knownStacks: ["service.default.gone"], recorded: { "service.default.gone": "0ther000-0000-4000-8000-000000000009" } });
    const result = await h.reconciler.reconcile({ key: "service.default.gone", refresh: false });
    assert.deepEqual(result, {
      kind: "giveUp",
      reason:
        "stack service.default.gone belongs to the cluster whose kube-system Namespace has UID 0ther000-0000-4000-8000-000000000009, and this cluster's is " +
        `${OUR_UID}: refusing to touch it (check --kubeconfig, clusterId and the backend)`,
    });
    assert.deepEqual(h.calls, ["inspect service.default.gone"]);
    assert.equal((await h.metrics.foreignStacks.get()).values.find((v) => v.labels.kind === "service")?.value, 1);
  });

  it("the cluster stack of another cluster stops the start (verifyClusterStack)", async () => {
    const h = harness({ knownStacks: ["cluster"], recorded: { cluster: "0ther000-0000-4000-8000-000000000009" } });
    await assert.rejects(h.reconciler.verifyClusterStack(), { name: "ForeignStackError" });
  });

  it("the stack exists before our finalizer is added", async () => {
    const service = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const h = harness({ services: [service], metas: [meta("web", { finalizers: [], ingress: [] })] });
    // The cluster stack first: Service stacks wait for its instance groups.
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, ["up cluster", "ensureStack service.default.web", "setFinalizer default/web true", "up service.default.web"]);
  });

  it("an invalid Service deleted and created again unchanged is told again", async () => {
    const bad = lbService("default", "bad", "22222222-2222-4333-8444-555555555555", { ports: [{ protocol: "SCTP", port: 80 }] });
    const h = harness({ services: [bad], metas: [meta("bad", { finalizers: [], ingress: [] })] });
    const key = { key: "service.default.bad", refresh: false };
    assert.equal((await h.reconciler.reconcile(key)).kind, "giveUp");
    h.cache.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: [] });
    h.metas.delete("default/bad");
    assert.deepEqual(await h.reconciler.reconcile(key), { kind: "ok" });
    h.cache.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: [bad] });
    h.metas.set("default/bad", meta("bad", { finalizers: [], ingress: [] }));
    assert.equal((await h.reconciler.reconcile(key)).kind, "giveUp");
    assert.deepEqual(reasons(h), ["bad SyncLoadBalancerFailed", "bad SyncLoadBalancerFailed"]);
  });

  it("after a restart, a failing cluster stack does not hold back Services: they use what it recorded", async () => {
    const service = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const h = harness({
      services: [service],
      metas: [meta("web", { ingress: [] })],
      knownStacks: ["cluster"],
      recorded: { cluster: OUR_UID },
      outputs: { cluster: { instanceGroups: { "us-central1-a": "ig-a" }, routes: {} } },
      failUp: new Set(["cluster"]),
    });
    assert.equal((await h.reconciler.reconcile({ key: "cluster", refresh: false })).kind, "retry");
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, ["inspect cluster", "up cluster", "up service.default.web"]);
  });

  it("after a restart, an unchanged cluster stack read by verifyClusterStack still releases the Services waiting for it", async () => {
    const service = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const h = harness({
      services: [service],
      metas: [meta("web", { ingress: [] })],
      knownStacks: ["cluster"],
      recorded: { cluster: OUR_UID },
      outputs: { cluster: { instanceGroups: { "us-central1-a": "ig-a" }, routes: {} } },
      hashes: (cache) => ({ cluster: cache.view("cluster").hash ?? "" }),
    });
    await h.reconciler.verifyClusterStack();
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, ["inspect cluster", "up service.default.web"]);
  });

  it("a Service that ran before the cluster stack applied is run again as soon as it has, not after its retryAfter", async () => {
    const service = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const h = harness({ services: [service], metas: [meta("web", { ingress: [] })] });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "retryAfter", ms: 1000, reason: "waiting for the cluster stack" });
    assert.deepEqual(h.enqueued, ["cluster"]);
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.enqueued, ["cluster", "service.default.web changed"]);
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: true }), { kind: "ok" });
    assert.deepEqual(h.enqueued, ["cluster", "service.default.web changed"], "a later cluster run wakes no one");
    assert.deepEqual(h.calls, ["up cluster", "up service.default.web", "up cluster"]);
  });
});

/**
 * The Service/stack reconciler's ownership and removal rules, with in-memory stand-ins for the pulumi
 * runner and the apiserver writes: which calls are made, in which order.
 */
import * as assert from "node:assert/strict";
import pino from "pino";
import type { ControllerMetrics } from "../../../controllers/metrics";
import { Reconciler } from "../../../controllers/reconciler";

import type { UpOutcome } from "../../../stacks/runner";

import {
  forwardingRuleShape,
  instanceGroupKey,
  loadBalancerName,
  observedReferences,
  type Config,
  type DesiredState,
  LB_FINALIZER,
} from "../../../model";
import { withReferences, type ClusterReferences } from "../../../controllers/references";
import type { NodeInfo, ServiceInfo, ServiceNotice } from "../../../model/types";
import type { ServiceMeta } from "../../../watcher/informers";
import { DesiredCache } from "../../../model/desiredCache";
import { CONFIG, gceNode, lbService } from "../../support/builders";
import { MemoryEventSink } from "../../support/fakes/events";
import { newReconciler, type FakeControllerDeps } from "../../support/fakes/reconciler";
import type { ClusterObserver } from "../../../controllers/cluster/observer";
import { clusterNetworkOutcome } from "../../support/fakes/stack-runner";
import { counter } from "../../support/metrics";

const CLASSES = ["dccm.io/gce"];
const OUR_UID = "c1a55e00-0000-4000-8000-000000000001";

// ---- The reconciler with in-memory stand-ins ----------------------------------------------------------

interface Harness {
  reconciler: Reconciler;
  /** Every runner and writer call, in order. */
  calls: string[];
  events: MemoryEventSink;
  metrics: ControllerMetrics;
  metas: Map<string, ServiceMeta>;
  cache: DesiredCache;
  /** The instance groups (zone: instances) of each cluster `up`, in order. */
  clusterRuns: string[][];
  /** Every enqueue the reconciler asked for, as `stack` or `stack changed`. */
  enqueued: string[];
}

function meta(name: string, over: Partial<ServiceMeta> = {}): ServiceMeta {
  return {
    namespace: "default",
    name,
    uid: `uid-${name}`,
    type: "LoadBalancer",
    finalizers: [LB_FINALIZER],
    ingress: ["34.1.2.3"],
    deleting: false,
    ...over,
  };
}

function harness(
  options: {
    services?: ServiceInfo[];
    nodes?: NodeInfo[];
    metas?: ServiceMeta[];
    knownStacks?: string[];
    recorded?: Record<string, string>;
    outputs?: Record<string, Record<string, unknown>>;
    failUp?: Set<string>;
    /** What each `up` reports it changed. */
    changed?: UpOutcome["changed"];
    hashes?: (cache: DesiredCache) => Record<string, string>;
    deps?: (cache: DesiredCache) => Partial<FakeControllerDeps>;
    config?: Config;
    /** Told of each `up`, with the desired state it declares. */
    onUp?: (stack: string, desired: DesiredState) => void;
  } = {},
): Harness {
  const clusterRuns: string[][] = [];
  const h = newReconciler({
    config: options.config,
    nodes: options.nodes,
    services: options.services,
    metas: options.metas,
    runner: {
      inspect: (stack) => ({
        hash: options.hashes?.(h.cache)[stack],
        outputs: options.outputs?.[stack] ?? {},
        clusterUid: options.recorded?.[stack],
      }),
      up: (stack, desired) => {
        options.onUp?.(stack, desired);
        if (stack === "cluster")
          clusterRuns.push(
            desired.cluster.instanceGroups.map((group) => `${instanceGroupKey(group)}: ${group.instances.join(",")}`),
          );
        if (options.failUp?.has(stack) === true) throw new Error("googleapi: Error 429: Rate Limit Exceeded");
        return { ...clusterNetworkOutcome(stack, desired), changed: options.changed ?? [] };
      },
    },
    deps: ({ cache }) => ({
      knownStacks: options.knownStacks ?? [],
      loadBalancerClasses: CLASSES,
      clusterUid: OUR_UID,
      ...(options.deps?.(cache) ?? {}),
    }),
  });
  return {
    reconciler: h.reconciler,
    calls: h.calls,
    events: h.sink,
    metrics: h.metrics,
    metas: h.metas,
    cache: h.cache,
    clusterRuns,
    enqueued: h.enqueued,
  };
}

const reasons = (h: Harness): string[] =>
  h.events.created.map((event) => `${event.involvedObject.name} ${event.reason}`);

describe("controllers/reconciler: stacks --adopt did not adopt", () => {
  it("are held: no engine run, no write, no event, giveUp with the reason; the others run", async () => {
    const held = new Map([
      ["service.default.web", "would replace default/web:target-pool (pass --allow-replace to accept)"],
    ]);
    const h = harness({
      metas: [meta("web", { deleting: true })],
      knownStacks: ["service.default.web"],
      recorded: { "service.default.web": OUR_UID },
      deps: () => ({ adoptionHeld: held }),
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: true }), {
      kind: "giveUp",
      reason:
        "not adopted (would replace default/web:target-pool (pass --allow-replace to accept)); held until dccm daemon --adopt starts again",
    });
    assert.deepEqual(h.calls, []);
    assert.deepEqual(reasons(h), []);
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.gone", refresh: false }), { kind: "ok" });
  });
});

describe("controllers/reconciler: removal and ownership", () => {
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
    const h = harness({
      metas: [meta("web", { deleting: true })],
      knownStacks: ["service.default.web"],
      recorded: { "service.default.web": OUR_UID },
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      "inspect service.default.web",
      "destroy service.default.web",
      "setFinalizer default/web false",
      "removeStack service.default.web",
    ]);
    assert.deepEqual(reasons(h), ["web DeletingLoadBalancer", "web DeletedLoadBalancer"]);
  });

  it("a deleted Service's stack gone: its dccm_stack_runs_total series go too (one per Service ever seen would grow without bound)", async () => {
    const h = harness({
      metas: [meta("web", { deleting: true })],
      knownStacks: ["service.default.web"],
      recorded: { "service.default.web": OUR_UID },
    });
    const series = async (): Promise<unknown[]> => {
      const metric = h.metrics.registry.getSingleMetric("dccm_stack_runs_total");
      return metric === undefined ? ["no metric"] : (await metric.get()).values.map((value) => value.labels);
    };
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      "inspect service.default.web",
      "destroy service.default.web",
      "setFinalizer default/web false",
      "removeStack service.default.web",
    ]);
    assert.deepEqual(await series(), []);
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
    const h = harness({
      knownStacks: ["service.default.gone"],
      recorded: { "service.default.gone": "0ther000-0000-4000-8000-000000000009" },
    });
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
    assert.deepEqual(h.calls, [
      "up cluster",
      "ensureStack service.default.web",
      "setFinalizer default/web true",
      "up service.default.web",
    ]);
  });

  it("an invalid Service deleted and created again unchanged is told again", async () => {
    const bad = lbService("default", "bad", "22222222-2222-4333-8444-555555555555", {
      ports: [{ protocol: "SCTP", port: 80 }],
    });
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

  it("after a restart, an unchanged Service stack restores its status from what it recorded, reports its zones and gets its drift pass, with no up", async () => {
    const service = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const told: unknown[] = [];
    let drifted: (stack: string) => void = () => undefined;
    const driftPass = new Promise<string>((resolve) => (drifted = resolve));
    const h = harness({
      services: [service],
      metas: [meta("web", { ingress: [] })],
      knownStacks: ["cluster", "service.default.web"],
      recorded: { cluster: OUR_UID, "service.default.web": OUR_UID },
      outputs: {
        cluster: { instanceGroups: { "us-central1-a": "ig-a" }, routes: {} },
        "service.default.web": { loadBalancers: { "default/web": { ingress: ["34.1.2.3"] } } },
      },
      hashes: (cache) => ({
        cluster: cache.view("cluster").hash ?? "",
        "service.default.web": cache.view("service.default.web").hash ?? "",
      }),
      deps: () => ({
        fullRefreshMs: 1,
        observer: { referencesChanged: (references) => told.push(references) },
        enqueue: (stack, flags) => {
          if (flags?.refresh === true && stack !== "cluster") drifted(stack);
        },
      }),
    });
    await h.reconciler.verifyClusterStack();
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, ["inspect cluster", "inspect service.default.web", "setIngress default/web [34.1.2.3]"]);
    // First the stack read (no longer unread, holding no deny rule), then its zones.
    assert.deepEqual(told, [
      { zones: [], legacyHealthCheck: false },
      { zones: ["us-central1-a"], legacyHealthCheck: false },
    ]);
    assert.equal(await driftPass, "service.default.web");
    h.reconciler.stop();
  });

  it("a Service that ran before the cluster stack applied is run again as soon as it has, not after its retryAfter (a backstop: no polling meanwhile)", async () => {
    const service = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const h = harness({ services: [service], metas: [meta("web", { ingress: [] })] });
    // Not every second: each Service re-run once a second while the cluster stack's first up ran was
    // the retryAfter count of a healthy cluster (33 at a start with 6 Services).
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), {
      kind: "retryAfter",
      ms: 60_000,
      reason: "waiting for the cluster stack",
    });
    assert.deepEqual(h.enqueued, ["cluster"]);
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.enqueued, ["cluster", "service.default.web changed"]);
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: true }), { kind: "ok" });
    assert.deepEqual(h.enqueued, ["cluster", "service.default.web changed"], "a later cluster run wakes no one");
    assert.deepEqual(h.calls, ["up cluster", "up service.default.web", "up cluster"]);
  });
});

describe("controllers/reconciler: the cluster stack keeps what applied Service stacks point at", () => {
  const web = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
  const twoZones = [gceNode("n1", "u1", "us-central1-a", []), gceNode("n2", "u2", "us-central1-b", [])];
  /** The daemon's wiring: a change of what Service stacks point at recomputes the desired state. */
  const observeReferences = (cache: DesiredCache): Partial<FakeControllerDeps> => ({
    observer: {
      referencesChanged: (references) => {
        cache.observe({
          ...cache.lastObserved(),
          referencedZones: references.zones,
          legacyHealthCheckReferenced: references.legacyHealthCheck,
        });
      },
    },
  });

  it("a zone scaled to zero: its group is emptied first, and deleted only after the Service stack dropped the zone", async () => {
    const h = harness({ services: [web], nodes: twoZones, metas: [meta("web")], deps: observeReferences });
    const cluster = { key: "cluster", refresh: false };
    const service = { key: "service.default.web", refresh: false };
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(h.cache.lastObserved().referencedZones, ["us-central1-a", "us-central1-b"]);
    h.cache.update({ nodes: [twoZones[0]], services: [web] });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(h.cache.lastObserved().referencedZones, ["us-central1-a"]);
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(h.clusterRuns, [
      ["us-central1-a: n1", "us-central1-b: n2"],
      ["us-central1-a: n1", "us-central1-b: "],
      ["us-central1-a: n1"],
    ]);
  });

  it("a failed Service run keeps what the stack pointed at before; its removal releases it", async () => {
    const failUp = new Set<string>();
    const h = harness({ services: [web], nodes: twoZones, metas: [meta("web")], failUp, deps: observeReferences });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    await h.reconciler.reconcile({ key: "service.default.web", refresh: false });
    h.cache.update({ nodes: [twoZones[0]], services: [web] });
    failUp.add("service.default.web");
    assert.equal((await h.reconciler.reconcile({ key: "service.default.web", refresh: false })).kind, "retry");
    assert.deepEqual(h.cache.lastObserved().referencedZones, ["us-central1-a", "us-central1-b"]);
    h.metas.set("default/web", meta("web", { deleting: true }));
    h.cache.update({ nodes: [twoZones[0]], services: [] });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.cache.lastObserved().referencedZones, []);
    assert.deepEqual(h.calls.slice(-3), [
      "destroy service.default.web",
      "setFinalizer default/web false",
      "removeStack service.default.web",
    ]);
  });

  it("asks GCE which instances are gone before a cluster run, and runs what that observation gives", async () => {
    const seen: string[] = [];
    const h = harness({
      nodes: twoZones,
      deps: (cache) => ({
        observer: {
          observeInstances: async () => {
            seen.push(
              cache
                .locatedNodes()
                .map((located) => located.node.name)
                .join(","),
            );
            cache.observe({ ...cache.lastObserved(), goneInstances: [{ zone: "us-central1-b", name: "n2" }] });
          },
        },
      }),
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    // Applied and unchanged: no run, so no question either.
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(seen, ["n1,n2"]);
    assert.deepEqual(h.clusterRuns, [["us-central1-a: n1"]]);
  });
});

describe("controllers/reconciler: spec.loadBalancerIP checked before the up", () => {
  const withIp = lbService("default", "web", "11111111-2222-4333-8444-555555555555", {
    loadBalancerIP: "203.0.113.77",
  });
  it("a refused IP: a Warning naming the field, no stack, no finalizer, no up, and a retry", async () => {
    const asked: string[] = [];
    const h = harness({
      services: [withIp],
      metas: [meta("web", { finalizers: [], ingress: [] })],
      deps: () => ({
        verifyRequestedIp: async (service) => {
          asked.push(`${service.key} ${service.userIP ?? ""}`);
          return "Service default/web: spec.loadBalancerIP: 203.0.113.77 is not ours";
        },
      }),
    });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    const result = await h.reconciler.reconcile({ key: "service.default.web", refresh: false });
    assert.equal(result.kind, "retry");
    assert.deepEqual(asked, ["default/web 203.0.113.77"]);
    assert.deepEqual(h.calls, ["up cluster"]);
    assert.deepEqual(
      h.events.created.map((event) => [event.reason, event.message]),
      [
        [
          "SyncLoadBalancerFailed",
          "Error syncing load balancer: Service default/web: spec.loadBalancerIP: 203.0.113.77 is not ours",
        ],
      ],
    );
  });
  it("a PreferDualStack Service that falls back to IPv4 gets a Warning IPv6Unavailable naming the reason, once per change", async () => {
    const prefer = lbService("default", "web", "11111111-2222-4333-8444-555555555555", {
      ipFamilies: ["IPv4", "IPv6"],
      ipFamilyPolicy: "PreferDualStack",
      annotations: { "cloud.google.com/network-tier": "Standard" },
    });
    const h = harness({ services: [prefer], metas: [meta("web", { finalizers: [], ingress: [] })] });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    await h.reconciler.reconcile({ key: "service.default.web", refresh: true });
    assert.deepEqual(
      h.events.created.map((event) => [event.reason, event.message]),
      [
        ["EnsuringLoadBalancer", "Ensuring load balancer"],
        [
          "IPv6Unavailable",
          "spec.ipFamilyPolicy PreferDualStack: the load balancer serves IPv4 only: metadata.annotations[cloud.google.com/network-tier]: IPv6 load balancers are Premium tier only",
        ],
        ["EnsuredLoadBalancer", "Ensured load balancer"],
      ],
    );
  });
  it("a Service's plan notices are Warnings with their reason, after EnsuringLoadBalancer, once per change", async () => {
    const notices: ServiceNotice[] = [
      {
        reason: "BackendLimit",
        message: "internal passthrough load balancers distribute to at most 250 VMs with instance-group backends",
      },
      { reason: "SubsetTruncated", message: "300 eligible nodes, subset of 250" },
    ];
    const h = harness({
      services: [lbService("default", "web", "11111111-2222-4333-8444-555555555555")],
      metas: [meta("web", { finalizers: [], ingress: [] })],
      deps: (cache) => {
        // The model's notices (model/ owns them) stood in for: the view the controller reads, with notices.
        const view = cache.view.bind(cache);
        cache.view = (stack) => {
          const seen = view(stack);
          return seen.service === undefined ? seen : { ...seen, service: { ...seen.service, notices } };
        };
        return {};
      },
    });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    await h.reconciler.reconcile({ key: "service.default.web", refresh: true });
    assert.deepEqual(
      h.events.created.map((event) => [event.type, event.reason, event.message]),
      [
        ["Normal", "EnsuringLoadBalancer", "Ensuring load balancer"],
        ["Warning", "BackendLimit", notices[0].message],
        ["Warning", "SubsetTruncated", notices[1].message],
        ["Normal", "EnsuredLoadBalancer", "Ensured load balancer"],
      ],
    );
  });
  it("an accepted IP (or one Compute could not check) goes on to the up; a Service without one is not asked about", async () => {
    const asked: string[] = [];
    const plain = lbService("default", "plain", "22222222-2222-4333-8444-555555555555");
    const h = harness({
      services: [withIp, plain],
      metas: [meta("web", { finalizers: [], ingress: [] }), meta("plain", { finalizers: [], ingress: [] })],
      deps: () => ({
        verifyRequestedIp: async (service) => {
          asked.push(service.key);
          return undefined;
        },
      }),
    });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.plain", refresh: false }), { kind: "ok" });
    assert.deepEqual(asked, ["default/web"]);
    assert.deepEqual(
      h.calls.filter((call) => call.startsWith("up ")),
      ["up cluster", "up service.default.web", "up service.default.plain"],
    );
  });
});

describe("controllers/reconciler: one info line per operation", () => {
  function capture(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
    const lines: Array<Record<string, unknown>> = [];
    const stream = { write: (line: string): void => void lines.push(JSON.parse(line) as Record<string, unknown>) };
    return { logger: pino({ level: "info" }, stream), lines };
  }
  const pick = (lines: Array<Record<string, unknown>>): unknown[] =>
    lines.map(({ msg, stack, operation, changed }) => ({
      msg,
      stack,
      operation,
      ...(changed !== undefined ? { changed } : {}),
    }));

  it("an up that changed something logs the stack, the operation and what changed; one that changed nothing stays at debug", async () => {
    const { logger, lines } = capture();
    const web = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
    const h = harness({
      services: [web],
      metas: [meta("web", { finalizers: [], ingress: [] })],
      changed: [
        {
          urn: "urn:pulumi:s::p::gcp:compute/forwardingRule:ForwardingRule::default/web:forwarding-rule-tcp",
          type: "gcp:compute/forwardingRule:ForwardingRule",
          name: "default/web:forwarding-rule-tcp",
          op: "create",
        },
      ],
      deps: () => ({ logger }),
    });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    await h.reconciler.reconcile({ key: "service.default.web", refresh: false });
    assert.deepEqual(pick(lines), [
      {
        msg: "stack updated",
        stack: "cluster",
        operation: "up",
        changed: "ForwardingRule default/web:forwarding-rule-tcp (create)",
      },
      {
        msg: "stack updated",
        stack: "service.default.web",
        operation: "up",
        changed: "ForwardingRule default/web:forwarding-rule-tcp (create)",
      },
    ]);
    assert.equal(typeof lines[1].seconds, "number");
  });

  it("a deleted load balancer logs one line with the stack and how long the destroy took", async () => {
    const { logger, lines } = capture();
    const h = harness({
      metas: [meta("web", { deleting: true })],
      knownStacks: ["service.default.web"],
      recorded: { "service.default.web": OUR_UID },
      deps: () => ({ logger }),
    });
    await h.reconciler.reconcile({ key: "service.default.web", refresh: false });
    assert.deepEqual(pick(lines), [
      { msg: "load balancer deleted", stack: "service.default.web", operation: "destroy" },
    ]);
    assert.equal(typeof lines[0].seconds, "number");
  });
});

describe("controllers/reconciler: a zone beyond the instance-group limit", () => {
  const LIMIT: Config = { ...CONFIG, instanceGroupLimit: 2 };
  const web = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
  const zoneA = (...names: string[]): NodeInfo[] =>
    names.map((name) => gceNode(name, `uid-${name}`, "us-central1-a", []));
  const IG2 = "us-central1-a/k8s-ig2--c0ffee1234";
  /** The daemon's wiring (daemon/daemon.ts): references and the applied membership recompute the desired state. */
  const wiring = (cache: DesiredCache): Pick<ClusterObserver, "referencesChanged" | "groupMembers"> => ({
    referencesChanged: (references) =>
      cache.observe({
        ...cache.lastObserved(),
        ...observedReferences(references.zones),
        legacyHealthCheckReferenced: references.legacyHealthCheck,
      }),
    groupMembers: (members) => cache.observe({ ...cache.lastObserved(), groupMembers: members }),
  });
  const cluster = { key: "cluster", refresh: false };
  const service = { key: "service.default.web", refresh: false };

  it("joins and leaves move nobody; an emptied numbered group stays until the Service stack dropped it", async () => {
    const h = harness({
      services: [web],
      nodes: zoneA("n1", "n2", "n3"),
      metas: [meta("web")],
      deps: (cache) => ({ observer: wiring(cache) }),
      config: LIMIT,
    });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(h.cache.lastObserved().referencedGroups, [IG2]);
    h.cache.update({ nodes: zoneA("n0", "n1", "n2", "n3"), services: [web] });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    h.cache.update({ nodes: zoneA("n1", "n2"), services: [web] });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(h.cache.lastObserved().referencedGroups, []);
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(h.clusterRuns, [
      ["us-central1-a: n1,n2", `${IG2}: n3`],
      ["us-central1-a: n1,n2", `${IG2}: n0,n3`],
      ["us-central1-a: n1,n2", `${IG2}: `],
      ["us-central1-a: n1,n2"],
    ]);
  });

  it("a Service stack listing a numbered group waits until the cluster stack applied it", async () => {
    const h = harness({
      services: [web],
      nodes: zoneA("n1", "n2", "n3"),
      metas: [meta("web")],
      deps: (cache) => ({ observer: wiring(cache) }),
      config: LIMIT,
    });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    h.cache.update({ nodes: zoneA("n1", "n2", "n3", "n4", "n5"), services: [web] });
    assert.equal((await h.reconciler.reconcile(service)).kind, "retryAfter");
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(
      h.calls.filter((call) => call.startsWith("up")),
      ["up cluster", "up service.default.web", "up cluster", "up service.default.web"],
    );
  });

  it("after a restart, the recorded membership is told before the first cluster run: nobody moves", async () => {
    const told: Array<Record<string, string[]>> = [];
    const h = harness({
      services: [],
      nodes: zoneA("n0", "n1", "n2", "n3"),
      knownStacks: ["cluster"],
      recorded: { cluster: OUR_UID },
      outputs: {
        cluster: {
          instanceGroups: { "us-central1-a": "ig-a", [IG2]: "ig-a-2" },
          instanceGroupMembers: { "us-central1-a/k8s-ig--c0ffee1234": ["n2", "n3"], [IG2]: ["n1"] },
          routes: {},
        },
      },
      deps: (cache) => ({
        observer: { groupMembers: (members) => (told.push(members), wiring(cache).groupMembers(members)) },
      }),
      config: LIMIT,
    });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(h.calls, ["inspect cluster", "up cluster"]);
    assert.deepEqual(h.clusterRuns, [["us-central1-a: n2,n3", `${IG2}: n0,n1`]]);
    assert.deepEqual(told, [
      { "us-central1-a/k8s-ig--c0ffee1234": ["n2", "n3"], [IG2]: ["n1"] },
      { "us-central1-a/k8s-ig--c0ffee1234": ["n2", "n3"], [IG2]: ["n0", "n1"] },
    ]);
  });
});

describe("controllers/reconciler: enableL4DenyFirewall turned off across a restart: each deny rule deleted before any allow rule moves back to 1000", () => {
  const UID = "11111111-2222-4333-8444-555555555555";
  const web = lbService("default", "web", UID);
  const LB = loadBalancerName(UID);

  it("the cluster stack's firewall stays at 999 while the Service stack is unread, then while it holds its deny rule; the Service's first run deletes the deny rule alone, the next moves its allow rules to 1000", async () => {
    const on = new DesiredCache({ ...CONFIG, enableL4DenyFirewall: true });
    on.update({ nodes: [gceNode("n1", "u1", "us-central1-a", [])], services: [web] });
    const ups: string[] = [];
    const changes: string[] = [];
    const h = harness({
      services: [web],
      metas: [meta("web", { ingress: ["34.1.2.3"] })],
      knownStacks: ["cluster", "service.default.web"],
      recorded: { cluster: OUR_UID, "service.default.web": OUR_UID },
      outputs: {
        cluster: {
          instanceGroups: { "us-central1-a": "ig-a" },
          instanceGroupMembers: { "us-central1-a/k8s-ig--e2e0cafe": ["n1"] },
          routes: {},
          nodeHealthCheckFirewallPriority: 999,
        },
        "service.default.web": {
          loadBalancers: {
            "default/web": {
              ingress: ["34.1.2.3"],
              resources: { firewalls: [`k8s-fw-${LB}`, `k8s-fw-${LB}-deny`] },
              // The deny rule's removal replaces no forwarding rule: no pin of its IP.
              forwardingRuleShape: forwardingRuleShape(on.desired().services[0]),
            },
          },
        },
      },
      // As applied with the deny rules on, before the restart.
      hashes: () => ({
        cluster: on.view("cluster").hash ?? "",
        "service.default.web": on.view("service.default.web").hash ?? "",
      }),
      onUp: (stack, desired) => {
        const service = desired.services.find((candidate) => candidate.stack === stack);
        ups.push(
          service === undefined
            ? `${stack}: node-http-hc ${desired.cluster.nodeHealthCheckFirewall.priority}`
            : `${stack}: k8s-fw ${service.firewall.priority}, deny ${service.denyFirewall?.name ?? "none"}`,
        );
      },
      // The daemon's wiring (daemon/wiring.ts newReconciler, controllers/cluster/observer.ts).
      deps: (cache) => {
        let references: ClusterReferences = { zones: [], legacyHealthCheck: false, unread: true };
        let aboveDeny = false;
        const observe = (): void => {
          for (const change of cache.observe(withReferences(cache.lastObserved(), references, aboveDeny)))
            changes.push(change.stack);
        };
        return {
          observer: {
            referencesChanged: (told) => {
              references = told;
              observe();
            },
            recordedFirewall: (told) => {
              aboveDeny = told;
              observe();
            },
            groupMembers: (members) => cache.observe({ ...cache.lastObserved(), groupMembers: members }),
          },
        };
      },
    });
    const cluster = { key: "cluster", refresh: false };
    const service = { key: "service.default.web", refresh: false };
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(
      ups,
      [],
      "unread Service stacks may hold deny rules: the cluster stack keeps its firewall at 999 (as applied: no run)",
    );
    assert.deepEqual(h.cache.lastObserved().denyRulesUnread, true);
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(ups, [`service.default.web: k8s-fw 999, deny none`]);
    assert.deepEqual(h.cache.lastObserved().denyRulesHeld, undefined);
    // The cluster firewall held (unread), the Service read (its deny rule held), its deny rule deleted: both run again.
    assert.deepEqual(changes, ["cluster", "service.default.web", "cluster", "service.default.web"]);
    assert.deepEqual(await h.reconciler.reconcile(service), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile(cluster), { kind: "ok" });
    assert.deepEqual(ups, [
      `service.default.web: k8s-fw 999, deny none`,
      `service.default.web: k8s-fw 1000, deny none`,
      "cluster: node-http-hc 1000",
    ]);
    // (The stand-in's up records no ingress: the status writes are left out.)
    assert.deepEqual(
      h.calls.filter((call) => !call.startsWith("setIngress")),
      [
        "inspect cluster",
        "inspect service.default.web",
        "up service.default.web",
        "up service.default.web",
        "up cluster",
      ],
    );
  });
});

describe("controllers/reconciler: a GCE quota refusal", () => {
  const web = lbService("default", "web", "11111111-2222-4333-8444-555555555555");
  const quotaError = new Error("pulumi up of service.default.web failed", {
    cause: new Error(
      "error: 1 error occurred:\n\t* Error creating Address: googleapi: Error 403: Quota 'STATIC_ADDRESSES' exceeded. Limit: 8.0 in region us-central1., quotaExceeded",
    ),
  });
  it("a Warning QuotaExceeded naming the quota, counted by quota, and one try per quota wait (retryAfter 5 minutes, no failure backoff)", async () => {
    const h = harness({
      services: [web],
      metas: [meta("web", { finalizers: [], ingress: [] })],
      onUp: (stack) => {
        if (stack === "service.default.web") throw quotaError;
      },
    });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    const result = await h.reconciler.reconcile({ key: "service.default.web", refresh: false });
    assert.deepEqual(result, { kind: "retryAfter", ms: 300_000, reason: "GCE quota STATIC_ADDRESSES exceeded" });
    assert.deepEqual(
      h.events.created
        .filter((event) => event.type === "Warning")
        .map((event) => [event.involvedObject.name, event.reason, event.message]),
      [
        [
          "web",
          "QuotaExceeded",
          "Error syncing load balancer: GCE quota STATIC_ADDRESSES (limit 8 in region us-central1) exceeded; release unused resources or raise the quota. Next try in 5 minutes, or at once when the desired state changes",
        ],
      ],
    );
    assert.equal(
      await counter(h.metrics.registry, "dccm_gce_quota_exceeded_total", {
        kind: "service",
        quota: "STATIC_ADDRESSES",
      }),
      1,
    );
  });
});

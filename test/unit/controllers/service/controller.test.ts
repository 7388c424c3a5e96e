/**
 * Tier 2: a Service repair through the reconciler (controllers/service/controller.ts with
 * controllers/service/repairs.ts), the runner and the apiserver as stand-ins: a run that is not a change of the
 * Service is planned first, pinned, and held (typed retry, Warning, metric) when it would change the IP.
 */
import * as assert from "node:assert/strict";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import type { Adoption } from "../../../../components/adoption";

import type { ControllerMetrics } from "../../../../controllers/metrics";
import { Reconciler } from "../../../../controllers/reconciler";
import { ADDRESS_TYPE, FORWARDING_RULE_TYPE, IpChangeHeldError } from "../../../../controllers/service/repairs";
import { AddressPinError } from "../../../../controllers/service/addressPins";

import { DesiredCache } from "../../../../model/desiredCache";
import { CONFIG, gceNode, lbService } from "../../../support/builders";
import { counter } from "../../../support/metrics";
import { MemoryEventSink } from "../../../support/fakes/events";
import { CLUSTER_UID, memoryAddressPins, newReconciler } from "../../../support/fakes/reconciler";
import { clusterNetworkOutcome } from "../../../support/fakes/stack-runner";
import { forwardingRuleShape, LB_FINALIZER, type Config, type ServiceInfo } from "../../../../model";
import type { AddressPinning } from "../../../../controllers/service/controller";
import type { PutBack } from "../../../../stacks/events";

const IP = "203.0.113.8";
const UID = "0b1f2f6e-4c1a-4d59-9e0e-7c1f9d1c2a3b";
const LB = "a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3";
const STACK = "service.default.web";
const URN = `urn:pulumi:${STACK}::dccm-c1::dccm:gcp:ServiceLoadBalancer$`;

function step(
  op: string,
  type: string,
  name: string,
  before: string | undefined,
  after: string | undefined,
): StepEventMetadata {
  const field = type === ADDRESS_TYPE ? "address" : "ipAddress";
  const state = (ip: string | undefined): Record<string, unknown> => ({
    type,
    urn: "",
    id: "",
    parent: "",
    provider: "",
    inputs: ip === undefined ? {} : { [field]: ip },
    outputs: ip === undefined ? {} : { [field]: ip },
  });
  const meta: Record<string, unknown> = { op, type, urn: `${URN}${type}::${name}`, provider: "" };
  if (before !== undefined) meta.old = state(before);
  meta.new = state(after);
  return meta as unknown as StepEventMetadata;
}

interface Harness {
  reconciler: Reconciler;
  calls: string[];
  adoptions: Array<Adoption | undefined>;
  events: MemoryEventSink;
  metrics: ControllerMetrics;
  cache: DesiredCache;
}

/** Every IPv4 address reserved for the Service's life: repairs pin `<lb>` itself (repairPins). */
const ALWAYS: Config = { ...CONFIG, addressReservation: "always" };

function harness(plan: StepEventMetadata[]): Harness {
  const adoptions: Array<Adoption | undefined> = [];
  // As a stack of a Service reserving <lb> for life records it.
  const outputs = {
    loadBalancers: { "default/web": { ingress: [IP], resources: { address: LB, forwardingRules: [LB] } } },
    instanceGroups: {},
    routes: {},
  };
  const h = newReconciler({
    config: ALWAYS,
    services: [lbService("default", "web", UID)],
    runner: {
      record: (operation, stack, opts) =>
        operation === "up" || operation === "preview"
          ? `${operation} ${stack}${opts?.refresh === true ? " --refresh" : ""}`
          : undefined,
      up: (stack, _desired, opts) => {
        adoptions.push(opts.adoption);
        return {
          outputs:
            stack === "cluster"
              ? { instanceGroups: { "us-central1-a": "ig" }, instanceGroupMembers: {}, routes: {} }
              : outputs,
          changed: [],
        };
      },
      preview: (_stack, _desired, opts) => {
        adoptions.push(opts.adoption);
        for (const metadata of plan) opts.onStep(metadata);
      },
    },
    deps: () => ({
      watcher: {
        meta: (namespace, name) => ({
          namespace,
          name,
          uid: "uid-web",
          type: "LoadBalancer",
          finalizers: [LB_FINALIZER],
          ingress: [IP],
          deleting: false,
        }),
      },
      writer: { setFinalizer: async () => true, setIngress: async () => true, setAnnotation: async () => true },
    }),
  });
  return { reconciler: h.reconciler, calls: h.calls, adoptions, events: h.sink, metrics: h.metrics, cache: h.cache };
}

/** The Service applied once (a change: neither planned nor pinned), the record cleared of calls. */
async function applied(plan: StepEventMetadata[]): Promise<Harness> {
  const h = harness(plan);
  assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
  assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
  assert.deepEqual(h.calls, ["up cluster", `up ${STACK}`]);
  assert.deepEqual(h.adoptions, [undefined, undefined]);
  h.calls.length = 0;
  h.adoptions.length = 0;
  h.events.created.length = 0;
  return h;
}

const PINS: Adoption = {
  imports: new Set(),
  addressIps: new Map([[`projects/dccm-test/regions/us-central1/addresses/${LB}`, IP]]),
};

describe("controllers/service/controller: a Service repair keeps the IP (controllers/service/repairs.ts; addressReservation always)", () => {
  it("a refresh whose plan changes nothing: the preview only, no up", async () => {
    const h = await applied([
      step("same", ADDRESS_TYPE, "default/web:address", IP, IP),
      step("same", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP, IP),
    ]);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: true }), { kind: "ok" });
    assert.deepEqual(h.calls, [`preview ${STACK} --refresh`]);
    assert.deepEqual(h.adoptions, [PINS]);
  });

  it("a released address reserved again with the IP its rule serves: previewed and applied with the same pins", async () => {
    const h = await applied([
      step("create", ADDRESS_TYPE, "default/web:address", undefined, IP),
      step("same", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP, IP),
    ]);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: true }), { kind: "ok" });
    assert.deepEqual(h.calls, [`preview ${STACK} --refresh`, `up ${STACK} --refresh`]);
    assert.deepEqual(h.adoptions, [PINS, PINS]);
    assert.equal(await counter(h.metrics.registry, "dccm_ip_changes_held_total", {}), 0);
  });

  it("a plan replacing the rule onto an unknown IP: held, no up, Warning IPChangeHeld, the metric, a typed retry", async () => {
    const h = await applied([
      step("create", ADDRESS_TYPE, "default/web:address", undefined, undefined),
      step("replace", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP, undefined),
    ]);
    const result = await h.reconciler.reconcile({ key: STACK, refresh: true });
    const message =
      `Not repaired: the run would not keep the load balancer's IP ${IP}: Address default/web:address (create): a new IP would be allocated; ` +
      "ForwardingRule default/web:forwarding-rule-tcp (replace): its IP is not known before the run: GCE would allocate a new one. " +
      `Nothing was applied; retried with backoff. Reserve ${IP} again as address ${LB} in us-central1 if the project still holds it, or delete and create the Service again to take a new IP`;
    assert.equal(result.kind, "retry");
    assert.ok(result.kind === "retry" && result.error instanceof IpChangeHeldError);
    assert.equal(result.error.message, `stack ${STACK}: ${message}`);
    assert.deepEqual(h.calls, [`preview ${STACK} --refresh`]);
    assert.deepEqual(
      h.events.created.map((event) => [event.type, event.reason, event.message]),
      [["Warning", "IPChangeHeld", message]],
    );
    assert.equal(await counter(h.metrics.registry, "dccm_ip_changes_held_total", {}), 1);
  });

  it("a change of the Service, even with a refresh asked, is neither planned nor pinned (it may take a new IP)", async () => {
    const h = await applied([step("replace", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP, undefined)]);
    h.cache.update({
      nodes: [gceNode("n1", "u1", "us-central1-a", [])],
      services: [lbService("default", "web", UID, { annotations: { "cloud.google.com/network-tier": "Standard" } })],
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: true }), { kind: "ok" });
    assert.deepEqual(h.calls, [`up ${STACK} --refresh`]);
    assert.deepEqual(h.adoptions, [undefined]);
  });
});

const ADDRESS_ID = `projects/dccm-test/regions/us-central1/addresses/${LB}`;
const STANDARD: Partial<ServiceInfo> = { annotations: { "cloud.google.com/network-tier": "Standard" } };
const putBack = (type: string, name: string, op: string): PutBack => ({
  urn: `${URN}${type}::${name}`,
  type,
  name,
  op,
});
/** What a pinned run changes: `<lb>` imported, the rule replaced on it. */
const PINNED_CHANGES = [
  putBack(ADDRESS_TYPE, "default/web:address", "create"),
  putBack(FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", "replace"),
];
/** What a release changes: `<lb>` deleted, the IP left on the rule. */
const RELEASE_CHANGES = [putBack(ADDRESS_TYPE, "default/web:address", "delete")];

interface PinHarness extends Harness {
  enqueued: string[];
}

/**
 * The reconciler over a Service in the default `transient` mode: each up records its adoption and
 * reports the outputs a Service stack records (`<lb>` only while a pin reserves it, the rule shape
 * of the Service as declared) and the changes of a pinned run or a release.
 */
function pinHarness(
  options: {
    config?: Config;
    services?: ServiceInfo[];
    addressPins?: (calls: string[]) => AddressPinning;
    plan?: StepEventMetadata[];
    /** A Service stack found at start-up, unchanged since (its hash the current one), with these outputs. */
    recorded?: Record<string, unknown>;
  } = {},
): PinHarness {
  const adoptions: Array<Adoption | undefined> = [];
  const h = newReconciler({
    config: options.config,
    services: options.services ?? [lbService("default", "web", UID)],
    runner: {
      record: (operation, stack, opts) =>
        operation === "up" || operation === "preview"
          ? `${operation} ${stack}${opts?.refresh === true ? " --refresh" : ""}`
          : undefined,
      inspect: (stack) =>
        stack === STACK && options.recorded !== undefined
          ? { hash: h.cache.view(STACK).hash, outputs: options.recorded, clusterUid: CLUSTER_UID }
          : {},
      up: (stack, desired, opts) => {
        if (stack === "cluster") return clusterNetworkOutcome(stack, desired);
        adoptions.push(opts.adoption);
        const service = desired.services.find((candidate) => candidate.stack === stack);
        assert.ok(service !== undefined);
        const pin = opts.adoption?.addressPins?.get(service.key);
        return {
          outputs: {
            loadBalancers: {
              [service.key]: {
                ingress: [IP],
                resources: {
                  ...(pin?.reserve === true || service.reserveAddress === true ? { address: LB } : {}),
                  forwardingRules: [LB],
                },
                forwardingRuleShape: forwardingRuleShape(service),
              },
            },
          },
          changed: pin === undefined ? [] : pin.reserve ? PINNED_CHANGES : RELEASE_CHANGES,
        };
      },
      ...(options.plan !== undefined
        ? {
            preview: (_stack: string, _desired: unknown, opts: { onStep: (step: StepEventMetadata) => void }) => {
              for (const metadata of options.plan ?? []) opts.onStep(metadata);
            },
          }
        : {}),
    },
    deps: ({ calls }) => ({
      knownStacks: options.recorded !== undefined ? ["cluster", STACK] : [],
      watcher: {
        meta: (namespace, name) => ({
          namespace,
          name,
          uid: "uid-web",
          type: "LoadBalancer",
          finalizers: [LB_FINALIZER],
          ingress: [IP],
          deleting: false,
        }),
      },
      ...(options.addressPins !== undefined ? { addressPins: options.addressPins(calls) } : {}),
    }),
  });
  return {
    reconciler: h.reconciler,
    calls: h.calls,
    adoptions,
    events: h.sink,
    metrics: h.metrics,
    cache: h.cache,
    enqueued: h.enqueued,
  };
}

/** The Service applied once (its first run: nothing published yet, nothing to pin), the record cleared. */
async function appliedTransient(h: PinHarness): Promise<PinHarness> {
  assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
  assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
  assert.deepEqual(h.calls, ["up cluster", `up ${STACK}`]);
  assert.deepEqual(h.adoptions, [undefined]);
  h.calls.length = 0;
  h.adoptions.length = 0;
  h.events.created.length = 0;
  return h;
}

/** The Service changed to the Standard tier: a new forwarding-rule shape. */
function toStandardTier(h: PinHarness): void {
  h.cache.update({
    nodes: [gceNode("n1", "u1", "us-central1-a", [])],
    services: [lbService("default", "web", UID, STANDARD)],
  });
}

const holding = (ip: string, reserve: boolean, imports: string[]): Adoption => ({
  imports: new Set(imports),
  addressPins: new Map([["default/web", { ip, reserve }]]),
});

describe("controllers/service/controller: a transient Service's IP pinned around a run that may replace its forwarding rule (addressPins.ts)", () => {
  it("a change of shape (Standard tier): the published IP pinned, a run holding it that imports <lb>, a second run releasing it; the next sync runs nothing", async () => {
    const h = await appliedTransient(pinHarness({ addressPins: memoryAddressPins }));
    toStandardTier(h);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [`pin default/web ${IP}`, `up ${STACK}`, `up ${STACK}`]);
    assert.deepEqual(h.adoptions, [holding(IP, true, [ADDRESS_ID]), holding(IP, false, [])]);
    assert.deepEqual(
      h.events.created.map((event) => [event.type, event.reason]),
      [
        ["Normal", "EnsuringLoadBalancer"],
        ["Normal", "EnsuredLoadBalancer"],
      ],
    );
    // The released run's outputs are what the stack records: no <lb> left to release.
    h.calls.length = 0;
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, []);
  });

  it("a change of the same shape (source ranges): no pin, one run", async () => {
    const h = await appliedTransient(pinHarness({ addressPins: memoryAddressPins }));
    h.cache.update({
      nodes: [gceNode("n1", "u1", "us-central1-a", [])],
      services: [lbService("default", "web", UID, { loadBalancerSourceRanges: ["10.0.0.0/8"] })],
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [`up ${STACK}`]);
    assert.deepEqual(h.adoptions, [undefined]);
  });

  it("a stack that already holds <lb> (a pinned run killed after its import): pinned again, nothing imported", async () => {
    const h = await appliedTransient(
      pinHarness({ addressPins: (calls) => memoryAddressPins(calls, { held: new Set([ADDRESS_ID]) }) }),
    );
    toStandardTier(h);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [`pin default/web ${IP}`, `up ${STACK}`, `up ${STACK}`]);
    assert.deepEqual(h.adoptions, [holding(IP, true, []), holding(IP, false, [])]);
  });

  it("no Compute access to pin (no addressPins): no run; retried with AddressPinError, told as SyncLoadBalancerFailed", async () => {
    const h = await appliedTransient(pinHarness());
    toStandardTier(h);
    const result = await h.reconciler.reconcile({ key: STACK, refresh: false });
    const message =
      "Service default/web: a run that may replace its forwarding rule needs its IP reserved first, and this daemon has no Compute access to reserve it";
    assert.equal(result.kind, "retry");
    assert.ok(result.kind === "retry" && result.error instanceof AddressPinError);
    assert.equal(result.error.message, message);
    assert.deepEqual(h.calls, []);
    assert.deepEqual(
      h.events.created.map((event) => [event.type, event.reason, event.message]),
      [
        ["Normal", "EnsuringLoadBalancer", "Ensuring load balancer"],
        ["Warning", "SyncLoadBalancerFailed", `Error syncing load balancer: ${message}`],
      ],
    );
  });

  it("a pin GCE refuses (the IP is no rule's any more): no run; retried, the pin's error told", async () => {
    const refusal = new AddressPinError("default/web", `could not reserve ${IP} as address ${LB}`);
    const h = await appliedTransient(
      pinHarness({ addressPins: (calls) => memoryAddressPins(calls, { fail: refusal }) }),
    );
    toStandardTier(h);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "retry", error: refusal });
    assert.deepEqual(h.calls, [`pin default/web ${IP}`]);
    assert.deepEqual(h.adoptions, []);
  });

  it("after a restart, a stack whose outputs hold <lb> (an earlier release's, or a pinned run's): one run with the rule on the IP, no <lb>, no pin", async () => {
    const h = pinHarness({
      addressPins: memoryAddressPins,
      recorded: {
        loadBalancers: {
          "default/web": { ingress: [IP], resources: { address: LB, forwardingRules: [LB] } },
        },
      },
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    h.calls.length = 0;
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [`up ${STACK}`]);
    assert.deepEqual(h.adoptions, [holding(IP, false, [])]);
    assert.deepEqual(h.events.created, []);
    h.calls.length = 0;
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [], "released: nothing left to run");
  });

  it("a repair replacing the rule on its IP: pinned, run with --refresh holding it, released; DriftCorrected names the rule, not the pin's address", async () => {
    const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    const h = await appliedTransient(
      pinHarness({
        addressPins: memoryAddressPins,
        plan: [step("replace", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP, unknown)],
      }),
    );
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: true }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `preview ${STACK} --refresh`,
      `pin default/web ${IP}`,
      `up ${STACK} --refresh`,
      `up ${STACK}`,
    ]);
    assert.deepEqual(h.adoptions, [holding(IP, true, [ADDRESS_ID]), holding(IP, false, [])]);
    assert.deepEqual(
      h.events.created.map((event) => [event.type, event.reason, event.message]),
      [["Normal", "DriftCorrected", "Put back: ForwardingRule default/web:forwarding-rule-tcp (replace)"]],
    );
    assert.equal(await counter(h.metrics.registry, "dccm_drift_corrections_total", { kind: "service" }), 1);
  });

  it("after a restart, a drift pass on a stack holding <lb>: released with --refresh; dccm's own reservation going is no drift put back", async () => {
    const h = pinHarness({
      addressPins: memoryAddressPins,
      recorded: {
        loadBalancers: {
          "default/web": { ingress: [IP], resources: { address: LB, forwardingRules: [LB] } },
        },
      },
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    h.calls.length = 0;
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: true }), { kind: "ok" });
    assert.deepEqual(h.calls, [`up ${STACK} --refresh`]);
    assert.deepEqual(h.adoptions, [holding(IP, false, [])]);
    assert.deepEqual(h.events.created, []);
    assert.equal(await counter(h.metrics.registry, "dccm_drift_corrections_total", { kind: "service" }), 0);
  });

  it("a UDP port added (the IP now shared, reserved for life): the published IP pinned for good, one run importing <lb>, no release", async () => {
    const h = await appliedTransient(pinHarness({ addressPins: memoryAddressPins }));
    h.cache.update({
      nodes: [gceNode("n1", "u1", "us-central1-a", [])],
      services: [
        lbService("default", "web", UID, {
          ports: [
            { name: "http", protocol: "TCP", port: 80 },
            { name: "dns", protocol: "UDP", port: 53 },
          ],
        }),
      ],
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [`pin default/web ${IP}`, `up ${STACK}`]);
    assert.deepEqual(h.adoptions, [holding(IP, true, [ADDRESS_ID])]);
  });

  it("addressReservation always: a change of shape runs once, no pin (<lb> holds the IP for life)", async () => {
    const h = await appliedTransient(pinHarness({ config: ALWAYS, addressPins: memoryAddressPins }));
    toStandardTier(h);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [`up ${STACK}`]);
    assert.deepEqual(h.adoptions, [undefined]);
  });
});

describe("controllers/service/controller: a neg Service whose NEGs were not listed since the start", () => {
  it("runs nothing, says its stack waits for the listing (which wakes it), and retries after the backstop", async () => {
    const waiting: string[] = [];
    const h = newReconciler({
      config: { ...CONFIG, subnetwork: "k8s-subnet" },
      services: [lbService("default", "web", UID, { annotations: { "dccm.io/backend": "neg" } })],
      metas: [
        {
          namespace: "default",
          name: "web",
          uid: UID,
          type: "LoadBalancer",
          finalizers: [],
          ingress: [],
          deleting: false,
        },
      ],
      runner: {
        up: (stack) => ({
          outputs:
            stack === "cluster"
              ? { instanceGroups: { "us-central1-a": "ig" }, instanceGroupMembers: {}, routes: {} }
              : {},
          changed: [],
        }),
      },
      deps: () => ({ negsListed: () => false, waitForNegs: (stack) => waiting.push(stack) }),
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), {
      kind: "retryAfter",
      ms: 60_000,
      reason: "waiting for the NEG controller to list its NEGs",
    });
    assert.deepEqual(h.calls, ["up cluster"]);
    assert.deepEqual(waiting, [STACK]);
  });
});

describe("controllers/service/controller: firewallManagement manual (manualFirewalls.ts)", () => {
  it("after a Service stack's up, told the Service, its desired state and the up's outputs; not after a run with no up", async () => {
    const told: [string, string, unknown][] = [];
    const outputs = { loadBalancers: { "default/web": { ingress: [IP], publishedFirewalls: [] } } };
    const h = newReconciler({
      services: [lbService("default", "web", UID)],
      metas: [
        {
          namespace: "default",
          name: "web",
          uid: UID,
          type: "LoadBalancer",
          finalizers: [],
          ingress: [],
          deleting: false,
        },
      ],
      runner: {
        up: (stack) => ({
          outputs:
            stack === "cluster"
              ? { instanceGroups: { "us-central1-a": "ig" }, instanceGroupMembers: {}, routes: {} }
              : outputs,
          changed: [],
        }),
      },
      deps: () => ({
        manualFirewalls: {
          tell: (target, service, upOutputs) => {
            told.push([`${target.namespace ?? ""}/${target.name}`, service.key, upOutputs]);
            return Promise.resolve();
          },
        },
      }),
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(told, []);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(told, [["default/web", "default/web", outputs]]);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(
      h.calls.filter((call) => call.startsWith("up ")),
      ["up cluster", `up ${STACK}`],
    );
    assert.equal(told.length, 1);
  });
});

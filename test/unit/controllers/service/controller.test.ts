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

import { DesiredCache } from "../../../../model/desiredCache";
import { gceNode, lbService } from "../../../support/builders";
import { counter } from "../../../support/metrics";
import { MemoryEventSink } from "../../../support/fakes/events";
import { newReconciler } from "../../../support/fakes/reconciler";
import { LB_FINALIZER } from "../../../../model";

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

function harness(plan: StepEventMetadata[]): Harness {
  const adoptions: Array<Adoption | undefined> = [];
  const outputs = { loadBalancers: { "default/web": { ingress: [IP] } }, instanceGroups: {}, routes: {} };
  const h = newReconciler({
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

describe("controllers/service/controller: a Service repair keeps the IP (controllers/service/repairs.ts)", () => {
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

/**
 * Refresh now (annotation dccm.io/refresh-requested): tier 1, the pure decisions of
 * controllers/service/refreshRequest.ts (which value is pending, the answer a sync's outcome gives
 * it); tier 2, the Service controller over the shared fakes: a new value runs the stack as a drift
 * pass would (planned first, pinned), is answered once with an Event, the metric and the handled
 * annotation, and a value answered is not run again.
 */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";

import {
  pendingRefresh,
  refreshAnswer,
  REFRESH_FAILED,
  REFRESHED,
  type RefreshOutcome,
} from "../../../../controllers/service/refreshRequest";
import { ADDRESS_TYPE, FORWARDING_RULE_TYPE } from "../../../../controllers/service/repairs";
import type { ServiceMeta } from "../../../../watcher/informers";
import { serviceMeta } from "../../../../watcher/informers";
import { trimService } from "../../../../watcher/trim";
import { ANNOTATION_REFRESH_HANDLED, ANNOTATION_REFRESH_REQUESTED, LB_FINALIZER } from "../../../../model";
import { lbService } from "../../../support/builders";
import { counter } from "../../../support/metrics";
import { newReconciler, type ReconcilerHarness } from "../../../support/fakes/reconciler";

describe("controllers/service/refreshRequest: pendingRefresh", () => {
  const table: Array<[string, Parameters<typeof pendingRefresh>[0], string | undefined, string | undefined]> = [
    ["no Service", undefined, undefined, undefined],
    ["no annotation", {}, undefined, undefined],
    ["an empty value asks for nothing", { refreshRequested: "  " }, undefined, undefined],
    ["a new value", { refreshRequested: "t1" }, undefined, "t1"],
    ["a new value, another one handled before", { refreshRequested: "t2", refreshHandled: "t1" }, undefined, "t2"],
    [
      "handled on the Service (after a restart)",
      { refreshRequested: "t1", refreshHandled: "t1" },
      undefined,
      undefined,
    ],
    ["answered by this daemon, the watch not showing it yet", { refreshRequested: "t1" }, "t1", undefined],
    ["answered an older one", { refreshRequested: "t2" }, "t1", "t2"],
    [
      "spaces around the value are not a new request",
      { refreshRequested: " t1 ", refreshHandled: "t1" },
      undefined,
      undefined,
    ],
  ];
  for (const [name, meta, answered, expected] of table) {
    it(name, () => assert.equal(pendingRefresh(meta, answered), expected));
  }

  it("property: a value once answered (recorded here, or handled on the Service) is never pending again; a value not answered is", () => {
    fc.assert(
      fc.property(fc.string(), fc.option(fc.string(), { nil: undefined }), (requested, handled) => {
        const meta = { refreshRequested: requested, ...(handled === undefined ? {} : { refreshHandled: handled }) };
        const pending = pendingRefresh(meta, undefined);
        assert.equal(pending !== undefined, requested.trim() !== "" && requested.trim() !== handled?.trim());
        if (pending === undefined) return;
        assert.equal(pendingRefresh(meta, pending), undefined);
        assert.equal(pendingRefresh({ refreshRequested: requested, refreshHandled: pending }, undefined), undefined);
      }),
    );
  });
});

describe("controllers/service/refreshRequest: refreshAnswer", () => {
  const ok = { kind: "ok" } as const;
  const table: Array<[string, RefreshOutcome, ReturnType<typeof refreshAnswer>]> = [
    [
      "no drift",
      { action: "apply", result: ok, finding: { kind: "clean" } },
      { type: "Normal", reason: REFRESHED, result: "clean", message: "Refresh t1: no drift: GCE matches the stack" },
    ],
    [
      "drift put back",
      { action: "apply", result: ok, finding: { kind: "repaired", putBack: "Firewall k8s-fw-a (update)" } },
      {
        type: "Normal",
        reason: REFRESHED,
        result: "repaired",
        message: "Refresh t1: drift repaired: put back Firewall k8s-fw-a (update)",
      },
    ],
    [
      "the Service's own change applied",
      { action: "apply", result: ok, finding: { kind: "applied", putBack: "" } },
      {
        type: "Normal",
        reason: REFRESHED,
        result: "applied",
        message: "Refresh t1: applied the Service's pending change",
      },
    ],
    [
      "held: it would change the IP",
      { action: "apply", result: { kind: "retry", error: new Error("held") }, finding: { kind: "held" } },
      {
        type: "Warning",
        reason: REFRESH_FAILED,
        result: "held",
        message:
          "Refresh t1: drift found, not repaired: the repair would not keep the load balancer's IP (see the IPChangeHeld event)",
      },
    ],
    [
      "the run failed",
      {
        action: "apply",
        result: { kind: "retry", error: new Error("x") },
        finding: undefined,
        error: "googleapi: Error 403: denied",
      },
      {
        type: "Warning",
        reason: REFRESH_FAILED,
        result: "failed",
        message: "Refresh t1: failed: googleapi: Error 403: denied; retried with backoff",
      },
    ],
    [
      "an invalid Service",
      { action: "reject", result: { kind: "giveUp", reason: "the Service is invalid: bad port" }, finding: undefined },
      {
        type: "Warning",
        reason: REFRESH_FAILED,
        result: "invalid",
        message: "Refresh t1: not run: the Service is invalid: bad port",
      },
    ],
    [
      "the stack is locked: pending",
      { action: "apply", result: { kind: "retryAfter", ms: 5000, reason: "stack locked" }, finding: undefined },
      undefined,
    ],
    [
      "shutting down: pending",
      { action: "apply", result: { kind: "giveUp", reason: "shutting down" }, finding: undefined },
      undefined,
    ],
    [
      "waiting for the cluster stack: pending",
      {
        action: "other",
        result: { kind: "retryAfter", ms: 60_000, reason: "waiting for the cluster stack" },
        finding: undefined,
      },
      undefined,
    ],
    [
      "a sync that ran nothing (the Service went away): pending",
      { action: "apply", result: ok, finding: undefined },
      undefined,
    ],
  ];
  for (const [name, outcome, expected] of table) {
    it(name, () => assert.deepEqual(refreshAnswer("t1", outcome), expected));
  }
});

describe("watcher/informers serviceMeta: the refresh annotations", () => {
  it("carries both values, and neither when absent", () => {
    const base = { metadata: { namespace: "default", name: "web", uid: "u" }, spec: { type: "LoadBalancer" } };
    const annotated = {
      ...base,
      metadata: {
        ...base.metadata,
        annotations: { [ANNOTATION_REFRESH_REQUESTED]: "t2", [ANNOTATION_REFRESH_HANDLED]: "t1" },
      },
    };
    assert.deepEqual(serviceMeta(annotated), {
      namespace: "default",
      name: "web",
      uid: "u",
      type: "LoadBalancer",
      finalizers: [],
      ingress: [],
      deleting: false,
      refreshRequested: "t2",
      refreshHandled: "t1",
    });
    assert.equal("refreshRequested" in serviceMeta(base), false);
    assert.equal("refreshHandled" in serviceMeta(base), false);
  });

  it("trimService leaves them out of the model's view (a request is no change of the desired state), every other annotation kept", () => {
    const service = {
      metadata: {
        namespace: "default",
        name: "web",
        uid: "u",
        annotations: {
          [ANNOTATION_REFRESH_REQUESTED]: "t2",
          [ANNOTATION_REFRESH_HANDLED]: "t1",
          "cloud.google.com/network-tier": "Standard",
        },
      },
      spec: { type: "LoadBalancer" },
    };
    assert.deepEqual(trimService(service).annotations, { "cloud.google.com/network-tier": "Standard" });
    const plain = {
      ...service,
      metadata: { ...service.metadata, annotations: { "cloud.google.com/network-tier": "Standard" } },
    };
    assert.deepEqual(trimService(service), trimService(plain));
  });
});

const IP = "203.0.113.8";
const UID = "0b1f2f6e-4c1a-4d59-9e0e-7c1f9d1c2a3b";
const STACK = "service.default.web";
const URN = `urn:pulumi:${STACK}::dccm-c1::dccm:gcp:ServiceLoadBalancer$`;

function step(op: string, type: string, name: string, ip: string | undefined): StepEventMetadata {
  const field = type === ADDRESS_TYPE ? "address" : "ipAddress";
  const state = {
    type,
    urn: "",
    id: "",
    parent: "",
    provider: "",
    inputs: ip === undefined ? {} : { [field]: ip },
    outputs: ip === undefined ? {} : { [field]: ip },
  };
  return {
    op,
    type,
    urn: `${URN}${type}::${name}`,
    provider: "",
    ...(op === "create" ? {} : { old: state }),
    new: state,
  } as unknown as StepEventMetadata;
}

const SAME = [
  step("same", ADDRESS_TYPE, "default/web:address", IP),
  step("same", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP),
];
const ADDRESS_RESERVED_AGAIN = [
  step("create", ADDRESS_TYPE, "default/web:address", IP),
  step("same", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", IP),
];
const NEW_IP = [
  step("create", ADDRESS_TYPE, "default/web:address", undefined),
  step("replace", FORWARDING_RULE_TYPE, "default/web:forwarding-rule-tcp", undefined),
];

interface Harness extends ReconcilerHarness {
  meta: ServiceMeta;
}

/** The Service applied once; then the plan `plan` for every later preview, the calls and events cleared. */
async function applied(plan: StepEventMetadata[]): Promise<Harness> {
  const meta: ServiceMeta = {
    namespace: "default",
    name: "web",
    uid: UID,
    type: "LoadBalancer",
    finalizers: [LB_FINALIZER],
    ingress: [IP],
    deleting: false,
  };
  const outputs = { loadBalancers: { "default/web": { ingress: [IP] } }, instanceGroups: {}, routes: {} };
  let previewed = false;
  const h = newReconciler({
    services: [lbService("default", "web", UID)],
    metas: [meta],
    runner: {
      record: (operation, stack, opts) =>
        operation === "up" || operation === "preview"
          ? `${operation} ${stack}${opts?.refresh === true ? " --refresh" : ""}`
          : undefined,
      up: (stack) => ({
        outputs:
          stack === "cluster"
            ? { instanceGroups: { "us-central1-a": "ig" }, instanceGroupMembers: {}, routes: {} }
            : outputs,
        changed:
          previewed && plan === ADDRESS_RESERVED_AGAIN
            ? [
                {
                  urn: `${URN}${ADDRESS_TYPE}::default/web:address`,
                  type: ADDRESS_TYPE,
                  name: "default/web:address",
                  op: "create",
                },
              ]
            : [],
      }),
      preview: (_stack, _desired, opts) => {
        previewed = true;
        for (const metadata of plan) opts.onStep(metadata);
      },
    },
  });
  assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
  assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
  h.calls.length = 0;
  h.sink.created.length = 0;
  return { ...h, meta };
}

/** The Service with the annotations (the watcher's meta, as a watch event would bring it). */
function annotate(h: Harness, annotations: Pick<ServiceMeta, "refreshRequested" | "refreshHandled">): void {
  h.metas.set("default/web", { ...h.meta, ...annotations });
}

function told(h: Harness): Array<[string | undefined, string | undefined, string | undefined, string | undefined]> {
  return h.sink.created.map((event) => [event.type, event.reason, event.message, event.involvedObject.uid]);
}

describe("controllers/service: a refresh request through the reconciler", () => {
  it("a new value with no drift: the stack planned with a refresh (no up), answered Refreshed once, the metric, the value recorded as handled", async () => {
    const h = await applied(SAME);
    annotate(h, { refreshRequested: "t1" });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `preview ${STACK} --refresh`,
      `setAnnotation default/web ${ANNOTATION_REFRESH_HANDLED}=t1`,
    ]);
    assert.deepEqual(told(h), [["Normal", REFRESHED, "Refresh t1: no drift: GCE matches the stack", UID]]);
    assert.equal(await counter(h.metrics.registry, "dccm_refresh_requests_total", { result: "clean" }), 1);

    // The same value again (the handled annotation not seen yet, then seen): nothing runs, nothing is told.
    h.calls.length = 0;
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    annotate(h, { refreshRequested: "t1", refreshHandled: "t1" });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, []);
    assert.equal(h.sink.created.length, 1);

    // A new value runs again.
    annotate(h, { refreshRequested: "t2", refreshHandled: "t1" });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `preview ${STACK} --refresh`,
      `setAnnotation default/web ${ANNOTATION_REFRESH_HANDLED}=t2`,
    ]);
    assert.deepEqual(told(h)[1], ["Normal", REFRESHED, "Refresh t2: no drift: GCE matches the stack", UID]);
    assert.equal(await counter(h.metrics.registry, "dccm_refresh_requests_total", { result: "clean" }), 2);
  });

  it("drift: repaired in a pinned up --refresh, told as DriftCorrected and answered with what was put back", async () => {
    const h = await applied(ADDRESS_RESERVED_AGAIN);
    annotate(h, { refreshRequested: "t1" });
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      `preview ${STACK} --refresh`,
      `up ${STACK} --refresh`,
      `setAnnotation default/web ${ANNOTATION_REFRESH_HANDLED}=t1`,
    ]);
    assert.deepEqual(told(h), [
      ["Normal", "DriftCorrected", "Put back: Address default/web:address (create)", UID],
      ["Normal", REFRESHED, "Refresh t1: drift repaired: put back Address default/web:address (create)", UID],
    ]);
    assert.equal(await counter(h.metrics.registry, "dccm_refresh_requests_total", { result: "repaired" }), 1);
  });

  it("a repair that would change the IP: held (no up), answered RefreshFailed next to IPChangeHeld; the queue's retry goes on", async () => {
    const h = await applied(NEW_IP);
    annotate(h, { refreshRequested: "t1" });
    const result = await h.reconciler.reconcile({ key: STACK, refresh: false });
    assert.equal(result.kind, "retry");
    assert.deepEqual(h.calls, [
      `preview ${STACK} --refresh`,
      `setAnnotation default/web ${ANNOTATION_REFRESH_HANDLED}=t1`,
    ]);
    assert.deepEqual(
      told(h).map(([type, reason]) => [type, reason]),
      [
        ["Warning", "IPChangeHeld"],
        ["Warning", REFRESH_FAILED],
      ],
    );
    assert.equal(
      told(h)[1]?.[2],
      "Refresh t1: drift found, not repaired: the repair would not keep the load balancer's IP (see the IPChangeHeld event)",
    );
    assert.equal(await counter(h.metrics.registry, "dccm_refresh_requests_total", { result: "held" }), 1);
  });

  it("a drift pass's refresh with no request is not answered (no Refreshed event, no annotation)", async () => {
    const h = await applied(SAME);
    assert.deepEqual(await h.reconciler.reconcile({ key: STACK, refresh: true }), { kind: "ok" });
    assert.deepEqual(h.calls, [`preview ${STACK} --refresh`]);
    assert.deepEqual(told(h), []);
  });
});

/**
 * Tiers 1 and 2 of the leak detector's parts around the classification: the ledger (parsing, its
 * ConfigMap writes, and where the reconciler writes it), stack ownership from exported
 * deployments, the daemon's monitor (metric and Warning), and `dccm gc`'s plan and text.
 */
import * as assert from "node:assert/strict";
import { ApiException, type CoreV1Api, type V1ConfigMap } from "@kubernetes/client-node";
import fc from "fast-check";
import pino from "pino";

import { EventRecorder } from "../../../runtime/events";
import { LeakMetrics } from "../../../leaks/metrics";
import { Reconciler } from "../../../controllers/reconciler";

import { type Leak, type LedgerEntry } from "../../../leaks/classify";
import { formatLeaks, formatOutcomes, gcHeader, planGc } from "../../../leaks/gc";
import {
  ConfigMapLedger,
  decideClusterId,
  ledgerValue,
  parseClaims,
  parseLedger,
  type Claimant,
  type ClusterIdDecision,
  type LedgerClaim,
} from "../../../leaks/ledger";
import { LeakMonitor } from "../../../leaks/monitor";
import { deploymentOwnership, readOwnership } from "../../../leaks/ownership";
import { loadBalancerName, LB_FINALIZER } from "../../../model";
import type { ServiceMeta } from "../../../watcher/informers";
import { lbService } from "../../support/builders";
import { MemoryEventSink } from "../../support/fakes/events";
import { newReconciler } from "../../support/fakes/reconciler";
import { resourceId, type ResourceKind, resourceIdOfPath } from "../../../gce/resources";

const UID = "3f6e1d2a-8b4c-4d5e-9f01-23456789abcd";
const LB = loadBalancerName(UID);
const CLUSTER_UID = "c1a55e00-0000-4000-8000-000000000001";
const silent = pino({ level: "silent" });

function notFound(): ApiException<string> {
  return new ApiException(
    404,
    "HTTP-Code: 404",
    '{"kind":"Status","message":"configmaps \\"dccm-load-balancers\\" not found"}',
    {},
  );
}

/** ConfigMap reads and writes of the apiserver, in memory: merge patches of data keys (null removes one). */
class FakeConfigMaps {
  data: Record<string, string> | undefined;
  annotations: Record<string, string> = {};
  /** metadata.resourceVersion, bumped on each write; a patch naming another one is a 409. */
  version = 1;
  /** Called before a write is applied: a concurrent writer's change. */
  beforeWrite: (() => void) | undefined;
  readonly calls: string[] = [];

  api(): CoreV1Api {
    const api = {
      readNamespacedConfigMap: async (req: { namespace: string; name: string }): Promise<V1ConfigMap> => {
        this.calls.push(`read ${req.namespace}/${req.name}`);
        if (this.data === undefined) throw notFound();
        return {
          metadata: {
            name: req.name,
            namespace: req.namespace,
            annotations: { ...this.annotations },
            resourceVersion: String(this.version),
          },
          data: { ...this.data },
        };
      },
      patchNamespacedConfigMap: async (req: {
        namespace: string;
        name: string;
        body: {
          data?: Record<string, string | null>;
          metadata?: { annotations?: Record<string, string>; resourceVersion?: string };
        };
      }): Promise<V1ConfigMap> => {
        this.calls.push(`patch ${req.namespace}/${req.name} ${JSON.stringify(req.body)}`);
        this.beforeWrite?.();
        if (this.data === undefined) throw notFound();
        const expected = req.body.metadata?.resourceVersion;
        if (expected !== undefined && expected !== String(this.version))
          throw new ApiException(
            409,
            "HTTP-Code: 409",
            '{"kind":"Status","message":"the object has been modified"}',
            {},
          );
        for (const [key, value] of Object.entries(req.body.data ?? {})) {
          if (value === null) delete this.data[key];
          else this.data[key] = value;
        }
        Object.assign(this.annotations, req.body.metadata?.annotations ?? {});
        this.version++;
        return {};
      },
      createNamespacedConfigMap: async (req: { namespace: string; body: V1ConfigMap }): Promise<V1ConfigMap> => {
        const annotations = req.body.metadata?.annotations;
        this.calls.push(
          `create ${req.namespace}/${req.body.metadata?.name ?? ""} ${JSON.stringify(req.body.data)}${annotations === undefined ? "" : ` annotations ${JSON.stringify(annotations)}`}`,
        );
        this.beforeWrite?.();
        if (this.data !== undefined)
          throw new ApiException(
            409,
            "HTTP-Code: 409",
            '{"kind":"Status","message":"configmaps \\"dccm-load-balancers\\" already exists"}',
            {},
          );
        this.data = { ...(req.body.data ?? {}) };
        this.annotations = { ...(annotations ?? {}) };
        return req.body;
      },
    };
    return api as unknown as CoreV1Api;
  }
}

describe("leaks/ledger", () => {
  it("parseLedger keeps the well-formed entries only (a hand-edited value proves nothing)", () => {
    const parsed = parseLedger({
      [LB]: ledgerValue({ clusterId: "c0ffee1234", service: "default/web", uid: UID }),
      anotjson: "{",
      anarray: "[1]",
      amissing: '{"clusterId":"c0ffee1234","service":"default/x"}',
      anumber: '{"clusterId":1,"service":"default/x","uid":"u"}',
    });
    assert.deepEqual([...parsed], [[LB, { clusterId: "c0ffee1234", service: "default/web", uid: UID }]]);
    assert.deepEqual([...parseLedger(undefined)], []);
  });

  it("the first entry creates the ConfigMap; an entry already written is not written again", async () => {
    const fake = new FakeConfigMaps();
    const ledger = new ConfigMapLedger(fake.api(), "c0ffee1234");
    await ledger.record(LB, { key: "default/web", uid: UID });
    await ledger.record(LB, { key: "default/web", uid: UID });
    const value = `{"clusterId":"c0ffee1234","service":"default/web","uid":"${UID}"}`;
    assert.deepEqual(fake.calls, [
      "read kube-system/dccm-load-balancers",
      `patch kube-system/dccm-load-balancers {"data":{"${LB}":${JSON.stringify(value)}}}`,
      `create kube-system/dccm-load-balancers {"${LB}":${JSON.stringify(value)}}`,
    ]);
    assert.deepEqual(fake.data, { [LB]: value });
  });

  it("forget drops every entry of the Service written under our clusterId, and no other", async () => {
    const fake = new FakeConfigMaps();
    const other = loadBalancerName("11111111-2222-4333-8444-555555555555");
    const theirs = loadBalancerName("77777777-8888-4999-aaaa-bbbbbbbbbbbb");
    fake.data = {
      [LB]: ledgerValue({ clusterId: "c0ffee1234", service: "default/web", uid: UID }),
      // The same Service under an earlier UID (deleted and created again while its stack lived).
      [other]: ledgerValue({
        clusterId: "c0ffee1234",
        service: "default/web",
        uid: "11111111-2222-4333-8444-555555555555",
      }),
      [theirs]: ledgerValue({
        clusterId: "beef0000",
        service: "default/web",
        uid: "77777777-8888-4999-aaaa-bbbbbbbbbbbb",
      }),
    };
    const ledger = new ConfigMapLedger(fake.api(), "c0ffee1234");
    await ledger.forget("default/web");
    await ledger.forget("default/absent");
    assert.deepEqual(fake.calls, [
      "read kube-system/dccm-load-balancers",
      `patch kube-system/dccm-load-balancers {"data":{"${LB}":null,"${other}":null}}`,
      "read kube-system/dccm-load-balancers",
    ]);
    assert.deepEqual(Object.keys(fake.data), [theirs]);
  });

  it("never rewrites an entry another clusterId wrote: an error naming the load balancer, the Service and both clusterIds", async () => {
    const fake = new FakeConfigMaps();
    const theirs = ledgerValue({ clusterId: "reliab01", service: "default/web", uid: UID });
    fake.data = { [LB]: theirs };
    const ledger = new ConfigMapLedger(fake.api(), "other02");
    await assert.rejects(ledger.record(LB, { key: "default/web", uid: UID }), {
      message:
        `recording load balancer ${LB} of Service default/web in ConfigMap kube-system/dccm-load-balancers: ` +
        `it is recorded for Service default/web under clusterId reliab01, not other02; dccm never rewrites another clusterId's entry`,
    });
    assert.deepEqual(fake.calls, ["read kube-system/dccm-load-balancers"]);
    assert.deepEqual(fake.data, { [LB]: theirs });
  });

  it("an entry another clusterId wrote after our last read is found by the read before the write", async () => {
    const fake = new FakeConfigMaps();
    const second = loadBalancerName("11111111-2222-4333-8444-555555555555");
    const ledger = new ConfigMapLedger(fake.api(), "other02");
    await ledger.record(LB, { key: "default/web", uid: UID });
    const theirs = ledgerValue({
      clusterId: "reliab01",
      service: "default/api",
      uid: "11111111-2222-4333-8444-555555555555",
    });
    fake.data = { ...fake.data, [second]: theirs };
    await assert.rejects(ledger.record(second, { key: "default/api", uid: "11111111-2222-4333-8444-555555555555" }), {
      message:
        `recording load balancer ${second} of Service default/api in ConfigMap kube-system/dccm-load-balancers: ` +
        `it is recorded for Service default/api under clusterId reliab01, not other02; dccm never rewrites another clusterId's entry`,
    });
    assert.equal(fake.data[second], theirs);
  });

  it("an apiserver refusal is an error naming the ConfigMap and the Service", async () => {
    const api = {
      readNamespacedConfigMap: async (): Promise<V1ConfigMap> => ({ data: {} }),
      patchNamespacedConfigMap: async (): Promise<V1ConfigMap> => {
        throw new ApiException(
          403,
          "HTTP-Code: 403",
          '{"kind":"Status","message":"configmaps \\"dccm-load-balancers\\" is forbidden"}',
          {},
        );
      },
    } as unknown as CoreV1Api;
    await assert.rejects(new ConfigMapLedger(api, "c0ffee1234").record(LB, { key: "default/web", uid: UID }), {
      message: `recording load balancer ${LB} of Service default/web in ConfigMap kube-system/dccm-load-balancers: HTTP 403: configmaps "dccm-load-balancers" is forbidden`,
    });
  });
});

const MANAGED_ELSEWHERE = (under: string, evidence: string): string =>
  `this cluster (kube-system UID ${CLUSTER_UID}) is managed by dccm under clusterId ${under} (${evidence}), not other02: ` +
  `changing a clusterId is a migration, not a restart (every GCE name and the Pulumi project depend on it); start dccm with clusterId ${under}`;
const BY_CLAIM = (clusterId: string, classes: string): string =>
  `annotation claim.dccm.io/${clusterId} of ConfigMap kube-system/dccm-load-balancers, load balancer class ${classes}`;
const BY_ENTRY = (clusterId: string, lb: string, service: string): string =>
  `its ledger ConfigMap kube-system/dccm-load-balancers records load balancer ${lb} of Service ${service} for it`;
const GCE_CLASS = ["dccm.io/gce"];

describe("leaks/ledger: one clusterId per set of Services", () => {
  const entry = (clusterId: string, service = "default/web"): LedgerEntry => ({ clusterId, service, uid: UID });
  const ME: Claimant = { clusterId: "other02", loadBalancerClasses: GCE_CLASS };
  const claims = (...pairs: Array<[string, string[]]>): Map<string, string[]> => new Map(pairs);
  const SERVICES = new Map<string, string | undefined>([
    ["default/web", undefined],
    ["default/team-b", "dccm.io/team-b"],
  ]);
  const table: Array<[string, LedgerClaim, ClusterIdDecision]> = [
    ["nothing yet: claim", { claims: claims(), entries: new Map() }, { kind: "claim" }],
    [
      "only our entries (an older dccm's install): claim",
      { claims: claims(), entries: new Map([[LB, entry("other02")]]) },
      { kind: "claim" },
    ],
    ["our claim, same classes", { claims: claims(["other02", GCE_CLASS]), entries: new Map() }, { kind: "ours" }],
    [
      "our claim with other classes (the config changed them): claimed again",
      { claims: claims(["other02", ["dccm.io/x"]]), entries: new Map() },
      { kind: "claim" },
    ],
    [
      "another clusterId's claim of our class",
      { claims: claims(["reliab01", GCE_CLASS]), entries: new Map() },
      { kind: "refuse", message: MANAGED_ELSEWHERE("reliab01", BY_CLAIM("reliab01", "dccm.io/gce")) },
    ],
    [
      "another clusterId's claim of other classes (a daemon per class, test/e2e/safety): claim",
      { claims: claims(["team-b", ["dccm.io/team-b"]]), entries: new Map() },
      { kind: "claim" },
    ],
    [
      "no claims, another clusterId's entry of a Service we handle (an older dccm's install)",
      { claims: claims(), entries: new Map([[LB, entry("reliab01")]]) },
      { kind: "refuse", message: MANAGED_ELSEWHERE("reliab01", BY_ENTRY("reliab01", LB, "default/web")) },
    ],
    [
      "another clusterId's entry of a Service of another class: claim",
      { claims: claims(), entries: new Map([[LB, entry("team-b", "default/team-b")]]) },
      { kind: "claim" },
    ],
    [
      "another clusterId's entry of a Service that is gone: claim",
      { claims: claims(), entries: new Map([[LB, entry("reliab01", "default/gone")]]) },
      { kind: "claim" },
    ],
    [
      "two others: both named, sorted, each with its evidence",
      {
        claims: claims(["zeta9", ["dccm.io/gce", "dccm.io/x"]]),
        entries: new Map([
          ["a1", entry("zeta9")],
          ["a2", entry("reliab01")],
        ]),
      },
      {
        kind: "refuse",
        message: MANAGED_ELSEWHERE(
          "reliab01, zeta9",
          `${BY_ENTRY("reliab01", "a2", "default/web")}; ${BY_CLAIM("zeta9", "dccm.io/gce")}`,
        ),
      },
    ],
  ];
  for (const [name, claim, expected] of table) {
    it(`decideClusterId: ${name}`, () => assert.deepEqual(decideClusterId(claim, ME, CLUSTER_UID, SERVICES), expected));
  }

  it("property: a claim of another clusterId sharing a class always refuses, whatever the entries; our own never does", () => {
    const id = fc.stringMatching(/^[a-z][a-z0-9]{0,9}$/);
    const classes = fc.uniqueArray(fc.constantFrom("dccm.io/gce", "dccm.io/a", "dccm.io/b"), { minLength: 1 });
    fc.assert(
      fc.property(
        id,
        classes,
        id,
        classes,
        fc.array(id, { maxLength: 4 }),
        (ours, ourClasses, other, otherClasses, entryIds) => {
          const claim = {
            claims: new Map([[other, otherClasses]]),
            entries: new Map(entryIds.map((clusterId, index) => [`a${index}`, entry(clusterId)])),
          };
          const decision = decideClusterId(
            claim,
            { clusterId: ours, loadBalancerClasses: ourClasses },
            CLUSTER_UID,
            SERVICES,
          ).kind;
          if (other !== ours && otherClasses.some((name) => ourClasses.includes(name)))
            assert.equal(decision, "refuse");
          if (
            entryIds.every((clusterId) => clusterId === ours) &&
            (other === ours || !otherClasses.some((name) => ourClasses.includes(name)))
          )
            assert.notEqual(decision, "refuse");
        },
      ),
    );
  });

  const noServices = async (): Promise<Map<string, string | undefined>> => {
    throw new Error("the Services are listed only when another clusterId wrote entries");
  };

  it("the first start creates the ConfigMap with our claim; the next start reads it and writes nothing", async () => {
    const fake = new FakeConfigMaps();
    await new ConfigMapLedger(fake.api(), "reliab01").claimClusterId(GCE_CLASS, CLUSTER_UID, noServices);
    await new ConfigMapLedger(fake.api(), "reliab01").claimClusterId(GCE_CLASS, CLUSTER_UID, noServices);
    assert.deepEqual(fake.calls, [
      "read kube-system/dccm-load-balancers",
      'create kube-system/dccm-load-balancers undefined annotations {"claim.dccm.io/reliab01":"[\\"dccm.io/gce\\"]"}',
      "read kube-system/dccm-load-balancers",
    ]);
    assert.deepEqual(fake.annotations, { "claim.dccm.io/reliab01": '["dccm.io/gce"]' });
  });

  it("an older dccm's ledger of our entries: claimed by a patch conditional on the version read", async () => {
    const fake = new FakeConfigMaps();
    fake.data = { [LB]: ledgerValue(entry("reliab01")) };
    await new ConfigMapLedger(fake.api(), "reliab01").claimClusterId(GCE_CLASS, CLUSTER_UID, noServices);
    assert.deepEqual(fake.calls, [
      "read kube-system/dccm-load-balancers",
      'patch kube-system/dccm-load-balancers {"metadata":{"annotations":{"claim.dccm.io/reliab01":"[\\"dccm.io/gce\\"]"},"resourceVersion":"1"}}',
    ]);
  });

  it("a mistyped clusterId is refused and writes nothing; gc's check refuses alike", async () => {
    const fake = new FakeConfigMaps();
    fake.data = {};
    fake.annotations = { "claim.dccm.io/reliab01": '["dccm.io/gce"]' };
    const ledger = new ConfigMapLedger(fake.api(), "other02");
    const refusal = {
      name: "ClusterIdRefusedError",
      message: MANAGED_ELSEWHERE("reliab01", BY_CLAIM("reliab01", "dccm.io/gce")),
    };
    await assert.rejects(ledger.claimClusterId(GCE_CLASS, CLUSTER_UID, noServices), refusal);
    await assert.rejects(ledger.verifyClusterId(GCE_CLASS, CLUSTER_UID, noServices), refusal);
    assert.deepEqual(fake.calls, ["read kube-system/dccm-load-balancers", "read kube-system/dccm-load-balancers"]);
    assert.deepEqual(fake.annotations, { "claim.dccm.io/reliab01": '["dccm.io/gce"]' });
  });

  it("an older dccm's install under another clusterId: its entries of our Services refuse, the Services listed once", async () => {
    const fake = new FakeConfigMaps();
    fake.data = { [LB]: ledgerValue(entry("reliab01")) };
    let listed = 0;
    const services = async (): Promise<Map<string, string | undefined>> => {
      listed++;
      return new Map([["default/web", undefined]]);
    };
    await assert.rejects(new ConfigMapLedger(fake.api(), "other02").claimClusterId(GCE_CLASS, CLUSTER_UID, services), {
      message: MANAGED_ELSEWHERE("reliab01", BY_ENTRY("reliab01", LB, "default/web")),
    });
    assert.equal(listed, 1);
    assert.deepEqual(fake.annotations, {});
  });

  it("two daemons claiming at once: the one whose write comes second reads the other's claim and is refused", async () => {
    const fake = new FakeConfigMaps();
    fake.data = {};
    fake.beforeWrite = () => {
      fake.beforeWrite = undefined;
      fake.annotations = { "claim.dccm.io/reliab01": '["dccm.io/gce"]' };
      fake.version++;
    };
    await assert.rejects(
      new ConfigMapLedger(fake.api(), "other02").claimClusterId(GCE_CLASS, CLUSTER_UID, noServices),
      {
        message: MANAGED_ELSEWHERE("reliab01", BY_CLAIM("reliab01", "dccm.io/gce")),
      },
    );
    assert.deepEqual(fake.annotations, { "claim.dccm.io/reliab01": '["dccm.io/gce"]' });
  });

  it("gc's check writes nothing when the cluster is not claimed yet", async () => {
    const fake = new FakeConfigMaps();
    await new ConfigMapLedger(fake.api(), "reliab01").verifyClusterId(GCE_CLASS, CLUSTER_UID, noServices);
    assert.deepEqual(fake.calls, ["read kube-system/dccm-load-balancers"]);
    assert.equal(fake.data, undefined);
  });

  it("parseClaims keeps the claim annotations whose value is a list of classes", () => {
    assert.deepEqual(
      [
        ...parseClaims({
          "claim.dccm.io/a1": '["dccm.io/gce"]',
          "claim.dccm.io/bad": "{",
          "claim.dccm.io/num": "[1]",
          "other.io/x": '["y"]',
        }),
      ],
      [["a1", ["dccm.io/gce"]]],
    );
  });
});

describe("controllers/service/controller: the ledger is written before the first up and dropped only after a destroy", () => {
  function reconciler(options: {
    meta: ServiceMeta;
    known?: string[];
    destroy?: "destroyed" | "absent";
    ledgerFails?: boolean;
  }): { reconciler: Reconciler; calls: string[] } {
    const h = newReconciler({
      services: options.meta.deleting ? [] : [lbService("default", "web", UID)],
      runner: {
        inspect: () => ({ clusterUid: CLUSTER_UID }),
        up: (stack) => ({
          outputs: stack === "cluster" ? { instanceGroups: { "us-central1-a": "ig-a" }, routes: {} } : {},
          changed: [],
        }),
        destroy: () => options.destroy ?? "destroyed",
      },
      deps: ({ calls }) => ({
        watcher: { meta: () => options.meta },
        writer: {
          async setFinalizer(namespace, name, present) {
            calls.push(`setFinalizer ${namespace}/${name} ${present}`);
            return true;
          },
          async setIngress() {
            return true;
          },
          async setAnnotation() {
            return true;
          },
        },
        ledger: {
          async record(lbName, service) {
            calls.push(`ledger.record ${lbName} ${service.key} ${service.uid}`);
            if (options.ledgerFails === true) throw new Error("recording load balancer: HTTP 403: forbidden");
          },
          async forget(key) {
            calls.push(`ledger.forget ${key}`);
          },
        },
        knownStacks: options.known ?? [],
      }),
    });
    return { reconciler: h.reconciler, calls: h.calls };
  }
  const meta = (over: Partial<ServiceMeta> = {}): ServiceMeta => ({
    namespace: "default",
    name: "web",
    uid: UID,
    type: "LoadBalancer",
    finalizers: [],
    ingress: [],
    deleting: false,
    ...over,
  });

  it("a new Service: the stack, the finalizer, the ledger entry, then the up", async () => {
    const h = reconciler({ meta: meta() });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      "up cluster",
      "ensureStack service.default.web",
      "setFinalizer default/web true",
      `ledger.record ${LB} default/web ${UID}`,
      "up service.default.web",
    ]);
  });

  it("a ledger write that fails stops the run before the up (retried)", async () => {
    const h = reconciler({ meta: meta({ finalizers: [LB_FINALIZER] }), ledgerFails: true });
    await h.reconciler.reconcile({ key: "cluster", refresh: false });
    assert.equal((await h.reconciler.reconcile({ key: "service.default.web", refresh: false })).kind, "retry");
    assert.deepEqual(h.calls, ["up cluster", `ledger.record ${LB} default/web ${UID}`]);
  });

  it("a deleted Service: the entry goes after the destroy, before the stack", async () => {
    const h = reconciler({
      meta: meta({ finalizers: [LB_FINALIZER], deleting: true }),
      known: ["service.default.web"],
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      "inspect service.default.web",
      "destroy service.default.web",
      "ledger.forget default/web",
      "setFinalizer default/web false",
      "removeStack service.default.web",
    ]);
  });

  it("a stack found absent at destroy destroyed nothing: the entry stays (the leak is still provably ours)", async () => {
    const h = reconciler({
      meta: meta({ finalizers: [LB_FINALIZER], deleting: true }),
      known: ["service.default.web"],
      destroy: "absent",
    });
    assert.deepEqual(await h.reconciler.reconcile({ key: "service.default.web", refresh: false }), { kind: "ok" });
    assert.deepEqual(h.calls, [
      "inspect service.default.web",
      "destroy service.default.web",
      "setFinalizer default/web false",
      "removeStack service.default.web",
    ]);
  });
});

describe("leaks/ownership", () => {
  it("resourceIdOfPath: Pulumi IDs and self links of the collections dccm uses", () => {
    assert.equal(
      resourceIdOfPath("projects/p/regions/us-central1/forwardingRules/a1"),
      "forwardingRules/us-central1/a1",
    );
    assert.equal(
      resourceIdOfPath(
        "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instanceGroups/k8s-ig--c1",
      ),
      "instanceGroups/us-central1-a/k8s-ig--c1",
    );
    assert.equal(resourceIdOfPath("projects/p/global/firewalls/k8s-fw-a1"), "firewalls/global/k8s-fw-a1");
    assert.equal(resourceIdOfPath("projects/p/global/networks/default"), undefined);
    assert.equal(resourceIdOfPath("a1"), undefined);
  });

  it("a deployment's resources and pending creates, and the cluster identity it records", () => {
    const deployment = {
      resources: [
        { urn: "urn:stack", type: "pulumi:pulumi:Stack", custom: false, outputs: { dccmClusterUid: CLUSTER_UID } },
        { urn: "urn:provider", type: "pulumi:providers:gcp", custom: true, id: "6c1a" },
        { urn: "urn:lb", type: "dccm:gcp:ServiceLoadBalancer", custom: false },
        {
          urn: "urn:fr",
          type: "gcp:compute/forwardingRule:ForwardingRule",
          custom: true,
          id: `projects/dccm-test/regions/us-central1/forwardingRules/${LB}`,
          inputs: { project: "dccm-test", region: "us-central1", name: LB },
        },
        // An ID in another spelling: the inputs still name it.
        {
          urn: "urn:fw",
          type: "gcp:compute/firewall:Firewall",
          custom: true,
          id: `k8s-fw-${LB}`,
          inputs: { project: "dccm-test", name: `k8s-fw-${LB}` },
        },
      ],
      pending_operations: [
        {
          type: "creating",
          resource: {
            urn: "urn:addr",
            type: "gcp:compute/address:Address",
            custom: true,
            inputs: { project: "dccm-test", region: "us-central1", name: LB },
          },
        },
      ],
    };
    assert.deepEqual(deploymentOwnership(deployment), {
      owned: [`addresses/us-central1/${LB}`, `firewalls/global/k8s-fw-${LB}`, `forwardingRules/us-central1/${LB}`],
      clusterUid: CLUSTER_UID,
    });
    assert.deepEqual(deploymentOwnership(undefined), { owned: [], clusterUid: undefined });
  });

  function workspace(deployments: Record<string, unknown>): {
    listStacks(): Promise<string[]>;
    exportStack(stack: string): Promise<{ version: number; deployment: unknown }>;
  } {
    return {
      listStacks: async () => Object.keys(deployments),
      exportStack: async (stack) => ({ version: 3, deployment: deployments[stack] }),
    };
  }
  const stackWith = (uid: string | undefined, id: string): unknown => ({
    resources: [
      {
        urn: "urn:stack",
        type: "pulumi:pulumi:Stack",
        custom: false,
        outputs: uid === undefined ? {} : { dccmClusterUid: uid },
      },
      { urn: "urn:x", type: "gcp:compute/firewall:Firewall", custom: true, id },
    ],
  });

  it("every stack of the project, the cluster stack's identity", async () => {
    const ownership = await readOwnership(
      workspace({
        cluster: stackWith(CLUSTER_UID, "projects/p/global/firewalls/k8s-c1-node-http-hc"),
        "service.default.old": stackWith(undefined, "projects/p/global/firewalls/k8s-fw-a1"),
      }),
      CLUSTER_UID,
    );
    assert.deepEqual(ownership, {
      owned: new Set(["firewalls/global/k8s-c1-node-http-hc", "firewalls/global/k8s-fw-a1"]),
      stacks: ["cluster", "service.default.old"],
      clusterStackUid: CLUSTER_UID,
    });
  });

  it("a stack of another cluster: no answer at all (ForeignStackError)", async () => {
    const other = "0ther000-0000-4000-8000-000000000009";
    await assert.rejects(
      readOwnership(
        workspace({
          cluster: stackWith(CLUSTER_UID, "projects/p/global/firewalls/x"),
          "service.default.web": stackWith(other, "projects/p/global/firewalls/y"),
        }),
        CLUSTER_UID,
      ),
      {
        name: "ForeignStackError",
        message: `stack service.default.web belongs to the cluster whose kube-system Namespace has UID ${other}, and this cluster's is ${CLUSTER_UID}: refusing to touch it (check --kubeconfig, clusterId and the backend)`,
      },
    );
  });
});

const leak = (kind: ResourceKind, scope: string, name: string, proof: Leak["proof"], why = `why ${name}`): Leak => ({
  resource: { kind, scope, name, description: "" },
  proof,
  why,
});
const LEAKS: Leak[] = [
  leak("forwardingRules", "us-central1", "a1", "proven"),
  leak("forwardingRules", "us-central1", "a2", "unproven"),
  leak("addresses", "us-central1", "a1", "proven"),
  leak("firewalls", "global", "k8s-fw-a1", "proven"),
];

describe("leaks/gc: the plan", () => {
  it("--dry-run prints, --yes takes every proven leak in deletion order", () => {
    assert.deepEqual(planGc(LEAKS, { kind: "dryRun" }), { kind: "print" });
    assert.deepEqual(planGc(LEAKS, { kind: "all" }), { kind: "delete", leaks: [LEAKS[0], LEAKS[2], LEAKS[3]] });
  });

  it("named resources: exactly those, in deletion order whatever the command line's", () => {
    assert.deepEqual(
      planGc(LEAKS, { kind: "named", ids: ["firewalls/global/k8s-fw-a1", "forwardingRules/us-central1/a1"] }),
      { kind: "delete", leaks: [LEAKS[0], LEAKS[3]] },
    );
  });

  it("a named resource that is unproven or no leak: nothing is deleted, each named with why", () => {
    assert.deepEqual(
      planGc(LEAKS, {
        kind: "named",
        ids: ["forwardingRules/us-central1/a1", "forwardingRules/us-central1/a2", "routes/global/r1"],
      }),
      {
        kind: "refuse",
        problems: [
          "forwardingRules/us-central1/a2: unproven, never deleted: why a2",
          "routes/global/r1: not a leak of this cluster (a stack owns it, it is gone, or nothing ties it to this cluster)",
        ],
      },
    );
  });

  it("the text: header, proven then unproven with why; outcomes and the count", () => {
    assert.equal(
      gcHeader({ clusterId: "c1", clusterUid: CLUSTER_UID, project: "p", stacks: 1, ledgerEntries: 2 }),
      `cluster c1 (kube-system UID ${CLUSTER_UID}), project p: 1 stack, 2 load balancers in the ledger`,
    );
    assert.deepEqual(formatLeaks(LEAKS), [
      "proven leaks (deleted by dccm gc --yes, or each by name):",
      "  forwardingRules/us-central1/a1: why a1",
      "  addresses/us-central1/a1: why a1",
      "  firewalls/global/k8s-fw-a1: why k8s-fw-a1",
      "unproven (never deleted):",
      "  forwardingRules/us-central1/a2: why a2",
    ]);
    assert.deepEqual(formatLeaks([]), ["no GCE resource of this cluster is left without a stack"]);
    assert.deepEqual(
      formatOutcomes(
        [
          { leak: LEAKS[0], result: "deleted" },
          { leak: LEAKS[2], result: "failed", error: "compute addresses.delete …: HTTP 400: in use" },
          { leak: LEAKS[3], result: "absent" },
        ],
        1,
      ),
      [
        "deleted forwardingRules/us-central1/a1",
        "failed addresses/us-central1/a1: compute addresses.delete …: HTTP 400: in use",
        "already gone firewalls/global/k8s-fw-a1",
        "2 of 3 deleted; 1 unproven left alone",
      ],
    );
  });
});

describe("leaks/monitor: one check", () => {
  async function gauge(metrics: LeakMetrics): Promise<string[]> {
    const values = (await metrics.leakedResources.get()).values.filter((value) => value.value > 0);
    return values.map((value) => `${String(value.labels.kind)} ${String(value.labels.proof)} ${value.value}`).sort();
  }

  function monitor(detect: () => Promise<Leak[]>): {
    monitor: LeakMonitor;
    metrics: LeakMetrics;
    sink: MemoryEventSink;
  } {
    const metrics = new LeakMetrics();
    const sink = new MemoryEventSink({ expire: true });
    const m = new LeakMonitor({
      detect: async () => ({
        leaks: await detect(),
        ownership: { owned: new Set(), stacks: [], clusterStackUid: undefined },
        ledgerEntries: 0,
      }),
      events: new EventRecorder(sink, silent, "dccm-service-controller"),
      clusterUid: CLUSTER_UID,
      metrics,
      logger: silent,
      periodMs: 3_600_000,
      jitter: 0,
      signal: new AbortController().signal,
      settled: async () => undefined,
    });
    return { monitor: m, metrics, sink };
  }

  it("sets the gauge per kind and proof and records one Warning on Namespace kube-system", async () => {
    const { monitor: m, metrics, sink } = monitor(async () => LEAKS);
    assert.deepEqual(
      (await m.check())?.map((l) => resourceId(l.resource)),
      LEAKS.map((l) => resourceId(l.resource)),
    );
    assert.deepEqual(await gauge(metrics), [
      "addresses proven 1",
      "firewalls proven 1",
      "forwardingRules proven 1",
      "forwardingRules unproven 1",
    ]);
    assert.equal((await metrics.leakedResources.get()).values.length, 20);
    assert.deepEqual(
      sink.created.map((event) => [
        event.type,
        event.reason,
        event.involvedObject.kind,
        event.involvedObject.namespace,
        event.involvedObject.name,
        event.involvedObject.uid,
        event.message,
      ]),
      [
        [
          "Warning",
          "LeakedResources",
          "Namespace",
          "kube-system",
          "kube-system",
          CLUSTER_UID,
          "4 GCE resources of this cluster owned by no stack (3 proven, 1 unproven; dccm gc --dry-run says why, dccm gc deletes only proven ones): " +
            "forwardingRules/us-central1/a1 (proven), forwardingRules/us-central1/a2 (unproven), addresses/us-central1/a1 (proven), firewalls/global/k8s-fw-a1 (proven)",
        ],
      ],
    );
  });

  it("no leaks: every series 0, no event; a failed check counts as failed and changes nothing else", async () => {
    let fail = false;
    const {
      monitor: m,
      metrics,
      sink,
    } = monitor(async () => {
      if (fail) throw new Error("compute forwardingRules.list …: HTTP 403: forbidden");
      return [];
    });
    assert.deepEqual(await m.check(), []);
    fail = true;
    assert.equal(await m.check(), undefined);
    assert.deepEqual(await gauge(metrics), []);
    assert.equal((await metrics.leakedResources.get()).values.length, 20);
    assert.deepEqual(
      (await metrics.leakChecks.get()).values.map((value) => `${String(value.labels.result)} ${value.value}`).sort(),
      ["failed 1", "ok 1"],
    );
    assert.deepEqual(sink.created, []);
  });
});

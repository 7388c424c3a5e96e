/**
 * The cluster stack's Events and put-back counts (controllers/cluster/events.ts), then the cluster
 * controller recording them through the one EventRecorder: which object each Event is about, with
 * which involvedObject, and what /metrics counts.
 */
import * as assert from "node:assert/strict";
import {
  clusterDriftEvents,
  clusterFailureEvent,
  leaseTarget,
  putBackCounts,
  putBackResource,
  type ClusterDriftInput,
  type ClusterEvent,
} from "../../../../controllers/cluster/events";
import { ControllerMetrics } from "../../../../controllers/metrics";
import { Reconciler } from "../../../../controllers/reconciler";
import type { PutBack } from "../../../../stacks/events";
import { counter } from "../../../support/metrics";
import { MemoryEventSink } from "../../../support/fakes/events";
import { newReconciler } from "../../../support/fakes/reconciler";
import { CONFIG, gceNode } from "../../../support/builders";
import { StackBusyError } from "../../../../stacks/errors";
import type { EventReason } from "../../../../runtime/events";

const PARENT = "urn:pulumi:cluster::dccm-c0ffee1234::dccm:gcp:ClusterNetwork";

function putBack(type: string, name: string, op: string): PutBack {
  return { urn: `${PARENT}$${type}::${name}`, type, name, op };
}

const ROUTE = "gcp:compute/route:Route";
const routeN1 = (op: string): PutBack => putBack(ROUTE, "cluster:route-n1", op);
const IG_A = putBack("gcp:compute/instanceGroup:InstanceGroup", "cluster:ig-us-central1-a", "create");
const NODE_HC = putBack("gcp:compute/regionHealthCheck:RegionHealthCheck", "cluster:node-hc", "create");
const LEGACY_HC = putBack("gcp:compute/httpHealthCheck:HttpHealthCheck", "cluster:node-legacy-hc", "create");
const NODE_HC_FW = putBack("gcp:compute/firewall:Firewall", "cluster:node-hc-fw", "update");
const COMPONENT = putBack("dccm:gcp:ClusterNetwork", "cluster", "update");
const N1_UID = "6f1c2a9e-0000-4000-8000-000000000001";
const ROUTE_N1 = `prod-${N1_UID}`;

describe("controllers/cluster/events: clusterDriftEvents", () => {
  const base: ClusterDriftInput = {
    changed: [],
    routes: { n1: ROUTE_N1 },
    clusterName: "prod",
    nodes: [{ name: "n1", uid: N1_UID }],
  };
  const onLease = (reason: EventReason, message: string): ClusterEvent => ({
    object: { kind: "Lease" },
    type: "Normal",
    reason,
    message,
  });
  const cases: Array<[string, Partial<ClusterDriftInput>, ClusterEvent[]]> = [
    ["nothing put back: no event", {}, []],
    [
      "a route deleted out of band: RouteRestored on its Node, named as GCE names it",
      { changed: [routeN1("create")] },
      [
        {
          object: { kind: "Node", name: "n1" },
          type: "Normal",
          reason: "RouteRestored",
          message: `Put back: Route ${ROUTE_N1} (create)`,
        },
      ],
    ],
    [
      "a route changed out of band is replaced in three steps: one event",
      { changed: [routeN1("delete-replaced"), routeN1("replace"), routeN1("create-replacement")] },
      [
        {
          object: { kind: "Node", name: "n1" },
          type: "Normal",
          reason: "RouteRestored",
          message: `Put back: Route ${ROUTE_N1} (delete-replaced, replace, create-replacement)`,
        },
      ],
    ],
    [
      "a route whose Node is gone: on the Lease",
      { changed: [routeN1("create")], nodes: [] },
      [onLease("RouteRestored", `Put back: Route ${ROUTE_N1} (create)`)],
    ],
    [
      "a route of a Node created again under its name (another UID): on the Lease",
      { changed: [routeN1("create")], nodes: [{ name: "n1", uid: "6f1c2a9e-0000-4000-8000-000000000002" }] },
      [onLease("RouteRestored", `Put back: Route ${ROUTE_N1} (create)`)],
    ],
    [
      "a route the run did not record: on the Lease, named as the stack names it",
      { changed: [routeN1("delete")], routes: {} },
      [onLease("RouteRestored", "Put back: Route cluster:route-n1 (delete)")],
    ],
    [
      "an instance group: ClusterDriftCorrected on the Lease",
      { changed: [IG_A] },
      [onLease("ClusterDriftCorrected", "Put back: InstanceGroup cluster:ig-us-central1-a (create)")],
    ],
    [
      "the shared health checks and their firewall: one event naming each",
      { changed: [NODE_HC, LEGACY_HC, NODE_HC_FW] },
      [
        onLease(
          "ClusterDriftCorrected",
          "Put back: RegionHealthCheck cluster:node-hc (create), HttpHealthCheck cluster:node-legacy-hc (create), Firewall cluster:node-hc-fw (update)",
        ),
      ],
    ],
    [
      "a route and an instance group: the Node's event, then the Lease's",
      { changed: [IG_A, routeN1("create")] },
      [
        {
          object: { kind: "Node", name: "n1" },
          type: "Normal",
          reason: "RouteRestored",
          message: `Put back: Route ${ROUTE_N1} (create)`,
        },
        onLease("ClusterDriftCorrected", "Put back: InstanceGroup cluster:ig-us-central1-a (create)"),
      ],
    ],
  ];
  for (const [title, input, expected] of cases)
    it(title, () => assert.deepEqual(clusterDriftEvents({ ...base, ...input }), expected));
});

describe("controllers/cluster/events: put-back counts", () => {
  const labels: Array<[string, string]> = [
    [ROUTE, "route"],
    ["gcp:compute/instanceGroup:InstanceGroup", "instanceGroup"],
    ["gcp:compute/regionHealthCheck:RegionHealthCheck", "healthCheck"],
    ["gcp:compute/httpHealthCheck:HttpHealthCheck", "legacyHealthCheck"],
    ["gcp:compute/firewall:Firewall", "firewall"],
    ["dccm:gcp:ClusterNetwork", "other"],
    ["gcp:compute/forwardingRule:ForwardingRule", "other"],
  ];
  for (const [type, label] of labels) it(`${type} → ${label}`, () => assert.equal(putBackResource(type), label));

  const cases: Array<[string, PutBack[], Record<string, number>]> = [
    ["nothing", [], {}],
    [
      "a replaced route counts once",
      [routeN1("delete-replaced"), routeN1("replace"), routeN1("create-replacement")],
      { route: 1 },
    ],
    [
      "one of each",
      [
        routeN1("create"),
        putBack(ROUTE, "cluster:route-n2", "create"),
        IG_A,
        NODE_HC,
        LEGACY_HC,
        NODE_HC_FW,
        COMPONENT,
      ],
      { route: 2, instanceGroup: 1, healthCheck: 1, legacyHealthCheck: 1, firewall: 1, other: 1 },
    ],
  ];
  for (const [title, changed, expected] of cases) it(title, () => assert.deepEqual(putBackCounts(changed), expected));
});

describe("controllers/cluster/events: clusterFailureEvent and leaseTarget", () => {
  it("a failed run: SyncClusterFailed on the Lease", () => {
    assert.deepEqual(clusterFailureEvent("googleapi: Error 429: Rate Limit Exceeded"), {
      object: { kind: "Lease" },
      type: "Warning",
      reason: "SyncClusterFailed",
      message: "Error syncing cluster stack: googleapi: Error 429: Rate Limit Exceeded",
    });
  });

  it("a failed pulumi CLI run: GCE's reason first, then what the daemon said, no CLI command line", () => {
    const description =
      "pulumi up of stack cluster failed: stderr: Command failed with exit code 255: pulumi up --yes --skip-preview --refresh --exec-kind auto.inline " +
      "--stack cluster --non-interactive +  gcp:compute:Firewall cluster:node-hc-fw creating (0s) error: Error creating Firewall: googleapi: Error 409: " +
      "The resource 'projects/p/global/firewalls/k8s-c1-node-http-hc' already exists, alreadyExists +  pulumi:pulumi:Stack dccm-c1-cluster creating (2s) error: update failed";
    assert.equal(
      clusterFailureEvent(description).message,
      "Error syncing cluster stack: Error creating Firewall: googleapi: Error 409: The resource 'projects/p/global/firewalls/k8s-c1-node-http-hc' already exists, alreadyExists " +
        "(pulumi up of stack cluster failed)",
    );
  });

  it("reads the Lease's UID once; a failed or empty read gives no UID and is tried again", async () => {
    const answers: Array<string | undefined | Error> = [new Error("HTTP 500"), undefined, "lease-uid", "other-uid"];
    const errors: string[] = [];
    let reads = 0;
    const target = leaseTarget(
      { namespace: "kube-system", name: "dccm" },
      async () => {
        const answer = answers[reads++];
        if (answer instanceof Error) throw answer;
        return answer;
      },
      (error) => errors.push(error instanceof Error ? error.message : String(error)),
    );
    const uids: string[] = [];
    for (let i = 0; i < 4; i++) uids.push((await target()).uid);
    assert.deepEqual(uids, ["", "", "lease-uid", "lease-uid"]);
    assert.equal(reads, 3);
    assert.deepEqual(errors, ["HTTP 500"]);
    assert.deepEqual(await target(), { kind: "Lease", namespace: "kube-system", name: "dccm", uid: "lease-uid" });
  });
});

describe("controllers/cluster/controller: the cluster stack's events", () => {
  interface Harness {
    reconciler: Reconciler;
    sink: MemoryEventSink;
    metrics: ControllerMetrics;
    abort: AbortController;
    /** What each cluster `up` does, in order: report these changes, or throw. */
    runs: Array<PutBack[] | Error>;
  }

  function harness(): Harness {
    const runs: Array<PutBack[] | Error> = [];
    const h = newReconciler({
      nodes: [gceNode("n1", N1_UID, "us-central1-a", ["10.64.1.0/24"])],
      sink: new MemoryEventSink(),
      recorder: { reportingInstance: "test" },
      runner: {
        up: (_stack, desired) => {
          const run = runs.shift() ?? [];
          if (run instanceof Error) throw run;
          const routes = Object.fromEntries(desired.cluster.routes.map((route) => [route.node, route.name]));
          return { outputs: { instanceGroups: { "us-central1-a": "ig-a" }, routes, loadBalancers: {} }, changed: run };
        },
      },
      deps: ({ recorder }) => ({
        loadBalancerClasses: [],
        clusterUid: "cluster-uid",
        clusterEvents: {
          recorder,
          clusterName: CONFIG.clusterName,
          nodes: () => [{ name: "n1", uid: N1_UID }],
          lease: async () => ({ kind: "Lease", namespace: "kube-system", name: "dccm", uid: "lease-uid" }),
        },
      }),
    });
    return { reconciler: h.reconciler, sink: h.sink, metrics: h.metrics, abort: h.abort, runs };
  }

  const told = (h: Harness): string[][] =>
    h.sink.createdIn.map(({ namespace, event }) => {
      const object = event.involvedObject;
      return [
        namespace,
        `${object.apiVersion} ${object.kind} ${object.namespace ?? "-"}/${object.name} uid=${object.uid}`,
        `${event.type} ${event.reason}`,
        event.message ?? "",
      ];
    });
  const putBackTotal = (h: Harness, resource: string): Promise<number> =>
    counter(h.metrics.registry, "dccm_cluster_put_back_total", { resource });

  it("a drift pass that put back a route and an instance group: RouteRestored on the Node, ClusterDriftCorrected on the Lease, both counted", async () => {
    const h = harness();
    h.runs.push([], [routeN1("create"), IG_A]);
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: true }), { kind: "ok" });
    assert.deepEqual(told(h), [
      ["default", "v1 Node -/n1 uid=n1", "Normal RouteRestored", `Put back: Route ${ROUTE_N1} (create)`],
      [
        "kube-system",
        "coordination.k8s.io/v1 Lease kube-system/dccm uid=lease-uid",
        "Normal ClusterDriftCorrected",
        "Put back: InstanceGroup cluster:ig-us-central1-a (create)",
      ],
    ]);
    assert.deepEqual(
      [
        await putBackTotal(h, "route"),
        await putBackTotal(h, "instanceGroup"),
        await counter(h.metrics.registry, "dccm_drift_corrections_total", { kind: "cluster" }),
      ],
      [1, 1, 1],
    );
  });

  it("a change run that changes resources is no drift: no event, nothing counted", async () => {
    const h = harness();
    h.runs.push([routeN1("create"), IG_A]);
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), { kind: "ok" });
    assert.deepEqual(told(h), []);
    assert.equal(await putBackTotal(h, "route"), 0);
  });

  it("a failing run: one SyncClusterFailed on the Lease, its repeats counted on it", async () => {
    const h = harness();
    const failure = new Error("googleapi: Error 429: Rate Limit Exceeded");
    h.runs.push(failure, failure, new Error("googleapi: Error 403: Quota exceeded"));
    for (let i = 0; i < 3; i++)
      assert.equal((await h.reconciler.reconcile({ key: "cluster", refresh: false })).kind, "retry");
    assert.deepEqual(told(h), [
      [
        "kube-system",
        "coordination.k8s.io/v1 Lease kube-system/dccm uid=lease-uid",
        "Warning SyncClusterFailed",
        "Error syncing cluster stack: googleapi: Error 429: Rate Limit Exceeded",
      ],
      [
        "kube-system",
        "coordination.k8s.io/v1 Lease kube-system/dccm uid=lease-uid",
        "Warning SyncClusterFailed",
        "Error syncing cluster stack: googleapi: Error 403: Quota exceeded",
      ],
    ]);
    assert.deepEqual(
      h.sink.patched.map(({ namespace, name, patch }) => [
        namespace,
        name === h.sink.created[0]?.metadata.name,
        patch.count,
      ]),
      [["kube-system", true, 2]],
    );
  });

  it("a run GCE refused over the ROUTES quota: Warning QuotaExceeded on the Lease naming it, retried after the quota wait, counted by quota", async () => {
    const h = harness();
    h.runs.push(
      new Error("pulumi up of cluster failed", {
        cause: new Error(
          "* Error creating Route: googleapi: Error 403: Quota 'ROUTES' exceeded. Limit: 250.0 globally., quotaExceeded",
        ),
      }),
    );
    assert.deepEqual(await h.reconciler.reconcile({ key: "cluster", refresh: false }), {
      kind: "retryAfter",
      ms: 300_000,
      reason: "GCE quota ROUTES exceeded",
    });
    assert.deepEqual(told(h), [
      [
        "kube-system",
        "coordination.k8s.io/v1 Lease kube-system/dccm uid=lease-uid",
        "Warning QuotaExceeded",
        "Error syncing cluster stack: GCE quota ROUTES (limit 250 in the project) exceeded; release unused resources or raise the quota. Next try in 5 minutes, or at once when the desired state changes",
      ],
    ]);
    assert.equal(
      await counter(h.metrics.registry, "dccm_gce_quota_exceeded_total", { kind: "cluster", quota: "ROUTES" }),
      1,
    );
  });

  it("a run cancelled by a shutdown, or a stack locked by another run: no event", async () => {
    const h = harness();
    h.runs.push(new StackBusyError("cluster", { cause: new Error("locked") }));
    assert.equal((await h.reconciler.reconcile({ key: "cluster", refresh: false })).kind, "retry");
    h.abort.abort();
    h.runs.push(new Error("update canceled"));
    assert.equal((await h.reconciler.reconcile({ key: "cluster", refresh: false })).kind, "retry");
    assert.deepEqual(told(h), []);
  });
});

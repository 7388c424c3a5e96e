/** The daemon's pure parts: Lease decisions, stack hashes, Service events. (Queue semantics: controller-queue.test.ts.) */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { V1MicroTime, type V1Lease } from "@kubernetes/client-node";
import pino from "pino";
import { EventRecorder } from "../../../runtime/events";
import { canAcquire } from "../../../daemon/leader";
import { clearStaleLocks, removeTruncatedAttrs } from "../../../stacks/locks";
import { describeError } from "../../../runtime/errors";
import { ClusterRouteStatus } from "../../../controllers/cluster/routes";
import { parseConfig, type ServiceInfo } from "../../../model";
import { DesiredCache, parseServiceStack } from "../../../model/desiredCache";
import { lbService } from "../../support/builders";
import { MemoryEventSink } from "../../support/fakes/events";

describe("daemon: Lease decisions (canAcquire)", () => {
  const now = Date.parse("2026-11-22T10:00:00Z");
  const lease = (holder: string | undefined, renewedSecondsAgo: number, duration = 15): V1Lease => ({
    spec: {
      holderIdentity: holder,
      leaseDurationSeconds: duration,
      renewTime: new V1MicroTime(now - renewedSecondsAgo * 1000),
    },
  });
  const cases: [string, V1Lease | undefined, boolean][] = [
    ["no Lease yet", undefined, true],
    ["released (empty holder)", lease("", 1), true],
    ["held by us", lease("me", 1), true],
    ["held by another, fresh", lease("other", 14), false],
    ["held by another, expired", lease("other", 16), true],
    ["held by another, exactly at expiry", lease("other", 15), false],
  ];
  for (const [name, value, expected] of cases) {
    it(name, () => assert.equal(canAcquire(value, "me", now), expected));
  }
});

const CONFIG = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "net",
  nodeTags: ["n"],
  clusterName: "c",
  clusterId: "cid",
});

function svc(name: string, uid: string, extra: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", name, uid, extra);
}

describe("daemon: DesiredCache (per-stack hashes)", () => {
  const node = {
    name: "n1",
    uid: "00000000-0000-4000-8000-000000000001",
    providerID: "gce://dccm-test/us-central1-a/n1",
    labels: {},
    taints: [],
    deleting: false,
    podCIDRs: [],
  };
  const web = svc("web", "10000000-0000-4000-8000-000000000001");
  const api = svc("api", "20000000-0000-4000-8000-000000000002");

  it("reports every stack first, then only the stacks whose slice changed", () => {
    const cache = new DesiredCache(CONFIG);
    const first = cache.update({ nodes: [node], services: [web, api] });
    assert.deepEqual(
      first.map((change) => change.stack),
      ["cluster", "service.default.api", "service.default.web"],
    );
    assert.deepEqual(cache.update({ nodes: [node], services: [api, web] }), []);
    const changed = cache.update({
      nodes: [node],
      services: [api, { ...web, loadBalancerSourceRanges: ["10.0.0.0/8"] }],
    });
    assert.deepEqual(
      changed.map((change) => change.stack),
      ["service.default.web"],
    );
  });

  it("a node in an existing zone changes only the cluster stack; a Service that goes away is reported with no hash", () => {
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes: [node], services: [web] });
    const node2 = {
      ...node,
      name: "n2",
      uid: "00000000-0000-4000-8000-000000000002",
      providerID: "gce://dccm-test/us-central1-a/n2",
    };
    assert.deepEqual(
      cache.update({ nodes: [node, node2], services: [web] }).map((change) => change.stack),
      ["cluster"],
    );
    const gone = cache.update({ nodes: [node, node2], services: [] });
    assert.deepEqual(gone, [{ stack: "service.default.web", hash: undefined }]);
  });

  it("a rejected Service has a view with its rejections and no ServiceDesired", () => {
    const cache = new DesiredCache(CONFIG);
    cache.update({
      nodes: [node],
      services: [svc("bad", "30000000-0000-4000-8000-000000000003", { ports: [{ protocol: "SCTP", port: 9 }] })],
    });
    const view = cache.view("service.default.bad");
    assert.equal(view.service, undefined);
    assert.deepEqual(
      view.rejections.map((rejection) => rejection.message),
      ["Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)"],
    );
  });

  it("parses service stack names and nothing else", () => {
    assert.deepEqual(parseServiceStack("service.kube-system.dns"), { namespace: "kube-system", name: "dns" });
    assert.equal(parseServiceStack("cluster"), undefined);
    assert.equal(parseServiceStack("service.a.b.c"), undefined);
  });
});

describe("daemon: small pieces", () => {
  it("describeError keeps the lines that say what failed, through the cause chain", () => {
    const cli = new Error(
      "stderr: Command failed with exit code 1: pulumi up\n  + creating (0s)\nerror: Error creating Address: googleapi: Error 403: Quota exceeded\n",
    );
    const wrapped = new Error("pulumi up of stack service.default.web failed", { cause: cli });
    assert.equal(
      describeError(wrapped),
      "pulumi up of stack service.default.web failed: stderr: Command failed with exit code 1: pulumi up error: Error creating Address: googleapi: Error 403: Quota exceeded",
    );
  });

  it("ClusterRouteStatus: created from outputs, failed only for wanted nodes, else pending", () => {
    const status = new ClusterRouteStatus(() => new Set(["n1", "n2"]));
    assert.equal(status.routeStatus("n1"), "pending");
    status.failed("quota");
    assert.deepEqual(status.routeStatus("n1"), { failed: "quota" });
    assert.equal(status.routeStatus("n3"), "pending");
    status.applied({ instanceGroups: {}, instanceGroupMembers: {}, routes: { n1: "c-1" } });
    assert.equal(status.routeStatus("n1"), "created");
    assert.equal(status.routeStatus("n2"), "pending");
  });

  it("clearStaleLocks removes lock files under .pulumi/locks only", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-locks-"));
    try {
      fs.mkdirSync(path.join(dir, ".pulumi", "locks", "organization", "dccm", "cluster"), { recursive: true });
      fs.writeFileSync(path.join(dir, ".pulumi", "locks", "organization", "dccm", "cluster", "abc.json"), "{}");
      fs.mkdirSync(path.join(dir, ".pulumi", "stacks", "dccm"), { recursive: true });
      fs.writeFileSync(path.join(dir, ".pulumi", "stacks", "dccm", "cluster.json"), "{}");
      assert.deepEqual(clearStaleLocks(dir), [
        path.join(".pulumi", "locks", "organization", "dccm", "cluster", "abc.json"),
      ]);
      assert.equal(fs.existsSync(path.join(dir, ".pulumi", "stacks", "dccm", "cluster.json")), true);
      assert.deepEqual(clearStaleLocks(dir), []);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("daemon: Service events (controller/events EventRecorder)", () => {
  const target = {
    kind: "Service" as const,
    namespace: "shop",
    name: "web",
    uid: "10000000-0000-4000-8000-000000000001",
  };

  it("creates an Event in the Service's namespace with its uid, the component given, and dccm as reporter", async () => {
    const sink = new MemoryEventSink();
    const now = Date.parse("2026-11-22T10:00:00Z");
    await new EventRecorder(sink, pino({ level: "silent" }), "dccm-service-controller", {
      reportingInstance: "replica-1",
      now: () => now,
    }).record(target, "Normal", "EnsuringLoadBalancer", "Ensuring load balancer");
    assert.equal(sink.created.length, 1);
    const { namespace, event } = sink.createdIn[0];
    assert.equal(namespace, "shop");
    assert.equal(event.metadata.namespace, "shop");
    assert.match(event.metadata.name ?? "", /^web\.[0-9a-f]+$/);
    assert.deepEqual(event.involvedObject, {
      apiVersion: "v1",
      kind: "Service",
      name: "web",
      uid: target.uid,
      namespace: "shop",
    });
    assert.deepEqual(
      [event.type, event.reason, event.message, event.count],
      ["Normal", "EnsuringLoadBalancer", "Ensuring load balancer", 1],
    );
    assert.deepEqual([event.firstTimestamp, event.lastTimestamp], [new Date(now), new Date(now)]);
    assert.equal(event.source?.component, "dccm-service-controller");
    assert.equal(event.reportingComponent, "dccm");
    assert.equal(event.reportingInstance, "replica-1");
  });

  it("bumps the count of a repeat within 10 minutes, creates anew after that or when the Event expired, and never throws", async () => {
    const sink = new MemoryEventSink();
    let now = Date.parse("2026-11-22T10:00:00Z");
    const recorder = new EventRecorder(sink, pino({ level: "silent" }), "dccm-service-controller", { now: () => now });
    const warn = (): Promise<void> => recorder.record(target, "Warning", "SyncLoadBalancerFailed", "quota");
    await warn();
    now += 60_000;
    await warn();
    assert.equal(sink.created.length, 1);
    assert.deepEqual(sink.patched, [
      {
        namespace: "shop",
        name: sink.createdIn[0].event.metadata.name,
        patch: { count: 2, lastTimestamp: new Date(now), message: "quota" },
      },
    ]);
    await recorder.record({ ...target, name: "api" }, "Warning", "SyncLoadBalancerFailed", "quota");
    assert.equal(sink.created.length, 2, "another Service's event is its own");
    now += 10 * 60_000;
    await warn();
    assert.equal(sink.created.length, 3, "outside the window");
    sink.expire = true;
    now += 1000;
    await warn();
    assert.equal(sink.created.length, 4, "the Event expired");
    assert.notEqual(sink.createdIn[3].event.metadata.name, sink.createdIn[2].event.metadata.name);
    sink.failCreate = true;
    await recorder.record(target, "Normal", "Refreshed", "x");
  });
});

describe("daemon: removeTruncatedAttrs", () => {
  it("removes .attrs sidecars that are not JSON (a killed write) and keeps valid ones and checkpoints", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-attrs-"));
    try {
      const stacks = path.join(dir, ".pulumi", "stacks", "dccm-c");
      fs.mkdirSync(stacks, { recursive: true });
      fs.writeFileSync(path.join(stacks, "a.json"), "{}");
      fs.writeFileSync(path.join(stacks, "a.json.attrs"), '{"user.content_type":"application/json"}');
      fs.writeFileSync(path.join(stacks, "b.json"), "{}");
      fs.writeFileSync(path.join(stacks, "b.json.attrs"), "");
      fs.writeFileSync(path.join(stacks, "c.json.attrs"), '{"user.cont');
      assert.deepEqual(removeTruncatedAttrs(dir), [
        path.join(".pulumi", "stacks", "dccm-c", "b.json.attrs"),
        path.join(".pulumi", "stacks", "dccm-c", "c.json.attrs"),
      ]);
      assert.deepEqual(fs.readdirSync(stacks).sort(), ["a.json", "a.json.attrs", "b.json"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("DaemonMetrics.forProcess (dccm daemon's /metrics)", () => {
  it("adds prom-client's process_* and nodejs_* default metrics to dccm's own; an in-process daemon's registry has none", async () => {
    const { DaemonMetrics } = await import("../../../daemon/metrics");
    const names = async (metrics: InstanceType<typeof DaemonMetrics>): Promise<Set<string>> =>
      new Set([...(await metrics.registry.metrics()).matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] ?? ""));
    const [forProcess, inProcess] = await Promise.all([names(DaemonMetrics.forProcess()), names(new DaemonMetrics())]);
    const wanted = [
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "process_start_time_seconds",
      "nodejs_heap_size_used_bytes",
      "nodejs_eventloop_lag_seconds",
      "dccm_leader",
      "dccm_stack_runs_total",
    ];
    assert.deepEqual(
      wanted.map((name) => [name, forProcess.has(name), inProcess.has(name)]),
      wanted.map((name) => [name, true, name.startsWith("dccm_")]),
    );
  });
});

/** The daemon's pure parts: queue semantics, Lease decisions, stack hashes, pending-create adoption. */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { V1MicroTime, type V1Lease } from "@kubernetes/client-node";
import { parseDuration } from "../../bin/daemonCommand";
import { canAcquire } from "../../daemon/leader";
import { clearStaleLocks } from "../../daemon/locks";
import { backoffMs, KeyedQueue, type ReconcileResult, type WorkItem } from "../../daemon/queue";
import { describeError } from "../../daemon/reconciler";
import { ClusterRouteStatus } from "../../daemon/routes";
import { adoptPendingCreates } from "../../daemon/stacks";
import { parseConfig, type ClusterSnapshot, type ServiceInfo } from "../../model";
import { DesiredCache, parseServiceStack } from "../../watcher/desiredCache";

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("daemon: KeyedQueue", () => {
  it("backoff doubles from the base and stops at the maximum", () => {
    assert.deepEqual([0, 1, 2, 3, 4, 7, 8, 40].map((failures) => backoffMs(failures, 5000, 300_000)), [0, 5000, 10_000, 20_000, 40_000, 300_000, 300_000, 300_000]);
  });

  it("never runs one key twice at once; enqueues during a run coalesce into exactly one more run", async () => {
    const gates: { resolve: (value: ReconcileResult) => void }[] = [];
    const runs: WorkItem[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    const queue = new KeyedQueue(
      async (item) => {
        runs.push(item);
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        const gate = deferred<ReconcileResult>();
        gates.push(gate);
        const result = await gate.promise;
        concurrent--;
        return result;
      },
      { parallelism: 4, backoffBaseMs: 5000, backoffMaxMs: 300_000 },
    );
    queue.enqueue("a");
    for (let i = 0; i < 50; i++) queue.enqueue("a", { refresh: i === 10 });
    assert.equal(runs.length, 1);
    gates[0].resolve({ kind: "ok" });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(runs, [
      { key: "a", refresh: false },
      { key: "a", refresh: true },
    ]);
    gates[1].resolve({ kind: "ok" });
    await queue.idle();
    assert.equal(runs.length, 2);
    assert.equal(maxConcurrent, 1);
  });

  it("bounds parallelism across keys", async () => {
    const gates: (() => void)[] = [];
    let running = 0;
    let peak = 0;
    const queue = new KeyedQueue(
      async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => gates.push(resolve));
        running--;
        return { kind: "ok" };
      },
      { parallelism: 2, backoffBaseMs: 1, backoffMaxMs: 1 },
    );
    for (const key of ["a", "b", "c", "d", "e"]) queue.enqueue(key);
    assert.equal(running, 2);
    assert.equal(queue.depth(), 3);
    while (gates.length > 0 || running > 0) {
      gates.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await queue.idle();
    assert.equal(peak, 2);
  });

  it("retries a failure after its backoff; keepBackoff does not cut the wait short, a plain enqueue does", async () => {
    const results: ReconcileResult[] = [{ kind: "retry", error: new Error("boom") }, { kind: "ok" }, { kind: "ok" }];
    const seen: number[] = [];
    const outcomes: string[] = [];
    const queue = new KeyedQueue(
      async () => {
        seen.push(Date.now());
        return results.shift() ?? { kind: "ok" };
      },
      { parallelism: 1, backoffBaseMs: 60_000, backoffMaxMs: 60_000, onResult: (item, result, failures) => outcomes.push(`${item.key}:${result.kind}:${failures}`) },
    );
    queue.enqueue("a");
    await queue.idle();
    assert.deepEqual(outcomes, ["a:retry:1"]);
    assert.equal(queue.isBusy("a"), true);
    queue.enqueue("a", { keepBackoff: true });
    await queue.idle();
    assert.equal(seen.length, 1);
    queue.enqueue("a");
    await queue.idle();
    assert.deepEqual(outcomes, ["a:retry:1", "a:ok:0"]);
    assert.equal(queue.isBusy("a"), false);
  });

  it("drain waits for the running item and takes no more work", async () => {
    const gate = deferred<ReconcileResult>();
    const keys: string[] = [];
    const queue = new KeyedQueue(
      async (item) => {
        keys.push(item.key);
        return gate.promise;
      },
      { parallelism: 1, backoffBaseMs: 1, backoffMaxMs: 1 },
    );
    queue.enqueue("a");
    queue.enqueue("b");
    const drained = queue.drain();
    queue.enqueue("c");
    gate.resolve({ kind: "ok" });
    await drained;
    assert.deepEqual(keys, ["a"]);
  });
});

describe("daemon: Lease decisions (canAcquire)", () => {
  const now = Date.parse("2026-11-22T10:00:00Z");
  const lease = (holder: string | undefined, renewedSecondsAgo: number, duration = 15): V1Lease => ({
    spec: { holderIdentity: holder, leaseDurationSeconds: duration, renewTime: new V1MicroTime(now - renewedSecondsAgo * 1000) },
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

const CONFIG = parseConfig({ project: "dccm-test", region: "us-central1", network: "net", nodeTags: ["n"], clusterName: "c", clusterId: "cid" });

function svc(name: string, uid: string, extra: Partial<ServiceInfo> = {}): ServiceInfo {
  return { namespace: "default", name, uid, type: "LoadBalancer", annotations: {}, ports: [{ protocol: "TCP", port: 80 }], loadBalancerSourceRanges: [], deleting: false, ...extra };
}

describe("daemon: DesiredCache (per-stack hashes)", () => {
  const node = { name: "n1", uid: "00000000-0000-4000-8000-000000000001", providerID: "gce://dccm-test/us-central1-a/n1", labels: {}, taints: [], deleting: false, podCIDRs: [] };
  const web = svc("web", "10000000-0000-4000-8000-000000000001");
  const api = svc("api", "20000000-0000-4000-8000-000000000002");

  it("reports every stack first, then only the stacks whose slice changed", () => {
    const cache = new DesiredCache(CONFIG);
    const first = cache.update({ nodes: [node], services: [web, api] });
    assert.deepEqual(first.map((change) => change.stack), ["cluster", "service.default.api", "service.default.web"]);
    assert.deepEqual(cache.update({ nodes: [node], services: [api, web] }), []);
    const changed = cache.update({ nodes: [node], services: [api, { ...web, loadBalancerSourceRanges: ["10.0.0.0/8"] }] });
    assert.deepEqual(changed.map((change) => change.stack), ["service.default.web"]);
  });

  it("a node in an existing zone changes only the cluster stack; a Service that goes away is reported with no hash", () => {
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes: [node], services: [web] });
    const node2 = { ...node, name: "n2", uid: "00000000-0000-4000-8000-000000000002", providerID: "gce://dccm-test/us-central1-a/n2" };
    assert.deepEqual(cache.update({ nodes: [node, node2], services: [web] }).map((change) => change.stack), ["cluster"]);
    const gone = cache.update({ nodes: [node, node2], services: [] });
    assert.deepEqual(gone, [{ stack: "service.default.web", service: { namespace: "default", name: "web" }, hash: undefined }]);
  });

  it("a rejected Service has a view with its rejections and no ServiceDesired", () => {
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes: [node], services: [svc("bad", "30000000-0000-4000-8000-000000000003", { ports: [{ protocol: "SCTP", port: 9 }] })] } as ClusterSnapshot);
    const view = cache.view("service.default.bad");
    assert.equal(view.service, undefined);
    assert.deepEqual(view.rejections.map((rejection) => rejection.message), ["Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)"]);
  });

  it("parses service stack names and nothing else", () => {
    assert.deepEqual(parseServiceStack("service.kube-system.dns"), { namespace: "kube-system", name: "dns" });
    assert.equal(parseServiceStack("cluster"), undefined);
    assert.equal(parseServiceStack("service.a.b.c"), undefined);
  });
});

describe("daemon: adoptPendingCreates", () => {
  it("moves pending creates of named GCE resources into the resources under their derived ID and keeps the rest", () => {
    const firewall = {
      urn: "urn:pulumi:cluster::dccm::dccm:gcp:ClusterNetwork$gcp:compute/firewall:Firewall::cluster:node-hc-fw",
      custom: true,
      type: "gcp:compute/firewall:Firewall",
      inputs: { name: "k8s-cid-node-http-hc", project: "dccm-test", network: "net" },
    };
    const unknownKind = { urn: "urn:x", custom: true, type: "gcp:storage/bucket:Bucket", inputs: { name: "b", project: "p" } };
    const deployment: Record<string, unknown> = {
      resources: [{ urn: "urn:stack" }],
      pending_operations: [
        { type: "creating", resource: firewall },
        { type: "creating", resource: unknownKind },
        { type: "updating", resource: { urn: "urn:y" } },
      ],
    };
    assert.deepEqual(adoptPendingCreates(deployment), [firewall.urn]);
    assert.deepEqual(deployment.resources, [{ urn: "urn:stack" }, { ...firewall, id: "projects/dccm-test/global/firewalls/k8s-cid-node-http-hc", outputs: firewall.inputs }]);
    assert.deepEqual(deployment.pending_operations, [
      { type: "creating", resource: unknownKind },
      { type: "updating", resource: { urn: "urn:y" } },
    ]);
  });
});

describe("daemon: small pieces", () => {
  it("describeError keeps the lines that say what failed, through the cause chain", () => {
    const cli = new Error("stderr: Command failed with exit code 1: pulumi up\n  + creating (0s)\nerror: Error creating Address: googleapi: Error 403: Quota exceeded\n");
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
    status.applied({ instanceGroups: {}, routes: { n1: "c-1" } });
    assert.equal(status.routeStatus("n1"), "created");
    assert.equal(status.routeStatus("n2"), "pending");
  });

  it("parseDuration", () => {
    assert.deepEqual(["500ms", "30s", "10m", "1h", "1.5s"].map((text) => parseDuration(text, "--x")), [500, 30_000, 600_000, 3_600_000, 1500]);
    assert.throws(() => parseDuration("10", "--drift-interval"), { message: '--drift-interval: "10" is not a duration like 30s, 10m or 1h' });
  });

  it("clearStaleLocks removes lock files under .pulumi/locks only", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-locks-"));
    try {
      fs.mkdirSync(path.join(dir, ".pulumi", "locks", "organization", "dccm", "cluster"), { recursive: true });
      fs.writeFileSync(path.join(dir, ".pulumi", "locks", "organization", "dccm", "cluster", "abc.json"), "{}");
      fs.mkdirSync(path.join(dir, ".pulumi", "stacks", "dccm"), { recursive: true });
      fs.writeFileSync(path.join(dir, ".pulumi", "stacks", "dccm", "cluster.json"), "{}");
      assert.deepEqual(clearStaleLocks(dir), [path.join(".pulumi", "locks", "organization", "dccm", "cluster", "abc.json")]);
      assert.equal(fs.existsSync(path.join(dir, ".pulumi", "stacks", "dccm", "cluster.json")), true);
      assert.deepEqual(clearStaleLocks(dir), []);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The desired-state driver (controllers/desiredDriver.ts): watch events and observations into the queue. */
import * as assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { parseConfig, serviceStackName, type ClusterSnapshot } from "../../../model";
import { DesiredCache } from "../../../model/desiredCache";
import type { EnqueueFlags } from "../../../runtime/queue";
import { DesiredDriver } from "../../../controllers/desiredDriver";
import { gceNode, lbService } from "../../support/builders";

const CONFIG = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "net",
  nodeTags: ["n"],
  clusterName: "c",
  clusterId: "cid",
});
const NODE = gceNode("n1", "00000000-0000-4000-8000-000000000001", "us-central1-a", []);
const WEB = lbService("default", "web", "10000000-0000-4000-8000-000000000001");
const DEBOUNCE_MS = 5;

class FakeWatcher extends EventEmitter {
  current: ClusterSnapshot = { nodes: [NODE], services: [WEB] };
  snapshot(): ClusterSnapshot {
    return this.current;
  }
}

function setup(): { driver: DesiredDriver; watcher: FakeWatcher; enqueued: [string, EnqueueFlags | undefined][] } {
  const enqueued: [string, EnqueueFlags | undefined][] = [];
  const driver = new DesiredDriver({
    cache: new DesiredCache(CONFIG),
    debounceMs: DEBOUNCE_MS,
    enqueue: (stack, flags) => enqueued.push([stack, flags]),
  });
  const watcher = new FakeWatcher();
  driver.attach(watcher);
  return { driver, watcher, enqueued };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("controllers: DesiredDriver", () => {
  it("does nothing on watch events before the first fill; the fill enqueues every stack as changed", async () => {
    const { driver, watcher, enqueued } = setup();
    watcher.emit("serviceMeta", "default/web");
    watcher.emit("resync");
    watcher.emit("change");
    await sleep(DEBOUNCE_MS * 6);
    assert.deepEqual(enqueued, []);
    driver.fill();
    assert.deepEqual(enqueued, [
      ["cluster", { changed: true }],
      ["service.default.web", { changed: true }],
    ]);
  });

  it("a burst of changes costs one recompute, which enqueues only the stacks whose desired state changed", async () => {
    const { driver, watcher, enqueued } = setup();
    driver.fill();
    enqueued.length = 0;
    watcher.current = { nodes: [NODE], services: [{ ...WEB, loadBalancerSourceRanges: ["10.0.0.0/8"] }] };
    watcher.emit("change");
    watcher.emit("change");
    watcher.emit("change");
    assert.deepEqual(enqueued, []);
    await sleep(DEBOUNCE_MS * 6);
    assert.deepEqual(enqueued, [["service.default.web", { changed: true }]]);
  });

  it("serviceMeta enqueues the Service's stack without flags; resync recomputes, then enqueues every stack", () => {
    const { driver, watcher, enqueued } = setup();
    driver.fill();
    enqueued.length = 0;
    watcher.emit("serviceMeta", "default/web");
    assert.deepEqual(enqueued, [["service.default.web", undefined]]);
    enqueued.length = 0;
    watcher.current = { nodes: [NODE], services: [] };
    watcher.emit("resync");
    assert.deepEqual(enqueued, [
      ["service.default.web", { changed: true }],
      ["cluster", undefined],
    ]);
  });

  it("stop() cancels a pending recompute", async () => {
    const { driver, watcher, enqueued } = setup();
    driver.fill();
    enqueued.length = 0;
    watcher.current = { nodes: [NODE], services: [] };
    watcher.emit("change");
    driver.stop();
    await sleep(DEBOUNCE_MS * 6);
    assert.deepEqual(enqueued, []);
  });

  it("remembers the Service of a shortened stack name from the snapshot it fills from", () => {
    const { driver, watcher } = setup();
    const long = lbService("team-" + "a".repeat(50), "svc-" + "b".repeat(60), "20000000-0000-4000-8000-000000000002");
    watcher.current = { nodes: [NODE], services: [WEB, long] };
    const stack = serviceStackName(long.namespace, long.name);
    assert.equal(driver.stackKeys.serviceOf(stack), undefined);
    driver.fill();
    assert.deepEqual(driver.stackKeys.serviceOf(stack), { namespace: long.namespace, name: long.name });
  });

  it("folds the references and the cluster firewall's recorded place into the observation", () => {
    const { driver } = setup();
    driver.fill();
    driver.startReferences(["cluster", "service.default.web"]);
    driver.recordedFirewall(true);
    assert.deepEqual(driver.cache.lastObserved(), {
      goneInstances: [],
      referencedZones: [],
      referencedGroups: [],
      legacyHealthCheckReferenced: false,
      denyRulesUnread: true,
    });
    driver.referencesChanged({ zones: ["us-central1-a"], legacyHealthCheck: true, denyRules: ["default/web"] });
    assert.deepEqual(driver.cache.lastObserved(), {
      goneInstances: [],
      referencedZones: ["us-central1-a"],
      referencedGroups: [],
      legacyHealthCheckReferenced: true,
      denyRulesHeld: ["default/web"],
    });
  });

  it("amend() observes the last observation with the patch over it; the stacks whose desired state it changes are enqueued as changed", () => {
    const { driver, enqueued } = setup();
    driver.fill();
    enqueued.length = 0;
    driver.amend({ goneInstances: [{ zone: "us-central1-a", name: "n1" }] });
    assert.deepEqual(driver.cache.lastObserved().goneInstances, [{ zone: "us-central1-a", name: "n1" }]);
    assert.deepEqual(enqueued, [
      ["cluster", { changed: true }],
      ["service.default.web", { changed: true }],
    ]);
  });
});

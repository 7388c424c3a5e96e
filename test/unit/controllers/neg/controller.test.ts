// The NEG controller (controllers/neg/controller.ts) over the GCE emulator's REST face and the real
// Compute client, its desired endpoints from the real DesiredCache through the DesiredDriver: a NEG
// its stack has not created, a NEG filled, a node leaving, endpoints detached out of band, and a
// subset kept from what GCE holds after a restart.
import * as assert from "node:assert/strict";

import pino from "pino";

import { startGceEmulator, type GceEmulator } from "../../../../emulator/gce";
import { ComputeClient } from "../../../../gce";
import { DesiredDriver } from "../../../../controllers/desiredDriver";
import { NEG_MISSING_RETRY_MS, NegController } from "../../../../controllers/neg/controller";
import { DesiredCache } from "../../../../model/desiredCache";
import type { ClusterSnapshot, NodeInfo, ServiceInfo } from "../../../../model";
import { CONFIG, gceNode, lbService } from "../../../support/builders";
import type { NetworkSpec } from "../../../../emulator/gce/networks";

const ZONE = "us-central1-a";
const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const LB = "a0f1e2d3c4b5a49788695a4b3c2d1e0f";
const KEY = "default/svc";
const NETWORKS: NetworkSpec[] = [
  {
    name: "k8s-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "k8s-subnet", ipCidrRange: "10.128.0.0/20" }],
  },
];
const NEG_PATH = `projects/${CONFIG.project}/zones/${ZONE}/networkEndpointGroups/${LB}`;

function vm(i: number): { name: string; ip: string } {
  return { name: `vm-${String(i).padStart(2, "0")}`, ip: `10.128.0.${10 + i}` };
}

function nodeOf(i: number): NodeInfo {
  const { name, ip } = vm(i);
  return gceNode(name, `00000000-0000-4000-8000-0000000002${String(i).padStart(2, "0")}`, ZONE, [], {
    internalIP: ip,
  });
}

const service = (internal: boolean): ServiceInfo =>
  lbService("default", "svc", UID, {
    annotations: {
      "dccm.io/backend": "neg",
      ...(internal ? { "networking.gke.io/load-balancer-type": "Internal" } : {}),
    },
  });

describe("controllers/neg NegController over the GCE emulator", function () {
  let gce: GceEmulator;
  let snapshot: ClusterSnapshot;
  let enqueued: string[];
  let listedServices: string[];

  beforeEach(async () => {
    gce = await startGceEmulator({ networks: NETWORKS });
    for (let i = 0; i < 30; i++)
      gce.putInstance(vm(i).name, {
        zone: ZONE,
        networkInterfaces: [{ network: "k8s-net", subnetwork: "k8s-subnet", networkIP: vm(i).ip }],
      });
    enqueued = [];
    listedServices = [];
  });
  afterEach(async () => gce?.stop());

  function start(nodes: number, internal: boolean): { driver: DesiredDriver; negs: NegController } {
    snapshot = { nodes: Array.from({ length: nodes }, (_, i) => nodeOf(i)), services: [service(internal)] };
    const driver = new DesiredDriver({
      cache: new DesiredCache(CONFIG),
      debounceMs: 0,
      enqueue: () => undefined,
      enqueueNegs: (key) => enqueued.push(key),
    });
    driver.attach({ on: () => undefined, snapshot: () => snapshot });
    driver.fill();
    const negs = new NegController({
      project: CONFIG.project,
      compute: new ComputeClient({ endpoint: gce.computeEndpoint, sleep: async () => undefined }),
      negsOf: (key) => driver.cache.negsOf(key),
      tellMembers: (members) => driver.negMembers(members),
      onListed: (key) => listedServices.push(key),
      signal: new AbortController().signal,
      logger: pino({ level: "silent" }),
      parallelism: 1,
      paused: true,
    });
    return { driver, negs };
  }

  async function createNeg(): Promise<void> {
    const link = (rel: string): string => `${gce.endpoint}/compute/v1/projects/${CONFIG.project}/${rel}`;
    const res = await fetch(`${gce.computeEndpoint}projects/${CONFIG.project}/zones/${ZONE}/networkEndpointGroups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: LB,
        networkEndpointType: "GCE_VM_IP",
        network: link("global/networks/k8s-net"),
        subnetwork: link("regions/us-central1/subnetworks/k8s-subnet"),
      }),
    });
    assert.equal(res.status, 200);
  }

  async function held(): Promise<string[]> {
    const res = await fetch(`${gce.computeEndpoint}${NEG_PATH}/listNetworkEndpoints`, { method: "POST" });
    const body = (await res.json()) as { items?: { networkEndpoint: { instance: string; ipAddress: string } }[] };
    return (body.items ?? [])
      .map((item) => `${item.networkEndpoint.instance} ${item.networkEndpoint.ipAddress}`)
      .sort();
  }

  async function change(action: "attach" | "detach", names: string[]): Promise<void> {
    const endpoints = names.map((name) => ({ instance: name, ipAddress: vm(Number(name.slice(3))).ip }));
    const res = await fetch(`${gce.computeEndpoint}${NEG_PATH}/${action}NetworkEndpoints`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ networkEndpoints: endpoints }),
    });
    assert.equal(res.status, 200);
  }

  const NEG_CALLS = "POST /compute/v1/projects/{project}/zones/{zone}/networkEndpointGroups/{name}/";

  it("its stack has not created the NEG: one list, no write, told as holding none (the backend service stays on the groups), a retry after 30 s saying so", async () => {
    const { driver, negs } = start(3, false);
    assert.deepStrictEqual(enqueued, [KEY]);
    assert.equal(driver.cache.negsOf(KEY).length, 1);
    assert.equal(driver.cache.view("service.default.svc").service?.negsPending, undefined);
    assert.deepStrictEqual(await negs.sync(KEY), {
      kind: "retryAfter",
      ms: NEG_MISSING_RETRY_MS,
      reason: "1 of its NEGs do not exist yet: its stack has not created them",
    });
    assert.deepStrictEqual(gce.calls(), { [`${NEG_CALLS}listNetworkEndpoints`]: 1 });
    assert.deepStrictEqual(listedServices, [KEY]);
    assert.deepStrictEqual(driver.cache.lastObserved().negMembers, { [`${ZONE}/${LB}`]: [] });
    assert.equal(driver.cache.view("service.default.svc").service?.negsPending, true);
  });

  it("fills the NEG in one attach, tells what it holds, detaches a node that left, puts back on a refresh what was detached out of band, and forgets the NEGs of a Service that went", async () => {
    const { driver, negs } = start(3, false);
    await createNeg();
    gce.resetCalls();
    assert.deepStrictEqual(await negs.sync(KEY), { kind: "ok" });
    assert.deepStrictEqual(await held(), ["vm-00 10.128.0.10", "vm-01 10.128.0.11", "vm-02 10.128.0.12"]);
    assert.deepStrictEqual(gce.calls(), {
      [`${NEG_CALLS}listNetworkEndpoints`]: 2,
      [`${NEG_CALLS}attachNetworkEndpoints`]: 1,
    });
    assert.deepStrictEqual(driver.cache.lastObserved().negMembers, { [`${ZONE}/${LB}`]: ["vm-00", "vm-01", "vm-02"] });

    enqueued.length = 0;
    snapshot = { ...snapshot, nodes: snapshot.nodes.slice(0, 2) };
    driver.fill();
    assert.deepStrictEqual(enqueued, [KEY]);
    assert.deepStrictEqual(await negs.sync(KEY), { kind: "ok" });
    assert.deepStrictEqual(await held(), ["vm-00 10.128.0.10", "vm-01 10.128.0.11"]);
    assert.deepStrictEqual(driver.cache.lastObserved().negMembers, { [`${ZONE}/${LB}`]: ["vm-00", "vm-01"] });

    await change("detach", ["vm-01"]);
    gce.resetCalls();
    // What it left there is what the desired state says: not listed again, but by a refresh.
    assert.deepStrictEqual(await negs.sync(KEY), { kind: "ok" });
    assert.deepStrictEqual(gce.calls(), {});
    assert.deepStrictEqual(await negs.sync(KEY, true), { kind: "ok" });
    assert.deepStrictEqual(await held(), ["vm-00 10.128.0.10", "vm-01 10.128.0.11"]);
    assert.deepStrictEqual(gce.calls(), {
      [`${NEG_CALLS}listNetworkEndpoints`]: 2,
      [`${NEG_CALLS}attachNetworkEndpoints`]: 1,
    });

    // The Service goes: no call (its stack deletes its NEGs), and what was known of them is forgotten.
    snapshot = { ...snapshot, services: [] };
    driver.fill();
    gce.resetCalls();
    assert.deepStrictEqual(await negs.sync(KEY), { kind: "ok" });
    assert.deepStrictEqual(gce.calls(), {});
    assert.deepStrictEqual(driver.cache.lastObserved().negMembers, {});
  });

  it("after a restart, an internal Service's subset of 25 out of 30 is what GCE holds, not a new pick: no attach, no detach", async () => {
    const { driver } = start(30, true);
    const fresh = (driver.cache.negsOf(KEY)[0]?.endpoints ?? []).map((endpoint) => endpoint.instance);
    assert.equal(fresh.length, 25);
    // What an earlier process left: five the fresh pick leaves out, and twenty of its own.
    const left = Array.from({ length: 30 }, (_, i) => vm(i).name).filter((name) => !fresh.includes(name));
    const before = [...left, ...fresh.slice(0, 20)].sort();
    await createNeg();
    await change("attach", before);
    gce.resetCalls();
    const { negs } = start(30, true);
    assert.deepStrictEqual(await negs.sync(KEY), { kind: "ok" });
    assert.deepStrictEqual(gce.calls(), { [`${NEG_CALLS}listNetworkEndpoints`]: 1 });
    assert.deepStrictEqual(
      (await held()).map((line) => line.split(" ")[0]),
      before,
    );
  });
});

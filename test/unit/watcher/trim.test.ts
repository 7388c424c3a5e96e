// The node controller's view of a Node (watcher/trim.ts trimWatchedNode): exactly the fields it
// reads, Dates of a list and strings of a watch event alike, junk dropped, labels shared with the
// model's NodeInfo.

import * as assert from "node:assert/strict";

import type { V1Node } from "@kubernetes/client-node";

import { trimNode, trimService, trimWatchedNode, type NodeLike, type WatchedNode } from "../../../watcher/trim";

const FULL: V1Node = {
  metadata: {
    name: "n1",
    uid: "u1",
    resourceVersion: "42",
    labels: { "kubernetes.io/hostname": "n1" },
    annotations: { "node.alpha.kubernetes.io/ttl": "0" },
    creationTimestamp: new Date("2025-01-01T00:00:00Z"),
  },
  spec: {
    providerID: "gce://p/us-central1-a/n1",
    podCIDR: "10.4.0.0/24",
    taints: [
      { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" },
      { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: new Date("2025-01-01T00:01:02.345Z") },
    ],
  },
  status: {
    addresses: [
      { type: "InternalIP", address: "10.0.0.2" },
      { type: "Hostname", address: "n1" },
    ],
    conditions: [
      { type: "MemoryPressure", status: "False", lastHeartbeatTime: new Date("2025-01-01T00:05:00Z") },
      {
        type: "Ready",
        status: "False",
        reason: "KubeletNotReady",
        lastHeartbeatTime: new Date("2025-01-01T00:05:00Z"),
      },
      {
        type: "NetworkUnavailable",
        status: "False",
        reason: "RouteCreated",
        message: "RouteController created a route",
        lastTransitionTime: new Date("2025-01-01T00:00:10Z"),
      },
    ],
    images: [{ names: ["registry.k8s.io/pause:3.10"], sizeBytes: 320_000 }],
    capacity: { cpu: "4" },
  },
};

const FULL_VIEW: WatchedNode = {
  name: "n1",
  uid: "u1",
  resourceVersion: "42",
  deleting: false,
  providerID: "gce://p/us-central1-a/n1",
  labels: { "kubernetes.io/hostname": "n1" },
  taints: [
    { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" },
    { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: "2025-01-01T00:01:02.345Z" },
  ],
  addresses: [
    { type: "InternalIP", address: "10.0.0.2" },
    { type: "Hostname", address: "n1" },
  ],
  podCIDRs: ["10.4.0.0/24"],
  ready: "False",
  networkUnavailable: {
    status: "False",
    reason: "RouteCreated",
    message: "RouteController created a route",
    lastTransitionTime: "2025-01-01T00:00:10.000Z",
  },
};

describe("watcher/trim trimWatchedNode", () => {
  it("keeps exactly what the node controller reads (list objects carry Dates)", () => {
    assert.deepStrictEqual(trimWatchedNode(FULL), FULL_VIEW);
  });

  it("watch events carry RFC 3339 strings: kept as sent", () => {
    const fromWatch = JSON.parse(JSON.stringify(FULL)) as NodeLike;
    assert.deepStrictEqual(trimWatchedNode(fromWatch), FULL_VIEW);
  });

  it("an empty Node", () => {
    assert.deepStrictEqual(trimWatchedNode({}), {
      name: "",
      uid: "",
      resourceVersion: "",
      deleting: false,
      labels: {},
      taints: [],
      addresses: [],
    });
  });

  it("junk is dropped, never thrown on; a deletionTimestamp marks it deleting", () => {
    const junk = {
      metadata: { name: "n2", labels: "x", deletionTimestamp: "2025-01-01T00:00:00Z" },
      spec: {
        providerID: "",
        taints: [null, "t", { key: "k", effect: "NoSchedule", value: 3, timeAdded: new Date(Number.NaN) }],
      },
      status: { addresses: {}, conditions: [7, { type: "Ready" }] },
    } as unknown as NodeLike;
    assert.deepStrictEqual(trimWatchedNode(junk), {
      name: "n2",
      uid: "",
      resourceVersion: "",
      deleting: true,
      labels: {},
      taints: [{ key: "k", effect: "NoSchedule" }],
      addresses: [],
    });
  });

  it("shares the labels of the model's NodeInfo (stored once by the watcher)", () => {
    const info = trimNode(FULL);
    const view = trimWatchedNode(FULL, info);
    assert.equal(view.labels, info.labels);
    assert.notEqual(trimWatchedNode(FULL).labels, FULL.metadata?.labels, "without one, a copy");
  });
});

describe("watcher/trim trimNode and trimService: what backend neg reads", () => {
  const bare = { metadata: { name: "n3", uid: "u3" } };

  it("a Node's first InternalIP becomes internalIP (the address of its GCE_VM_IP endpoint)", () => {
    assert.deepStrictEqual(trimNode(FULL), {
      name: "n1",
      uid: "u1",
      providerID: "gce://p/us-central1-a/n1",
      labels: { "kubernetes.io/hostname": "n1" },
      taints: [
        { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" },
        { key: "node.kubernetes.io/unreachable", effect: "NoExecute" },
      ],
      deleting: false,
      podCIDRs: ["10.4.0.0/24"],
      internalIP: "10.0.0.2",
    });
    const twice: NodeLike = {
      ...bare,
      status: {
        addresses: [
          { type: "ExternalIP", address: "34.1.2.3" },
          { type: "InternalIP", address: "" },
          { type: "InternalIP", address: "10.0.0.7" },
          { type: "InternalIP", address: "10.0.0.8" },
        ],
      },
    };
    assert.equal(trimNode(twice).internalIP, "10.0.0.7");
  });

  it("no InternalIP (none, junk addresses): no internalIP key, so the Node's trimmed copy is what it was", () => {
    for (const status of [
      undefined,
      {},
      { addresses: {} },
      { addresses: [null, { type: "InternalIP", address: 7 }] },
    ]) {
      const trimmed = trimNode({ ...bare, ...(status === undefined ? {} : { status }) } as NodeLike);
      assert.equal("internalIP" in trimmed, false, JSON.stringify(status));
    }
  });

  it("spec.trafficDistribution is kept when set, absent otherwise (a Service without it trims as before)", () => {
    const service = { metadata: { name: "s", namespace: "default", uid: "u" }, spec: { type: "LoadBalancer" } };
    assert.equal(
      trimService({ ...service, spec: { ...service.spec, trafficDistribution: "PreferSameZone" } }).trafficDistribution,
      "PreferSameZone",
    );
    assert.equal("trafficDistribution" in trimService(service), false);
    assert.equal(
      "trafficDistribution" in trimService({ ...service, spec: { ...service.spec, trafficDistribution: "" } }),
      false,
    );
  });
});

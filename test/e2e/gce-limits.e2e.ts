/**
 * dccm under GCE's limits, the daemon end to end on the emulator with its limits on: a
 * project quota GCE refuses a Service over, and a burst of Services that spends the per-minute
 * rate quota of mutations.
 *
 * The limits are GCE's kinds with smaller numbers, which GCE lets a project set for itself (a
 * quota override lowers a quota): one static external address per region, 5 mutations per rate
 * interval, and a 3 s interval instead of GCE's minute, so that a refill takes seconds here. Five:
 * a burst of four internal Services makes about three mutations each (no address at rest under
 * addressReservation transient, the default, and each firewall waits for its rule's IP), which a
 * limit of 10 let through.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";

import { loadBalancerName, parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

const INTERNAL = { "networking.gke.io/load-balancer-type": "Internal" };
const BURST = ["burst-1", "burst-2", "burst-3", "burst-4"];

describe("dccm under GCE's quotas and rate limits", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let cappedLb = "";

  before(async () => {
    env = await startTestEnv({
      gce: {
        limits: {
          quotas: { STATIC_ADDRESSES: 1 },
          ratePerInterval: { Queries: 5 },
          rateIntervalMs: 3_000,
          operationLatencyMs: {
            addresses: 100,
            forwardingRules: 300,
            backendServices: 200,
            healthChecks: 100,
            firewalls: 200,
            instanceGroups: 100,
          },
        },
      },
    });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    // Another tool's static address holds the region's one (the quota counts the whole project).
    env.gce.insertOutOfBand("addresses", { name: "theirs" });
    // The e2e VPC is custom mode: internal Services need a subnetwork.
    daemon = new Daemon(daemonOptions(env, parseConfig({ ...E2E_CONFIG, subnetwork: "k8s-subnet" }), {}));
    await daemon.start(() => assert.fail("leadership lost"));
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("a Service over the STATIC_ADDRESSES quota gets one Warning QuotaExceeded naming it, counted by quota", async () => {
    // TCP and UDP on one IP: its two forwarding rules share it through the address <lb>, reserved
    // for the Service's life even under addressReservation transient (the default), in which a
    // single-protocol Service holds no static address at rest and so never meets this quota.
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService("capped", {
        ports: [
          { name: "dns-tcp", protocol: "TCP", port: 53, targetPort: 53 },
          { name: "dns-udp", protocol: "UDP", port: 53, targetPort: 53 },
        ],
      }),
    });
    cappedLb = loadBalancerName(created.metadata?.uid ?? "");
    const warning = await eventually("capped's QuotaExceeded", async () =>
      (await eventReasons(core, "capped")).find((event) => event.reason === "QuotaExceeded"),
    );
    assert.equal(
      warning.message,
      "Error syncing load balancer: GCE quota STATIC_ADDRESSES (limit 1 in region us-central1) exceeded; release unused resources or raise the quota. Next try in 5 minutes, or at once when the desired state changes",
    );
    assert.equal(
      await counter(daemon.metrics.registry, "dccm_gce_quota_exceeded_total", {
        kind: "service",
        quota: "STATIC_ADDRESSES",
      }),
      1,
    );
    assert.equal(
      env.gce.listResources().some((resource) => resource.kind === "addresses" && resource.name === cappedLb),
      false,
    );
  });

  it("a burst of Services spends the rate quota of mutations: the provider backs off, every Service converges without a failure, and the capped Service was not retried meanwhile", async () => {
    await Promise.all(
      BURST.map((name) => core.createNamespacedService({ namespace: "default", body: lbService(name, {}, INTERNAL) })),
    );
    for (const name of BURST) {
      await eventually(
        `${name}'s ingress`,
        async () =>
          (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip,
      );
    }
    const refused = env.gce.limits.counts().rateLimited.Queries ?? 0;
    assert.equal(refused > 0, true, `mutations refused by the rate quota: ${refused}`);
    for (const name of BURST) {
      assert.deepEqual(
        (await eventReasons(core, name)).map((event) => event.reason),
        ["EnsuringLoadBalancer", "EnsuredLoadBalancer"],
      );
    }
    // The burst took several rate intervals; the queue's failure backoff (1 s, doubling) would
    // have tried the capped Service again several times: the quota wait tried it once.
    assert.deepEqual(env.gce.limits.counts().quotaExceeded, { STATIC_ADDRESSES: 1 });
    assert.deepEqual(
      (await eventReasons(core, "capped")).filter((event) => event.reason === "QuotaExceeded").length,
      1,
    );
  });

  it("once the quota has room, a change of the Service runs it at once: it gets its address and ingress", async () => {
    env.gce.deleteOutOfBand("addresses", "theirs");
    await core.patchNamespacedService(
      { name: "capped", namespace: "default", body: [{ op: "replace", path: "/spec/ports/0/port", value: 81 }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
    const ip = await eventually(
      "capped's ingress",
      async () =>
        (await core.readNamespacedService({ name: "capped", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    const address = env.gce
      .listResources()
      .find((resource) => resource.kind === "addresses" && resource.name === cappedLb);
    assert.equal(address?.properties.address, ip);
  });
});

/**
 * dccm's changes that real GCE refuses or replaces, on the real engine against the emulator held to
 * the provider's rules: each test
 * reproduces a change a user makes to a Service and asserts that it converges without changing
 * the Service's IP.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { describeError } from "../../runtime/errors";
import { StackRunner } from "../../stacks/runner";
import {
  CLUSTER_STACK,
  desiredState,
  loadBalancerName,
  parseConfig,
  type ClusterSnapshot,
  type ServiceInfo,
} from "../../model";
import type { ResourceListing } from "../../emulator/gce";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { parseNodeConfig } from "../../controllers/node";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

// The e2e VPC (test/support/e2e/env.ts) is custom mode: internal Services need a subnetwork.
// addressReservation `always`: these runs are the stack program's alone, so the IP a replaced rule
// keeps is that of <lb>, reserved for the Service's life. Under `transient`, the default, the
// daemon pins the IP around such a run (test/e2e/address-reservation.e2e.ts).
const config = parseConfig({ ...E2E_CONFIG, subnetwork: "k8s-subnet", addressReservation: "always" });
const INTERNAL = { "networking.gke.io/load-balancer-type": "Internal" };

function service(name: string, uid: string, extra: Partial<ServiceInfo> = {}): ServiceInfo {
  return {
    namespace: "default",
    name,
    uid,
    type: "LoadBalancer",
    annotations: {},
    ports: [{ protocol: "TCP", port: 80 }],
    loadBalancerSourceRanges: [],
    deleting: false,
    ...extra,
  };
}

const POOL_UID = "f1de0001-0000-4000-8000-000000000001";
const SWITCH_UID = "f1de0002-0000-4000-8000-000000000002";
const ILB_UID = "f1de0003-0000-4000-8000-000000000003";
const LEGACY_UID = "f1de0004-0000-4000-8000-000000000004";
const SHARED_IP_UID = "f1de0005-0000-4000-8000-000000000005";

describe("fidelity: Service changes that GCE replaces or refuses converge, and keep the IP", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let runner: StackRunner;
  const services: Record<string, ServiceInfo> = {
    pool: service("pool", POOL_UID, { annotations: { "dccm.io/backend": "target-pool" }, sessionAffinity: "None" }),
    switch: service("switch", SWITCH_UID, { ports: [{ protocol: "TCP", port: 53 }] }),
    ilb: service("ilb", ILB_UID, { annotations: INTERNAL }),
    legacy: service("legacy", LEGACY_UID, { annotations: INTERNAL }),
  };
  const snapshot = (): ClusterSnapshot => ({
    nodes: [
      {
        name: "node-1",
        uid: "f1de0000-0000-4000-8000-00000000000a",
        providerID: "gce://dccm-test/us-central1-a/node-1",
        labels: {},
        taints: [],
        deleting: false,
        podCIDRs: [],
      },
    ],
    services: Object.values(services),
  });

  async function upService(name: string, opts: { refresh: boolean } = { refresh: false }): Promise<void> {
    const desired = desiredState(snapshot(), config);
    await runner.up(`service.default.${name}`, { kind: "service", namespace: "default", name }, desired, opts);
  }

  function find(kind: string, name: string): ResourceListing {
    const found = env.gce.listResources().find((resource) => resource.kind === kind && resource.name === name);
    if (found === undefined) throw new Error(`no ${kind} ${name} in the emulator`);
    return found;
  }

  function namesOf(lb: string): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.name.includes(lb))
      .map((resource) => `${resource.kind} ${resource.name}`);
  }

  before(async () => {
    env = await startTestEnv();
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces"),
      pulumiCommand: env.pulumiCommand,
    });
  });

  after(async () => {
    await env?.stop();
  });

  it("the cluster stack's instance group names its network by URL (GCE refuses a bare name), on the network of its instances", async () => {
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desiredState(snapshot(), config), { refresh: false });
    const group = find("instanceGroups", "k8s-ig--e2e0cafe");
    assert.equal(group.properties.network, `${env.gce.endpoint}/compute/v1/projects/dccm-test/global/networks/k8s-net`);
    assert.deepEqual(group.properties.instances, [
      `${env.gce.endpoint}/compute/v1/projects/dccm-test/zones/us-central1-a/instances/node-1`,
    ]);
  });

  it("a target-pool Service whose sessionAffinity changes gets a new pool behind the same IP", async () => {
    const lb = loadBalancerName(POOL_UID);
    await upService("pool");
    const ip = find("forwardingRules", lb).properties.ipAddress;
    assert.equal(find("targetPools", lb).properties.sessionAffinity, "NONE");

    services.pool = { ...services.pool, sessionAffinity: "ClientIP" };
    await upService("pool");
    assert.equal(find("targetPools", lb).properties.sessionAffinity, "CLIENT_IP");
    const rule = find("forwardingRules", lb);
    assert.equal(rule.properties.ipAddress, ip);
    assert.equal(find("addresses", lb).properties.address, ip);
    assert.equal(
      rule.properties.target,
      `${env.gce.endpoint}/compute/v1/projects/dccm-test/regions/us-central1/targetPools/${lb}`,
    );
  });

  it("a Service switched from TCP to UDP gets a UDP backend service and forwarding rule behind the same IP", async () => {
    const lb = loadBalancerName(SWITCH_UID);
    await upService("switch");
    const ip = find("forwardingRules", lb).properties.ipAddress;

    services.switch = { ...services.switch, ports: [{ protocol: "UDP", port: 53 }] };
    await upService("switch");
    assert.equal(find("backendServices", lb).properties.protocol, "UDP");
    assert.equal(find("forwardingRules", lb).properties.ipProtocol, "UDP");
    assert.equal(find("forwardingRules", lb).properties.ipAddress, ip);
    assert.deepEqual(namesOf(lb), [
      `addresses ${lb}`,
      `backendServices ${lb}`,
      `firewalls k8s-fw-${lb}`,
      `forwardingRules ${lb}`,
    ]);
  });

  it("an internal Service that gains a UDP port keeps its IP: its address is a SHARED_LOADBALANCER_VIP from the start", async () => {
    const lb = loadBalancerName(ILB_UID);
    await upService("ilb");
    const address = find("addresses", lb);
    assert.equal(address.properties.purpose, "SHARED_LOADBALANCER_VIP");
    assert.equal(
      address.properties.subnetwork,
      `${env.gce.endpoint}/compute/v1/projects/dccm-test/regions/us-central1/subnetworks/k8s-subnet`,
    );
    const ip = String(address.properties.address);
    assert.equal(ip.startsWith("10.128."), true, `${ip} comes from k8s-subnet 10.128.0.0/20`);

    services.ilb = {
      ...services.ilb,
      ports: [
        { protocol: "TCP", port: 80 },
        { protocol: "UDP", port: 53 },
      ],
    };
    await upService("ilb");
    assert.equal(find("addresses", lb).properties.id, address.properties.id);
    assert.deepEqual(
      [find("forwardingRules", lb), find("forwardingRules", `${lb}-udp`)].map(
        (rule) => `${String(rule.properties.ipProtocol)} ${String(rule.properties.ipAddress)}`,
      ),
      [`TCP ${ip}`, `UDP ${ip}`],
    );
  });

  it("an internal address an earlier dccm reserved as GCE_ENDPOINT is kept by the upgrade (no new IP)", async () => {
    const lb = loadBalancerName(LEGACY_UID);
    await upService("legacy");
    // What an earlier dccm left: the same address with purpose GCE_ENDPOINT (read back by refresh).
    env.gce.patchOutOfBand("addresses", lb, { purpose: "GCE_ENDPOINT" });
    const before = find("addresses", lb);
    await upService("legacy", { refresh: true });
    const after = find("addresses", lb);
    assert.deepEqual(
      [after.properties.id, after.properties.address, after.properties.purpose],
      [before.properties.id, before.properties.address, "GCE_ENDPOINT"],
    );
    assert.equal(find("forwardingRules", lb).properties.ipAddress, before.properties.address);
  });

  it("an internal Service with TCP and UDP ports and a loadBalancerIP is rejected naming spec.loadBalancerIP; nothing is created", async () => {
    services.shared = service("shared", SHARED_IP_UID, {
      annotations: INTERNAL,
      loadBalancerIP: "10.128.0.200",
      ports: [
        { protocol: "TCP", port: 53 },
        { protocol: "UDP", port: 53 },
      ],
    });
    await assert.rejects(upService("shared"), (error: Error) => {
      assert.match(
        describeError(error, 4096),
        /Service default\/shared: spec\.loadBalancerIP: an internal Service with both TCP and UDP ports needs one IP shared by two forwarding rules, which GCE allows only on an address reserved with purpose SHARED_LOADBALANCER_VIP/,
      );
      return true;
    });
    assert.deepEqual(namesOf(loadBalancerName(SHARED_IP_UID)), []);
    delete services.shared;
  });

  it("destroying every stack leaves the emulator without a load balancer resource", async () => {
    for (const name of Object.keys(services)) await runner.destroyAndRemove(`service.default.${name}`);
    await runner.destroyAndRemove(CLUSTER_STACK);
    assert.deepEqual(
      env.gce
        .listResources()
        .filter((resource) => resource.kind !== "instances")
        .map((resource) => `${resource.kind} ${resource.name}`),
      [],
    );
  });

  describe("the daemon", () => {
    let daemon: Daemon | undefined;
    after(async () => {
      await daemon?.stop();
    });

    it("a loadBalancerIP the project does not hold ends in SyncLoadBalancerFailed with GCE's reason, never Ensured, no ingress", async () => {
      const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
      await createNode(core, "node-1", "us-central1-a");
      daemon = new Daemon(daemonOptions(env, config, {}));
      await daemon.start(() => assert.fail("leadership lost"));
      await core.createNamespacedService({
        namespace: "default",
        body: lbService("unowned", { loadBalancerIP: "203.0.113.77" }),
      });
      const failure = await eventually("a SyncLoadBalancerFailed event", async () =>
        (await eventReasons(core, "unowned")).find((event) => event.reason === "SyncLoadBalancerFailed"),
      );
      assert.match(
        failure.message,
        /Invalid value for field 'resource\.IPAddress': '203\.0\.113\.77'\. Invalid IP address specified\./,
      );
      assert.equal(/[{}]/.test(failure.message), false, `no raw JSON body in ${failure.message}`);
      await daemon.idle();
      assert.equal(
        (await eventReasons(core, "unowned")).some((event) => event.reason === "EnsuredLoadBalancer"),
        false,
      );
      const status = await core.readNamespacedServiceStatus({ name: "unowned", namespace: "default" });
      assert.equal(status.status?.loadBalancer?.ingress, undefined);
      assert.equal(
        env.gce.listResources().some((resource) => resource.kind === "forwardingRules"),
        false,
      );
    });

    it("with Compute access, such an IP is refused before any run, in dccm's words; once reserved, it is used", async () => {
      await daemon?.stop();
      const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
      daemon = new Daemon(
        daemonOptions(env, config, { nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint }, []) }),
      );
      await daemon.start(() => assert.fail("leadership lost"));
      await core.createNamespacedService({
        namespace: "default",
        body: lbService("asks-ip", { loadBalancerIP: "203.0.113.78" }),
      });
      const failure = await eventually("a SyncLoadBalancerFailed event", async () =>
        (await eventReasons(core, "asks-ip")).find((event) => event.reason === "SyncLoadBalancerFailed"),
      );
      assert.equal(
        failure.message,
        "Error syncing load balancer: Service default/asks-ip: spec.loadBalancerIP: 203.0.113.78 is neither a static address reserved in project dccm-test " +
          "region us-central1 nor the current IP of the load balancer; reserve it first (gcloud compute addresses create NAME --region us-central1 --addresses 203.0.113.78)",
      );
      assert.equal(
        await counter(daemon.metrics.registry, "dccm_stack_runs_total", {
          stack: "service.default.asks-ip",
          operation: "up",
        }),
        0,
      );
      // The user reserves it, as the event says; the next retry uses it and never releases it.
      env.gce.state.create("addresses", {
        project: "dccm-test",
        region: "us-central1",
        name: "user-reserved",
        address: "203.0.113.78",
      });
      const ip = await eventually(
        "asks-ip's ingress",
        async () =>
          (await core.readNamespacedServiceStatus({ name: "asks-ip", namespace: "default" })).status?.loadBalancer
            ?.ingress?.[0]?.ip,
      );
      assert.equal(ip, "203.0.113.78");
      await core.deleteNamespacedService({ name: "asks-ip", namespace: "default" });
      await eventually("asks-ip gone", async () =>
        (await core.listNamespacedService({ namespace: "default" })).items.some(
          (svc) => svc.metadata?.name === "asks-ip",
        )
          ? undefined
          : true,
      );
      assert.equal(
        env.gce.listResources().some((resource) => resource.kind === "addresses" && resource.name === "user-reserved"),
        true,
      );
    });
  });
});

/**
 * addressReservation `transient` (the default) end to end: a real kube-apiserver, the real Pulumi
 * engine, the GCE emulator in GCE's realistic profile (a new project's quotas, STATIC_ADDRESSES 8 per
 * region among them, rate quotas, operation latencies scaled by REALISTIC_SCALE). A Service holds no static
 * address at rest; a change that replaces its forwarding rule pins the rule's IP, runs, releases it.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";

import { loadBalancerName, parseConfig, protocolSuffixedName } from "../../model";
import { realisticLimits } from "../../emulator/gce";
import { daemonOptions, REALISTIC_SCALE, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { eventually } from "../support/wait";

const SERVICES = Array.from({ length: 12 }, (_, index) => `quota-${index + 1}`);

describe("addressReservation transient: ephemeral IPs, pinned only while a change replaces a forwarding rule", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;

  const ingressOf = (name: string): Promise<string> =>
    eventually(`${name}'s ingress`, async () => {
      const service = await core.readNamespacedService({ name, namespace: "default" });
      return service.status?.loadBalancer?.ingress?.[0]?.ip;
    });
  const kindsNamed = (lb: string): string[] =>
    env.gce
      .listResources()
      .filter((resource) => resource.name.includes(lb))
      .map((resource) => `${resource.kind} ${resource.name}`);
  const ruleOf = (lb: string) =>
    env.gce.listResources().find((resource) => resource.kind === "forwardingRules" && resource.name === lb);

  before(async () => {
    env = await startTestEnv({ gce: { limits: realisticLimits(REALISTIC_SCALE) } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    daemon = new Daemon(
      // The e2e VPC is custom mode: internal Services need a subnetwork.
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, subnetwork: "k8s-subnet" }), {
        driftMs: 4000,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("12 Services on a STATIC_ADDRESSES quota of 8 are all served, and hold no static address", async () => {
    await Promise.all(
      SERVICES.map((name) => core.createNamespacedService({ namespace: "default", body: lbService(name) })),
    );
    const ips = await Promise.all(SERVICES.map(ingressOf));
    assert.equal(new Set(ips).size, 12);
    assert.deepEqual(
      env.gce.listResources().filter((resource) => resource.kind === "addresses"),
      [],
    );
    assert.deepEqual(env.gce.limits.counts().quotaExceeded, {});
  });

  it("TCP → UDP replaces the forwarding rule on the same IP: pinned by addresses.insert, released after", async () => {
    const service = await core.readNamespacedService({ name: "quota-1", namespace: "default" });
    const lb = loadBalancerName(service.metadata?.uid ?? "");
    const ip = await ingressOf("quota-1");
    env.gce.clearHistory();
    await core.patchNamespacedService(
      {
        name: "quota-1",
        namespace: "default",
        body: [{ op: "replace", path: "/spec/ports/0/protocol", value: "UDP" }],
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
    await eventually("a UDP forwarding rule", () => (ruleOf(lb)?.properties.ipProtocol === "UDP" ? true : undefined));
    await eventually("no address left", () =>
      env.gce.listResources().some((resource) => resource.kind === "addresses") ? undefined : true,
    );
    assert.equal(ruleOf(lb)?.properties.ipAddress, ip);
    assert.equal(await ingressOf("quota-1"), ip);
    const addressSteps = env.gce
      .history()
      .filter((entry) => entry.kind === "addresses")
      .map((entry) => `${entry.op} ${entry.name}`);
    assert.deepEqual(addressSteps, [`create ${lb}`, `delete ${lb}`]);
    assert.deepEqual(kindsNamed(lb), [`backendServices ${lb}`, `firewalls k8s-fw-${lb}`, `forwardingRules ${lb}`]);
  });

  it("an internal Service likewise: no address at rest, TCP → UDP on the same IP through a pin", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService("ilb", {}, { "networking.gke.io/load-balancer-type": "Internal" }),
    });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    const ip = await ingressOf("ilb");
    assert.equal(ruleOf(lb)?.properties.loadBalancingScheme, "INTERNAL");
    assert.equal(
      env.gce.listResources().some((resource) => resource.kind === "addresses"),
      false,
    );
    env.gce.clearHistory();
    await core.patchNamespacedService(
      { name: "ilb", namespace: "default", body: [{ op: "replace", path: "/spec/ports/0/protocol", value: "UDP" }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
    await eventually("a UDP internal rule, and no address", () =>
      ruleOf(lb)?.properties.ipProtocol === "UDP" &&
      !env.gce.listResources().some((resource) => resource.kind === "addresses")
        ? true
        : undefined,
    );
    assert.equal(ruleOf(lb)?.properties.ipAddress, ip);
    assert.deepEqual(
      env.gce
        .history()
        .filter((entry) => entry.kind === "addresses")
        .map((entry) => `${entry.op} ${entry.name}`),
      [`create ${lb}`, `delete ${lb}`],
    );
  });

  it("a UDP port added shares the IP through <lb>, promoted from the rule's ephemeral IP; removed, <lb> is released; the IP never changes", async () => {
    const service = await core.readNamespacedService({ name: "quota-4", namespace: "default" });
    const lb = loadBalancerName(service.metadata?.uid ?? "");
    const ip = await ingressOf("quota-4");
    const udp = protocolSuffixedName(lb, "UDP");
    await core.patchNamespacedService(
      {
        name: "quota-4",
        namespace: "default",
        body: [{ op: "add", path: "/spec/ports/-", value: { name: "dns", protocol: "UDP", port: 53, targetPort: 53 } }],
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
    await eventually("the UDP rule", () => (ruleOf(udp) !== undefined ? true : undefined));
    const address = env.gce.listResources().find((resource) => resource.kind === "addresses" && resource.name === lb);
    assert.equal(address?.properties.address, ip);
    assert.equal(ruleOf(lb)?.properties.ipAddress, ip);
    assert.equal(ruleOf(udp)?.properties.ipAddress, ip);
    await core.patchNamespacedService(
      { name: "quota-4", namespace: "default", body: [{ op: "remove", path: "/spec/ports/1" }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
    await eventually("the UDP rule gone and <lb> released", () =>
      ruleOf(udp) === undefined && !env.gce.listResources().some((resource) => resource.kind === "addresses")
        ? true
        : undefined,
    );
    assert.equal(ruleOf(lb)?.properties.ipAddress, ip);
    assert.equal(await ingressOf("quota-4"), ip);
  });

  it("a drift repair of a forwarding rule changed out of band replaces it on the same IP, pinned and released", async () => {
    const service = await core.readNamespacedService({ name: "quota-3", namespace: "default" });
    const lb = loadBalancerName(service.metadata?.uid ?? "");
    const ip = await ingressOf("quota-3");
    env.gce.clearHistory();
    env.gce.patchOutOfBand("forwardingRules", lb, { ports: ["81"] });
    const drift = await eventually("a DriftCorrected event", async () =>
      (await eventReasons(core, "quota-3")).find((event) => event.reason === "DriftCorrected"),
    );
    assert.equal(
      drift.message,
      "Put back: ForwardingRule default/quota-3:forwarding-rule-tcp (delete-replaced), ForwardingRule default/quota-3:forwarding-rule-tcp (replace), ForwardingRule default/quota-3:forwarding-rule-tcp (create-replacement)",
    );
    assert.deepEqual(ruleOf(lb)?.properties.ports, ["80"]);
    assert.equal(ruleOf(lb)?.properties.ipAddress, ip);
    assert.deepEqual(
      env.gce
        .history()
        .filter((entry) => entry.kind === "addresses")
        .map((entry) => `${entry.op} ${entry.name}`),
      [`create ${lb}`, `delete ${lb}`],
    );
    assert.deepEqual(
      env.gce.listResources().filter((resource) => resource.kind === "addresses"),
      [],
    );
  });

  it("a forwarding rule deleted out of band took its ephemeral IP: the repair is held with IPChangeHeld, no new IP", async () => {
    const service = await core.readNamespacedService({ name: "quota-2", namespace: "default" });
    const lb = loadBalancerName(service.metadata?.uid ?? "");
    const ip = await ingressOf("quota-2");
    env.gce.deleteOutOfBand("forwardingRules", lb);
    const held = await eventually("IPChangeHeld", async () =>
      (await eventReasons(core, "quota-2")).find((event) => event.reason === "IPChangeHeld"),
    );
    assert.match(
      held.message,
      new RegExp(`^Not repaired: the run would not keep the load balancer's IP ${ip.replace(/\./g, "\\.")}: `),
    );
    assert.equal(
      held.message,
      `Not repaired: the run would not keep the load balancer's IP ${ip}: ForwardingRule default/quota-2:forwarding-rule-tcp (create): its IP is not known before the run: GCE would allocate a new one. Nothing was applied; retried with backoff. Reserve ${ip} again as address ${lb} in us-central1 if the project still holds it, or delete and create the Service again to take a new IP`,
    );
    assert.equal(ruleOf(lb), undefined);
    assert.equal(await ingressOf("quota-2"), ip);
  });
});

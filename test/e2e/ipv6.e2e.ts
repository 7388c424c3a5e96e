/**
 * IPv6 and dual-stack LoadBalancer Services end to end: a dual-stack kube-apiserver
 * (a second, IPv6 Service range), the real Pulumi engine, the GCE emulator with a dual-stack
 * subnetwork. A RequireDualStack Service gets an IPv4 and an IPv6 address in its status (IPv4
 * first); switched to SingleStack IPv4, exactly its IPv6 resources are deleted and its IPv4 IP stays.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { daemonOptions, E2E_NETWORKS, startTestEnv, type TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

/** The e2e VPC with one more subnetwork: dual-stack, external IPv6 access, its /64 named. */
const NETWORKS = E2E_NETWORKS.map((network) =>
  network.name === "k8s-net"
    ? {
        ...network,
        subnetworks: [
          ...(network.subnetworks ?? []),
          {
            name: "v6-subnet",
            ipCidrRange: "10.131.0.0/20",
            stackType: "IPV4_IPV6" as const,
            ipv6AccessType: "EXTERNAL" as const,
            ipv6CidrRange: "2600:1900:4000:7f3::/64",
          },
          {
            name: "v6-subnet-b",
            ipCidrRange: "10.132.0.0/20",
            stackType: "IPV4_IPV6" as const,
            ipv6AccessType: "EXTERNAL" as const,
            ipv6CidrRange: "2600:1900:4000:7f4::/64",
          },
        ],
      }
    : network,
);

describe("IPv6 and dual-stack LoadBalancer Services", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let lb = "";
  let ipv4 = "";

  /** `<kind> <name>` of every emulator resource named for the load balancer, sorted. */
  function resourcesOf(name: string): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.name.includes(name))
      .map((resource) => `${resource.kind} ${resource.name}`)
      .sort();
  }

  function addressOf(name: string): unknown {
    return env.gce.listResources().find((resource) => resource.kind === "addresses" && resource.name === name)
      ?.properties.address;
  }

  /** The IPv4 forwarding rule's IP: ephemeral, no address reserved at rest (addressReservation transient, the default). */
  function ruleIpOf(name: string): unknown {
    return env.gce.listResources().find((resource) => resource.kind === "forwardingRules" && resource.name === name)
      ?.properties.ipAddress;
  }

  async function ingress(): Promise<string[]> {
    const service = await core.readNamespacedService({ name: "dual", namespace: "default" });
    return (service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip ?? "");
  }

  before(async () => {
    env = await startTestEnv({ gce: { networks: NETWORKS }, kube: { serviceIPv6Range: "fd00:10:96::/112" } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    // Compute access, as the daemon has in a cluster: a change that may replace the IPv4 rule pins its IP first.
    daemon = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), { firstUpGuard: { computeEndpoint: env.gce.computeEndpoint } }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("a RequireDualStack Service gets both IPs in its status, IPv4 first, from an IPv4 and an IPv6 frontend", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService(
        "dual",
        { ipFamilyPolicy: "RequireDualStack", ipFamilies: ["IPv4", "IPv6"] },
        { "dccm.io/ipv6-subnet": "v6-subnet" },
      ),
    });
    lb = loadBalancerName(created.metadata?.uid ?? "");
    const ips = await eventually("dual's two ingress IPs", async () => {
      const listed = await ingress();
      return listed.length === 2 ? listed : undefined;
    });
    ipv4 = String(ruleIpOf(lb));
    assert.deepEqual(ips, [ipv4, addressOf(`${lb}-ipv6`)]);
    assert.equal(ips[1], "2600:1900:4000:7f3:0:1::");
    assert.deepEqual(resourcesOf(lb), [
      `addresses ${lb}-ipv6`,
      `backendServices ${lb}`,
      `firewalls k8s-${lb}-http-hc-ipv6`,
      `firewalls k8s-fw-${lb}`,
      `firewalls k8s-fw-${lb}-ipv6`,
      `forwardingRules ${lb}`,
      `forwardingRules ${lb}-ipv6`,
    ]);
    const rule = env.gce
      .listResources()
      .find((resource) => resource.kind === "forwardingRules" && resource.name === `${lb}-ipv6`);
    assert.equal(rule?.properties.ipVersion, "IPV6");
    assert.equal(rule?.properties.ipAddress, ips[1]);
    assert.equal(String(rule?.properties.subnetwork).endsWith("/subnetworks/v6-subnet"), true);
    assert.equal(
      rule?.properties.backendService,
      env.gce.listResources().find((resource) => resource.kind === "backendServices" && resource.name === lb)
        ?.properties.selfLink,
    );
    const firewall = env.gce
      .listResources()
      .find((resource) => resource.kind === "firewalls" && resource.name === `k8s-${lb}-http-hc-ipv6`);
    assert.deepEqual(firewall?.properties.sourceRanges, ["2600:1901:8001::/48", "2600:2d00:1:b029::/64"]);
    // Each family's firewalls open towards that family's IP only (an external Service's health-check firewall too).
    const destinations = (name: string): unknown =>
      env.gce.listResources().find((resource) => resource.kind === "firewalls" && resource.name === name)?.properties
        .destinationRanges;
    assert.deepEqual(
      [destinations(`k8s-fw-${lb}`), destinations(`k8s-fw-${lb}-ipv6`), destinations(`k8s-${lb}-http-hc-ipv6`)],
      [[ipv4], [ips[1]], [ips[1]]],
    );
  });

  it("moved to another dual-stack subnetwork (dccm.io/ipv6-subnet): the IPv6 address and rule are replaced there, the IPv4 IP stays", async () => {
    const current = await core.readNamespacedService({ name: "dual", namespace: "default" });
    await core.replaceNamespacedService({
      name: "dual",
      namespace: "default",
      body: {
        ...current,
        metadata: {
          ...current.metadata,
          annotations: { ...current.metadata?.annotations, "dccm.io/ipv6-subnet": "v6-subnet-b" },
        },
      },
    });
    const ips = await eventually("dual's IPv6 IP from v6-subnet-b", async () => {
      const listed = await ingress();
      return listed[1]?.startsWith("2600:1900:4000:7f4:") === true ? listed : undefined;
    });
    assert.deepEqual(ips, [ipv4, "2600:1900:4000:7f4:0:1::"]);
    await daemon.idle();
    // Pinned for the run, released after: the IPv4 rule keeps its IP as ephemeral.
    assert.deepEqual([ruleIpOf(lb), addressOf(lb)], [ipv4, undefined]);
    const rule = env.gce
      .listResources()
      .find((resource) => resource.kind === "forwardingRules" && resource.name === `${lb}-ipv6`);
    assert.equal(String(rule?.properties.subnetwork).endsWith("/subnetworks/v6-subnet-b"), true);
    assert.equal(rule?.properties.ipAddress, ips[1]);
  });

  it("a PreferDualStack Service with no dual-stack subnetwork to use serves IPv4 only and gets a Warning IPv6Unavailable", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService("prefer", { ipFamilyPolicy: "PreferDualStack", ipFamilies: ["IPv4", "IPv6"] }),
    });
    const preferLb = loadBalancerName(created.metadata?.uid ?? "");
    const ips = await eventually("prefer's ingress", async () => {
      const service = await core.readNamespacedService({ name: "prefer", namespace: "default" });
      const listed = (service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip ?? "");
      return listed.length > 0 ? listed : undefined;
    });
    assert.deepEqual(ips, [ruleIpOf(preferLb)]);
    assert.deepEqual(resourcesOf(preferLb), [
      `backendServices ${preferLb}`,
      `firewalls k8s-fw-${preferLb}`,
      `forwardingRules ${preferLb}`,
    ]);
    assert.deepEqual(await eventReasons(core, "prefer"), [
      { reason: "EnsuringLoadBalancer", message: "Ensuring load balancer" },
      {
        reason: "IPv6Unavailable",
        message:
          "spec.ipFamilyPolicy PreferDualStack: the load balancer serves IPv4 only: metadata.annotations[dccm.io/ipv6-subnet]: IPv6 needs a dual-stack subnetwork (stackType IPV4_IPV6, ipv6AccessType EXTERNAL): set this annotation or config subnetwork",
      },
      { reason: "EnsuredLoadBalancer", message: "Ensured load balancer" },
    ]);
  });

  it("switched to SingleStack IPv4: exactly the IPv6 resources are deleted, the IPv4 IP stays", async () => {
    const before = resourcesOf(lb);
    const current = await core.readNamespacedService({ name: "dual", namespace: "default" });
    const spec = current.spec ?? {};
    await core.replaceNamespacedService({
      name: "dual",
      namespace: "default",
      body: {
        ...current,
        spec: {
          ...spec,
          ipFamilyPolicy: "SingleStack",
          ipFamilies: ["IPv4"],
          clusterIPs: (spec.clusterIPs ?? []).slice(0, 1),
        },
      },
    });
    await eventually("dual's ingress back to its IPv4 IP alone", async () => {
      const listed = await ingress();
      return listed.length === 1 && !resourcesOf(lb).includes(`forwardingRules ${lb}-ipv6`) ? listed : undefined;
    });
    assert.deepEqual(await ingress(), [ipv4]);
    const after = resourcesOf(lb);
    assert.deepEqual(
      before.filter((entry) => !after.includes(entry)),
      [
        `addresses ${lb}-ipv6`,
        `firewalls k8s-${lb}-http-hc-ipv6`,
        `firewalls k8s-fw-${lb}-ipv6`,
        `forwardingRules ${lb}-ipv6`,
      ],
    );
    assert.deepEqual(
      after.filter((entry) => !before.includes(entry)),
      [],
    );
    assert.deepEqual([ruleIpOf(lb), addressOf(lb)], [ipv4, undefined]);
    assert.deepEqual(
      (await eventReasons(core, "dual"))
        .map((event) => event.reason)
        .filter((reason) => reason !== "EnsuringLoadBalancer" && reason !== "EnsuredLoadBalancer"),
      [],
    );
  });
});

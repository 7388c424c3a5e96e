/**
 * `networking.gke.io/load-balancer-ip-addresses` end to end (real apiserver, engine, emulator): a
 * Service naming reserved regional addresses gets their IPs, keeps them across a restart and a
 * refresh, and deleting it leaves them; a name GCE does not have is refused and creates nothing.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { MIXED_STATIC_IP_MESSAGE } from "../../model/service";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { daemonOptions, E2E_NETWORKS, startTestEnv, type TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

const ANNOTATION = "networking.gke.io/load-balancer-ip-addresses";
const SUBNET = "networking.gke.io/load-balancer-subnet";
const V6_SUBNET_URL = "projects/dccm-test/regions/us-central1/subnetworks/v6-subnet";

/** The e2e VPC with a dual-stack subnetwork with external IPv6 access, for the IPv6 address. */
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
        ],
      }
    : network,
);

describe("networking.gke.io/load-balancer-ip-addresses: Services by address name", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  const lbs: Record<string, string> = {};

  function resources(kind?: string): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.kind !== "instances" && (kind === undefined || resource.kind === kind))
      .map((resource) => `${resource.kind} ${resource.name}`)
      .sort();
  }

  function property(kind: string, name: string, field: string): unknown {
    return env.gce.listResources().find((resource) => resource.kind === kind && resource.name === name)?.properties[
      field
    ];
  }

  /** Reserves a regional address as a user does (addresses.insert); GCE picks its IP. */
  async function reserve(body: Record<string, unknown>): Promise<string> {
    const url = `${env.gce.computeEndpoint}projects/dccm-test/regions/us-central1/addresses`;
    const answer = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(answer.status, 200, await answer.text());
    const name = String(body.name);
    return String(await eventually(`address ${name}`, () => Promise.resolve(property("addresses", name, "address"))));
  }

  async function ingress(name: string): Promise<string[] | undefined> {
    const service = await core.readNamespacedService({ name, namespace: "default" });
    const listed = (service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip ?? "");
    return listed.length > 0 ? listed : undefined;
  }

  async function startDaemon(): Promise<Daemon> {
    const started = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), { firstUpGuard: { computeEndpoint: env.gce.computeEndpoint } }),
    );
    await started.start(() => assert.fail("leadership lost"));
    return started;
  }

  async function ups(name: string): Promise<number> {
    if (daemon === undefined) return 0;
    return counter(daemon.metrics.registry, "dccm_stack_runs_total", {
      stack: `service.default.${name}`,
      operation: "up",
    });
  }

  let v4 = "";
  let v4b = "";
  let v6 = "";

  before(async () => {
    env = await startTestEnv({ gce: { networks: NETWORKS }, kube: { serviceIPv6Range: "fd00:10:96::/112" } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    v4 = await reserve({ name: "web-v4" });
    v4b = await reserve({ name: "dual-v4" });
    v6 = await reserve({
      name: "dual-v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: V6_SUBNET_URL,
    });
    daemon = await startDaemon();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("an IPv4 name wins over spec.loadBalancerIP: the address's IP, a Normal MixedStaticIP, no address of dccm's", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService("web", { loadBalancerIP: "203.0.113.9" }, { [ANNOTATION]: "web-v4" }),
    });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    lbs.web = lb;
    assert.deepEqual(await eventually("web's ingress", () => ingress("web")), [v4]);
    assert.equal(property("forwardingRules", lb, "IPAddress") ?? property("forwardingRules", lb, "ipAddress"), v4);
    const mixed = (await eventReasons(core, "web")).filter((event) => event.reason === "MixedStaticIP");
    assert.deepEqual(
      mixed.map((event) => event.message),
      [MIXED_STATIC_IP_MESSAGE],
    );
    assert.equal(
      MIXED_STATIC_IP_MESSAGE,
      'Found both .Spec.LoadBalancerIP and "networking.gke.io/load-balancer-ip-addresses" annotation. Consider using annotation only.',
    );
    assert.deepEqual(
      resources("addresses"),
      ["addresses dual-v4", "addresses dual-v6", "addresses web-v4"],
      "the Service reserves none of its own",
    );
  });

  it("dual-stack, an IPv4 and an IPv6 name: each family's address IP", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService(
        "dual",
        { ipFamilyPolicy: "RequireDualStack", ipFamilies: ["IPv4", "IPv6"] },
        { [ANNOTATION]: "dual-v4,dual-v6", [SUBNET]: "v6-subnet" },
      ),
    });
    lbs.dual = loadBalancerName(created.metadata?.uid ?? "");
    const ips = await eventually("dual's two ingress IPs", async () => {
      const listed = await ingress("dual");
      return listed?.length === 2 ? listed : undefined;
    });
    assert.deepEqual(ips, [v4b, v6]);
    assert.deepEqual(resources("addresses"), ["addresses dual-v4", "addresses dual-v6", "addresses web-v4"]);
  });

  it("a restart and a refresh keep both Services' IPs and run no change", async () => {
    await daemon?.stop();
    daemon = await startDaemon();
    await daemon.idle();
    assert.deepEqual([await ingress("web"), await ingress("dual")], [[v4], [v4b, v6]]);
    assert.deepEqual([await ups("web"), await ups("dual")], [0, 0]);
    for (const name of ["web", "dual"])
      await core.patchNamespacedService(
        {
          name,
          namespace: "default",
          body: { metadata: { annotations: { "dccm.io/refresh-requested": "r1" } } },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
    for (const name of ["web", "dual"])
      await eventually(`${name} refreshed`, async () => {
        const service = await core.readNamespacedService({ name, namespace: "default" });
        return service.metadata?.annotations?.["dccm.io/refresh-handled"] === "r1" ? true : undefined;
      });
    await daemon.idle();
    assert.deepEqual([await ingress("web"), await ingress("dual")], [[v4], [v4b, v6]]);
    assert.equal(
      (await eventReasons(core, "web")).some((event) => event.reason === "DriftCorrected"),
      false,
    );
  });

  it("deleting the Services deletes their load balancers and leaves the named addresses", async () => {
    for (const name of ["web", "dual"]) await core.deleteNamespacedService({ name, namespace: "default" });
    await eventually("the load balancers gone", () =>
      Promise.resolve(
        resources().some((entry) => entry.includes(lbs.web ?? "-") || entry.includes(lbs.dual ?? "-"))
          ? undefined
          : true,
      ),
    );
    assert.deepEqual(
      [
        property("addresses", "web-v4", "address"),
        property("addresses", "dual-v4", "address"),
        property("addresses", "dual-v6", "address"),
      ],
      [v4, v4b, v6],
    );
  });

  it("a name GCE does not have is refused with the exact message; nothing is created", async () => {
    const created = await core.createNamespacedService({
      namespace: "default",
      body: lbService("missing", {}, { [ANNOTATION]: "nope" }),
    });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    const failure = await eventually("a SyncLoadBalancerFailed event", async () =>
      (await eventReasons(core, "missing")).find((event) => event.reason === "SyncLoadBalancerFailed"),
    );
    assert.equal(
      failure.message,
      "Service default/missing: metadata.annotations[networking.gke.io/load-balancer-ip-addresses]: no address nope in project dccm-test region us-central1; " +
        "the load balancer needs a regional address of its own region (gcloud compute addresses create nope --region us-central1)",
    );
    await daemon?.idle();
    assert.equal(await ups("missing"), 0);
    assert.deepEqual(
      resources().filter((entry) => entry.includes(lb)),
      [],
    );
    assert.equal(await ingress("missing"), undefined);
  });
});

/**
 * A Shared VPC cluster served end to end: the network `k8s-net` and its subnets belong to the host
 * project `vpc-host`, the VMs to the service project `dccm-test` attached to it (the emulator's
 * Shared VPC refuses any other cross-project reference), and the daemon runs with `networkProject`.
 * Every firewall and route is created in the host project, everything else in the service project;
 * the drift pass lists the firewalls there, and one deleted out of band is put back there.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

const HOST = "vpc-host";
const SERVICE = "dccm-test";
const HOST_NET = `projects/${HOST}/global/networks/k8s-net`;
const HOST_SUBNET = `projects/${HOST}/regions/us-central1/subnetworks/k8s-subnet`;
const NODES = [
  ["node-a1", "us-central1-a", "10.64.1.0/24"],
  ["node-b1", "us-central1-b", "10.64.2.0/24"],
] as const;

describe("Shared VPC (networkProject): firewalls and routes in the host project, the rest in the service project", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  const lb = new Map<string, string>();
  const nodeUid = new Map<string, string>();

  /** `<kind> <project> <name>` of every resource but the VMs, sorted. */
  function placed(): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.kind !== "instances")
      .map((resource) => `${resource.kind} ${resource.project} ${resource.name}`)
      .sort();
  }

  before(async () => {
    env = await startTestEnv({
      gce: {
        networks: [
          { name: "default", autoCreateSubnetworks: true },
          {
            name: "k8s-net",
            project: HOST,
            autoCreateSubnetworks: false,
            subnetworks: [
              { name: "k8s-subnet", ipCidrRange: "10.128.0.0/20" },
              { name: "ilb-subnet", ipCidrRange: "10.129.0.0/20" },
            ],
          },
        ],
      },
    });
    env.gce.shareVpc(HOST, [SERVICE]);
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (const [name, zone, cidr] of NODES) {
      env.gce.putInstance(name, { zone, networkInterfaces: [{ network: HOST_NET, subnetwork: HOST_SUBNET }] });
      const node = await core.createNode({
        body: {
          metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
          spec: { providerID: `gce://${SERVICE}/${zone}/${name}`, podCIDR: cidr },
        },
      });
      nodeUid.set(name, node.metadata?.uid ?? "");
    }
    for (const body of [
      lbService("web"),
      lbService("local", { externalTrafficPolicy: "Local" }),
      lbService("ilb", {}, { "networking.gke.io/load-balancer-type": "Internal" }),
      lbService("dns", {
        ports: [
          { name: "dns-tcp", protocol: "TCP", port: 53 },
          { name: "dns-udp", protocol: "UDP", port: 53 },
        ],
      }),
    ]) {
      const created = await core.createNamespacedService({ namespace: "default", body });
      lb.set(created.metadata?.name ?? "", loadBalancerName(created.metadata?.uid ?? ""));
    }
    daemon = new Daemon(
      daemonOptions(
        env,
        parseConfig({
          ...E2E_CONFIG,
          subnetwork: "k8s-subnet",
          clusterCIDR: "10.64.0.0/14",
          networkProject: HOST,
        }),
        {
          driftMs: 3_600_000,
          driftListing: { computeEndpoint: env.gce.computeEndpoint },
        },
      ),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    await eventually(
      "every Service's ingress",
      async () => {
        const listed = await core.listNamespacedService({ namespace: "default" });
        const pending = listed.items.filter(
          (item) => item.spec?.type === "LoadBalancer" && (item.status?.loadBalancer?.ingress ?? []).length === 0,
        );
        return pending.length === 0 ? true : undefined;
      },
      600_000,
      1000,
    );
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("every firewall and route is in the host project, every other resource in the service project, by exact name", () => {
    const web = lb.get("web") ?? "";
    const local = lb.get("local") ?? "";
    const ilb = lb.get("ilb") ?? "";
    const dns = lb.get("dns") ?? "";
    assert.deepEqual(
      placed(),
      [
        `addresses ${SERVICE} ${dns}`,
        `backendServices ${SERVICE} ${dns}`,
        `backendServices ${SERVICE} ${dns}-udp`,
        `backendServices ${SERVICE} ${ilb}`,
        `backendServices ${SERVICE} ${local}`,
        `backendServices ${SERVICE} ${web}`,
        `firewalls ${HOST} k8s-${local}-http-hc`,
        `firewalls ${HOST} k8s-e2e0cafe-node-http-hc`,
        `firewalls ${HOST} k8s-fw-${dns}`,
        `firewalls ${HOST} k8s-fw-${ilb}`,
        `firewalls ${HOST} k8s-fw-${local}`,
        `firewalls ${HOST} k8s-fw-${web}`,
        `forwardingRules ${SERVICE} ${dns}`,
        `forwardingRules ${SERVICE} ${dns}-udp`,
        `forwardingRules ${SERVICE} ${ilb}`,
        `forwardingRules ${SERVICE} ${local}`,
        `forwardingRules ${SERVICE} ${web}`,
        `healthChecks ${SERVICE} k8s-e2e0cafe-node`,
        `healthChecks ${SERVICE} ${local}`,
        `instanceGroups ${SERVICE} k8s-ig--e2e0cafe`,
        `instanceGroups ${SERVICE} k8s-ig--e2e0cafe`,
        `routes ${HOST} e2e-${nodeUid.get("node-a1") ?? ""}`,
        `routes ${HOST} e2e-${nodeUid.get("node-b1") ?? ""}`,
      ].sort(),
    );
  });

  it("the internal load balancer names the host's network and subnetwork", () => {
    const ilb = lb.get("ilb") ?? "";
    const rule = env.gce
      .listResources()
      .find((resource) => resource.kind === "forwardingRules" && resource.name === ilb)?.properties;
    assert.deepEqual(
      [String(rule?.network), String(rule?.subnetwork)],
      [`${env.gce.endpoint}/compute/v1/${HOST_NET}`, `${env.gce.endpoint}/compute/v1/${HOST_SUBNET}`],
    );
  });

  it("the drift pass lists the host's firewalls and routes: nothing drifted; one deleted there is put back there", async () => {
    const first = await daemon.driftPass();
    assert.deepEqual([first?.refreshed, first?.skipped], [[], []]);
    const web = lb.get("web") ?? "";
    env.gce.deleteOutOfBand("firewalls", `k8s-fw-${web}`, { project: HOST, scope: "global" });
    const second = await daemon.driftPass();
    assert.deepEqual(
      second?.refreshed.map((finding) => finding.stack),
      ["service.default.web"],
    );
    await daemon.idle();
    await eventually("the firewall back in the host project", () =>
      env.gce
        .listResources()
        .some(
          (resource) => resource.kind === "firewalls" && resource.project === HOST && resource.name === `k8s-fw-${web}`,
        )
        ? true
        : undefined,
    );
    assert.equal(
      env.gce.listResources().some((resource) => resource.kind === "firewalls" && resource.project === SERVICE),
      false,
    );
  });
});

/**
 * config `firewallManagement: manual` on a Shared VPC whose host project refuses the daemon's
 * credential every write (emulator/gce/permissions.ts), as a security team that keeps firewalls to
 * itself does: every Service (external, internal, ETP=Local) gets its IP with no firewall written;
 * each Service's Events `LoadBalancerManualChange` hold the gcloud commands, which, run by the
 * network team (parsed with test/support/gcloudArgs.ts, applied to the host project as gcloud's
 * inserts would be), make exactly the rules a `managed` run makes for the same cluster (run beside
 * it, with the host writable). Once applied, a run of an unchanged Service tells nothing more.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { parseGcloudFirewallCommand } from "../support/gcloudArgs";
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
const SERVICES = ["web", "local", "ilb"] as const;
const REASON = "LoadBalancerManualChange";
const PREFIX = "Firewall change required by security admin: `";

interface Cluster {
  env: TestEnv;
  core: k8s.CoreV1Api;
  daemon: Daemon;
  /** Service name → its load balancer's name. */
  lb: Map<string, string>;
  /** Service name → its ingress IP. */
  ip: Map<string, string>;
  clusterUid: string;
}

/** The Shared VPC cluster of test/e2e/shared-vpc.e2e.ts with an external, an ETP=Local and an internal Service. */
async function startCluster(firewallManagement: "managed" | "manual"): Promise<Cluster> {
  const env = await startTestEnv({
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
  if (firewallManagement === "manual") {
    const refused = await fetch(`${env.gce.endpoint}/emulator/permissions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ project: HOST, writable: false }),
    });
    assert.equal(refused.status, 200);
  }
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  for (const [name, zone, cidr] of NODES) {
    env.gce.putInstance(name, { zone, networkInterfaces: [{ network: HOST_NET, subnetwork: HOST_SUBNET }] });
    await core.createNode({
      body: {
        metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
        spec: { providerID: `gce://${SERVICE}/${zone}/${name}`, podCIDR: cidr },
      },
    });
  }
  const lb = new Map<string, string>();
  for (const body of [
    lbService("web"),
    // The same node port in both runs, so that the two health-check rules can be compared.
    lbService("local", { externalTrafficPolicy: "Local", healthCheckNodePort: 31234 }),
    lbService("ilb", {}, { "networking.gke.io/load-balancer-type": "Internal" }),
  ]) {
    const created = await core.createNamespacedService({ namespace: "default", body });
    lb.set(created.metadata?.name ?? "", loadBalancerName(created.metadata?.uid ?? ""));
  }
  const daemon = new Daemon(
    daemonOptions(
      env,
      parseConfig({
        ...E2E_CONFIG,
        subnetwork: "k8s-subnet",
        clusterCIDR: "10.64.0.0/14",
        networkProject: HOST,
        // Routes are the network team's too on such a host; this suite is about firewalls.
        configureRoutes: false,
        firewallManagement,
      }),
      {
        driftMs: 3_600_000,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
      },
    ),
  );
  await daemon.start(() => assert.fail("leadership lost"));
  const ip = new Map<string, string>();
  await eventually(
    "every Service's ingress",
    async () => {
      const listed = await core.listNamespacedService({ namespace: "default" });
      for (const item of listed.items) {
        const address = item.status?.loadBalancer?.ingress?.[0]?.ip;
        if (address !== undefined) ip.set(item.metadata?.name ?? "", address);
      }
      return SERVICES.every((name) => ip.has(name)) ? true : undefined;
    },
    600_000,
    1000,
  );
  await daemon.idle();
  const kubeSystem = await core.readNamespace({ name: "kube-system" });
  return { env, core, daemon, lb, ip, clusterUid: kubeSystem.metadata?.uid ?? "" };
}

/**
 * The host's firewall rules with what differs between two clusters by construction (the load
 * balancers' names, the Services' IPs, the cluster UID, the emulator's port and IDs) named alike.
 */
function firewallsOf(cluster: Cluster): Record<string, unknown>[] {
  let text = JSON.stringify(
    cluster.env.gce
      .listResources()
      .filter((resource) => resource.kind === "firewalls")
      .map(({ project, name, properties }) => {
        const { id: _id, creationTimestamp: _at, selfLink: _link, fingerprint: _fp, network, ...rest } = properties;
        // A rule's ranges and tags are sets: the commands list them sorted, Pulumi in the model's order.
        const sets = Object.fromEntries(
          ["sourceRanges", "targetTags", "destinationRanges"]
            .filter((key) => Array.isArray(rest[key]))
            .map((key) => [key, [...(rest[key] as string[])].sort()]),
        );
        return { project, name, ...rest, ...sets, network: String(network).replace(/^.*\/compute\/v1\//, "") };
      }),
  );
  for (const name of SERVICES) {
    text = text.split(cluster.lb.get(name) ?? "?").join(`<lb ${name}>`);
    text = text.split(`"${cluster.ip.get(name) ?? "?"}"`).join(`"<ip ${name}>"`);
  }
  text = text.split(cluster.clusterUid).join("<cluster uid>");
  return (JSON.parse(text) as Record<string, unknown>[]).sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

async function manualChanges(cluster: Cluster, name: string): Promise<{ command: string; count: number }[]> {
  const events = await cluster.core.listNamespacedEvent({
    namespace: "default",
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=Service`,
  });
  return events.items
    .filter((event) => event.reason === REASON)
    .map((event) => {
      const message = event.message ?? "";
      assert.ok(message.startsWith(PREFIX) && message.endsWith("`"), message);
      assert.equal(event.type, "Normal");
      return { command: message.slice(PREFIX.length, -1), count: event.count ?? 1 };
    })
    .sort((a, b) => a.command.localeCompare(b.command));
}

/** Runs one `gcloud compute firewall-rules create` against the emulator's host project, as gcloud's insert would. */
function runCreate(cluster: Cluster, command: string): void {
  const { verb, name, flags } = parseGcloudFirewallCommand(command);
  assert.equal(verb, "create", command);
  assert.equal(flags.get("project"), HOST, command);
  const allows = new Map<string, string[]>();
  for (const rule of (flags.get("allow") ?? "").split(",").filter((r) => r !== "")) {
    const [protocol, port] = rule.split(":");
    allows.set(protocol, [...(allows.get(protocol) ?? []), ...(port !== undefined ? [port] : [])]);
  }
  const destination = flags.get("destination-ranges");
  cluster.env.gce.insertOutOfBand(
    "firewalls",
    {
      name,
      description: flags.get("description") ?? "",
      network: `projects/${HOST}/global/networks/${flags.get("network") ?? ""}`,
      direction: (flags.get("direction") ?? "").toUpperCase(),
      priority: Number(flags.get("priority")),
      sourceRanges: (flags.get("source-ranges") ?? "").split(","),
      targetTags: (flags.get("target-tags") ?? "").split(","),
      ...(destination !== undefined ? { destinationRanges: destination.split(",") } : {}),
      ...(flags.get("action") === "deny"
        ? { denies: [{ protocol: "all" }] }
        : { allows: [...allows].map(([protocol, ports]) => ({ protocol, ports })) }),
    },
    { project: HOST, scope: "global" },
  );
}

describe("firewallManagement manual on a Shared VPC whose host refuses dccm's writes", function () {
  this.timeout(900_000);
  let manual: Cluster;

  before(async () => {
    manual = await startCluster("manual");
  });

  after(async () => {
    await manual?.daemon.stop();
    await manual?.env.stop();
  });

  it("every Service has its IP and no firewall is written anywhere", () => assert.deepEqual(firewallsOf(manual), []));

  it("the Events' commands, run by the network team, make exactly the rules a managed run makes", async () => {
    const commands = new Map<string, string>();
    for (const name of SERVICES)
      for (const { command } of await manualChanges(manual, name)) {
        const { name: rule } = parseGcloudFirewallCommand(command);
        // The node health-check rule is told on each Service it serves: the same command each time.
        assert.ok(!commands.has(rule) || commands.get(rule) === command, command);
        commands.set(rule, command);
      }
    const lb = (name: string): string => manual.lb.get(name) ?? "";
    assert.deepEqual(
      [...commands.keys()].sort(),
      [
        `k8s-${lb("local")}-http-hc`,
        "k8s-e2e0cafe-node-http-hc",
        `k8s-fw-${lb("ilb")}`,
        `k8s-fw-${lb("local")}`,
        `k8s-fw-${lb("web")}`,
      ].sort(),
    );
    for (const command of commands.values()) runCreate(manual, command);

    const managed = await startCluster("managed");
    try {
      assert.deepEqual(firewallsOf(manual), firewallsOf(managed));
      assert.equal(firewallsOf(managed).length, 5);
      for (const name of SERVICES) assert.deepEqual(await manualChanges(managed, name), []);
    } finally {
      await managed.daemon.stop();
      await managed.env.stop();
    }
  });

  it("once applied, a run of an unchanged Service tells nothing more", async () => {
    const before = await Promise.all(SERVICES.map((name) => manualChanges(manual, name)));
    const local = manual.lb.get("local") ?? "";
    manual.env.gce.deleteOutOfBand("healthChecks", local, { project: SERVICE, scope: "us-central1" });
    const pass = await manual.daemon.driftPass();
    assert.deepEqual(
      pass?.refreshed.map((finding) => finding.stack),
      ["service.default.local"],
    );
    await manual.daemon.idle();
    await eventually("the health check put back", () =>
      manual.env.gce.listResources().some((resource) => resource.kind === "healthChecks" && resource.name === local)
        ? true
        : undefined,
    );
    assert.deepEqual(await Promise.all(SERVICES.map((name) => manualChanges(manual, name))), before);
  });
});

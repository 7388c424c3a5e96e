/**
 * Migration from the REAL stock GCE cloud-controller-manager (Google's code, k8s.io/cloud-provider
 * v0.28.2 + k8s.io/cloud-provider-gcp/providers v0.28.2, test/support/e2e/realStockCcm.ts) end to
 * end: it serves an external multi-port Service, an ETP=Local one, an internal one, a UDP one, a
 * sticky (ClientIP) one and a Standard-tier one on three Nodes (one labelled out of load
 * balancers) and makes their routes, against the real kube-apiserver and the GCE emulator's REST
 * face. It is stopped as docs/guides/migrate-from-stock-ccm.md says, then `dccm daemon --adopt` takes over: every
 * Service keeps its IP, nothing the stock CCM made is deleted or replaced, the next drift pass finds
 * nothing, and `dccm gc --dry-run` proves none of the stock resources leaked.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";

import { Daemon } from "../../daemon/daemon";
import { ANNOTATION_LB_TYPE, ANNOTATION_NETWORK_TIER, LB_FINALIZER, loadBalancerName, parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { E2E_CONFIG } from "../support/e2e/cluster";
import { startStockCcm, type StockCcm } from "../support/e2e/realStockCcm";
import { runDccmAsync } from "../support/cli";
import { eventually } from "../support/wait";

const RAW_CONFIG = { ...E2E_CONFIG, subnetwork: "k8s-subnet" };
const EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers";
const NODES: ReadonlyArray<{ name: string; zone: string; podCIDR: string; labels?: Record<string, string> }> = [
  { name: "node-a1", zone: "us-central1-a", podCIDR: "10.64.1.0/24" },
  { name: "node-b1", zone: "us-central1-b", podCIDR: "10.64.2.0/24" },
  { name: "node-x1", zone: "us-central1-a", podCIDR: "10.64.3.0/24", labels: { [EXCLUDE]: "true" } },
];
const SERVICES = ["ext", "local", "ilb", "dns", "sticky", "std"] as const;
type Name = (typeof SERVICES)[number];

function service(name: Name): k8s.V1Service {
  const tcp = (port: number): k8s.V1ServicePort => ({ name: `p${port}`, protocol: "TCP", port, targetPort: 8080 });
  const base = { type: "LoadBalancer", selector: { app: name } };
  const make = (spec: k8s.V1ServiceSpec, annotations: Record<string, string> = {}): k8s.V1Service => ({
    metadata: { name, namespace: "default", annotations },
    spec: { ...base, ...spec },
  });
  switch (name) {
    case "ext":
      return make({ ports: [tcp(80), tcp(443)] });
    case "local":
      return make({ ports: [tcp(8080)], externalTrafficPolicy: "Local" });
    case "ilb":
      return make({ ports: [tcp(80), tcp(81)] }, { [ANNOTATION_LB_TYPE]: "Internal" });
    case "dns":
      return make({ ports: [{ name: "dns", protocol: "UDP", port: 53, targetPort: 53 }] });
    case "sticky":
      return make({ ports: [tcp(9000)], sessionAffinity: "ClientIP" });
    case "std":
      return make({ ports: [tcp(8443)] }, { [ANNOTATION_NETWORK_TIER]: "Standard" });
  }
}

describe("the real stock GCE CCM: it serves the cluster, then dccm adopts it", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let ccm: StockCcm | undefined;
  let daemon: Daemon | undefined;
  let configPath: string;
  const ips: Partial<Record<Name, string>> = {};
  const lb: Partial<Record<Name, string>> = {};
  const uids = new Map<string, string>();
  /** `kind/scope/name` of everything the stock CCM left. */
  let stock: string[] = [];

  const read = (name: string): Promise<k8s.V1Service> => core.readNamespacedService({ name, namespace: "default" });
  const id = (r: { readonly kind: string; readonly scope: string; readonly name: string }): string =>
    `${r.kind}/${r.scope}/${r.name}`;

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(RAW_CONFIG));
    for (const node of NODES) {
      env.gce.putInstance(node.name, { zone: node.zone, tags: ["k8s-node"] });
      const created = await core.createNode({
        body: {
          metadata: { name: node.name, labels: { "topology.kubernetes.io/zone": node.zone, ...node.labels } },
          spec: {
            providerID: `gce://dccm-test/${node.zone}/${node.name}`,
            podCIDR: node.podCIDR,
            podCIDRs: [node.podCIDR],
          },
        },
      });
      uids.set(node.name, created.metadata?.uid ?? "");
      await core.replaceNodeStatus({
        name: node.name,
        body: {
          ...created,
          status: {
            conditions: [
              {
                type: "Ready",
                status: "True",
                reason: "KubeletReady",
                message: "ready",
                lastHeartbeatTime: new Date(),
                lastTransitionTime: new Date(),
              },
            ],
          },
        },
      });
    }
  });

  after(async () => {
    await daemon?.stop();
    await ccm?.stop();
    await env?.stop();
  });

  it("the stock CCM serves every Service and makes every Node's route", async () => {
    ccm = await startStockCcm(env, core, {
      clusterName: "e2e",
      clusterId: "e2e0cafe",
      network: "k8s-net",
      subnetwork: "k8s-subnet",
      nodeTags: ["k8s-node"],
    });
    for (const name of SERVICES) {
      const created = await core.createNamespacedService({ namespace: "default", body: service(name) });
      lb[name] = loadBalancerName(created.metadata?.uid ?? "");
    }
    const log = (): string =>
      fs
        .readFileSync(ccm?.logPath ?? "", "utf8")
        .split("\n")
        .slice(-40)
        .join("\n");
    for (const name of SERVICES) {
      ips[name] = await eventually(
        () => `${name} served by the stock CCM; its log ends:\n${log()}`,
        async () => (await read(name)).status?.loadBalancer?.ingress?.[0]?.ip,
      );
    }
    await eventually(
      () => `every Node's route; its log ends:\n${log()}`,
      () => (env.gce.listResources().filter((r) => r.kind === "routes").length === NODES.length ? true : undefined),
    );
    assert.deepEqual(
      env.gce
        .listResources()
        .filter((r) => r.kind === "routes")
        .map((r) => [r.name, r.properties.destRange])
        .sort(),
      NODES.map((node) => [`e2e-${uids.get(node.name) ?? ""}`, node.podCIDR]).sort(),
    );
    // v0.28.2's service controller leaves a labelled Node out whatever the label's value.
    const members = env.gce
      .listResources()
      .filter((r) => r.kind === "targetPools" || r.kind === "instanceGroups")
      .flatMap((r) => (Array.isArray(r.properties.instances) ? r.properties.instances : []))
      .map(String);
    assert.deepEqual(
      members.filter((link) => link.endsWith("/node-x1")),
      [],
    );
    assert.ok(
      members.some((link) => link.endsWith("/zones/us-central1-b/instances/node-b1")),
      JSON.stringify(members),
    );
    // Stopped as docs/guides/migrate-from-stock-ccm.md says (step 2); the load balancers keep serving.
    await ccm.stop();
    stock = env.gce
      .listResources()
      .filter((r) => r.kind !== "instances")
      .map(id);
  });

  it("dccm daemon --adopt: every Service keeps its IP; nothing the stock CCM made is deleted or replaced; the next drift pass finds nothing", async () => {
    env.gce.clearHistory();
    daemon = new Daemon(
      daemonOptions(env, parseConfig(RAW_CONFIG), {
        leaderElection: false,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        adopt: { allowReplace: false, computeEndpoint: env.gce.computeEndpoint },
      }),
    );
    await daemon.start(() => assert.fail("lost leadership"));
    await daemon.idle();
    for (const name of SERVICES) {
      const served = await read(name);
      assert.deepEqual(
        served.status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
        [ips[name]],
        `${name} keeps its IP`,
      );
      assert.deepEqual(served.metadata?.finalizers, [LB_FINALIZER], `${name}: dccm's finalizer only`);
      const rule = env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb[name]);
      assert.equal(rule?.properties.ipAddress, ips[name], `${name}'s forwarding rule keeps its IP`);
    }
    const history = env.gce.history();
    const touched = history.filter((entry) => stock.includes(id(entry)));
    assert.deepEqual(
      touched.filter((entry) => entry.op !== "update"),
      [],
      "no delete or (re)create of anything the stock CCM made",
    );
    // Changed in place, as docs/guides/migrate-from-stock-ccm.md says: the internal Service's backend service moves to dccm's
    // regional health check, its forwarding rule gets allowGlobalAccess false written.
    const ilb = lb.ilb ?? "";
    assert.deepEqual(touched.map(id).sort(), [
      `backendServices/us-central1/${ilb}`,
      `forwardingRules/us-central1/${ilb}`,
    ]);
    assert.deepEqual(
      history
        .filter((entry) => entry.op === "create")
        .map(id)
        .sort(),
      ["healthChecks/us-central1/k8s-e2e0cafe-node"],
      // addressReservation transient (the default): each rule keeps its ephemeral IP, as the stock
      // CCM left it, so adoption needs no STATIC_ADDRESSES headroom.
      "created: dccm's regional node health check only, no address",
    );
    const pass = await daemon.driftPass();
    assert.deepEqual([pass?.refreshed, pass?.skipped], [[], []], "the next drift pass finds nothing");
  });

  it("dccm gc --dry-run proves none of the stock resources a leak", async () => {
    const run = await runDccmAsync(
      [
        "gc",
        "--kubeconfig",
        env.kube.kubeconfigPath,
        "--config",
        configPath,
        "--backend-url",
        env.backendUrl,
        "--compute-endpoint",
        env.gce.computeEndpoint,
        "--dry-run",
      ],
      env.pulumiEnv,
    );
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(
      run.stdout.split("\n").slice(1),
      ["no GCE resource of this cluster is left without a stack", ""],
      run.stdout,
    );
  });
});

/**
 * `dccm adopt` of 12 stock external Services in a project whose STATIC_ADDRESSES limit is 8 (GCE's
 * default per region): the stock CCM holds no address for them (each IP is ephemeral on its
 * forwarding rule), and with addressReservation `transient` (the default) adoption needs none
 * either: every Service adopted, every IP kept, no address reserved, no quota exceeded. The daemon
 * then takes the adopted stacks over with nothing to do. A real kube-apiserver, the real Pulumi
 * engine, the GCE emulator seeded with what the stock CCM leaves (test/support/e2e/stockCcm.ts).
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { LB_FINALIZER, loadBalancerName, parseConfig } from "../../model";
import { E2E_CONFIG } from "../support/e2e/cluster";
import { declaredResourcesOf } from "../support/e2e/invariants";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import {
  seedStockCcm,
  STOCK_LB_CLEANUP_FINALIZER,
  type StockSeed,
  type StockService,
  E2E_STOCK_CLUSTER,
} from "../support/e2e/stockCcm";
import { runDccmAsync } from "../support/cli";

const RAW_CONFIG = { ...E2E_CONFIG, subnetwork: "k8s-subnet" };
const SERVICES = Array.from({ length: 12 }, (_, index) => `stock-${index + 1}`);
const NODE = { name: "node-a1", zone: "us-central1-a", uid: "", podCIDR: "10.64.1.0/24" };

describe("dccm adopt of 12 stock Services under a STATIC_ADDRESSES limit of 8", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  let configPath: string;
  let seed: StockSeed;
  const lbs = new Map<string, string>();

  const read = (name: string): Promise<k8s.V1Service> => core.readNamespacedService({ name, namespace: "default" });
  const addresses = () => env.gce.listResources().filter((resource) => resource.kind === "addresses");
  const ruleIps = () =>
    SERVICES.map((name) => {
      const rule = env.gce
        .listResources()
        .find((resource) => resource.kind === "forwardingRules" && resource.name === lbs.get(name));
      return `${name} ${String(rule?.properties.ipAddress)}`;
    });
  const seededIps = () => SERVICES.map((name) => `${name} ${seed.ips[`default/${name}`]}`);
  const ingressIps = async () =>
    Promise.all(
      SERVICES.map(
        async (name) =>
          `${name} ${((await read(name)).status?.loadBalancer?.ingress ?? []).map((ingress) => ingress.ip).join(",")}`,
      ),
    );

  before(async () => {
    env = await startTestEnv({ gce: { limits: { quotas: { STATIC_ADDRESSES: 8 } } } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(RAW_CONFIG));
    env.gce.putInstance(NODE.name, { zone: NODE.zone });
    const node = await core.createNode({
      body: {
        metadata: { name: NODE.name, labels: { "topology.kubernetes.io/zone": NODE.zone } },
        spec: {
          providerID: `gce://dccm-test/${NODE.zone}/${NODE.name}`,
          podCIDR: NODE.podCIDR,
          podCIDRs: [NODE.podCIDR],
        },
      },
    });
    NODE.uid = node.metadata?.uid ?? "";
    const stock: StockService[] = [];
    for (const name of SERVICES) {
      const created = await core.createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name, namespace: "default", finalizers: [STOCK_LB_CLEANUP_FINALIZER] },
          spec: {
            type: "LoadBalancer",
            selector: { app: name },
            ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
          },
        },
      });
      const uid = created.metadata?.uid ?? "";
      lbs.set(name, loadBalancerName(uid));
      stock.push({
        namespace: "default",
        name,
        uid,
        scheme: "External",
        ports: (created.spec?.ports ?? []).map((port) => ({
          port: port.port,
          protocol: "TCP" as const,
          nodePort: port.nodePort ?? 0,
        })),
        externalTrafficPolicy: "Cluster",
      });
    }
    seed = seedStockCcm(env.gce, E2E_STOCK_CLUSTER, stock, [NODE]);
    for (const name of SERVICES) {
      await core.replaceNamespacedServiceStatus({
        name,
        namespace: "default",
        body: {
          ...(await read(name)),
          status: { loadBalancer: { ingress: [{ ip: seed.ips[`default/${name}`], ipMode: "VIP" }] } },
        },
      });
    }
    // What the stock CCM leaves: 12 ephemeral IPs, no address.
    assert.equal(new Set(Object.values(seed.ips)).size, 12);
    assert.deepEqual(addresses(), []);
    assert.deepEqual(ruleIps(), seededIps());
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("dccm adopt adopts every Service with its IP, reserves no address, and exceeds no quota", async () => {
    env.gce.clearHistory();
    const run = await runDccmAsync(
      [
        "adopt",
        "--kubeconfig",
        env.kube.kubeconfigPath,
        "--config",
        configPath,
        "--backend-url",
        env.backendUrl,
        "--compute-endpoint",
        env.gce.computeEndpoint,
      ],
      env.pulumiEnv,
    );
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.deepEqual(ruleIps(), seededIps());
    assert.deepEqual(await ingressIps(), seededIps());
    assert.deepEqual(addresses(), []);
    assert.deepEqual(
      (await declaredResourcesOf(env)).filter((declared) => declared.startsWith("addresses ")),
      [],
    );
    assert.deepEqual(
      env.gce
        .history()
        .filter((entry) => entry.kind === "addresses" || entry.kind === "forwardingRules")
        .map((entry) => `${entry.op} ${entry.kind} ${entry.name}`),
      [],
      "no address reserved, no forwarding rule created, replaced or deleted",
    );
    assert.deepEqual(env.gce.limits.counts().quotaExceeded, {});
  });

  it("the daemon takes the adopted stacks over: the same IPs, dccm's finalizer, still no address", async () => {
    env.gce.clearHistory();
    daemon = new Daemon(
      daemonOptions(env, parseConfig(RAW_CONFIG), {
        leaderElection: false,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
      }),
    );
    await daemon.start(() => assert.fail("lost leadership"));
    await daemon.idle();
    for (const name of SERVICES) assert.deepEqual((await read(name)).metadata?.finalizers, [LB_FINALIZER], name);
    assert.deepEqual(ruleIps(), seededIps());
    assert.deepEqual(await ingressIps(), seededIps());
    assert.deepEqual(addresses(), []);
    assert.deepEqual(
      env.gce
        .history()
        .filter((entry) => entry.kind === "addresses" || entry.kind === "forwardingRules")
        .map((entry) => `${entry.op} ${entry.kind} ${entry.name}`),
      [],
    );
    assert.deepEqual(env.gce.limits.counts().quotaExceeded, {});
  });
});

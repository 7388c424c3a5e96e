/**
 * End to end (real apiserver, engine and GCE emulator): the daemon never creates
 * next to a stock load balancer. The emulator holds what the stock CCM leaves for an internal
 * Service (test/support/e2e/stockCcm.ts, whose internal forwarding rule is being given the
 * `networkTier: PREMIUM` GCE reads back, with the emulator's diff of it, on another branch of the
 * same issue) and the routes of three nodes, one excluded from load balancers. `--adopt` refuses that Service
 * (its address cannot be promoted: a fault) and adopts the cluster stack; a start without `--adopt`
 * then holds the Service before its first up: GCE exactly as it was, a Warning naming what exists,
 * the held count; a start with `--adopt` adopts it with its IP.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";

import { loadBalancerName, parseConfig, LB_FINALIZER } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { E2E_CONFIG } from "../support/e2e/cluster";
import {
  seedStockCcm,
  STOCK_ILB_FINALIZER,
  STOCK_LB_CLEANUP_FINALIZER,
  type StockSeed,
  E2E_STOCK_CLUSTER,
} from "../support/e2e/stockCcm";
import { eventually } from "../support/wait";
import type { DaemonOptions } from "../../daemon/options";

// addressReservation `always`: adoption then promotes the rule's ephemeral IP to <lb>, and a fault
// on that promotion is what refuses the Service below. Under `transient`, the default, adoption
// promotes nothing (test/e2e/adopt.e2e.ts, test/e2e/stock-ccm.e2e.ts).
const RAW_CONFIG = { ...E2E_CONFIG, subnetwork: "k8s-subnet", addressReservation: "always" };
const EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers";
const NODES = [
  { name: "node-a1", zone: "us-central1-a", uid: "", podCIDR: "10.64.1.0/24", excluded: false },
  { name: "node-b1", zone: "us-central1-b", uid: "", podCIDR: "10.64.2.0/24", excluded: false },
  { name: "node-x1", zone: "us-central1-a", uid: "", podCIDR: "10.64.3.0/24", excluded: true },
];

describe("existing load balancer: no first up next to the stock CCM's", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  let seed: StockSeed;
  let lb = "";
  let ip = "";

  const read = (): Promise<k8s.V1Service> => core.readNamespacedService({ name: "ilb", namespace: "default" });
  const gceState = (): string[] =>
    env.gce
      .listResources()
      .filter((r) => r.kind !== "instances")
      .map((r) => JSON.stringify([r.kind, r.scope, r.name, r.properties]))
      .sort();
  const warnings = async (): Promise<Array<[string, string, number]>> =>
    (
      await core.listNamespacedEvent({
        namespace: "default",
        fieldSelector: "involvedObject.name=ilb,involvedObject.kind=Service",
      })
    ).items
      .filter((event) => event.type === "Warning")
      .map((event): [string, string, number] => [event.reason ?? "", event.message ?? "", event.count ?? 1]);
  const heldGauge = async (): Promise<number | undefined> =>
    (await daemon?.metrics.controllers.servicesHeldForAdoption.get())?.values[0]?.value;
  const stackFiles = (): string[] => {
    const dir = path.join(env.dir, "backend", ".pulumi", "stacks", "dccm-e2e0cafe");
    return fs.existsSync(dir)
      ? fs
          .readdirSync(dir)
          .filter((file) => file.endsWith(".json"))
          .sort()
      : [];
  };
  const stackFile = (): string =>
    path.join(env.dir, "backend", ".pulumi", "stacks", "dccm-e2e0cafe", "service.default.ilb.json");
  /** The GCE resources (Pulumi types) the Service's stack holds. */
  const heldByServiceStack = (): string[] => {
    const checkpoint: unknown = JSON.parse(fs.readFileSync(stackFile(), "utf8"));
    const text = JSON.stringify(checkpoint);
    return [...text.matchAll(/"type":"(gcp:[^"]+)"/g)].map((match) => match[1]);
  };
  const start = async (overrides: Partial<DaemonOptions>): Promise<Daemon> => {
    const started = new Daemon(
      daemonOptions(env, parseConfig(RAW_CONFIG), {
        leaderElection: false,
        firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
        ...overrides,
      }),
    );
    daemon = started;
    await started.start(() => assert.fail("lost leadership"));
    return started;
  };

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (const node of NODES) {
      env.gce.putInstance(node.name, { zone: node.zone });
      const labels = { "topology.kubernetes.io/zone": node.zone, ...(node.excluded ? { [EXCLUDE]: "true" } : {}) };
      const created = await core.createNode({
        body: {
          metadata: { name: node.name, labels },
          spec: {
            providerID: `gce://dccm-test/${node.zone}/${node.name}`,
            podCIDR: node.podCIDR,
            podCIDRs: [node.podCIDR],
          },
        },
      });
      node.uid = created.metadata?.uid ?? "";
    }
    const created = await core.createNamespacedService({
      namespace: "default",
      body: {
        metadata: {
          name: "ilb",
          namespace: "default",
          annotations: { "networking.gke.io/load-balancer-type": "Internal" },
          finalizers: [STOCK_LB_CLEANUP_FINALIZER, STOCK_ILB_FINALIZER],
        },
        spec: {
          type: "LoadBalancer",
          selector: { app: "ilb" },
          ports: [
            { name: "p80", protocol: "TCP", port: 80, targetPort: 8080 },
            { name: "p81", protocol: "TCP", port: 81, targetPort: 8080 },
          ],
        },
      },
    });
    const uid = created.metadata?.uid ?? "";
    lb = loadBalancerName(uid);
    const ports = (created.spec?.ports ?? []).map((port) => ({
      port: port.port,
      protocol: "TCP" as const,
      nodePort: port.nodePort ?? 0,
    }));
    // The stock CCM's instance groups hold the backend nodes; the route controller routes every node, the excluded one too.
    const backends = NODES.filter((node) => !node.excluded);
    seed = seedStockCcm(
      env.gce,
      E2E_STOCK_CLUSTER,
      [{ namespace: "default", name: "ilb", uid, scheme: "Internal", ports, externalTrafficPolicy: "Cluster" }],
      backends,
    );
    seedStockCcm(
      env.gce,
      E2E_STOCK_CLUSTER,
      [],
      NODES.filter((node) => node.excluded),
    );
    ip = seed.ips["default/ilb"];
    await core.replaceNamespacedServiceStatus({
      name: "ilb",
      namespace: "default",
      body: { ...(await read()), status: { loadBalancer: { ingress: [{ ip, ipMode: "VIP" }] } } },
    });
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("--adopt refusing the Service (its IP cannot be promoted) adopts the cluster stack and leaves the Service untouched", async () => {
    env.gce.injectFault({
      kind: "addresses",
      name: lb,
      operation: "create",
      status: 400,
      message: "promotion refused by the test",
    });
    await start({ adopt: { allowReplace: false, computeEndpoint: env.gce.computeEndpoint } });
    await daemon?.idle();
    await daemon?.stop();
    daemon = undefined;
    env.gce.state.clearFaults();
    const [reason, message] = (await warnings())[0] ?? [];
    assert.equal(reason, "AdoptionRefused");
    assert.match(message ?? "", /^Not adopted: failed: .*promotion refused by the test/);
    // Adoption's preview made the Service's stack, and nothing went into it.
    assert.deepEqual(stackFiles(), ["cluster.json", "service.default.ilb.json"]);
    assert.deepEqual(heldByServiceStack(), []);
    assert.equal(
      env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb)?.properties.ipAddress,
      ip,
    );
  });

  it("without --adopt: nothing created, GCE exactly as it was, a Warning naming what exists, the Service counted as held", async () => {
    const before = gceState();
    const stackBefore = fs.readFileSync(stackFile(), "utf8");
    env.gce.clearHistory();
    await start({});
    const message =
      `Not created: GCE already has backendServices/us-central1/${lb}, firewalls/global/k8s-fw-${lb}, forwardingRules/us-central1/${lb} under this load balancer's names, ` +
      "held by no dccm stack (the stock CCM's?); adopt them with their IP: run dccm adopt, or restart dccm daemon with --adopt";
    // Held, then retried with the queue's backoff: the same Warning, counted, never a second one.
    await eventually("the Warning, told twice", async () =>
      (await warnings()).some(([reason, , count]) => reason === "LoadBalancerExists" && count >= 2) ? true : undefined,
    );
    assert.deepEqual(
      (await warnings()).filter(([reason]) => reason !== "AdoptionRefused").map(([reason, text]) => [reason, text]),
      [["LoadBalancerExists", message]],
    );
    assert.equal(await heldGauge(), 1);
    assert.deepEqual(env.gce.history(), [], "no create, update or delete in GCE");
    assert.deepEqual(gceState(), before, "GCE exactly as it was");
    assert.equal(
      env.gce.listResources().some((r) => r.kind === "addresses" && r.name === lb),
      false,
      "no address",
    );
    const service = await read();
    assert.deepEqual(
      service.metadata?.finalizers,
      [STOCK_LB_CLEANUP_FINALIZER, STOCK_ILB_FINALIZER],
      "no finalizer added or removed",
    );
    assert.deepEqual(
      service.status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
      [ip],
    );
    assert.equal(fs.readFileSync(stackFile(), "utf8"), stackBefore, "nothing written into the Service's stack");
    const ledger = await core
      .readNamespacedConfigMap({ name: "dccm-load-balancers", namespace: "kube-system" })
      .catch(() => undefined);
    assert.equal(ledger?.data?.[lb], undefined, "no ledger entry");
    await daemon?.stop();
    daemon = undefined;
  });

  it("then --adopt adopts it with its IP, creating nothing beside it; the adopted stack is let through", async () => {
    const seeded = new Set(seed.resources.map((r) => `${r.kind}/${r.scope}/${r.name}`));
    env.gce.clearHistory();
    await start({ adopt: { allowReplace: false, computeEndpoint: env.gce.computeEndpoint } });
    await daemon?.idle();
    const history = env.gce.history();
    assert.deepEqual(
      history.filter((entry) => entry.op !== "update" && seeded.has(`${entry.kind}/${entry.scope}/${entry.name}`)),
      [],
      "nothing the stock CCM made was created, replaced or deleted",
    );
    assert.deepEqual(
      history.filter((entry) => entry.op === "create").map((entry) => `${entry.kind}/${entry.scope}/${entry.name}`),
      [`addresses/us-central1/${lb}`],
      "created: the promoted address only",
    );
    const service = await read();
    assert.deepEqual(
      service.status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
      [ip],
    );
    assert.deepEqual(service.metadata?.finalizers, [LB_FINALIZER]);
    const resources = env.gce.listResources();
    assert.equal(
      resources.find((r) => r.kind === "forwardingRules" && r.name === lb)?.properties.ipAddress,
      ip,
      "the forwarding rule keeps its IP",
    );
    assert.equal(
      resources.find((r) => r.kind === "addresses" && r.name === lb)?.properties.address,
      ip,
      "promoted to the static address <lb>",
    );
    assert.equal(await heldGauge(), 0);
    assert.deepEqual(stackFiles(), ["cluster.json", "service.default.ilb.json"]);
    assert.equal((await warnings()).filter(([reason]) => reason === "LoadBalancerExists").length, 1, "not told again");
  });
});

/**
 * Node churn with backend `neg` (docs/guides/services.md#network-endpoint-groups): on a 600-node
 * cluster over three zones, N external Services with externalTrafficPolicy Local — the subset of
 * 3,000 holds every node, so a new node enters each Service's NEG of its zone: the most NEGs one
 * node can touch. For each N of DCCM_BENCH_NEG (default 1,20; `npm run bench:neg` runs 1,20,100,500):
 * the cold start until every Service has its ingress, then one node added in us-central1-a and
 * measured until every Service's NEG there lists it: the engine runs it cost (cluster stack, Service
 * stacks), the calls the emulator answered for it (the engine's provider calls that write, and the
 * Compute REST calls of the daemon), and the time, each with its ratio to the smallest N.
 * The emulator runs in a process of its own (bench/emulatorChild.ts), as Google does.
 */
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../daemon/daemon";
import type { DaemonOptions } from "../daemon/options";
import { CLUSTER_STACK, isServiceStack, loadBalancerName, parseConfig, type Config } from "../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../test/support/e2e/env";
import { eventually } from "../test/support/wait";
import type { EmulatorEndpoints } from "./emulatorChild";
import { allIngress, QUIET_PERIOD_MS, startEmulatorProcess, stopEmulatorProcess } from "./scale";
import { elapsedMs, round, runAlone } from "./stats";

const CONFIG: Config = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  // As a neg cluster without the node controller must (docs/guides/services.md#neg-backends-and-subsetting).
  subnetwork: "k8s-subnet",
  nodeTags: ["k8s-node"],
  clusterName: "negscale",
  clusterId: "5ca1e",
  backendMode: "neg",
});
const ZONES = ["us-central1-a", "us-central1-b", "us-central1-c"] as const;
const CLUSTER_NODES = 600;
const NEWCOMER = "node-new";
const NEWCOMER_ZONE = ZONES[0];
/** Concurrent calls while seeding nodes and Services (the apiserver and emulator answer them in turn). */
const SEED_WORKERS = 10;

export interface NegChurnFigures {
  services: number;
  coldStartMs: number;
  /** The Service NEGs of the newcomer's zone, each of which must list it. */
  affectedNegs: number;
  nodeAddMs: number;
  nodeAddClusterRuns: number;
  nodeAddServiceRuns: number;
  /** Of them, a periodic pass's (a refresh, or the preview that plans a repair), not the node's: none once no pass falls in the window. */
  nodeAddServiceRefreshRuns: number;
  /** The engine's provider calls that create, update or delete (each one Compute write in production). */
  nodeAddProviderWrites: number;
  /** Every provider call of the engine for it (reads and diffs included). */
  nodeAddProviderCalls: number;
  /** Compute REST calls of the daemon itself (the NEG controller's lists and attaches, instance reads), the bench's own polls left out. */
  nodeAddDaemonComputeCalls: number;
  /** Of them, networkEndpointGroups.attachNetworkEndpoints: one per NEG the node enters. */
  nodeAddNegAttaches: number;
}

async function pool<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: SEED_WORKERS }, worker));
}

/** A VM in the default subnetwork and its Node, registered with its InternalIP as kubelet does. */
async function addNode(gce: EmulatorEndpoints, core: k8s.CoreV1Api, name: string, zone: string): Promise<void> {
  const response = await fetch(`${gce.endpoint}/emulator/instances/${CONFIG.project}/${zone}/${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  if (!response.ok) throw new Error(`bench: PUT instance ${name}: ${response.status} ${await response.text()}`);
  const instance = (await response.json()) as { networkInterfaces?: { networkIP?: string }[] };
  const ip = instance.networkInterfaces?.[0]?.networkIP;
  if (ip === undefined) throw new Error(`bench: the emulator gave ${name} no networkIP`);
  await core.createNode({
    body: {
      metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
      spec: { providerID: `gce://${CONFIG.project}/${zone}/${name}` },
      status: { addresses: [{ type: "InternalIP", address: ip }] },
    },
  });
}

async function createLocalServices(core: k8s.CoreV1Api, count: number): Promise<string[]> {
  const lbNames: string[] = [];
  await pool(
    Array.from({ length: count }, (_, i) => `svc-${i}`),
    async (name) => {
      const created = await core.createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name },
          spec: {
            type: "LoadBalancer",
            externalTrafficPolicy: "Local",
            // 2,000 Services with a node port each and a health check node port each would need
            // 4,000 of the 2,768 ports of the default range: a passthrough load balancer uses no
            // node port, only the health check's.
            allocateLoadBalancerNodePorts: false,
            selector: { app: name },
            ports: [{ port: 80, protocol: "TCP" }],
          },
        },
      });
      lbNames.push(loadBalancerName(created.metadata?.uid ?? ""));
    },
  );
  return lbNames;
}

/** Whether NEG `name` of `zone` lists `instance` (its endpoints fit one page: a zone holds ~200 nodes). */
async function negHolds(gce: EmulatorEndpoints, zone: string, name: string, instance: string): Promise<boolean> {
  const response = await fetch(
    `${gce.computeEndpoint}projects/${CONFIG.project}/zones/${zone}/networkEndpointGroups/${name}/listNetworkEndpoints?maxResults=500`,
    { method: "POST" },
  );
  if (!response.ok) return false;
  const listed = (await response.json()) as { items?: { networkEndpoint?: { instance?: string } }[] };
  // GCE answers the instance by its name (kubernetes/ingress-gce retrieveExistingZoneNetworkEndpointMap).
  return (listed.items ?? []).some((item) => item.networkEndpoint?.instance === instance);
}

async function emulatorCalls(gce: EmulatorEndpoints): Promise<Record<string, number>> {
  const response = await fetch(`${gce.endpoint}/emulator/calls`);
  if (!response.ok) throw new Error(`bench: GET /emulator/calls: ${response.status}`);
  return (await response.json()) as Record<string, number>;
}

async function resetCalls(gce: EmulatorEndpoints): Promise<void> {
  const response = await fetch(`${gce.endpoint}/emulator/calls`, { method: "DELETE" });
  if (!response.ok) throw new Error(`bench: DELETE /emulator/calls: ${response.status}`);
}

/** An engine run as the daemon's onRunStart reports it. */
interface EngineRun {
  stack: string;
  operation: Parameters<NonNullable<DaemonOptions["onRunStart"]>>[1];
}

function newDaemon(env: TestEnv, gce: EmulatorEndpoints, runs: EngineRun[]): Daemon {
  return new Daemon(
    daemonOptions(env, CONFIG, {
      pulumiEnv: { ...env.pulumiEnv, DCCM_GCE_EMULATOR_URL: gce.emulatorUrl },
      logLevel: process.env.DCCM_BENCH_LOG_LEVEL ?? "error",
      leaderElection: false,
      identity: "bench",
      resyncMs: QUIET_PERIOD_MS,
      driftMs: QUIET_PERIOD_MS,
      negEndpoints: { computeEndpoint: gce.computeEndpoint },
      operationTimeoutMs: 3_600_000,
      onRunStart: (stack, operation) => runs.push({ stack, operation }),
    }),
  );
}

async function negChurnAt(services: number): Promise<NegChurnFigures> {
  const gce = await startEmulatorProcess();
  const env = await startTestEnv({ backend: "file" }).catch(async (error: unknown) => {
    await stopEmulatorProcess(gce);
    throw error;
  });
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const runs: EngineRun[] = [];
  const daemon = newDaemon(env, gce, runs);
  try {
    await pool(
      Array.from({ length: CLUSTER_NODES }, (_, i) => i),
      (i) => addNode(gce, core, `node-${i}`, ZONES[i % ZONES.length]),
    );
    const lbNames = await createLocalServices(core, services);
    const cold = process.hrtime.bigint();
    await daemon.start(() => undefined);
    await eventually("every Service's ingress", () => allIngress(core), 4 * 3_600_000, 1000);
    await daemon.idle();
    // idle() does not wait for a stack waiting out a timer (a backoff, a retryAfter): one left
    // would run during the node add and be counted as its cost.
    await eventually(
      "no stack waiting out a timer",
      () => (daemon.waitingStacks().length === 0 ? true : undefined),
      3_600_000,
      1000,
    );
    await daemon.idle();
    const coldStartMs = elapsedMs(cold);

    runs.length = 0;
    await resetCalls(gce);
    let polls = 0;
    let waiting = [...lbNames];
    const node = process.hrtime.bigint();
    await addNode(gce, core, NEWCOMER, NEWCOMER_ZONE);
    await eventually(
      `${NEWCOMER} in every Service's NEG of ${NEWCOMER_ZONE}`,
      async () => {
        const still: string[] = [];
        for (const name of waiting) {
          polls++;
          if (!(await negHolds(gce, NEWCOMER_ZONE, name, NEWCOMER))) still.push(name);
        }
        waiting = still;
        return waiting.length === 0 ? true : undefined;
      },
      3_600_000,
      10,
    );
    const nodeAddMs = elapsedMs(node);
    await daemon.idle();
    const calls = await emulatorCalls(gce);
    const count = (match: (route: string) => boolean): number =>
      Object.entries(calls)
        .filter(([route]) => match(route))
        .reduce((sum, [, n]) => sum + n, 0);
    const stacks = runs.map((run) => run.stack);
    return {
      services,
      coldStartMs: round(coldStartMs, 0),
      affectedNegs: lbNames.length,
      nodeAddMs: round(nodeAddMs, 0),
      nodeAddClusterRuns: stacks.filter((stack) => stack === CLUSTER_STACK).length,
      nodeAddServiceRuns: stacks.filter(isServiceStack).length,
      nodeAddServiceRefreshRuns: runs.filter((run) => run.operation !== "up" && isServiceStack(run.stack)).length,
      nodeAddProviderWrites: count((route) => /\/emulator\/provider\/(create|update|delete)$/.test(route)),
      nodeAddProviderCalls: count((route) => route.includes("/emulator/provider/")),
      nodeAddDaemonComputeCalls: count((route) => route.includes("/compute/")) - polls,
      nodeAddNegAttaches: count((route) => route.endsWith("/attachNetworkEndpoints")),
    };
  } finally {
    await daemon.stop();
    await env.stop();
    await stopEmulatorProcess(gce);
  }
}

/** Figures per N as `neg<N>_<figure>`, and the ratios to the smallest N as `neg<N>_<figure>Ratio`. */
export async function benchNegChurn(
  sizes: readonly number[] = (process.env.DCCM_BENCH_NEG ?? "1,20").split(",").map(Number),
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  let base: NegChurnFigures | undefined;
  for (const services of sizes) {
    const at = await negChurnAt(services);
    process.stderr.write(`neg ${services}: ${JSON.stringify(at)}\n`);
    base ??= at;
    for (const [key, value] of Object.entries(at) as [keyof NegChurnFigures, number][]) {
      if (key === "services") continue;
      figures[`neg${services}_${key}`] = value;
      if (at !== base) figures[`neg${services}_${key}Ratio`] = round(value / Math.max(1, base[key]), 2);
    }
  }
  return figures;
}

if (require.main === module) runAlone(() => benchNegChurn());

/**
 * dccm beside the real stock GCE CCM (Google's code, test/support/e2e/realStockCcm.ts), one after
 * the other, each on a fresh offline environment with the same two Nodes and the same N external
 * LoadBalancer Services (DCCM_BENCH_PEER_SIZES, default 1,20: N = 100 adds about 21 minutes on the
 * loaded 2-core machine, so it is asked for): the time from a Service's create
 * to its `status.loadBalancer.ingress` (median, p95), the Compute calls per Service (the
 * emulator's counter: REST calls, and the provider face's create/read/update/delete, each one call
 * although Google's provider also polls the operation), CPU-seconds per Service (the process, its
 * reaped children and its live descendants, /proc) and the peak RSS of the main process (VmHWM).
 * Then, with the N Services in place: a third Node added (its instance in the emulator, then the
 * Node object), the time until every load balancer sends to it (the stock CCM: the Service's target
 * pool holds it; dccm: an instance group of the Service's backend service does) and the Compute
 * calls until then; and one Service's forwarding rule deleted in the emulator behind the peer's back, the time
 * until it is back, waited for at most REPAIR_BOUND_MS (`repairMs: null` when it was not put back
 * by then: the stock CCM syncs a Service only when the Service or the Node set changes).
 * Both run as processes: dccm's `dccm daemon` (with `--drift-interval 30s` instead of its default
 * 10m, so that its drift pass puts the rule back within the bound), the stock CCM's binary.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";

import { startTestEnv, type TestEnv } from "../test/support/e2e/env";
import { DaemonProcesses, descendants } from "../test/support/e2e/daemon-process";
import { startStockCcm } from "../test/support/e2e/realStockCcm";
import { eventually } from "../test/support/wait";
import { loadBalancerName } from "../model";
import { median, round, runAlone } from "./stats";

const CLUSTER = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  nodeTags: ["k8s-node"],
  clusterName: "peer",
  clusterId: "9ee70000",
};
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;
/** dccm's drift interval in the bench (its default is 10m): a drift pass starts within 33 s (±10 %). */
const DCCM_DRIFT_INTERVAL = "30s";
/** How long a deleted forwarding rule is waited for: dccm's drift interval + 10 %, then 60 s for the pass and its `up`. */
const REPAIR_BOUND_MS = 33_000 + 60_000;
const NODES = [
  { name: "node-a1", zone: "us-central1-a", podCIDR: "10.64.1.0/24" },
  { name: "node-b1", zone: "us-central1-b", podCIDR: "10.64.2.0/24" },
] as const;
/** The Node added once the Services are served. */
const ADDED_NODE = { name: "node-a2", zone: "us-central1-a", podCIDR: "10.64.3.0/24" } as const;

type Peer = "dccm" | "stock";

interface PeerFigures {
  ingressMedianMs: number;
  ingressP95Ms: number;
  computeCallsPerService: number;
  cpuSecondsPerService: number;
  peakRssMb: number;
  /** Node added → every Service's target pool holds it. */
  nodeAddMs: number;
  /** Compute calls from the Node's add until then. */
  nodeAddComputeCalls: number;
  /** A forwarding rule deleted behind the peer's back → back; null: not back within repairBoundMs. */
  repairMs: number | null;
  repairBoundMs: number;
  /** Compute calls from the delete until it was back (or until the bound). */
  repairComputeCalls: number;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** utime + stime (+ cutime + cstime: reaped children) of one process, in seconds; 0 when it is gone. */
function cpuSeconds(pid: number, withChildren: boolean): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces) start at the state, field 3.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = (index: number): number => Number(fields[index - 3] ?? 0);
    return (ticks(14) + ticks(15) + (withChildren ? ticks(16) + ticks(17) : 0)) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** The CPU a process tree used so far: the root with its reaped children, and each live descendant. */
function treeCpuSeconds(pid: number): number {
  return cpuSeconds(pid, true) + descendants(pid).reduce((sum, info) => sum + cpuSeconds(info.pid, true), 0);
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  return kb === undefined ? 0 : Number(kb) / 1024;
}

async function addNodes(
  env: TestEnv,
  core: k8s.CoreV1Api,
  nodes: ReadonlyArray<{ readonly name: string; readonly zone: string; readonly podCIDR: string }>,
): Promise<void> {
  for (const { name, zone, podCIDR } of nodes) {
    env.gce.putInstance(name, { zone, tags: ["k8s-node"] });
    const created = await core.createNode({
      body: {
        metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
        spec: { providerID: `gce://dccm-test/${zone}/${name}`, podCIDR, podCIDRs: [podCIDR] },
      },
    });
    const now = new Date();
    await core.replaceNodeStatus({
      name,
      body: {
        ...created,
        status: {
          conditions: [
            { type: "Ready", status: "True", reason: "KubeletReady", lastHeartbeatTime: now, lastTransitionTime: now },
          ],
        },
      },
    });
  }
}

/** Starts the peer; resolves with its pid and a stop function once it is ready to serve Services. */
async function startPeer(
  peer: Peer,
  env: TestEnv,
  core: k8s.CoreV1Api,
): Promise<{ pid: number; stop: () => Promise<unknown> }> {
  if (peer === "stock") {
    const ccm = await startStockCcm(env, core, CLUSTER);
    return { pid: ccm.pid, stop: () => ccm.stop() };
  }
  const configPath = path.join(env.dir, "dccm.json");
  fs.writeFileSync(configPath, JSON.stringify(CLUSTER));
  // Given after DaemonProcesses' own `--drift-interval 1h`: the last one counts (util.parseArgs).
  const daemons = new DaemonProcesses(env, configPath, ["--drift-interval", DCCM_DRIFT_INTERVAL]);
  const running = daemons.start({ logLevel: "info" });
  await daemons.waitReady(running);
  await daemons.waitClusterApplied(running, 600_000);
  return { pid: running.pid, stop: () => daemons.stop(running) };
}

/** The emulator's Compute calls so far: REST calls, and the provider face's create/read/update/delete. */
function computeCalls(env: TestEnv): number {
  return Object.entries(env.gce.calls())
    .filter(([key]) => !key.startsWith("POST /emulator/provider/") || /\/(create|read|update|delete)$/.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
}

function holds(list: unknown, suffix: string): boolean {
  return Array.isArray(list) && list.some((link) => typeof link === "string" && link.endsWith(suffix));
}

/**
 * How many of the load balancers (named after their Service's UID by both peers, loadBalancerName)
 * send traffic to the instance: the stock CCM's target pool holds it, or one of dccm's backend
 * services (`<name>`, `<name>-<protocol>`) has a backend instance group that holds it.
 */
function lbsHolding(env: TestEnv, lbNames: readonly string[], instance: string): number {
  const resources = env.gce.listResources();
  const groups = new Map(
    resources
      .filter((r) => r.kind === "instanceGroups")
      .map((r) => [`/zones/${r.scope}/instanceGroups/${r.name}`, r.properties.instances]),
  );
  const groupHolds = (link: unknown): boolean =>
    typeof link === "string" &&
    [...groups].some(([suffix, instances]) => link.endsWith(suffix) && holds(instances, instance));
  return lbNames.filter((name) => {
    const pool = resources.find((r) => r.kind === "targetPools" && r.name === name);
    if (pool !== undefined) return holds(pool.properties.instances, instance);
    const backendServices = resources.filter(
      (r) => r.kind === "backendServices" && (r.name === name || r.name.startsWith(`${name}-`)),
    );
    return backendServices.some(
      (bs) =>
        Array.isArray(bs.properties.backends) &&
        bs.properties.backends.some((backend) => isGroupBackend(backend) && groupHolds(backend.group)),
    );
  }).length;
}

function isGroupBackend(backend: unknown): backend is { group: unknown } {
  return typeof backend === "object" && backend !== null && "group" in backend;
}

/** Polls `done` every 50 ms; resolves with the ms it took, or null when `boundMs` passed first. */
async function timeUntil(done: () => boolean, boundMs: number): Promise<number | null> {
  const start = Date.now();
  for (;;) {
    if (done()) return Date.now() - start;
    if (Date.now() - start > boundMs) return null;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function measure(peer: Peer, count: number): Promise<PeerFigures> {
  const env = await startTestEnv();
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  let stop: (() => Promise<unknown>) | undefined;
  try {
    await addNodes(env, core, NODES);
    const started = await startPeer(peer, env, core);
    stop = started.stop;
    env.gce.resetCalls();
    const cpuBefore = treeCpuSeconds(started.pid);
    const createdAt = new Map<string, number>();
    for (let i = 0; i < count; i++) {
      const name = `peer-${i}`;
      createdAt.set(name, Date.now());
      await core.createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name },
          spec: { type: "LoadBalancer", selector: { app: name }, ports: [{ port: 80, protocol: "TCP" }] },
        },
      });
    }
    const servedAt = new Map<string, number>();
    const lbNames = new Map<string, string>();
    await eventually(
      () => `${count - servedAt.size} of ${count} Services without ingress (${peer})`,
      async () => {
        for (const service of (await core.listNamespacedService({ namespace: "default" })).items) {
          const name = service.metadata?.name ?? "";
          if (createdAt.has(name) && !servedAt.has(name) && (service.status?.loadBalancer?.ingress?.length ?? 0) > 0) {
            servedAt.set(name, Date.now());
            lbNames.set(name, loadBalancerName(service.metadata?.uid ?? ""));
          }
        }
        return servedAt.size === count ? true : undefined;
      },
      3_600_000,
      50,
    );
    const latencies = [...servedAt].map(([name, at]) => at - (createdAt.get(name) ?? at));
    const calls = computeCalls(env);
    const cpuSecondsPerService = round((treeCpuSeconds(started.pid) - cpuBefore) / count, 2);

    const addedInstance = `/zones/${ADDED_NODE.zone}/instances/${ADDED_NODE.name}`;
    const lbsWithAddedNode = (): number => lbsHolding(env, [...lbNames.values()], addedInstance);
    env.gce.resetCalls();
    const nodeAddStart = Date.now();
    await addNodes(env, core, [ADDED_NODE]);
    await eventually(
      () => `${count - lbsWithAddedNode()} of ${count} load balancers without ${ADDED_NODE.name} (${peer})`,
      () => (lbsWithAddedNode() === count ? true : undefined),
      3_600_000,
      50,
    );
    const nodeAddMs = Date.now() - nodeAddStart;
    const nodeAddComputeCalls = computeCalls(env);

    const lb0 = lbNames.get("peer-0") ?? "";
    const deleted = env.gce
      .listResources()
      .find((r) => r.kind === "forwardingRules" && (r.name === lb0 || r.name.startsWith(`${lb0}-`)))?.name;
    if (deleted === undefined) throw new Error(`no forwarding rule ${lb0} of Service default/peer-0 (${peer})`);
    const ruleExists = (): boolean =>
      env.gce.listResources().some((r) => r.kind === "forwardingRules" && r.name === deleted);
    env.gce.resetCalls();
    env.gce.deleteOutOfBand("forwardingRules", deleted, { scope: CLUSTER.region });
    const repairMs = await timeUntil(ruleExists, REPAIR_BOUND_MS);
    const repairComputeCalls = computeCalls(env);
    return {
      ingressMedianMs: round(median(latencies), 0),
      ingressP95Ms: round(percentile(latencies, 95), 0),
      computeCallsPerService: round(calls / count, 1),
      cpuSecondsPerService,
      peakRssMb: round(peakRssMb(started.pid), 0),
      nodeAddMs,
      nodeAddComputeCalls,
      repairMs,
      repairBoundMs: REPAIR_BOUND_MS,
      repairComputeCalls,
    };
  } finally {
    await stop?.();
    await env.stop();
  }
}

/**
 * `peer_<peer>_n<N>_<figure>` for each size, `peer_ratio_n<N>_<figure>` (dccm / stock) and
 * `peer_<peer>_n<N>_wallSeconds` (the whole measure, environment start and stop included). A
 * `repairMs` of null is a rule not put back within `repairBoundMs`.
 */
export async function benchPeer(): Promise<Record<string, number | null>> {
  const sizes = (process.env.DCCM_BENCH_PEER_SIZES ?? "1,20").split(",").map(Number);
  const figures: Record<string, number | null> = {};
  for (const count of sizes) {
    for (const peer of ["stock", "dccm"] as const) {
      const startedAt = Date.now();
      const measured = { ...(await measure(peer, count)), wallSeconds: round((Date.now() - startedAt) / 1000, 0) };
      process.stderr.write(`peer ${peer} N=${count}: ${JSON.stringify(measured)}\n`);
      for (const [key, value] of Object.entries(measured)) figures[`peer_${peer}_n${count}_${key}`] = value;
    }
    for (const key of [
      "ingressMedianMs",
      "computeCallsPerService",
      "cpuSecondsPerService",
      "peakRssMb",
      "nodeAddMs",
      "nodeAddComputeCalls",
    ] as const) {
      const stock = figures[`peer_stock_n${count}_${key}`] ?? 0;
      figures[`peer_ratio_n${count}_${key}`] =
        stock === 0 ? 0 : round((figures[`peer_dccm_n${count}_${key}`] ?? 0) / stock, 2);
    }
  }
  return figures;
}

if (require.main === module) runAlone(benchPeer);
